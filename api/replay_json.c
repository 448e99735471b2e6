/* api/replay_json.c: replay, critical path and timeline documents
 * (replay_json.h). They read the graph (names, classes, resources, steps),
 * never the trace, so a graph built without one reports like any other. */
#include "api/replay_json.h"

#include <math.h>
#include <stdio.h>

#include "api/inspect_json.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

static json_t *pct(double v)
{
    return json_real(round(v * 1e6) / 1e6);
}

static const char *step_name(const struct model_replay *r, const struct model_replay_step *s)
{
    return model_graph_str(r->g, r->g->steps[s - r->steps].name);
}

static int rank_id(const struct model_graph *g, uint16_t rank)
{
    return g->ranks[rank].id;
}

/* A duration in ms, or null when nothing was measured. */
static json_t *ms_or_null(int64_t ns)
{
    return ns < 0 ? json_null() : api_json_ms(ns);
}

static json_t *graph_json(const struct model_graph *g)
{
    json_t *kinds = json_object(), *offsets = json_array(), *depths = json_array();
    for (int k = 0; k < MODEL_EDGE_KIND_COUNT; k++)
        json_object_set_new(kinds, model_edge_kind_name((enum model_edge_kind)k),
                            json_integer((json_int_t)g->stats.edges_by_kind[k]));
    for (size_t i = 0; i < g->n_ranks; i++) {
        json_array_append_new(offsets, api_json_ms(g->ranks[i].clock_offset_ns));
        json_array_append_new(depths, json_integer(g->ranks[i].launch_queue_depth));
    }
    return json_pack("{s:I, s:I, s:o, s:I, s:I, s:{s:I, s:I}, s:I, s:I, s:o, s:o, s:o}", "tasks",
                     (json_int_t)g->n_tasks, "edges", (json_int_t)g->n_edges, "edges_by_kind", kinds,
                     "event_syncs_inferred", (json_int_t)g->stats.inferred_event_syncs,
                     "event_syncs_from_cuda_sync", (json_int_t)g->stats.cuda_sync_event_syncs, "host_waits",
                     "without_call", (json_int_t)g->stats.host_waits_gap, "polling_loops",
                     (json_int_t)g->stats.host_waits_loop, "collectives_matched",
                     (json_int_t)g->stats.collectives_matched, "collectives_kept",
                     (json_int_t)g->stats.collectives_kept, "clock_offsets_ms", offsets, "launch_queue_depth", depths,
                     "collectives", api_collectives_json(g));
}

/* What a model gave the replay: the split of the collectives kept for
 * untraced peers (model/replay.h), by where the transfer came from. */
static json_t *models_used(const struct model_replay *r)
{
    static const char *const why[MODEL_WAIT_FROM_COUNT] = {
        "collectives kept for untraced peers split into transfer (the collective model's time for their size "
        "on the traced GPU) and wait for the peers (the rest, in collective_kept_ms)",
        "the trace gives no collective sizes: each collective kept for untraced peers has for transfer the "
        "traced time of its least-waiting instance, re-timed by the collective model's ratio (1 on the traced "
        "configuration), and for wait the rest (in collective_kept_ms)"};
    json_t *a = json_array();
    for (int k = 0; a && k < MODEL_WAIT_FROM_COUNT; k++)
        if (r->split_from[k])
            json_array_append_new(a, json_pack("{s:s, s:I, s:s}", "model", "collective_model", "tasks",
                                               (json_int_t)r->split_from[k], "why", why[k]));
    return a;
}

json_t *api_replay_json(const struct model_replay *r)
{
    json_t *steps = json_array();
    if (!steps)
        return NULL;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        const struct model_breakdown *b = &s->breakdown;
        json_array_append_new(
            steps, json_pack("{s:i, s:s, s:o, s:o, s:o, s:b, s:{s:o, s:o, s:o, s:o, s:o, s:o}, s:o, s:o}", "rank",
                             rank_id(r->g, s->rank), "step", step_name(r, s), "measured_ms",
                             ms_or_null(s->measured_ns), "replayed_ms", api_json_ms(s->replayed_ns),
                             "error_pct", s->measured_ns < 0 ? json_null() : pct(s->error_pct), "partial", s->partial, "breakdown",
                             "compute_exposed", api_json_ms(b->compute_exposed), "overlap",
                             api_json_ms(b->overlap), "comm_exposed", api_json_ms(b->comm_exposed),
                             "unexplained", api_json_ms(b->unexplained), "host", api_json_ms(b->host),
                             "idle", api_json_ms(b->idle), "collective_kept_ms",
                             api_json_ms(s->collective_kept_ns), "unexplained_ms",
                             ms_or_null(s->measured_ns < 0 ? -1 : s->unexplained_ns)));
    }
    return json_pack("{s:o, s:o, s:o, s:I, s:o, s:o}", "steps", steps, "mean_abs_error_pct",
                     pct(r->mean_abs_error_pct), "max_abs_error_pct", pct(r->max_abs_error_pct),
                     "forced", (json_int_t)r->forced, "graph", graph_json(r->g), "models_used", models_used(r));
}

