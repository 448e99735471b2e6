/* model/graph_rank.c: one rank's part of the graph being built
 * (graph_build_internal.h): its window of steps, its threads' runtime calls
 * and its streams' GPU work as tasks in order, the lookups the edge
 * finders use on them, and what the part keeps of its trace once its
 * edges are found (names, collective metadata), so the trace can go.
 *
 * Apart from the edges (graph_edges.c) because these are the sequences
 * the edges are found between: each edge class reads them, none changes
 * them. */
#include "model/graph_build_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "model/collective.h"
#include "model/kernel_family.h"
#include "model/runtime_api.h"
#include "model/steps.h"
#include "common/banned.h"

int gb_add_edge(struct builder *b, uint32_t from, uint32_t to, int64_t lat, uint8_t type,
                uint8_t kind, int inferred)
{
    if (from == to || from == MODEL_NONE || to == MODEL_NONE)
        return SC_OK;
    assert(from < b->n_tasks && to < b->n_tasks); /* between tasks of this part */
    assert(type <= MODEL_SF && kind < MODEL_EDGE_KIND_COUNT);
    if (sc_vec_reserve((void **)&b->edges, &b->cap_edges, b->n_edges + 1, sizeof *b->edges))
        return OOM(b);
    b->edges[b->n_edges++] = (struct pending_edge){to, from, lat, type, kind, (uint8_t)inferred};
    return SC_OK;
}

int gb_new_task(struct builder *b, const struct btask *t, int64_t ts, int64_t end)
{
    if (sc_vec_reserve((void **)&b->tasks, &b->cap_tasks, b->n_tasks + 1, sizeof *b->tasks))
        return OOM(b);
    if (b->n_tasks + 1 > b->cap_times) {
        size_t cap = b->cap_tasks;
        int64_t *a = realloc(b->ts, cap * sizeof *a), *c;
        if (!a)
            return OOM(b);
        b->ts = a;
        if (!(c = realloc(b->end, cap * sizeof *c)))
            return OOM(b);
        b->end = c;
        b->cap_times = cap;
    }
    if (b->n_tasks >= (1u << 30))
        return sc_error_set(b->err, SC_ELIMIT, "more than %u tasks", 1u << 30);
    assert(t->res < b->n_res && t->kind < MODEL_TASK_CLASS_COUNT); /* its resource made first */
    b->tasks[b->n_tasks] = *t;
    b->ts[b->n_tasks] = ts;
    b->end[b->n_tasks] = end;
    b->n_tasks++;
    return SC_OK;
}

int gb_new_res(struct builder *b, uint16_t rank, int gpu, uint32_t track, int64_t origin)
{
    if (sc_vec_reserve((void **)&b->res, &b->cap_res, b->n_res + 1, sizeof *b->res))
        return OOM(b);
    b->res[b->n_res++] = (struct model_resource){.rank = rank, .gpu = (uint8_t)gpu, .track = track,
                                                 .first = (uint32_t)b->n_tasks, .last = MODEL_NONE,
                                                 .origin = origin};
    return SC_OK;
}

/* ---- per-rank sequences ----------------------------------------------------------- */

struct item {
    int64_t t;     /* sort key: start time */
    int64_t dur;
    uint32_t event; /* event, or the step index for markers */
    uint32_t track;
    uint8_t prio;  /* order at equal times: step end, step begin, call */
    uint8_t kind;  /* enum model_task_kind */
};

static int by_track_time(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->prio != y->prio)
        return x->prio < y->prio ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1; /* an enclosing call first */
    return x->event < y->event ? -1 : x->event > y->event;
}

/* items[0..n) by by_track_time: a stable pass by track (each below
 * n_tracks), then each track's items, which come as a few long runs in
 * order (sc_sort_runs). The same order as a
 * sort of the whole by by_track_time, a total order, in fewer comparisons.
 * -1 when out of memory. */
