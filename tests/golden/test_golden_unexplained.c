/* tests/golden/test_golden_unexplained.c: waits the trace holds but does
 * not explain (graph.h, `unexplained` edges; replay.h, keep_unexplained).
 * A gentrace job with a wait of known size injected, then every shared
 * trace: what the waits cost a step bounds the replay's error, and kept
 * they give back the measured steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define DELAY_NS 3000000

/* Open job once into *m and replay it (keep: keep the waits; f != 1: GPU work and
 * transfers at f); NULL when it failed. */
static struct model_replay *replay(const struct model_job *job, struct est_traced_model **m, int keep, double f)
{
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err = {0};
    model_replay_opts_default(&o);
    o.keep_unexplained = keep;
    if (f != 1.0) {
        char a[64], b[64];
        snprintf(a, sizeof a, "gpu=%g", f);
        snprintf(b, sizeof b, "comm=%g", f);
        CHECK(model_replay_parse_scale(a, &o, &err) == SC_OK);
        CHECK(model_replay_parse_scale(b, &o, &err) == SC_OK);
    }
    /* opened as stepcast replay opens it: kept collectives split */
    if ((!*m && est_model_of_job(job, NULL, m, &err)) || est_model_replay(*m, &o, &r, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    CHECK_EQ_INT(r->forced, 0);
    return r;
}

static struct model_job *delayed_job(const char *gpu_scale)
{
    char delay[32];
    snprintf(delay, sizeof delay, "%d", DELAY_NS);
    const char *args[] = {"--steps", "1", "--gpu-delay", delay, "--gpu-scale", gpu_scale, NULL};
    return th_gentrace_job(2, args);
}

/* The first forward kernel of the step waits DELAY_NS that nothing in the
 * trace explains: the step costs that much more than a replay gives, the
 * flag gives the measured step back, and with the flag GPU work at x0.5
 * gives the step the generator wrote for GPU work at x0.5 with the same
 * wait. */
TEST(unexplained_injected_wait_known_size)
{
    struct model_job *job = delayed_job("1"), *half = delayed_job("0.5");
    struct est_traced_model *m = NULL, *m_half = NULL;
    if (!job || !half)
        goto out;
    struct model_replay *plain = replay(job, &m, 0, 1.0), *kept = replay(job, &m, 1, 1.0),
                        *kept_half = replay(job, &m, 1, 0.5), *measured_half = replay(half, &m_half, 0, 1.0);
    CHECK(plain && kept && kept_half && measured_half);
    if (!plain || !kept || !kept_half || !measured_half)
        goto free_replays;
    CHECK(est_model_graph(m)->stats.edges_by_kind[MODEL_EDGE_UNEXPLAINED] >= 2); /* one per rank */
    for (size_t s = 0; s < plain->n_steps; s++) {
        const struct model_replay_step *p = &plain->steps[s], *k = &kept->steps[s], *kh = &kept_half->steps[s],
                                       *mh = &measured_half->steps[s];
        CHECK_NEAR((double)p->unexplained_ns, DELAY_NS, 0.01 * DELAY_NS);
        CHECK_NEAR((double)(p->measured_ns - p->replayed_ns), DELAY_NS, 0.01 * DELAY_NS);
        CHECK(fabs(k->error_pct) <= 1.0);
        CHECK(k->breakdown.unexplained >= DELAY_NS - 1000);
        CHECK_EQ_INT(p->breakdown.unexplained, 0);
        /* the step shrinks by what the generator's x0.5 run says */
        CHECK(fabs((double)(kh->replayed_ns - mh->measured_ns)) <= 0.02 * (double)mh->measured_ns);
    }
free_replays:
    model_replay_free(plain);
    model_replay_free(kept);
    model_replay_free(kept_half);
    model_replay_free(measured_half);
out:
    est_model_close(m);
    est_model_close(m_half);
    model_job_free(job);
    model_job_free(half);
}

/* The same job without the wait: nothing is unexplained. */
TEST(unexplained_none_without_wait)
{
    const char *args[] = {"--steps", "2", NULL};
    struct model_job *job = th_gentrace_job(2, args);
    struct est_traced_model *m = NULL;
    struct model_replay *r = job ? replay(job, &m, 0, 1.0) : NULL;
    for (size_t s = 0; r && s < r->n_steps; s++)
        CHECK(r->steps[s].unexplained_ns <= r->steps[s].measured_ns / 1000);
    model_replay_free(r);
    est_model_close(m);
    model_job_free(job);
}

/* On every shared trace: |replayed - measured| <= unexplained_ms + 5% of
 * the step on every step; with the flag, mean |error| <= 2% and max <= 5%;
 * unexplained_ms under 1% of every step where the replay is within 2%
 * without the flag. */
TEST(unexplained_invariants_every_shared_trace)
{
    for (size_t i = 0; i < th_n_traces; i++) {
        struct model_job *job = NULL;
        struct est_traced_model *m = NULL;
        if (th_load_trace(&th_traces[i], &job))
            continue;
        struct model_replay *plain = replay(job, &m, 0, 1.0), *kept = plain ? replay(job, &m, 1, 1.0) : NULL;
        if (plain && kept) {
            for (size_t s = 0; s < plain->n_steps; s++) {
                const struct model_replay_step *p = &plain->steps[s];
                if (p->partial || p->measured_ns <= 0)
                    continue;
                double gap = fabs((double)(p->replayed_ns - p->measured_ns)),
                       bound = (double)p->unexplained_ns + 0.05 * (double)p->measured_ns;
                if (gap > bound)
                    printf("     %s step %zu: |replayed - measured| %.3f ms > unexplained %.3f ms + 5%%\n",
                           th_traces[i].name, s, gap / 1e6, p->unexplained_ns / 1e6);
                CHECK(gap <= bound);
                if (plain->max_abs_error_pct <= 2.0)
                    CHECK((double)p->unexplained_ns < 0.01 * (double)p->measured_ns);
            }
            if (kept->mean_abs_error_pct > 2.0 || kept->max_abs_error_pct > 5.0)
                printf("     %s with the waits kept: mean %.2f%%, max %.2f%%\n", th_traces[i].name,
                       kept->mean_abs_error_pct, kept->max_abs_error_pct);
            CHECK(kept->mean_abs_error_pct <= 2.0);
            CHECK(kept->max_abs_error_pct <= 5.0);
        }
        model_replay_free(plain);
        model_replay_free(kept);
        est_model_close(m);
        model_job_free(job);
    }
}

/* With every kind of work at x0.5 (gpu, comm, cpu together) a step takes
 * 0.47-0.55 of its time: a physical identity that any wait copied from the
 * trace breaks (collectives kept for untraced peers split as stepcast
 * replay splits them: their transfer scales with comm, their wait with the
 * factors given for every rank).
 * Left out: jobs whose ranks begin their steps apart by more
 * than 1% of a step (each rank's step start is an input of the replay, so
 * a rank that waits in a collective for a later one keeps that offset). */
TEST(unexplained_everything_at_half_halves_the_step)
{
    for (size_t i = 0; i < th_n_traces; i++) {
        struct model_job *job = NULL;
        struct est_traced_model *m = NULL;
        struct model_replay_opts o;
        struct model_replay *plain = NULL, *half = NULL;
        struct sc_error err;
        if (th_load_trace(&th_traces[i], &job))
            continue;
        model_replay_opts_default(&o);
        CHECK(model_replay_parse_scale("gpu=0.5", &o, &err) == SC_OK &&
              model_replay_parse_scale("comm=0.5", &o, &err) == SC_OK &&
              model_replay_parse_scale("cpu=0.5", &o, &err) == SC_OK);
        if ((plain = replay(job, &m, 0, 1.0)) && est_model_replay(m, &o, &half, &err) == SC_OK) {
            const struct model_graph *g = est_model_graph(m);
            int64_t lo = INT64_MAX, hi = INT64_MIN, step = 0;
            for (size_t r = 0; r < g->n_res; r++) {
                lo = g->res[r].origin < lo ? g->res[r].origin : lo;
                hi = g->res[r].origin > hi ? g->res[r].origin : hi;
            }
            for (size_t s = 0; s < plain->n_steps; s++)
                step = plain->steps[s].replayed_ns > step ? plain->steps[s].replayed_ns : step;
            int apart = hi - lo > step / 100;
            if (apart)
                printf("     %s: ranks begin %.3f ms apart, left out\n", th_traces[i].name, (hi - lo) / 1e6);
            for (size_t s = 0; s < plain->n_steps && !apart; s++) {
                double x = (double)half->steps[s].replayed_ns / (double)plain->steps[s].replayed_ns;
                if (plain->steps[s].partial)
                    continue;
                if (x < 0.47 || x > 0.55)
                    printf("     %s step %zu: x%.3f at half\n", th_traces[i].name, s, x);
                CHECK(x >= 0.47 && x <= 0.55);
            }
        }
        model_replay_free(plain);
        model_replay_free(half);
        est_model_close(m);
        model_job_free(job);
    }
}

/* negative_queue's GPU waits tens of milliseconds for work the trace does
 * not hold: the replay is far short, says so per step, and with the waits
 * kept comes within 3%. */
TEST(unexplained_negative_queue)
{
    struct model_job *job = NULL;
    struct est_traced_model *m = NULL;
    if (th_load_trace(th_find_trace("negative_queue"), &job))
        return;
    struct model_replay *plain = replay(job, &m, 0, 1.0), *kept = plain ? replay(job, &m, 1, 1.0) : NULL;
    if (plain && kept) {
        CHECK(plain->mean_abs_error_pct > 20.0);
        for (size_t s = 0; s < plain->n_steps; s++)
            CHECK(plain->steps[s].unexplained_ns > plain->steps[s].measured_ns / 5);
        CHECK(kept->mean_abs_error_pct <= 3.0);
        CHECK(kept->max_abs_error_pct <= 3.0);
    }
    model_replay_free(plain);
    model_replay_free(kept);
    est_model_close(m);
    model_job_free(job);
}

/* `stepcast replay`'s table says what unexplained time means and what to
 * do when it is more than 5% of the steps: on negative_queue, not with
 * the waits kept, not on a trace that explains its steps (stepcast's own
 * profiler on PyTorch steps on an H100). */
TEST(unexplained_replay_table_says_what_it_means)
{
    const struct shared_trace *st = th_find_trace("negative_queue");
    struct model_job *job = NULL;
    if (!st || th_load_trace(st, &job)) /* says why when the shared traces are not here */
        return;
    model_job_free(job);
    char *cli = (char *)th_build_path("stepcast"), *path = (char *)th_shared_path(st->path);
    char *plain[] = {cli, "replay", path, NULL}, *keep[] = {cli, "replay", "--keep-unexplained", path, NULL},
         *clean[] = {cli, "replay", "data/calibration/torch-steps/h100-sxm-gpt-h1024-s1024-b8.stepcast.pt.trace.json.gz",
                     NULL};
    free(th_run_expect(plain, 0, "note: 58% of the measured steps is time the traces cannot explain", NULL));
    char *out = th_run_expect(keep, 0, "mean |error| 0.29%", NULL);
    CHECK(out && !strstr(out, "note:"));
    free(out);
    out = th_run_expect(clean, 0, "mean |error| 0.22%", NULL);
    CHECK(out && !strstr(out, "note:"));
    free(out);
}
