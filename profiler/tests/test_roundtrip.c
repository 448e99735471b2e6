/* profiler/tests/test_roundtrip.c: a synthetic capture of two ranks, made
 * of CUPTI records and NCCL plugin events, recorded by the session (fake
 * CUPTI), written by the real writer, then ingested by stepcast's reader
 * and inspected by the stepcast command line. It checks what a replay needs:
 * launch (correlation + ac2g flows), stream order, event sync (cuda_sync
 * with wait_on_*), collectives (sizes, group, communicator, NCCL seq),
 * distributedInfo, deviceProperties and ProfilerStep#N.
 *
 * Then the two traces are one job: the dependency graph built from them
 * must have each edge the capture implies, and the replay must run.
 *
 * The traces are also left in <build>/tests/prof-roundtrip-rank{0,1}.pt.trace.json. */
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "profiler/config.h"
#include "profiler/event.h"
#include "profiler/exports.h"
#include "profiler/nccl.h"
#include "profiler/session.h"
#include "profiler/tests/synth.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define T0 1735689600000000000ull /* 2025-01-01, ns */
#define US 1000ull
#define PID 4242
#define COMM 0x00c0ffee12345678ull

enum { CTX = 1, S_COMPUTE = 7, S_COMM = 9, S_COPY = 11, EV_COPIED = 3, EV_COMPUTED = 4 };

/* Record rank r's step with the session: the CUPTI side through the fake
 * CUPTI, the NCCL side through the exported plugin table. */