static int sort_by_track_time(struct item *items, size_t n, size_t n_tracks)
{
    if (n < 2)
        return 0;
    struct item *tmp = malloc(n * sizeof *tmp);
    size_t *at = calloc(n_tracks + 1, sizeof *at);
    if (!tmp || !at) {
        free(tmp);
        free(at);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        at[items[i].track + 1]++;
    for (size_t k = 0; k < n_tracks; k++)
        at[k + 1] += at[k];
    for (size_t i = 0; i < n; i++)
        tmp[at[items[i].track]++] = items[i];
    for (size_t k = 0, from = 0; k < n_tracks; from = at[k++]) /* at[k]: the end of track k's */
        sc_sort_runs(tmp + from, items + from, at[k] - from, sizeof *items, by_track_time);
    memcpy(items, tmp, n * sizeof *items);
    free(tmp);
    free(at);
    return 0;
}

int gb_is_call(unsigned kind)
{
    return kind == MODEL_EV_RUNTIME || kind == MODEL_EV_DRIVER;
}

/* Whether event e is in the window, in part: a thread's spans (in_spans). */
static int in_window(const struct rank_build *r, const struct model_event *e)
{
    return e->ts + e->dur >= r->origin && e->ts <= r->wend;
}

/* Select the steps in range and set the window. */
int gb_rank_window(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    r->step_lo = t->n_steps;
    r->step_hi = 0;
    for (size_t i = 0; i < t->n_steps; i++) {
        int64_t n = t->steps[i].number;
        if ((b->o.first_step >= 0 && n < b->o.first_step) || (b->o.last_step >= 0 && n > b->o.last_step))
            continue;
        if (i < r->step_lo)
            r->step_lo = i;
        r->step_hi = i + 1;
    }
    if (r->step_lo >= r->step_hi) {
        char why[512];
        model_steps_describe(t, b->o.first_step, b->o.last_step, why, sizeof why);
        return sc_error_set(b->err, SC_EINVAL, "'%s': %s", t->source, why);
    }
    r->origin = t->steps[r->step_lo].start;
    r->wend = t->steps[r->step_hi - 1].end;
    /* each track's events in it, by kind: what a thread's spans hold, known
     * before they are gathered (gb_thread_has, thread_events) */
    if (!(r->window_kinds = calloc(t->n_tracks ? t->n_tracks * MODEL_EV_KIND_COUNT : 1, sizeof *r->window_kinds)))
        return OOM(b);
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (in_window(r, e))
            r->window_kinds[(size_t)e->track * MODEL_EV_KIND_COUNT + e->kind]++;
    }
    return SC_OK;
}

/* Threads: calls in the window (nested driver calls folded into the call
 * around them) and step markers; one resource per thread. */
