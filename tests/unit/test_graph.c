/* tests/unit/test_graph.c: each edge class of the dependency graph on small
 * fixtures, and the replay's response to changed durations: what depends
 * on a longer kernel moves by exactly as much, what does not stays put. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/inspect_json.h"
#include "api/replay_json.h"
#include "api/timeline_json.h"
#include "estimator/whatif/coll_split.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

struct run {
    struct model_job *job;
    struct model_graph *g;
    struct model_replay *r;
};

static int replay_with(struct run *run, const char *const *paths, size_t n,
                       const struct model_graph_opts *go, const char *const *scales)
{
    struct model_replay_opts ro;
    struct sc_error err;
    memset(run, 0, sizeof *run);
    model_replay_opts_default(&ro);
    for (; scales && *scales; scales++)
        CHECK(model_replay_parse_scale(*scales, &ro, &err) == SC_OK);
    if (!(run->job = tb_job(paths, n)))
        return -1;
    if (model_graph_build(run->job, go, &run->g, &err) || model_replay_run(run->g, &ro, &run->r, &err)) {
        sc_check_fail(__FILE__, __LINE__, "replay failed: %s", err.msg);
        return -1;
    }
    CHECK_EQ_INT(run->r->forced, 0);
    return 0;
}

static int replay1(struct run *run, const char *path, const char *scale)
{
    const char *scales[] = {scale, NULL};
    return replay_with(run, &path, 1, NULL, scales);
}

static void run_free(struct run *run)
{
    model_replay_free(run->r);
    model_graph_free(run->g);
    model_job_free(run->job);
}

/* Replayed step k (in job order), in microseconds. */
static double step_us(const struct run *run, size_t k)
{
    return k < run->r->n_steps ? (double)run->r->steps[k].replayed_ns / 1000.0 : -1;
}

/* ---- thread order, launch, stream order, host sync ---------------------------------- */

/* Main thread: a launch of k1 (stream 7), of k2 behind it, then a
 * cudaStreamSynchronize that returns 5 us after k2 ends, host work, and
 * the step's end. k1 lasts k1_us. */
static const char *sync_fixture(const char *name, double k1_us, double other_us)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    double k1_end = 20 + k1_us, k2_end = k1_end + 100;
    tb_step(&tb, 1, 0, k2_end + 5 + 200);
    tb_launch(&tb, 10, 5, 7, "k1", 20, k1_us);
    tb_launch(&tb, 16, 4, 7, "k2", k1_end, 100);
    /* work on another stream nobody waits for */
    tb_launch(&tb, 21, 4, 20, "other", 31, other_us);
    int c = tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 26, k2_end + 5 - 26);
    (void)c;
    tb_op(&tb, TB_MAIN, "aten::add", k2_end + 50, 50); /* host work after the sync */
    const char *p = tb_write(&tb, name);
    tb_free(&tb);
    return p;
}

TEST(graph_replay_reproduces_a_simple_step)
{
    struct run run;
    if (replay1(&run, sync_fixture("s.json", 500, 50), NULL))
        return;
    CHECK_EQ_INT(run.r->n_steps, 1);
    CHECK_NEAR(step_us(&run, 0), 20 + 500 + 100 + 5 + 200, 0.01);
    CHECK_NEAR(run.r->steps[0].error_pct, 0, 1e-6);
    CHECK(run.g->stats.edges_by_kind[MODEL_EDGE_LAUNCH] == 3);
    CHECK(run.g->stats.edges_by_kind[MODEL_EDGE_HOST_SYNC] >= 1);
    run_free(&run);
}

/* The first task named `name`, or MODEL_NONE. */
static uint32_t task_named(const struct model_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (!strcmp(model_graph_str(g, g->src[i].name), name))
            return i;
    return MODEL_NONE;
}

/* One fixture, one graph; only k1's duration changes, through the replay
 * options: k2, the sync's end and the step (the host work after the sync)
 * move by exactly the change, worked out from the change alone. A replay that copied
 * measured starts would not move at all. */
TEST(graph_longer_kernel_before_sync_moves_host_work_by_as_much)
{
    struct run a, b;
    const char *p = sync_fixture("a.json", 500, 50);
    if (replay1(&a, p, NULL) || replay1(&b, p, "name:k1=1.6")) /* 500 -> 800 us */
        return;
    const double d = 300;
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), d, 0.01);
    uint32_t k1 = task_named(a.g, "k1"), k2 = task_named(a.g, "k2"), sync = task_named(a.g, "cudaStreamSynchronize");
    REQUIRE(k1 != MODEL_NONE && k2 != MODEL_NONE && sync != MODEL_NONE);
    CHECK_NEAR((b.r->end[k1] - a.r->end[k1]) / 1000.0, d, 0.01);
    CHECK_NEAR((b.r->start[k2] - a.r->start[k2]) / 1000.0, d, 0.01);
    CHECK_NEAR((b.r->end[sync] - a.r->end[sync]) / 1000.0, d, 0.01);
    /* the sync call itself started when it did: only its end waited */
    CHECK_EQ_INT(b.r->start[sync], a.r->start[sync]);
    run_free(&a);
    run_free(&b);
}

/* One fixture; only "other" (on a stream nothing waits for) grows, 50 ->
 * 250 us: it ends 200 us later and nothing else moves. */
TEST(graph_longer_kernel_nobody_waits_for_moves_nothing)
{
    struct run a, b;
    const char *p = sync_fixture("c.json", 500, 50);
    if (replay1(&a, p, NULL) || replay1(&b, p, "name:other=5"))
        return;
    uint32_t other = task_named(a.g, "other");
    REQUIRE(other != MODEL_NONE);
    CHECK_NEAR((b.r->end[other] - a.r->end[other]) / 1000.0, 200, 0.01);
    size_t moved = 0;
    for (uint32_t i = 0; i < a.g->n_tasks; i++)
        moved += i != other && (a.r->start[i] != b.r->start[i] || a.r->end[i] != b.r->end[i]);
    CHECK_EQ_INT(moved, 0);
    CHECK_NEAR(step_us(&b, 0), step_us(&a, 0), 0.01);
    run_free(&a);
    run_free(&b);
}

TEST(graph_gpu_scale_on_a_gpu_bound_step)
{
    struct run a, b;
    const char *p = sync_fixture("e.json", 500, 50);
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    /* k1 + k2 double (600 us more); host work and calls do not */
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), 600, 0.01);
    run_free(&a);
    run_free(&b);
}

/* ---- blocking copies --------------------------------------------------------------- */

TEST(graph_pageable_copy_call_waits_for_its_copy)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    tb_launch(&tb, 10, 5, 7, "long_kernel", 20, 700);
    /* the copy queues behind the kernel; the call returns when it is done */
    tb_copy(&tb, 16, 720 + 10 + 8 - 16, 7, "Memcpy DtoH (Device -> Pageable)", 720, 10);
    const char *p = tb_write(&tb, "pageable.json");
    tb_free(&tb);
    struct run a, b;
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_NEAR(step_us(&a, 0), 1000, 0.01);
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), 710, 0.01);
    run_free(&a);
    run_free(&b);
}

