/* estimator/synth/invariants.h: the physical invariants every estimate keeps.
 *
 * An estimate that breaks one is a bug in the model (fix it there; never
 * clip the figure). Checked over random specs by tests/unit/test_invariants.c
 * and on every estimate `make validate` scores:
 *
 * - a GEMM or attention task takes at least its executed FLOPs over the
 *   GPU's measured matmul ceiling (cost_hw_matmul_ceiling_tflops) for the dtype
 *   it runs in (attention in bf16 under fp8 and fp4 recipes);
 * - the FLOPs the synthesised graph executes, summed over its tasks, equal
 *   the hardware-FLOP formula (spec_hardware_flops_per_token) within 1%;
 * - executed_flops_util is at most the ceiling's share of the peak, and
 *   mfu (PaLM's attention square) at most that share scaled by model over
 *   executed FLOPs without recomputation, i.e. by causal attention's half;
 * - a collective takes at least its bytes on the wire over all of the GPU's
 *   links at once (NVLink and the network; a reduction in the switch
 *   halves an all-reduce's);
 * - a pipeline rank's step takes at least the work of each of its streams.
 *
 * Memory-bound kernels and collectives by placement are checked at the
 * cost models' level (cost_kernel_memory_us at HBM bandwidth at most,
 * cost_coll_estimate at its placement's link at most) by the same tests. */
#ifndef ESTIMATOR_INVARIANTS_H
#define ESTIMATOR_INVARIANTS_H

#include "common/error.h"
#include "estimator/synth/estimate.h"

/* Check estimate e of spec s (synth_estimate's, at any detail, with costs
 * c) against the invariants, on the step synthesised again at kernel
 * detail. SC_EINTERNAL naming the invariant broken and by how much. */
int synth_invariants_check(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                         const struct est_estimate *e, struct sc_error *err);

/* The wire factor of a collective of kind op over n ranks: the bytes each
 * rank sends over its link per byte of the collective's size (nccl-tests'
 * bus factor, cost_coll_bus_factor; an all-reduce reduced in the switch,
 * `in_switch`, sends and receives its data once); 0 for fewer than two. */
double synth_wire_factor(enum model_coll_op op, int n, int in_switch);

#endif