int gb_rank_threads(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    struct item *items = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;
    uint32_t step_track = t->steps[r->step_lo].track;

    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (!gb_is_call(e->kind) || e->ts < r->origin || e->ts >= r->wend)
            continue;
        if (sc_vec_reserve((void **)&items, &cap, n + 1, sizeof *items))
            goto oom;
        items[n++] = (struct item){e->ts, e->dur, (uint32_t)i, e->track, 2, MODEL_TASK_CALL};
    }
    for (size_t k = r->step_lo; k < r->step_hi; k++) {
        if (sc_vec_reserve((void **)&items, &cap, n + 2, sizeof *items))
            goto oom;
        items[n++] = (struct item){t->steps[k].start, 0, (uint32_t)k, step_track, 1, MODEL_TASK_MARKER};
        items[n++] = (struct item){t->steps[k].end, 0, (uint32_t)k, step_track, 0, MODEL_TASK_MARKER};
    }
    if (sort_by_track_time(items, n, t->n_tracks))
        goto oom;
    r->thread_lo = (uint32_t)b->n_res;
    for (size_t i = 0; i < n;) {
        uint32_t track = items[i].track;
        int64_t prev_end = r->origin, outer_end = INT64_MIN;
        uint32_t outer = MODEL_NONE;
        if ((rc = gb_new_res(b, r->rank, 0, track, r->origin)))
            goto out;
        for (; i < n && items[i].track == track; i++) {
            const struct item *it = &items[i];
            struct btask task = {0};
            if (it->kind == MODEL_TASK_CALL) {
                int64_t end = it->t + it->dur;
                if (it->t < outer_end && end <= outer_end) { /* nested in the call before */
                    r->outer[it->event] = outer;
                    continue;
                }
                outer = it->event;
                outer_end = end;
                r->outer[it->event] = it->event;
                r->task_of[it->event] = (uint32_t)b->n_tasks;
                task.event = it->event;
                task.dur = it->dur;
            } else {
                task.event = MODEL_NONE;
                task.dur = 0;
            }
            task.kind = it->kind;
            task.gap = max64(0, it->t - prev_end);
            task.res = (uint32_t)(b->n_res - 1);
            task.rank = r->rank;
            if (it->kind == MODEL_TASK_MARKER) {
                const struct model_step *s = &t->steps[it->event];
                if (sc_vec_reserve((void **)&b->steps, &b->cap_steps, b->n_steps + 1, sizeof *b->steps))
                    goto oom;
                if (it->prio == 1) { /* begin */
                    b->steps[b->n_steps++] = (struct model_graph_step){
                        .rank = r->rank, .step = it->event, .begin = (uint32_t)b->n_tasks, .end = MODEL_NONE,
                        .measured_ns = s->end - s->start, .partial = s->partial};
                } else {
                    for (size_t k = b->n_steps; k-- > 0;)
                        if (b->steps[k].rank == r->rank && b->steps[k].step == it->event) {
                            b->steps[k].end = (uint32_t)b->n_tasks;
                            break;
                        }
                }
            }
            if ((rc = gb_new_task(b, &task, it->t, it->t + it->dur)))
                goto out;
            prev_end = max64(prev_end, it->t + it->dur);
            b->res[b->n_res - 1].n++;
        }
    }
    r->thread_hi = (uint32_t)b->n_res;
out:
    free(items);
    return rc;
oom:
    free(items);
    return OOM(b);
}

/* The call task that launched GPU event ev (through the call it is
 * nested in), or MODEL_NONE when its launch is not in the window. */
uint32_t gb_launch_task(const struct rank_build *r, uint32_t ev)
{
    uint32_t call = r->t->link[ev];
    if (call == MODEL_NONE || r->outer[call] == MODEL_NONE)
        return MODEL_NONE;
    return r->task_of[r->outer[call]];
}

/* When GPU event ev was launched, in or out of the window; INT64_MIN when
 * the trace does not hold its launch. */
int64_t gb_launch_ts(const struct rank_build *r, uint32_t ev)
{
    uint32_t call = r->t->link[ev];
    if (call == MODEL_NONE)
        return INT64_MIN;
    return r->t->events[r->outer[call] == MODEL_NONE ? call : r->outer[call]].ts;
}

/* Streams: GPU work launched by a call in the window, or running in the
 * window without a launch in it. */