/* ---- event sync -------------------------------------------------------------------- */

TEST(graph_event_sync_from_cuda_sync_events)
{
    struct run a, b;
    const char *p = "tests/fixtures/cuda_sync.json";
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.cuda_sync_event_syncs, 1);
    CHECK_EQ_INT(a.g->stats.inferred_event_syncs, 0);
    /* the consumer kernel (s9) waits for the producer (s7): replayed after it */
    uint32_t prod = MODEL_NONE, cons = MODEL_NONE;
    for (uint32_t i = 0; i < a.g->n_tasks; i++) {
        const char *name = model_graph_str(a.g, a.g->src[i].name);
        if (!strcmp(name, "producer_kernel"))
            prod = i;
        if (!strcmp(name, "consumer_kernel"))
            cons = i;
    }
    CHECK(prod != MODEL_NONE && cons != MODEL_NONE);
    if (prod != MODEL_NONE && cons != MODEL_NONE) {
        CHECK(a.r->start[cons] >= a.r->end[prod]);
        CHECK(b.r->start[cons] >= b.r->end[prod]);
        CHECK_NEAR((b.r->end[prod] - b.r->start[prod]) / 1000.0, 600, 0.01);
    }
    CHECK_NEAR(step_us(&a, 0), 1000, 0.5);
    run_free(&a);
    run_free(&b);
}

/* record on s7 after k1, wait on s13, launch k2 on s13: k2 waits for k1 */
static const char *event_fixture(const char *name, int with_wait)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 900);
    tb_launch(&tb, 10, 5, 7, "k1", 20, 400);
    if (with_wait) {
        tb_call(&tb, TB_MAIN, "cudaEventRecord", 16, 2);
        tb_call(&tb, TB_MAIN, "cudaStreamWaitEvent", 19, 2);
        tb_launch(&tb, 22, 4, 13, "k2", 421, 100);
    } else {
        tb_launch(&tb, 22, 4, 13, "k2", 32, 100);
    }
    tb_call(&tb, TB_MAIN, "cudaDeviceSynchronize", 27, (with_wait ? 521 : 420) + 4 - 27);
    const char *p = tb_write(&tb, name);
    tb_free(&tb);
    return p;
}

TEST(graph_event_sync_inferred_from_record_and_wait)
{
    struct run a, b;
    const char *p = event_fixture("ev.json", 1);
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.inferred_event_syncs, 1);
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_EVENT_SYNC], 1);
    /* k1 400 -> 800 and k2 100 -> 200 in sequence: +500 */
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), 500, 1.0);
    run_free(&a);
    run_free(&b);
}

TEST(graph_no_false_ordering_between_independent_streams)
{
    struct run a, b;
    const char *p = event_fixture("noev.json", 0);
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_EVENT_SYNC], 0);
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_GPU_WAIT], 0);
    /* the streams run side by side: only the longer one (k1) sets the end */
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), 400, 1.0);
    run_free(&a);
    run_free(&b);
}

TEST(graph_event_sync_inference_agrees_with_cuda_sync)
{
    /* the HTA critical-path traces carry cuda_sync events: infer without
     * them and compare with what they say */
    const char *p = th_shared_path("HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz");
    struct model_graph_opts truth, inferred;
    model_graph_opts_default(&truth);
    model_graph_opts_default(&inferred);
    inferred.use_cuda_sync = 0;
    struct run a, b;
    if (replay_with(&a, &p, 1, &truth, NULL) || replay_with(&b, &p, 1, &inferred, NULL))
        return;
    /* its Stream, Event and Context Syncs: inferred from the calls alone,
     * the same waits */
    CHECK(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_SYNC] >= 4);
    CHECK(b.g->stats.edges_by_kind[MODEL_EDGE_HOST_SYNC] >= 4); /* all but a lone query CUPTI called a sync */
    /* the replayed step is the same either way (within 2%) */
    CHECK_NEAR(step_us(&b, 0), step_us(&a, 0), 0.02 * step_us(&a, 0));
    CHECK(fabs(a.r->steps[0].error_pct) < 5);
    run_free(&a);
    run_free(&b);
}

/* ---- inter-thread hand-off ------------------------------------------------------------ */

/* The side thread works (a launch and a sync on its kernel) while the main
 * thread idles `idle_us`; main resumes 30 us after side goes idle. */
static const char *handoff_fixture(const char *name, double kernel_us)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    double side_end = 200 + 10 + kernel_us + 5;
    tb_step(&tb, 1, 0, side_end + 30 + 100);
    tb_launch(&tb, 10, 5, 7, "forward", 20, 50);
    tb_launch_on(&tb, TB_SIDE, 200, 5, 7, "backward", 210, kernel_us);
    tb_call(&tb, TB_SIDE, "cudaStreamSynchronize", 206, side_end - 206);
    tb_launch(&tb, side_end + 30, 5, 7, "optimizer", side_end + 40, 20);
    const char *p = tb_write(&tb, name);
    tb_free(&tb);
    return p;
}

TEST(graph_inter_thread_hand_off)
{
    struct run a, b;
    const char *p = handoff_fixture("ho.json", 3000);
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_INTER_THREAD], 1);
    CHECK_NEAR(step_us(&a, 0), 200 + 10 + 3000 + 5 + 30 + 100, 0.5);
    /* the backward kernel doubles: the main thread resumes 3000 us later */
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), 3000, 1.0);
    run_free(&a);
    run_free(&b);
}

TEST(graph_inter_thread_threshold_is_a_parameter)
{
    struct model_graph_opts o;
    model_graph_opts_default(&o);
    CHECK_EQ_INT(o.inter_thread_gap_ns, MODEL_INTER_THREAD_GAP_NS);
    CHECK_EQ_INT(MODEL_INTER_THREAD_GAP_NS, 1000000);
    o.inter_thread_gap_ns = 5000000; /* longer than the 3 ms idle */
    const char *p = handoff_fixture("ho2.json", 3000);
    struct run a;
    if (replay_with(&a, &p, 1, &o, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_INTER_THREAD], 0);
    run_free(&a);
    /* and a gap shorter than the default is host work, not a wait */
    p = handoff_fixture("ho3.json", 500);
    if (replay1(&a, p, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_INTER_THREAD], 0);
    run_free(&a);
}

/* ---- polling loops ------------------------------------------------------------------- */

/* The host_poll edges into task i. */
static size_t polls_into(const struct model_graph *g, uint32_t i, int32_t *lat)
{
    size_t n = 0;
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_HOST_POLL) {
            n++;
            *lat = g->edges[e].lat;
        }
    return n;
}

/* Queries every 12 us from 40 us until the 500 us kernel k ends at 520:
 * the last starts as it ends and returns 2 us later. A host_poll edge
 * from k into that query, its latency the measured 2 us, and the step
 * follows the kernel: 500 us longer under gpu=2. */
