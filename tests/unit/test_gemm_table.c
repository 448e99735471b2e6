/* tests/unit/test_gemm_table.c: GEMM microbenchmark tables
 * (estimator/calibrate/gemm_table.h) and `calibrate gemms` on them (calib_files):
 * rows, comments and the device read; malformed tables refused with the
 * line and column named; the kernel model's parameters recovered from a
 * table it made; one GPU type at a time; rows of a dtype the GPU lacks
 * left out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"
#include "estimator/calibrate/calibrate.h"
#include "estimator/calibrate/cluster_profile.h"
#include "estimator/calibrate/gemm_table.h"
#include "estimator/synth/synth.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static int parse(const char *text, struct gemm_samples *s, char *device, struct sc_error *err)
{
    return calib_gemm_table_parse(text, strlen(text), s, device, 96, err);
}

/* calib_files on GEMM tables alone. */
static int calib_tables(const char *const *texts, const size_t *lens, const char *const *names, size_t n,
                        const char *gpu, FILE *report, char **doc, struct sc_error *err)
{
    struct calib_files tables = {texts, lens, names, n};
    struct calib_opts o = {.gpu = gpu, .kind = MODEL_COLL_UNKNOWN};
    return calib_files(NULL, &tables, &o, report, doc, err);
}

TEST(gemm_table_reads_rows_comments_and_the_device)
{
    static const char text[] = "\xEF\xBB\xBF# stepcast gemm-bench 1: cuBLAS\r\n"
                               "#   device:   NVIDIA H100 80GB HBM3  \r\n"
                               "# device:  NVIDIA H100 80GB HBM3  \r\n"
                               "\r\n"
                               "dtype,batch,m,n,k,us\r\n"
                               "bf16,1,4096,4096,4096,175.5\r\n"
                               "# a comment between rows\r\n"
                               "fp8,16,1024,64,1024,9\n"
                               "tf32,1,2147483648,1,1,1e3";
    struct gemm_samples s = {0};
    struct sc_error err;
    char device[96];
    CHECK_EQ_INT(parse(text, &s, device, &err), SC_OK);
    CHECK_STREQ(device, "NVIDIA H100 80GB HBM3");
    REQUIRE(s.n == 3);
    CHECK(s.v[0].dtype == HW_BF16 && s.v[0].batch == 1 && s.v[0].m == 4096 && s.v[0].k == 4096);
    CHECK_NEAR(s.v[0].measured_us, 175.5, 0);
    CHECK_EQ_INT(s.v[0].kernels, 1);
    CHECK(s.v[1].dtype == HW_FP8 && s.v[1].batch == 16 && s.v[1].n == 64);
    CHECK(s.v[2].dtype == HW_TF32 && s.v[2].m == 2147483648.0);
    CHECK_NEAR(s.v[2].measured_us, 1000, 0);
    /* a second table appends; one without a device line leaves it empty */
    CHECK_EQ_INT(parse("dtype,batch,m,n,k,us\nfp16,2,8,8,8,3\n", &s, device, &err), SC_OK);
    CHECK_EQ_INT((long long)s.n, 4);
    CHECK_STREQ(device, "");
    calib_gemm_samples_release(&s);
}

