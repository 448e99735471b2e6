/* model/graph_build.c: building the dependency graph from event tables.
 *
 * Per rank: the steps asked for set a window (the first step's start to the
 * last step's end). The runtime calls in it become tasks on their threads,
 * in order, each with the measured host gap before it; step boundaries
 * become marker tasks on the step thread; kernels, copies and sets launched
 * in the window (or running in it with no launch in the trace: work spilled
 * in from before) become tasks on their streams. Then each edge class is
 * found (see graph.h), cutting the waits out of the durations that hid
 * them. Across ranks, the same collective is grouped and the ranks' clocks
 * are aligned on collective completions.
 *
 * Building reads measured times: to order tasks, to tell a wait from work
 * and to pick among candidate dependencies. What a replay reads afterwards
 * is only durations, gaps, latencies and each rank's origin. The tasks,
 * edges, steps and groups found here go into the graph through the public
 * builder (graph_builder.h), each task with its class and source event. */
#include "model/graph.h"

#include <stdlib.h>
#include <string.h>

#include "common/i64map.h"
#include "common/vec.h"
#include "model/collective.h"
#include "model/graph_builder.h"
#include "model/job.h"
#include "model/kernel_family.h"
#include "model/runtime_api.h"
#include "model/trace.h"
#include "common/banned.h"

/* A call ending this close after GPU work ended was waiting for it. */
#define WAIT_END_TOL_NS 30000
/* Slack for clock jitter when checking that an edge agrees with the trace. */
#define ORDER_TOL_NS 2000
/* Returning from a wait costs about this much when the trace cannot say. */
#define DEFAULT_RETURN_NS 5000
/* GPU work starts about this long after its launch call starts, when the
 * trace has no launch onto an idle stream to calibrate with. */
#define DEFAULT_LAUNCH_NS 5000
/* A call this much longer than its API's median is a candidate wait. */
#define LONG_CALL_NS 50000
/* Consecutive queries closer than this form one polling loop. */
#define POLL_GAP_NS 200000
/* Evidence of an untraced cross-stream wait: the work started within
 * EVIDENCE_AFTER_NS of the other stream's work ending, and more than
 * EVIDENCE_DELAY_NS later than its launch and its own stream allowed. */
#define EVIDENCE_AFTER_NS 20000
#define EVIDENCE_DELAY_NS 5000
/* A launch this long, at the launch queue's plateau, blocked on a full queue. */
#define BLOCKED_LAUNCH_NS 20000

struct pending_edge {
    uint32_t to, from;
    int64_t lat;
    uint8_t type, kind, inferred;
};

/* A task while the graph is found: what the graph will hold of it, and
 * the trace event it came from (MODEL_NONE for a step marker). */
struct btask {
    int64_t dur, gap;
    uint32_t res, event;
    uint16_t rank;
    uint8_t kind; /* enum model_task_class */
    uint8_t kept;
};

/* A collective group found across ranks: its members' range in
 * builder.group_tasks. */
struct bgroup {
    uint32_t first, n;
    struct model_group_spec spec;
};

/* A stream of one rank: its tasks and when each was launched. */
struct stream {
    uint32_t res;
    uint32_t first, n;  /* tasks */
    int64_t *lstart;    /* launch call start per task (prefix max), INT64_MIN if none */
};

/* Median duration of the calls of each API name (by name id). */
struct api_median {
    uint32_t *name;
    int64_t *median;
    size_t n;
};

struct rank_build {
    const struct model_trace *t;
    uint16_t rank;
    int64_t origin, wend; /* the window, trace clock */
    size_t step_lo, step_hi;
    uint32_t *outer;   /* per event: the kept call it is nested in, else itself */
    uint32_t *task_of; /* per event: its task, or MODEL_NONE */
    struct stream *streams;
    size_t n_streams, cap_streams;
    uint32_t thread_lo, thread_hi; /* its thread resources */
    int64_t launch_lat, return_lat;
    struct api_median med;
    uint32_t *records; /* cudaEventRecord call tasks, by start */
    size_t n_records;
};

struct builder {
    const struct model_job *job;
    struct model_graph_opts o;
    struct sc_error *err;
    struct rank_build *rb;
    /* per call task, along its thread: the first GPU task launched by it or
     * a later call, the last launched by it or an earlier call, and the last
     * cudaEventRecord up to it; per resource: its stream (MODEL_NONE for threads) */
    uint32_t *next_gpu, *cur_gpu, *last_rec, *stream_ix;

    struct btask *tasks;
    size_t n_tasks, cap_tasks;
    int64_t *ts, *end; /* measured, trace clock, per task */
    size_t cap_times;
    uint32_t *wait_done; /* per task: already given a wait edge */
    struct model_resource *res;
    size_t n_res, cap_res;
    struct pending_edge *edges;
    size_t n_edges, cap_edges;
    struct model_graph_step *steps;
    size_t n_steps, cap_steps;
    struct bgroup *groups;
    size_t n_groups, cap_groups;
    uint32_t *group_tasks;
    size_t n_group_tasks, cap_group_tasks;
    int64_t *clock_offset, *queue_depth; /* per rank */
    struct model_graph_stats stats;
};

#define OOM(b) sc_error_set((b)->err, SC_ENOMEM, "out of memory")

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int add_edge(struct builder *b, uint32_t from, uint32_t to, int64_t lat, uint8_t type,
                    uint8_t kind, int inferred)
{
    if (from == to || from == MODEL_NONE || to == MODEL_NONE)
        return SC_OK;
    if (sc_vec_reserve((void **)&b->edges, &b->cap_edges, b->n_edges + 1, sizeof *b->edges))
        return OOM(b);
    b->edges[b->n_edges++] = (struct pending_edge){to, from, lat, type, kind, (uint8_t)inferred};
    return SC_OK;
}

static int new_task(struct builder *b, const struct btask *t, int64_t ts, int64_t end)
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
    b->tasks[b->n_tasks] = *t;
    b->ts[b->n_tasks] = ts;
    b->end[b->n_tasks] = end;
    b->n_tasks++;
    return SC_OK;
}

static int new_res(struct builder *b, uint16_t rank, int gpu, uint32_t track, int64_t origin)
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

static int is_call(unsigned kind)
{
    return kind == MODEL_EV_RUNTIME || kind == MODEL_EV_DRIVER;
}

/* Select the steps in range and set the window. */
static int rank_window(struct builder *b, struct rank_build *r)
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
    if (r->step_lo >= r->step_hi)
        return sc_error_set(b->err, SC_EINVAL, "'%s': no step to replay%s", t->source,
                            t->n_steps ? " in the range asked" : ": no ProfilerStep#N (name a marker with --step-marker)");
    r->origin = t->steps[r->step_lo].start;
    r->wend = t->steps[r->step_hi - 1].end;
    return SC_OK;
}

/* Threads: calls in the window (nested driver calls folded into the call
 * around them) and step markers; one resource per thread. */
