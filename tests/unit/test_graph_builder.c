/* tests/unit/test_graph_builder.c: graphs built through the public
 * builder alone, with no trace: they replay, break down, give a critical
 * path and write a timeline like traced ones, and their durations are an
 * input of the replay (factors, overrides) with answers worked out by hand
 * from the durations put in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/replay_json.h"
#include "api/timeline_json.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/graph_builder.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "model/trace.h"
#include "tests/check.h"
#include "common/banned.h"

#define MS 1000000LL

/* Per rank: a step thread with a begin marker, a GEMM of kernel_ms[r] on
 * the compute stream launched at the step's start, then an all-reduce of
 * 2 ms (16 MiB of floats) on the communication stream once the GEMM is
 * done, and the end marker once the all-reduce is done. The all-reduces
 * of all ranks form one group. */
static struct model_graph *two_rank_graph(const double *kernel_ms, int n_ranks, uint32_t group_size)
{
    struct sc_error err;
    struct model_gb *gb = model_gb_new(&err);
    uint32_t ar[8];
    REQUIRE(gb != NULL);
    for (int r = 0; r < n_ranks; r++) {
        uint16_t rank;
        uint32_t cpu, gpu, net, begin, k, c, end;
        REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = r}, &rank) == SC_OK);
        REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .label = "step", .pid = 1, .tid = 1},
                                      &cpu) == SC_OK);
        REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1, .pid = 0, .tid = 7},
                                      &gpu) == SC_OK);
        REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1, .pid = 0, .tid = 13},
                                      &net) == SC_OK);
        REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER}, &begin) ==
                SC_OK);
        REQUIRE(model_gb_add_task(gb,
                                  &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_KERNEL, .sub = MODEL_KF_GEMM,
                                                            .dur = (int64_t)(kernel_ms[r] * MS), .name = "gemm",
                                                            .tag = "forward"},
                                  &k) == SC_OK);
        REQUIRE(model_gb_add_task(gb,
                                  &(struct model_task_spec){.res = net, .cls = MODEL_TASK_COMM,
                                                            .sub = MODEL_COLL_ALLREDUCE, .dur = 2 * MS,
                                                            .name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                                            .tag = "gradients"},
                                  &c) == SC_OK);
        REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER}, &end) == SC_OK);
        REQUIRE(model_gb_add_edge(gb, begin, k, MODEL_EDGE_LAUNCH, MODEL_FS, 0, 0) == SC_OK);
        REQUIRE(model_gb_add_edge(gb, k, c, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0, 0) == SC_OK);
        REQUIRE(model_gb_add_edge(gb, c, end, MODEL_EDGE_HOST_SYNC, MODEL_FS, 0, 0) == SC_OK);
        REQUIRE(model_gb_add_step(gb, &(struct model_step_spec){.rank = rank, .begin = begin, .end = end,
                                                                .name = "ProfilerStep#1", .measured_ns = -1,
                                                                .trace_step = MODEL_NONE}) == SC_OK);
        ar[r] = c;
    }
    struct model_group_spec gs = {.op = MODEL_COLL_ALLREDUCE, .bytes = 16 << 20, .dtype = "Float", .pg = "0",
                                  .seq = 1, .size = group_size};
    REQUIRE(model_gb_add_group(gb, &gs, ar, (size_t)n_ranks, NULL) == SC_OK);
    struct model_graph *g = NULL;
    REQUIRE(model_gb_finish(gb, &g, &err) == SC_OK);
    return g;
}

/* Replay g with the given scales (NULL-terminated); the step time of each
 * rank in ms goes to ms[]. */
static void replay_ms(const struct model_graph *g, const char *const *scales, double *ms)
{
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    model_replay_opts_default(&o);
    for (; scales && *scales; scales++)
        REQUIRE(model_replay_parse_scale(*scales, &o, &err) == SC_OK);
    REQUIRE(model_replay_run(g, &o, &r, &err) == SC_OK);
    CHECK_EQ_INT(r->forced, 0);
    for (size_t i = 0; i < r->n_steps; i++)
        ms[r->steps[i].rank] = (double)r->steps[i].replayed_ns / MS;
    model_replay_free(r);
}

/* Every rank's step takes want ms with these scales. */
static void expect_ms(const struct model_graph *g, const char *const *scales, double want)
{
    double ms[8];
    replay_ms(g, scales, ms);
    for (size_t r = 0; r < g->n_ranks; r++)
        CHECK_NEAR(ms[r], want, 1e-9);
}

