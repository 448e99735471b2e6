/* api/timeline_json.c: the replayed timeline of one rank (timeline_json.h).
 * With the rank's trace at hand its events are written again at their
 * replayed times (original names, categories, arguments, flows); without
 * it, the graph's tasks. */
#include "api/timeline_json.h"

#include <stdlib.h>
#include <string.h>

#include "api/inspect_json.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

static json_t *us(int64_t ns)
{
    return json_real((double)ns / 1000.0);
}

/* ---- header ------------------------------------------------------------------ */

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

static json_t *device_properties(const struct model_trace *t)
{
    json_t *devices = json_array();
    for (size_t i = 0; devices && t && i < t->n_devices; i++) {
        const struct model_device *d = &t->devices[i];
        json_array_append_new(devices, json_pack("{s:I, s:s?, s:I, s:i, s:i, s:i}", "id", (json_int_t)d->id,
                                                 "name", model_str(t, d->name), "totalGlobalMem",
                                                 (json_int_t)d->total_mem, "computeMajor", d->major,
                                                 "computeMinor", d->minor, "numSms", d->num_sms));
    }
    return devices;
}

static json_t *task_event(const struct model_replay *r, uint32_t i, int64_t base);

/* ---- the trace replayed ---------------------------------------------------- */

/* Where measured times on one track land on the replayed timeline: task
 * boundaries (measured, replayed), both sorted. */
struct anchors {
    int64_t *m, *r;
    size_t n, cap;
};

struct replayed {
    const struct model_replay *rp;
    const struct model_graph *g;
    const struct model_trace *t;
    uint16_t ri;
    int64_t base;
    int64_t lo, hi;        /* measured extent of the modelled steps and their work */
    int64_t shift;         /* replayed - measured at the first step's start */
    uint32_t *task_of;     /* by event: its task, or MODEL_NONE */
    struct anchors *track; /* by track */
    json_t *events;
};

static int anchor_add(struct anchors *a, int64_t m, int64_t r)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int64_t *nm = realloc(a->m, cap * sizeof *nm);
        if (!nm)
            return -1;
        a->m = nm;
        int64_t *nr = realloc(a->r, cap * sizeof *nr);
        if (!nr)
            return -1;
        a->r = nr;
        a->cap = cap;
    }
    a->m[a->n] = m;
    a->r[a->n++] = r;
    return 0;
}

/* A replayed time for measured time ts on a track: linear between the
 * anchors around it, shifted as the nearest one outside them. */
