/* tests/unit/test_nccl_tests.c: the nccl-tests reader on the real outputs
 * of ../shared/calibration/nccl-tests (three format generations, a partial
 * MPI-tagged copy) and on tests/fixtures/nccl-tests (what they lack:
 * sendrecv); the fit of alpha and busbw; the collective model by hand; the
 * cluster profile's round trip. Expected values are read off the files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/cluster_profile.h"
#include "estimator/costs/collective_model.h"
#include "estimator/costs/hardware.h"
#include "estimator/calibrate/coll_fit.h"
#include "estimator/calibrate/nccl_tests.h"
#include "estimator/synth/synth.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define NCT "nccl-tests/"

static int load(const char *path, struct nct_run *run)
{
    size_t n;
    struct sc_error err;
    char *text = th_read_file(path, &n);
    CHECK(text != NULL);
    if (!text)
        return -1;
    const char *base = strrchr(path, '/');
    int rc = calib_nct_parse(text, n, base ? base + 1 : path, run, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    CHECK_EQ_INT(rc, SC_OK);
    free(text);
    return rc;
}

/* The fit of the largest sizes. */
static const struct coll_fit *fit_large(const struct nct_run *run, struct coll_fit *fits, size_t *n)
{
    struct sc_error err;
    int rc = calib_coll_fit_run(run, fits, n, &err);
    if (rc)
        fprintf(stderr, "fit: %s\n", err.msg);
    CHECK_EQ_INT(rc, SC_OK);
    return rc || *n == 0 ? NULL : &fits[*n - 1];
}

TEST(nccl_tests_old_format_all_reduce)
{
    struct nct_run run;
    if (load(th_shared_calibration(NCT "superbench-a100-sxm4-40gb-1node-8gpu-all_reduce-oldfmt.txt"), &run))
        return;
    CHECK_EQ_INT(run.kind, MODEL_COLL_ALLREDUCE); /* from the file name: old outputs do not say */
    CHECK_EQ_INT(run.ranks, 8);
    CHECK_EQ_INT(run.ranks_derived, 0);
    CHECK_EQ_INT(run.nodes, 1);
    CHECK_STREQ(run.device, "A100-SXM4-40GB");
    CHECK_EQ_INT(run.n_rows, 34); /* the NCCL INFO line is not a row */
    CHECK_NEAR(run.rows[33].bytes, 8589934592.0, 0);
    CHECK_NEAR(run.rows[33].time_us[0], 63896, 0);
    CHECK_NEAR(run.rows[33].time_us[1], 63959, 0);
    CHECK_NEAR(run.rows[33].busbw_gbps[0], 235.26, 1e-9);

    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    const struct coll_fit *big = fit_large(&run, fits, &n);
    CHECK_EQ_INT(n, COLL_FIT_RANGES); /* every range has its sizes */
    if (big) {
        /* the file's busbw column reaches 230-235 GB/s from 1 GiB up */
        CHECK(big->busbw_gbps > 215 && big->busbw_gbps < 240);
        CHECK(big->size_lo >= 16777216);
        CHECK(big->rms_err_pct < 10);
    }
    /* small messages: ~34-35 us whatever the size (the file's time column) */
    CHECK(fits[0].alpha_fitted);
    CHECK(fits[0].alpha_us > 30 && fits[0].alpha_us < 40);
    calib_nct_run_release(&run);
}

TEST(nccl_tests_old_alltoall_with_blank_redop)
{
    struct nct_run run;
    if (load(th_shared_calibration(NCT "superbench-a100-sxm4-40gb-1node-8gpu-alltoall-oldfmt.txt"), &run))
        return;
    CHECK_EQ_INT(run.kind, MODEL_COLL_ALLTOALL);
    CHECK_EQ_INT(run.ranks, 8);
    CHECK_EQ_INT(run.n_rows, 34);
    CHECK_NEAR(run.rows[33].time_us[0], 33508, 0);
    CHECK_NEAR(run.rows[33].algbw_gbps[1], 258.47, 1e-9);
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    const struct coll_fit *big = fit_large(&run, fits, &n);
    if (big) /* busbw column: 210-226 GB/s from 512 MiB up */
        CHECK(big->busbw_gbps > 200 && big->busbw_gbps < 235);
    calib_nct_run_release(&run);
}

