/* tests/golden/test_golden_opportunities.c: opportunities
 * (model/opportunity.h) on gentrace jobs whose answer the generator knows
 * and on every shared trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/opportunity.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

static const struct model_opportunity *find(const struct model_opportunities *o, const char *change)
{
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->v[i].change, change) == 0)
            return &o->v[i];
    return NULL;
}

/* Sorted by saving, largest first; no saving above its Amdahl bound (2% of
 * the step for the scheduling's slack). */
static void check_ranked(const char *what, const struct model_opportunities *o)
{
    CHECK(o->n >= 5);
    for (size_t i = 0; i < o->n; i++) {
        if (i)
            CHECK(o->v[i - 1].saving_ns >= o->v[i].saving_ns);
        if (o->v[i].saving_ns > o->v[i].bound_ns + o->step_ns / 50)
            printf("     %s: %s saves %.3f ms, above its bound %.3f ms\n", what, o->v[i].change,
                   o->v[i].saving_ns / 1e6, o->v[i].bound_ns / 1e6);
        CHECK(o->v[i].saving_ns <= o->v[i].bound_ns + o->step_ns / 50);
    }
}

/* As `stepcast opportunities` finds them: the job opened through the
 * façade (estimator/model_open.h), its kept collectives split. */
static int find_all(const struct model_job *job, struct est_traced_model **m, struct model_opportunities *o)
{
    struct sc_error err;
    if (est_model_of_job(job, NULL, m, &err) || est_model_opportunities(*m, o, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    return 0;
}

/* The mean replayed step of g with the waits kept and `scale` (or none). */
static int64_t mean_step(const struct model_graph *g, const char *scale)
{
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    int64_t sum = 0, n = 0;
    model_replay_opts_default(&o);
    o.keep_unexplained = 1;
    if ((scale && model_replay_parse_scale(scale, &o, &err)) || model_replay_run(g, &o, &r, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return 0;
    }
    for (size_t s = 0; s < r->n_steps; s++)
        if (!r->steps[s].partial) {
            sum += r->steps[s].replayed_ns;
            n++;
        }
    model_replay_free(r);
    return n ? sum / n : 0;
}

/* A two-rank job with one slow rank: each saving is what the replays with
 * and without the change say, and removing the slow rank's excess
 * (stragglers) wins time back. */
TEST(opportunities_gentrace_slow_rank)
{
    const char *args[] = {"--steps", "2", "--slow-rank", "1", "--slow-factor", "1.5", NULL};
    struct model_job *job = th_gentrace_job(2, args);
    struct est_traced_model *m = NULL;
    struct model_opportunities o;
    if (!job || find_all(job, &m, &o))
        goto out;
    check_ranked("gentrace", &o);
    const struct model_opportunity *zero = find(&o, "comm=0"), *half = find(&o, "comm=0.5"),
                                   *strag = find(&o, "stragglers=median"), *gemm = find(&o, "family:gemm=0.5");
    CHECK(zero && half && strag && gemm && find(&o, "cpu=0.5") && find(&o, "launch=0") &&
          find(&o, "unexplained=0"));
    if (zero && half && strag && gemm) {
        CHECK(zero->saving_ns >= half->saving_ns);
        CHECK(llabs(zero->bound_ns - 2 * half->bound_ns) <= zero->bound_ns / 1000 + 1);
        CHECK(strag->saving_ns > 0);
        CHECK(gemm->saving_ns > 0 && gemm->saving_at_zero_ns >= gemm->saving_ns);
        const struct model_graph *g = est_model_graph(m);
        int64_t base = mean_step(g, NULL);
        CHECK_EQ_INT(o.step_ns, base);
        CHECK_EQ_INT(zero->saving_ns, base - mean_step(g, "comm=0"));
        CHECK_EQ_INT(gemm->saving_ns, base - mean_step(g, "family:gemm=0.5"));
    }
    model_opportunities_release(&o);
out:
    est_model_close(m);
    model_job_free(job);
}

/* On every shared trace: ranked, within the bounds; one rank: no
 * stragglers entry. */
TEST(opportunities_every_shared_trace)
{
    for (size_t i = 0; i < th_n_traces; i++) {
        struct model_job *job = NULL;
        struct est_traced_model *m = NULL;
        struct model_opportunities o;
        if (th_load_trace(&th_traces[i], &job))
            continue;
        if (find_all(job, &m, &o) == 0) {
            check_ranked(th_traces[i].name, &o);
            CHECK((find(&o, "stragglers=median") != NULL) == (est_model_graph(m)->n_ranks > 1));
            model_opportunities_release(&o);
        }
        est_model_close(m);
        model_job_free(job);
    }
}

/* The `launch` scale: launch calls and nothing else. */
TEST(opportunities_launch_scale_is_launch_calls_only)
{
    const char *args[] = {"--steps", "1", NULL};
    struct model_job *job = th_gentrace_job(1, args);
    struct model_graph *g = NULL;
    struct model_replay_opts o;
    struct sc_error err;
    if (!job || model_graph_build(job, NULL, &g, &err)) {
        model_job_free(job);
        CHECK(!"no graph");
        return;
    }
    model_replay_opts_default(&o);
    CHECK(model_replay_parse_scale("launch@0=0", &o, &err) == SC_OK);
    CHECK(model_replay_parse_scale("launch@x=0", &o, &err) == SC_EINVAL);
    int64_t *dur = malloc(g->n_tasks * sizeof *dur), *gap = malloc(g->n_tasks * sizeof *gap);
    size_t launches = 0;
    CHECK(dur && gap && model_replay_durations(g, &o, dur, gap, &err) == SC_OK);
    for (uint32_t i = 0; dur && gap && i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        int launch = t->cls == MODEL_TASK_CALL && t->sub == MODEL_CALL_LAUNCH;
        launches += launch;
        CHECK_EQ_INT(dur[i], launch ? 0 : t->dur);
        CHECK_EQ_INT(gap[i], t->gap);
    }
    CHECK(launches > 10);
    free(dur);
    free(gap);
    model_graph_free(g);
    model_job_free(job);
}