TEST(gemm_table_refuses_malformed_tables_naming_the_line)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"", "no header"},
        {"# device: X\n# only comments\n", "no header"},
        {"dtype,batch,m,n,k,time\nbf16,1,2,3,4,5\n", "line 1: expected the header"},
        {"dtype,batch,m,n,k,us\nbf17,1,2,3,4,5\n", "line 2: dtype: 'bf17'"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4\n", "line 2: k: expected 6"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,5,6\n", "line 2: us: expected 6"},
        {"dtype,batch,m,n,k,us\nbf16,1,,3,4,5\n", "line 2: m: expected 6"},
        {"dtype,batch,m,n,k,us\n\nbf16,0,2,3,4,5\n", "line 3: batch: '0' is not a whole number"},
        {"dtype,batch,m,n,k,us\nbf16,1,2.5,3,4,5\n", "line 2: m: '2.5' is not a whole number"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,2147483649,5\n", "line 2: k: '2147483649'"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,-5\n", "line 2: us: '-5' is not a time in microseconds above 0"},
        /* kernel times no benchmark measures are refused, never stored */
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,1e300\n", "line 2: us: '1e300' is not a time in microseconds"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,1e-320\n", "line 2: us: '1e-320'"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,nan\n", "line 2: us: 'nan'"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,1e400\n", "line 2: us: '1e400'"},
        {"dtype,batch,m,n,k,us\nbf16,1,2,3,4,5us\n", "line 2: us: '5us'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gemm_samples s = {0};
        struct sc_error err;
        char device[96];
        /* a good row first: a table refused adds none of its rows */
        REQUIRE(parse("dtype,batch,m,n,k,us\nbf16,1,2,3,4,5\n", &s, device, &err) == SC_OK);
        CHECK_EQ_INT(parse(bad[i].text, &s, device, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i].says);
        CHECK_EQ_INT((long long)s.n, 1);
        calib_gemm_samples_release(&s);
    }
}

/* A table the kernel model made on an H100 (the estimator's defaults but a
 * fixed cost of 5.5 us a GEMM, 0.9 of the bf16 ceiling and 0.675 of the
 * fp8 one, with +-3% of noise), in two files: calibrate finds the GPU from
 * the device line and recovers the fixed cost and each dtype's ceiling. */