static int rank_threads(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    struct item *items = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;
    uint32_t step_track = t->steps[r->step_lo].track;

    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (!is_call(e->kind) || e->ts < r->origin || e->ts >= r->wend)
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
    sc_sort(items, n, sizeof *items, by_track_time);
    r->thread_lo = (uint32_t)b->n_res;
    for (size_t i = 0; i < n;) {
        uint32_t track = items[i].track;
        int64_t prev_end = r->origin, outer_end = INT64_MIN;
        uint32_t outer = MODEL_NONE;
        if ((rc = new_res(b, r->rank, 0, track, r->origin)))
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
            if ((rc = new_task(b, &task, it->t, it->t + it->dur)))
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
static uint32_t launch_task(const struct rank_build *r, uint32_t ev)
{
    uint32_t call = r->t->link[ev];
    if (call == MODEL_NONE || r->outer[call] == MODEL_NONE)
        return MODEL_NONE;
    return r->task_of[r->outer[call]];
}

/* When GPU event ev was launched, in or out of the window; INT64_MIN when
 * the trace does not hold its launch. */
static int64_t launch_ts(const struct rank_build *r, uint32_t ev)
{
    uint32_t call = r->t->link[ev];
    if (call == MODEL_NONE)
        return INT64_MIN;
    return r->t->events[r->outer[call] == MODEL_NONE ? call : r->outer[call]].ts;
}

/* Streams: GPU work launched by a call in the window, or running in the
 * window without a launch in it. */
static int rank_streams(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    struct item *items = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;

    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (!model_kind_is_gpu(e->kind))
            continue;
        if (launch_task(r, (uint32_t)i) == MODEL_NONE) {
            /* no launch in the window: keep it if it runs in the window and
             * was not launched after it */
            if (launch_ts(r, (uint32_t)i) >= r->wend)
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
    sc_sort(items, n, sizeof *items, by_track_time);
    for (size_t i = 0; i < n;) {
        uint32_t track = items[i].track;
        if ((rc = new_res(b, r->rank, 1, track, r->origin)))
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
            if ((rc = new_task(b, &task, it->t, it->t + it->dur)))
                goto out;
            b->res[b->n_res - 1].n++;
            s->n++;
        }
        if (!(s->lstart = malloc(s->n * sizeof *s->lstart)))
            goto oom;
        int64_t m = INT64_MIN;
        for (uint32_t k = 0; k < s->n; k++) {
            m = max64(m, launch_ts(r, b->tasks[s->first + k].event));
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
static uint32_t last_launched_before(const struct stream *s, int64_t before)
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

static struct stream *stream_of_task(struct rank_build *r, const struct builder *b, uint32_t task)
{
    uint32_t i = b->stream_ix[b->tasks[task].res];
    return i == MODEL_NONE ? NULL : &r->streams[i];
}

/* Fill next_gpu, cur_gpu and last_rec along each thread of the rank, and
 * the rank's record calls. */
static int thread_scans(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    size_t cap = 0;
    for (size_t i = 0; i < r->n_streams; i++)
        b->stream_ix[r->streams[i].res] = (uint32_t)i;
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++) {
        uint32_t first = b->res[res].first, last = first + b->res[res].n;
        uint32_t cur = MODEL_NONE, rec = MODEL_NONE, next = MODEL_NONE;
        for (uint32_t k = first; k < last; k++) {
            uint32_t ev = b->tasks[k].event;
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
static uint32_t next_launched(const struct builder *b, uint32_t c)
{
    const struct model_resource *res = &b->res[b->tasks[c].res];
    return c + 1 < res->first + res->n ? b->next_gpu[c + 1] : MODEL_NONE;
}

/* The last GPU work launched by calls up to c on its thread. */
static uint32_t current_stream_task(const struct builder *b, uint32_t c)
{
    return b->cur_gpu[c];
}

/* ---- waits hidden in calls ----------------------------------------------------------- */

/* Call task c waited for task x to finish (ff) or to start (!ff): an edge
 * from x, and c keeps only the time after x as its duration. */
static int add_wait(struct builder *b, struct rank_build *r, uint32_t c, uint32_t x, int ff,
                    uint8_t kind)
{
    if (x == MODEL_NONE)
        return SC_OK;
    int64_t s = b->ts[c], e = b->end[c], at = ff ? b->end[x] : b->ts[x];
    if (at > e + ORDER_TOL_NS)
        return SC_OK; /* the trace says it did not wait for x */
    int64_t lat;
    if (at >= s) {
        lat = e - at > 0 ? e - at : 0;
        if (lat < b->tasks[c].dur)
            b->tasks[c].dur = lat;
    } else {
        lat = min64(e - at, r->return_lat);
    }
    b->wait_done[c] = 1;
    return add_edge(b, x, c, lat, ff ? MODEL_FF : MODEL_SF, kind, 0);
}

/* Among the streams' last tasks launched before call c, the one whose end
 * the call most likely waited for: the latest end not after the call's. */
static uint32_t awaited_task(struct builder *b, struct rank_build *r, uint32_t c, int *close)
{
    uint32_t best = MODEL_NONE;
    for (size_t i = 0; i < r->n_streams; i++) {
        uint32_t x = last_launched_before(&r->streams[i], b->ts[c]);
        if (x == MODEL_NONE || b->end[x] > b->end[c] + ORDER_TOL_NS)
            continue;
        if (best == MODEL_NONE || b->end[x] > b->end[best])
            best = x;
    }
    *close = best != MODEL_NONE && b->end[c] - b->end[best] <= WAIT_END_TOL_NS;
    return best;
}

/* The GPU task of the rank that ended last in [from, to + tol], or NONE. */
static uint32_t gpu_ending_in(struct builder *b, struct rank_build *r, int64_t from, int64_t to)
{
    uint32_t best = MODEL_NONE;
    for (size_t i = 0; i < r->n_streams; i++) {
        const struct stream *s = &r->streams[i];
        /* tasks of a stream end in order: binary search the last ending by to */
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (b->end[s->first + mid] <= to + ORDER_TOL_NS)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!lo)
            continue;
        uint32_t x = s->first + (uint32_t)lo - 1;
        if (b->end[x] >= from && (best == MODEL_NONE || b->end[x] > b->end[best]))
            best = x;
    }
    return best;
}

static int is_pageable_dtoh(const char *name)
{
    return strstr(name, "Pageable") && (strstr(name, "DtoH") || strstr(name, "-> Pageable"));
}

static int is_pageable_htod(const char *name)
{
    return strstr(name, "Pageable") && (strstr(name, "HtoD") || strstr(name, "Pageable ->"));
}

static int cmp_name_dur(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static int api_medians(struct builder *b, struct rank_build *r, struct api_median *m)
{
    size_t n = 0;
    int64_t *pairs = NULL;
    memset(m, 0, sizeof *m);
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++)
        n += b->res[res].n;
    if (!(pairs = malloc((n ? n : 1) * 2 * sizeof *pairs)))
        return OOM(b);
    n = 0;
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++)
        for (uint32_t k = b->res[res].first; k < b->res[res].first + b->res[res].n; k++)
            if (b->tasks[k].kind == MODEL_TASK_CALL) {
                pairs[2 * n] = r->t->events[b->tasks[k].event].name;
                pairs[2 * n + 1] = b->tasks[k].dur;
                n++;
            }
    sc_sort(pairs, n, 2 * sizeof *pairs, cmp_name_dur);
    m->name = malloc((n ? n : 1) * sizeof *m->name);
    m->median = malloc((n ? n : 1) * sizeof *m->median);
    if (!m->name || !m->median) {
        free(pairs);
        return OOM(b);
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && pairs[2 * j] == pairs[2 * i])
            j++;
        m->name[m->n] = (uint32_t)pairs[2 * i];
        m->median[m->n++] = pairs[2 * ((i + j) / 2) + 1];
        i = j;
    }
    free(pairs);
    return SC_OK;
}

static int64_t median_of(const struct api_median *m, uint32_t name)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->name[mid] < name)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->name[lo] == name ? m->median[lo] : 0;
}

/* ---- calibration ------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* How soon GPU work starts after its launch call starts when its stream is
 * idle (a low percentile: queueing only delays), and how soon a call
 * returns after the GPU work it waited for. */
static int calibrate_latencies(struct builder *b, struct rank_build *r)
{
    int64_t *v = NULL;
    size_t n = 0, cap = 0;
    r->launch_lat = DEFAULT_LAUNCH_NS;
    r->return_lat = DEFAULT_RETURN_NS;
    for (size_t i = 0; i < r->n_streams; i++) {
        const struct stream *s = &r->streams[i];
        for (uint32_t k = 0; k < s->n; k++) {
            uint32_t task = s->first + k, ct = launch_task(r, b->tasks[task].event);
            if (ct == MODEL_NONE)
                continue;
            int64_t cs = b->ts[ct];
            if (k && b->end[task - 1] >= cs) /* the stream was busy: queued */
                continue;
            if (sc_vec_reserve((void **)&v, &cap, n + 1, sizeof *v)) {
                free(v);
                return OOM(b);
            }
            v[n++] = b->ts[task] - cs;
        }
    }
    if (n) {
        sc_sort(v, n, sizeof *v, cmp_i64);
        r->launch_lat = max64(0, v[n / 10]);
    }
    free(v);
    return SC_OK;
}

/* ---- edges of one rank ----------------------------------------------------------------- */

static int launch_edges(struct builder *b, struct rank_build *r)
{
    for (size_t i = 0; i < r->n_streams; i++) {
        const struct stream *s = &r->streams[i];
        for (uint32_t k = 0; k < s->n; k++) {
            uint32_t task = s->first + k, ct = launch_task(r, b->tasks[task].event);
            if (ct == MODEL_NONE)
                continue;
            int rc = add_edge(b, ct, task, r->launch_lat, MODEL_SS, MODEL_EDGE_LAUNCH, 0);
            if (rc)
                return rc;
        }
    }
    return SC_OK;
}

/* Runtime calls by correlation id (for cuda_sync records that name them). */
static int call_by_corr(struct builder *b, struct rank_build *r, struct sc_i64map *m)
{
    const struct model_trace *t = r->t;
    for (size_t i = 0; i < t->n_events; i++)
        if (is_call(t->events[i].kind) && t->events[i].correlation >= 0 &&
            sc_i64map_put(m, t->events[i].correlation, (uint32_t)i))
            return OOM(b);
    return SC_OK;
}

static struct stream *stream_by_tid(struct builder *b, struct rank_build *r, int64_t stream)
{
    for (size_t i = 0; i < r->n_streams; i++) {
        const struct model_resource *res = &b->res[r->streams[i].res];
        if (r->t->tracks[res->track].tid == stream)
            return &r->streams[i];
    }
    return NULL;
}

/* Exact edges from cuda_sync events: Stream Wait Event (stream -> stream),
 * Event Sync, Stream Sync and Context Sync (stream -> the call). */
static int cuda_sync_edges(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    struct sc_i64map by_corr = SC_I64MAP_INIT;
    int rc = SC_OK, any = 0;
    for (size_t i = 0; i < t->n_events && !any; i++)
        any = t->events[i].kind == MODEL_EV_CUDA_SYNC;
    if (!any || !b->o.use_cuda_sync)
        return SC_OK;
    if ((rc = call_by_corr(b, r, &by_corr)))
        goto out;
    for (size_t i = 0; i < t->n_events && rc == SC_OK; i++) {
        const struct model_event *e = &t->events[i];
        if (e->kind != MODEL_EV_CUDA_SYNC || e->info == MODEL_NONE || t->infos[e->info].sync == MODEL_NONE)
            continue;
        uint32_t call = t->link[i] == MODEL_NONE ? MODEL_NONE : r->outer[t->link[i]];
        uint32_t ct = call == MODEL_NONE ? MODEL_NONE : r->task_of[call];
        if (ct == MODEL_NONE) /* its call is not in the window */
            continue;
        const struct model_sync *sy = &t->syncs[t->infos[e->info].sync];
        const char *kind = model_str(t, e->name);
        uint32_t rec = MODEL_NONE, x = MODEL_NONE;
        if (sy->wait_on_record_corr >= 0 && sc_i64map_get(&by_corr, sy->wait_on_record_corr, &rec)) {
            struct stream *a = stream_by_tid(b, r, sy->wait_on_stream);
            if (a)
                x = last_launched_before(a, t->events[rec].ts);
        }
        if (strcmp(kind, "Stream Wait Event") == 0) {
            uint32_t y = MODEL_NONE;
            struct stream *bs = stream_by_tid(b, r, t->infos[e->info].stream);
            if (bs) {
                /* the first work on the waiting stream launched after the wait */
                uint32_t before = last_launched_before(bs, b->ts[ct] + 1);
                y = before == MODEL_NONE ? bs->first : before + 1;
                if (y >= bs->first + bs->n)
                    y = MODEL_NONE;
            }
            b->wait_done[ct] = 1;
            if (x != MODEL_NONE && y != MODEL_NONE && b->end[x] <= b->ts[y] + ORDER_TOL_NS) {
                rc = add_edge(b, x, y, 0, MODEL_FS, MODEL_EDGE_EVENT_SYNC, 0);
                b->stats.cuda_sync_event_syncs++;
            }
        } else if (strcmp(kind, "Event Sync") == 0) {
            rc = add_wait(b, r, ct, x, 1, MODEL_EDGE_HOST_SYNC);
        } else if (strcmp(kind, "Stream Sync") == 0) {
            int64_t sid = sy->wait_on_stream >= 0 ? sy->wait_on_stream : t->infos[e->info].stream;
            struct stream *s = stream_by_tid(b, r, sid);
            if (s)
                rc = add_wait(b, r, ct, last_launched_before(s, b->ts[ct]), 1, MODEL_EDGE_HOST_SYNC);
        } else if (strcmp(kind, "Context Sync") == 0) {
            for (size_t k = 0; k < r->n_streams && rc == SC_OK; k++)
                rc = add_wait(b, r, ct, last_launched_before(&r->streams[k], b->ts[ct]), 1,
                              MODEL_EDGE_HOST_SYNC);
        }
        b->wait_done[ct] = 1;
    }
out:
    sc_i64map_release(&by_corr);
    return rc;
}

/* cudaStreamWaitEvent without cuda_sync events: the waiting stream is where
 * the thread launches next; the recorded stream is where the thread of the
 * most recent cudaEventRecord last launched (the current stream then),
 * else, only with evidence in the trace (the waiting work started right
 * when it ended), the stream whose work it waited for. Every edge must agree
 * with the trace's order. */
static int inferred_event_edges(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    int rc = SC_OK;

    for (uint32_t res = r->thread_lo; res < r->thread_hi && rc == SC_OK; res++) {
        for (uint32_t w = b->res[res].first; w < b->res[res].first + b->res[res].n && rc == SC_OK; w++) {
            if (b->tasks[w].kind != MODEL_TASK_CALL || b->wait_done[w] ||
                t->events[b->tasks[w].event].rt != MODEL_RT_STREAM_WAIT)
                continue;
            uint32_t y = next_launched(b, w);
            if (y == MODEL_NONE)
                continue;
            struct stream *ys = stream_of_task(r, b, y);
            /* the record: the last on this thread before the wait, else any thread */
            uint32_t rec = b->last_rec[w];
            if (rec == MODEL_NONE) {
                size_t lo = 0, hi = r->n_records;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (b->ts[r->records[mid]] < b->ts[w])
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo)
                    rec = r->records[lo - 1];
            }
            /* without a record in the trace (recorded before it, or through
             * the driver), the recorded work was launched before the wait */
            int64_t cutoff = rec != MODEL_NONE ? b->ts[rec] : b->ts[w];
            uint32_t x = MODEL_NONE;
            uint32_t cur = rec == MODEL_NONE ? MODEL_NONE : current_stream_task(b, rec);
            struct stream *as = cur == MODEL_NONE ? NULL : stream_of_task(r, b, cur);
            if (as && as != ys) {
                x = last_launched_before(as, cutoff);
                if (x != MODEL_NONE && b->end[x] > b->ts[y] + ORDER_TOL_NS)
                    x = MODEL_NONE;
            }
            if (x == MODEL_NONE) {
                /* evidence: y started right after the candidate ended, later than
                 * its launch and its stream allowed */
                int64_t own_ready = b->ts[y];
                uint32_t yc = launch_task(r, b->tasks[y].event);
                if (yc != MODEL_NONE)
                    own_ready = b->ts[yc] + r->launch_lat;
                if (y > ys->first)
                    own_ready = max64(own_ready, b->end[y - 1]);
                for (size_t i = 0; i < r->n_streams; i++) {
                    if (&r->streams[i] == ys)
                        continue;
                    uint32_t c = last_launched_before(&r->streams[i], cutoff);
                    if (c == MODEL_NONE || b->end[c] > b->ts[y] + ORDER_TOL_NS)
                        continue;
                    if (b->ts[y] - b->end[c] <= EVIDENCE_AFTER_NS && b->ts[y] - own_ready > EVIDENCE_DELAY_NS &&
                        (x == MODEL_NONE || b->end[c] > b->end[x]))
                        x = c;
                }
            }
            if (x == MODEL_NONE)
                continue;
            rc = add_edge(b, x, y, 0, MODEL_FS, MODEL_EDGE_EVENT_SYNC, 1);
            b->stats.inferred_event_syncs++;
        }
    }
    return rc;
}

/* GPU work that was ready (its launch and its stream allowed it) well
 * before it started, and started just as work on another stream of the
 * device ended, waited for that work: an event the trace does not show, or
 * the SMs a kernel filling the device held until its tail. */
#define GPU_WAIT_MIN_DELAY_NS 20000
#define GPU_WAIT_AFTER_NS 20000

/* How long before X's end work held back by X may start: the tail in which
 * X's last blocks retire and free SMs (a quarter of X, 100 us to 1 ms). */
static int64_t gpu_wait_tail(int64_t dur)
{
    int64_t t = dur / 4;
    return t < 100000 ? 100000 : t > 1000000 ? 1000000 : t;
}

static int gpu_wait_edges(struct builder *b, struct rank_build *r)
{
    int rc = SC_OK;
    for (size_t i = 0; i < r->n_streams && rc == SC_OK; i++) {
        const struct stream *ys = &r->streams[i];
        int64_t device = r->t->tracks[b->res[ys->res].track].pid;
        for (uint32_t k = 0; k < ys->n && rc == SC_OK; k++) {
            uint32_t y = ys->first + k, yc = launch_task(r, b->tasks[y].event);
            int64_t ready = INT64_MIN;
            if (k)
                ready = b->end[y - 1];
            if (yc != MODEL_NONE)
                ready = max64(ready, b->ts[yc] + r->launch_lat);
            if (ready == INT64_MIN || b->ts[y] - ready < GPU_WAIT_MIN_DELAY_NS)
                continue;
            uint32_t best = MODEL_NONE;
            int64_t best_d = INT64_MAX;
            for (size_t j = 0; j < r->n_streams; j++) {
                const struct stream *xs = &r->streams[j];
                if (j == i || r->t->tracks[b->res[xs->res].track].pid != device)
                    continue;
                /* the first task of xs ending after y.start - AFTER */
                size_t lo = 0, hi = xs->n;
                int64_t from = b->ts[y] - GPU_WAIT_AFTER_NS;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (b->end[xs->first + mid] < from)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (size_t q = lo; q < xs->n; q++) {
                    uint32_t x = xs->first + (uint32_t)q;
                    if (b->ts[x] >= b->ts[y])
                        break; /* tasks of a stream start in order */
                    if (b->end[x] > b->ts[y] + gpu_wait_tail(b->end[x] - b->ts[x]))
                        continue;
                    int64_t d = b->end[x] - b->ts[y];
                    if (d < 0)
                        d = -d;
                    if (d < best_d) {
                        best_d = d;
                        best = x;
                    }
                }
            }
            if (best == MODEL_NONE)
                continue;
            rc = add_edge(b, best, y, b->ts[y] - b->end[best], MODEL_FS, MODEL_EDGE_GPU_WAIT, 1);
        }
    }
    return rc;
}

/* Syncs, blocking copies, polling loops and other calls that waited. */
static int host_sync_edges(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    const struct api_median *med = &r->med;
    int rc = SC_OK;
    for (uint32_t res = r->thread_lo; res < r->thread_hi && rc == SC_OK; res++) {
        uint32_t first = b->res[res].first, last = first + b->res[res].n;
        for (uint32_t c = first; c < last && rc == SC_OK; c++) {
            if (b->tasks[c].kind != MODEL_TASK_CALL || b->wait_done[c])
                continue;
            const struct model_event *e = &t->events[b->tasks[c].event];
            uint32_t own = t->link[b->tasks[c].event];
            uint32_t own_task = own == MODEL_NONE ? MODEL_NONE : r->task_of[own];
            int close;
            switch (e->rt) {
            case MODEL_RT_SYNC_DEVICE:
                for (size_t i = 0; i < r->n_streams && rc == SC_OK; i++)
                    rc = add_wait(b, r, c, last_launched_before(&r->streams[i], b->ts[c]), 1,
                                  MODEL_EDGE_HOST_SYNC);
                continue;
            case MODEL_RT_SYNC_STREAM:
            case MODEL_RT_SYNC_EVENT: {
                uint32_t x = awaited_task(b, r, c, &close);
                if (!close) { /* it did not wait: assume the current stream */
                    uint32_t cur = current_stream_task(b, c);
                    struct stream *s = cur == MODEL_NONE ? NULL : stream_of_task(r, b, cur);
                    if (s)
                        x = last_launched_before(s, b->ts[c]);
                }
                rc = add_wait(b, r, c, x, 1, MODEL_EDGE_HOST_SYNC);
                continue;
            }
            case MODEL_RT_LAUNCH_SYNC:
                rc = add_wait(b, r, c, own_task, 1, MODEL_EDGE_HOST_SYNC);
                continue;
            case MODEL_RT_LAUNCH:
                if (own_task != MODEL_NONE && t->events[own].kind == MODEL_EV_MEMCPY) {
                    const char *name = model_str(t, t->events[own].name);
                    if (is_pageable_dtoh(name)) {
                        rc = add_wait(b, r, c, own_task, 1, MODEL_EDGE_HOST_SYNC);
                        continue;
                    }
                    if (is_pageable_htod(name)) {
                        rc = add_wait(b, r, c, own_task, 0, MODEL_EDGE_HOST_SYNC);
                        continue;
                    }
                }
                break;
            case MODEL_RT_QUERY: {
                /* a polling loop: queries back to back; it ends when GPU work does */
                uint32_t end = c;
                while (end + 1 < last && b->tasks[end + 1].kind == MODEL_TASK_CALL &&
                       t->events[b->tasks[end + 1].event].rt == MODEL_RT_QUERY &&
                       b->tasks[end + 1].gap <= POLL_GAP_NS)
                    end++;
                if (end > c) {
                    uint32_t x = gpu_ending_in(b, r, b->ts[c], b->end[end]);
                    if (x != MODEL_NONE && b->end[end] - b->end[x] <= WAIT_END_TOL_NS) {
                        for (uint32_t k = c + 1; k < end; k++) {
                            b->tasks[k].gap = 0;
                            b->tasks[k].dur = 0;
                            b->wait_done[k] = 1;
                        }
                        b->tasks[end].gap = 0;
                        rc = add_wait(b, r, end, x, 1, MODEL_EDGE_HOST_SYNC);
                    }
                    c = end;
                }
                continue;
            }
            default:
                break;
            }
            /* any other call much longer than usual that returned right after
             * GPU work ended was waiting for it */
            int64_t m = median_of(med, e->name);
            if (b->tasks[c].dur > LONG_CALL_NS && b->tasks[c].dur > 4 * m) {
                uint32_t x = gpu_ending_in(b, r, b->ts[c], b->end[c]);
                if (x != MODEL_NONE && b->end[c] - b->end[x] <= WAIT_END_TOL_NS)
                    rc = add_wait(b, r, c, x, 1, MODEL_EDGE_HOST_SYNC);
            }
        }
    }
    return rc;
}

/* What a thread idle from p to q polled for: among each stream's last
 * task launched before p (the work queued when the wait began), the one
 * ending nearest q, at most MODEL_HOST_POLL_LATENCY_NS away; MODEL_NONE if
 * none. Work queued behind it was not awaited: a gap in a program that
 * runs ahead of its GPU ends near some kernel's end by chance alone. */
static uint32_t polled_task(struct builder *b, struct rank_build *r, int64_t p, int64_t q)
{
    uint32_t best = MODEL_NONE;
    int64_t best_d = MODEL_HOST_POLL_LATENCY_NS + 1;
    for (size_t i = 0; i < r->n_streams; i++) {
        uint32_t x = last_launched_before(&r->streams[i], p);
        if (x == MODEL_NONE)
            continue;
        int64_t d = b->end[x] > q ? b->end[x] - q : q - b->end[x];
        if (d < best_d) {
            best_d = d;
            best = x;
        }
    }
    return best;
}

/* Host-side polling (graph.h, MODEL_HOST_POLL_*): a gap far longer than
 * its thread's usual gap that ends as GPU work ends was a wait on it. */
static int host_poll_edges(struct builder *b, struct rank_build *r)
{
    int64_t *gaps = NULL;
    size_t cap = 0;
    int rc = SC_OK;
    for (uint32_t res = r->thread_lo; res < r->thread_hi && rc == SC_OK; res++) {
        uint32_t first = b->res[res].first, last = first + b->res[res].n;
        size_t n = 0;
        for (uint32_t c = first + 1; c < last; c++) {
            if (b->tasks[c].kind != MODEL_TASK_CALL)
                continue;
            if (sc_vec_reserve((void **)&gaps, &cap, n + 1, sizeof *gaps)) {
                rc = OOM(b);
                break;
            }
            gaps[n++] = b->tasks[c].gap;
        }
        if (rc || n < MODEL_HOST_POLL_MIN_CALLS)
            continue;
        sc_sort(gaps, n, sizeof *gaps, cmp_i64);
        int64_t usual = gaps[n / 2];
        if (usual > MODEL_HOST_POLL_USUAL_MAX_NS)
            continue;
        int64_t long_gap = max64(MODEL_HOST_POLL_MIN_NS, MODEL_HOST_POLL_RATIO * usual);
        for (uint32_t c = first + 1; c < last && rc == SC_OK; c++) {
            if (b->tasks[c].kind != MODEL_TASK_CALL || b->tasks[c].gap < long_gap)
                continue;
            uint32_t x = polled_task(b, r, b->ts[c] - b->tasks[c].gap, b->ts[c]);
            if (x == MODEL_NONE)
                continue;
            b->tasks[c].gap = usual;
            /* no earlier than the task's end (a flag written just before it
             * ends is read after: the clocks cannot order that finer) */
            rc = add_edge(b, x, c, max64(0, b->ts[c] - b->end[x]), MODEL_FS, MODEL_EDGE_HOST_POLL, 1);
        }
    }
    free(gaps);
    return rc;
}

/* The launch queue: when launches find it full (outstanding work plateaus
 * at a depth Q and launches there take far longer than usual), launch j
 * cannot return before GPU op j - Q has started. */
struct op_ref {
    int64_t lstart;
    uint32_t task, call;
};

static int by_lstart(const void *a, const void *b)
{
    const struct op_ref *x = a, *y = b;
    if (x->lstart != y->lstart)
        return x->lstart < y->lstart ? -1 : 1;
    return (x->task > y->task) - (x->task < y->task);
}

static int launch_queue_edges(struct builder *b, struct rank_build *r, int64_t *depth_out)
{
    const struct model_trace *t = r->t;
    struct op_ref *ops = NULL;
    int64_t *starts = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;
    const struct api_median *med = &r->med;

    *depth_out = 0;
    for (size_t i = 0; i < r->n_streams; i++)
        for (uint32_t k = 0; k < r->streams[i].n; k++) {
            uint32_t task = r->streams[i].first + k, ct = launch_task(r, b->tasks[task].event);
            if (ct == MODEL_NONE)
                continue;
            if (sc_vec_reserve((void **)&ops, &cap, n + 1, sizeof *ops))
                goto oom;
            ops[n++] = (struct op_ref){b->ts[ct], task, ct};
        }
    if (n < 64)
        goto out;
    sc_sort(ops, n, sizeof *ops, by_lstart);
    if (!(starts = malloc(n * sizeof *starts)))
        goto oom;
    for (size_t j = 0; j < n; j++)
        starts[j] = b->ts[ops[j].task];
    sc_sort(starts, n, sizeof *starts, cmp_i64);
    /* pending when each launch returns: launched so far minus started */
    int64_t qmax = 0;
    size_t *pending = malloc(n * sizeof *pending);
    if (!pending)
        goto oom;
    for (size_t j = 0, started = 0; j < n; j++) {
        int64_t ret = b->end[ops[j].call];
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (starts[mid] <= ret)
                lo = mid + 1;
            else
                hi = mid;
        }
        started = lo;
        pending[j] = j + 1 > started ? j + 1 - started : 0;
        if ((int64_t)pending[j] > qmax)
            qmax = (int64_t)pending[j];
    }
    size_t blocked = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t c = ops[j].call;
        int64_t m = median_of(med, t->events[b->tasks[c].event].name);
        if ((int64_t)pending[j] * 100 >= qmax * 95 && b->tasks[c].dur > 3 * m &&
            b->tasks[c].dur > BLOCKED_LAUNCH_NS)
            blocked++;
    }
    if (qmax < 256 || blocked < 10) {
        free(pending);
        goto out;
    }
    *depth_out = qmax;
    for (size_t j = (size_t)qmax; j < n && rc == SC_OK; j++) {
        uint32_t c = ops[j].call, x = ops[j - (size_t)qmax].task;
        int64_t m = median_of(med, t->events[b->tasks[c].event].name);
        if (b->wait_done[c])
            continue;
        if ((int64_t)pending[j] * 100 >= qmax * 95 && b->tasks[c].dur > 3 * m)
            b->tasks[c].dur = m; /* blocked: keep the usual cost of the call */
        int64_t lat = min64(max64(0, b->end[c] - b->ts[x]), r->return_lat);
        rc = add_edge(b, x, c, lat, MODEL_SF, MODEL_EDGE_LAUNCH_QUEUE, 0);
    }
    free(pending);