TEST(nccl_tests_partial_mpi_tagged_derives_ranks)
{
    struct nct_run run;
    if (load(th_shared_calibration(NCT "aws-batch-p5-allreduce-mpitagged-partial.txt"), &run))
        return;
    CHECK_EQ_INT(run.kind, MODEL_COLL_ALLREDUCE);
    /* no device lines: busbw/algbw = 483.05/276.03 = 1.75 = 2(n-1)/n */
    CHECK_EQ_INT(run.ranks, 8);
    CHECK_EQ_INT(run.ranks_derived, 1);
    CHECK_EQ_INT(run.nodes, 0);
    CHECK_STREQ(run.device, "");
    CHECK_EQ_INT(run.n_rows, 32);
    CHECK_NEAR(run.rows[0].time_us[0], 12.90, 1e-9);
    CHECK_NEAR(run.rows[31].bytes, 17179869184.0, 0);
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    const struct coll_fit *big = fit_large(&run, fits, &n);
    if (big) /* busbw column: 396-483 GB/s from 128 MiB up */
        CHECK(big->busbw_gbps > 400 && big->busbw_gbps < 490);
    CHECK(fits[0].alpha_us > 10 && fits[0].alpha_us < 20); /* 12.9-19 us below 64 KiB */
    calib_nct_run_release(&run);
}

TEST(nccl_tests_newest_format_one_size)
{
    struct nct_run run;
    if (load(th_shared_calibration(NCT "dgxspark-gb10-2node-2gpu-all_gather-v2.18.5.txt"), &run))
        return;
    CHECK_EQ_INT(run.kind, MODEL_COLL_ALLGATHER); /* "# Collective test starting" */
    CHECK_EQ_INT(run.ranks, 2);
    CHECK_EQ_INT(run.nodes, 2);
    CHECK_STREQ(run.device, "NVIDIA GB10");
    CHECK_EQ_INT(run.n_rows, 1);
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    const struct coll_fit *f = fit_large(&run, fits, &n);
    CHECK_EQ_INT(n, 1);
    if (f) { /* one size: busbw alone, the file's 22.94 and 22.98 GB/s */
        CHECK_EQ_INT(f->alpha_fitted, 0);
        CHECK_NEAR(f->busbw_gbps, 22.96, 0.05);
    }
    calib_nct_run_release(&run);
}

TEST(nccl_tests_two_nodes_current_format)
{
    struct nct_run run;
    if (load(th_shared_calibration(NCT "gcp-a3mega-h100-2node-16gpu-all_reduce.txt"), &run))
        return;
    CHECK_EQ_INT(run.ranks, 16);
    CHECK_EQ_INT(run.nodes, 2);
    CHECK_STREQ(run.device, "NVIDIA H100 80GB HBM3");
    CHECK_EQ_INT(run.n_rows, 31);
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    const struct coll_fit *big = fit_large(&run, fits, &n);
    if (big) /* busbw column: 213-339 GB/s from 256 MiB, still rising */
        CHECK(big->busbw_gbps > 250 && big->busbw_gbps < 345);
    calib_nct_run_release(&run);
}

TEST(nccl_tests_sendrecv_fixture_recovers_its_parameters)
{
    /* the fixture's times are 8 us + S / 24 GB/s (in-place 1% slower),
     * rounded as nccl-tests prints them */
    struct nct_run run;
    if (load("tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt", &run))
        return;
    CHECK_EQ_INT(run.kind, MODEL_COLL_SENDRECV);
    CHECK_EQ_INT(run.ranks, 2);
    CHECK_EQ_INT(run.nodes, 2);
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    const struct coll_fit *big = fit_large(&run, fits, &n);
    if (big)
        CHECK_NEAR(big->busbw_gbps, 24 / 1.005, 0.3);
    CHECK_NEAR(fits[0].alpha_us, 8.04, 0.2);
    CHECK_NEAR(fits[0].busbw_gbps, 24 / 1.005, 1.5);
    CHECK(fits[0].rms_err_pct < 1);
    calib_nct_run_release(&run);
}

