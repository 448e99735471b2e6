/* tests/golden/test_golden_replay.c: the replay of every shared trace with
 * steps, pinned (tests/golden/replay/<name>.json), and its response to
 * changed durations (DESIGN.md §4): a replay that copied measured waits
 * would reproduce the measured steps and fail every check here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/replay_json.h"
#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/json_compare.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

struct run {
    struct model_job *job;
    struct est_traced_model *m; /* the job opened (estimator/model_open.h) */
    const struct model_graph *g;
    struct model_replay *r;
};

static void run_free(struct run *run)
{
    model_replay_free(run->r);
    est_model_close(run->m);
    model_job_free(run->job);
    memset(run, 0, sizeof *run);
}

/* scale: NULL, or scales separated by spaces ("gpu=2 comm=2") */
static int replay(struct model_job *job, const char *scale, struct run *run)
{
    struct model_replay_opts ro;
    struct sc_error err = {0};
    run->job = job;
    run->m = NULL;
    run->g = NULL;
    run->r = NULL;
    model_replay_opts_default(&ro);
    for (const char *p = scale; p && *p;) {
        char one[160];
        size_t n = strcspn(p, " ");
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        CHECK(model_replay_parse_scale(one, &ro, &err) == SC_OK);
        p += n + (p[n] == ' ');
    }
    /* kept collectives split, as stepcast replay does */
    int rc = est_model_of_job(job, NULL, &run->m, &err);
    if (rc == SC_OK) {
        run->g = est_model_graph(run->m);
        rc = est_model_replay(run->m, &ro, &run->r, &err);
    }
    if (rc) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    CHECK_EQ_INT(run->r->forced, 0);
    return 0;
}

static int load_replay(const char *name, const char *scale, struct run *run)
{
    const struct shared_trace *st = th_find_trace(name);
    memset(run, 0, sizeof *run);
    if (!st || th_load_trace(st, &run->job))
        return -1;
    if (replay(run->job, scale, run)) {
        model_job_free(run->job);
        return -1;
    }
    return 0;
}

/* A trace of the project's own (data/, no ../shared needed) loaded and
 * replayed into run. */
static int load_replay_path(const char *path, struct run *run)
{
    struct model_load_opts lo;
    struct sc_error err;
    memset(run, 0, sizeof *run);
    model_load_opts_default(&lo);
    REQUIRE(model_job_load(&path, 1, &lo, 0, &run->job, &err) == SC_OK);
    if (replay(run->job, NULL, run)) {
        model_job_free(run->job);
        return -1;
    }
    return 0;
}

/* ---- golden replays ---------------------------------------------------------------------- */

/* run's replay against tests/golden/replay/<name>.json. */
static void check_pinned(const struct run *run, const char *name)
{
    char path[256];
    json_t *doc = api_replay_json(run->r);
    snprintf(path, sizeof path, "tests/golden/replay/%s.json", name);
    CHECK(doc != NULL);
    if (doc)
        th_check_golden(path, doc, 1e-9, NULL);
    json_decref(doc);
}

static void golden(const char *name)
{
    struct run run;
    if (load_replay(name, NULL, &run))
        return;
    check_pinned(&run, name);
    run_free(&run);
}

TEST(golden_replay_nccl_data) { golden("nccl_data"); }
TEST(golden_replay_negative_queue) { golden("negative_queue"); }
TEST(golden_replay_control) { golden("control"); }
TEST(golden_replay_test) { golden("test"); }
TEST(golden_replay_ns_resolution) { golden("ns_resolution"); }
TEST(golden_replay_dlrm) { golden("dlrm"); }
TEST(golden_replay_linear) { golden("linear"); }
TEST(golden_replay_resnet) { golden("resnet"); }
TEST(golden_replay_cuda_event_sync) { golden("cuda_event_sync"); }
TEST(golden_replay_sampled) { golden("sampled"); }

/* ---- response to GPU speed ----------------------------------------------------------------- */