static void capture(int rank, const char *dir, char *out, size_t out_n)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001};
    struct prof_layout l;
    struct synth_buf b;
    char why[128];
    CHECK_EQ_INT(prof_config_load(&c, getenv, why, sizeof why), 0);
    snprintf(c.dir, sizeof c.dir, "%s", dir);
    c.flush_ms = 60000;
    c.quiet = 1;
    synth_cupti_make(&fake, &s);
    prof_nccl_mark_injected(prof_nccl()); /* as InitializeInjection does */
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);

    /* NCCL: the communicator, then one all-reduce launched in its group */
    void *ctx = NULL, *group = NULL, *api = NULL, *launch = NULL, *plan = NULL, *coll = NULL;
    int mask = 0;
    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, COMM, &mask, "", 1, 2, rank, NULL), 0);
    struct prof_nccl_descr_v5 d;
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_GROUP_API;
    ncclProfiler_v5.start_event(ctx, &group, &d);
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_COLL_API;
    d.parent = group;
    d.coll_api.func = "AllReduce";
    d.coll_api.count = 1 << 20;
    d.coll_api.datatype = "ncclFloat32";
    d.coll_api.root = -1;
    d.coll_api.stream = (void *)0x9;
    ncclProfiler_v5.start_event(ctx, &api, &d);
    ncclProfiler_v5.stop_event(api);
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_KERNEL_LAUNCH;
    d.parent = group;
    ncclProfiler_v5.start_event(ctx, &launch, &d);
    uint64_t ext = synth_cupti_log()->last_pushed;
    ncclProfiler_v5.stop_event(launch);
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_GROUP;
    ncclProfiler_v5.start_event(ctx, &plan, &d);
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_COLL;
    d.parent = api;
    d.coll.c.seq = 17;
    d.coll.c.func = "AllReduce";
    d.coll.c.count = 1 << 20;
    d.coll.c.root = -1;
    d.coll.c.datatype = "ncclFloat32";
    d.coll.c.n_channels = 8;
    d.coll.c.algo = "RING";
    d.coll.c.proto = "SIMPLE";
    d.coll.parent_group = plan;
    ncclProfiler_v5.start_event(ctx, &coll, &d);
    ncclProfiler_v5.stop_event(coll);
    ncclProfiler_v5.stop_event(plan);
    ncclProfiler_v5.stop_event(group);
    CHECK(ext != 0);

    /* CUPTI: one step on three streams */
    prof_layout_for_version(130001, &l);
    synth_init(&b, &l, 0);
    uint64_t t = T0 + (uint64_t)rank * 5 * US;
    synth_device(&b, 0, "NVIDIA H100 80GB HBM3", 132, 85899345920ull, 9, 0);
    synth_context(&b, CTX, 0);
    synth_marker(&b, CUPTI_ACTIVITY_FLAG_MARKER_START, t, 1, PID, PID, "ProfilerStep#1");
    /* a copy, recorded as event 3 on the copy stream, waited on by compute */
    synth_api(&b, 1, 41, t + 10 * US, t + 15 * US, PID, PID, 1);
    synth_memcpy(&b, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 24, t + 20 * US, t + 30 * US, 0, CTX,
                 S_COPY, 1);
    synth_api(&b, 1, 135, t + 16 * US, t + 17 * US, PID, PID, 2);
    synth_cuda_event(&b, 2, CTX, S_COPY, EV_COPIED, 0, t + 30 * US, 0);
    synth_api(&b, 1, 147, t + 18 * US, t + 19 * US, PID, PID, 3);
    synth_sync(&b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, t + 18 * US, t + 19 * US, 3,
               CTX, S_COMPUTE, EV_COPIED, 0);
    /* two kernels in stream order */
    synth_api(&b, 1, 211, t + 20 * US, t + 25 * US, PID, PID, 4);
    synth_kernel(&b, t + 31 * US, t + 200 * US, 4, 0, CTX, S_COMPUTE, "gemm_kernel");
    synth_api(&b, 1, 211, t + 26 * US, t + 28 * US, PID, PID, 5);
    synth_kernel(&b, t + 201 * US, t + 250 * US, 5, 0, CTX, S_COMPUTE, "relu_kernel");
    /* the all-reduce waits for the compute stream */
    synth_api(&b, 1, 135, t + 29 * US, t + 30 * US, PID, PID, 6);
    synth_cuda_event(&b, 6, CTX, S_COMPUTE, EV_COMPUTED, 0, t + 250 * US, 0);
    synth_api(&b, 1, 147, t + 31 * US, t + 32 * US, PID, PID, 7);
    synth_sync(&b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, t + 31 * US, t + 32 * US, 7,
               CTX, S_COMM, EV_COMPUTED, 0);
    synth_ext(&b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, ext, 8);
    synth_api(&b, 0, 652, t + 40 * US, t + 45 * US, PID, PID, 8);
    synth_kernel(&b, t + 251 * US, t + 600 * US, 8, 0, CTX, S_COMM,
                 "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    synth_api(&b, 1, 131, t + 50 * US, t + 601 * US, PID, PID, 9);
    synth_sync(&b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, t + 50 * US, t + 601 * US,
               9, CTX, S_COMM, PROF_INVALID, 0);
    synth_overhead(&b, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, t + 700 * US, t + 701 * US, PID, PID);
    synth_marker(&b, CUPTI_ACTIVITY_FLAG_MARKER_END, t + 1000 * US, 1, PID, PID, NULL);
    synth_cupti_deliver(&b);
    synth_release(&b);
    prof_session_drain();
    CHECK_EQ_INT(prof_session_finish(), 0);
    snprintf(out, out_n, "%s", prof_session_output());
    prof_session_reset();
}

static const struct model_event *find(const struct model_trace *t, int kind, const char *name)
{
    for (size_t i = 0; i < t->n_events; i++)
        if (t->events[i].kind == kind && (!name || strcmp(model_str(t, t->events[i].name), name) == 0))
            return &t->events[i];
    return NULL;
}

static const struct model_event *by_corr(const struct model_trace *t, int kind, int64_t corr)
{
    for (size_t i = 0; i < t->n_events; i++)
        if (t->events[i].kind == kind && t->events[i].correlation == corr)
            return &t->events[i];
    return NULL;
}

static int64_t stream_of(const struct model_trace *t, const struct model_event *e)
{
    return e && e->info != MODEL_NONE ? t->infos[e->info].stream : -2;
}