TEST(nccl_tests_bad_input)
{
    struct nct_run run;
    struct sc_error err;
    const char *bad = "#       size   count  type  time algbw busbw wrong\n"
                      "        1024     256  float  8.0  0.13  0.13  0\n"
                      "        2048     512  float  x.0  0.13  0.13  0\n";
    CHECK_EQ_INT(calib_nct_parse(bad, strlen(bad), "sendrecv", &run, &err), SC_EPARSE);
    CHECK_EQ_INT(err.offset, (int64_t)(strstr(bad, "        2048") - bad));
    CHECK_EQ_INT(calib_nct_parse("", 0, NULL, &run, &err), SC_EPARSE);
    CHECK_CONTAINS(err.msg, "no nccl-tests result rows");
    const char *log = "NCCL INFO hello\n\x01\x02 garbage\n";
    CHECK_EQ_INT(calib_nct_parse(log, strlen(log), NULL, &run, &err), SC_EPARSE);
    /* rows but no kind and no ranks: the fit says what to give */
    const char *rows = "  1024  256  float  8.0  0.13  0.13  0  8.0  0.13  0.13  0\n";
    CHECK_EQ_INT(calib_nct_parse(rows, strlen(rows), "results.txt", &run, &err), SC_OK);
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n;
    CHECK_EQ_INT(calib_coll_fit_run(&run, fits, &n, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "--kind");
    run.kind = MODEL_COLL_BROADCAST;
    CHECK_EQ_INT(calib_coll_fit_run(&run, fits, &n, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "--ranks");
    calib_nct_run_release(&run);
}

static struct coll_params hand_params(void)
{
    struct coll_params p = {.base_us = 3, .nvls_gain = 1.5};
    p.intra.busbw_gbps = 100;
    p.intra.hop_us = 1;
    p.inter.busbw_gbps = 20;
    p.inter.hop_us = 5;
    return p;
}

TEST(collective_model_by_hand)
{
    struct coll_params p = hand_params();
    struct coll_estimate e;
    struct sc_error err;
    /* all-reduce of 1 GB in one domain of 8: 3 + 14 x 1 us, 1.75 x 1e9 / 100 GB/s */
    struct coll_group one = {8, 8};
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &one, 1e9, &e, &err), SC_OK);
    CHECK_NEAR(e.alpha_us, 17, 1e-9);
    CHECK_NEAR(e.transfer_us, 17500, 1e-6);
    CHECK_EQ_INT(e.algo, COLL_ALGO_RING);
    /* 2 domains of 8: intra 1.75/100 against inter 2(1/2)/8/20 = 1/160: NVLink bounds;
     * latency 3 + 14 x 1 + 2 x 5 */
    struct coll_group two = {16, 8};
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &two, 1e9, &e, &err), SC_OK);
    CHECK_NEAR(e.alpha_us, 27, 1e-9);
    CHECK_NEAR(e.transfer_us, 17500, 1e-6);
    /* one rank per domain, 4 domains: the network carries 2 x 3/4 of S */
    struct coll_group flat = {4, 1};
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLGATHER, &flat, 1e9, &e, &err), SC_OK);
    CHECK_NEAR(e.alpha_us, 3 + 3 * 5, 1e-9);
    CHECK_NEAR(e.transfer_us, 0.75e9 / 20 * 1e-3, 1e-6);
    /* 1024 domains: the tree's 2 log2(1024) = 20 steps beat the ring's 2046 */
    struct coll_group big = {8192, 8};
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &big, 1024, &e, &err), SC_OK);
    CHECK_EQ_INT(e.algo, COLL_ALGO_TREE);
    CHECK_NEAR(e.alpha_us, 3 + 14 + 20 * 5, 1e-9);
    /* all-gather has no tree: its latency grows with every ring step */
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLGATHER, &big, 1024, &e, &err), SC_OK);
    CHECK_NEAR(e.alpha_us, 3 + 7 + 1023 * 5, 1e-9);
    /* NVLS: 2 steps in the domain and its busbw gain */
    p.nvls = 1;
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &one, 1e9, &e, &err), SC_OK);
    CHECK_EQ_INT(e.algo, COLL_ALGO_NVLS);
    CHECK_NEAR(e.alpha_us, 5, 1e-9);
    CHECK_NEAR(e.transfer_us, 17500 / 1.5, 1e-6);
    /* send/recv across domains: one network step, S at 20 GB/s */
    struct coll_group pair = {2, 1};
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_SENDRECV, &pair, 2e6, &e, &err), SC_OK);
    CHECK_NEAR(e.time_us, 3 + 5 + 100, 1e-9);
    /* bad input */
    struct coll_group bad = {4, 8};
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &bad, 1, &e, &err), SC_EINVAL);
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_BARRIER, &one, 1, &e, &err), SC_EINVAL);
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &one, NAN, &e, &err), SC_EINVAL);
}