TEST(graph_polling_loop_waits_for_the_gpu)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 700);
    tb_launch(&tb, 10, 5, 7, "k", 20, 500);
    for (int i = 0; i < 41; i++) /* queries every 12 us until the kernel ends */
        tb_call(&tb, TB_MAIN, "hipEventQuery", 40 + 12 * i, 2);
    tb_op(&tb, TB_MAIN, "after", 530, 100);
    const char *p = tb_write(&tb, "poll.json");
    tb_free(&tb);
    struct run a, b;
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_POLL], 1);
    CHECK_EQ_INT(a.g->stats.host_waits_loop, 1);
    CHECK_EQ_INT(a.g->stats.host_waits_gap, 0);
    int32_t lat = 0;
    for (uint32_t i = 0; i < a.g->n_tasks; i++)
        if (polls_into(a.g, i, &lat))
            CHECK_STREQ(model_graph_str(a.g, a.g->src[i].name), "hipEventQuery");
    CHECK_EQ_INT(lat, 2000);
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.1);
    CHECK_NEAR(step_us(&b, 0) - step_us(&a, 0), 500, 5.0);
    run_free(&a);
    run_free(&b);
}

/* Queries that are part of other work stay host work, under gpu=2 too:
 * a caching allocator's (three back to back inside aten::empty, the last
 * returning 1 us after a kernel ends that has more queued behind it), a
 * watchdog thread's (a burst ending 2 us after the main thread's last
 * kernel ends: it launched nothing) and two queries with an op between
 * them, the second returning as that kernel ends. */
TEST(graph_queries_of_other_work_stay_host_work)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    for (int i = 0; i < 4; i++) /* kernels end at 215, 415, 615, 815 */
        tb_launch(&tb, 10 + 10 * i, 5, 7, "gemm", 15 + 200 * i, 200);
    tb_op(&tb, TB_MAIN, "aten::empty", 210, 8);
    for (int i = 0; i < 3; i++)
        tb_call(&tb, TB_MAIN, "cudaEventQuery", 211 + 2 * i, 1);
    tb_call(&tb, TB_MAIN, "cudaStreamQuery", 812, 1);
    tb_op(&tb, TB_MAIN, "aten::add", 814, 1);
    tb_call(&tb, TB_MAIN, "cudaStreamQuery", 816, 1);
    for (int i = 0; i < 4; i++)
        tb_call(&tb, TB_SIDE, "cudaEventQuery", 810 + 2 * i, 1);
    tb_op(&tb, TB_MAIN, "after", 900, 50);
    const char *p = tb_write(&tb, "queries.json");
    tb_free(&tb);
    struct run a, b;
    if (replay1(&a, p, NULL) || replay1(&b, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_POLL], 0);
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_SYNC], 0);
    for (uint32_t i = 0; i < a.g->n_tasks; i++)
        if (a.g->tasks[i].cls == MODEL_TASK_CALL && strstr(model_graph_str(a.g, a.g->src[i].name), "Query"))
            CHECK_EQ_INT(b.r->start[i], a.r->start[i]);
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.1);
    run_free(&a);
    run_free(&b);
}

/* ---- host waits with no call ----------------------------------------------------------- */

/* The main thread launches eight 100 us kernels on stream 7 (a call every
 * 10 us: a usual gap of 5 us), then waits with no runtime call (a library
 * polling host-mapped memory) until gap_end_us; then it launches a 50 us
 * kernel and synchronizes. The kernels end at 115, 215, ..., 815 us. With
 * ops, CPU ops run around every launch and one spans the wait, ending 1 us
 * before the launch after it. */
static const char *poll_fixture(const char *name, double gap_end_us, int with_ops)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    double k8 = gap_end_us + 5, k8_end = (k8 > 815 ? k8 : 815) + 50, end = k8_end + 2 + 6;
    tb_step(&tb, 1, 0, end);
    for (int i = 0; i < 8; i++) {
        if (with_ops)
            tb_op(&tb, TB_MAIN, "aten::mm", 9 + 10 * i, 7);
        tb_launch(&tb, 10 + 10 * i, 5, 7, "gemm", 15 + 100 * i, 100);
    }
    if (with_ops)
        tb_op(&tb, TB_MAIN, "moe::combine_wait", 87, gap_end_us - 88);
    tb_launch(&tb, gap_end_us, 5, 7, "after", k8 > 815 ? k8 : 815, 50);
    tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", gap_end_us + 7, k8_end + 2 - (gap_end_us + 7));
    const char *p = tb_write(&tb, name);
    tb_free(&tb);
    return p;
}

/* The call launching "after", the first after the wait. */
static uint32_t call_after_gap(const struct model_graph *g)
{
    uint32_t k = task_named(g, "after");
    for (uint32_t e = k == MODEL_NONE ? 0 : g->pred_at[k]; k != MODEL_NONE && e < g->pred_at[k + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_LAUNCH)
            return g->edges[e].from;
    return MODEL_NONE;
}

/* A gap that ends (gap_end_us) near the end of the last kernel queued
 * when it began (815 us): a host_poll edge into the call after it, its
 * latency the measured offset (negative when the host resumed first); the
 * gap keeps its recorded host work (with ops: 85 to 87 us and 816 to 817,
 * 3 us; none without), and the step follows the GPU: it reproduces the
 * measured step, shrinks under gpu=0.5 and grows under gpu=2 by the
 * kernels' change (400 us less, 800 us more, the kernel after the wait
 * included: 425 and 850). The critical path under gpu=2 names the wait
 * and inspect counts it. */
static void check_poll(const char *name, double gap_end_us, int with_ops)
{
    struct run a, half, twice;
    const char *p = poll_fixture(name, gap_end_us, with_ops);
    if (replay1(&a, p, NULL) || replay1(&half, p, "gpu=0.5") || replay1(&twice, p, "gpu=2"))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_POLL], 1);
    CHECK_EQ_INT(a.g->stats.host_waits_gap, 1);
    uint32_t c = call_after_gap(a.g);
    REQUIRE(c != MODEL_NONE);
    CHECK_EQ_INT(a.g->tasks[c].gap, with_ops ? 3000 : 0);
    int32_t lat = 0;
    CHECK_EQ_INT(polls_into(a.g, c, &lat), 1);
    CHECK_EQ_INT(lat, (int32_t)llround((gap_end_us - 815) * 1000));
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.1);
    CHECK_NEAR(step_us(&a, 0) - step_us(&half, 0), 425, 1.0);
    CHECK_NEAR(step_us(&twice, 0) - step_us(&a, 0), 850, 1.0);
    json_t *cp = api_critical_path_json(twice.r), *seg;
    size_t i, named = 0;
    json_array_foreach(json_object_get(json_array_get(json_object_get(cp, "steps"), 0), "path"), i, seg)
        named += json_string_value(json_object_get(seg, "wait")) &&
                 strcmp(json_string_value(json_object_get(seg, "wait")), "host waits on gemm") == 0;
    CHECK_EQ_INT(named, 1);
    json_decref(cp);
    struct sc_error err;
    json_t *doc = api_inspect_job_json(a.job, a.g, &err);
    json_t *w = json_array_get(json_object_get(doc, "host_waits"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "host_waits")), 1);
    CHECK_STREQ(json_string_value(json_object_get(w, "on")), "gemm");
    CHECK_EQ_INT(json_integer_value(json_object_get(w, "without_call")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(w, "polling_loops")), 0);
    json_decref(doc);
    run_free(&a);
    run_free(&half);
    run_free(&twice);
}

