/* model/trace_meta.h: the top-level members of a trace other than
 * traceEvents: deviceProperties, distributedInfo (with its process
 * groups), baseTimeNanoseconds, schemaVersion and stepcast_synthetic. */
#ifndef MODEL_TRACE_META_H
#define MODEL_TRACE_META_H

#include "model/trace_lex.h"

/* The value of the top-level member named key, at r->p: validated only
 * (commit 0), or validated and kept in the trace (commit 1), so that a
 * member cut by the end of the buffered data is never kept twice. Members
 * the model does not use are skipped. An RD_ code. */
int tr_parse_member_value(struct reader *r, struct slice key, int commit);

#endif
