/* model/trace_event.c: one traceEvents entry parsed into a struct
 * raw_event (trace_event.h).
 *
 * Only the fields the model uses are decoded (ph, cat, name, pid, tid, id,
 * ts, dur and a few args); every other value is validated and skipped.
 * A member laid out as the last entry of its kind had it at that place is
 * named by those bytes (member_field, trace_lex.h); any other key is
 * matched by its length first, then by a few word compares. */
#include "model/trace_event.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "common/banned.h"

static struct raw_coll *coll_of(struct raw_args *a)
{
    if (!a->has_coll) {
        struct raw_coll *c = &a->c;
        memset(c, 0, sizeof *c);
        c->in_nelems = c->out_nelems = c->group_size = c->seq = c->nccl_seq = c->peer = -1;
        a->has_coll = 1;
    }
    return &a->c;
}

static struct raw_sync *sync_of(struct raw_args *a)
{
    if (!a->has_sync) {
        memset(&a->s, 0, sizeof a->s);
        a->s.wait_on_stream = a->s.wait_corr = a->s.event_id = -1;
        a->has_sync = 1;
    }
    return &a->s;
}

/* The args members the tables keep, by their key. */
enum args_field {
    AF_OTHER,
    AF_SEQ,
    AF_GRID,
    AF_META_NAME,
    AF_BYTES,
    AF_BLOCK,
    AF_DTYPE,
    AF_STREAM,
    AF_DEVICE,
    AF_NCCL_SEQ,
    AF_EVENT_ID,
    AF_PEER,
    AF_INPUT_DIMS,
    AF_INPUT_TYPES,
    AF_GROUP_SIZE,
    AF_CORRELATION,
    AF_EXTERNAL_ID,
    AF_IN_NELEMS,
    AF_IN_SPLIT,
    AF_OUT_NELEMS,
    AF_OUT_SPLIT,
    AF_SYNC_KIND,
    AF_WAIT_ON_STREAM,
    AF_CONCRETE_INPUTS,
    AF_COLL_NAME,
    AF_PG_ID,
    AF_PG_NAME,
    AF_PG_RANKS,
    AF_WAIT_EVENT_ID,
    AF_PG_DESC,
    AF_WAIT_CORR
};

static int args_field(struct slice k)
{
    switch (k.n) {
    case 3:
        return KEY_IS(k, "Seq") ? AF_SEQ : AF_OTHER;
    case 4:
        return KEY_IS(k, "grid") ? AF_GRID : KEY_IS(k, "name") ? AF_META_NAME : AF_OTHER;
    case 5:
        return KEY_IS(k, "bytes") ? AF_BYTES : KEY_IS(k, "block") ? AF_BLOCK : KEY_IS(k, "dtype") ? AF_DTYPE : AF_OTHER;
    case 6:
        return KEY_IS(k, "stream") ? AF_STREAM : KEY_IS(k, "device") ? AF_DEVICE : AF_OTHER;
    case 8:
        return KEY_IS(k, "NCCL seq")                              ? AF_NCCL_SEQ
               : KEY_IS(k, "event_id")                            ? AF_EVENT_ID
               : KEY_IS(k, "Dst Rank") || KEY_IS(k, "Src Rank") ? AF_PEER
                                                                  : AF_OTHER;
    case 10:
        return KEY_IS(k, "Input Dims")   ? AF_INPUT_DIMS
               : KEY_IS(k, "Input type") ? AF_INPUT_TYPES
               : KEY_IS(k, "Group size") ? AF_GROUP_SIZE
                                         : AF_OTHER;
    case 11:
        return KEY_IS(k, "correlation")                                  ? AF_CORRELATION
               : KEY_IS(k, "External id") || KEY_IS(k, "external id") ? AF_EXTERNAL_ID
                                                                         : AF_OTHER;
    case 13:
        return KEY_IS(k, "In msg nelems") ? AF_IN_NELEMS : KEY_IS(k, "In split size") ? AF_IN_SPLIT : AF_OTHER;
    case 14:
        return KEY_IS(k, "Out msg nelems")   ? AF_OUT_NELEMS
               : KEY_IS(k, "Out split size") ? AF_OUT_SPLIT
               : KEY_IS(k, "cuda_sync_kind") ? AF_SYNC_KIND
               : KEY_IS(k, "wait_on_stream") ? AF_WAIT_ON_STREAM
                                             : AF_OTHER;
    case 15:
        return KEY_IS(k, "Concrete Inputs")   ? AF_CONCRETE_INPUTS
               : KEY_IS(k, "Collective name") ? AF_COLL_NAME
                                              : AF_OTHER;
    case 16:
        return KEY_IS(k, "Process Group ID") ? AF_PG_ID : AF_OTHER;
    case 18:
        return KEY_IS(k, "Process Group Name") ? AF_PG_NAME : AF_OTHER;
    case 19:
        return KEY_IS(k, "Process Group Ranks") ? AF_PG_RANKS : AF_OTHER;
    case 21:
        return KEY_IS(k, "wait_on_cuda_event_id") ? AF_WAIT_EVENT_ID : AF_OTHER;
    case 25:
        return KEY_IS(k, "Process Group Description") ? AF_PG_DESC : AF_OTHER;
    case 33:
        return KEY_IS(k, "wait_on_cuda_event_record_corr_id") ? AF_WAIT_CORR : AF_OTHER;
    }
    return AF_OTHER;
}