/* A measured step of a replay: the busy time of its rank's busiest stream
 * over the step (which ends when its work does: work conservation),
 * counting kernels and copies but not communication kernels (their traced
 * time includes waiting for peers). */
static double busiest_stream_ms(const struct model_trace *t, const struct model_replay_step *rs)
{
    const struct model_step step = {.start = t->steps[rs->step].start,
                                    .end = t->steps[rs->step].start + rs->measured_ns};
    const struct model_step *s = &step;
    double best = 0;
    for (size_t k = 0; k < t->n_tracks; k++) {
        if (!t->tracks[k].is_gpu)
            continue;
        int64_t busy = 0, lo = INT64_MIN, hi = INT64_MIN;
        for (size_t i = 0; i < t->n_events; i++) { /* a stream's events come in time order */
            const struct model_event *e = &t->events[i];
            if (e->track != k || !model_kind_is_gpu(e->kind) ||
                (e->kind == MODEL_EV_KERNEL && !strncmp(model_str(t, e->name), "nccl", 4)))
                continue;
            int64_t a = e->ts > s->start ? e->ts : s->start, b = e->ts + e->dur < s->end ? e->ts + e->dur : s->end;
            if (b <= a)
                continue;
            if (a > hi) {
                if (hi > lo)
                    busy += hi - lo;
                lo = a;
                hi = b;
            } else if (b > hi) {
                hi = b;
            }
        }
        if (hi > lo)
            busy += hi - lo;
        if (busy / 1e6 > best)
            best = busy / 1e6;
    }
    return best;
}

static double mean_replayed_ms(const struct model_replay *r)
{
    double sum = 0;
    for (size_t i = 0; i < r->n_steps; i++)
        sum += r->steps[i].replayed_ns / 1e6;
    return r->n_steps ? sum / (double)r->n_steps : 0;
}

/* Every GPU stream's work twice as long (gpu=2 and comm=2: `gpu` leaves
 * communication out): at least 1.9x the busiest stream's busy time, at
 * most 2.1x the unscaled replay; returns the growth. */
static double check_double_gpu(const char *name)
{
    const struct shared_trace *st = th_find_trace(name);
    struct model_job *job = NULL;
    struct run a, b;
    if (!st || th_load_trace(st, &job))
        return 0;
    if (replay(job, NULL, &a) || replay(job, "gpu=2 comm=2", &b)) {
        model_job_free(job);
        return 0;
    }
    const struct model_trace *t = job->ranks[0];
    double busy = 0;
    size_t n = 0;
    for (size_t i = 0; i < a.r->n_steps; i++)
        if (a.r->steps[i].rank == 0) {
            busy += busiest_stream_ms(t, &a.r->steps[i]);
            n++;
        }
    busy /= n ? (double)n : 1;
    double m1 = mean_replayed_ms(a.r), m2 = mean_replayed_ms(b.r);
    printf("     %s: busiest stream %.3f ms/step; replay %.3f -> %.3f ms (x%.3f)\n", name, busy, m1, m2, m2 / m1);
    CHECK(m2 >= 1.9 * busy);
    CHECK(m2 <= 2.1 * m1);
    model_replay_free(a.r);
    est_model_close(a.m);
    model_replay_free(b.r);
    est_model_close(b.m);
    model_job_free(job);
    return m1 > 0 ? m2 / m1 : 0;
}

TEST(sensitivity_gpu_x2_nccl_data_is_host_bound) { CHECK(check_double_gpu("nccl_data") < 1.3); }
TEST(sensitivity_gpu_x2_negative_queue) { check_double_gpu("negative_queue"); }
TEST(sensitivity_gpu_x2_control) { check_double_gpu("control"); }
TEST(sensitivity_gpu_x2_test) { check_double_gpu("test"); }
TEST(sensitivity_gpu_x2_ns_resolution_is_gpu_bound) { CHECK(check_double_gpu("ns_resolution") >= 1.8); }
TEST(sensitivity_gpu_x2_dlrm) { check_double_gpu("dlrm"); }
TEST(sensitivity_gpu_x2_linear) { check_double_gpu("linear"); }
TEST(sensitivity_gpu_x2_resnet) { check_double_gpu("resnet"); }

