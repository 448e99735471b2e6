/* tests/golden/test_golden_invariants.c: physical invariants of the replay,
 * checked on every shared trace with steps and on random jobs written by
 * tests/tools/gentrace (up to 512 ranks): what holds whatever the trace,
 * so a model change that breaks one is wrong, not merely different.
 *
 * Work conservation (README, "Steps"): a rank's replayed steps together
 * last at least as long as each of its GPU streams is busy with the work
 * launched in them, at the durations the replay was asked for. */
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

static const double factors[] = {0.25, 0.5, 2, 10, 50};

/* Every GPU class at factor f, on the rank numbered rank_id (-1: all). */
static int gpu_factors(struct model_replay_opts *o, double f, int rank_id)
{
    static const int classes[] = {MODEL_TASK_KERNEL, MODEL_TASK_COPY, MODEL_TASK_SET, MODEL_TASK_COMM};
    struct sc_error err;
    model_replay_opts_default(o);
    o->critical_path = 0;
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; k++) {
        struct model_replay_factor fc = {.rank = rank_id, .classes = 1u << classes[k], .family = -1, .factor = f};
        if (model_replay_add_factor(o, &fc, &err))
            return -1;
    }
    return 0;
}

static int launched(const struct model_graph *g, uint32_t i)
{
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_LAUNCH)
            return 1;
    return 0;
}

/* Replay g with every GPU task at factor f (on rank index `only`, -1: all)
 * and check conservation per rank and stream; the number of violations. */
static size_t check_conserved(const char *what, const struct est_traced_model *m, double f, int only)
{
    const struct model_graph *g = est_model_graph(m);
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    size_t bad = 0;
    int64_t *dur = malloc((g->n_tasks + 1) * sizeof *dur), *gap = malloc((g->n_tasks + 1) * sizeof *gap);
    if (!dur || !gap || gpu_factors(&o, f, only < 0 ? -1 : g->ranks[only].id) || est_model_replay(m, &o, &r, &err) ||
        model_replay_durations(g, &o, dur, gap, &err)) {
        CHECK(!"replay failed");
        free(dur);
        free(gap);
        model_replay_free(r);
        return 1;
    }
    int64_t *sum = calloc(g->n_ranks, sizeof *sum), *busy = calloc(g->n_res, sizeof *busy);
    CHECK(sum && busy);
    for (size_t s = 0; s < r->n_steps; s++)
        sum[r->steps[s].rank] += r->steps[s].replayed_ns;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (!model_task_on_gpu(t->cls) || !launched(g, i))
            continue;
        busy[t->res] += dur[i]; /* the durations the replay was asked for */
    }
    free(dur);
    free(gap);
    for (size_t q = 0; q < g->n_res; q++) {
        const struct model_resource *res = &g->res[q];
        if (!res->gpu || sum[res->rank] >= busy[q])
            continue;
        if (bad++ < 3)
            printf("     %s x%g%s: rank %d's steps sum to %.3f ms, stream %lld busy %.3f ms\n", what, f,
                   only < 0 ? "" : " (one rank)", g->ranks[res->rank].id, sum[res->rank] / 1e6,
                   (long long)res->tid, busy[q] / 1e6);
    }
    CHECK_EQ_INT(r->forced, 0);
    free(sum);
    free(busy);
    model_replay_free(r);
    return bad;
}

/* Every factor, on all ranks and on the last rank alone. */
static void check_conservation(const char *what, const struct model_job *job)
{
    struct est_traced_model *m = NULL; /* opened as stepcast replay opens it: kept collectives split */
    struct sc_error err;
    if (est_model_of_job(job, NULL, &m, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s: %s", what, err.msg);
        return;
    }
    size_t bad = 0;
    for (size_t k = 0; k < sizeof factors / sizeof factors[0]; k++) {
        bad += check_conserved(what, m, factors[k], -1);
        bad += check_conserved(what, m, factors[k], (int)est_model_graph(m)->n_ranks - 1);
    }
    CHECK_EQ_INT(bad, 0);
    est_model_close(m);
}

TEST(invariant_work_conserved_every_shared_trace)
{
    for (size_t i = 0; i < th_n_traces; i++) {
        struct model_job *job = NULL;
        if (th_load_trace(&th_traces[i], &job))
            continue;
        check_conservation(th_traces[i].name, job);
        model_job_free(job);
    }
}

/* A gentrace job of one slow rank (rank 0 at `slow`x); NULL on failure. */
static struct model_job *gentrace_job(int ranks, int steps, int layers, unsigned seed, double slow)
{
    char a_steps[16], a_layers[16], a_seed[16], a_slow[32];
    snprintf(a_steps, sizeof a_steps, "%d", steps);
    snprintf(a_layers, sizeof a_layers, "%d", layers);
    snprintf(a_seed, sizeof a_seed, "%u", seed);
    snprintf(a_slow, sizeof a_slow, "%g", slow);
    const char *args[] = {"--steps", a_steps, "--layers", a_layers, "--seed", a_seed,
                          "--slow-rank", "0", "--slow-factor", a_slow, NULL};
    return th_gentrace_job(ranks, args);
}

/* Random jobs (a fixed seed: the same ones every run), then one of 512
 * ranks. */
TEST(invariant_work_conserved_random_gentrace_jobs)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 6; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int ranks = 1 + (int)(x % 8), steps = 1 + (int)((x >> 8) % 3), layers = 1 + (int)((x >> 16) % 6);
        double slow = 1.0 + (double)((x >> 24) % 100) / 50.0;
        char what[64];
        snprintf(what, sizeof what, "gentrace %d ranks %d steps %d layers", ranks, steps, layers);
        struct model_job *job = gentrace_job(ranks, steps, layers, (unsigned)(x >> 32), slow);
        if (!job)
            return;
        check_conservation(what, job);
        model_job_free(job);
    }
    struct model_job *job = gentrace_job(512, 2, 2, 7, 1.5);
    if (job) {
        CHECK_EQ_INT(job->n_ranks, 512);
        check_conservation("gentrace 512 ranks", job);
        model_job_free(job);
    }
}