/* The value of args member f at r->p into *a. Inlined into parse_args,
 * the loop over an event's args: GCC kept it out of line in the
 * profile-guided build (Makefile, PGO), where inlining it takes 1.7% off
 * `inspect`'s CPU (and adds 1.9% without a profile: docs/lab/ingest.md,
 * ninth look). */
static inline __attribute__((always_inline)) int args_value(struct reader *r, struct raw_args *a, int f)
{
    switch (f) {
    case AF_SEQ: return get_int(r, &coll_of(a)->seq, "Seq");
    case AF_GRID: return tr_get_dim3(r, a->grid);
    case AF_META_NAME: return tr_get_raw(r, &a->meta_name);
    case AF_BYTES: return get_int(r, &a->bytes, "bytes");
    case AF_BLOCK: return tr_get_dim3(r, a->block);
    case AF_DTYPE: return tr_get_raw(r, &coll_of(a)->dtype);
    case AF_STREAM: return get_int(r, &a->stream, "stream");
    case AF_DEVICE: return get_int(r, &a->device, "device");
    case AF_NCCL_SEQ: return get_int(r, &coll_of(a)->nccl_seq, "NCCL seq");
    case AF_EVENT_ID: return get_int(r, &sync_of(a)->event_id, "event_id");
    case AF_PEER: return get_int(r, &coll_of(a)->peer, "a peer rank");
    case AF_INPUT_DIMS: return tr_get_raw(r, &a->input_dims);
    case AF_INPUT_TYPES: return tr_get_raw(r, &a->input_types);
    case AF_GROUP_SIZE: return get_int(r, &coll_of(a)->group_size, "Group size");
    case AF_CORRELATION: return get_int(r, &a->correlation, "correlation");
    case AF_EXTERNAL_ID: return get_int(r, &a->external_id, "External id");
    case AF_IN_NELEMS: return get_int(r, &coll_of(a)->in_nelems, "In msg nelems");
    case AF_IN_SPLIT: return tr_get_raw(r, &coll_of(a)->in_split);
    case AF_OUT_NELEMS: return get_int(r, &coll_of(a)->out_nelems, "Out msg nelems");
    case AF_OUT_SPLIT: return tr_get_raw(r, &coll_of(a)->out_split);
    case AF_SYNC_KIND: return tr_get_raw(r, &sync_of(a)->kind);
    case AF_WAIT_ON_STREAM: return get_int(r, &sync_of(a)->wait_on_stream, "wait_on_stream");
    case AF_CONCRETE_INPUTS: return tr_get_raw(r, &a->concrete_inputs);
    case AF_COLL_NAME: return tr_get_raw(r, &coll_of(a)->name);
    case AF_PG_ID: /* the name, where an event has both */
        return coll_of(a)->pg_name.p ? tr_skip_value(r) : tr_get_raw(r, &coll_of(a)->pg_name);
    case AF_PG_NAME: return tr_get_raw(r, &coll_of(a)->pg_name);
    case AF_PG_RANKS: return tr_get_raw(r, &coll_of(a)->pg_ranks);
    case AF_WAIT_EVENT_ID: return get_int(r, &sync_of(a)->event_id, "wait_on_cuda_event_id");
    case AF_PG_DESC: return tr_get_raw(r, &coll_of(a)->pg_desc);
    case AF_WAIT_CORR: return get_int(r, &sync_of(a)->wait_corr, "wait_on_cuda_event_record_corr_id");
    }
    return tr_skip_value(r);
}

/* An event's args, their members learnt in memo (the set of its category). */
static int parse_args(struct reader *r, struct raw_args *a, struct member_memo *memo)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p == 'n')
        return tr_lex_literal(r, "null", 4);
    if (*r->p != '{')
        return FAIL(r, "args is not an object");
    int more;
    if ((rc = open_container(r, &more)))
        return rc;
    for (unsigned i = 0; more; i++) {
        int f;
        if ((rc = member_field(r, i < MEMO_MEMBERS ? &memo[i] : NULL, args_field, &f)) ||
            (rc = args_value(r, a, f)) || (rc = next_item(r, '}', &more)))
            return rc;
    }
    return RD_OK;
}

