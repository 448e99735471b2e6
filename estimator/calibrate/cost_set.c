/* estimator/calibrate/cost_set.c: what the synthesised work costs (cost_set.h): the cited
 * values, the fits of `make validate` over them, the defaults by GPU
 * generation and precision, and a cluster profile applied over them.
 *
 * Apart from synth.c because every estimate, plan and what-if picks its
 * costs here before any step is synthesised, and the fitted values are
 * data, not synthesis. */
#include "estimator/calibrate/cost_set.h"

#include <string.h>

#include "estimator/calibrate/cluster_profile.h"
#include "estimator/costs/cost_params.h"
#include "common/banned.h"

void calib_costs_cited(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c)
{
    memset(c, 0, sizeof *c);
    cost_kernel_params_for_gpu(&c->kernel, hw);
    cost_coll_params_from_hw(hw, &c->coll);
    if (spec && spec->cluster.intra_node_gbps > 0) { /* the spec's fabric, not the one measured */
        c->coll.intra.busbw_gbps = spec->cluster.intra_node_gbps * cost_param_cited(cost_param_intra_fraction);
        memset(c->coll.lines, 0, sizeof c->coll.lines);
    }
    if (spec && spec->cluster.inter_node_gbps > 0)
        c->coll.inter.busbw_gbps = spec->cluster.inter_node_gbps * cost_param_cited(cost_param_inter_fraction);
    c->host_op_us = cost_param_cited(cost_param_host_op_us);
    c->host_coll_us = cost_param_cited(cost_param_host_coll_us);
    c->moe_imbalance = cost_param_cited(cost_param_moe_imbalance);
}

/* What `make validate` fits on all 1,440 measured A100 steps of
 * ../shared/validation (BENCHMARKS.md, "Estimator validation"), starting
 * from the cited values: host time per synthesised operation (a
 * collective's extra host time keeps its cited value), the GEMM ceiling's
 * share of each GPU's own MAMF figure, the memory-bound kernels' share of
 * HBM bandwidth and a synthesised kernel's fixed time (a synthesised
 * layer has about 40 operations where Megatron's has about 100, so both
 * per-operation costs stand for two or three of PyTorch's). A GPU whose profile carries GEMM ceilings measured on it
 * (gemm_tflops) keeps them as they are: the share fitted on the A100 is
 * the A100's, the best guess only for GPUs nobody measured here. */
#define EST_FIT_HOST_OP_US 65.35
#define EST_FIT_GEMM_CEILING_SCALE 0.852
#define EST_FIT_HBM_FRACTION 0.706
#define EST_FIT_KERNEL_FIXED_US 8.29

void calib_costs_base(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c)
{
    calib_costs_cited(hw, spec, c);
    c->host_op_us = EST_FIT_HOST_OP_US;
    c->kernel.gemm_ceiling_scale = cost_hw_has_gemm_tflops(hw) ? 1 : EST_FIT_GEMM_CEILING_SCALE;
    c->kernel.hbm_fraction = EST_FIT_HBM_FRACTION;
    c->kernel.kernel_fixed_us = EST_FIT_KERNEL_FIXED_US;
}

/* What `make validate` fits on the published step times of NeMo and
 * Megatron-Core jobs of 8 to 2,304 GPUs (../shared/validation/published;
 * BENCHMARKS.md, "Published runs"), per GPU and precision, starting from
 * calib_costs_base: the same four parameters, the GEMM ceiling's share
 * relative to the GPU's own measured table (H100) or its MAMF (GB200).
 * They hold for Megatron's step (options.framework megatron) at scale, and
 * carry over by a rule: every Hopper GPU takes the H100's, every
 * Blackwell GPU the GB200's (the same silicon generation and software
 * stack); fp4 takes fp8's (Transformer Engine's low-precision recipes),
 * fp16 bf16's. fp32 and other GPUs keep the base. */
static const struct {
    enum hw_arch arch;
    int low_precision; /* fp8 and fp4 */
    double host_op_us, gemm_ceiling_scale, hbm_fraction, kernel_fixed_us;
} published_fit[] = {
    {HW_ARCH_HOPPER, 0, 91.030, 0.844, 0.633, 12.687},
    {HW_ARCH_HOPPER, 1, 68.635, 0.999, 0.636, 20.365},
    {HW_ARCH_BLACKWELL, 0, 144.059, 0.700, 0.676, 10.630},
    {HW_ARCH_BLACKWELL, 1, 142.422, 0.710, 0.636, 3.130},
};

void calib_costs_default(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c)
{
    calib_costs_base(hw, spec, c);
    if (!spec || spec->options.framework != EST_FRAMEWORK_MEGATRON || spec->options.dtype == HW_FP32)
        return;
    int low = spec->options.dtype == HW_FP8 || spec->options.dtype == HW_FP4;
    for (size_t i = 0; i < sizeof published_fit / sizeof published_fit[0]; i++)
        if (published_fit[i].arch == hw->arch && published_fit[i].low_precision == low) {
            c->host_op_us = published_fit[i].host_op_us;
            c->kernel.gemm_ceiling_scale = published_fit[i].gemm_ceiling_scale;
            c->kernel.hbm_fraction = published_fit[i].hbm_fraction;
            c->kernel.kernel_fixed_us = published_fit[i].kernel_fixed_us;
        }
}

int calib_costs_apply_profile(struct est_costs *c, const char *json, size_t len, const char *gpu,
                            struct sc_error *err)
{
    struct cluster_profile p;
    memset(&p, 0, sizeof p);
    p.coll = c->coll;
    p.kernel = c->kernel;
    if (calib_cluster_profile_parse(json, len, &p, err))
        return sc_error_prefix(err, "cluster.profile");
    if (p.gpu[0] && strcmp(p.gpu, gpu) != 0)
        return sc_error_set(err, SC_EINVAL, "cluster.profile: measured on %s, but cluster.gpu is %s", p.gpu,
                            gpu);
    c->coll = p.coll;
    if (p.has_kernel)
        c->kernel = p.kernel;
    return SC_OK;
}