static int64_t map_time(const struct replayed *x, uint32_t track, int64_t ts)
{
    const struct anchors *a = track < x->t->n_tracks ? &x->track[track] : NULL;
    if (!a || !a->n)
        return ts + x->shift;
    size_t lo = 0, hi = a->n; /* first anchor after ts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->m[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return ts + a->r[0] - a->m[0];
    if (lo == a->n)
        return ts + a->r[a->n - 1] - a->m[a->n - 1];
    size_t k = lo - 1;
    int64_t dm = a->m[k + 1] - a->m[k];
    double f = dm > 0 ? (double)(ts - a->m[k]) / (double)dm : 0.0;
    return a->r[k] + (int64_t)(f * (double)(a->r[k + 1] - a->r[k]));
}

/* Sort each track's anchors by measured time and make the replayed times
 * never decrease along them. */
static void anchors_finish(struct anchors *a)
{
    for (size_t i = 1; i < a->n; i++) { /* insertion: nearly sorted already */
        int64_t m = a->m[i], r = a->r[i];
        size_t j = i;
        for (; j > 0 && (a->m[j - 1] > m || (a->m[j - 1] == m && a->r[j - 1] > r)); j--) {
            a->m[j] = a->m[j - 1];
            a->r[j] = a->r[j - 1];
        }
        a->m[j] = m;
        a->r[j] = r;
    }
    for (size_t i = 1; i < a->n; i++)
        if (a->r[i] < a->r[i - 1])
            a->r[i] = a->r[i - 1];
}

static int replayed_init(struct replayed *x)
{
    const struct model_graph *g = x->g;
    const struct model_trace *t = x->t;
    const struct model_replay *rp = x->rp;
    x->task_of = malloc((t->n_events ? t->n_events : 1) * sizeof *x->task_of);
    x->track = calloc(t->n_tracks ? t->n_tracks : 1, sizeof *x->track);
    if (!x->task_of || !x->track)
        return -1;
    memset(x->task_of, 0xff, t->n_events * sizeof *x->task_of);
    x->lo = INT64_MAX;
    x->hi = INT64_MIN;
    for (size_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != x->ri || res->track >= t->n_tracks)
            continue;
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            uint32_t ev = g->src[i].event;
            if (ev == MODEL_NONE || ev >= t->n_events)
                continue;
            const struct model_event *e = &t->events[ev];
            x->task_of[ev] = i;
            if (anchor_add(&x->track[res->track], e->ts, rp->start[i]) ||
                anchor_add(&x->track[res->track], e->ts + e->dur, rp->end[i]))
                return -1;
            if (e->ts < x->lo)
                x->lo = e->ts;
            if (e->ts + e->dur > x->hi)
                x->hi = e->ts + e->dur;
        }
    }
    int first = 1;
    for (size_t k = 0; k < g->n_steps; k++) {
        const struct model_graph_step *gs = &g->steps[k];
        if (gs->rank != x->ri || gs->step >= t->n_steps)
            continue;
        const struct model_step *s = &t->steps[gs->step];
        if (s->track < t->n_tracks &&
            (anchor_add(&x->track[s->track], s->start, rp->start[gs->begin]) ||
             anchor_add(&x->track[s->track], s->end, rp->start[gs->end])))
            return -1;
        if (first || s->start < x->lo) {
            x->shift = rp->start[gs->begin] - s->start;
            first = 0;
        }
        if (s->start < x->lo)
            x->lo = s->start;
        if (s->end > x->hi)
            x->hi = s->end;
    }
    for (size_t k = 0; k < t->n_tracks; k++)
        anchors_finish(&x->track[k]);
    return 0;
}

static void replayed_release(struct replayed *x)
{
    for (size_t k = 0; x->track && k < x->t->n_tracks; k++) {
        free(x->track[k].m);
        free(x->track[k].r);
    }
    free(x->track);
    free(x->task_of);
}

/* An id as the trace wrote it: its string, or its number. */
static json_t *track_id(const struct model_trace *t, uint32_t str, int64_t num)
{
    return str != MODEL_NONE ? json_string(model_str(t, str)) : json_integer(num);
}

/* A value kept as its JSON text (Input Dims, ...): the value again, or the
 * text when it does not parse. */
static void set_raw(json_t *o, const char *key, const struct model_trace *t, uint32_t id)
{
    const char *text = model_str(t, id);
    if (!text)
        return;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    json_object_set_new(o, key, v ? v : json_string(text));
}

static void set_int(json_t *o, const char *key, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, key, json_integer(v));
}

static void set_str(json_t *o, const char *key, const struct model_trace *t, uint32_t id)
{
    if (id != MODEL_NONE)
        json_object_set_new(o, key, json_string(model_str(t, id)));
}

static json_t *shape3(const int32_t v[3])
{
    return json_pack("[i, i, i]", v[0], v[1], v[2]);
}

/* Collective coll's arguments (an index into t's colls, or MODEL_NONE). */
static void coll_args(json_t *a, const struct model_trace *t, uint32_t coll)
{
    if (coll == MODEL_NONE || coll >= t->n_colls)
        return;
    const struct model_collective *c = &t->colls[coll];
    set_str(a, "Collective name", t, c->name);
    set_int(a, "In msg nelems", c->in_nelems);
    set_int(a, "Out msg nelems", c->out_nelems);
    set_int(a, "Group size", c->group_size);
    set_str(a, "dtype", t, c->dtype);
    set_str(a, "In split size", t, c->in_split);
    set_str(a, "Out split size", t, c->out_split);
    set_str(a, "Process Group Name", t, c->pg_name);
    set_str(a, "Process Group Description", t, c->pg_desc);
    set_raw(a, "Process Group Ranks", t, c->pg_ranks);
    set_int(a, "Seq", c->seq);
}

