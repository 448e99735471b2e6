/* tests/unit/test_mem_samples.c: the bytes memory-bound ops move, their
 * samples read from a trace written with tests/trace_builder.h, and the
 * fit of hbm_fraction recovering the bandwidth the trace was made at.
 *
 * The fixture's kernel times are the model's form at a chosen fraction
 * (0.75 of an A100-40GB's 1555 GB/s and 3 us per kernel), computed here
 * from the bytes worked out by hand; ops that must not count (a reduction
 * under aten::add, unreadable inputs, an op that is not memory-bound, a
 * small op that may live in L2) are mixed in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/calibrate.h"
#include "estimator/calibrate/cluster_profile.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/calibrate/mem_samples.h"
#include "estimator/synth/synth.h"
#include "estimator/costs/hardware.h"
#include "model/job.h"
#include "tests/check.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

static double bytes(const char *op, const char *dims, const char *types)
{
    double b = -1;
    struct sc_error err;
    CHECK_EQ_INT(calib_mem_op_bytes(op, dims, types, &b, &err), SC_OK);
    return b;
}

TEST(mem_op_bytes_by_role)
{
    struct sc_error err;
    double b;
    /* out of place, broadcast: [4, 1] + [1, 8] reads 4 + 8, writes 32 floats */
    CHECK_NEAR(bytes("aten::add", "[[4, 1], [1, 8], []]", "[\"float\", \"float\", \"Scalar\"]"), 44 * 4, 0);
    /* a 0-d tensor operand is read once; the output takes the full-size input's type */
    CHECK_NEAR(bytes("aten::mul", "[[1024, 64], []]", "[\"c10::Half\", \"float\"]"), 1024 * 64 * 4 + 4, 0);
    /* in place: both read, the first written */
    CHECK_NEAR(bytes("aten::add_", "[[100], [100], []]", "[\"float\", \"float\", \"Scalar\"]"), 300 * 4, 0);
    /* copy_ writes its first input and reads its second: a cast from double */
    CHECK_NEAR(bytes("aten::copy_", "[[10, 10], [10, 10], []]", "[\"float\", \"double\", \"\"]"), 100 * 12, 0);
    CHECK_NEAR(bytes("aten::fill_", "[[45310188], []]", "[\"float\", \"Scalar\"]"), 45310188.0 * 4, 0);
    CHECK_NEAR(bytes("aten::le", "[[1024], []]", "[\"float\", \"Scalar\"]"), 1024 * 5, 0);
    CHECK_NEAR(bytes("aten::native_dropout", "[[8, 8], [], []]", "[\"c10::BFloat16\", \"\", \"\"]"),
               64 * (2 + 2 + 1), 0);
    CHECK_NEAR(bytes("aten::where", "[[16], [16], [1]]", "[\"bool\", \"float\", \"float\"]"), 16 + 64 + 4 + 64, 0);
    /* refused: not memory-bound, no broadcast, a tensor list, mismatched lists */
    CHECK_EQ_INT(calib_mem_op_bytes("aten::mm", "[[2, 2], [2, 2]]", "[\"float\", \"float\"]", &b, &err), SC_EINVAL);
    CHECK_EQ_INT(calib_mem_op_bytes("aten::add", "[[3], [4], []]", "[\"float\", \"float\", \"Scalar\"]", &b, &err),
                 SC_EPARSE);
    CHECK_EQ_INT(calib_mem_op_bytes("aten::add", "[[], []]", "[\"TensorList\", \"Scalar\"]", &b, &err), SC_EPARSE);
    CHECK_EQ_INT(calib_mem_op_bytes("aten::add", "[[3]]", "[\"float\", \"float\"]", &b, &err), SC_EPARSE);
    CHECK_EQ_INT(calib_mem_op_bytes("aten::add", "[[-3]]", "[\"float\"]", &b, &err), SC_EPARSE);
    CHECK_EQ_INT(calib_mem_op_bytes("aten::add", "not json", "[\"float\"]", &b, &err), SC_EPARSE);
    CHECK_EQ_INT(calib_mem_op_bytes("aten::fill_", "[[1125899906842624], []]", "[\"float\", \"Scalar\"]", &b, &err),
                 SC_EPARSE); /* 4 PiB */
    CHECK_EQ_INT(calib_mem_op_bytes("aten::copy_", "[[4]]", "[\"float\"]", &b, &err), SC_EPARSE); /* no source */
}

#define FRACTION 0.75
#define FIXED_US 3.0
#define GBPS 1555.0

