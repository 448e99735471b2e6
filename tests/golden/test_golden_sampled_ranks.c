/* tests/golden/test_golden_sampled_ranks.c: jobs of which only some ranks
 * were traced: 2 of the 8 DLRM ranks, and the two sampled ranks of a
 * 128-rank job (../shared/traces). A collective's group is as large as
 * distributedInfo says, never the number of traces that matched: with
 * untraced members it is kept on each traced rank, its peers taken to run
 * like that rank (as a single traced rank's is, DESIGN.md §4), so each
 * rank replays as it does alone and the replay error stays close to the
 * whole job's. Replays split kept collectives as `stepcast replay` does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/inspect_json.h"
#include "estimator/whatif/coll_split.h"
#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define SAMPLED_RANK1 "HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-1.json.gz"

/* A job's graph and its replays without and with the unexplained waits
 * kept. */
struct run {
    struct est_traced_model *m;
    const struct model_graph *g; /* m's */
    struct model_replay *r, *kept;
};

static void run_free(struct run *run)
{
    model_replay_free(run->r);
    model_replay_free(run->kept);
    est_model_close(run->m);
    memset(run, 0, sizeof *run);
}

static int replay(const struct model_job *job, struct run *run)
{
    struct model_replay_opts o;
    struct sc_error err;
    int rc = -1;
    memset(run, 0, sizeof *run);
    if (est_model_of_job(job, NULL, &run->m, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    run->g = est_model_graph(run->m);
    model_replay_opts_default(&o);
    if (est_model_replay(run->m, &o, &run->r, &err) == SC_OK &&
        (o.keep_unexplained = 1, est_model_replay(run->m, &o, &run->kept, &err)) == SC_OK)
        rc = 0;
    else
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    if (rc)
        run_free(run);
    return rc;
}

/* Every communication task of job's graph g kept for untraced peers, the
 * replay's split timing it among `size` ranks: nothing matched across the
 * traced ranks. */
static void check_kept_groups(const struct model_job *job, const struct model_graph *g, int64_t size)
{
    size_t comm = 0, wrong = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (t->cls != MODEL_TASK_COMM)
            continue;
        comm++;
        wrong += !t->kept || whatif_coll_split_kept_ranks(g, i, job->ranks[t->rank]->world_size) != size;
    }
    CHECK(comm > 0);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(g->stats.collectives_matched, 0);
    CHECK_EQ_INT(g->stats.collectives_kept, comm);
}

/* The steps of rank `id` in a replay of several ranks are those of its
 * replay alone (`alone`): same replayed time, same time kept waiting for
 * untraced peers. */
static void check_as_alone(const struct model_replay *r, int id, const struct model_replay *alone)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        if (r->g->ranks[s->rank].id != id)
            continue;
        REQUIRE(k < alone->n_steps);
        CHECK_EQ_INT(s->replayed_ns, alone->steps[k].replayed_ns);
        CHECK_EQ_INT(s->collective_kept_ns, alone->steps[k].collective_kept_ns);
        k++;
    }
    CHECK_EQ_INT(k, alone->n_steps);
}

/* Every pair of the 8 DLRM ranks: its collectives are of 8 ranks (the
 * traces carry no collective metadata, so the group is the world), none
 * matched between the two; the worst pair's max |error| is within 0.25
 * points of the 8 ranks replayed together, without and with the
 * unexplained waits kept. */
