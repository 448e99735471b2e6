/* model/trace_event.h: one traceEvents entry as parsed, before it is
 * committed to the event tables (trace_commit.h).
 *
 * An entry's fields borrow the reader's buffer or scratch (trace_lex.h)
 * until the end of the entry; nothing of it reaches the tables until the
 * whole entry has parsed, so an entry cut by the end of the buffered data
 * is parsed again from its start. */
#ifndef MODEL_TRACE_EVENT_H
#define MODEL_TRACE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_lex.h"

/* What one event's args hold that the tables keep. */
struct raw_coll {
    struct slice name, dtype, pg_name, pg_desc, pg_ranks, in_split, out_split;
    int64_t in_nelems, out_nelems, group_size, seq, nccl_seq, peer;
};

struct raw_sync {
    struct slice kind;
    int64_t wait_on_stream, wait_corr, event_id;
};

/* Collective and sync fields are rare: they are set up only when an event
 * has one (coll_of, sync_of), so most events initialise a small struct. */
struct raw_args {
    int64_t correlation, external_id, stream, device, bytes;
    int32_t grid[3], block[3];
    struct slice input_dims, input_types, concrete_inputs;
    struct slice meta_name; /* args.name of metadata ("M") events */
    int has_coll, has_sync;
    struct raw_coll c;
    struct raw_sync s;
};

struct raw_event {
    struct slice ph, cat, name;
    struct idval pid, tid, id;
    int64_t ts, dur;
    int has_ts, has_dur, has_pid, has_tid, has_id, has_args;
    size_t ts_off, dur_off; /* byte offsets, for messages */
    struct raw_args a;
};

/* Parse one traceEvents entry at r->p into *e (an RD_ code). */
int tr_parse_event(struct reader *r, struct raw_event *e);

#endif