TEST(collective_model_extrapolates_from_a_fit)
{
    /* calibrated on 8 ranks of one node, the model gives the file's own
     * large-message time back and grows the latency with the ring's steps */
    struct nct_run run;
    if (load(th_shared_calibration(NCT "superbench-a100-sxm4-40gb-1node-8gpu-all_reduce-oldfmt.txt"), &run))
        return;
    struct coll_measurement m = {.kind = run.kind, .ranks = run.ranks, .nodes = 1};
    struct sc_error err;
    snprintf(m.source, sizeof m.source, "superbench");
    CHECK_EQ_INT(calib_coll_fit_run(&run, m.fits, &m.n_fits, &err), SC_OK);
    struct coll_params p = hand_params();
    char report[1024] = "";
    cost_coll_params_apply(&p, &m, 1, report, sizeof report);
    CHECK_CONTAINS(report, "intra busbw");
    CHECK_CONTAINS(report, "intra hop");
    struct coll_group g8 = {8, 8}, g4 = {4, 4};
    struct coll_estimate e8, e4;
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g8, 8589934592.0, &e8, &err), SC_OK);
    CHECK(fabs(e8.time_us / 63896 - 1) < 0.05);
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g8, 8, &e8, &err), SC_OK);
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g4, 8, &e4, &err), SC_OK);
    CHECK(fabs(e8.time_us / 34.7 - 1) < 0.15);
    CHECK(e4.alpha_us < e8.alpha_us);
    calib_nct_run_release(&run);
}

/* mean and largest |predicted / measured - 1| of a run under p */
static void run_error(const struct coll_params *p, const struct nct_run *run, double *mean, double *max)
{
    struct coll_group g = {run->ranks, run->ranks};
    struct sc_error err;
    size_t n = 0;
    *mean = *max = 0;
    for (size_t i = 0; i < run->n_rows; i++)
        for (int k = 0; k < 2; k++) {
            struct coll_estimate e;
            if (!(run->rows[i].time_us[k] > 0) || !(run->rows[i].bytes > 0))
                continue;
            CHECK_EQ_INT(cost_coll_estimate(p, run->kind, &g, run->rows[i].bytes, &e, &err), SC_OK);
            double a = fabs(e.time_us / run->rows[i].time_us[k] - 1);
            *mean += a;
            *max = fmax(*max, a);
            n++;
        }
    *mean /= (double)(n ? n : 1);
}

/* The six one-node superbench outputs of ../shared/calibration, read into
 * runs[] and fitted into m[] (one domain; the source is the kind's name).
 * -1, nothing held, when one cannot be read. */