static void raw_event_init(struct raw_event *e)
{
    memset(e, 0, offsetof(struct raw_event, a) + offsetof(struct raw_args, c));
    struct raw_args *a = &e->a;
    a->correlation = a->external_id = a->stream = a->device = a->bytes = -1;
}

/* An entry's members the tables keep, by their key. */
enum event_field { EF_OTHER, EF_PH, EF_TS, EF_ID, EF_CAT, EF_PID, EF_TID, EF_DUR, EF_NAME, EF_ARGS };

static int event_field(struct slice k)
{
    switch (k.n) {
    case 2:
        return KEY_IS(k, "ph") ? EF_PH : KEY_IS(k, "ts") ? EF_TS : KEY_IS(k, "id") ? EF_ID : EF_OTHER;
    case 3:
        return KEY_IS(k, "cat")   ? EF_CAT
               : KEY_IS(k, "pid") ? EF_PID
               : KEY_IS(k, "tid") ? EF_TID
               : KEY_IS(k, "dur") ? EF_DUR
                                  : EF_OTHER;
    case 4:
        return KEY_IS(k, "name") ? EF_NAME : KEY_IS(k, "args") ? EF_ARGS : EF_OTHER;
    }
    return EF_OTHER;
}

/* A time (ts, dur): a number, in microseconds, kept in nanoseconds; *off
 * its byte offset, for messages. */
static int get_time(struct reader *r, int64_t *out, size_t *off, const char *not_number)
{
    pass_ws(r);
    *off = (size_t)(r->p - r->buf);
    if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
        return NOT_EXPECTED(r, "%s", not_number);
    return lex_number(r, 3, out);
}

/* The set of memos of an entry's members after its ph, and of its args
 * after its category: the top bits of a multiplicative hash of the
 * string's first and last bytes and its length, which tell Kineto's
 * phases and categories apart as well as a hash of every byte (sets: a
 * power of two). */
static unsigned memo_set(struct slice s, unsigned sets)
{
    assert(sets >= 2 && (sets & (sets - 1)) == 0);
    uint64_t k = s.n ? (uint64_t)(unsigned char)s.p[0] | (uint64_t)(unsigned char)s.p[s.n - 1] << 8 | (uint64_t)s.n << 16
                     : 0;
    return (unsigned)((k * UINT64_C(0xBF58476D1CE4E5B9)) >> (64 - __builtin_ctz(sets)));
}

/* Parse one traceEvents entry at r->p into *e. */
int tr_parse_event(struct reader *r, struct raw_event *e)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '{')
        return FAIL(r, "a traceEvents entry is not an object");
    raw_event_init(e);
    struct member_memo *memo = r->event_memo[0];
    int more;
    if ((rc = open_container(r, &more)))
        return rc;
    for (unsigned i = 0; more; i++) {
        int f;
        if ((rc = member_field(r, i < MEMO_MEMBERS ? &memo[i] : NULL, event_field, &f)))
            return rc;
        switch (f) {
        case EF_PH:
            rc = tr_get_string(r, &e->ph, "ph");
            if (i == 0)
                memo = r->event_memo[memo_set(e->ph, MEMO_EVENT_SETS)];
            break;
        case EF_TS:
            rc = get_time(r, &e->ts, &e->ts_off, "ts is not a number");
            e->has_ts = 1;
            break;
        case EF_ID:
            rc = get_idval(r, &e->id, "id");
            e->has_id = 1;
            break;
        case EF_CAT:
            rc = tr_get_string(r, &e->cat, "cat");
            break;
        case EF_PID:
            rc = get_idval(r, &e->pid, "pid");
            e->has_pid = 1;
            break;
        case EF_TID:
            rc = get_idval(r, &e->tid, "tid");
            e->has_tid = 1;
            break;
        case EF_DUR:
            rc = get_time(r, &e->dur, &e->dur_off, "dur is not a number");
            e->has_dur = 1;
            break;
        case EF_NAME:
            rc = tr_get_string(r, &e->name, "name");
            break;
        case EF_ARGS:
            rc = parse_args(r, &e->a, r->args_memo[memo_set(e->cat, MEMO_ARGS_SETS)]);
            e->has_args = 1;
            break;
        default:
            rc = tr_skip_value(r);
            break;
        }
        if (rc || (rc = next_item(r, '}', &more)))
            return rc;
    }
    return RD_OK;
}