/* One op at `ts` with its kernel(s) named `kernel`, timed by the model. */
static void op(struct tb *tb, double ts, const char *name, const char *dims, const char *types, double bytes,
               const char *kernel, int kernels)
{
    char args[512];
    double k_us = FIXED_US + bytes / (GBPS * FRACTION * 1e3) / kernels;
    snprintf(args, sizeof args, "\"Input Dims\": %s, \"Input type\": %s", dims, types);
    tb_event(tb, "cpu_op", name, TB_PID, TB_MAIN, ts, 20, args);
    for (int i = 0; i < kernels; i++)
        tb_launch(tb, ts + 2 + 5 * i, 3, 7, kernel, ts + 1000 + 500 * i, k_us);
}

TEST(mem_samples_fit_recovers_bandwidth)
{
    static const char *ew = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>";
    static const char *ffs = "[\"float\", \"float\", \"Scalar\"]";
    struct tb tb;
    char dims[128];
    double ts = 0;
    size_t expect = 0;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1e7);
    for (int i = 0; i < 12; i++, ts += 10000) { /* 16M to 38M floats: 64 to 152 MiB per tensor */
        double n = (16 + 2 * i) * 1048576.0;
        snprintf(dims, sizeof dims, "[[%.0f], [%.0f], []]", n, n);
        switch (i % 4) {
        case 0:
            op(&tb, ts, "aten::add", dims, ffs, 12 * n, ew, 1);
            break;
        case 1: /* in place, run as two kernels */
            op(&tb, ts, "aten::add_", dims, ffs, 12 * n, ew, 2);
            break;
        case 2:
            snprintf(dims, sizeof dims, "[[%.0f], []]", n);
            op(&tb, ts, "aten::fill_", dims, "[\"float\", \"Scalar\"]", 4 * n,
               "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", 1);
            break;
        default: /* under aten::clone: the innermost op, copy_, has the kernel */
            tb_event(&tb, "cpu_op", "aten::clone", TB_PID, TB_MAIN, ts - 5, 40, "");
            op(&tb, ts, "aten::copy_", dims, ffs, 8 * n, "void at::native::unrolled_elementwise_kernel<direct_copy>",
               1);
        }
        expect++;
    }
    /* counted but below 64 MiB: not fitted (and timed far from the model) */
    op(&tb, ts += 10000, "aten::sigmoid", "[[1024]]", "[\"float\"]", 8, ew, 1);
    /* left out: a reduction under an elementwise op's name, unreadable inputs */
    op(&tb, ts += 10000, "aten::add", "[[1048576], [1048576], []]", ffs, 1e9,
       "void at::native::reduce_kernel<512, 1>", 1);
    op(&tb, ts += 10000, "aten::mul", "[[], []]", "[\"TensorList\", \"float\"]", 1e9, ew, 1);
    /* not memory-bound: ignored */
    op(&tb, ts += 10000, "aten::sum", "[[1048576]]", "[\"float\"]", 1e9, ew, 1);
    const char *path = tb_write(&tb, "mem.json");
    struct model_job *job = tb_job(&path, 1);
    REQUIRE(job != NULL);
    struct mem_samples s = {0};
    struct mem_skips sk = {0};
    struct sc_error err;
    CHECK_EQ_INT(calib_mem_samples_from_trace(job->ranks[0], &s, &sk, &err), SC_OK);
    REQUIRE(s.n == expect + 1);
    CHECK_EQ_INT(sk.other_kernel, 1);
    CHECK_EQ_INT(sk.unreadable, 1);
    CHECK_EQ_INT(s.v[1].kernels, 2);
    CHECK_NEAR(s.v[3].bytes, 8 * 22 * 1048576.0, 0); /* the copy_ under aten::clone */

    const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-40gb");
    REQUIRE(hw != NULL && hw->hbm_gbps == GBPS);
    struct kernel_params base, fitted;
    struct mem_fit fit;
    cost_kernel_params_default(&base);
    base.kernel_fixed_us = FIXED_US;
    fitted = base;
    CHECK_EQ_INT(calib_mem_samples_fit(&fitted, hw, s.v, s.n, &fitted, &fit, &err), SC_OK);
    CHECK_EQ_INT(fit.samples, expect);
    CHECK_NEAR(fit.before_fraction, base.hbm_fraction, 0);
    CHECK_NEAR(fitted.hbm_fraction, FRACTION, 1e-3);
    CHECK(fit.fraction_se < 1e-3);
    CHECK(fit.after.median_abs_pct < 0.1);
    CHECK(fit.before.median_abs_pct > 5); /* 0.86 against the 0.75 of the fixture */

    /* a fraction above 1 is refused, and the parameters stay (also when
     * fitted in place, as calibrate does) */
    for (size_t i = 0; i < s.n; i++)
        s.v[i].measured_us /= 2;
    fitted = base;
    CHECK_EQ_INT(calib_mem_samples_fit(&fitted, hw, s.v, s.n, &fitted, &fit, &err), SC_ENUMERIC);
    CHECK_CONTAINS(err.msg, "unphysical");
    CHECK_NEAR(fitted.hbm_fraction, base.hbm_fraction, 0);
    /* too few samples */
    CHECK_EQ_INT(calib_mem_samples_fit(&base, hw, s.v, 5, &fitted, &fit, &err), SC_EINVAL);
    calib_mem_samples_release(&s);
    model_job_free(job);
    tb_free(&tb);
}