#define SUPERBENCH_FILES 6
static int load_superbench(struct nct_run runs[SUPERBENCH_FILES], struct coll_measurement m[SUPERBENCH_FILES])
{
    static const char *const kinds[SUPERBENCH_FILES] = {"all_reduce", "all_gather", "reduce_scatter",
                                                        "alltoall",   "broadcast",  "reduce"};
    struct sc_error err;
    char path[256];
    memset(m, 0, SUPERBENCH_FILES * sizeof *m);
    for (int i = 0; i < SUPERBENCH_FILES; i++) {
        snprintf(path, sizeof path, NCT "superbench-a100-sxm4-40gb-1node-8gpu-%s-oldfmt.txt", kinds[i]);
        if (load(th_shared_calibration(path), &runs[i])) {
            while (i-- > 0)
                calib_nct_run_release(&runs[i]);
            return -1;
        }
        m[i].kind = runs[i].kind;
        m[i].ranks = runs[i].ranks;
        m[i].nodes = 1;
        snprintf(m[i].source, sizeof m[i].source, "%s", kinds[i]);
        CHECK_EQ_INT(calib_coll_fit_run(&runs[i], m[i].fits, &m[i].n_fits, &err), SC_OK);
    }
    return 0;
}

TEST(collective_lines_give_each_calibration_file_back)
{
    /* the six one-node superbench outputs: each kind's lines (one per size
     * range) give its own file back where the tiers' two figures cannot,
     * grow with the size and with the group, and leave groups that span
     * domains to the tiers */
    enum { N = SUPERBENCH_FILES };
    struct nct_run runs[N];
    struct coll_measurement m[N];
    struct sc_error err;
    if (load_superbench(runs, m))
        return;
    struct coll_params p, tiers;
    char report[8192] = "";
    cost_coll_params_from_hw(cost_hw_profile_find("a100-sxm4-40gb"), &p);
    cost_coll_params_apply(&p, m, N, report, sizeof report);
    CHECK_CONTAINS(report, "alltoall in the NVLink domain, from alltoall (8 ranks): from 32 B hop");
    tiers = p;
    memset(tiers.lines, 0, sizeof tiers.lines);
    for (int i = 0; i < N; i++) {
        double mean, max, tier_mean, tier_max;
        CHECK_EQ_INT(p.lines[runs[i].kind].n, COLL_FIT_RANGES);
        run_error(&p, &runs[i], &mean, &max);
        run_error(&tiers, &runs[i], &tier_mean, &tier_max);
        if (mean > 0.03 || max > 0.25 || tier_mean < 0.10)
            fprintf(stderr, "%s: lines mean %.3f max %.3f, tiers mean %.3f\n", m[i].source, mean, max, tier_mean);
        CHECK(mean <= 0.03);     /* 1.3-2.0% */
        CHECK(max <= 0.25);      /* 4-19%, where a range holds two protocols */
        CHECK(tier_mean >= 0.10); /* 11-55% */
    }
    /* every kind, every size from 1 B to 8 GiB: the time grows with the
     * size and with the group */
    for (int i = 0; i < N; i++) {
        double before[3] = {0, 0, 0};
        for (int b = 0; b <= 33; b++) {
            double t[3];
            for (int j = 0; j < 3; j++) {
                struct coll_group g = {2 << j, 2 << j};
                struct coll_estimate e;
                CHECK_EQ_INT(cost_coll_estimate(&p, runs[i].kind, &g, ldexp(1, b), &e, &err), SC_OK);
                t[j] = e.time_us;
                CHECK(t[j] >= before[j]);
                before[j] = t[j];
            }
            CHECK(t[0] <= t[1] && t[1] <= t[2]);
        }
    }
    /* four ranks by hand: the largest range's line over a 4-ring's steps
     * and bytes */
    const struct coll_line *big = &p.lines[MODEL_COLL_ALLREDUCE].v[COLL_FIT_RANGES - 1];
    struct coll_group g4 = {4, 4}, g16 = {16, 8};
    struct coll_estimate e, t;
    double S = 33554432;
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g4, S, &e, &err), SC_OK);
    CHECK_NEAR(e.time_us, p.base_us + 6 * big->hop_us + S * 1.5 / big->busbw_gbps * 1e-3, 1e-9);
    CHECK(big->from_bytes >= 16777216 && big->hop_us > 0);
    /* across two domains the tiers price it, lines or not */
    CHECK_EQ_INT(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g16, S, &e, &err), SC_OK);
    CHECK_EQ_INT(cost_coll_estimate(&tiers, MODEL_COLL_ALLREDUCE, &g16, S, &t, &err), SC_OK);
    CHECK_NEAR(e.time_us, t.time_us, 0);
    for (int i = 0; i < N; i++)
        calib_nct_run_release(&runs[i]);
}

