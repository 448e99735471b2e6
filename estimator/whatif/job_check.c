/* estimator/whatif/job_check.c: a job description against its traces
 * (job_check.h). */
#include "estimator/whatif/job_check.h"

#include "estimator/synth/estimate.h"
#include "estimator/spec/spec.h"
#include "common/banned.h"

int whatif_job_config_has_group(const struct job_config *c, int64_t size, int p2p)
{
    int64_t cp = c->cp ? c->cp : 1, ep, etp, edp;
    const int64_t sizes[] = {c->tp,         cp,           c->pp,           c->dp,
                             c->dp * cp,    c->tp * cp,   c->tp * c->dp,   c->tp * c->pp,
                             spec_job_config_world_size(c)};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (size == sizes[i])
            return 1;
    spec_job_config_expert_groups(c, &ep, &etp, &edp);
    if (c->moe.experts && (size == ep || size == etp || size == etp * ep || size == edp))
        return 1;
    return p2p && size == 2 && c->pp > 1;
}

int whatif_job_check_world_size(const struct job_config *c, int64_t world_size, const char *prefix, struct sc_error *err)
{
    int64_t world = spec_job_config_world_size(c);
    if (world_size <= 0 || world_size == world)
        return SC_OK;
    return sc_error_set(err, SC_EINVAL,
                        "%sdp: tp x cp x pp x dp = %lld x %lld x %lld x %lld = %lld GPUs, but the trace's world "
                        "size (distributedInfo) is %lld",
                        prefix, (long long)c->tp, (long long)(c->cp ? c->cp : 1), (long long)c->pp, (long long)c->dp,
                        (long long)world, (long long)world_size);
}

int whatif_job_check_mfu(const struct job_config *c, const struct hw_profile *hw, double step_ms, const char *prefix,
                  struct sc_error *err)
{
    struct est_spec spec;
    struct sc_error ignored;
    if (!hw || !(step_ms > 0) || spec_job_config_spec(c, hw->id, &spec, &ignored))
        return SC_OK;
    double mfu = synth_mfu(&spec, hw, step_ms);
    if (mfu <= 1)
        return SC_OK;
    return sc_error_set(err, SC_EINVAL,
                        "%s%s: %lld sequences of %lld tokens in the traced step of %.3f ms would be %.0f%% MFU on %lld "
                        "%s GPUs in %s, above their peak: the traced job ran less work per step than the "
                        "description gives",
                        prefix, c->global_batch ? "global_batch" : "micro_batch", (long long)spec.parallel.global_batch,
                        (long long)spec.model.seq, step_ms, mfu * 100, (long long)spec_gpus(&spec), hw->id,
                        cost_hw_dtype_name(spec.options.dtype));
}
