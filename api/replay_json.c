/* api/replay_json.c: replay, critical path and timeline documents
 * (replay_json.h). */
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
    const struct model_trace *t = r->g->job->ranks[s->rank];
    return model_str(t, t->steps[s->step].name);
}

static json_t *graph_json(const struct model_graph *g)
{
    json_t *kinds = json_object(), *offsets = json_array(), *depths = json_array();
    for (int k = 0; k < MODEL_EDGE_KIND_COUNT; k++)
        json_object_set_new(kinds, model_edge_kind_name((enum model_edge_kind)k),
                            json_integer((json_int_t)g->edges_by_kind[k]));
    for (size_t i = 0; i < g->job->n_ranks; i++) {
        json_array_append_new(offsets, api_json_ms(g->clock_offset_ns[i]));
        json_array_append_new(depths, json_integer(g->launch_queue_depth[i]));
    }
    return json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "tasks", (json_int_t)g->n_tasks,
                     "edges", (json_int_t)g->n_edges, "edges_by_kind", kinds,
                     "event_syncs_inferred", (json_int_t)g->inferred_event_syncs,
                     "event_syncs_from_cuda_sync", (json_int_t)g->cuda_sync_event_syncs,
                     "collectives_matched", (json_int_t)g->collectives_matched,
                     "collectives_kept", (json_int_t)g->collectives_kept, "clock_offsets_ms", offsets,
                     "launch_queue_depth", depths);
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
            steps, json_pack("{s:i, s:s, s:o, s:o, s:o, s:b, s:{s:o, s:o, s:o, s:o, s:o}, s:o}", "rank",
                             r->g->job->rank_ids[s->rank], "step", step_name(r, s), "measured_ms",
                             api_json_ms(s->measured_ns), "replayed_ms", api_json_ms(s->replayed_ns),
                             "error_pct", pct(s->error_pct), "partial", s->partial, "breakdown",
                             "compute_exposed", api_json_ms(b->compute_exposed), "overlap",
                             api_json_ms(b->overlap), "comm_exposed", api_json_ms(b->comm_exposed),
                             "host", api_json_ms(b->host), "idle", api_json_ms(b->idle),
                             "collective_kept_ms", api_json_ms(s->collective_kept_ns)));
    }
    return json_pack("{s:o, s:o, s:o, s:I, s:o}", "steps", steps, "mean_abs_error_pct",
                     pct(r->mean_abs_error_pct), "max_abs_error_pct", pct(r->max_abs_error_pct),
                     "forced", (json_int_t)r->forced, "graph", graph_json(r->g));
}

/* "rank 0 stream 7", "rank 0 thread 1234" */
static json_t *resource_name(const struct model_graph *g, uint32_t task)
{
    const struct model_resource *res = &g->res[g->tasks[task].res];
    const struct model_trace *t = g->job->ranks[res->rank];
    const struct model_track *k = &t->tracks[res->track];
    char buf[96];
    snprintf(buf, sizeof buf, "rank %d %s %lld", g->job->rank_ids[res->rank],
             res->gpu ? "stream" : "thread", (long long)k->tid);
    return json_string(buf);
}

