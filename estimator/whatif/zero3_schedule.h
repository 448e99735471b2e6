/* estimator/whatif/zero3_schedule.h: FSDP's (ZeRO-3's) per-unit parameter
 * all-gathers and gradient reduce-scatters on a traced step's units
 * (coll_placement.h), for a what-if that adds data parallelism to a job
 * traced without it.
 *
 * A separate module because the order and the waits are the estimator's
 * (synth_data_parallel.c: synth_z3_gather, synth_z3_grads_done,
 * synth_z3_reduce), not the trace's: both roads must run the same
 * collectives in the same order for the what-if to move the step as an
 * estimate does. Per unit, in the order the units run: its parameters
 * all-gathered on the rank's data-parallel stream, the unit's first
 * kernel waiting for them; with prefetch (overlap_param_gather, FSDP's
 * forward and backward prefetch) the gather waits only for the compute
 * before the unit that computes now, else for all the compute before its
 * own unit; then the gradients of the backward unit before it
 * reduce-scattered, once that unit's last kernel is done, the optimizer
 * waiting for them. The last backward unit's gradients are
 * reduce-scattered at the end. */
#ifndef ESTIMATOR_ZERO3_SCHEDULE_H
#define ESTIMATOR_ZERO3_SCHEDULE_H

#include <stdint.h>

struct coll_grads;

/* A rank's parameters in one unit of each kind (enum coll_unit_kind: a
 * layer's, the embedding's, the output layer's), and how many of the
 * target's layers a traced layer unit stands for. */
struct zero3_params {
    double layer, embedding, output;
    double layers_per_unit;
};

/* One collective: on the rank's data-parallel stream after task `after`,
 * task `before` waiting for it (MODEL_NONE: none); op is
 * MODEL_COLL_ALLGATHER (parameters) or MODEL_COLL_REDUCESCATTER
 * (gradients) over `params` parameters, standing for `times` of them
 * (a layer unit's: layers_per_unit). */
struct zero3_coll {
    uint32_t after, before;
    int op;
    double params, times;
};

/* Calls emit(ctx, c) for each collective of rank c's step in the order
 * they run on its stream; stops at emit's first nonzero answer and
 * returns it. */
int whatif_zero3_schedule(const struct coll_grads *c, const struct zero3_params *p, int prefetch,
                          int (*emit)(void *ctx, const struct zero3_coll *c), void *ctx);

#endif