TEST(graph_host_poll_inside_a_cpu_op) { check_poll("poll_ops.json", 817, 1); }

/* The same wait on a thread traced by its runtime calls alone (as CUPTI
 * traces one): silent between calls whatever it runs, so its gap stays
 * host work. */
TEST(graph_host_gap_of_a_thread_without_ops_stays_host_work)
{
    struct run a;
    const char *p = poll_fixture("poll_bare.json", 817, 0);
    if (replay1(&a, p, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_POLL], 0);
    CHECK_EQ_INT(a.g->stats.host_waits_gap, 0);
    uint32_t c = call_after_gap(a.g);
    REQUIRE(c != MODEL_NONE);
    CHECK(a.g->tasks[c].gap > 700000); /* the whole gap, 87 to 817 us, less the last launch */
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.1);
    run_free(&a);
}

/* The host (its operators traced) sees the last gemm's flag 40 us before
 * it ends (at 775 us) and
 * launches "after" on stream 8, which nothing else holds: the edge keeps
 * the offset, -40 us, the step reproduces, and under gpu=2 the gemm runs
 * to 1615 us and the launch of "after" starts at 1575: the critical path
 * names the last gemm's run up to it as the host's wait, tiling the step. */
TEST(graph_host_poll_resumes_before_the_kernel_ends)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 860);
    for (int i = 0; i < 8; i++) {
        tb_op(&tb, TB_MAIN, "aten::mm", 9 + 10 * i, 7);
        tb_launch(&tb, 10 + 10 * i, 5, 7, "gemm", 15 + 100 * i, 100);
    }
    tb_launch(&tb, 775, 5, 8, "after", 780, 50);
    tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 782, 50);
    const char *p = tb_write(&tb, "poll_early.json");
    tb_free(&tb);
    struct run a, twice;
    if (replay1(&a, p, NULL) || replay1(&twice, p, "gpu=2"))
        return;
    uint32_t c = call_after_gap(a.g);
    int32_t lat = 0;
    REQUIRE(c != MODEL_NONE);
    CHECK_EQ_INT(polls_into(a.g, c, &lat), 1);
    CHECK_EQ_INT(lat, -40000);
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.1);
    CHECK_NEAR((double)(twice.r->start[c] - twice.r->steps[0].start) / 1000.0, 1575, 1.0);
    const struct model_replay_step *st = &twice.r->steps[0];
    size_t named = 0;
    int64_t at = st->start;
    for (size_t k = st->path_first; k < st->path_first + st->path_n; k++) {
        const struct model_replay_segment *sg = &twice.r->segments[k];
        CHECK_EQ_INT(sg->start, at);
        at = sg->end;
        named += sg->edge == MODEL_EDGE_HOST_POLL && sg->task == sg->on && sg->end == twice.r->start[c] &&
                 a.r->end[sg->on] - a.r->steps[0].start == 815000; /* the last gemm */
    }
    CHECK_EQ_INT(at, st->end);
    CHECK_EQ_INT(named, 1);
    run_free(&a);
    run_free(&twice);
}

/* Long gaps that end nowhere near the end of the work queued when they
 * began stay host work: one ending while the GPU is mid-kernel (600 us),
 * one ending 2 us after a kernel that had more queued behind it (717 us:
 * the seventh kernel's end, the eighth queued and ending 98 us later,
 * beyond MODEL_HOST_POLL_EARLY_NS). The gap is kept whole and the call
 * after it starts when it did, under gpu=0.5 too. */
TEST(graph_host_gap_far_from_gpu_ends_stays_host_work)
{
    static const double ends[] = {600, 717};
    for (int k = 0; k < 2; k++) {
        struct run a, half;
        const char *p = poll_fixture(k ? "gap717.json" : "gap600.json", ends[k], 1);
        if (replay1(&a, p, NULL) || replay1(&half, p, "gpu=0.5"))
            return;
        CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_POLL], 0);
        uint32_t c = call_after_gap(a.g);
        REQUIRE(c != MODEL_NONE);
        CHECK_EQ_INT(a.g->tasks[c].gap, (int64_t)(ends[k] - 85) * 1000);
        CHECK_EQ_INT(half.r->start[c], a.r->start[c]);
        CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.1);
        run_free(&a);
        run_free(&half);
    }
}

/* A gap whose host work is recorded (ops through it, none idle for long)
 * stays host work, even ending just as the last kernel queued ends; so
 * does a gap before a call that waits itself (a query loop after it is
 * the wait). */