/* `calibrate traces` on a trace whose GEMMs fit but whose memory-bound ops
 * are too small to: the profile carries the fitted GEMM parameters and,
 * for the HBM share it could not fit, the estimator's default
 * (calib_costs_default, what a spec without the profile gets), not the
 * cited figure. */
TEST(calibrate_traces_keeps_the_estimators_hbm_fraction_when_it_cannot_fit_one)
{
    struct tb tb;
    char dims[128];
    double ts = 0;
    struct sc_error err;
    const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-40gb");
    REQUIRE(hw != NULL);
    /* the GEMMs timed by the kernel model at 0.8 of the ceiling and 5 us */
    struct kernel_params made;
    cost_kernel_params_default(&made);
    made.gemm_ceiling_scale = 0.8;
    made.kernel_fixed_us = 5;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1e7);
    for (int i = 0; i < 12; i++, ts += 10000) {
        struct gemm_shape g = {512.0 * (1 + i % 4), 256.0 * (1 + i % 5), 1024.0 * (1 + i % 3), 1, HW_FP32};
        struct gemm_estimate e;
        CHECK_EQ_INT(cost_kernel_gemm(&made, hw, &g, &e, &err), SC_OK);
        snprintf(dims, sizeof dims, "[[%.0f, %.0f], [%.0f, %.0f]]", g.m, g.k, g.k, g.n);
        char args[256];
        snprintf(args, sizeof args, "\"Input Dims\": %s, \"Input type\": [\"float\", \"float\"]", dims);
        tb_event(&tb, "cpu_op", "aten::mm", TB_PID, TB_MAIN, ts, 20, args);
        tb_launch(&tb, ts + 2, 3, 7, "ampere_sgemm_128x64_nn", ts + 1000, e.time_us);
    }
    op(&tb, ts += 10000, "aten::sigmoid", "[[1024]]", "[\"float\"]", 8, /* small: not fitted */
       "void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_kernel>", 1);
    const char *path = tb_write(&tb, "gemms.json");
    struct model_job *job = tb_job(&path, 1);
    REQUIRE(job != NULL);
    char *doc = NULL, *text = NULL;
    size_t len = 0;
    FILE *report = open_memstream(&text, &len);
    REQUIRE(report != NULL);
    CHECK_EQ_INT(calib_traces(job, "a100-sxm4-40gb", report, &doc, &err), SC_OK);
    fclose(report);
    CHECK_CONTAINS(text, "GEMMs: 12 with shapes and times");
    CHECK_CONTAINS(text, "memory-bound ops: 1 with bytes; not fitted");
    struct est_costs defaults;
    calib_costs_default(hw, NULL, &defaults);
    struct cluster_profile p;
    memset(&p, 0, sizeof p);
    cost_kernel_params_default(&p.kernel);
    REQUIRE(doc != NULL);
    CHECK_EQ_INT(calib_cluster_profile_parse(doc, strlen(doc), &p, &err), SC_OK);
    CHECK_EQ_INT(p.has_kernel, 1);
    CHECK_NEAR(p.kernel.gemm_ceiling_scale, 0.8, 0.01); /* fitted */
    CHECK_NEAR(p.kernel.kernel_fixed_us, 5, 0.1);
    CHECK(p.kernel.hbm_fraction != 0.86);
    CHECK_NEAR(p.kernel.hbm_fraction, defaults.kernel.hbm_fraction, 0);
    free(doc);
    free(text);
    model_job_free(job);
    tb_free(&tb);
}