/* Every GPU stream's work at x0.5 (gpu and comm): a step whose busiest
 * stream is busy at least 90% of it shrinks to at most 0.65x (copied waits
 * could not shrink). */
static void check_half_gpu(const char *name, size_t want_min)
{
    const struct shared_trace *st = th_find_trace(name);
    struct model_job *job = NULL;
    struct run a, b;
    size_t checked = 0;
    if (!st || th_load_trace(st, &job))
        return;
    if (replay(job, NULL, &a) || replay(job, "gpu=0.5 comm=0.5", &b)) {
        model_job_free(job);
        return;
    }
    for (size_t i = 0; i < a.r->n_steps; i++) {
        const struct model_replay_step *s = &a.r->steps[i];
        const struct model_trace *t = job->ranks[s->rank];
        double busy = busiest_stream_ms(t, s), measured = s->measured_ns / 1e6;
        if (busy < 0.9 * measured || s->partial)
            continue;
        double ratio = (double)b.r->steps[i].replayed_ns / (double)s->replayed_ns;
        printf("     %s step %zu: busy %.1f of %.1f ms; x0.5 -> %.3f of the replay\n", name, i, busy, measured, ratio);
        CHECK(ratio <= 0.65);
        checked++;
    }
    CHECK(checked >= want_min);
    model_replay_free(a.r);
    est_model_close(a.m);
    model_replay_free(b.r);
    est_model_close(b.m);
    model_job_free(job);
}

/* The GPU-bound traces: every step of theirs qualifies (ns_resolution's 4
 * steps, 15 of resnet's); a replay that copied measured waits
 * would check none of them and fail. */
TEST(sensitivity_gpu_half_ns_resolution) { check_half_gpu("ns_resolution", 4); }
TEST(sensitivity_gpu_half_resnet) { check_half_gpu("resnet", 15); }
/* The others are host-bound (no step's busiest stream reaches 90%): any
 * step that does qualify must still shrink. */