TEST(golden_sampled_ranks_dlrm_2_of_8_group_of_8)
{
    const struct shared_trace *st = th_find_trace("dlrm");
    struct model_job *job;
    struct run all, pair;
    double worst = 0, worst_kept = 0;
    if (!st || th_load_trace(st, &job))
        return;
    REQUIRE(job->n_ranks == 8);
    int rc = replay(job, &all);
    model_job_free(job);
    if (rc)
        return;
    CHECK_EQ_INT(all.g->stats.collectives_matched, 8); /* every rank traced: matched as before */
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            const int keep[2] = {a, b};
            if (th_load_ranks(st, keep, 2, &job))
                continue;
            if (replay(job, &pair) == 0) {
                check_kept_groups(job, pair.g, 8);
                if (pair.r->max_abs_error_pct > worst)
                    worst = pair.r->max_abs_error_pct;
                if (pair.kept->max_abs_error_pct > worst_kept)
                    worst_kept = pair.kept->max_abs_error_pct;
                run_free(&pair);
            }
            model_job_free(job);
        }
    printf("     max |error|: all 8 ranks %.2f%% (%.2f%% with the unexplained waits kept); "
           "2 of 8, the worst of the 28 pairs %.2f%% (%.2f%%)\n",
           all.r->max_abs_error_pct, all.kept->max_abs_error_pct, worst, worst_kept);
    CHECK(worst <= all.r->max_abs_error_pct + 0.25);
    CHECK(worst_kept <= all.kept->max_abs_error_pct + 0.25);
    run_free(&all);
}

/* The slowest and the fastest DLRM rank (1 and 7: the first all-to-all
 * takes 7.6 ms on one, 10 us on the other) traced together replay each as
 * it does alone: nothing ties them but collectives with untraced peers. */
TEST(golden_sampled_ranks_dlrm_each_rank_as_alone)
{
    const struct shared_trace *st = th_find_trace("dlrm");
    static const int keep[2] = {1, 7};
    struct model_job *job;
    struct run pair, one;
    if (!st || th_load_ranks(st, keep, 2, &job))
        return;
    int rc = replay(job, &pair);
    model_job_free(job);
    if (rc)
        return;
    for (size_t i = 0; i < 2; i++) {
        if (th_load_ranks(st, &keep[i], 1, &job))
            continue;
        if (replay(job, &one) == 0) {
            check_as_alone(pair.r, keep[i], one.r);
            check_as_alone(pair.kept, keep[i], one.kept);
            run_free(&one);
        }
        model_job_free(job);
    }
    run_free(&pair);
}

/* Ranks 0 and 1 of a 128-rank job (filtered traces, no collective
 * metadata): collectives of 128 ranks, each rank replayed as alone, max
 * |error| at most 1% without and with the unexplained waits kept (matched
 * as a group of two they gave 8.9% and 18%). */
TEST(golden_sampled_ranks_128_two_sampled)
{
    const struct shared_trace *st = th_find_trace("sampled");
    const char *const files[2] = {st ? st->path : "", SAMPLED_RANK1};
    struct model_job *job;
    struct run pair, one;
    if (!st || th_load_files(files, 2, NULL, &job))
        return;
    REQUIRE(job->n_ranks == 2 && job->ranks[0]->world_size == 128);
    if (replay(job, &pair)) {
        model_job_free(job);
        return;
    }
    check_kept_groups(job, pair.g, 128);
    /* inspect says so: every kept collective of each rank among 128 */
    struct sc_error err;
    json_t *doc = api_inspect_job_json(job, pair.g, &err), *k;
    size_t at, seen = 0;
    REQUIRE(doc);
    json_array_foreach (json_object_get(doc, "kept_collectives"), at, k) {
        CHECK_EQ_INT(json_integer_value(json_object_get(k, "group_size")), 128);
        seen += (size_t)json_integer_value(json_object_get(k, "count"));
    }
    CHECK(seen > 0);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "collective_groups")), 0);
    json_decref(doc);
    model_job_free(job);
    printf("     max |error| %.2f%% (%.2f%% with the unexplained waits kept)\n", pair.r->max_abs_error_pct,
           pair.kept->max_abs_error_pct);
    CHECK(pair.r->max_abs_error_pct <= 1);
    CHECK(pair.kept->max_abs_error_pct <= 1);
    for (int i = 0; i < 2; i++) {
        if (th_load_files(&files[i], 1, NULL, &job))
            continue;
        if (replay(job, &one) == 0) {
            check_as_alone(pair.r, i, one.r);
            check_as_alone(pair.kept, i, one.kept);
            run_free(&one);
        }
        model_job_free(job);
    }
    run_free(&pair);
}