/* Two ranks, 10 ms and 15 ms of GEMM, then a 2 ms all-reduce: the
 * all-reduce starts when the slower rank is ready (15 ms) on both, so both
 * steps take 15 + 2 = 17 ms. */
TEST(graph_api_two_ranks_wait_for_the_slower_kernel)
{
    const double k[] = {10, 15};
    struct model_graph *g = two_rank_graph(k, 2, 0);
    CHECK(g->job == NULL);
    CHECK_EQ_INT(g->n_ranks, 2);
    CHECK_EQ_INT(g->n_groups, 1);
    expect_ms(g, NULL, 17);
    /* rank 1's kernel at x0.5 (7.5 ms): rank 0 (10 ms) is now the last to
     * be ready: 10 + 2 = 12 ms on both; by family, by name or by class */
    const char *half_family[] = {"family:gemm@1=0.5", NULL}, *half_name[] = {"name:gem*@1=0.5", NULL},
               *half_class[] = {"kernel@1=0.5", NULL};
    expect_ms(g, half_family, 12);
    expect_ms(g, half_name, 12);
    expect_ms(g, half_class, 12);
    /* the all-reduce at factor 0: it takes no time, the wait for rank 1's
     * 15 ms kernel remains: 15 ms on both */
    const char *no_comm[] = {"communication=0", NULL};
    expect_ms(g, no_comm, 15);
    model_graph_free(g);
}

TEST(graph_api_factors_and_overrides_from_first_principles)
{
    const double k[] = {10, 15};
    struct model_graph *g = two_rank_graph(k, 2, 0);
    /* every GPU task but communication twice as long: max(20, 30) + 2 =
     * 32 ms; with communication too (comm=2): 34 ms */
    const char *gpu2[] = {"gpu=2", NULL}, *gpu2_comm2[] = {"gpu=2", "comm=2", NULL};
    expect_ms(g, gpu2, 32);
    expect_ms(g, gpu2_comm2, 34);
    /* factors multiply: gpu=2 and kernel=0.25 leave kernels at x0.5 and
     * the all-reduce as it was: max(5, 7.5) + 2 = 9.5 ms */
    const char *mixed[] = {"gpu=2", "kernel=0.25", NULL};
    expect_ms(g, mixed, 9.5);
    /* one rank's link 3x slower: the collective lasts its longest member,
     * 6 ms: 15 + 6 = 21 ms on both */
    const char *slow_link[] = {"communication@1=3", NULL};
    expect_ms(g, slow_link, 21);
    /* a factor matching nothing changes nothing */
    const char *nothing[] = {"family:attention=0", "copy=5", NULL};
    expect_ms(g, nothing, 17);
    /* an override of rank 0's GEMM to 20 ms: 20 + 2 = 22 ms on both */
    uint32_t gemm0 = MODEL_NONE;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].rank == 0 && g->tasks[i].cls == MODEL_TASK_KERNEL)
            gemm0 = i;
    REQUIRE(gemm0 != MODEL_NONE);
    CHECK_STREQ(model_graph_str(g, g->src[gemm0].name), "gemm");
    CHECK_STREQ(model_graph_str(g, g->src[gemm0].tag), "forward");
    CHECK_EQ_INT(g->src[gemm0].event, MODEL_NONE);
    struct model_replay_override ov = {gemm0, 20 * MS};
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    model_replay_opts_default(&o);
    o.overrides = &ov;
    o.n_overrides = 1;
    REQUIRE(model_replay_run(g, &o, &r, &err) == SC_OK);
    CHECK_EQ_INT(r->steps[0].replayed_ns, 22 * MS);
    CHECK_EQ_INT(r->steps[1].replayed_ns, 22 * MS);
    model_replay_free(r);
    /* the graph is untouched: a plain replay gives 17 ms again */
    expect_ms(g, NULL, 17);
    ov.task = (uint32_t)g->n_tasks;
    CHECK_EQ_INT(model_replay_run(g, &o, &r, &err), SC_EINVAL);
    CHECK(r == NULL);
    model_graph_free(g);
}

