/* tests/unit/test_fold.c: rank folding (model/graph.h, MODEL_FOLD_OVER).
 *
 * A generated data-parallel job whose ranks run at speeds up to 3% apart,
 * with one straggler 1.5x slower: folded (by force: it has fewer ranks
 * than the default threshold), its replay must equal the unfolded one
 * within 0.5% and the straggler must stand alone. Building while loading
 * and from a loaded job must fold alike whatever order the traces come
 * in; a job at or under the threshold is not folded. Opportunities on a
 * folded job count its ranks, not its representatives. A build while
 * loading hands over, still whole, the trace of each rank it keeps a
 * part of, and never one folded as it came. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/inspect_json.h"
#include "api/timeline_json.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/opportunity.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define RANKS 24
#define SLOW 5

static const char *const GEN_ARGS[] = {"--steps", "3", "--layers", "6", "--slow-rank", "5", "--slow-factor", "1.5",
                                       NULL};

static struct model_graph *build(const struct model_job *job, size_t fold_over)
{
    struct model_graph_opts o;
    struct model_graph *g = NULL;
    struct sc_error err;
    model_graph_opts_default(&o);
    o.fold_over = fold_over;
    if (model_graph_build(job, &o, &g, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    return g;
}

static struct model_replay *replay(const struct model_graph *g)
{
    struct model_replay_opts ro;
    struct model_replay *r = NULL;
    struct sc_error err;
    model_replay_opts_default(&ro);
    if (g && model_replay_run(g, &ro, &r, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    return r;
}

static int graph_has_rank(const struct model_graph *g, int id)
{
    for (size_t i = 0; i < g->n_ranks; i++)
        if (g->ranks[i].id == id)
            return 1;
    return 0;
}

/* How many ranks rank number id stands for besides itself. */
static size_t stands_for(const struct model_graph *g, int id)
{
    size_t n = 0;
    for (size_t k = 0; k < g->folding.n_folded; k++)
        n += g->ranks[g->folding.folded[k].rep].id == id;
    return n;
}

TEST(fold_replay_equals_the_unfolded_one_and_keeps_the_straggler_apart)
{
    struct model_job *job = th_gentrace_job(RANKS, GEN_ARGS);
    REQUIRE(job != NULL);
    struct model_graph *whole = build(job, SIZE_MAX), *folded = build(job, 0);
    struct model_replay *rw = replay(whole), *rf = replay(folded);
    REQUIRE(rw && rf);
    CHECK(!whole->folding.on && whole->n_ranks == RANKS);
    CHECK(folded->folding.on && folded->folding.ranks == RANKS);
    if (folded->n_ranks * 2 > RANKS)
        sc_check_fail(__FILE__, __LINE__, "%zu ranks folded into %zu", (size_t)RANKS, folded->n_ranks);
    CHECK(folded->n_tasks * 2 < whole->n_tasks);
    th_check_folded_replay(rw, rf, 0.5);
    /* the straggler stands alone; every rank is in the graph or folded once */
    int seen[RANKS] = {0};
    for (size_t i = 0; i < folded->n_ranks; i++)
        seen[folded->ranks[i].id]++;
    for (size_t k = 0; k < folded->folding.n_folded; k++)
        seen[folded->folding.folded[k].id]++;
    for (int r = 0; r < RANKS; r++)
        CHECK_EQ_INT(seen[r], 1);
    CHECK(graph_has_rank(folded, SLOW));
    CHECK_EQ_INT(stands_for(folded, SLOW), 0);
    /* a collective's group is the whole job */
    for (size_t i = 0; i < folded->n_groups; i++)
        CHECK_EQ_INT(folded->groups[i].size, RANKS);
    CHECK_EQ_INT(folded->stats.collectives_kept, 0);
    CHECK_EQ_INT(folded->stats.collectives_matched, whole->stats.collectives_matched);
    /* inspect lists every rank of each collective, folded or not */
    json_t *cw = api_collectives_json(whole), *cf = api_collectives_json(folded);
    CHECK(cw && cf && json_array_size(cw) == json_array_size(cf) && json_array_size(cw) > 0);
    for (size_t i = 0; cw && cf && i < json_array_size(cw) && i < json_array_size(cf); i++) {
        json_t *a = json_object_get(json_array_get(cw, i), "ranks"), *b = json_object_get(json_array_get(cf, i), "ranks");
        CHECK_EQ_INT(json_array_size(a), RANKS);
        CHECK(json_equal(a, b));
    }
    json_decref(cw);
    json_decref(cf);
    /* a representative's trace is its own (the timeline reads its events) */
    for (size_t i = 0; i < folded->n_ranks; i++)
        CHECK(model_graph_trace(folded, (uint16_t)i) == job->ranks[folded->ranks[i].id]);
    json_t *timeline = api_timeline_json(rf, SLOW);
    CHECK(timeline != NULL && json_array_size(json_object_get(timeline, "traceEvents")) > 0);
    json_decref(timeline);
    /* a folded rank cannot be scaled alone: the error names who stands for it */
    int gone = folded->folding.folded[0].id;
    char spec[32];
    struct model_replay_opts ro;
    struct model_replay *r = NULL;
    struct sc_error err;
    model_replay_opts_default(&ro);
    snprintf(spec, sizeof spec, "gpu@%d=2", gone);
    CHECK(model_replay_parse_scale(spec, &ro, &err) == SC_OK);
    CHECK(model_replay_run(folded, &ro, &r, &err) == SC_EINVAL && r == NULL);
    CHECK_CONTAINS(err.msg, "was folded into rank");
    model_replay_free(rw);
    model_replay_free(rf);
    model_graph_free(whole);
    model_graph_free(folded);
    model_job_free(job);
}