TEST(a100_profiles_carry_the_superbench_lines)
{
    /* the A100 profiles' collective_lines are what `calibrate nccl-tests`
     * fits on the six superbench files, not figures typed in; a spec that
     * states its own NVLink bandwidth prices by the tiers */
    enum { N = SUPERBENCH_FILES };
    struct nct_run runs[N];
    struct coll_measurement m[N];
    if (load_superbench(runs, m))
        return;
    for (int i = 0; i < N; i++)
        calib_nct_run_release(&runs[i]);
    static const char *const gpus[] = {"a100-sxm4-40gb", "a100-sxm4-80gb"};
    for (size_t g = 0; g < 2; g++) {
        const struct hw_profile *hw = cost_hw_profile_find(gpus[g]);
        struct coll_params fitted;
        CHECK(hw != NULL);
        if (!hw)
            continue;
        cost_coll_params_from_hw(hw, &fitted);
        memset(fitted.lines, 0, sizeof fitted.lines);
        cost_coll_params_apply(&fitted, m, N, NULL, 0);
        for (int k = 0; k < MODEL_COLL_OP_COUNT; k++) {
            const struct coll_lines *want = &fitted.lines[k], *got = &hw->coll_lines[k];
            CHECK_EQ_INT(got->n, want->n);
            for (int i = 0; i < got->n && i < want->n; i++) {
                CHECK_NEAR(got->v[i].from_bytes, want->v[i].from_bytes, 0);
                CHECK_NEAR(got->v[i].to_bytes, want->v[i].to_bytes, 0);
                CHECK_NEAR(got->v[i].hop_us / want->v[i].hop_us, 1, 1e-5);
                CHECK_NEAR(got->v[i].busbw_gbps / want->v[i].busbw_gbps, 1, 1e-5);
            }
        }
        struct est_spec spec;
        struct est_costs c;
        memset(&spec, 0, sizeof spec);
        calib_costs_cited(hw, &spec, &c);
        CHECK_EQ_INT(c.coll.lines[MODEL_COLL_ALLREDUCE].n, COLL_FIT_RANGES);
        spec.cluster.intra_node_gbps = 250;
        calib_costs_cited(hw, &spec, &c);
        CHECK_EQ_INT(c.coll.lines[MODEL_COLL_ALLREDUCE].n, 0);
    }
    /* a GPU no nccl-tests run measured keeps the tiers alone */
    struct coll_params h;
    cost_coll_params_from_hw(cost_hw_profile_find("h100-sxm"), &h);
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++)
        CHECK_EQ_INT(h.lines[k].n, 0);
}

