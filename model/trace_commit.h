/* model/trace_commit.h: a parsed traceEvents entry (trace_event.h)
 * committed to the event tables (trace.h).
 *
 * Each kind of entry goes to its table: complete events ("X") with their
 * collective, sync or launch details, flows ("s", "f"), thread names of
 * metadata ("M"); the strings they name are interned in the trace's table. */
#ifndef MODEL_TRACE_COMMIT_H
#define MODEL_TRACE_COMMIT_H

#include <stdint.h>

#include "model/trace_event.h"

/* The string id of s in the trace's table, MODEL_NONE for no string. */
int tr_intern(struct reader *r, struct slice s, uint32_t *id);
/* Commit entry e to the tables (an RD_ code). */
int tr_commit_event(struct reader *r, const struct raw_event *e);

#endif