static const char *task_name(const struct model_graph *g, uint32_t task)
{
    const struct model_task *t = &g->tasks[task];
    if (t->event == MODEL_NONE)
        return "(step boundary)";
    const struct model_trace *tr = g->job->ranks[t->rank];
    return model_str(tr, tr->events[t->event].name);
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
            json_array_append_new(path, json_pack("{s:s, s:o, s:o, s:o, s:s}", "task",
                                                  task_name(r->g, sg->task), "resource",
                                                  resource_name(r->g, sg->task), "start_ms",
                                                  api_json_ms(sg->start - s->start), "end_ms",
                                                  api_json_ms(sg->end - s->start), "bound",
                                                  model_bound_name((enum model_bound)sg->bound)));
        }
        json_t *totals = json_object();
        for (int b = 0; b < MODEL_BOUND_COUNT; b++)
            json_object_set_new(totals, model_bound_name((enum model_bound)b), api_json_ms(by[b]));
        json_array_append_new(steps, json_pack("{s:i, s:s, s:o, s:o, s:o}", "rank",
                                               r->g->job->rank_ids[s->rank], "step", step_name(r, s),
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

static const char *gpu_cat(const struct model_trace *t, const struct model_event *e)
{
    (void)t;
    return e->kind == MODEL_EV_MEMCPY ? "gpu_memcpy" : e->kind == MODEL_EV_MEMSET ? "gpu_memset" : "kernel";
}

json_t *api_timeline_json(const struct model_replay *r, int rank)
{
    const struct model_graph *g = r->g;
    const struct model_job *job = g->job;
    size_t ri = job->n_ranks;
    for (size_t i = 0; i < job->n_ranks; i++)
        if (job->rank_ids[i] == rank)
            ri = i;
    if (ri == job->n_ranks)
        return NULL;
    const struct model_trace *t = job->ranks[ri];
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
        const struct model_track *tk = &t->tracks[res->track];
        if (tk->label != MODEL_NONE)
            json_array_append_new(events, json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "ph", "M", "name",
                                                    "thread_name", "pid", (json_int_t)tk->pid, "tid",
                                                    (json_int_t)tk->tid, "args", "name",
                                                    model_str(t, tk->label)));
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            const struct model_task *task = &g->tasks[i];
            int64_t free_at = g->prev[i] == MODEL_NONE ? res->origin : r->end[g->prev[i]];
            if (task->gap > 0 && !res->gpu)
                json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}", "ph", "X",
                                                        "cat", "cpu_op", "name", "host work", "pid",
                                                        (json_int_t)tk->pid, "tid", (json_int_t)tk->tid,
                                                        "ts", us(free_at - base), "dur", us(task->gap)));
            if (task->event == MODEL_NONE)
                continue;
            const struct model_event *e = &t->events[task->event];
            json_t *args = json_pack("{s:I}", "correlation", (json_int_t)e->correlation);
            if (e->external_id >= 0)
                json_object_set_new(args, "External id", json_integer(e->external_id));
            if (res->gpu) {
                json_object_set_new(args, "stream", json_integer(tk->tid));
                json_object_set_new(args, "device", json_integer(tk->pid));
            }
            json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o}", "ph", "X",
                                                    "cat", res->gpu ? gpu_cat(t, e) : model_str(t, t->cats[e->cat].name),
                                                    "name", model_str(t, e->name), "pid", (json_int_t)tk->pid,
                                                    "tid", (json_int_t)tk->tid, "ts",
                                                    us(r->start[i] - base), "dur",
                                                    us(r->end[i] - r->start[i]), "args", args));
        }
    }
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        if (s->rank != ri)
            continue;
        const struct model_step *ms = &t->steps[s->step];
        const struct model_track *tk = &t->tracks[ms->track];
        json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:{s:o}}", "ph", "X",
                                                "cat", "user_annotation", "name", model_str(t, ms->name),
                                                "pid", (json_int_t)tk->pid, "tid", (json_int_t)tk->tid,
                                                "ts", us(s->start - base), "dur", us(s->replayed_ns),
                                                "args", "measured_ms", api_json_ms(s->measured_ns)));
    }
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct model_device *d = &t->devices[i];
        json_array_append_new(devices, json_pack("{s:I, s:s?, s:I, s:i, s:i, s:i}", "id", (json_int_t)d->id,
                                                 "name", model_str(t, d->name), "totalGlobalMem",
                                                 (json_int_t)d->total_mem, "computeMajor", d->major,
                                                 "computeMinor", d->minor, "numSms", d->num_sms));
    }
    return json_pack("{s:i, s:o, s:{s:i, s:I}, s:s, s:I, s:s, s:o}", "schemaVersion", 1, "deviceProperties",
                     devices, "distributedInfo", "rank", rank, "world_size",
                     (json_int_t)(t->world_size >= 0 ? t->world_size : (int64_t)job->n_ranks),
                     "displayTimeUnit", "ms", "baseTimeNanoseconds", (json_int_t)base, "traceName",
                     "stepcast replay", "traceEvents", events);
}