/* An operator's arguments as written. */
static void op_args(json_t *a, const struct model_trace *t, const struct model_op_args *g)
{
    set_raw(a, "Input Dims", t, g->input_dims);
    set_raw(a, "Input type", t, g->input_types);
    set_raw(a, "Concrete Inputs", t, g->concrete_inputs);
    coll_args(a, t, g->coll);
}

/* The arguments the trace gave event e, as Kineto names them. */
static json_t *event_args(const struct model_trace *t, const struct model_event *e)
{
    json_t *a = json_object();
    if (!a)
        return NULL;
    set_int(a, "External id", e->external_id);
    set_int(a, "correlation", e->correlation);
    if (e->info == MODEL_NONE)
        return a;
    if (!model_kind_has_info(e->kind)) {
        if (e->info < t->n_op_args)
            op_args(a, t, &t->op_args[e->info]);
        return a;
    }
    if (e->info >= t->n_infos)
        return a;
    const struct model_info *in = &t->infos[e->info];
    if (model_kind_is_gpu(e->kind)) {
        set_int(a, "device", in->device);
        set_int(a, "stream", in->stream);
    }
    if (in->grid[0] > 0) {
        json_object_set_new(a, "grid", shape3(in->grid));
        json_object_set_new(a, "block", shape3(in->block));
    }
    set_int(a, "bytes", in->bytes);
    coll_args(a, t, in->coll);
    if (in->sync != MODEL_NONE && in->sync < t->n_syncs) {
        const struct model_sync *s = &t->syncs[in->sync];
        set_str(a, "cuda_sync_kind", t, s->sync_kind);
        set_int(a, "wait_on_stream", s->wait_on_stream);
        set_int(a, "wait_on_cuda_event_record_corr_id", s->wait_on_record_corr);
        set_int(a, e->kind == MODEL_EV_CUDA_SYNC ? "wait_on_cuda_event_id" : "event_id", s->event_id);
    }
    return a;
}

/* Whether event ev is a step's own annotation, which the timeline writes
 * from the replayed step instead. */
static int is_step_event(const struct model_trace *t, uint32_t ev)
{
    for (size_t k = 0; k < t->n_steps; k++)
        if (t->steps[k].event == ev && t->steps[k].name == t->events[ev].name)
            return 1;
    return 0;
}

static int kind_written(unsigned kind)
{
    return kind != MODEL_EV_OTHER && kind != MODEL_EV_UNKNOWN;
}

static int write_event(struct replayed *x, uint32_t ev)
{
    const struct model_trace *t = x->t;
    const struct model_event *e = &t->events[ev];
    const struct model_track *tr = &t->tracks[e->track];
    uint32_t task = x->task_of[ev];
    int64_t start, end;
    if (task != MODEL_NONE) {
        start = x->rp->start[task];
        end = x->rp->end[task];
    } else {
        start = map_time(x, e->track, e->ts);
        end = map_time(x, e->track, e->ts + e->dur);
    }
    json_t *args = event_args(t, e);
    if (!args)
        return -1;
    json_object_set_new(args, "measured_dur", us(e->dur));
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "ph", "X", "cat",
                          model_str(t, t->cats[e->cat].name), "name", model_str(t, e->name), "pid",
                          track_id(t, tr->pid_str, tr->pid), "tid", track_id(t, tr->tid_str, tr->tid), "ts",
                          us(start - x->base), "dur", us(end > start ? end - start : 0), "args", args);
    return json_array_append_new(x->events, o);
}