int gb_rank_streams(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    struct item *items = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;

    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (!model_kind_is_gpu(e->kind))
            continue;
        if (gb_launch_task(r, (uint32_t)i) == MODEL_NONE) {
            /* no launch in the window: keep it if it runs in the window and
             * was not launched after it */
            if (gb_launch_ts(r, (uint32_t)i) >= r->wend)
                continue;
            if (e->ts + e->dur <= r->origin || e->ts >= r->wend)
                continue;
        }
        if (sc_vec_reserve((void **)&items, &cap, n + 1, sizeof *items))
            goto oom;
        uint8_t kind = e->kind == MODEL_EV_MEMCPY   ? MODEL_TASK_COPY
                       : e->kind == MODEL_EV_MEMSET ? MODEL_TASK_SET
                       : model_is_comm_kernel(model_str(t, e->name)) ? MODEL_TASK_COMM
                                                                     : MODEL_TASK_KERNEL;
        items[n++] = (struct item){e->ts, e->dur, (uint32_t)i, e->track, 2, kind};
    }
    if (sort_by_track_time(items, n, t->n_tracks))
        goto oom;
    for (size_t i = 0; i < n;) {
        uint32_t track = items[i].track;
        if ((rc = gb_new_res(b, r->rank, 1, track, r->origin)))
            goto out;
        if (sc_vec_reserve((void **)&r->streams, &r->cap_streams, r->n_streams + 1, sizeof *r->streams))
            goto oom;
        struct stream *s = &r->streams[r->n_streams++];
        s->res = (uint32_t)(b->n_res - 1);
        s->first = (uint32_t)b->n_tasks;
        s->n = 0;
        s->lstart = NULL;
        for (; i < n && items[i].track == track; i++) {
            const struct item *it = &items[i];
            struct btask task = {0};
            task.event = it->event;
            task.dur = it->dur;
            task.kind = it->kind;
            task.res = (uint32_t)(b->n_res - 1);
            task.rank = r->rank;
            if (it->kind == MODEL_TASK_COMM)
                b->res[b->n_res - 1].comm = 1;
            r->task_of[it->event] = (uint32_t)b->n_tasks;
            if ((rc = gb_new_task(b, &task, it->t, it->t + it->dur)))
                goto out;
            b->res[b->n_res - 1].n++;
            s->n++;
        }
        if (!(s->lstart = malloc(s->n * sizeof *s->lstart)))
            goto oom;
        int64_t m = INT64_MIN;
        for (uint32_t k = 0; k < s->n; k++) {
            m = max64(m, gb_launch_ts(r, b->tasks[s->first + k].event));
            s->lstart[k] = m;
        }
    }
out:
    free(items);
    return rc;
oom:
    free(items);
    return OOM(b);
}

/* ---- lookups --------------------------------------------------------------------- */

/* The last task of stream s launched before time `before`, or MODEL_NONE. */
uint32_t gb_last_launched_before(const struct stream *s, int64_t before)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->lstart[mid] < before)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? s->first + (uint32_t)lo - 1 : MODEL_NONE;
}

/* The last of the n tasks from `first` (tasks that end in order: one
 * stream's or one thread's) to end by t, or MODEL_NONE. */
uint32_t gb_last_ending_by(const struct builder *b, uint32_t first, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    assert(n == 0 || first + n <= b->n_tasks);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->end[first + mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? first + (uint32_t)lo - 1 : MODEL_NONE;
}

struct stream *gb_stream_of_task(struct rank_build *r, const struct builder *b, uint32_t task)
{
    assert(task < b->n_tasks);
    uint32_t i = b->stream_ix[b->tasks[task].res];
    assert(i == MODEL_NONE || i < r->n_streams);
    return i == MODEL_NONE ? NULL : &r->streams[i];
}

/* Fill next_gpu, cur_gpu and last_rec along each thread of the rank, and
 * the rank's record calls. */
int gb_thread_scans(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    size_t cap = 0;
    for (size_t i = 0; i < r->n_streams; i++)
        b->stream_ix[r->streams[i].res] = (uint32_t)i;
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++) {
        uint32_t first = b->res[res].first, last = first + b->res[res].n;
        uint32_t cur = MODEL_NONE, rec = MODEL_NONE, next = MODEL_NONE;
        assert(last <= b->n_tasks);
        for (uint32_t k = first; k < last; k++) {
            uint32_t ev = b->tasks[k].event;
            assert(b->tasks[k].res == res); /* a thread's tasks lie side by side */
            if (b->tasks[k].kind == MODEL_TASK_CALL) {
                uint32_t gpu = t->link[ev];
                if (gpu != MODEL_NONE && r->task_of[gpu] != MODEL_NONE)
                    cur = r->task_of[gpu];
                if (t->events[ev].rt == MODEL_RT_EVENT_RECORD) {
                    rec = k;
                    if (sc_vec_reserve((void **)&r->records, &cap, r->n_records + 1, sizeof *r->records))
                        return OOM(b);
                    r->records[r->n_records++] = k;
                }
            }
            b->cur_gpu[k] = cur;
            b->last_rec[k] = rec;
        }
        for (uint32_t k = last; k-- > first;) {
            uint32_t ev = b->tasks[k].event;
            if (b->tasks[k].kind == MODEL_TASK_CALL) {
                uint32_t gpu = t->link[ev];
                if (gpu != MODEL_NONE && r->task_of[gpu] != MODEL_NONE)
                    next = r->task_of[gpu];
            }
            b->next_gpu[k] = next;
        }
    }
    return SC_OK;
}