static void check_rank(const struct model_trace *t, int rank)
{
    CHECK_EQ_INT(t->rank, rank);
    CHECK_EQ_INT(t->world_size, 2);
    CHECK(t->has_distributed_info && t->has_device_properties);
    CHECK_STREQ(model_str(t, t->backend), "nccl");
    CHECK_EQ_INT(t->n_devices, 1);
    CHECK_STREQ(model_str(t, t->devices[0].name), "NVIDIA H100 80GB HBM3");
    CHECK_EQ_INT(t->devices[0].num_sms, 132);
    CHECK(t->has_base_time && !t->time_unanchored);
    CHECK_EQ_INT(t->n_pgs, 1);
    CHECK_EQ_INT(t->pgs[0].size, 2);

    /* steps */
    CHECK_EQ_INT(t->n_steps, 1);
    if (t->n_steps) {
        CHECK_STREQ(model_str(t, t->steps[0].name), "ProfilerStep#1");
        CHECK_EQ_INT(t->steps[0].number, 1);
        CHECK_EQ_INT(t->steps[0].end - t->steps[0].start, 1000 * US);
        CHECK_EQ_INT(t->steps[0].start, T0 + (uint64_t)rank * 5 * US);
    }

    /* launch: each GPU op has its launch call, by correlation and by flow */
    static const int64_t gpu_corrs[] = {1, 4, 5, 8};
    for (size_t i = 0; i < 4; i++) {
        const struct model_event *g = NULL, *api = NULL;
        for (size_t k = 0; k < t->n_events; k++) {
            const struct model_event *e = &t->events[k];
            if (e->correlation != gpu_corrs[i])
                continue;
            if (model_kind_is_gpu(e->kind))
                g = e;
            if (e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER)
                api = e;
        }
        CHECK(g != NULL && api != NULL);
        if (g && api)
            CHECK(api->ts < g->ts);
        int s = 0, f = 0;
        for (size_t k = 0; k < t->n_flows; k++)
            if (t->flows[k].id == gpu_corrs[i] && t->flows[k].kind == MODEL_FLOW_LAUNCH) {
                s += t->flows[k].phase == 's';
                f += t->flows[k].phase == 'f';
            }
        CHECK_EQ_INT(s, 1);
        CHECK_EQ_INT(f, 1);
    }
    CHECK(by_corr(t, MODEL_EV_DRIVER, 8) != NULL); /* NCCL launches through the driver */

    /* stream order: both compute kernels on one stream, in order */
    const struct model_event *gemm = find(t, MODEL_EV_KERNEL, "gemm_kernel");
    const struct model_event *relu = find(t, MODEL_EV_KERNEL, "relu_kernel");
    CHECK(gemm && relu);
    if (gemm && relu) {
        CHECK_EQ_INT(gemm->track, relu->track);
        CHECK_EQ_INT(t->tracks[gemm->track].tid, S_COMPUTE);
        CHECK_EQ_INT(t->tracks[gemm->track].pid, 0);
        CHECK(gemm < relu && gemm->ts + gemm->dur <= relu->ts);
        CHECK_EQ_INT(t->infos[gemm->info].grid[0], 108);
        CHECK_EQ_INT(t->infos[gemm->info].block[0], 256);
    }
    const struct model_event *copy = find(t, MODEL_EV_MEMCPY, NULL);
    CHECK(copy != NULL);
    if (copy) {
        CHECK_STREQ(model_str(t, copy->name), "Memcpy HtoD (Pinned -> Device)");
        CHECK_EQ_INT(t->infos[copy->info].bytes, 1 << 24);
        CHECK_EQ_INT(stream_of(t, copy), S_COPY);
    }

    /* event sync: each wait names the stream and the record it waits on */
    int waits = 0, stream_syncs = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (e->kind != MODEL_EV_CUDA_SYNC)
            continue;
        const struct model_sync *y = &t->syncs[t->infos[e->info].sync];
        const char *kind = model_str(t, y->sync_kind);
        if (strcmp(kind, "Stream Wait Event") == 0) {
            waits++;
            if (e->correlation == 3) {
                CHECK_EQ_INT(y->wait_on_stream, S_COPY);
                CHECK_EQ_INT(y->wait_on_record_corr, 2);
                CHECK_EQ_INT(y->event_id, EV_COPIED);
                CHECK_EQ_INT(stream_of(t, e), S_COMPUTE);
            } else {
                CHECK_EQ_INT(e->correlation, 7);
                CHECK_EQ_INT(y->wait_on_stream, S_COMPUTE);
                CHECK_EQ_INT(y->wait_on_record_corr, 6);
                CHECK_EQ_INT(stream_of(t, e), S_COMM);
            }
        } else if (strcmp(kind, "Stream Sync") == 0) {
            stream_syncs++;
            CHECK_EQ_INT(stream_of(t, e), S_COMM);
        }
    }
    CHECK_EQ_INT(waits, 2);
    CHECK_EQ_INT(stream_syncs, 1);
    int records = 0;
    for (size_t i = 0; i < t->n_events; i++)
        records += t->events[i].kind == MODEL_EV_CUDA_EVENT;
    CHECK_EQ_INT(records, 2);

    /* the collective, on its kernel, named and sized as PyTorch does */
    const struct model_event *nccl = by_corr(t, MODEL_EV_KERNEL, 8);
    CHECK(nccl && nccl->info != MODEL_NONE && t->infos[nccl->info].coll != MODEL_NONE);
    if (nccl && nccl->info != MODEL_NONE && t->infos[nccl->info].coll != MODEL_NONE) {
        const struct model_collective *c = &t->colls[t->infos[nccl->info].coll];
        CHECK_STREQ(model_str(t, c->name), "allreduce");
        CHECK_EQ_INT(c->in_nelems, 1 << 20);
        CHECK_EQ_INT(c->out_nelems, 1 << 20);
        CHECK_EQ_INT(c->group_size, 2);
        CHECK_STREQ(model_str(t, c->dtype), "Float");
        CHECK_STREQ(model_str(t, c->pg_name), "00c0ffee12345678");
        CHECK_EQ_INT(c->nccl_seq, 17);
        CHECK_EQ_INT(c->seq, -1); /* PyTorch's counter: not ours to claim */
        CHECK_EQ_INT(stream_of(t, nccl), S_COMM);
    }
    /* the NCCL call on the CPU */
    CHECK(find(t, MODEL_EV_USER_ANNOTATION, "nccl:allreduce") != NULL);
}