/* "rank 0 stream 7", "rank 0 thread 1234" */
static json_t *resource_name(const struct model_graph *g, uint32_t task)
{
    const struct model_resource *res = &g->res[g->tasks[task].res];
    char buf[96];
    snprintf(buf, sizeof buf, "rank %d %s %lld", rank_id(g, res->rank), res->gpu ? "stream" : "thread",
             (long long)res->tid);
    return json_string(buf);
}

static const char *task_name(const struct model_graph *g, uint32_t task)
{
    return model_graph_str(g, g->src[task].name);
}

json_t *api_critical_path_json(const struct model_replay *r)
{
    json_t *steps = json_array();
    if (!steps)
        return NULL;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        json_t *path = json_array();
        int64_t by[MODEL_BOUND_COUNT] = {0};
        for (size_t k = s->path_first; k < s->path_first + s->path_n; k++) {
            const struct model_replay_segment *sg = &r->segments[k];
            by[sg->bound] += sg->end - sg->start;
            json_t *seg = json_pack("{s:s, s:o, s:o, s:o, s:s}", "task", task_name(r->g, sg->task), "resource",
                                    resource_name(r->g, sg->task), "start_ms", api_json_ms(sg->start - s->start),
                                    "end_ms", api_json_ms(sg->end - s->start), "bound",
                                    model_bound_name((enum model_bound)sg->bound));
            if (seg && sg->edge == MODEL_EDGE_HOST_POLL) { /* the host waiting on GPU work with no sync call */
                char wait[160];
                snprintf(wait, sizeof wait, "host waits on %s", task_name(r->g, sg->on));
                json_object_set_new(seg, "wait", json_string(wait));
            }
            json_array_append_new(path, seg);
        }
        json_t *totals = json_object();
        for (int b = 0; b < MODEL_BOUND_COUNT; b++)
            json_object_set_new(totals, model_bound_name((enum model_bound)b), api_json_ms(by[b]));
        json_array_append_new(steps, json_pack("{s:i, s:s, s:o, s:o, s:o}", "rank",
                                               rank_id(r->g, s->rank), "step", step_name(r, s),
                                               "replayed_ms", api_json_ms(s->replayed_ns), "by_bound",
                                               totals, "path", path));
    }
    return json_pack("{s:o}", "steps", steps);
}

/* ---- timeline ---------------------------------------------------------------- */

static json_t *us(int64_t ns)
{
    return json_real((double)ns / 1000.0);
}

static const char *timeline_cat(const struct model_task *t)
{
    switch (t->cls) {
    case MODEL_TASK_COPY:
        return "gpu_memcpy";
    case MODEL_TASK_SET:
        return "gpu_memset";
    case MODEL_TASK_KERNEL:
    case MODEL_TASK_COMM:
        return "kernel";
    case MODEL_TASK_CALL:
        return "cuda_runtime";
    default:
        return "cpu_op";
    }
}

/* The call that launched GPU task i (its launch edge), or MODEL_NONE: the
 * timeline links the two by a correlation id, the call's index + 1. */
static uint32_t launched_by(const struct model_graph *g, uint32_t i)
{
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_LAUNCH)
            return g->edges[e].from;
    return MODEL_NONE;
}

/* The distributedInfo of rank `rank`'s timeline: the trace's (backend,
 * NCCL version, process groups) where it had one, so that tools reading
 * replayed timelines (HTA) tell the ranks apart and find their groups. */
static json_t *distributed_info(const struct model_trace *t, int rank, int64_t world)
{
    json_t *d = json_pack("{s:i, s:I}", "rank", rank, "world_size", (json_int_t)world);
    if (!d || !t || !t->has_distributed_info)
        return d;
    if (t->backend != MODEL_NONE)
        json_object_set_new(d, "backend", json_string(model_str(t, t->backend)));
    if (t->nccl_version != MODEL_NONE)
        json_object_set_new(d, "nccl_version", json_string(model_str(t, t->nccl_version)));
    if (!t->n_pgs)
        return d;
    json_t *pgs = json_array();
    for (size_t i = 0; pgs && i < t->n_pgs; i++) {
        const struct model_pg *pg = &t->pgs[i];
        const char *ranks = model_str(t, pg->ranks);
        /* a list of ranks was kept as its JSON text, anything else as text */
        json_t *rv = ranks && ranks[0] == '[' ? json_loads(ranks, 0, NULL) : NULL;
        json_t *o = json_pack("{s:s?, s:s?}", "pg_name", model_str(t, pg->name), "pg_desc", model_str(t, pg->desc));
        if (!o)
            continue;
        if (pg->size >= 0)
            json_object_set_new(o, "pg_size", json_integer(pg->size));
        if (ranks)
            json_object_set_new(o, "ranks", rv ? rv : json_string(ranks));
        json_array_append_new(pgs, o);
    }
    json_object_set_new(d, "pg_count", json_integer((json_int_t)t->n_pgs));
    json_object_set_new(d, "pg_config", pgs);
    return d;
}