TEST(cluster_profile_lines_round_trip_and_errors)
{
    struct cluster_profile w, r;
    struct sc_error err;
    memset(&w, 0, sizeof w);
    w.coll = hand_params();
    w.coll.lines[MODEL_COLL_ALLGATHER] = (struct coll_lines){
        2, {{32, 32768, 4.5, 88}, {65536, 8589934592.0, 15, 221}}};
    char *text = calib_cluster_profile_json(&w, NULL, 0);
    CHECK(text != NULL);
    if (!text)
        return;
    CHECK_CONTAINS(text, "\"lines\": {\n      \"all_gather\": [\n        {");
    memset(&r, 0, sizeof r);
    r.coll = hand_params();
    CHECK_EQ_INT(calib_cluster_profile_parse(text, strlen(text), &r, &err), SC_OK);
    CHECK(memcmp(&r.coll.lines, &w.coll.lines, sizeof r.coll.lines) == 0);
    free(text);
    /* a document without lines leaves a kind to the tiers */
    const char *plain = "{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{}}";
    memset(&r, 0, sizeof r);
    r.coll = hand_params();
    CHECK_EQ_INT(calib_cluster_profile_parse(plain, strlen(plain), &r, &err), SC_OK);
    CHECK_EQ_INT(r.coll.lines[MODEL_COLL_ALLGATHER].n, 0);
#define DOC(lines) "{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{\"lines\":" lines "}}"
#define LINE(from, to, hop, bw) "{\"from_bytes\":" from ",\"to_bytes\":" to ",\"hop_us\":" hop ",\"busbw_gbps\":" bw "}"
    const char *bad[][2] = {
        {DOC("[1]"), "collective.lines: must be an object"},
        {DOC("{\"all_scatter\":[" LINE("1", "2", "1", "1") "]}"), "collective.lines.all_scatter: unknown key"},
        {DOC("{\"all_gather\":[]}"), "collective.lines.all_gather: must hold 1 to 4 items"},
        {DOC("{\"all_gather\":[" LINE("1", "2", "1", "1") "," LINE("3", "4", "1", "1") "," LINE("5", "6", "1", "1") ","
             LINE("7", "8", "1", "1") "," LINE("9", "10", "1", "1") "]}"), "must hold 1 to 4 items"},
        {DOC("{\"all_gather\":[{\"from_bytes\":1,\"hop_us\":1,\"busbw_gbps\":1}]}"),
         "collective.lines.all_gather[0].to_bytes: missing (it is required)"},
        {DOC("{\"all_gather\":[" LINE("1", "2", "-1", "1") "]}"), "collective.lines.all_gather[0].hop_us: -1 is out of range"},
        {DOC("{\"all_gather\":[" LINE("1", "2", "1", "0") "]}"), "collective.lines.all_gather[0].busbw_gbps: 0 is out of range (1e-06 to 100000)"},
        {DOC("{\"all_gather\":[" LINE("1", "100", "1", "1") "," LINE("50", "200", "1", "1") "]}"),
         "all_gather line 2"},
        {DOC("{\"reduce\":[" LINE("10", "2", "1", "1") "]}"), "reduce line 1"},
    };
#undef LINE
#undef DOC
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cluster_profile before = r;
        CHECK_EQ_INT(calib_cluster_profile_parse(bad[i][0], strlen(bad[i][0]), &r, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i][1]);
        CHECK(memcmp(&before, &r, sizeof r) == 0); /* nothing half-applied */
    }
}

