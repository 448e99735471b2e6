/* tests/unit/test_scale.c: building a job's graph in bounded memory.
 *
 * model_graph_build_paths builds each rank as its trace loads and sheds the
 * trace: it must give the very graph and replay the whole-job build gives,
 * keep of each trace only its header, honour ranks given by the caller and
 * report a bad rank's trace, from a folder or a tar archive (whose members
 * are parsed in batches on all cores). sc_parallel_for, which runs the
 * ranks on all cores, must run every item once and report the failure a
 * serial run would report. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pool.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/stream.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define RANKS 6

static const char *const GEN_ARGS[] = {"--steps", "3", "--layers", "6", NULL};

/* Every task, edge, step, group and name of a and b alike. */
static void check_same_graph(const struct model_graph *a, const struct model_graph *b)
{
    CHECK_EQ_INT(a->n_tasks, b->n_tasks);
    CHECK_EQ_INT(a->n_edges, b->n_edges);
    CHECK_EQ_INT(a->n_res, b->n_res);
    CHECK_EQ_INT(a->n_steps, b->n_steps);
    CHECK_EQ_INT(a->n_groups, b->n_groups);
    CHECK_EQ_INT(a->n_ranks, b->n_ranks);
    size_t diff = 0;
    for (size_t i = 0; i < a->n_tasks; i++) {
        const struct model_task *x = &a->tasks[i], *y = &b->tasks[i];
        diff += x->dur != y->dur || x->gap != y->gap || x->res != y->res || x->group != y->group ||
                x->rank != y->rank || x->cls != y->cls || x->sub != y->sub || x->kept != y->kept ||
                strcmp(model_graph_str(a, a->src[i].name), model_graph_str(b, b->src[i].name)) != 0 ||
                a->src[i].event != b->src[i].event || a->prev[i] != b->prev[i] || a->next[i] != b->next[i];
    }
    CHECK_EQ_INT(diff, 0);
    for (size_t i = 0; i < a->n_edges; i++) {
        const struct model_edge *x = &a->edges[i], *y = &b->edges[i];
        diff += x->from != y->from || x->lat != y->lat || x->type != y->type || x->kind != y->kind ||
                x->inferred != y->inferred;
    }
    CHECK_EQ_INT(diff, 0);
    for (size_t i = 0; i < a->n_tasks + 1; i++)
        diff += a->pred_at[i] != b->pred_at[i];
    CHECK_EQ_INT(diff, 0);
    for (size_t i = 0; i < a->n_res; i++)
        diff += a->res[i].origin != b->res[i].origin || a->res[i].tid != b->res[i].tid ||
                strcmp(model_graph_str(a, a->res[i].label), model_graph_str(b, b->res[i].label)) != 0;
    for (size_t i = 0; i < a->n_ranks; i++)
        diff += a->ranks[i].id != b->ranks[i].id || a->ranks[i].clock_offset_ns != b->ranks[i].clock_offset_ns;
    for (size_t i = 0; i < a->n_groups; i++)
        diff += a->groups[i].bytes != b->groups[i].bytes || a->groups[i].size != b->groups[i].size ||
                a->group_at[i] != b->group_at[i];
    CHECK_EQ_INT(diff, 0);
    for (size_t k = 0; k < MODEL_EDGE_KIND_COUNT; k++)
        CHECK_EQ_INT(a->stats.edges_by_kind[k], b->stats.edges_by_kind[k]);
    CHECK_EQ_INT(a->stats.collectives_matched, b->stats.collectives_matched);
    CHECK_EQ_INT(a->stats.inferred_event_syncs, b->stats.inferred_event_syncs);
}

static void rank_paths(const char *dir, char paths[RANKS][4200], const char *pv[RANKS])
{
    for (int r = 0; r < RANKS; r++) {
        snprintf(paths[r], sizeof paths[r], "%s/rank%d.json", dir, r);
        pv[r] = paths[r];
    }
}

/* Cut a file in the middle of an event. */
static void truncate_half(const char *path)
{
    size_t n;
    char *text = th_read_file(path, &n);
    CHECK(text != NULL && n > 1000);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK_EQ_INT(fwrite(text, 1, n / 2, f), n / 2);
    fclose(f);
    free(text);
}