/* Peers that behave alike, simulated as one rank: a one-member group of 8. */
TEST(graph_api_one_member_collective)
{
    const double k[] = {10};
    struct model_graph *g = two_rank_graph(k, 1, 8);
    CHECK_EQ_INT(g->groups[0].size, 8);
    CHECK_EQ_INT(g->group_at[1] - g->group_at[0], 1);
    expect_ms(g, NULL, 12);
    const char *slow[] = {"communication=4", NULL};
    expect_ms(g, slow, 18);
    model_graph_free(g);
}

/* The breakdown, the critical path and the timeline of a graph with no
 * trace, figures from the durations put in. */
TEST(graph_api_reports_without_a_trace)
{
    const double k[] = {10, 15};
    struct model_graph *g = two_rank_graph(k, 2, 0);
    struct model_replay *r = NULL;
    struct sc_error err;
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    REQUIRE(r->n_steps == 2);
    /* rank 0: 10 ms of GEMM, then its all-reduce kernel runs 7 ms: 5 ms
     * waiting for rank 1, 2 ms of transfer */
    const struct model_breakdown *b0 = &r->steps[0].breakdown, *b1 = &r->steps[1].breakdown;
    CHECK_EQ_INT(b0->compute_exposed, 10 * MS);
    CHECK_EQ_INT(b0->idle, 0);
    CHECK_EQ_INT(b0->comm_exposed, 7 * MS);
    CHECK_EQ_INT(b1->compute_exposed, 15 * MS);
    CHECK_EQ_INT(b1->comm_exposed, 2 * MS);
    CHECK_EQ_INT(r->steps[0].measured_ns, -1);
    CHECK_EQ_INT(r->n_scored, 0);
    /* rank 0's critical path runs through rank 1's GEMM: 15 ms compute,
     * then 2 ms of communication, tiling the step */
    for (size_t s = 0; s < 2; s++) {
        int64_t by[MODEL_BOUND_COUNT] = {0}, cur = r->steps[s].start;
        for (size_t i = r->steps[s].path_first; i < r->steps[s].path_first + r->steps[s].path_n; i++) {
            CHECK_EQ_INT(r->segments[i].start, cur);
            cur = r->segments[i].end;
            by[r->segments[i].bound] += r->segments[i].end - r->segments[i].start;
        }
        CHECK_EQ_INT(cur, r->steps[s].end);
        CHECK_EQ_INT(by[MODEL_BOUND_GPU_COMPUTE], 15 * MS);
        CHECK_EQ_INT(by[MODEL_BOUND_COMMUNICATION], 2 * MS);
    }
    /* replay and critical-path documents: no measured time, names from the graph */
    json_t *doc = api_replay_json(r);
    REQUIRE(doc != NULL);
    json_t *s0 = json_array_get(json_object_get(doc, "steps"), 0);
    CHECK(json_is_null(json_object_get(s0, "measured_ms")));
    CHECK_STREQ(json_string_value(json_object_get(s0, "step")), "ProfilerStep#1");
    json_decref(doc);
    doc = api_critical_path_json(r);
    REQUIRE(doc != NULL);
    char *text = json_dumps(doc, JSON_COMPACT);
    CHECK_CONTAINS(text, "\"task\":\"gemm\"");
    CHECK_CONTAINS(text, "rank 1 stream 7");
    free(text);
    json_decref(doc);
    /* the timeline is a trace stepcast reads back: one 17 ms step, the
     * GEMM as a kernel linked to nothing (it has no launch call) */
    for (int rank = 0; rank < 2; rank++) {
        doc = api_timeline_json(r, rank);
        REQUIRE(doc != NULL);
        text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
        json_decref(doc);
        struct model_trace *t = NULL;
        CHECK(model_trace_load_mem(text, strlen(text), "timeline", NULL, &t, &err) == SC_OK);
        CHECK_CONTAINS(text, "\"name\":\"gemm\"");
        free(text);
        if (!t)
            continue;
        CHECK_EQ_INT(t->n_steps, 1);
        if (t->n_steps)
            CHECK_NEAR((double)(t->steps[0].end - t->steps[0].start), 17.0 * MS, 2.0);
        model_trace_free(t);
    }
    model_replay_free(r);
    model_graph_free(g);
}