TEST(cluster_profile_round_trip_and_errors)
{
    struct cluster_profile w, r;
    struct coll_measurement m = {.kind = MODEL_COLL_SENDRECV, .ranks = 2, .nodes = 2, .inter = 1, .n_fits = 1};
    struct sc_error err;
    memset(&w, 0, sizeof w);
    snprintf(w.gpu, sizeof w.gpu, "h100-sxm");
    snprintf(w.source, sizeof w.source, "nccl-tests");
    w.coll = hand_params();
    w.coll.sharp = 1;
    cost_kernel_params_default(&w.kernel);
    w.kernel.kernel_fixed_us = 4.5;
    w.has_kernel = 1;
    snprintf(m.source, sizeof m.source, "f.txt");
    m.fits[0].busbw_gbps = 24;
    m.fits[0].points = 4;
    char *text = calib_cluster_profile_json(&w, &m, 1);
    REQUIRE(text != NULL);
    memset(&r, 0, sizeof r);
    r.coll = hand_params();
    r.coll.intra.busbw_gbps = 1; /* overwritten by the profile */
    cost_kernel_params_default(&r.kernel);
    CHECK_EQ_INT(calib_cluster_profile_parse(text, strlen(text), &r, &err), SC_OK);
    CHECK_STREQ(r.gpu, "h100-sxm");
    CHECK_STREQ(r.source, "nccl-tests");
    CHECK_NEAR(r.coll.intra.busbw_gbps, 100, 0);
    CHECK_NEAR(r.coll.inter.hop_us, 5, 0);
    CHECK_EQ_INT(r.coll.sharp, 1);
    CHECK_EQ_INT(r.has_kernel, 1);
    CHECK_NEAR(r.kernel.kernel_fixed_us, 4.5, 0);
    CHECK_NEAR(r.kernel.hbm_fraction, 0.86, 0);
    CHECK_CONTAINS(text, "\"alpha_us\": null"); /* not fitted: said, not invented */
    free(text);
    const char *bad[][2] = {
        {"{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{\"intra\":{\"busbw_gbps\":-3}}}",
         "collective.intra.busbw_gbps"},
        {"{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{\"intra\":{\"busbw_gbps\":0}}}",
         "bandwidths must be 1e-06 to 100000 GB/s"},
        /* physical ranges: a subnormal bandwidth, a latency of centuries */
        {"{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{\"intra\":{\"busbw_gbps\":1e-320}}}",
         "bandwidths must be 1e-06 to 100000 GB/s"},
        {"{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{\"base_us\":1e300}}",
         "latencies 0 to 1e+06 us"},
        {"{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"kernel\":{\"hbm_fraction\":7}}", "hbm_fraction"},
        {"{\"format\":\"stepcast-cluster-profile\",\"version\":2}", "version"},
        {"{}", "format"},
        {"[1]", "a cluster profile must be a JSON object"},
        {"{", "cluster profile"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cluster_profile before = r;
        CHECK_EQ_INT(calib_cluster_profile_parse(bad[i][0], strlen(bad[i][0]), &r, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i][1]);
        CHECK(memcmp(&before, &r, sizeof r) == 0); /* nothing half-applied */
    }
}

TEST(calibrate_nccl_tests_command)
{
    /* the real program: fixture in, profile out, and the collective model
     * loads what it wrote */
    const char *out = th_write_file("profile.json", "", 0);
    char *argv[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--gpu", "h100-sxm",
                    "--out", (char *)out, "tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt", NULL};
    char *so = th_run_expect(argv, 0, "sendrecv, 2 ranks, 2 nodes", NULL);
    CHECK_CONTAINS(so, "inter busbw 23.");
    CHECK_CONTAINS(so, "model with h100-sxm's defaults");
    CHECK_CONTAINS(so, "calibrated model on sendrecv-2node-synthetic.txt (sendrecv, 2 ranks): median error");
    free(so);
    size_t n;
    char *doc = th_read_file(out, &n);
    CHECK(doc != NULL);
    if (doc) {
        struct cluster_profile prof;
        struct sc_error err;
        memset(&prof, 0, sizeof prof);
        cost_coll_params_from_hw(cost_hw_profile_find("h100-sxm"), &prof.coll);
        CHECK_EQ_INT(calib_cluster_profile_parse(doc, n, &prof, &err), SC_OK);
        CHECK_STREQ(prof.gpu, "h100-sxm");
        CHECK_EQ_INT(prof.has_kernel, 0);
        CHECK_NEAR(prof.coll.inter.busbw_gbps, 24 / 1.005, 0.5);
        CHECK_CONTAINS(doc, "\"kind\": \"sendrecv\"");
        free(doc);
    }
    /* no GPU named anywhere: exit 2, said */
    char *argv2[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--out", (char *)out,
                     "--kind", "all_reduce", "tests/fuzz/corpus/nccl_tests/tagged.txt", NULL};
    free(th_run_expect(argv2, 2, NULL, "--gpu"));
    /* a malformed row: the file and the byte */
    char *argv3[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--gpu", "h100-sxm", "--kind",
                     "all_reduce", "--out", (char *)out, "tests/fuzz/corpus/nccl_tests/malformed.txt", NULL};
    free(th_run_expect(argv3, 2, NULL, "malformed.txt': byte 0: malformed result row"));
    char *argv4[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "x.txt", NULL};
    free(th_run_expect(argv4, 2, NULL, "--out"));
    char *argv5[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--gpu", "nope", "--out",
                     (char *)out, "tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt", NULL};
    free(th_run_expect(argv5, 2, NULL, "no hardware profile 'nope'"));
}
