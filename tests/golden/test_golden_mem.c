/* tests/golden/test_golden_mem.c: the memory-bound ops of the real traces
 * of ../shared/traces (fp32 recommendation models on an A100 and a V100)
 * and the fit of hbm_fraction on them, with the GEMM fit's fixed cost as
 * `calibrate traces` does it.
 *
 * The bounds say what is physical, not what was measured: a fraction of
 * the profile's HBM bandwidth between 0.6 and 1 (STREAM reaches 0.86-0.92
 * on recent GPUs), and the model with it closer to the times than with the
 * default fraction. The figures are in BENCHMARKS.md. */
#include <string.h>

#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/calibrate/mem_samples.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define TD "HolisticTraceAnalysis/tests/data/trace_diff/"

static void golden(const char *rel, const char *profile)
{
    struct model_trace *t = NULL;
    struct sc_error err;
    struct gemm_samples g = {0};
    struct mem_samples s = {0};
    struct mem_skips sk = {0};
    const char *path = th_shared_path(rel);

    CHECK_EQ_INT(model_trace_load_file(path, NULL, &t, &err), SC_OK);
    if (!t)
        return;
    const struct hw_profile *hw = cost_hw_profile_find(profile);
    REQUIRE(hw != NULL);
    CHECK_EQ_INT(calib_gemm_samples_from_trace(t, &g, NULL, &err), SC_OK);
    CHECK_EQ_INT(calib_mem_samples_from_trace(t, &s, &sk, &err), SC_OK);
    CHECK(s.n > 1000);
    struct kernel_params base, gemm, fitted;
    struct gemm_fit gf;
    struct mem_fit mf;
    cost_kernel_params_default(&base);
    CHECK_EQ_INT(calib_gemm_samples_fit(&base, hw, g.v, g.n, &gemm, &gf, &err), SC_OK);
    CHECK_EQ_INT(calib_mem_samples_fit(&gemm, hw, s.v, s.n, &fitted, &mf, &err), SC_OK);
    CHECK(mf.samples >= 8);
    CHECK(fitted.hbm_fraction > 0.6 && fitted.hbm_fraction <= 1);
    CHECK(mf.fraction_se > 0 && mf.fraction_se < 0.05);
    CHECK(mf.after.mean_abs_pct < mf.before.mean_abs_pct);
    CHECK_NEAR(fitted.kernel_fixed_us, gemm.kernel_fixed_us, 0); /* only the fraction is set */
    /* the check of the profile's parameters agrees with the fit's own */
    struct estimate_check again;
    struct mem_sample *big = s.v;
    size_t m = 0;
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i].bytes >= MEM_FIT_MIN_BYTES && s.v[i].measured_us > 0)
            big[m++] = s.v[i];
    CHECK_EQ_INT(m, mf.samples);
    CHECK_EQ_INT(calib_mem_samples_check(&fitted, hw, big, m, &again, &err), SC_OK);
    CHECK_NEAR(again.mean_abs_pct, mf.after.mean_abs_pct, 1e-9);
    calib_mem_samples_release(&s);
    calib_gemm_samples_release(&g);
    model_trace_free(t);
}

TEST(golden_mem_a100)
{
    golden(TD "control/control.json.gz", "a100-sxm4-40gb");
}

TEST(golden_mem_v100)
{
    golden(TD "test/test.json.gz", "v100-sxm2-16gb");
}