TEST(graph_api_rejects_what_cannot_be_a_graph)
{
    struct sc_error err;
    struct model_gb *gb = model_gb_new(&err);
    uint16_t rank;
    uint32_t cpu, gpu, t1, t2, t3;
    REQUIRE(gb != NULL);
    CHECK_EQ_INT(model_gb_add_resource(gb, &(struct model_res_spec){.rank = 0}, &cpu), SC_EINVAL);
    model_gb_free(gb);

    gb = model_gb_new(&err);
    REQUIRE(gb != NULL);
    REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = 0}, &rank) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank}, &cpu) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1}, &gpu) == SC_OK);
    /* a kernel on a CPU thread */
    CHECK_EQ_INT(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_KERNEL}, &t1),
                 SC_EINVAL);
    CHECK_CONTAINS(err.msg, "GPU work on a CPU thread");
    /* after an error, every call fails, finish too */
    CHECK_EQ_INT(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_CALL}, &t1),
                 SC_EINVAL);
    struct model_graph *g = NULL;
    CHECK_EQ_INT(model_gb_finish(gb, &g, &err), SC_EINVAL);
    CHECK(g == NULL);

    gb = model_gb_new(&err);
    REQUIRE(gb != NULL);
    REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = 0}, &rank) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1}, &gpu) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_COMM, .dur = 5}, &t1) ==
            SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_COMM, .dur = 5}, &t2) ==
            SC_OK);
    CHECK_EQ_INT(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_COPY, .dur = -1}, &t3),
                 SC_EINVAL);
    model_gb_free(gb);

    gb = model_gb_new(&err);
    REQUIRE(gb != NULL);
    REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = 0}, &rank) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1}, &gpu) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_COMM, .dur = 5}, &t1) ==
            SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_COMM, .dur = 5}, &t2) ==
            SC_OK);
    /* two members on one rank; a step whose markers are no markers */
    uint32_t both[] = {t1, t2};
    CHECK_EQ_INT(model_gb_add_group(gb, &(struct model_group_spec){.op = MODEL_COLL_ALLREDUCE}, both, 2, NULL),
                 SC_EINVAL);
    model_gb_free(gb);
    gb = model_gb_new(&err);
    REQUIRE(gb != NULL);
    REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = 0}, &rank) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank}, &cpu) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_HOST, .dur = 5}, &t1) ==
            SC_OK);
    CHECK_EQ_INT(model_gb_add_step(gb, &(struct model_step_spec){.rank = rank, .begin = t1, .end = t1}), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "no marker task");
    model_gb_free(gb);
}

/* A resource runs its tasks in the order they were added, whatever the
 * layout keys say. */
TEST(graph_api_resource_order_is_the_order_added)
{
    struct sc_error err;
    struct model_gb *gb = model_gb_new(&err);
    uint16_t rank;
    uint32_t cpu, a, b, c;
    REQUIRE(gb != NULL);
    REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = 3}, &rank) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank}, &cpu) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER, .order = 50}, &a) ==
            SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_HOST, .dur = 4 * MS,
                                                            .gap = MS, .order = 10},
                              &b) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER, .order = 0}, &c) ==
            SC_OK);
    REQUIRE(model_gb_add_step(gb, &(struct model_step_spec){.rank = rank, .begin = a, .end = c, .name = "s",
                                                            .measured_ns = 4 * MS}) == SC_OK);
    struct model_graph *g = NULL;
    uint32_t *map = NULL;
    REQUIRE(model_gb_finish_map(gb, &g, &map, &err) == SC_OK);
    CHECK_EQ_INT(g->prev[map[b]], map[a]);
    CHECK_EQ_INT(g->next[map[b]], map[c]);
    CHECK_STREQ(model_graph_str(g, g->src[map[b]].name), "host");
    struct model_replay *r = NULL;
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    /* 1 ms of host work, then 4 ms: 5 ms, 25% over the 4 ms measured */
    CHECK_EQ_INT(r->steps[0].replayed_ns, 5 * MS);
    CHECK_NEAR(r->steps[0].error_pct, 25, 1e-9);
    CHECK_EQ_INT(r->n_scored, 1);
    const char *bad[] = {"gpu@2=2", NULL};
    struct model_replay_opts o;
    model_replay_opts_default(&o);
    CHECK_EQ_INT(model_replay_parse_scale(bad[0], &o, &err), SC_OK);
    model_replay_free(r);
    r = NULL;
    CHECK_EQ_INT(model_replay_run(g, &o, &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "no rank 2");
    free(map);
    model_graph_free(g);
}