json_t *api_timeline_json(const struct model_replay *r, int rank)
{
    const struct model_graph *g = r->g;
    size_t ri = g->n_ranks;
    for (size_t i = 0; i < g->n_ranks; i++)
        if (g->ranks[i].id == rank)
            ri = i;
    if (ri == g->n_ranks)
        return NULL;
    int64_t base = INT64_MAX;
    for (size_t k = 0; k < g->n_res; k++)
        if (g->res[k].rank == ri && g->res[k].origin < base)
            base = g->res[k].origin;
    base = base / 1000000000 * 1000000000; /* whole seconds, like Kineto's base */
    json_t *events = json_array(), *devices = json_array();
    if (!events || !devices) {
        json_decref(events);
        json_decref(devices);
        return NULL;
    }
    for (size_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != ri)
            continue;
        const char *label = model_graph_str(g, res->label);
        if (*label)
            json_array_append_new(events, json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "ph", "M", "name",
                                                    "thread_name", "pid", (json_int_t)res->pid, "tid",
                                                    (json_int_t)res->tid, "args", "name", label));
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            const struct model_task *task = &g->tasks[i];
            int64_t free_at = g->prev[i] == MODEL_NONE ? res->origin : r->end[g->prev[i]];
            if (r->gap[i] > 0 && !res->gpu)
                json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}", "ph", "X",
                                                        "cat", "cpu_op", "name", "host work", "pid",
                                                        (json_int_t)res->pid, "tid", (json_int_t)res->tid,
                                                        "ts", us(free_at - base), "dur", us(r->gap[i])));
            if (task->cls == MODEL_TASK_MARKER)
                continue;
            json_t *args = json_object();
            uint32_t corr = res->gpu ? launched_by(g, i) : i;
            if (corr != MODEL_NONE)
                json_object_set_new(args, "correlation", json_integer((json_int_t)corr + 1));
            if (res->gpu) {
                json_object_set_new(args, "stream", json_integer(res->tid));
                json_object_set_new(args, "device", json_integer(res->pid));
            }
            json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o}", "ph", "X",
                                                    "cat", timeline_cat(task), "name",
                                                    model_graph_str(g, g->src[i].name), "pid",
                                                    (json_int_t)res->pid, "tid", (json_int_t)res->tid, "ts",
                                                    us(r->start[i] - base), "dur",
                                                    us(r->end[i] - r->start[i]), "args", args));
        }
    }
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        if (s->rank != ri)
            continue;
        const struct model_resource *res = &g->res[g->tasks[g->steps[i].begin].res];
        json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:{s:o}}", "ph", "X",
                                                "cat", "user_annotation", "name", step_name(r, s),
                                                "pid", (json_int_t)res->pid, "tid", (json_int_t)res->tid,
                                                "ts", us(s->start - base), "dur", us(s->replayed_ns),
                                                "args", "measured_ms", ms_or_null(s->measured_ns)));
    }
    /* the devices the trace describes, when the graph came from one */
    const struct model_trace *t = g->job ? g->job->ranks[ri] : NULL;
    for (size_t i = 0; t && i < t->n_devices; i++) {
        const struct model_device *d = &t->devices[i];
        json_array_append_new(devices, json_pack("{s:I, s:s?, s:I, s:i, s:i, s:i}", "id", (json_int_t)d->id,
                                                 "name", model_str(t, d->name), "totalGlobalMem",
                                                 (json_int_t)d->total_mem, "computeMajor", d->major,
                                                 "computeMinor", d->minor, "numSms", d->num_sms));
    }
    int64_t world = t && t->world_size >= 0 ? t->world_size : (int64_t)g->n_ranks;
    return json_pack("{s:i, s:o, s:o, s:s, s:I, s:s, s:o}", "schemaVersion", 1, "deviceProperties", devices,
                     "distributedInfo", distributed_info(t, rank, world),
                     "displayTimeUnit", "ms", "baseTimeNanoseconds", (json_int_t)base, "traceName",
                     "stepcast replay", "traceEvents", events);
}
