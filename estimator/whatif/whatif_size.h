/* estimator/whatif/whatif_size.h: how large a what-if's graph would be, known
 * before the what-if runs.
 *
 * A what-if (whatif.h) either copies the traced graph, re-timing its
 * tasks (more layers or micro-batches scale durations, not the task
 * count) and inserting collectives (tensor or data parallelism from 1),
 * or, for another pipeline, schedule, vpp or cp (or tp or dp of a
 * pipelined job), rebuilds the schedule with the target's layers,
 * micro-batches a step, stages, virtual stages and attention blocks. The
 * prediction is an upper bound of the result's tasks: the traced task
 * count times each growth factor of the path taken (never below 1), and
 * its memory at WHATIF_BYTES_PER_TASK a task (the copy, its replay and
 * the structure recovered from the graph and its traces' notes: no trace
 * is read again) and WHATIF_BYTES_FIXED. What the daemon's admission control
 * (daemon/admission.h) weighs a what-if, and each candidate of a plan from
 * a model, by before it starts. */
#ifndef ESTIMATOR_WHATIF_SIZE_H
#define ESTIMATOR_WHATIF_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "estimator/spec/job_config.h"

/* Peak heap bytes of a what-if: WHATIF_BYTES_PER_TASK for each task
 * predicted (its copy, replay and structure) and WHATIF_BYTES_FIXED for
 * what does not grow with the tasks (the target's profiles and tables).
 * Measured with the test binary's allocator counting the heap at its
 * peak, on the sample, a shared HTA trace, a gentrace job and a
 * synthesised job to 4x, 16x and 64x its layers on 2 and 4 stages: at
 * most 382 bytes a task, and 635 on the smallest job (690 tasks: 0.42
 * MiB), each with half again as margin or more
 * (tests/integration/test_svc_whatif_size.c fails should a prediction
 * fall below what was measured; docs/lab/what-if-memory.md has the
 * table). */
#define WHATIF_BYTES_PER_TASK 576
#define WHATIF_BYTES_FIXED (1u << 20)

struct whatif_size {
    double tasks; /* of the copy, at most */
    double growth; /* tasks over the traced graph's */
    double bytes;  /* peak */
};

/* The size of the what-if `set` of a graph of n_tasks tasks described by
 * base. */
void whatif_size_predict(size_t n_tasks, const struct job_config *base, const struct job_config *set,
                         struct whatif_size *out);

#endif