TEST(calibrate_gemms_recovers_the_parameters_that_made_the_table)
{
    const struct hw_profile *hw = cost_hw_profile_find("h100-sxm");
    REQUIRE(hw != NULL);
    struct est_costs defaults;
    struct sc_error err;
    calib_costs_default(hw, NULL, &defaults);
    struct kernel_params made = defaults.kernel;
    made.kernel_fixed_us = 5.5;
    made.gemm_ceiling_scale = 0.9;
    made.dtype_scale[HW_FP8] = 0.75;
    char *texts[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    unsigned noise = 12345;
    for (int f = 0; f < 2; f++) {
        FILE *out = open_memstream(&texts[f], &lens[f]);
        REQUIRE(out != NULL);
        fprintf(out, "# device: %s\ndtype,batch,m,n,k,us\n", hw->device_names[0]);
        for (int i = 0; i < 40; i++) {
            enum hw_dtype d = f ? HW_FP8 : HW_BF16;
            struct gemm_shape g = {256.0 * (1 << (i % 6)), 512.0 * (1 << (i % 5)), 128.0 * (1 << (i % 7)),
                                   i % 3 ? 1 : 8, d};
            struct gemm_estimate e;
            REQUIRE(cost_kernel_gemm(&made, hw, &g, &e, &err) == SC_OK);
            noise = noise * 1103515245u + 12345u;
            double jitter = 1 + 0.03 * (((noise >> 16) % 2001) / 1000.0 - 1);
            fprintf(out, "%s,%.0f,%.0f,%.0f,%.0f,%.4f\n", cost_hw_dtype_name(d), g.batch, g.m, g.n, g.k,
                    e.time_us * jitter);
        }
        fclose(out);
    }
    const char *names[2] = {"bf16.csv", "fp8.csv"};
    char *doc = NULL, *report = NULL;
    size_t report_len = 0;
    FILE *rep = open_memstream(&report, &report_len);
    REQUIRE(rep != NULL);
    CHECK_EQ_INT(calib_tables((const char *const *)texts, lens, names, 2, NULL, rep, &doc, &err), SC_OK);
    fclose(rep);
    CHECK_CONTAINS(report, "GEMMs: 80 with shapes and times");
    CHECK_CONTAINS(report, "bf16     40 GEMMs");
    CHECK_CONTAINS(report, "fp8      40 GEMMs");
    struct cluster_profile p;
    memset(&p, 0, sizeof p);
    cost_kernel_params_default(&p.kernel);
    REQUIRE(doc != NULL);
    CHECK_EQ_INT(calib_cluster_profile_parse(doc, strlen(doc), &p, &err), SC_OK);
    CHECK_STREQ(p.gpu, "h100-sxm");
    CHECK_STREQ(p.source, "gemm-bench");
    CHECK_STREQ(p.device_name, hw->device_names[0]);
    CHECK_EQ_INT(p.has_kernel, 1);
    CHECK_NEAR(p.kernel.kernel_fixed_us, 5.5, 0.5);
    CHECK_NEAR(p.kernel.gemm_ceiling_scale * p.kernel.dtype_scale[HW_BF16], 0.9, 0.02);
    CHECK_NEAR(p.kernel.gemm_ceiling_scale * p.kernel.dtype_scale[HW_FP8], 0.675, 0.02);
    CHECK_CONTAINS(report, "its own ceiling, gemm_ceiling_scale_fp8");
    CHECK_NEAR(p.kernel.dtype_scale[HW_FP16], 1, 0); /* no fp16 in the table */
    free(doc);
    free(report);
    free(texts[0]);
    free(texts[1]);
}

/* The GEMM tables measured on lent GPUs (data/calibration/gemm-bench),
 * refitted by `calibrate gemms` from the estimator's defaults for that
 * GPU, give back the ceilings its profile carries: each dtype's fitted
 * ceiling over the profile's gemm_tflops within 2% (a refit starts from
 * those ceilings, so a stale profile or a table replaced shows here). */
TEST(gemm_bench_tables_give_their_profiles_ceilings)
{
    static const char *const ids[] = {"h100-sxm", "h200"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const struct hw_profile *hw = cost_hw_profile_find(ids[i]);
        REQUIRE(hw != NULL && cost_hw_has_gemm_tflops(hw));
        char path[96];
        snprintf(path, sizeof path, "data/calibration/gemm-bench/%s.csv", ids[i]);
        size_t len = 0;
        char *text = th_read_file(path, &len);
        REQUIRE(text != NULL);
        const char *texts[1] = {text}, *names[1] = {path};
        char *doc = NULL;
        struct sc_error err;
        FILE *devnull = fopen("/dev/null", "w");
        REQUIRE(devnull != NULL);
        CHECK_EQ_INT(calib_tables(texts, &len, names, 1, NULL, devnull, &doc, &err), SC_OK);
        fclose(devnull);
        struct cluster_profile p;
        memset(&p, 0, sizeof p);
        cost_kernel_params_default(&p.kernel);
        REQUIRE(doc != NULL);
        CHECK_EQ_INT(calib_cluster_profile_parse(doc, strlen(doc), &p, &err), SC_OK);
        CHECK_STREQ(p.gpu, ids[i]);
        int dtypes = 0;
        for (int d = 0; d < HW_DTYPE_COUNT; d++) {
            if (!(hw->peak_tflops[d] > 0))
                continue;
            double fitted = cost_kernel_gemm_ceiling_tflops(&p.kernel, hw, (enum hw_dtype)d);
            if (fabs(fitted / hw->gemm_tflops[d] - 1) > 0.02)
                fprintf(stderr, "%s %s: refitted %.1f TFLOP/s, profile %.1f\n", ids[i],
                        cost_hw_dtype_name((enum hw_dtype)d), fitted, hw->gemm_tflops[d]);
            CHECK_NEAR(fitted / hw->gemm_tflops[d], 1, 0.02);
            dtypes++;
        }
        CHECK_EQ_INT(dtypes, 5);
        free(doc);
        free(text);
    }
}

/* The estimator's defaults take a GPU's measured ceilings as they are,
 * and scale only the MAMF figures of GPUs measured nowhere here. */
TEST(estimator_defaults_take_measured_gemm_ceilings_as_they_are)
{
    const struct hw_profile *h100 = cost_hw_profile_find("h100-sxm"), *a100 = cost_hw_profile_find("a100-sxm4-80gb");
    REQUIRE(h100 != NULL && a100 != NULL);
    REQUIRE(!cost_hw_has_gemm_tflops(a100));
    struct est_costs c;
    calib_costs_default(h100, NULL, &c);
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&c.kernel, h100, HW_BF16), h100->gemm_tflops[HW_BF16], 1e-9);
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&c.kernel, h100, HW_FP8), h100->gemm_tflops[HW_FP8], 1e-9);
    calib_costs_default(a100, NULL, &c);
    double a = cost_kernel_gemm_ceiling_tflops(&c.kernel, a100, HW_BF16);
    CHECK(a < 0.95 * a100->mamf_tflops[HW_BF16] && a > 0.5 * a100->mamf_tflops[HW_BF16]);
}