TEST(sensitivity_gpu_half_host_bound_traces)
{
    static const char *const names[] = {"nccl_data", "negative_queue", "control", "test", "dlrm", "linear"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_half_gpu(names[i], 0);
}

/* ---- one kernel longer ---------------------------------------------------------------------------- */

/* Replay graph g again with task i's duration grown by d (the same
 * dependencies: only the duration changes, as a faster or slower kernel
 * would). */
static struct model_replay *replay_longer(const struct model_graph *g, uint32_t i, int64_t d)
{
    struct model_replay *r = NULL;
    struct model_replay_opts o;
    struct model_replay_override longer = {i, g->tasks[i].dur + d};
    struct sc_error err;
    model_replay_opts_default(&o);
    o.overrides = &longer;
    o.n_overrides = 1;
    if (model_replay_run(g, &o, &r, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    return r;
}

/* In the first step of rank 0, find a call whose end a wait on GPU work
 * sets (a sync, a blocking copy): lengthen that GPU work by d and the call
 * ends d later, and so does the host work after it, up to the next task
 * that waits for something else. */
static void check_longer_kernel_before_sync(const char *name)
{
    const struct shared_trace *st = th_find_trace(name);
    struct model_job *job = NULL;
    struct run a;
    const int64_t d = 1000000; /* 1 ms */
    if (!st || th_load_trace(st, &job))
        return;
    if (replay(job, NULL, &a)) {
        model_job_free(job);
        return;
    }
    const struct model_graph *g = a.g;
    const struct model_graph_step *s0 = &g->steps[0];
    uint32_t call = MODEL_NONE, gpu = MODEL_NONE;
    for (uint32_t i = s0->begin; i != s0->end && call == MODEL_NONE; i = g->next[i])
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
            const struct model_edge *ed = &g->edges[e];
            if (ed->type == MODEL_FF && ed->kind == MODEL_EDGE_HOST_SYNC &&
                a.r->end[i] == a.r->end[ed->from] + ed->lat && a.r->end[i] > a.r->start[i] + g->tasks[i].dur) {
                call = i;
                gpu = ed->from;
                break;
            }
        }
    CHECK(call != MODEL_NONE);
    if (call == MODEL_NONE) {
        run_free(&a);
        return;
    }
    struct model_replay *b = replay_longer(g, gpu, d);
    if (b) {
        CHECK_EQ_INT(b->end[call] - a.r->end[call], d);
        /* the host work after it, until a task some other edge holds back */
        size_t moved = 0;
        for (uint32_t i = g->next[call]; i != MODEL_NONE && g->pred_at[i] == g->pred_at[i + 1];
             i = i == s0->end ? MODEL_NONE : g->next[i], moved++)
            CHECK_EQ_INT(b->start[i] - a.r->start[i], d);
        printf("     %s: '%.40s' 1 ms longer: '%s' and the %zu host tasks after it move 1 ms\n", name,
               model_graph_str(g, g->src[gpu].name), model_graph_str(g, g->src[call].name), moved);
        model_replay_free(b);
    }
    run_free(&a);
}

TEST(sensitivity_longer_kernel_before_sync_negative_queue) { check_longer_kernel_before_sync("negative_queue"); }
TEST(sensitivity_longer_kernel_before_sync_control) { check_longer_kernel_before_sync("control"); }
TEST(sensitivity_longer_kernel_before_sync_test) { check_longer_kernel_before_sync("test"); }
TEST(sensitivity_longer_kernel_before_sync_dlrm) { check_longer_kernel_before_sync("dlrm"); }
TEST(sensitivity_longer_kernel_before_sync_resnet) { check_longer_kernel_before_sync("resnet"); }

/* Lengthen GPU work nothing waits for but the end of the last step (it is
 * last on its stream, and work conservation holds the step open until it
 * ends): no other task moves, and the step ends no earlier than it. */
static void check_longer_independent_kernel(const char *name)
{
    const struct shared_trace *st = th_find_trace(name);
    struct model_job *job = NULL;
    struct run a;
    if (!st || th_load_trace(st, &job))
        return;
    if (replay(job, NULL, &a)) {
        model_job_free(job);
        return;
    }
    const struct model_graph *g = a.g;
    uint32_t pick = MODEL_NONE;
    for (uint32_t k = 0; k < g->n_res && pick == MODEL_NONE; k++) {
        const struct model_resource *r = &g->res[k];
        if (!r->gpu || !r->n)
            continue;
        uint32_t last = r->last, only_markers = 1;
        for (uint32_t e = g->succ_at[last]; e < g->succ_at[last + 1]; e++)
            only_markers &= g->tasks[g->succs[e] >> 2].cls == MODEL_TASK_MARKER;
        if (only_markers && g->tasks[last].group == MODEL_NONE)
            pick = last;
    }
    CHECK(pick != MODEL_NONE);
    struct model_replay *b = pick == MODEL_NONE ? NULL : replay_longer(g, pick, 5000000);
    if (b) {
        size_t moved = 0;
        for (uint32_t i = 0; i < g->n_tasks; i++) {
            if (g->tasks[i].cls == MODEL_TASK_MARKER && b->start[i] != a.r->start[i])
                CHECK(b->start[i] >= b->end[pick]);
            else
                moved += i != pick && (b->start[i] != a.r->start[i] || b->end[i] != a.r->end[i]);
        }
        CHECK_EQ_INT(moved, 0);
        CHECK_EQ_INT(b->end[pick] - a.r->end[pick], 5000000);
        model_replay_free(b);
    }
    run_free(&a);
}

TEST(sensitivity_longer_independent_kernel_control) { check_longer_independent_kernel("control"); }
TEST(sensitivity_longer_independent_kernel_ns_resolution) { check_longer_independent_kernel("ns_resolution"); }
TEST(sensitivity_longer_independent_kernel_dlrm) { check_longer_independent_kernel("dlrm"); }

/* A trace of the project's own: stepcast's CUPTI profiler
 * (CUDA_INJECTION64_PATH) on ten eager PyTorch training steps of a GPT-like
 * model on an H100 (profiler/torch-step.py --nvtx,
 * data/calibration/torch-steps). Its replay is pinned, and reproduces each
 * measured step within 3% and all of them within 1% on average: a real
 * driver's records, cuBLAS's driver-API launches and NVTX step ranges. */
TEST(golden_replay_h100_pytorch_stepcast_profiler)
{
    struct run run;
    if (load_replay_path("data/calibration/torch-steps/h100-sxm-gpt-h1024-s1024-b8.stepcast.pt.trace.json.gz",
                         &run))
        return;
    REQUIRE(run.job->ranks[0]->n_devices >= 1 && run.job->ranks[0]->devices[0].num_sms == 132); /* an H100 */
    CHECK_EQ_INT((int)run.r->n_steps, 10);
    CHECK(run.r->mean_abs_error_pct < 1);
    CHECK(run.r->max_abs_error_pct < 3);
    check_pinned(&run, "h100_pytorch_stepcast_profiler");
    run_free(&run);
}

/* stepcast's CUPTI profiler on ten torch.compile'd steps of the same model
 * on an H200 (torch-step.py --quick --nvtx --compile --precision bf16,
 * data/calibration/torch-steps/stacks; 17.71 ms a step by CUDA events):
 * Inductor's Triton kernels launched through the driver API
 * (cuLaunchKernel), cuBLASLt's GEMMs through cuLaunchKernelEx, the host
 * far ahead of the GPU until each step's synchronisation. Every kernel of
 * a step is joined to the call that launched it, the steps last as long
 * as the CUDA events timed them (17.708 ms on average: each within 5%,
 * their mean within 1%), and the replay, pinned, reproduces each within
 * 1%. */
TEST(golden_replay_h200_compiled_stepcast_profiler)
{
    struct run run;
    if (load_replay_path("data/calibration/torch-steps/stacks/h200-compile-gpt-h1024-s1024-b8.stepcast.pt.trace.json.gz",
                         &run))
        return;
    const struct model_graph *g = run.g;
    size_t kernels = 0, launched = 0;
    for (size_t s = 0; s < g->n_steps; s++)
        for (uint32_t i = g->steps[s].begin + 1; g->steps[s].end != MODEL_NONE && i < g->steps[s].end; i++) {
            if (g->tasks[i].cls != MODEL_TASK_KERNEL)
                continue;
            kernels++;
            for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
                if (g->edges[e].kind == MODEL_EDGE_LAUNCH) {
                    launched++;
                    break;
                }
        }
    printf("     %zu kernels in the steps, %zu joined to their launch\n", kernels, launched);
    CHECK(kernels >= 10 * 250);
    CHECK_EQ_INT(launched, kernels);
    CHECK_EQ_INT((int)run.r->n_steps, 10);
    double sum = 0;
    for (size_t k = 0; k < run.r->n_steps; k++) {
        CHECK_NEAR((double)run.r->steps[k].measured_ns / 1e6, 17.708, 0.05 * 17.708);
        sum += (double)run.r->steps[k].measured_ns / 1e6;
    }
    CHECK_NEAR(sum / (double)(run.r->n_steps ? run.r->n_steps : 1), 17.708, 0.01 * 17.708);
    CHECK(run.r->mean_abs_error_pct < 1);
    CHECK(run.r->max_abs_error_pct < 1);
    check_pinned(&run, "h200_compiled_stepcast_profiler");
    run_free(&run);
}