static int write_flow(struct replayed *x, const struct model_flow *f)
{
    const struct model_trace *t = x->t;
    const struct model_track *tr = &t->tracks[f->track];
    const char *cat = model_str(t, t->cats[f->cat].name);
    char ph[2] = {(char)f->phase, 0};
    json_t *o = json_pack("{s:s, s:I, s:o, s:o, s:o, s:s, s:s}", "ph", ph, "id", (json_int_t)f->id, "pid",
                          track_id(t, tr->pid_str, tr->pid), "tid", track_id(t, tr->tid_str, tr->tid), "ts",
                          us(map_time(x, f->track, f->ts) - x->base), "cat", cat, "name", cat);
    if (o && f->phase == 'f')
        json_object_set_new(o, "bp", json_string("e"));
    return json_array_append_new(x->events, o);
}

static int write_steps(struct replayed *x)
{
    const struct model_trace *t = x->t;
    for (size_t k = 0; k < x->rp->n_steps; k++) {
        const struct model_graph_step *gs = &x->g->steps[k];
        const struct model_replay_step *s = &x->rp->steps[k];
        if (gs->rank != x->ri || gs->step >= t->n_steps)
            continue;
        const struct model_step *ms = &t->steps[gs->step];
        const struct model_track *tr = &t->tracks[ms->track];
        json_t *args = ms->event < t->n_events ? event_args(t, &t->events[ms->event]) : json_object();
        if (!args)
            return -1;
        json_object_set_new(args, "measured_dur", us(ms->end - ms->start));
        if (json_array_append_new(x->events,
                                  json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "ph", "X", "cat",
                                            "user_annotation", "name", model_graph_str(x->g, gs->name), "pid",
                                            track_id(t, tr->pid_str, tr->pid), "tid",
                                            track_id(t, tr->tid_str, tr->tid), "ts", us(s->start - x->base),
                                            "dur", us(s->replayed_ns), "args", args)))
            return -1;
    }
    return 0;
}

static int write_track_names(struct replayed *x)
{
    const struct model_trace *t = x->t;
    for (size_t k = 0; k < t->n_tracks; k++) {
        const struct model_track *tr = &t->tracks[k];
        if (tr->label == MODEL_NONE)
            continue;
        if (json_array_append_new(x->events, json_pack("{s:s, s:s, s:o, s:o, s:{s:s}}", "ph", "M", "name",
                                                       "thread_name", "pid", track_id(t, tr->pid_str, tr->pid),
                                                       "tid", track_id(t, tr->tid_str, tr->tid), "args",
                                                       "name", model_str(t, tr->label))))
            return -1;
    }
    return 0;
}

/* The rank's events replayed into x->events. */
static int trace_events(struct replayed *x)
{
    const struct model_trace *t = x->t;
    if (replayed_init(x) || write_track_names(x))
        return -1;
    for (uint32_t ev = 0; ev < t->n_events; ev++) {
        const struct model_event *e = &t->events[ev];
        if (x->task_of[ev] == MODEL_NONE &&
            (!kind_written(e->kind) || e->ts < x->lo || e->ts >= x->hi || is_step_event(t, ev)))
            continue;
        if (write_event(x, ev))
            return -1;
    }
    for (size_t k = 0; k < t->n_flows; k++)
        if (t->flows[k].ts >= x->lo && t->flows[k].ts < x->hi && write_flow(x, &t->flows[k]))
            return -1;
    /* tasks no event stands for (added by a what-if's transform) */
    for (size_t i = 0; i < x->g->n_tasks; i++)
        if (x->g->tasks[i].rank == x->ri && x->g->src[i].event == MODEL_NONE &&
            x->g->tasks[i].cls != MODEL_TASK_MARKER && json_array_append_new(x->events, task_event(x->rp, (uint32_t)i, x->base)))
            return -1;
    return write_steps(x);
}

/* ---- the graph's tasks --------------------------------------------------------- */

static const char *task_cat(const struct model_task *t)
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

/* The call that launched GPU task i (its launch edge), or MODEL_NONE. */
static uint32_t launched_by(const struct model_graph *g, uint32_t i)
{
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_LAUNCH)
            return g->edges[e].from;
    return MODEL_NONE;
}