TEST(graph_host_gap_with_recorded_work_stays_host_work)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    for (int i = 0; i < 8; i++)
        tb_launch(&tb, 10 + 10 * i, 5, 7, "gemm", 15 + 100 * i, 100);
    for (int i = 0; i < 14; i++) /* ops every 52 us from 86 to 815 */
        tb_op(&tb, TB_MAIN, "aten::add", 86 + 52 * i, 40);
    tb_launch(&tb, 817, 5, 7, "after", 822, 50);
    tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 824, 50);
    const char *p = tb_write(&tb, "busy_gap.json");
    tb_free(&tb);
    struct run a;
    if (replay1(&a, p, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.edges_by_kind[MODEL_EDGE_HOST_POLL], 0);
    run_free(&a);

    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    for (int i = 0; i < 8; i++)
        tb_launch(&tb, 10 + 10 * i, 5, 7, "gemm", 15 + 100 * i, 100);
    for (int i = 0; i < 4; i++) /* a loop from 790: the last query finds the work done */
        tb_call(&tb, TB_MAIN, "cudaEventQuery", 790 + 10 * i, 2);
    tb_op(&tb, TB_MAIN, "after", 830, 50);
    p = tb_write(&tb, "gap_then_loop.json");
    tb_free(&tb);
    if (replay1(&a, p, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.host_waits_gap, 0);
    CHECK_EQ_INT(a.g->stats.host_waits_loop, 1);
    run_free(&a);
}

/* ---- collectives and clocks ------------------------------------------------------------- */

/* Ranks 0 and 1 of `world` (distributedInfo, with pg_config when not
 * NULL): compute then an all-reduce with the kernel args `args` (NULL:
 * none); rank 1 launches later, so rank 0's all-reduce waits. Rank 1's
 * clock runs `skew` us ahead. */
static void coll_pair(const char *names[2], double skew, double compute1_us, int world, const char *pg_config,
                      const char *args)
{
    static char paths[2][512];
    for (int r = 0; r < 2; r++) {
        struct tb tb;
        double off = r ? skew : 0, compute = r ? compute1_us : 200;
        double arrive = 20 + compute + (r ? 300 : 0); /* rank 1's host is slower */
        double end = 20 + 200 + 300 + 400;           /* both leave together */
        tb_init_pgs(&tb, r, world, pg_config);
        tb_step(&tb, 1, off, end + 10 + 50);
        tb_launch(&tb, off + 10, 5, 7, "gemm", off + 20, compute);
        tb_call(&tb, TB_MAIN, "cudaEventRecord", off + arrive - 16, 2);
        tb_call(&tb, TB_MAIN, "cudaStreamWaitEvent", off + arrive - 13, 2);
        int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", off + arrive - 10, 5);
        tb_kernel_args(&tb, corr, 13, "ncclKernel_AllReduce_RING_LL_Sum_float", off + arrive, end - arrive, args);
        tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", off + arrive, end + 10 - arrive);
        snprintf(paths[r], sizeof paths[r], "%s", tb_write(&tb, r ? "coll1.json" : "coll0.json"));
        names[r] = paths[r];
        tb_free(&tb);
    }
}

/* The two ranks as the whole job, their all-reduce sized, in process
 * group 0 of 2. */
static void collective_fixture(const char *names[2], double skew, double compute1_us)
{
    coll_pair(names, skew, compute1_us, 2, NULL,
              "\"Collective name\": \"allreduce\", \"In msg nelems\": 1024, \"Out msg nelems\": 1024, "
              "\"Group size\": 2, \"dtype\": \"Float\", \"Process Group Name\": \"0\"");
}

/* Two ranks, one collective each, launched onto different stream ids (13
 * and 21): only the process group and sequence number tell that they are
 * one collective. `seq` < 0 leaves "Seq" out. */
static void pg_fixture(const char *names[2], const char *coll, const char *kernel, long in_n, long out_n, long seq)
{
    static char paths[2][512];
    for (int r = 0; r < 2; r++) {
        struct tb tb;
        char args[512];
        double arrive = 20 + 200 + (r ? 300 : 0), end = 20 + 200 + 300 + 400;
        tb_init(&tb, r, 2);
        tb_step(&tb, 1, 0, end + 10 + 50);
        tb_launch(&tb, 10, 5, 7, "gemm", 20, 200);
        int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", arrive - 10, 5);
        int n = snprintf(args, sizeof args,
                         "\"Collective name\": \"%s\", \"In msg nelems\": %ld, \"Out msg nelems\": %ld, "
                         "\"Group size\": 2, \"dtype\": \"BFloat16\", \"Process Group Name\": \"7\"",
                         coll, in_n, out_n);
        if (seq >= 0)
            snprintf(args + n, sizeof args - (size_t)n, ", \"Seq\": %ld", seq);
        tb_kernel_args(&tb, corr, r ? 21 : 13, kernel, arrive, end - arrive, args);
        tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", arrive, end + 10 - arrive);
        snprintf(paths[r], sizeof paths[r], "%s", tb_write(&tb, r ? "pg1.json" : "pg0.json"));
        names[r] = paths[r];
        tb_free(&tb);
    }
}

TEST(graph_collectives_grouped_by_process_group_and_sequence)
{
    const char *p[2];
    struct run a;
    pg_fixture(p, "allreduce", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 1024, 1024, 5);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.collectives_matched, 1);
    REQUIRE(a.g->n_groups == 1);
    const struct model_coll_group *cg = &a.g->groups[0];
    CHECK_EQ_INT(cg->op, MODEL_COLL_ALLREDUCE);
    CHECK_EQ_INT(cg->bytes, 1024 * 2); /* the buffer: 1024 bf16 */
    CHECK_STREQ(model_graph_str(a.g, cg->dtype), "BFloat16");
    CHECK_STREQ(model_graph_str(a.g, cg->pg), "7");
    CHECK_EQ_INT(cg->seq, 5);
    CHECK_EQ_INT(cg->size, 2);
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.5);
    CHECK_NEAR(a.r->steps[1].error_pct, 0, 0.5);
    run_free(&a);
    /* all-gather: the total output */
    pg_fixture(p, "_allgather_base", "ncclDevKernel_AllGather_RING_LL", 512, 1024, 9);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    REQUIRE(a.g->n_groups == 1);
    CHECK_EQ_INT(a.g->groups[0].op, MODEL_COLL_ALLGATHER);
    CHECK_EQ_INT(a.g->groups[0].bytes, 1024 * 2);
    run_free(&a);
    /* reduce-scatter: the total input */
    pg_fixture(p, "_reduce_scatter_base", "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", 1024, 512, 9);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    REQUIRE(a.g->n_groups == 1);
    CHECK_EQ_INT(a.g->groups[0].bytes, 1024 * 2);
    run_free(&a);
    /* without a sequence number, by stream: 13 and 21 are no match, and
     * each rank keeps its traced time, in a group of its own that holds
     * what the trace says of the collective (for the split, replay.h) */
    pg_fixture(p, "allreduce", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 1024, 1024, -1);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.collectives_matched, 0);
    CHECK_EQ_INT(a.g->stats.collectives_kept, 2);
    REQUIRE(a.g->n_groups == 2);
    for (size_t k = 0; k < 2; k++) {
        CHECK_EQ_INT(a.g->group_at[k + 1] - a.g->group_at[k], 1);
        CHECK(a.g->tasks[a.g->group_tasks[a.g->group_at[k]]].kept);
        CHECK_EQ_INT(a.g->groups[k].size, 2);
        CHECK_EQ_INT(a.g->groups[k].bytes, 1024 * 2);
    }
    run_free(&a);
}

TEST(graph_collective_waits_for_the_last_rank)
{
    const char *p[2];
    collective_fixture(p, 0, 200);
    struct run a;
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    CHECK_EQ_INT(a.g->stats.collectives_matched, 1);
    CHECK_EQ_INT(a.g->stats.collectives_kept, 0);
    CHECK_EQ_INT(a.r->n_steps, 2);
    /* both ranks reproduce their measured step */
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.5);
    CHECK_NEAR(a.r->steps[1].error_pct, 0, 0.5);
    /* the members end together */
    uint32_t m0 = a.g->group_tasks[a.g->group_at[0]], m1 = a.g->group_tasks[a.g->group_at[0] + 1];
    CHECK_EQ_INT(a.r->end[m0], a.r->end[m1]);
    /* the intrinsic time is the last arriver's: 400 us */
    CHECK_NEAR(a.g->tasks[m0].dur / 1000.0, 400, 0.01);
    run_free(&a);
}

TEST(graph_straggler_propagates_through_the_collective)
{
    const char *p[2];
    collective_fixture(p, 0, 200);
    const char *slow[] = {"gpu@1=4", "comm@1=4", NULL}; /* gpu leaves communication out */
    struct run a, b;
    if (replay_with(&a, p, 2, NULL, NULL) || replay_with(&b, p, 2, NULL, slow))
        return;
    /* rank 1's gemm: 200 -> 800 us; its all-reduce waits for it, so it
     * arrives 300 us later than it did (it had 300 us of host slack), and
     * the transfer, 4x slower on rank 1 (comm@1=4), takes 1200 us more;
     * rank 0 waits for all of it */
    CHECK(b.r->steps[1].replayed_ns > a.r->steps[1].replayed_ns);
    CHECK(b.r->steps[0].replayed_ns > a.r->steps[0].replayed_ns);
    CHECK_NEAR((b.r->steps[0].replayed_ns - a.r->steps[0].replayed_ns) / 1000.0, 300 + 1200, 2.0);
    run_free(&a);
    run_free(&b);
}