/* One rank: a 10 ms kernel on the compute stream and a 3 ms all-reduce on
 * the communication stream, both from the step's start; layout keys that
 * put the all-reduce before the kernel. */
static struct model_gb *merged_graph(uint32_t *kernel, uint32_t *allreduce, struct sc_error *err)
{
    struct model_gb *gb = model_gb_new(err);
    uint16_t rank;
    uint32_t cpu, gpu, net, begin, end;
    REQUIRE(gb != NULL);
    REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = 0}, &rank) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank}, &cpu) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1, .tid = 7}, &gpu) == SC_OK);
    REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1, .tid = 13}, &net) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER, .order = 1},
                              &begin) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_KERNEL, .dur = 10 * MS,
                                                            .order = 20},
                              kernel) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = net, .cls = MODEL_TASK_COMM,
                                                            .sub = MODEL_COLL_ALLREDUCE, .dur = 3 * MS, .order = 10},
                              allreduce) == SC_OK);
    REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER, .order = 30},
                              &end) == SC_OK);
    REQUIRE(model_gb_add_edge(gb, begin, *kernel, MODEL_EDGE_LAUNCH, MODEL_FS, 0, 0) == SC_OK);
    REQUIRE(model_gb_add_edge(gb, begin, *allreduce, MODEL_EDGE_LAUNCH, MODEL_FS, 0, 0) == SC_OK);
    REQUIRE(model_gb_add_edge(gb, *kernel, end, MODEL_EDGE_HOST_SYNC, MODEL_FS, 0, 0) == SC_OK);
    REQUIRE(model_gb_add_edge(gb, *allreduce, end, MODEL_EDGE_HOST_SYNC, MODEL_FS, 0, 0) == SC_OK);
    REQUIRE(model_gb_add_step(gb, &(struct model_step_spec){.rank = rank, .begin = begin, .end = end, .name = "s",
                                                            .measured_ns = -1, .trace_step = MODEL_NONE}) == SC_OK);
    return gb;
}

/* The communication part of task i, ns; 0 when it has none. */
static int64_t comm_part(const struct model_graph *g, uint32_t i)
{
    size_t k = model_graph_part_seek(g, i);
    return k < g->n_parts && g->parts[k].task == i ? g->parts[k].comm_ns : 0;
}

/* A task that merges compute with collectives among peers (a synthesised
 * stage's run) counts its communication as such: the last of its run, here
 * 4 of the kernel's 10 ms, while the all-reduce overlaps its first 3 ms.
 * The part follows its task through the layout. */