/* Task i as a complete event on its resource, linked to the call that
 * launched it by a correlation id (the call's index + 1). */
static json_t *task_event(const struct model_replay *r, uint32_t i, int64_t base)
{
    const struct model_graph *g = r->g;
    const struct model_resource *res = &g->res[g->tasks[i].res];
    json_t *args = json_object();
    uint32_t corr = res->gpu ? launched_by(g, i) : i;
    if (corr != MODEL_NONE)
        json_object_set_new(args, "correlation", json_integer((json_int_t)corr + 1));
    if (res->gpu) {
        json_object_set_new(args, "stream", json_integer(res->tid));
        json_object_set_new(args, "device", json_integer(res->pid));
    }
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o}", "ph", "X", "cat", task_cat(&g->tasks[i]), "name",
                     model_graph_str(g, g->src[i].name), "pid", (json_int_t)res->pid, "tid", (json_int_t)res->tid,
                     "ts", us(r->start[i] - base), "dur", us(r->end[i] - r->start[i]), "args", args);
}

static int task_events(const struct model_replay *r, uint16_t ri, int64_t base, json_t *events)
{
    const struct model_graph *g = r->g;
    for (size_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != ri)
            continue;
        const char *label = model_graph_str(g, res->label);
        if (*label &&
            json_array_append_new(events, json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "ph", "M", "name",
                                                    "thread_name", "pid", (json_int_t)res->pid, "tid",
                                                    (json_int_t)res->tid, "args", "name", label)))
            return -1;
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            const struct model_task *task = &g->tasks[i];
            int64_t free_at = g->prev[i] == MODEL_NONE ? res->origin : r->end[g->prev[i]];
            if (r->gap[i] > 0 && !res->gpu &&
                json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}", "ph", "X", "cat",
                                                        "cpu_op", "name", "host work", "pid", (json_int_t)res->pid,
                                                        "tid", (json_int_t)res->tid, "ts", us(free_at - base),
                                                        "dur", us(r->gap[i]))))
                return -1;
            if (task->cls != MODEL_TASK_MARKER && json_array_append_new(events, task_event(r, i, base)))
                return -1;
        }
    }
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        if (s->rank != ri)
            continue;
        const struct model_resource *res = &g->res[g->tasks[g->steps[i].begin].res];
        json_t *measured = s->measured_ns < 0 ? json_null() : api_json_ms(s->measured_ns);
        if (json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:{s:o}}", "ph", "X", "cat",
                                                    "user_annotation", "name",
                                                    model_graph_str(g, g->steps[i].name), "pid",
                                                    (json_int_t)res->pid, "tid", (json_int_t)res->tid, "ts",
                                                    us(s->start - base), "dur", us(s->replayed_ns), "args",
                                                    "measured_ms", measured)))
            return -1;
    }
    return 0;
}

/* ---- the document ---------------------------------------------------------------- */

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
    const struct model_trace *t = model_graph_trace(g, (uint16_t)ri);
    json_t *events = json_array();
    int rc;
    if (!events)
        return NULL;
    if (t && !t->shed && t->n_events) {
        struct replayed x = {.rp = r, .g = g, .t = t, .ri = (uint16_t)ri, .base = base, .events = events};
        rc = trace_events(&x);
        replayed_release(&x);
    } else {
        rc = task_events(r, (uint16_t)ri, base, events);
    }
    if (rc) {
        json_decref(events);
        return NULL;
    }
    int64_t world = t && t->world_size >= 0 ? t->world_size : (int64_t)g->n_ranks;
    /* distributedInfo before the events: its "rank" is the file's first */
    return json_pack("{s:i, s:o, s:o, s:s, s:I, s:s, s:o}", "schemaVersion", 1, "deviceProperties",
                     device_properties(t), "distributedInfo", distributed_info(t, rank, world),
                     "displayTimeUnit", "ms", "baseTimeNanoseconds", (json_int_t)base, "traceName",
                     "stepcast replay", "traceEvents", events);
}
