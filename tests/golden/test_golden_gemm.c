/* tests/golden/test_golden_gemm.c: GEMM shapes and kernel times extracted
 * from the real traces of ../shared/traces (fp32 recommendation models on
 * an A100 and a V100), and the kernel model's error on them.
 *
 * The expected counts and sums were computed from the JSON independently of
 * stepcast (each launch's innermost enclosing CPU op on its thread, the
 * kernels joined by correlation id). The error bounds guard the model's
 * figures in BENCHMARKS.md against regressions; they are not a target. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/calibrate/cluster_profile.h"
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/kernel_model.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define TD "HolisticTraceAnalysis/tests/data/trace_diff/"

static void golden(const char *rel, const char *profile, size_t samples, double m, double n, double k,
                   size_t shape_count, double shape_us, size_t tf32, double max_median_err_pct)
{
    const char *path = th_shared_path(rel);
    struct model_trace *t = NULL;
    struct sc_error err;
    struct gemm_samples s = {0};
    size_t skipped = 0, count = 0, n_tf32 = 0;
    double sum = 0;

    CHECK_EQ_INT(model_trace_load_file(path, NULL, &t, &err), SC_OK);
    if (!t)
        return;
    CHECK_EQ_INT(calib_gemm_samples_from_trace(t, &s, &skipped, &err), SC_OK);
    CHECK_EQ_INT(s.n, samples);
    CHECK_EQ_INT(skipped, 0);
    for (size_t i = 0; i < s.n; i++)
        n_tf32 += s.v[i].dtype == HW_TF32;
    CHECK_EQ_INT(n_tf32, tf32); /* fp32 ops the library ran on TF32 tensor cores */
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i].m == m && s.v[i].n == n && s.v[i].k == k && s.v[i].batch == 1) {
            count++;
            sum += s.v[i].measured_us;
        }
    CHECK_EQ_INT(count, shape_count);
    CHECK_NEAR(sum, shape_us, 1e-6);
    const char *device = s.n ? calib_gemm_device_name(t, s.v[0].device) : NULL;
    const struct hw_profile *hw = device ? cost_hw_profile_for_device(device) : NULL;
    CHECK(hw != NULL);
    if (hw) {
        struct kernel_params p;
        struct estimate_check c;
        cost_kernel_params_default(&p);
        CHECK_STREQ(hw->id, profile);
        CHECK_EQ_INT(calib_gemm_samples_check(&p, hw, s.v, s.n, &c, &err), SC_OK);
        CHECK_EQ_INT(c.n, samples);
        CHECK(c.median_abs_pct < max_median_err_pct);
    }
    calib_gemm_samples_release(&s);
    model_trace_free(t);
}

TEST(golden_gemm_a100)
{
    /* aten::addmm [1024 x 100] x [100 x 256] etc.: 78 ops, 547 us of kernels */
    golden(TD "control/control.json.gz", "a100-sxm4-40gb", 1776, 1024, 256, 100, 78, 547, 1638, 45);
}

TEST(golden_gemm_v100)
{
    golden(TD "test/test.json.gz", "v100-sxm2-16gb", 456, 1024, 96, 512, 78, 2993, 0, 60);
}