/* Four ranks: a 200 us GEMM from 20 us, then (after host work) the
 * all-reduce launched at 510 us, ready at 520 us; it waits for the GEMM
 * through an event, so each rank has 300 us of slack before the GEMM would
 * hold it back; all-reduce 400 us. */
#define STRAGGLER_RANKS 4
static void straggler_fixture(const char *names[STRAGGLER_RANKS])
{
    static char paths[STRAGGLER_RANKS][512];
    for (int r = 0; r < STRAGGLER_RANKS; r++) {
        struct tb tb;
        char file[32];
        double arrive = 520, end = 920;
        tb_init(&tb, r, STRAGGLER_RANKS);
        tb_step(&tb, 1, 0, end + 10 + 50);
        tb_launch(&tb, 10, 5, 7, "gemm", 20, 200);
        tb_call(&tb, TB_MAIN, "cudaEventRecord", 16, 2);
        tb_call(&tb, TB_MAIN, "cudaStreamWaitEvent", arrive - 13, 2);
        int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", arrive - 10, 5);
        tb_kernel_args(&tb, corr, 13, "ncclKernel_AllReduce_RING_LL_Sum_float", arrive, end - arrive,
                       "\"Collective name\": \"allreduce\", \"In msg nelems\": 1024, \"Group size\": 4, "
                       "\"dtype\": \"Float\", \"Process Group Name\": \"0\", \"Seq\": 1");
        tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", arrive, end + 10 - arrive);
        snprintf(file, sizeof file, "straggler%d.json", r);
        snprintf(paths[r], sizeof paths[r], "%s", tb_write(&tb, file));
        names[r] = paths[r];
        tb_free(&tb);
    }
}

/* Rank 2's GEMM x4: 800 us, ending at 820 us, 300 us past its slack: the
 * all-reduce starts 300 us later on every rank, so every step grows by
 * 300 us (within 1%). x2.5 (500 us) just uses up the slack: nothing grows. */
TEST(graph_straggler_delays_every_rank_by_its_excess_over_the_slack)
{
    const char *p[STRAGGLER_RANKS];
    straggler_fixture(p);
    const char *slow[] = {"kernel@2=4", NULL}, *within[] = {"kernel@2=2.5", NULL};
    struct run a, b, c;
    if (replay_with(&a, p, STRAGGLER_RANKS, NULL, NULL))
        return;
    if (replay_with(&b, p, STRAGGLER_RANKS, NULL, slow) || replay_with(&c, p, STRAGGLER_RANKS, NULL, within)) {
        run_free(&a);
        return;
    }
    CHECK_EQ_INT(a.g->stats.collectives_matched, 1);
    REQUIRE(a.r->n_steps == STRAGGLER_RANKS && b.r->n_steps == STRAGGLER_RANKS);
    for (size_t i = 0; i < STRAGGLER_RANKS; i++) {
        CHECK_NEAR(a.r->steps[i].error_pct, 0, 0.5);
        CHECK_NEAR(step_us(&b, i) - step_us(&a, i), 300, 3.0);
        CHECK_NEAR(step_us(&c, i) - step_us(&a, i), 0, 3.0);
    }
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

TEST(graph_clocks_aligned_on_collectives)
{
    const char *p[2];
    collective_fixture(p, 5000, 200); /* rank 1's clock 5 ms ahead */
    struct run a;
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    CHECK_NEAR(a.g->ranks[1].clock_offset_ns / 1e6, 5.0, 0.001);
    CHECK_NEAR(a.r->steps[0].error_pct, 0, 0.5);
    CHECK_NEAR(a.r->steps[1].error_pct, 0, 0.5);
    run_free(&a);
}

TEST(graph_single_rank_keeps_collective_durations)
{
    const char *p[2];
    collective_fixture(p, 0, 200);
    struct run a;
    if (replay_with(&a, p, 1, NULL, NULL)) /* rank 0 alone */
        return;
    CHECK_EQ_INT(a.g->stats.collectives_kept, 1);
    CHECK_NEAR(a.r->steps[0].collective_kept_ns / 1000.0, 700, 0.5); /* its traced 700 us */
    run_free(&a);
}

/* The pair's collective as the graph groups it: matched across the two
 * ranks, a group of `size`, or kept on each, which the replay's split
 * times among `size` ranks (estimator/whatif/coll_split.h). */
static void check_pair_groups(const struct run *a, int matched, int64_t size)
{
    const struct model_graph *g = a->g;
    CHECK_EQ_INT(g->stats.collectives_matched, matched);
    CHECK_EQ_INT(g->stats.collectives_kept, matched ? 0 : 2);
    CHECK_EQ_INT(g->n_groups, matched ? 1 : 2);
    for (size_t k = 0; k < g->n_groups; k++)
        CHECK_EQ_INT(matched ? (int64_t)g->groups[k].size
                             : whatif_coll_split_kept_ranks(g, g->group_tasks[g->group_at[k]], a->job->ranks[0]->world_size),
                     size);
}

/* Two ranks of a larger job traced: a collective's group is as large as
 * distributedInfo says (its process group's pg_size, else the world),
 * never the two ranks that matched. One with untraced members is kept on
 * each rank, which then replays as it does alone (its peers run like it);
 * one whose members were all traced is matched. */
TEST(graph_sampled_ranks_group_sizes_from_distributed_info)
{
    const char *p[2];
    struct run a, one;
    /* no collective args, 2 ranks of 8: the world */
    coll_pair(p, 0, 200, 8, NULL, NULL);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    check_pair_groups(&a, 0, 8);
    CHECK_EQ_INT(a.g->ranks[1].clock_offset_ns, 0); /* nothing to align the clocks on */
    REQUIRE(a.r->n_steps == 2);
    for (size_t r = 0; r < 2; r++) {
        if (replay_with(&one, p + r, 1, NULL, NULL))
            break;
        CHECK_EQ_INT(a.r->steps[r].replayed_ns, one.r->steps[0].replayed_ns);
        CHECK_EQ_INT(a.r->steps[r].collective_kept_ns, one.r->steps[0].collective_kept_ns);
        run_free(&one);
    }
    CHECK_NEAR(a.r->steps[0].collective_kept_ns / 1000.0, 700, 0.5); /* rank 0's traced time */
    run_free(&a);
    /* the same two ranks as the whole job: matched */
    coll_pair(p, 0, 200, 2, NULL, NULL);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    check_pair_groups(&a, 1, 2);
    run_free(&a);
    /* by process group and sequence number, no group size on the kernel:
     * pg_config's size, 2 of the 8 ranks, both traced */
    static const char *const pg_args = "\"Collective name\": \"allreduce\", \"Process Group Name\": \"3\", \"Seq\": 1";
    coll_pair(p, 0, 200, 8, "[{\"pg_name\": \"3\", \"pg_desc\": \"pair\", \"pg_size\": 2, \"ranks\": [0, 1]}]",
              pg_args);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    check_pair_groups(&a, 1, 2);
    run_free(&a);
    /* ... of 4 ranks, two of them untraced */
    coll_pair(p, 0, 200, 8, "[{\"pg_name\": \"3\", \"pg_size\": 4, \"ranks\": [0, 1, 2, 3]}]", pg_args);
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    check_pair_groups(&a, 0, 4);
    run_free(&a);
    /* the kernel's group size comes first */
    coll_pair(p, 0, 200, 8, "[{\"pg_name\": \"3\", \"pg_size\": 4, \"ranks\": [0, 1, 2, 3]}]",
              "\"Collective name\": \"allreduce\", \"Process Group Name\": \"3\", \"Seq\": 1, \"Group size\": 2");
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    check_pair_groups(&a, 1, 2);
    run_free(&a);
}

/* ---- results ------------------------------------------------------------------------------ */

static void check_step_accounting(const struct model_replay *r)
{
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        const struct model_breakdown *b = &s->breakdown;
        CHECK_EQ_INT(b->compute_exposed + b->overlap + b->comm_exposed + b->host + b->idle, s->replayed_ns);
        int64_t sum = 0, cur = s->start;
        for (size_t k = s->path_first; k < s->path_first + s->path_n; k++) {
            const struct model_replay_segment *sg = &r->segments[k];
            CHECK_EQ_INT(sg->start, cur); /* contiguous */
            CHECK(sg->end > sg->start);
            sum += sg->end - sg->start;
            cur = sg->end;
        }
        CHECK_EQ_INT(sum, s->replayed_ns);
    }
}

