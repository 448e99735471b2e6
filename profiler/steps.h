/* profiler/steps.h: training steps, found in what was recorded.
 *
 * stepcast delimits steps by CPU-side `ProfilerStep#N` annotations. A job
 * traced from the outside has none, so the profiler makes them from one of:
 *
 *  - NVTX ranges whose name starts with a prefix (STEPCAST_PROF_STEP_NVTX,
 *    default "ProfilerStep#", what torch.profiler's step ranges are named
 *    under emit_nvtx); N is the number that follows the prefix, else the
 *    range's ordinal;
 *  - a step-boundary kernel (STEPCAST_PROF_STEP_KERNEL=substring): a step
 *    starts at the CPU launch of a kernel whose name contains it (an
 *    optimizer kernel, say) and ends where the next starts; matching kernels
 *    launched back to back (one per parameter group) make one boundary.
 *
 * prof_steps_find() does this exactly when the trace is written; the
 * tracker below does it approximately while recording, to drop what comes
 * before a step window (STEPCAST_PROF_STEPS=A-B) and to notice its end. */
#ifndef PROFILER_STEPS_H
#define PROFILER_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/event.h"
#include "profiler/store.h"

struct prof_join;

struct prof_step_rule {
    const char *nvtx_prefix;   /* NULL or "" = none */
    const char *kernel_substr; /* NULL or "" = none; takes precedence */
};

struct prof_step {
    int64_t number;
    uint64_t start, end;   /* CPU time, ns */
    uint32_t pid, tid;     /* the thread it is drawn on */
    uint32_t marker_name;  /* string id of the NVTX range's name, 0 = none */
    uint8_t complete;      /* its end was seen */
};

struct prof_steps {
    struct prof_step *v;
    size_t n;
};

/* 1 and the step number (or -1: none in the name) if an NVTX range name
 * names a step under the rule's prefix, else 0. */
int prof_step_marker_match(const struct prof_step_rule *r, const char *name, int64_t *number);

/* Whether a kernel name is a step boundary under the rule. */
int prof_step_kernel_match(const struct prof_step_rule *r, const char *name);

/* The steps in the store, in time order. 0 or -1 (out of memory). */
int prof_steps_find(const struct prof_store *st, const struct prof_join *j,
                    const struct prof_step_rule *r, struct prof_steps *out);
void prof_steps_release(struct prof_steps *s);

/* ---- while recording ---- */

struct prof_step_tracker {
    struct prof_step_rule rule;
    int64_t ordinal;        /* steps seen */
    int64_t number;         /* number of the latest step started, -1 = none yet */
    uint64_t start;         /* its start (CPU time for NVTX, GPU time for kernels), ns */
    uint32_t start_corr;    /* kernel rule: the boundary launch's correlation id */
    uint32_t marker_id;     /* NVTX rule: its range id */
    int64_t ended;          /* number of the latest step whose end was seen, -1 = none */
    int in_run;             /* kernel rule: the last kernel seen matched */
};

void prof_step_tracker_init(struct prof_step_tracker *t, const struct prof_step_rule *r);
/* Look at one converted event; 1 when it starts a new step (t->number,
 * t->start), 2 when it ends the current one (t->ended), else 0. */
int prof_step_tracker_feed(struct prof_step_tracker *t, const struct prof_store *st,
                           const struct prof_event *e);

#endif