TEST(golden_calibrate_traces)
{
    /* the A100 trace's GEMMs fit the kernel model's fixed cost and ceiling:
     * the fit must describe them better than the defaults do */
    const char *trace = th_shared_path(TD "control/control.json.gz");
    const char *out = th_write_file("traces-profile.json", "", 0);
    char *argv[] = {(char *)th_build_path("stepcast"), "calibrate", "traces", "--out", (char *)out,
                    (char *)trace, NULL};
    char *so = th_run_expect(argv, 0, "GEMMs: 1776 with shapes and times", NULL);
    CHECK_CONTAINS(so, "GPU profile a100-sxm4-40gb");
    CHECK_CONTAINS(so, "memory-bound ops: "); /* hbm_fraction fitted (tests/golden/test_golden_mem.c) */
    CHECK_CONTAINS(so, " of at least 64 MiB fitted");
    free(so);
    size_t n;
    char *doc = th_read_file(out, &n);
    CHECK(doc != NULL);
    if (!doc)
        return;
    struct cluster_profile p;
    struct sc_error err;
    memset(&p, 0, sizeof p);
    cost_coll_params_from_hw(cost_hw_profile_find("a100-sxm4-40gb"), &p.coll);
    cost_kernel_params_default(&p.kernel);
    CHECK_EQ_INT(calib_cluster_profile_parse(doc, n, &p, &err), SC_OK);
    CHECK_EQ_INT(p.has_kernel, 1);
    CHECK_STREQ(p.source, "traces");
    CHECK(p.kernel.hbm_fraction != 0.86 && p.kernel.hbm_fraction <= 1);
    CHECK_CONTAINS(doc, "\"memory_bound\"");
    free(doc);
    /* the profile's parameters, checked on the same GEMMs */
    struct model_trace *t = NULL;
    struct gemm_samples s = {0};
    struct kernel_params def;
    struct estimate_check before, after;
    cost_kernel_params_default(&def);
    CHECK_EQ_INT(model_trace_load_file(trace, NULL, &t, &err), SC_OK);
    if (!t)
        return;
    CHECK_EQ_INT(calib_gemm_samples_from_trace(t, &s, NULL, &err), SC_OK);
    const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-40gb");
    CHECK_EQ_INT(calib_gemm_samples_check(&def, hw, s.v, s.n, &before, &err), SC_OK);
    CHECK_EQ_INT(calib_gemm_samples_check(&p.kernel, hw, s.v, s.n, &after, &err), SC_OK);
    CHECK(after.median_abs_pct < before.median_abs_pct);
    calib_gemm_samples_release(&s);
    model_trace_free(t);
}

TEST(golden_calibrate_traces_collectives)
{
    /* rank 0 of a 2-rank ResNet-50 DDP job: its all-reduces carry sizes */
    const char *trace = th_shared_path("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz");
    const char *out = th_write_file("nccl-profile.json", "", 0);
    char *argv[] = {(char *)th_build_path("stepcast"), "calibrate", "traces", "--out", (char *)out,
                    (char *)trace, NULL};
    /* the all-reduces' times are mostly waits on the untraced peer: the
     * model fits them no better than the defaults (95.8% off), which is
     * flagged, and the profile is written only with --force */
    char *so = th_run_expect(argv, 2, "traces: all_reduce, 2 ranks, nodes not said, 15 rows", "not written");
    CHECK_CONTAINS(so, "model with a100-sxm4-40gb's defaults: median error");
    CHECK_CONTAINS(so, "not fitted"); /* its GEMM ops carry no Input Dims */
    CHECK_CONTAINS(so, "flag: on traces (all_reduce, 2 ranks) the calibrated model is 95.8% off, no better than the "
                       "defaults' 95.8%");
    free(so);
    size_t n = 0;
    char *text = th_read_file(out, &n);
    CHECK_EQ_INT(n, 0);
    free(text);
    char *forced[] = {(char *)th_build_path("stepcast"), "calibrate", "traces", "--force", "--out", (char *)out,
                      (char *)trace, NULL};
    free(th_run_expect(forced, 0, "wrote", "with 2 flags, as --force asks"));
    text = th_read_file(out, &n);
    json_t *doc = json_loads(text ? text : "", 0, NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "flags")), 2);
    json_decref(doc);
    free(text);
}

/* A busbw past the link: the superbench all-to-all's 64 KiB to 512 KiB
 * range fits 17,613 GB/s on the A100's 300 GB/s NVLink (its time there is
 * all latency): flagged, and the profile not written without --force. */
TEST(golden_calibrate_nccl_tests_flags_a_busbw_past_the_link)
{
    const char *run = th_shared_calibration("nccl-tests/superbench-a100-sxm4-40gb-1node-8gpu-alltoall-oldfmt.txt");
    const char *out = th_write_file("alltoall-profile.json", "", 0);
    char *argv[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--gpu", "a100-sxm4-40gb",
                    "--out", (char *)out, (char *)run, NULL};
    free(th_run_expect(argv, 2, "flag: alltoall from 65536 B: busbw 17613.0 GB/s is above the a100-sxm4-40gb's "
                                "300 GB/s NVLink per direction",
                       "not written"));
    /* its all-reduce: nothing to flag */
    const char *ar = th_shared_calibration("nccl-tests/superbench-a100-sxm4-40gb-1node-8gpu-all_reduce-oldfmt.txt");
    char *ok[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--gpu", "a100-sxm4-40gb", "--out",
                  (char *)out, (char *)ar, NULL};
    char *so = th_run_expect(ok, 0, "wrote", NULL);
    CHECK(so && !strstr(so, "flag:"));
    free(so);
}