TEST(graph_breakdown_and_critical_path_sum_to_the_step)
{
    const char *p[2];
    collective_fixture(p, 0, 200);
    struct run a;
    if (replay_with(&a, p, 2, NULL, NULL))
        return;
    check_step_accounting(a.r);
    run_free(&a);
    if (replay1(&a, sync_fixture("acc.json", 500, 50), "gpu=3"))
        return;
    check_step_accounting(a.r);
    run_free(&a);
}

TEST(graph_real_traces_accounting)
{
    const char *p = th_shared_path("param/et_replay/tests/inputs/dlrm_kineto.tar.gz");
    struct run a;
    if (replay_with(&a, &p, 1, NULL, NULL))
        return;
    check_step_accounting(a.r);
    run_free(&a);
    p = th_shared_path("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz");
    if (replay_with(&a, &p, 1, NULL, NULL))
        return;
    check_step_accounting(a.r);
    run_free(&a);
}

TEST(graph_timeline_is_a_trace_stepcast_reads_back)
{
    const char *p[2];
    collective_fixture(p, 0, 200);
    const char *slow[] = {"gpu=2", NULL};
    struct run a;
    if (replay_with(&a, p, 2, NULL, slow))
        return;
    for (int rank = 0; rank < 2; rank++) {
        json_t *doc = api_timeline_json(a.r, rank);
        CHECK(doc != NULL);
        if (!doc)
            continue;
        char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
        json_decref(doc);
        struct model_trace *t = NULL;
        struct sc_error err;
        CHECK(model_trace_load_mem(text, strlen(text), "timeline", NULL, &t, &err) == SC_OK);
        free(text);
        if (!t)
            continue;
        CHECK_EQ_INT(t->rank, rank);
        CHECK_EQ_INT(t->n_steps, 1);
        /* the re-read step lasts what the replay said */
        CHECK_NEAR((double)(t->steps[0].end - t->steps[0].start), (double)a.r->steps[rank].replayed_ns, 2.0);
        model_trace_free(t);
    }
    CHECK(api_timeline_json(a.r, 7) == NULL);
    run_free(&a);
}

/* A replayed timeline keeps its trace's distributedInfo (HTA reads the
 * rank and the process groups from it): written, read back by stepcast and
 * as JSON. */
TEST(graph_timeline_keeps_distributed_info)
{
    const char *args[] = {"--steps", "1", "--layers", "2", NULL};
    struct model_job *job = th_gentrace_job(3, args);
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    struct sc_error err;
    if (!job)
        return;
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    json_t *doc = api_timeline_json(r, 2);
    REQUIRE(doc != NULL);
    json_t *di = json_object_get(doc, "distributedInfo");
    CHECK_EQ_INT(json_integer_value(json_object_get(di, "rank")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(di, "world_size")), 3);
    CHECK_STREQ(json_string_value(json_object_get(di, "backend")), "nccl");
    CHECK_STREQ(json_string_value(json_object_get(di, "nccl_version")), "2.21.5");
    CHECK_EQ_INT(json_integer_value(json_object_get(di, "pg_count")), 1);
    json_t *pg = json_array_get(json_object_get(di, "pg_config"), 0);
    CHECK_STREQ(json_string_value(json_object_get(pg, "pg_name")), "0");
    CHECK_STREQ(json_string_value(json_object_get(pg, "pg_desc")), "default_pg");
    CHECK_EQ_INT(json_integer_value(json_object_get(pg, "pg_size")), 3);
    CHECK_STREQ(json_string_value(json_object_get(pg, "ranks")), "all");
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    struct model_trace *t = NULL;
    REQUIRE(text && model_trace_load_mem(text, strlen(text), "timeline", NULL, &t, &err) == SC_OK);
    free(text);
    CHECK_EQ_INT(t->rank, 2);
    CHECK_EQ_INT(t->world_size, 3);
    CHECK_EQ_INT(t->n_pgs, 1);
    CHECK_STREQ(model_str(t, t->backend), "nccl");
    model_trace_free(t);
    model_replay_free(r);
    model_graph_free(g);
    model_job_free(job);
}