TEST(prof_roundtrip_through_stepcast_ingest)
{
    char dir[4096], path[2][4096];
    snprintf(dir, sizeof dir, "%s/traces", th_tmpdir());
    for (int r = 0; r < 2; r++) {
        capture(r, dir, path[r], sizeof path[r]);
        CHECK_CONTAINS(path[r], r ? "_rank1.pt.trace.json" : "_rank0.pt.trace.json");
        struct model_trace *t = NULL;
        struct sc_error err;
        int rc = model_trace_load_file(path[r], NULL, &t, &err);
        if (rc)
            fprintf(stderr, "ingest failed: %s\n", err.msg);
        CHECK_EQ_INT(rc, SC_OK);
        if (t)
            check_rank(t, r);
        model_trace_free(t);
        /* keep them where people can look at them (profiler/README.md) */
        size_t n;
        char *text = th_read_file(path[r], &n);
        char keep[64];
        snprintf(keep, sizeof keep, "tests/prof-roundtrip-rank%d.pt.trace.json", r);
        FILE *f = fopen(th_build_path(keep), "wb");
        CHECK(f && text);
        if (f && text)
            fwrite(text, 1, n, f);
        if (f)
            fclose(f);
        free(text);
    }
}

/* Such traces through `stepcast inspect --json`: nothing a replay needs is
 * reported missing. */
TEST(prof_roundtrip_stepcast_inspect)
{
    char cli[4096], dir[4096], path[2][4096];
    snprintf(cli, sizeof cli, "%s", th_build_path("stepcast"));
    snprintf(dir, sizeof dir, "%s/inspect", th_tmpdir());
    for (int r = 0; r < 2; r++)
        capture(r, dir, path[r], sizeof path[r]);
    char *argv[] = {cli, "inspect", "--json", path[0], path[1], NULL};
    char *out = NULL, *err = NULL;
    int rc = th_run(argv, &out, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "%s\n", err ? err : "");
    CHECK_CONTAINS(out, "\"lacks\": []");
    CHECK_CONTAINS(out, "\"allreduce\"");
    free(out);
    free(err);
}

/* The task of event `name` (or of the event with correlation id `corr` and
 * kind) on rank r. */
static uint32_t task_of(const struct model_graph *g, const struct model_job *job, int r,
                        const struct model_event *e)
{
    const struct model_trace *t = job->ranks[r];
    uint32_t index = (uint32_t)(e - t->events);
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].rank == r && g->src[i].event == index)
            return i;
    return UINT32_MAX;
}

static int has_edge(const struct model_graph *g, uint32_t from, uint32_t to, int kind)
{
    if (from == UINT32_MAX || to == UINT32_MAX)
        return 0;
    for (uint32_t k = g->pred_at[to]; k < g->pred_at[to + 1]; k++)
        if (g->edges[k].from == from && g->edges[k].kind == kind)
            return 1;
    return 0;
}