/* The first GPU task launched by the calls after call task c on its thread. */
uint32_t gb_next_launched(const struct builder *b, uint32_t c)
{
    const struct model_resource *res = &b->res[b->tasks[c].res];
    assert(c >= res->first && c < res->first + res->n); /* c among its thread's tasks */
    return c + 1 < res->first + res->n ? b->next_gpu[c + 1] : MODEL_NONE;
}

/* The last GPU work launched by calls up to c on its thread. */
uint32_t gb_current_stream_task(const struct builder *b, uint32_t c)
{
    return b->cur_gpu[c];
}

/* ---- a thread's recorded work ---------------------------------------------------------- */

/* A thread's spans in the window, sorted and merged: the union of its CPU
 * op intervals (an op of no duration is kept: an instant the thread was
 * busy splits an idle stretch), or the instants its events start and end,
 * as spans of no duration (a stretch between two of them held nothing
 * recorded). Whether they take events of this kind: */
static int mode_takes(enum span_mode mode, unsigned kind)
{
    return mode == SPANS_OPS ? kind == MODEL_EV_CPU_OP : mode != SPANS_MARKS_CALLS || kind != MODEL_EV_PYTHON;
}

/* Whether event e is among the thread's spans in the window (mode). */
static int in_spans(const struct rank_build *r, const struct model_event *e, uint32_t track, enum span_mode mode)
{
    return e->track == track && in_window(r, e) && mode_takes(mode, e->kind);
}

/* The thread's events in the window, counted by kind (gb_rank_window). */
static const uint32_t *kinds_of(const struct rank_build *r, uint32_t track)
{
    return r->window_kinds + (size_t)track * MODEL_EV_KIND_COUNT;
}

int gb_thread_has(const struct rank_build *r, uint32_t track, uint8_t kind)
{
    return kinds_of(r, track)[kind] != 0;
}

/* The thread's events in the window (mode) as spans, into a fresh *v (and
 * *tmp, room for them, to sort through); how many in *n. */
static int thread_events(struct builder *b, struct rank_build *r, uint32_t track, enum span_mode mode,
                         struct sc_span **v, struct sc_span **tmp, size_t *n)
{
    const struct model_trace *t = r->t;
    const uint32_t *by_kind = kinds_of(r, track);
    size_t k = 0;
    *n = 0;
    for (unsigned kind = 0; kind < MODEL_EV_KIND_COUNT; kind++)
        *n += mode_takes(mode, kind) ? by_kind[kind] : 0;
    *v = malloc((*n + 1) * sizeof **v);
    *tmp = malloc((*n + 1) * sizeof **tmp);
    if (!*v || !*tmp) {
        free(*v);
        free(*tmp);
        return OOM(b);
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (in_spans(r, e, track, mode))
            (*v)[k++] = (struct sc_span){e->ts, e->ts + e->dur};
    }
    assert(k == *n);
    return SC_OK;
}

int gb_thread_ops(struct builder *b, struct rank_build *r, uint32_t track, struct sc_span **out, size_t *nout)
{
    struct sc_span *v, *tmp, *u;
    size_t n;
    int rc = thread_events(b, r, track, SPANS_OPS, &v, &tmp, &n);
    if (rc)
        return rc;
    *nout = sc_span_union(v, tmp, n, &u);
    free(u == v ? tmp : v); /* the union ends in one of them */
    *out = u;
    return SC_OK;
}

