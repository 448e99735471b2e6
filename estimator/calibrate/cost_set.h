/* estimator/calibrate/cost_set.h: what the synthesised work costs: the kernel and
 * collective models' parameters and the host's dispatch costs, from the
 * cited sources, from `make validate`'s fits, or from a cluster profile
 * (cost_set.c). */
#ifndef ESTIMATOR_COSTS_H
#define ESTIMATOR_COSTS_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/collective_model.h"
#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/spec/spec.h"

/* What the synthesised work costs. */
struct est_costs {
    struct kernel_params kernel;
    struct coll_params coll;
    /* host time to dispatch one GPU operation, microseconds (the
     * framework's dispatch, in the forward pass or the autograd engine's,
     * and the launch), and to issue one collective (the process group's
     * bookkeeping and its stream synchronisation) */
    double host_op_us, host_coll_us;
    /* busiest expert's tokens over the mean under top-k routing */
    double moe_imbalance;
};

/* The costs of the cited sources alone (cost_params.def: spec sheets,
 * microbenchmarks, NCCL's constants) on a GPU's profile, with the spec's
 * bandwidth overrides applied: where `make validate` starts its fits. */
void calib_costs_cited(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c);
/* The cited costs with the hardware-level parameters `make validate` fits
 * on the A100 steps of ../shared/validation set to that fit (BENCHMARKS.md,
 * "Estimator validation"): where the published runs' fits start. */
void calib_costs_base(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c);
/* The estimator's defaults: calib_costs_base, and for Megatron's step on
 * Hopper and Blackwell GPUs in 16-bit, fp8 or fp4 (spec NULL: none) the
 * fit on the published runs of ../shared/validation/published by GPU
 * generation and precision (BENCHMARKS.md, "Published runs"). */
void calib_costs_default(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c);

/* Apply a cluster profile document (`stepcast calibrate ... --out`, the
 * file a spec's cluster.profile names) over *c: the collective parameters,
 * and the kernel ones when it holds them. SC_EINVAL when it was measured
 * on another GPU than `gpu`; SC_EPARSE for a bad document. */
int calib_costs_apply_profile(struct est_costs *c, const char *json, size_t len, const char *gpu,
                            struct sc_error *err);

/* What one micro-batch's passes cost on the compute stream, ns
 * (synth_pass_costs, synth.h). */
struct est_pass_costs {
    int64_t layer_f[2], layer_b[2], layer_r[2], embed_f, embed_b, head_f, head_b;
    /* the kernels once a step after the backward passes (the gradient
     * norm's and the optimizer's), the mean over the pipeline ranks: only
     * synth_measured reads it (<= 0: the model's; synth_pass_costs leaves
     * it 0, as it depends on pp and dp) */
    int64_t step_end;
};

#endif