TEST(graph_api_merged_task_counts_its_communication)
{
    struct sc_error err;
    uint32_t k, c;
    struct model_gb *gb = merged_graph(&k, &c, &err);
    REQUIRE(model_gb_set_part(gb, k, 4 * MS, 0) == SC_OK);
    struct model_graph *g = NULL;
    uint32_t *map = NULL;
    REQUIRE(model_gb_finish_map(gb, &g, &map, &err) == SC_OK);
    CHECK(map[k] != k); /* the layout moved it */
    CHECK_EQ_INT(comm_part(g, map[k]), 4 * MS);
    CHECK_EQ_INT(comm_part(g, map[c]), 0);
    struct model_replay *r = NULL;
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    const struct model_breakdown *b = &r->steps[0].breakdown;
    CHECK_EQ_INT(r->steps[0].replayed_ns, 10 * MS);
    CHECK_EQ_INT(b->overlap, 3 * MS);         /* the all-reduce beside the compute */
    CHECK_EQ_INT(b->compute_exposed, 3 * MS); /* the rest of the compute */
    CHECK_EQ_INT(b->comm_exposed, 4 * MS);    /* the merged collectives */
    model_replay_free(r);
    free(map);
    model_graph_free(g);

    /* more than its duration; none; on a collective; set twice (found
     * when finished) */
    gb = merged_graph(&k, &c, &err);
    CHECK_EQ_INT(model_gb_set_part(gb, k, 11 * MS, 0), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "outside a task's duration");
    model_gb_free(gb);
    gb = merged_graph(&k, &c, &err);
    CHECK_EQ_INT(model_gb_set_part(gb, k, 0, 0), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "neither");
    model_gb_free(gb);
    gb = merged_graph(&k, &c, &err);
    CHECK_EQ_INT(model_gb_set_part(gb, k, 0, -1), SC_EINVAL);
    model_gb_free(gb);
    gb = merged_graph(&k, &c, &err);
    CHECK_EQ_INT(model_gb_set_part(gb, k, 0, NAN), SC_EINVAL);
    model_gb_free(gb);
    gb = merged_graph(&k, &c, &err);
    CHECK_EQ_INT(model_gb_set_part(gb, c, MS, 0), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "no kernel");
    model_gb_free(gb);
    gb = merged_graph(&k, &c, &err);
    REQUIRE(model_gb_set_part(gb, k, 2, 0) == SC_OK);
    REQUIRE(model_gb_set_part(gb, k, 3, 0) == SC_OK);
    CHECK_EQ_INT(model_gb_finish(gb, &g, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set twice");
    CHECK(g == NULL);
}

/* Two ranks, a kernel each (rank 0 10 ms, rank 1 4 ms) and then a 2 ms
 * transfer from rank 0 to rank 1 once each has its kernel done: with
 * `paired`, one task on rank 1's stream paired with rank 0's (rank 0's
 * side waits through peer edges); else a send and a receive in a group of
 * two. The transfer's own task id goes to *xfer. */
static struct model_gb *transfer_graph(int paired, uint32_t *xfer, struct sc_error *err)
{
    struct model_gb *gb = model_gb_new(err);
    uint32_t cpu[2], gpu[2], net[2], begin[2], k[2], end[2], side[2];
    REQUIRE(gb != NULL);
    for (int r = 0; r < 2; r++) {
        uint16_t rank;
        REQUIRE(model_gb_add_rank(gb, &(struct model_rank_spec){.id = r}, &rank) == SC_OK);
        REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank}, &cpu[r]) == SC_OK);
        REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1, .tid = 7}, &gpu[r]) ==
                SC_OK);
        REQUIRE(model_gb_add_resource(gb, &(struct model_res_spec){.rank = rank, .gpu = 1, .tid = 9}, &net[r]) ==
                SC_OK);
    }
    for (int r = 0; r < 2; r++) {
        REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu[r], .cls = MODEL_TASK_MARKER},
                                  &begin[r]) == SC_OK);
        REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = gpu[r], .cls = MODEL_TASK_KERNEL,
                                                                .dur = (r ? 4 : 10) * MS},
                                  &k[r]) == SC_OK);
        REQUIRE(model_gb_add_edge(gb, begin[r], k[r], MODEL_EDGE_LAUNCH, MODEL_FS, 0, 0) == SC_OK);
    }
    for (int r = paired ? 1 : 0; r < 2; r++)
        REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = net[r], .cls = MODEL_TASK_COMM,
                                                                .sub = MODEL_COLL_SENDRECV, .dur = 2 * MS},
                                  &side[r]) == SC_OK);
    if (paired) {
        side[0] = side[1];
        REQUIRE(model_gb_pair(gb, side[1], net[0]) == SC_OK);
        REQUIRE(model_gb_add_peer_edge(gb, k[0], side[1], MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0) == SC_OK);
    } else {
        REQUIRE(model_gb_add_edge(gb, k[0], side[0], MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0, 0) == SC_OK);
        REQUIRE(model_gb_add_group(gb, &(struct model_group_spec){.op = MODEL_COLL_SENDRECV, .bytes = 1 << 20},
                                   side, 2, NULL) == SC_OK);
    }
    REQUIRE(model_gb_add_edge(gb, k[1], side[1], MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0, 0) == SC_OK);
    for (int r = 0; r < 2; r++) {
        REQUIRE(model_gb_add_task(gb, &(struct model_task_spec){.res = cpu[r], .cls = MODEL_TASK_MARKER}, &end[r]) ==
                SC_OK);
        REQUIRE(model_gb_add_edge(gb, side[r], end[r], MODEL_EDGE_HOST_SYNC, MODEL_FS, 0, 0) == SC_OK);
        REQUIRE(model_gb_add_step(gb, &(struct model_step_spec){.rank = (uint16_t)r, .begin = begin[r],
                                                                .end = end[r], .name = "s", .measured_ns = -1,
                                                                .trace_step = MODEL_NONE}) == SC_OK);
    }
    *xfer = side[1];
    return gb;
}

