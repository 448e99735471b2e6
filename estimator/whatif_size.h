/* estimator/whatif_size.h: how large a what-if's graph would be, known
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
 * the structure recovered) plus the traces read whole again. What the
 * daemon's admission control (daemon/admission.h) weighs a what-if, and
 * each candidate of a plan from a model, by before it starts. */
#ifndef ESTIMATOR_WHATIF_SIZE_H
#define ESTIMATOR_WHATIF_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "estimator/job_config.h"

/* Peak bytes a task of the what-if's copy takes, built and replayed
 * (measured: about 300 at 4,096 layers of a small job, peak resident). */
#define WHATIF_BYTES_PER_TASK 512

struct whatif_size {
    double tasks; /* of the copy, at most */
    double growth; /* tasks over the traced graph's */
    double bytes;  /* peak, with the whole traces' whole_bytes */
};

/* The size of the what-if `set` of a graph of n_tasks tasks described by
 * base, its traces taking whole_bytes read whole. */
void whatif_size_predict(size_t n_tasks, double whole_bytes, const struct job_config *base,
                         const struct job_config *set, struct whatif_size *out);

#endif