int gb_thread_marks(struct builder *b, struct rank_build *r, uint32_t track, enum span_mode mode, int64_t **out,
                    size_t *nout)
{
    struct sc_span *v, *tmp;
    size_t n;
    assert(mode != SPANS_OPS);
    int rc = thread_events(b, r, track, mode, &v, &tmp, &n);
    if (rc)
        return rc;
    *nout = sc_span_instants(v, tmp, n); /* over v's memory */
    free(tmp);
    *out = (int64_t *)(void *)v;
    return SC_OK;
}

/* The longest stretch of [a, b] not covered by the busy spans. */
struct sc_span gb_longest_idle(const struct sc_span *busy, size_t n, int64_t a, int64_t b)
{
    struct sc_span best = {a, a};
    int64_t cur = a;
    for (size_t i = sc_span_seek(busy, n, a); i < n && busy[i].a < b; i++) {
        if (busy[i].a > cur && busy[i].a - cur > best.b - best.a)
            best = (struct sc_span){cur, busy[i].a};
        if (busy[i].b > cur)
            cur = busy[i].b;
    }
    if (b > cur && b - cur > best.b - best.a)
        best = (struct sc_span){cur, b};
    return best;
}

/* The longest stretch of [a, b] holding none of the instants at[0..n)
 * (in order), from one to the next. */
struct sc_span gb_longest_between(const int64_t *at, size_t n, int64_t a, int64_t b)
{
    struct sc_span best = {a, a};
    int64_t cur = a;
    for (size_t i = sc_first_after(at, n, a); i < n && at[i] < b; i++) {
        if (at[i] - cur > best.b - best.a)
            best = (struct sc_span){cur, at[i]};
        cur = at[i];
    }
    if (b > cur && b - cur > best.b - best.a)
        best = (struct sc_span){cur, b};
    return best;
}

/* ---- handing the graph over ---------------------------------------------------------------- */

static uint8_t call_kind(enum model_rt_class rt)
{
    switch (rt) {
    case MODEL_RT_LAUNCH:
        return MODEL_CALL_LAUNCH;
    case MODEL_RT_LAUNCH_SYNC:
        return MODEL_CALL_MEMCPY;
    case MODEL_RT_SYNC_STREAM:
    case MODEL_RT_SYNC_DEVICE:
    case MODEL_RT_SYNC_EVENT:
    case MODEL_RT_STREAM_WAIT:
    case MODEL_RT_QUERY:
        return MODEL_CALL_SYNC;
    default:
        return MODEL_CALL_OTHER;
    }
}

/* The size of process group `pg` (a string id of t) as the trace's
 * distributedInfo.pg_config gives it, or -1. */
static int32_t pg_config_size(const struct model_trace *t, uint32_t pg)
{
    const char *name = model_str(t, pg);
    for (size_t i = 0; i < t->n_pgs; i++)
        if (t->pgs[i].size > 0 && strcmp(model_str(t, t->pgs[i].name), name) == 0)
            return t->pgs[i].size;
    return -1;
}

/* What the join needs of the rank's trace, taken now: each task's name and
 * refinement of its class (kernel family, collective kind, call kind), and
 * each communication task's collective metadata (its group size from the
 * kernel's arguments, else from its process group's entry in
 * distributedInfo). */