out:
    free(ops);
    free(starts);
    return rc;
oom:
    rc = OOM(b);
    goto out;
}

/* ---- hand-offs between threads ------------------------------------------------------------ */

struct span {
    int64_t a, b;
};

static int by_span_start(const void *x, const void *y)
{
    const struct span *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* The union of a thread's CPU op intervals, sorted. */
static int busy_spans(struct builder *b, struct rank_build *r, uint32_t track, struct span **out,
                      size_t *nout)
{
    const struct model_trace *t = r->t;
    struct span *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (e->track != track || e->kind != MODEL_EV_CPU_OP || e->ts + e->dur < r->origin || e->ts > r->wend)
            continue;
        if (sc_vec_reserve((void **)&v, &cap, n + 1, sizeof *v)) {
            free(v);
            return OOM(b);
        }
        v[n++] = (struct span){e->ts, e->ts + e->dur};
    }
    sc_sort(v, n, sizeof *v, by_span_start);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && v[i].a <= v[m - 1].b) {
            if (v[i].b > v[m - 1].b)
                v[m - 1].b = v[i].b;
        } else {
            v[m++] = v[i];
        }
    }
    *out = v;
    *nout = m;
    return SC_OK;
}

/* The longest stretch of [a, b] not covered by the busy spans. */
static struct span longest_idle(const struct span *busy, size_t n, int64_t a, int64_t b)
{
    struct span best = {a, a};
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first span ending after a */
        size_t mid = (lo + hi) / 2;
        if (busy[mid].b <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t cur = a;
    for (size_t i = lo; i < n && busy[i].a < b; i++) {
        if (busy[i].a > cur && busy[i].a - cur > best.b - best.a)
            best = (struct span){cur, busy[i].a};
        if (busy[i].b > cur)
            cur = busy[i].b;
    }
    if (b > cur && b - cur > best.b - best.a)
        best = (struct span){cur, b};
    return best;
}

static int inter_thread_edges(struct builder *b, struct rank_build *r)
{
    uint32_t nthreads = r->thread_hi - r->thread_lo;
    struct span **busy = calloc(nthreads ? nthreads : 1, sizeof *busy);
    size_t *nbusy = calloc(nthreads ? nthreads : 1, sizeof *nbusy);
    int rc = SC_OK;
    int64_t gap_min = b->o.inter_thread_gap_ns;

    if (!busy || !nbusy) {
        rc = OOM(b);
        goto out;
    }
    for (uint32_t i = 0; i < nthreads && rc == SC_OK; i++)
        rc = busy_spans(b, r, b->res[r->thread_lo + i].track, &busy[i], &nbusy[i]);
    for (uint32_t i = 0; i < nthreads && rc == SC_OK; i++) {
        const struct model_resource *rb = &b->res[r->thread_lo + i];
        for (uint32_t k = rb->first; k < rb->first + rb->n && rc == SC_OK; k++) {
            int64_t p = k == rb->first ? r->origin : b->end[k - 1], q = b->ts[k];
            if (q - p < gap_min)
                continue;
            struct span idle = longest_idle(busy[i], nbusy[i], p, q);
            if (idle.b - idle.a < gap_min)
                continue;
            /* another thread that went idle just before this one resumed */
            uint32_t from = MODEL_NONE;
            for (uint32_t j = 0; j < nthreads; j++) {
                if (j == i)
                    continue;
                const struct model_resource *ra = &b->res[r->thread_lo + j];
                /* the last of its tasks ending by idle.b (tasks end in order) */
                size_t lo = 0, hi = ra->n;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (b->end[ra->first + mid] <= idle.b)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (!lo)
                    continue;
                uint32_t c = ra->first + (uint32_t)lo - 1;
                int64_t e = b->end[c];
                if (e < idle.b - MODEL_HANDOFF_MAX_LATENCY_NS || e < idle.a)
                    continue;
                int goes_idle = c + 1 >= ra->first + ra->n || b->ts[c + 1] >= idle.b + gap_min / 2;
                if (goes_idle && (from == MODEL_NONE || e > b->end[from]))
                    from = c;
            }
            if (from == MODEL_NONE)
                continue;
            b->tasks[k].gap = max64(0, b->tasks[k].gap - (q - idle.a));
            rc = add_edge(b, from, k, q - b->end[from], MODEL_FS, MODEL_EDGE_INTER_THREAD, 1);
        }
    }
out:
    for (uint32_t i = 0; busy && i < nthreads; i++)
        free(busy[i]);
    free(busy);
    free(nbusy);
    return rc;
}

/* ---- collectives across ranks ------------------------------------------------------------ */

/* A communication kernel and the key that finds it on the other ranks:
 * its process group and sequence number where the trace has them, else
 * its position among the communication kernels of its stream. */
struct comm_ref {
    const char *pg;   /* process group name, or NULL: keyed by stream */
    int64_t seq;      /* sequence number in the process group */
    int64_t stream;   /* stream id */
    uint32_t ordinal; /* position among the comm kernels of that stream */
    uint16_t rank;
    uint32_t task;
    int32_t size;     /* the process group's size, or -1 */
};

static int same_key(const struct comm_ref *x, const struct comm_ref *y)
{
    if ((x->pg == NULL) != (y->pg == NULL))
        return 0;
    if (x->pg)
        return x->seq == y->seq && strcmp(x->pg, y->pg) == 0;
    return x->stream == y->stream && x->ordinal == y->ordinal;
}

static int by_comm_key(const void *a, const void *b)
{
    const struct comm_ref *x = a, *y = b;
    if ((x->pg == NULL) != (y->pg == NULL))
        return x->pg ? -1 : 1;
    if (x->pg) {
        int c = strcmp(x->pg, y->pg);
        if (c)
            return c;
        if (x->seq != y->seq)
            return x->seq < y->seq ? -1 : 1;
    } else {
        if (x->stream != y->stream)
            return x->stream < y->stream ? -1 : 1;
        if (x->ordinal != y->ordinal)
            return x->ordinal < y->ordinal ? -1 : 1;
    }
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Whether two refs are of one process group (or, keyed by stream, one
 * stream id). */
static int same_set(const struct comm_ref *x, const struct comm_ref *y)
{
    if ((x->pg == NULL) != (y->pg == NULL))
        return 0;
    return x->pg ? strcmp(x->pg, y->pg) == 0 : x->stream == y->stream;
}

/* The collective metadata of a communication kernel's event, or NULL. */
static const struct model_collective *coll_of(const struct model_trace *t, uint32_t ev)
{
    uint32_t info = t->events[ev].info;
    if (info == MODEL_NONE || t->infos[info].coll == MODEL_NONE)
        return NULL;
    return &t->colls[t->infos[info].coll];
}

/* What a group of one collective carries, from its first member's event:
 * its kind, its size in bytes (nccl-tests convention, graph.h), dtype,
 * process group, sequence number and group size. */
static struct model_group_spec group_spec(const struct builder *b, uint16_t rank, uint32_t task,
                                          enum model_coll_op op, size_t members)
{
    const struct model_trace *t = b->rb[rank].t;
    const struct model_collective *c = coll_of(t, b->tasks[task].event);
    struct model_group_spec s = {.op = op, .bytes = -1, .seq = -1, .size = (uint32_t)members};
    if (!c)
        return s;
    s.bytes = model_coll_bytes(t, c, op);
    s.dtype = c->dtype == MODEL_NONE ? NULL : model_str(t, c->dtype);
    s.pg = c->pg_name == MODEL_NONE ? NULL : model_str(t, c->pg_name);
    s.seq = c->seq;
    if (c->group_size > 0 && (size_t)c->group_size >= members)
        s.size = (uint32_t)c->group_size;
    return s;
}

/* Group one collective's kernels across ranks: by process group and
 * sequence number where the trace has them, else the k-th communication
 * kernel of each communication stream across the ranks that have that
 * stream. A group needs every rank of its process group (or every rank
 * having the stream), one kernel each, all of the same operation. Align
 * clocks on their ends; give members their intrinsic time (the shortest
 * member: the last to arrive waited for nobody). */
static int collectives(struct builder *b)
{
    size_t nranks = b->job->n_ranks;
    struct comm_ref *refs = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;
    int64_t **diffs = NULL;
    size_t *ndiff = NULL, *capdiff = NULL;
    uint32_t *seen = NULL, stamp = 0;
    size_t want = 0;

    for (size_t res = 0; res < b->n_res; res++) {
        const struct model_resource *rs = &b->res[res];
        if (!rs->gpu || !rs->comm)
            continue;
        const struct model_trace *t = b->rb[rs->rank].t;
        int64_t sid = t->tracks[rs->track].tid;
        uint32_t ord = 0;
        for (uint32_t k = rs->first; k < rs->first + rs->n; k++) {
            if (b->tasks[k].kind != MODEL_TASK_COMM)
                continue;
            if (sc_vec_reserve((void **)&refs, &cap, n + 1, sizeof *refs))
                goto oom;
            struct comm_ref ref = {NULL, -1, sid, ord++, rs->rank, k, -1};
            const struct model_collective *c = coll_of(t, b->tasks[k].event);
            int64_t seq = c ? (c->seq >= 0 ? c->seq : c->nccl_seq) : -1;
            if (c && c->pg_name != MODEL_NONE && seq >= 0) {
                ref.pg = model_str(t, c->pg_name);
                ref.seq = seq;
                ref.size = c->group_size;
            }
            refs[n++] = ref;
        }
    }
    sc_sort(refs, n, sizeof *refs, by_comm_key);
    diffs = calloc(nranks, sizeof *diffs);
    ndiff = calloc(nranks, sizeof *ndiff);
    capdiff = calloc(nranks, sizeof *capdiff);
    seen = calloc(nranks, sizeof *seen);
    if (!diffs || !ndiff || !capdiff || !seen)
        goto oom;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && same_key(&refs[j], &refs[i]))
            j++;
        /* how many members a complete group has: the ranks having this
         * stream (or process group) at all */
        if (i == 0 || !same_set(&refs[i], &refs[i - 1])) {
            want = 0;
            stamp++;
            for (size_t q = i; q < n && same_set(&refs[q], &refs[i]); q++)
                if (seen[refs[q].rank] != stamp) {
                    seen[refs[q].rank] = stamp;
                    want++;
                }
        }
        size_t need = refs[i].pg && refs[i].size > 0 ? (size_t)refs[i].size : want;
        int same = j - i == need && need > 1;
        for (size_t q = i + 1; q < j && same; q++) /* one kernel per rank */
            same = refs[q].rank != refs[q - 1].rank;
        const struct model_trace *t0 = b->rb[refs[i].rank].t;
        enum model_coll_op op0 = model_coll_op_parse(model_str(t0, t0->events[b->tasks[refs[i].task].event].name));
        for (size_t q = i + 1; q < j && same; q++) {
            const struct model_trace *tq = b->rb[refs[q].rank].t;
            same = model_coll_op_parse(model_str(tq, tq->events[b->tasks[refs[q].task].event].name)) == op0;
        }
        if (!same) {
            for (size_t q = i; q < j; q++)
                b->tasks[refs[q].task].kept = 1;
            b->stats.collectives_kept += j - i;
            i = j;
            continue;
        }
        int64_t intrinsic = INT64_MAX, ref_end = INT64_MIN;
        for (size_t q = i; q < j; q++) {
            intrinsic = min64(intrinsic, b->tasks[refs[q].task].dur);
            if (refs[q].rank == refs[i].rank)
                ref_end = b->end[refs[q].task];
        }
        if (sc_vec_reserve((void **)&b->groups, &b->cap_groups, b->n_groups + 1, sizeof *b->groups) ||
            sc_vec_reserve((void **)&b->group_tasks, &b->cap_group_tasks, b->n_group_tasks + (j - i),
                           sizeof *b->group_tasks))
            goto oom;
        b->groups[b->n_groups++] = (struct bgroup){(uint32_t)b->n_group_tasks, (uint32_t)(j - i),
                                                   group_spec(b, refs[i].rank, refs[i].task, op0, j - i)};
        for (size_t q = i; q < j; q++) {
            b->tasks[refs[q].task].dur = intrinsic;
            b->group_tasks[b->n_group_tasks++] = refs[q].task;
            if (refs[i].rank == 0) {
                size_t rk = refs[q].rank;
                if (sc_vec_reserve((void **)&diffs[rk], &capdiff[rk], ndiff[rk] + 1, sizeof **diffs))
                    goto oom;
                diffs[rk][ndiff[rk]++] = b->end[refs[q].task] - ref_end;
            }
        }
        b->stats.collectives_matched++;
        i = j;
    }
    for (size_t rk = 0; rk < nranks; rk++) {
        if (ndiff[rk]) {
            sc_sort(diffs[rk], ndiff[rk], sizeof **diffs, cmp_i64);
            b->clock_offset[rk] = diffs[rk][ndiff[rk] / 2];
        }
    }
out:
    for (size_t rk = 0; diffs && rk < nranks; rk++)
        free(diffs[rk]);
    free(diffs);
    free(ndiff);
    free(capdiff);
    free(seen);
    free(refs);
    return rc;
oom:
    rc = OOM(b);
    goto out;
}