TEST(graph_build_paths_is_the_whole_job_build_with_traces_shed)
{
    char dir[4096], paths[RANKS][4200];
    const char *pv[RANKS];
    struct model_load_opts lo;
    struct model_job *whole = NULL, *shed = NULL;
    struct model_graph *ga = NULL, *gb = NULL;
    struct model_replay *ra = NULL, *rb = NULL;
    struct model_replay_opts ro;
    struct sc_error err;

    th_gentrace_dir(RANKS, GEN_ARGS, dir, sizeof dir);
    rank_paths(dir, paths, pv);
    model_load_opts_default(&lo);
    model_replay_opts_default(&ro);
    CHECK(model_job_load(pv, RANKS, &lo, 0, &whole, &err) == SC_OK);
    CHECK(model_graph_build(whole, NULL, &ga, &err) == SC_OK);
    /* the folder, as a user names it, on two threads */
    const char *d = dir;
    struct model_graph_load gl = {.threads = 2};
    if (model_graph_build_paths(&d, 1, &gl, NULL, &shed, &gb, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    CHECK(gb->job == shed);
    check_same_graph(ga, gb);
    CHECK(model_replay_run(ga, &ro, &ra, &err) == SC_OK);
    CHECK(model_replay_run(gb, &ro, &rb, &err) == SC_OK);
    CHECK_EQ_INT(ra->n_steps, rb->n_steps);
    CHECK(ra->n_steps >= RANKS * 3);
    for (size_t i = 0; i < ra->n_steps; i++) {
        CHECK_EQ_INT(ra->steps[i].replayed_ns, rb->steps[i].replayed_ns);
        CHECK_EQ_INT(ra->steps[i].measured_ns, rb->steps[i].measured_ns);
    }
    /* each trace keeps its header only */
    size_t bytes_whole = 0, bytes_shed = 0, tables = 0;
    CHECK_EQ_INT(shed->n_ranks, RANKS);
    for (size_t i = 0; i < RANKS; i++) {
        const struct model_trace *t = shed->ranks[i], *w = whole->ranks[i];
        CHECK(t->shed && !w->shed);
        CHECK(t->events == NULL && t->n_events == 0 && t->n_flows == 0 && t->link == NULL);
        CHECK_EQ_INT(t->n_complete, w->n_events);
        CHECK_EQ_INT(t->n_steps, w->n_steps);
        CHECK_EQ_INT(t->n_devices, w->n_devices);
        CHECK_EQ_INT(t->world_size, RANKS);
        CHECK_EQ_INT(shed->rank_ids[i], whole->rank_ids[i]);
        bytes_whole += model_trace_bytes(w);
        bytes_shed += model_trace_bytes(t);
        tables += w->cap_events * sizeof *w->events + w->cap_infos * sizeof *w->infos +
                  w->cap_op_args * sizeof *w->op_args +
                  w->cap_flows * sizeof *w->flows + w->n_events * sizeof *w->link;
    }
    /* what is left is the header: strings, tracks, steps (a few KB past the
     * strings' first 64 KB block) */
    if (bytes_shed + tables > bytes_whole || bytes_shed > RANKS * (size_t)(100 << 10))
        sc_check_fail(__FILE__, __LINE__, "shed traces hold %zu bytes, whole ones %zu (tables %zu)", bytes_shed,
                      bytes_whole, tables);
    model_replay_free(ra);
    model_replay_free(rb);
    model_graph_free(ga);
    model_graph_free(gb);
    model_job_free(whole);
    model_job_free(shed);
}

TEST(graph_build_paths_takes_the_ranks_given)
{
    char dir[4096], paths[RANKS][4200];
    const char *pv[RANKS];
    int64_t ranks[RANKS];
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct sc_error err;

    th_gentrace_dir(RANKS, GEN_ARGS, dir, sizeof dir);
    rank_paths(dir, paths, pv);
    for (int r = 0; r < RANKS; r++)
        ranks[r] = 10 * (RANKS - r); /* over what distributedInfo says */
    struct model_graph_load gl = {.ranks = ranks};
    if (model_graph_build_paths(pv, RANKS, &gl, NULL, &job, &g, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    for (int i = 0; i < RANKS; i++) {
        char want[64];
        CHECK_EQ_INT(job->rank_ids[i], 10 * (i + 1));
        CHECK_EQ_INT(g->ranks[i].id, 10 * (i + 1));
        snprintf(want, sizeof want, "/rank%d.json", RANKS - 1 - i);
        CHECK_CONTAINS(job->ranks[i]->source, want);
    }
    model_graph_free(g);
    model_job_free(job);
}

TEST(graph_build_paths_names_the_bad_trace)
{
    char dir[4096], paths[RANKS][4200];
    const char *pv[RANKS];
    struct model_job *job = (struct model_job *)1;
    struct model_graph *g = (struct model_graph *)1;
    struct sc_error err;

    th_gentrace_dir(RANKS, GEN_ARGS, dir, sizeof dir);
    rank_paths(dir, paths, pv);
    truncate_half(paths[4]); /* rank 4 cut in the middle of an event */
    CHECK(model_graph_build_paths(pv, RANKS, NULL, NULL, &job, &g, &err) == SC_EPARSE);
    CHECK(job == NULL && g == NULL);
    CHECK_CONTAINS(err.msg, "rank4.json");
}

struct counts {
    atomic_int runs[64];
    size_t fail_a, fail_b;
};

static int count_item(void *ctx, size_t i, struct sc_error *err)
{
    struct counts *c = ctx;
    atomic_fetch_add(&c->runs[i], 1);
    if (i == c->fail_a || i == c->fail_b)
        return sc_error_set(err, SC_EINVAL, "item %zu failed", i);
    return SC_OK;
}

TEST(parallel_for_runs_each_item_once_and_reports_the_first_failure)
{
    struct counts c = {.fail_a = 99, .fail_b = 99};
    struct sc_error err;
    CHECK(sc_parallel_for(64, 4, count_item, &c, &err) == SC_OK);
    for (int i = 0; i < 64; i++)
        CHECK_EQ_INT(atomic_load(&c.runs[i]), 1);
    for (int round = 0; round < 20; round++) {
        struct counts f = {.fail_a = 9, .fail_b = 5};
        CHECK(sc_parallel_for(64, 3, count_item, &f, &err) == SC_EINVAL);
        CHECK_STREQ(err.msg, "item 5 failed"); /* the serial run's error, whichever failed first */
        for (int i = 0; i <= 5; i++) /* every item before the failure ran */
            CHECK_EQ_INT(atomic_load(&f.runs[i]), 1);
        for (int i = 6; i < 64; i++) /* at most the few handed out before it failed */
            CHECK(atomic_load(&f.runs[i]) <= 1);
    }
    CHECK(sc_parallel_for(0, 0, count_item, &c, &err) == SC_OK);
    CHECK(sc_pool_threads(0) >= 1);
}

TEST(graph_build_paths_from_a_tarball_is_the_folder_build)
{
    char dir[4096], tar[4300], cmd[9000];
    struct model_job *ja = NULL, *jb = NULL;
    struct model_graph *ga = NULL, *gb = NULL;
    struct sc_error err;
    th_gentrace_dir(RANKS, GEN_ARGS, dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && gzip -k rank3.json && rm rank3.json && tar czf ../job.tar.gz *", dir);
    CHECK(system(cmd) == 0);
    snprintf(tar, sizeof tar, "%s/../job.tar.gz", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && gunzip rank3.json.gz", dir);
    CHECK(system(cmd) == 0);
    const char *d = dir, *t = tar;
    CHECK(model_graph_build_paths(&d, 1, NULL, NULL, &ja, &ga, &err) == SC_OK);
    if (model_graph_build_paths(&t, 1, NULL, NULL, &jb, &gb, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    check_same_graph(ga, gb);
    CHECK_CONTAINS(jb->ranks[3]->source, "job.tar.gz:rank3.json.gz");
    CHECK(jb->ranks[5]->shed);
    model_graph_free(ga);
    model_graph_free(gb);
    model_job_free(ja);
    model_job_free(jb);
}

TEST(tarball_reports_its_first_bad_member)
{
    char dir[4096], path[4300], cmd[9000];
    th_gentrace_dir(RANKS, GEN_ARGS, dir, sizeof dir);
    for (int r = 1; r < RANKS; r += 3) { /* ranks 1 and 4 */
        snprintf(path, sizeof path, "%s/rank%d.json", dir, r);
        truncate_half(path);
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && tar cf ../bad.tar rank0.json rank1.json rank2.json rank3.json "
             "rank4.json rank5.json", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/../bad.tar", dir);
    for (int round = 0; round < 5; round++) { /* the members parse in parallel */
        struct model_job *job = NULL;
        struct model_graph *g = NULL;
        struct sc_error err;
        const char *p = path;
        CHECK(model_graph_build_paths(&p, 1, NULL, NULL, &job, &g, &err) == SC_EPARSE);
        CHECK(job == NULL && g == NULL);
        CHECK_CONTAINS(err.msg, "bad.tar:rank1.json");
        CHECK(model_job_load(&p, 1, NULL, 0, &job, &err) == SC_EPARSE);
        CHECK_CONTAINS(err.msg, "bad.tar:rank1.json");
    }
}

TEST(stream_mem_then_reads_the_memory_then_the_rest)
{
    static const char rest[] = "defghijklmnopqrstuvwxyz";
    struct model_stream *in = NULL, *s = NULL;
    struct sc_error err;
    char buf[64], got[64];
    size_t n = 0;
    CHECK(model_stream_open_mem(rest, sizeof rest - 1, &in, &err) == SC_OK);
    CHECK(model_stream_open_mem_then("abc", 3, in, &s, &err) == SC_OK);
    for (ssize_t r; (r = model_stream_read(s, buf, 2, &err)) > 0; n += (size_t)r) /* reads across the seam */
        memcpy(got + n, buf, (size_t)r);
    CHECK_EQ_INT(n, 26);
    got[n] = '\0';
    CHECK_STREQ(got, "abcdefghijklmnopqrstuvwxyz");
    model_stream_close(s); /* `in` is borrowed */
    model_stream_close(in);
}