int gb_rank_keep(struct builder *b)
{
    const struct model_trace *t = b->r.t;
    /* a kernel's family by its name's string id (+1; 0: not yet named): a
     * trace repeats a few hundred kernel names over its tasks */
    uint8_t *family = calloc(t->strings.n ? t->strings.n : 1, 1);
    if (!family)
        return OOM(b);
    for (size_t i = 0; i < b->n_tasks; i++) {
        struct btask *k = &b->tasks[i];
        if (k->event == MODEL_NONE) {
            k->name = MODEL_NONE;
            continue;
        }
        const struct model_event *e = &t->events[k->event];
        k->name = e->name;
        if (k->kind == MODEL_TASK_KERNEL) {
            if (!family[e->name])
                family[e->name] = (uint8_t)(model_kernel_family(model_str(t, e->name)) + 1);
            k->sub = (uint8_t)(family[e->name] - 1);
        } else if (k->kind == MODEL_TASK_COMM) {
            k->sub = (uint8_t)model_coll_op_parse(model_str(t, e->name));
        } else if (k->kind == MODEL_TASK_CALL) {
            k->sub = call_kind((enum model_rt_class)e->rt);
        }
    }
    free(family);
    size_t n = 0;
    for (size_t i = 0; i < b->n_tasks; i++)
        n += b->tasks[i].kind == MODEL_TASK_COMM;
    if (!(b->comm = malloc((n ? n : 1) * sizeof *b->comm)))
        return OOM(b);
    for (size_t res = 0; res < b->n_res; res++) {
        const struct model_resource *rs = &b->res[res];
        if (!rs->gpu || !rs->comm)
            continue;
        for (uint32_t k = rs->first; k < rs->first + rs->n; k++) {
            const struct btask *task = &b->tasks[k];
            if (task->kind != MODEL_TASK_COMM)
                continue;
            struct comm_meta m = {.task = k, .pg = MODEL_NONE, .dtype = MODEL_NONE, .key_seq = -1, .seq = -1,
                                  .bytes = -1, .stream = t->tracks[rs->track].tid, .end = b->end[k],
                                  .group_size = -1, .op = task->sub};
            const struct model_collective *c = model_event_coll(t, &t->events[task->event]);
            if (c) {
                m.bytes = model_coll_bytes(t, c, (enum model_coll_op)m.op);
                m.pg = c->pg_name;
                m.dtype = c->dtype;
                m.seq = c->seq;
                m.key_seq = c->seq >= 0 ? c->seq : c->nccl_seq;
                m.group_size = c->group_size > 0 || c->pg_name == MODEL_NONE ? c->group_size
                                                                              : pg_config_size(t, c->pg_name);
            }
            b->comm[b->n_comm++] = m;
        }
    }
    return SC_OK;
}

void gb_rank_drop_marks(struct rank_build *r)
{
    for (uint32_t k = 0; r->marks && k < r->thread_hi - r->thread_lo; k++)
        free(r->marks[k]);
    free(r->marks);
    free(r->n_marks);
    r->marks = NULL;
    r->n_marks = NULL;
}

/* Free what only finding the rank's edges needed; trim the rest to size. */
void gb_rank_trim(struct builder *b)
{
    struct rank_build *r = &b->r;
    free(r->outer);
    free(r->task_of);
    for (size_t k = 0; k < r->n_streams; k++)
        free(r->streams[k].lstart);
    free(r->streams);
    free(r->med.name);
    free(r->med.median);
    free(r->records);
    free(r->window_kinds);
    gb_rank_drop_marks(r);
    r->outer = r->task_of = r->records = r->window_kinds = NULL;
    r->streams = NULL;
    r->n_streams = 0;
    r->med.name = NULL;
    r->med.median = NULL;
    free(b->next_gpu);
    free(b->cur_gpu);
    free(b->last_rec);
    free(b->stream_ix);
    free(b->wait_done);
    free(b->end);
    b->next_gpu = b->cur_gpu = b->last_rec = b->stream_ix = b->wait_done = NULL;
    b->end = NULL;
    void *p;
    if (b->n_tasks && (p = realloc(b->tasks, b->n_tasks * sizeof *b->tasks)))
        b->tasks = p;
    if (b->n_tasks && (p = realloc(b->ts, b->n_tasks * sizeof *b->ts)))
        b->ts = p;
    if (b->n_edges && (p = realloc(b->edges, b->n_edges * sizeof *b->edges)))
        b->edges = p;
}

void gb_rank_free(struct builder *b)
{
    if (!b)
        return;
    gb_rank_trim(b);
    free(b->tasks);
    free(b->ts);
    free(b->res);
    free(b->edges);
    free(b->steps);
    free(b->comm);
    free(b->comm_min);
    for (size_t i = 0; i < b->n_folded; i++)
        free(b->folded[i].measured);
    free(b->folded);
    free(b);
}