TEST(prof_roundtrip_replays_with_its_edges)
{
    char dir[4096], path[2][4096];
    snprintf(dir, sizeof dir, "%s/job", th_tmpdir());
    for (int r = 0; r < 2; r++)
        capture(r, dir, path[r], sizeof path[r]);
    const char *paths[2] = {path[0], path[1]};
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_replay *rp = NULL;
    struct model_graph_opts go;
    struct model_replay_opts ro;
    struct sc_error err;
    CHECK_EQ_INT(model_job_load(paths, 2, NULL, 2, &job, &err), SC_OK);
    if (!job)
        return;
    model_graph_opts_default(&go);
    int rc = model_graph_build(job, &go, &g, &err);
    if (rc)
        fprintf(stderr, "graph: %s\n", err.msg);
    CHECK_EQ_INT(rc, SC_OK);
    if (!g) {
        model_job_free(job);
        return;
    }
    /* every GPU op is launched by its call; both waits come from cuda_sync
     * events, none inferred; the all-reduce is one collective across ranks */
    CHECK(g->stats.edges_by_kind[MODEL_EDGE_LAUNCH] >= 8);
    CHECK_EQ_INT(g->stats.cuda_sync_event_syncs, 4);
    CHECK_EQ_INT(g->stats.inferred_event_syncs, 0);
    CHECK_EQ_INT(g->stats.collectives_matched, 1);
    CHECK_EQ_INT(g->n_groups, 1);
    CHECK_EQ_INT(g->n_steps, 2);
    for (int r = 0; r < 2; r++) {
        const struct model_trace *t = job->ranks[r];
        uint32_t memcpy_task = task_of(g, job, r, find(t, MODEL_EV_MEMCPY, NULL));
        uint32_t gemm = task_of(g, job, r, find(t, MODEL_EV_KERNEL, "gemm_kernel"));
        uint32_t relu = task_of(g, job, r, find(t, MODEL_EV_KERNEL, "relu_kernel"));
        uint32_t nccl = task_of(g, job, r, by_corr(t, MODEL_EV_KERNEL, 8));
        uint32_t launch = task_of(g, job, r, by_corr(t, MODEL_EV_RUNTIME, 4));
        uint32_t nccl_launch = task_of(g, job, r, by_corr(t, MODEL_EV_DRIVER, 8));
        uint32_t sync = task_of(g, job, r, by_corr(t, MODEL_EV_RUNTIME, 9));
        /* launch */
        CHECK(has_edge(g, launch, gemm, MODEL_EDGE_LAUNCH));
        CHECK(has_edge(g, nccl_launch, nccl, MODEL_EDGE_LAUNCH));
        /* stream order: one resource, gemm then relu */
        CHECK(gemm != UINT32_MAX && relu != UINT32_MAX);
        if (gemm != UINT32_MAX && relu != UINT32_MAX) {
            CHECK_EQ_INT(g->tasks[gemm].res, g->tasks[relu].res);
            CHECK(gemm < relu);
        }
        /* event sync: the copy before gemm, relu before the all-reduce */
        CHECK(has_edge(g, memcpy_task, gemm, MODEL_EDGE_EVENT_SYNC));
        CHECK(has_edge(g, relu, nccl, MODEL_EDGE_EVENT_SYNC));
        /* the stream sync waits for the all-reduce */
        CHECK(has_edge(g, nccl, sync, MODEL_EDGE_HOST_SYNC));
        /* collectives: one group holding both ranks' kernels */
        CHECK(nccl != UINT32_MAX && g->tasks[nccl].cls == MODEL_TASK_COMM && g->tasks[nccl].group == 0);
    }
    model_replay_opts_default(&ro);
    rc = model_replay_run(g, &ro, &rp, &err);
    if (rc)
        fprintf(stderr, "replay: %s\n", err.msg);
    CHECK_EQ_INT(rc, SC_OK);
    if (rp) {
        CHECK_EQ_INT(rp->n_steps, 2);
        CHECK_EQ_INT(rp->forced, 0);
        for (size_t i = 0; i < rp->n_steps; i++) {
            CHECK(rp->steps[i].replayed_ns > 0);
            CHECK_EQ_INT(rp->steps[i].measured_ns, 1000 * US);
        }
    }
    model_replay_free(rp);
    model_graph_free(g);
    model_job_free(job);
}