/* A transfer held as one task on both its sides replays as a send and a
 * receive in a group of two: it runs once both are ready (10 ms, rank 0's
 * kernel) and ends 2 ms later on both; each side counts as communication
 * from when it was ready: rank 1 waited from 4 ms, so 8 ms of
 * communication exposed. Rank 1's critical path crosses to rank 0's side,
 * the later one: 10 ms of rank 0's kernel, then the transfer. */
TEST(graph_api_paired_transfer_replays_as_a_group_of_two)
{
    struct sc_error err;
    struct model_replay *r[2] = {NULL, NULL};
    struct model_graph *g[2] = {NULL, NULL};
    uint32_t x[2];
    for (int paired = 0; paired < 2; paired++) {
        struct model_replay_opts o;
        model_replay_opts_default(&o);
        o.critical_path = 1;
        REQUIRE(model_gb_finish(transfer_graph(paired, &x[paired], &err), &g[paired], &err) == SC_OK);
        REQUIRE(model_replay_run(g[paired], &o, &r[paired], &err) == SC_OK);
        CHECK_EQ_INT(r[paired]->forced, 0);
    }
    CHECK_EQ_INT(g[1]->n_groups, 0);
    CHECK_EQ_INT(g[1]->n_peers, 1);
    CHECK_EQ_INT(g[1]->n_tasks + 1, g[0]->n_tasks);
    CHECK_EQ_INT(r[1]->end[x[1]], 12 * MS);
    CHECK_EQ_INT(r[1]->start[x[1]], 4 * MS); /* its own side's ready, as a member's start */
    for (size_t s = 0; s < 2; s++) {
        const struct model_replay_step *a = &r[0]->steps[s], *b = &r[1]->steps[s];
        CHECK_EQ_INT(b->replayed_ns, 12 * MS);
        CHECK_EQ_INT(a->replayed_ns, b->replayed_ns);
        CHECK(memcmp(&a->breakdown, &b->breakdown, sizeof a->breakdown) == 0);
    }
    CHECK_EQ_INT(r[1]->steps[0].breakdown.compute_exposed, 10 * MS);
    CHECK_EQ_INT(r[1]->steps[0].breakdown.comm_exposed, 2 * MS);
    CHECK_EQ_INT(r[1]->steps[1].breakdown.compute_exposed, 4 * MS);
    CHECK_EQ_INT(r[1]->steps[1].breakdown.comm_exposed, 8 * MS);
    const struct model_replay_step *st = &r[1]->steps[1];
    int64_t by[MODEL_BOUND_COUNT] = {0}, cur = st->start;
    for (size_t i = st->path_first; i < st->path_first + st->path_n; i++) {
        CHECK_EQ_INT(r[1]->segments[i].start, cur);
        cur = r[1]->segments[i].end;
        by[r[1]->segments[i].bound] += r[1]->segments[i].end - r[1]->segments[i].start;
    }
    CHECK_EQ_INT(cur, st->end);
    CHECK_EQ_INT(by[MODEL_BOUND_GPU_COMPUTE], 10 * MS);
    CHECK_EQ_INT(by[MODEL_BOUND_COMMUNICATION], 2 * MS);
    for (int i = 0; i < 2; i++) {
        model_replay_free(r[i]);
        model_graph_free(g[i]);
    }

    /* what a pair cannot be */
    uint32_t t;
    struct model_gb *gb = transfer_graph(1, &t, &err);
    CHECK_EQ_INT(model_gb_pair(gb, t, 0), SC_EINVAL); /* twice */
    model_gb_free(gb);
    gb = transfer_graph(1, &t, &err);
    CHECK_EQ_INT(model_gb_add_peer_edge(gb, 0, t, MODEL_EDGE_HOST_SYNC, MODEL_FF, 0), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "holds a finish");
    model_gb_free(gb);
    gb = transfer_graph(0, &t, &err); /* a group member */
    CHECK_EQ_INT(model_gb_pair(gb, t, 2), SC_EINVAL);
    model_gb_free(gb);
    gb = transfer_graph(0, &t, &err);
    CHECK_EQ_INT(model_gb_add_peer_edge(gb, 1, t, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "not paired");
    model_gb_free(gb);
    gb = transfer_graph(1, &t, &err);
    CHECK_EQ_INT(model_gb_pair(gb, 1, 5), SC_EINVAL); /* a kernel */
    CHECK_CONTAINS(err.msg, "no communication task");
    model_gb_free(gb);
}