TEST(graph_replay_rejects_bad_options)
{
    struct model_replay_opts o;
    struct sc_error err;
    model_replay_opts_default(&o);
    CHECK_EQ_INT(model_replay_parse_scale("disk=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("kernel:=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("kernel:x@=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("gpu=-1", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("gpu=1001", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("family:nosuch=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("marker=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("gpu@=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("name:*a*a*a*a*a*a*a*a*b=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("name:*a*a*a*a*a*a*a*b=2", &o, &err), SC_OK);
    CHECK_EQ_INT(model_replay_parse_scale("gpu=0", &o, &err), SC_OK); /* that work takes no time */
    CHECK_EQ_INT(model_replay_parse_scale("gpu=abc", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("gpu@x=2", &o, &err), SC_EINVAL);
    CHECK_EQ_INT(model_replay_parse_scale("comm=0", &o, &err), SC_OK);
    CHECK_EQ_INT(model_replay_parse_scale("cpu=0.5", &o, &err), SC_OK);
    CHECK_EQ_INT(model_replay_parse_scale("kernel:a*b@c=1", &o, &err), SC_OK); /* text, not a rank */
    CHECK_STREQ(o.factors[o.n_factors - 1].pattern, "*a\\*b@c*");
    CHECK_EQ_INT(model_replay_parse_scale("gpu@3=2", &o, &err), SC_OK);
    struct model_graph_opts go;
    model_graph_opts_default(&go);
    CHECK_EQ_INT(model_graph_parse_steps("5-3", &go, &err), SC_EINVAL);
    CHECK_EQ_INT(model_graph_parse_steps("3-5", &go, &err), SC_OK);
    CHECK_EQ_INT(go.first_step, 3);
    CHECK_EQ_INT(go.last_step, 5);
    /* a scale naming a rank the job lacks */
    struct run a;
    const char *path = sync_fixture("bad.json", 100, 10);
    struct model_job *job = tb_job(&path, 1);
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    CHECK(job && model_graph_build(job, NULL, &g, &err) == SC_OK);
    if (g) {
        CHECK_EQ_INT(model_replay_run(g, &o, &r, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, "no rank 3");
    }
    model_graph_free(g);
    model_job_free(job);
    (void)a;
    /* no step in the range */
    model_graph_opts_default(&go);
    go.first_step = 50;
    go.last_step = 60;
    job = tb_job(&path, 1);
    CHECK(job && model_graph_build(job, &go, &g, &err) == SC_EINVAL);
    CHECK_CONTAINS(err.msg, "no step numbered 50-60: its ");
    model_job_free(job);
}

/* The slowest step is the longest replayed one, the first of equals (an
 * estimate's step time and breakdown are that step's), NULL with none. */
TEST(graph_replay_slowest_is_the_longest_step_first_of_equals)
{
    struct model_replay_step steps[4] = {
        {.rank = 0, .replayed_ns = 5}, {.rank = 1, .replayed_ns = 9},
        {.rank = 2, .replayed_ns = 9}, {.rank = 3, .replayed_ns = 7},
    };
    struct model_replay r = {.steps = steps, .n_steps = 4};
    CHECK(model_replay_slowest(&r) == &steps[1]);
    steps[3].replayed_ns = 10;
    CHECK(model_replay_slowest(&r) == &steps[3]);
    r.n_steps = 1;
    CHECK(model_replay_slowest(&r) == &steps[0]);
    r.n_steps = 0;
    CHECK(model_replay_slowest(&r) == NULL);
}

/* The job of traces p[0..n) built whole and for inspection only
 * (model_graph_opts.inspect_only): the latter holds what inspect reads of
 * the former, the collectives matched across ranks (their keys, members
 * and durations) and the host's waits, and a replay refuses it. Adds the
 * groups and the waits (gaps, polling loops) compared. */
static void check_inspect_only(const char *const *p, size_t n, size_t *groups, size_t *gaps, size_t *loops)
{
    struct model_job *job = NULL;
    struct model_graph *g[2] = {NULL, NULL};
    struct sc_error err;
    CHECK_EQ_INT(model_job_load(p, n, NULL, 0, &job, &err), SC_OK);
    for (int lean = 0; job && lean < 2; lean++) {
        struct model_graph_opts o;
        model_graph_opts_default(&o);
        o.inspect_only = lean;
        CHECK_EQ_INT(model_graph_build(job, &o, &g[lean], &err), SC_OK);
    }
    if (g[0] && g[1]) {
        CHECK_EQ_INT(g[1]->n_tasks, g[0]->n_tasks);
        CHECK(g[1]->n_edges <= g[0]->n_edges);
        CHECK_EQ_INT(g[1]->n_groups, g[0]->n_groups);
        CHECK_EQ_INT(g[1]->stats.collectives_matched, g[0]->stats.collectives_matched);
        for (size_t i = 0; i < g[0]->n_groups && g[1]->n_groups == g[0]->n_groups; i++) {
            const struct model_coll_group *a = &g[0]->groups[i], *b = &g[1]->groups[i];
            CHECK(a->op == b->op && a->bytes == b->bytes && a->seq == b->seq && a->size == b->size);
            CHECK_STREQ(model_graph_str(g[1], b->pg), model_graph_str(g[0], a->pg));
            CHECK_EQ_INT(g[1]->group_at[i + 1] - g[1]->group_at[i], g[0]->group_at[i + 1] - g[0]->group_at[i]);
            for (uint32_t m = g[0]->group_at[i]; m < g[0]->group_at[i + 1]; m++) {
                const struct model_task *x = &g[0]->tasks[g[0]->group_tasks[m]];
                const struct model_task *y = &g[1]->tasks[g[1]->group_tasks[m]];
                CHECK(x->rank == y->rank && x->dur == y->dur && x->kept == y->kept);
            }
            (*groups)++;
        }
        struct model_host_wait *w[2];
        size_t nw[2];
        CHECK_EQ_INT(model_graph_host_waits(g[0], &w[0], &nw[0]), SC_OK);
        CHECK_EQ_INT(model_graph_host_waits(g[1], &w[1], &nw[1]), SC_OK);
        CHECK_EQ_INT(nw[1], nw[0]);
        for (size_t i = 0; i < nw[0] && nw[1] == nw[0]; i++) {
            CHECK(w[0][i].rank == w[1][i].rank && w[0][i].without_call == w[1][i].without_call &&
                  w[0][i].polling_loops == w[1][i].polling_loops);
            CHECK_STREQ(model_graph_str(g[1], w[1][i].name), model_graph_str(g[0], w[0][i].name));
            *gaps += w[0][i].without_call;
            *loops += w[0][i].polling_loops;
        }
        free(w[0]);
        free(w[1]);
        struct model_replay *r = NULL;
        CHECK_EQ_INT(model_replay_run(g[1], NULL, &r, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, "inspection only");
        CHECK(r == NULL);
        CHECK_EQ_INT(model_replay_run(g[0], NULL, &r, &err), SC_OK);
        model_replay_free(r);
    }
    model_graph_free(g[0]);
    model_graph_free(g[1]);
    model_job_free(job);
}

/* On the shared traces and jobs that have collectives and polling loops,
 * and a trace whose host waited through a gap (poll_fixture). */
TEST(graph_inspect_only_holds_what_inspect_reads)
{
    static const char *const jobs[][2] = {
        {"param/et_replay/tests/inputs/dlrm_kineto.tar.gz", NULL},
        {"HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz", NULL},
        {"HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz", NULL},
        {"HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
         "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz"},
    };
    size_t groups = 0, gaps = 0, loops = 0;
    const char *poll = poll_fixture("inspect_only_poll.json", 816, 1);
    check_inspect_only(&poll, 1, &groups, &gaps, &loops);
    CHECK_EQ_INT(gaps, 1);
    for (size_t k = 0; k < sizeof jobs / sizeof *jobs; k++) {
        char paths[2][1024];
        const char *p[2];
        size_t n = 0;
        for (; n < 2 && jobs[k][n]; n++) {
            snprintf(paths[n], sizeof paths[n], "%s", th_shared_path(jobs[k][n]));
            p[n] = paths[n];
        }
        check_inspect_only(p, n, &groups, &gaps, &loops);
    }
    CHECK(groups > 0); /* the jobs hold matched collectives */
    CHECK(loops > 0);  /* and polling loops */
}