TEST(calibrate_gemms_takes_one_gpu_type_at_a_time)
{
    const char *texts[2] = {"# device: NVIDIA H100 80GB HBM3\ndtype,batch,m,n,k,us\nbf16,1,8,8,8,5\n",
                            "# device: NVIDIA A100-SXM4-80GB\ndtype,batch,m,n,k,us\nbf16,1,8,8,8,5\n"};
    const char *names[2] = {"h100.csv", "a100.csv"};
    size_t lens[2] = {strlen(texts[0]), strlen(texts[1])};
    char *doc = NULL;
    struct sc_error err;
    FILE *devnull = fopen("/dev/null", "w");
    REQUIRE(devnull != NULL);
    CHECK_EQ_INT(calib_tables(texts, lens, names, 2, NULL, devnull, &doc, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "a100.csv: GPU 'NVIDIA A100-SXM4-80GB', another file has 'NVIDIA H100 80GB HBM3'");
    CHECK(doc == NULL);
    /* too few rows to fit: said, and no profile */
    CHECK_EQ_INT(calib_tables(texts, lens, names, 1, NULL, devnull, &doc, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "could not be fitted");
    CHECK(doc == NULL);
    /* a bad table is named */
    const char *bad[1] = {"dtype,batch,m,n,k,us\nbf16,1,8,8\n"};
    size_t bad_len[1] = {strlen(bad[0])};
    CHECK_EQ_INT(calib_tables(bad, bad_len, names, 1, "h100-sxm", devnull, &doc, &err), SC_EPARSE);
    CHECK_CONTAINS(err.msg, "'h100.csv': line 2");
    fclose(devnull);
}

/* Rows of a dtype the GPU lacks (a V100 has no tf32: a benchmark times it
 * as fp32) are left out, and said; the rest are fitted. */
TEST(calibrate_gemms_leaves_out_dtypes_the_gpu_lacks)
{
    const char *names[1] = {"h100.csv"};
    char *doc = NULL, *report = NULL;
    size_t n, report_len = 0;
    struct sc_error err;
    char *good = th_read_file("tests/fixtures/gemm-bench/h100-synthetic.csv", &n);
    REQUIRE(good != NULL);
    char *with_fp4 = malloc(n + 64);
    REQUIRE(with_fp4 != NULL);
    snprintf(with_fp4, n + 64, "%sfp4,1,1024,1024,1024,10\nfp4,1,2048,1024,1024,12\n", good);
    const char *t[1] = {with_fp4};
    size_t l[1] = {strlen(with_fp4)};
    FILE *rep = open_memstream(&report, &report_len);
    REQUIRE(rep != NULL);
    CHECK_EQ_INT(calib_tables(t, l, names, 1, NULL, rep, &doc, &err), SC_OK);
    fclose(rep);
    CHECK_CONTAINS(report, "GEMMs: 2 in fp4 left out: NVIDIA H100 SXM5 80GB has no fp4");
    CHECK_CONTAINS(report, "GEMMs: 14 with shapes and times");
    free(doc);
    free(report);
    free(with_fp4);
    free(good);
}

/* nccl-tests outputs and GEMM tables in one profile: the collective model
 * from the one, the kernel model from the other. */
TEST(calibrate_nccl_tests_and_gemms_into_one_profile)
{
    size_t lens[2];
    char *texts[2] = {th_read_file("tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt", &lens[0]),
                      th_read_file("tests/fixtures/gemm-bench/h100-synthetic.csv", &lens[1])};
    REQUIRE(texts[0] && texts[1]);
    const char *names[2] = {"sendrecv.txt", "h100.csv"};
    struct calib_files nccl = {(const char *const *)&texts[0], &lens[0], &names[0], 1};
    struct calib_files gemms = {(const char *const *)&texts[1], &lens[1], &names[1], 1};
    struct calib_opts o = {.gpu = "h100-sxm", .kind = MODEL_COLL_UNKNOWN};
    char *doc = NULL;
    struct sc_error err;
    FILE *devnull = fopen("/dev/null", "w");
    REQUIRE(devnull != NULL);
    CHECK_EQ_INT(calib_files(&nccl, &gemms, &o, devnull, &doc, &err), SC_OK);
    struct cluster_profile p;
    memset(&p, 0, sizeof p);
    cost_kernel_params_default(&p.kernel);
    REQUIRE(doc != NULL);
    CHECK_EQ_INT(calib_cluster_profile_parse(doc, strlen(doc), &p, &err), SC_OK);
    CHECK_STREQ(p.source, "nccl-tests+gemm-bench");
    CHECK_EQ_INT(p.has_kernel, 1);
    /* the table's 700 TFLOP/s over the H100's measured ceiling */
    CHECK_NEAR(p.kernel.gemm_ceiling_scale, 700 / cost_hw_profile_find("h100-sxm")->gemm_tflops[HW_BF16], 0.03);
    CHECK_NEAR(p.coll.inter.busbw_gbps, 24, 0.5);               /* the output's 24 GB/s */
    free(doc);
    CHECK_EQ_INT(calib_files(NULL, NULL, &o, devnull, &doc, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "no nccl-tests output or GEMM table given");
    fclose(devnull);
    free(texts[0]);
    free(texts[1]);
}

TEST(csv_fields_and_lines)
{
    struct sc_lines l;
    const char *s, *q;
    size_t n;
    char buf[4];
    sc_lines_init(&l, "a,bc\r\n\nxyz", 11);
    REQUIRE(sc_lines_next(&l, &s, &n));
    CHECK_EQ_INT((long long)n, 4);
    CHECK_EQ_INT((long long)l.line, 1);
    q = s;
    CHECK_EQ_INT(sc_csv_field(&q, s + n, 1, buf, sizeof buf), -1); /* a comma before the end */
    CHECK_EQ_INT(sc_csv_field(&q, s + n, 0, buf, sizeof buf), 0);
    CHECK_STREQ(buf, "a");
    CHECK_EQ_INT(sc_csv_field(&q, s + n, 0, buf, sizeof buf), -1); /* no comma after bc */
    CHECK_EQ_INT(sc_csv_field(&q, s + n, 1, buf, sizeof buf), 0);
    CHECK_STREQ(buf, "bc");
    CHECK_EQ_INT(sc_csv_field(&q, s + n, 1, buf, sizeof buf), -1); /* the line is done */
    REQUIRE(sc_lines_next(&l, &s, &n));
    CHECK_EQ_INT((long long)n, 0);
    REQUIRE(sc_lines_next(&l, &s, &n));
    CHECK_EQ_INT((long long)l.line, 3);
    q = s;
    CHECK_EQ_INT(sc_csv_field(&q, s + n, 1, buf, sizeof buf), -1); /* "xyz" and its NUL do not fit in 3 */
    CHECK(!sc_lines_next(&l, &s, &n));
}
