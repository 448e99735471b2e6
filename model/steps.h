/* model/steps.h: where the training steps of a trace are (DESIGN.md §3).
 *
 * By default a step is a CPU-side `ProfilerStep#N` annotation (the
 * user_annotation, or the Operator of old traces; never the
 * gpu_user_annotation copy) and the measured step time is its span. With a marker, steps are delimited by CPU-side events
 * whose name starts with the marker (`Optimizer.step` matches
 * `Optimizer.step#SGD.step`): a step runs from one marker's start to the
 * next's, so N markers give N-1 steps, named "<marker>#<k>" (k from 1).
 * In both modes a marker nested inside the one before (an op and an
 * annotation of one name) is ignored.
 *
 * A step is partial when it is not wholly inside the recorded window (the
 * extent of the trace's other events): the trace starts or ends inside it. */
#ifndef MODEL_STEPS_H
#define MODEL_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct model_trace;

/* The default step marker's prefix. */
#define MODEL_PROFILER_STEP "ProfilerStep#"

/* Fill t->steps (sorted by start) from t's events. A trace without any step
 * gets none; that is not an error. */
int model_steps_find(struct model_trace *t, const char *marker, struct sc_error *err);

/* What steps t has, for a message when none is in range (first..last, -1:
 * open): the range of its step numbers, or, with none, the marker looked
 * for and the CPU annotations that repeat (the names a marker could be),
 * into buf (size n). */
void model_steps_describe(const struct model_trace *t, int64_t first, int64_t last, char *buf, size_t n);

#endif