/* The same folding built while the traces load (in whatever order the
 * threads finish them) as from the loaded job, and none at or under the
 * threshold. */
TEST(fold_is_the_same_built_while_loading_and_off_under_the_threshold)
{
    char paths[RANKS][TH_PATH_MAX];
    const char *pv[RANKS];
    struct model_load_opts lo;
    struct model_job *whole = NULL, *shed = NULL, *small = NULL;
    struct model_graph *ga = NULL, *gb = NULL, *gs = NULL;
    struct model_graph_opts o;
    struct sc_error err;

    th_gentrace_paths(RANKS, GEN_ARGS, paths, pv);
    model_load_opts_default(&lo);
    REQUIRE(model_job_load(pv, RANKS, &lo, 0, &whole, &err) == SC_OK);
    ga = build(whole, RANKS - 1);
    model_graph_opts_default(&o);
    o.fold_over = RANKS - 1;
    struct model_graph_load gl = {.threads = 2};
    if (model_graph_build_paths(pv, RANKS, &gl, &o, &shed, &gb, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(ga && gb);
    CHECK(ga->folding.on && gb->folding.on);
    CHECK_EQ_INT(ga->n_ranks, gb->n_ranks);
    CHECK_EQ_INT(ga->n_tasks, gb->n_tasks);
    CHECK_EQ_INT(ga->folding.n_folded, gb->folding.n_folded);
    for (size_t i = 0; i < ga->n_ranks && i < gb->n_ranks; i++)
        CHECK_EQ_INT(ga->ranks[i].id, gb->ranks[i].id);
    for (size_t k = 0; k < ga->folding.n_folded && k < gb->folding.n_folded; k++) {
        CHECK_EQ_INT(ga->folding.folded[k].id, gb->folding.folded[k].id);
        CHECK_EQ_INT(ga->folding.folded[k].rep, gb->folding.folded[k].rep);
        CHECK_EQ_INT(ga->folding.folded[k].origin_ns, gb->folding.folded[k].origin_ns);
    }
    for (size_t i = 0; i < ga->n_tasks && i < gb->n_tasks; i++)
        if (ga->tasks[i].dur != gb->tasks[i].dur) {
            sc_check_fail(__FILE__, __LINE__, "task %zu: %lld ns and %lld ns", i, (long long)ga->tasks[i].dur,
                          (long long)gb->tasks[i].dur);
            break;
        }
    /* at the threshold (and by default, under 64 ranks): every rank kept */
    gs = build(whole, RANKS);
    REQUIRE(gs != NULL);
    CHECK(!gs->folding.on && gs->n_ranks == RANKS && gs->folding.n_folded == 0);
    small = th_gentrace_job(4, GEN_ARGS);
    REQUIRE(small != NULL);
    model_graph_free(gs);
    gs = build(small, MODEL_FOLD_OVER);
    CHECK(gs && !gs->folding.on && gs->n_ranks == 4);
    model_graph_free(ga);
    model_graph_free(gb);
    model_graph_free(gs);
    model_job_free(whole);
    model_job_free(shed);
    model_job_free(small);
}

/* A folded job's representatives can be capped (fold_reps_max, what the
 * daemon sizes a folded build's memory by): the job (its straggler and
 * the rest, several representatives) built with room for one fails with
 * SC_ELIMIT, from a loaded job and while loading, and builds with room
 * for as many as it has. */
TEST(fold_past_its_representatives_cap_is_refused)
{
    char paths[RANKS][TH_PATH_MAX];
    const char *pv[RANKS];
    struct model_load_opts lo;
    struct model_job *whole = NULL, *shed = NULL;
    struct model_graph *g = NULL;
    struct model_graph_opts o;
    struct sc_error err;
    th_gentrace_paths(RANKS, GEN_ARGS, paths, pv);
    model_load_opts_default(&lo);
    REQUIRE(model_job_load(pv, RANKS, &lo, 0, &whole, &err) == SC_OK);
    model_graph_opts_default(&o);
    o.fold_over = 0;
    REQUIRE(model_graph_build(whole, &o, &g, &err) == SC_OK);
    size_t reps = g->n_ranks;
    CHECK(reps >= 2 && reps < RANKS);
    model_graph_free(g);
    o.fold_reps_max = 1;
    CHECK_EQ_INT(model_graph_build(whole, &o, &g, &err), SC_ELIMIT);
    CHECK(g == NULL);
    CHECK_CONTAINS(err.msg, "more than 1 representatives");
    struct model_graph_load gl = {.threads = 2};
    CHECK_EQ_INT(model_graph_build_paths(pv, RANKS, &gl, &o, &shed, &g, &err), SC_ELIMIT);
    CHECK(g == NULL && shed == NULL);
    o.fold_reps_max = reps;
    REQUIRE(model_graph_build(whole, &o, &g, &err) == SC_OK);
    CHECK_EQ_INT(g->n_ranks, reps);
    model_graph_free(g);
    model_job_free(whole);
}

/* The traces model_graph_build_paths hands to its `kept` callback, and
 * those it drops. */
struct kept_log {
    pthread_mutex_t mu;
    const struct model_trace *t[RANKS], *dropped[RANKS];
    size_t n, whole; /* calls; of them, with the trace still whole */
    size_t n_dropped;
    size_t most;     /* the most handed over and not dropped at once */
    size_t fail_at;  /* the call that fails (0: none) */
};

static int log_kept(void *ctx, const struct model_trace *t, struct sc_error *err)
{
    struct kept_log *k = ctx;
    int rc = SC_OK;
    pthread_mutex_lock(&k->mu);
    if (k->n < RANKS)
        k->t[k->n] = t;
    k->n++;
    if (k->n > k->n_dropped && k->n - k->n_dropped > k->most)
        k->most = k->n - k->n_dropped;
    k->whole += !t->shed && t->n_events == t->n_complete && t->n_events > 0;
    if (k->n == k->fail_at)
        rc = sc_error_set(err, SC_EIO, "the callback failed on '%s'", t->source);
    pthread_mutex_unlock(&k->mu);
    return rc;
}

static void log_dropped(void *ctx, const struct model_trace *t)
{
    struct kept_log *k = ctx;
    pthread_mutex_lock(&k->mu);
    if (k->n_dropped < RANKS)
        k->dropped[k->n_dropped] = t;
    k->n_dropped++;
    pthread_mutex_unlock(&k->mu);
}

static size_t calls(const struct model_trace *const *v, size_t n, const struct model_trace *t)
{
    size_t c = 0;
    for (size_t i = 0; i < n && i < RANKS; i++)
        c += v[i] == t;
    return c;
}

/* Built while loading, each rank whose part is kept has its trace handed
 * to the callback once, whole, before it is shed: every rank unfolded;
 * folded, every representative, and of the others only those that stood
 * for a while before one replaced them (fewer than the job's ranks), each
 * of which is dropped once (also those held before folding starts past
 * a threshold): never more at once than the threshold or the graph's
 * ranks, what bounds a caller's memory. A failing callback fails the
 * build. */
TEST(fold_build_while_loading_hands_over_each_kept_trace_whole)
{
    char paths[RANKS][TH_PATH_MAX];
    const char *pv[RANKS];
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_graph_opts o;
    struct sc_error err;
    th_gentrace_paths(RANKS, GEN_ARGS, paths, pv);
    model_graph_opts_default(&o);
    static const size_t over[] = {SIZE_MAX, 0, 8};
    for (size_t c = 0; c < 3; c++) {
        int folded = c > 0;
        struct kept_log k = {.mu = PTHREAD_MUTEX_INITIALIZER};
        struct model_graph_load gl = {.threads = 2, .kept = log_kept, .dropped = log_dropped, .kept_ctx = &k};
        o.fold_over = over[c];
        if (model_graph_build_paths(pv, RANKS, &gl, &o, &job, &g, &err))
            sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        REQUIRE(g && job);
        CHECK_EQ_INT(k.whole, k.n);
        for (size_t r = 0; r < g->n_ranks; r++) {
            const struct model_trace *t = model_graph_trace(g, (uint16_t)r);
            CHECK(calls(k.t, k.n, t) == 1 && calls(k.dropped, k.n_dropped, t) == 0);
        }
        for (size_t i = 0; i < job->n_ranks; i++) {
            const struct model_trace *t = job->ranks[i];
            CHECK(t->shed && calls(k.t, k.n, t) <= 1 && calls(k.dropped, k.n_dropped, t) <= calls(k.t, k.n, t));
        }
        CHECK_EQ_INT(k.n - k.n_dropped, g->n_ranks);
        CHECK(k.most <= (folded && over[c] > g->n_ranks ? over[c] : g->n_ranks));
        printf("  %s %zu: %zu ranks in the graph, %zu traces handed over of %d, %zu dropped, at most %zu at once\n",
               folded ? "folded past" : "unfolded, ranks", folded ? over[c] : (size_t)RANKS, g->n_ranks, k.n, RANKS,
               k.n_dropped, k.most);
        if (folded)
            CHECK(g->folding.on && k.n < RANKS);
        else
            CHECK(!g->folding.on && k.n == RANKS);
        model_graph_free(g);
        model_job_free(job);
        pthread_mutex_destroy(&k.mu);
    }
    struct kept_log k = {.mu = PTHREAD_MUTEX_INITIALIZER, .fail_at = 3};
    struct model_graph_load gl = {.threads = 2, .kept = log_kept, .kept_ctx = &k};
    CHECK_EQ_INT(model_graph_build_paths(pv, RANKS, &gl, &o, &job, &g, &err), SC_EIO);
    CHECK(g == NULL && job == NULL);
    CHECK_CONTAINS(err.msg, "the callback failed on");
    pthread_mutex_destroy(&k.mu);
}

/* Opportunities on the folded job: over all its ranks (each
 * representative weighted by the ranks folded into it), as on the
 * unfolded one: the baseline step within 0.05% (over the representatives
 * alone, 0.2% off), and the stragglers' saving within 1.5% (kernels at
 * their median over every rank; over the representatives, of which the
 * straggler is one in a handful, 3.5% off). */
TEST(fold_opportunities_count_every_rank)
{
    struct model_job *job = th_gentrace_job(RANKS, GEN_ARGS);
    REQUIRE(job != NULL);
    struct model_graph *whole = build(job, SIZE_MAX), *folded = build(job, 0);
    struct model_opportunities ow, of;
    struct sc_error err;
    REQUIRE(whole && folded && folded->folding.on);
    REQUIRE(model_opportunities_find(whole, NULL, &ow, &err) == SC_OK);
    REQUIRE(model_opportunities_find(folded, NULL, &of, &err) == SC_OK);
    CHECK_EQ_INT(ow.n_ranks, RANKS);
    CHECK_EQ_INT(of.n_ranks, RANKS);
    CHECK_NEAR((double)of.step_ns, (double)ow.step_ns, 0.0005 * (double)ow.step_ns);
    CHECK_NEAR((double)of.gpu_idle_ns, (double)ow.gpu_idle_ns, 0.005 * (double)ow.step_ns);
    const struct model_opportunity *sw = NULL, *sf = NULL;
    for (size_t i = 0; i < ow.n; i++)
        if (!strcmp(ow.v[i].change, "stragglers=median"))
            sw = &ow.v[i];
    for (size_t i = 0; i < of.n; i++)
        if (!strcmp(of.v[i].change, "stragglers=median"))
            sf = &of.v[i];
    REQUIRE(sw && sf);
    CHECK(sw->saving_ns > 0);
    CHECK_NEAR((double)sf->saving_ns, (double)sw->saving_ns, 0.015 * (double)sw->saving_ns);
    model_opportunities_release(&ow);
    model_opportunities_release(&of);
    model_graph_free(whole);
    model_graph_free(folded);
    model_job_free(job);
}