/* Work conservation: the last modelled step of the rank ends when its
 * annotation and all the GPU work launched in it have ended, measured and
 * replayed alike. Per stream, the last task launched in the step (a stream
 * runs in order, so it ends after the others) -> the step's end marker;
 * the measured step is stretched to the latest such end. */
static int step_end_edges(struct builder *b, struct rank_build *r)
{
    const struct model_step *last = &r->t->steps[r->step_hi - 1];
    struct model_graph_step *gs = NULL;
    int rc = SC_OK;

    for (size_t k = b->n_steps; k-- > 0 && !gs;)
        if (b->steps[k].rank == r->rank && b->steps[k].step == r->step_hi - 1)
            gs = &b->steps[k];
    if (!gs || gs->end == MODEL_NONE)
        return SC_OK;
    int64_t end = last->end;
    for (size_t si = 0; si < r->n_streams && rc == SC_OK; si++) {
        const struct stream *s = &r->streams[si];
        for (uint32_t k = s->n; k-- > 0;) {
            uint32_t task = s->first + k, ev = b->tasks[task].event;
            if (launch_task(r, ev) == MODEL_NONE || launch_ts(r, ev) < last->start)
                continue;
            end = max64(end, b->end[task]);
            rc = add_edge(b, task, gs->end, 0, MODEL_FS, MODEL_EDGE_STEP_END, 0);
            break;
        }
    }
    gs->measured_ns = end - last->start;
    return rc;
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

/* A task's name and its refinement of the class (kernel family,
 * collective kind, call kind). */
static const char *task_name(const struct builder *b, const struct btask *k, int *sub)
{
    const struct model_trace *t = b->rb[k->rank].t;
    *sub = 0;
    if (k->event == MODEL_NONE)
        return "(step boundary)";
    const struct model_event *e = &t->events[k->event];
    const char *name = model_str(t, e->name);
    if (k->kind == MODEL_TASK_KERNEL)
        *sub = model_kernel_family(name);
    else if (k->kind == MODEL_TASK_COMM)
        *sub = model_coll_op_parse(name);
    else if (k->kind == MODEL_TASK_CALL)
        *sub = call_kind((enum model_rt_class)e->rt);
    return name;
}

/* Everything found, through the public builder: ranks, resources, tasks
 * (laid out by measured start on rank 0's clock), edges, steps, groups. */
static int emit(struct builder *b, struct model_graph **out)
{
    const struct model_job *job = b->job;
    struct model_gb *gb = model_gb_new(b->err);
    uint32_t id;
    uint16_t rank;
    int rc = SC_OK;

    if (!gb)
        return SC_ENOMEM;
    model_gb_set_job(gb, job);
    for (size_t i = 0; i < job->n_ranks && rc == SC_OK; i++)
        rc = model_gb_add_rank(gb, &(struct model_rank_spec){job->rank_ids[i], b->clock_offset[i], b->queue_depth[i]},
                               &rank);
    for (size_t i = 0; i < b->n_res && rc == SC_OK; i++) {
        const struct model_resource *r = &b->res[i];
        const struct model_trace *t = b->rb[r->rank].t;
        const struct model_track *tk = &t->tracks[r->track];
        struct model_res_spec rs = {.rank = r->rank, .gpu = r->gpu, .comm = r->comm,
                                    .label = tk->label == MODEL_NONE ? NULL : model_str(t, tk->label),
                                    .pid = tk->pid, .tid = tk->tid, .track = r->track, .has_track = 1,
                                    .origin = b->rb[r->rank].origin - b->clock_offset[r->rank]};
        rc = model_gb_add_resource(gb, &rs, &id);
    }
    /* tasks in index order: each resource's are contiguous and in its
     * order, so the builder gives every task its index here as its id */
    for (size_t i = 0; i < b->n_tasks && rc == SC_OK; i++) {
        const struct btask *k = &b->tasks[i];
        struct model_task_spec ts = {.res = k->res, .cls = k->kind, .dur = k->dur, .gap = k->gap,
                                     .event = k->event, .has_event = k->event != MODEL_NONE, .kept = k->kept,
                                     .order = b->ts[i] - b->clock_offset[k->rank]};
        ts.name = task_name(b, k, &ts.sub);
        rc = model_gb_add_task(gb, &ts, &id);
    }
    for (size_t i = 0; i < b->n_edges && rc == SC_OK; i++) {
        const struct pending_edge *e = &b->edges[i];
        rc = model_gb_add_edge(gb, e->from, e->to, e->kind, e->type, e->lat, e->inferred);
    }
    for (size_t i = 0; i < b->n_steps && rc == SC_OK; i++) {
        const struct model_graph_step *s = &b->steps[i];
        const struct model_trace *t = b->rb[s->rank].t;
        rc = model_gb_add_step(gb, &(struct model_step_spec){s->rank, s->begin, s->end,
                                                             model_str(t, t->steps[s->step].name),
                                                             s->measured_ns, s->partial, s->step});
    }
    for (size_t i = 0; i < b->n_groups && rc == SC_OK; i++)
        rc = model_gb_add_group(gb, &b->groups[i].spec, b->group_tasks + b->groups[i].first, b->groups[i].n, NULL);
    if (rc) {
        model_gb_free(gb);
        return rc;
    }
    *model_gb_stats(gb) = b->stats;
    return model_gb_finish(gb, out, b->err);
}

int model_graph_build(const struct model_job *job, const struct model_graph_opts *opts,
                      struct model_graph **out, struct sc_error *err)
{
    struct builder b;
    int rc = SC_OK;

    *out = NULL;
    memset(&b, 0, sizeof b);
    b.job = job;
    b.err = err;
    if (opts)
        b.o = *opts;
    else
        model_graph_opts_default(&b.o);
    if (!job->n_ranks)
        return sc_error_set(err, SC_EINVAL, "no trace to build a graph from");
    b.rb = calloc(job->n_ranks, sizeof *b.rb);
    b.clock_offset = calloc(job->n_ranks, sizeof *b.clock_offset);
    b.queue_depth = calloc(job->n_ranks, sizeof *b.queue_depth);
    if (!b.rb || !b.clock_offset || !b.queue_depth) {
        rc = OOM(&b);
        goto out;
    }
    for (size_t i = 0; i < job->n_ranks && rc == SC_OK; i++) {
        struct rank_build *r = &b.rb[i];
        const struct model_trace *t = job->ranks[i];
        r->t = t;
        r->rank = (uint16_t)i;
        r->outer = malloc((t->n_events ? t->n_events : 1) * sizeof *r->outer);
        r->task_of = malloc((t->n_events ? t->n_events : 1) * sizeof *r->task_of);
        if (!r->outer || !r->task_of) {
            rc = OOM(&b);
            break;
        }
        memset(r->outer, 0xff, t->n_events * sizeof *r->outer);
        memset(r->task_of, 0xff, t->n_events * sizeof *r->task_of);
        if ((rc = rank_window(&b, r)) || (rc = rank_threads(&b, r)) || (rc = rank_streams(&b, r)))
            break;
    }
    if (rc == SC_OK) {
        size_t n = b.n_tasks ? b.n_tasks : 1;
        b.wait_done = calloc(n, sizeof *b.wait_done);
        b.next_gpu = malloc(n * sizeof *b.next_gpu);
        b.cur_gpu = malloc(n * sizeof *b.cur_gpu);
        b.last_rec = malloc(n * sizeof *b.last_rec);
        b.stream_ix = malloc((b.n_res ? b.n_res : 1) * sizeof *b.stream_ix);
        if (!b.wait_done || !b.next_gpu || !b.cur_gpu || !b.last_rec || !b.stream_ix)
            rc = OOM(&b);
        else
            memset(b.stream_ix, 0xff, b.n_res * sizeof *b.stream_ix);
    }
    for (size_t i = 0; i < job->n_ranks && rc == SC_OK; i++) {
        struct rank_build *r = &b.rb[i];
        if ((rc = thread_scans(&b, r)) || (rc = api_medians(&b, r, &r->med)) ||
            (rc = calibrate_latencies(&b, r)) || (rc = launch_edges(&b, r)) ||
            (rc = cuda_sync_edges(&b, r)) || (rc = inferred_event_edges(&b, r)) ||
            (rc = launch_queue_edges(&b, r, &b.queue_depth[i])) ||
            (rc = gpu_wait_edges(&b, r)) || (rc = host_sync_edges(&b, r)) ||
            (rc = host_poll_edges(&b, r)) || (rc = inter_thread_edges(&b, r)) || (rc = step_end_edges(&b, r)))
            break;
    }
    if (rc == SC_OK)
        rc = collectives(&b);
    if (rc == SC_OK)
        rc = emit(&b, out);
out:
    for (size_t i = 0; b.rb && i < job->n_ranks; i++) {
        free(b.rb[i].outer);
        free(b.rb[i].task_of);
        for (size_t k = 0; k < b.rb[i].n_streams; k++)
            free(b.rb[i].streams[k].lstart);
        free(b.rb[i].streams);
        free(b.rb[i].med.name);
        free(b.rb[i].med.median);
        free(b.rb[i].records);
    }
    free(b.next_gpu);
    free(b.cur_gpu);
    free(b.last_rec);
    free(b.stream_ix);
    free(b.rb);
    free(b.tasks);
    free(b.ts);
    free(b.end);
    free(b.wait_done);
    free(b.res);
    free(b.edges);
    free(b.steps);
    free(b.groups);
    free(b.group_tasks);
    free(b.clock_offset);
    free(b.queue_depth);
    return rc;
}
