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
 * builder (graph_builder.h), each task with its class and source event.
 *
 * Ranks are found apart, each into a part of its own (on all cores), and
 * only then joined: collectives grouped and clocks aligned across ranks.
 * A part takes of its trace what the join needs (names, collective
 * metadata), so model_graph_build_paths can shed each trace as soon as its
 * part is found and a job's events are never all in memory; the join hands
 * each part to the builder and frees it before the next. In a job of many
 * ranks, alike parts are folded as they come (graph.h, MODEL_FOLD_OVER):
 * only their representatives reach the join. */
#include "model/graph.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hugepage.h"
#include "common/i64map.h"
#include "common/pool.h"
#include "common/spans.h"
#include "common/vec.h"
#include "model/collective.h"
#include "model/graph_builder.h"
#include "model/job.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "model/runtime_api.h"
#include "model/steps.h"
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
    uint32_t name; /* string id in the rank's trace (MODEL_NONE: a step marker) */
    uint16_t rank;
    uint8_t kind; /* enum model_task_class */
    uint8_t sub;  /* kernel family, collective kind or call kind */
    uint8_t kept;
};

/* A communication task of a rank, with what grouping it across ranks
 * needs of its trace (string ids are the rank's trace's). */
struct comm_meta {
    uint32_t task;      /* the task, in its rank's part */
    uint32_t pg;        /* "Process Group Name", or MODEL_NONE */
    uint32_t dtype;     /* or MODEL_NONE */
    int64_t key_seq;    /* the sequence number that keys it (PyTorch's, else NCCL's), or -1 */
    int64_t seq;        /* PyTorch's sequence number, or -1 */
    int64_t bytes;      /* nccl-tests convention for its own operation; -1 when unknown */
    int64_t stream;     /* its stream's id */
    int64_t end;        /* measured end, trace clock */
    int32_t group_size; /* "Group size", else its process group's pg_size; or -1 */
    uint8_t op;         /* enum model_coll_op of its name */
};

/* A collective group found across ranks: its members' range in
 * join.group_tasks (task ids of the joined graph). */
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

/* What is found of one rank before the ranks are joined: a builder whose
 * arrays hold that rank's tasks (rank index 0 inside; the join renumbers). */
struct builder {
    struct model_graph_opts o;
    struct sc_error *err;
    struct rank_build r; /* the rank, while its trace is read */
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
    struct comm_meta *comm; /* its communication tasks, by resource and order */
    size_t n_comm;
    int64_t queue_depth;
    struct model_graph_stats stats;
    /* folding (graph.h, MODEL_FOLD_OVER): a hash of its structure, its
     * work, and as a representative, the ranks folded into it */
    uint64_t sig;
    int64_t work_gpu, work_cpu;
    int64_t anchor; /* its first step's start less the mean end of its collectives, trace clock */
    int64_t *comm_min; /* per comm[] entry: the shortest traced time among the ranks it stands for
                          (NULL: its own) */
    struct folded *folded;
    size_t n_folded, cap_folded;
};

/* A rank folded into a representative: its trace (header) and its
 * measured step times, one per step of the representative. */
struct folded {
    const struct model_trace *t;
    int id; /* its rank number, once the job has ranked its traces */
    int64_t *measured;
    int64_t anchor; /* its builder's */
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
    if (r->step_lo >= r->step_hi) {
        char why[512];
        model_steps_describe(t, b->o.first_step, b->o.last_step, why, sizeof why);
        return sc_error_set(b->err, SC_EINVAL, "'%s': %s", t->source, why);
    }
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
    if (sort_by_track_time(items, n, t->n_tracks))
        goto oom;
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
    if (sort_by_track_time(items, n, t->n_tracks))
        goto oom;
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

/* ---- a thread's recorded work ---------------------------------------------------------- */

/* What thread_spans collects of a thread's events. */
enum span_mode {
    SPANS_OPS,         /* the union of its CPU op intervals */
    SPANS_MARKS,       /* the instants any event on it starts or ends */
    SPANS_MARKS_CALLS, /* the same, but of Python frames */
};

/* A thread's spans in the window, sorted and merged: the union of its CPU
 * op intervals (an op of no duration is kept: an instant the thread was
 * busy splits an idle stretch), or the instants its events start and end,
 * as spans of no duration (a stretch between two of them held nothing
 * recorded). */
static int thread_spans(struct builder *b, struct rank_build *r, uint32_t track, enum span_mode mode,
                        struct sc_span **out, size_t *nout)
{
    const struct model_trace *t = r->t;
    struct sc_spans s = {0}, tmp = {0};
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (e->track != track || e->ts + e->dur < r->origin || e->ts > r->wend)
            continue;
        if (mode == SPANS_OPS ? e->kind != MODEL_EV_CPU_OP : mode == SPANS_MARKS_CALLS && e->kind == MODEL_EV_PYTHON)
            continue;
        if (sc_vec_reserve((void **)&s.v, &s.cap, s.n + 2, sizeof *s.v)) {
            free(s.v);
            return OOM(b);
        }
        if (mode == SPANS_OPS) {
            s.v[s.n++] = (struct sc_span){e->ts, e->ts + e->dur};
        } else {
            s.v[s.n++] = (struct sc_span){e->ts, e->ts};
            s.v[s.n++] = (struct sc_span){e->ts + e->dur, e->ts + e->dur};
        }
    }
    if (sc_spans_union(&s, &tmp)) {
        free(s.v);
        free(tmp.v);
        return OOM(b);
    }
    free(tmp.v);
    *out = s.v;
    *nout = s.n;
    return SC_OK;
}

/* The longest stretch of [a, b] not covered by the busy spans. */
static struct sc_span longest_idle(const struct sc_span *busy, size_t n, int64_t a, int64_t b)
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

static int cmp_i64(const void *a, const void *b);

/* An event's name's slot among n_names string ids: n_names for none. */
static size_t name_slot(const struct model_trace *t, uint32_t event, size_t n_names)
{
    uint32_t name = t->events[event].name;
    return name < n_names ? name : n_names;
}

/* The median duration of each name of the rank's calls: their durations
 * gathered by name (a counting pass over the trace's string ids, no id
 * last), then each name's sorted. */
static int api_medians(struct builder *b, struct rank_build *r, struct api_median *m)
{
    size_t n = 0, n_names = r->t->strings.n;
    memset(m, 0, sizeof *m);
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++)
        n += b->res[res].n;
    int64_t *durs = malloc((n ? n : 1) * sizeof *durs);
    size_t *at = calloc(n_names + 2, sizeof *at);
    m->name = malloc((n ? n : 1) * sizeof *m->name);
    m->median = malloc((n ? n : 1) * sizeof *m->median);
    if (!durs || !at || !m->name || !m->median) {
        free(durs);
        free(at);
        return OOM(b);
    }
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++)
        for (uint32_t k = b->res[res].first; k < b->res[res].first + b->res[res].n; k++)
            if (b->tasks[k].kind == MODEL_TASK_CALL)
                at[name_slot(r->t, b->tasks[k].event, n_names) + 1]++;
    for (size_t q = 0; q <= n_names; q++)
        at[q + 1] += at[q];
    for (uint32_t res = r->thread_lo; res < r->thread_hi; res++)
        for (uint32_t k = b->res[res].first; k < b->res[res].first + b->res[res].n; k++)
            if (b->tasks[k].kind == MODEL_TASK_CALL)
                durs[at[name_slot(r->t, b->tasks[k].event, n_names)]++] = b->tasks[k].dur;
    for (size_t q = 0, from = 0; q <= n_names; from = at[q++]) { /* at[q]: the end of name q's */
        if (at[q] == from)
            continue;
        sc_sort(durs + from, at[q] - from, sizeof *durs, cmp_i64);
        m->name[m->n] = q < n_names ? (uint32_t)q : MODEL_NONE;
        m->median[m->n++] = durs[from + (at[q] - from) / 2];
    }
    free(durs);
    free(at);
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

/* What thread `res`, waiting from p until it resumed at q, polled for:
 * among each stream's last task launched before p (the work queued when
 * the wait began), those the thread launched itself, the one whose end is
 * nearest q, q being at most `early` before it or `late` after it;
 * MODEL_NONE if none. Work queued behind it was not awaited: a wait in a
 * program that runs ahead of its GPU ends near some kernel's end by chance
 * alone. */
static uint32_t polled_task(struct builder *b, struct rank_build *r, uint32_t res, int64_t p, int64_t q,
                            int64_t early, int64_t late)
{
    uint32_t best = MODEL_NONE;
    int64_t best_d = INT64_MAX;
    for (size_t i = 0; i < r->n_streams; i++) {
        uint32_t x = last_launched_before(&r->streams[i], p);
        if (x == MODEL_NONE)
            continue;
        uint32_t call = launch_task(r, b->tasks[x].event);
        int64_t d = q - b->end[x];
        if (call == MODEL_NONE || b->tasks[call].res != res || d < -early || d > late)
            continue;
        if ((d < 0 ? -d : d) < best_d) {
            best_d = d < 0 ? -d : d;
            best = x;
        }
    }
    return best;
}

static int is_query(const struct builder *b, const struct rank_build *r, uint32_t c)
{
    return b->tasks[c].kind == MODEL_TASK_CALL && r->t->events[b->tasks[c].event].rt == MODEL_RT_QUERY;
}

/* The last query of the polling loop query call c begins on its thread
 * (tasks up to `last`): the queries that follow it, each at most
 * MODEL_HOST_POLL_LOOP_GAP_NS after the one before with nothing recorded
 * between them but Python frames (`marks`, SPANS_MARKS_CALLS); c itself
 * when none does. */
static uint32_t poll_loop_end(const struct builder *b, const struct rank_build *r, uint32_t c, uint32_t last,
                              const struct sc_span *marks, size_t n_marks)
{
    uint32_t end = c;
    while (end + 1 < last && is_query(b, r, end + 1) && b->tasks[end + 1].gap <= MODEL_HOST_POLL_LOOP_GAP_NS) {
        size_t k = sc_span_seek(marks, n_marks, b->end[end]);
        if (k < n_marks && marks[k].a < b->ts[end + 1])
            break; /* something else ran between them */
        end++;
    }
    return end;
}

/* The polling loop of query calls c..end (graph.h, MODEL_HOST_POLL_*):
 * when it ended as the work it polled did, its last query waits for that
 * work and the queries between keep no time; else it stays host work. */
static int poll_loop(struct builder *b, struct rank_build *r, uint32_t c, uint32_t end)
{
    uint32_t x = polled_task(b, r, b->tasks[c].res, b->ts[c], b->end[end], ORDER_TOL_NS, MODEL_HOST_POLL_LOOP_LATE_NS);
    if (x == MODEL_NONE || b->end[x] <= b->ts[end - 1])
        return SC_OK; /* the query before the last would have found it done: it polled something else */
    for (uint32_t k = c + 1; k < end; k++) {
        b->tasks[k].gap = 0;
        b->tasks[k].dur = 0;
        b->wait_done[k] = 1;
    }
    /* the last query ends the measured offset after the work (within
     * clock jitter of it: perhaps negative), its own cost at most that */
    int64_t lat = b->end[end] - b->end[x];
    b->tasks[end].gap = 0;
    b->tasks[end].dur = min64(b->tasks[end].dur, max64(0, lat));
    b->wait_done[end] = 1;
    b->stats.host_waits_loop++;
    return add_edge(b, x, end, lat, MODEL_FF, MODEL_EDGE_HOST_POLL, 1);
}

/* Syncs, blocking copies, polling loops and other calls that waited. */
static int host_sync_edges(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    const struct api_median *med = &r->med;
    int rc = SC_OK;
    for (uint32_t res = r->thread_lo; res < r->thread_hi && rc == SC_OK; res++) {
        uint32_t first = b->res[res].first, last = first + b->res[res].n;
        struct sc_span *marks = NULL; /* the thread's, once a query needs them */
        size_t n_marks = 0;
        int have_marks = 0;
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
                        /* it returns once its data is staged. When it
                         * returned after most of its copy had run, it ran
                         * with the copy: it ends when the copy does, less
                         * the last chunk still in flight (a latency, maybe
                         * negative); else once the copy had started */
                        int64_t cs = b->ts[own_task], ce = b->end[own_task];
                        if (cs >= b->ts[c] && b->end[c] - cs >= (ce - cs) / 2 && b->end[c] <= ce + WAIT_END_TOL_NS) {
                            b->tasks[c].dur = max64(0, min64(b->tasks[c].dur, b->end[c] - ce));
                            b->wait_done[c] = 1;
                            rc = add_edge(b, own_task, c, b->end[c] - ce, MODEL_FF, MODEL_EDGE_HOST_SYNC, 0);
                        } else {
                            rc = add_wait(b, r, c, own_task, 0, MODEL_EDGE_HOST_SYNC);
                        }
                        continue;
                    }
                }
                break;
            case MODEL_RT_QUERY:
                if (!have_marks)
                    have_marks = (rc = thread_spans(b, r, b->res[res].track, SPANS_MARKS_CALLS, &marks, &n_marks)) == SC_OK;
                if (rc == SC_OK) {
                    uint32_t end = poll_loop_end(b, r, c, last, marks, n_marks);
                    if (end > c)
                        rc = poll_loop(b, r, c, end);
                    c = end;
                }
                continue;
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
        free(marks);
    }
    return rc;
}

/* Whether call c is one that waits on GPU work itself (a sync, a query, a
 * blocking copy): the host then waited through a call, and the gap before
 * it was not a wait. */
static int waits_itself(const struct builder *b, const struct rank_build *r, uint32_t c)
{
    switch (r->t->events[b->tasks[c].event].rt) {
    case MODEL_RT_SYNC_STREAM:
    case MODEL_RT_SYNC_DEVICE:
    case MODEL_RT_SYNC_EVENT:
    case MODEL_RT_LAUNCH_SYNC:
    case MODEL_RT_QUERY:
        return 1;
    default:
        return 0;
    }
}

/* A gap with nothing recorded in it (graph.h, MODEL_HOST_POLL_*): its
 * longest silent stretch far longer than its thread's usual gap, ending as
 * work the thread had queued ends, was a wait on that work. */
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
        struct sc_span *marks = NULL;
        size_t n_marks = 0;
        int have_marks = 0;
        for (uint32_t c = first + 1; c < last && rc == SC_OK; c++) {
            if (b->tasks[c].kind != MODEL_TASK_CALL || b->tasks[c].gap < long_gap || waits_itself(b, r, c))
                continue;
            if (!have_marks) {
                /* a thread whose trace records no operator (runtime calls
                 * alone, as CUPTI's) is silent between its calls whatever
                 * it runs: its gaps are host work */
                struct sc_span *ops = NULL;
                size_t n_ops = 0;
                if ((rc = thread_spans(b, r, b->res[res].track, SPANS_OPS, &ops, &n_ops)))
                    break;
                free(ops);
                if (!n_ops)
                    break;
                if ((rc = thread_spans(b, r, b->res[res].track, SPANS_MARKS, &marks, &n_marks)))
                    break;
            }
            have_marks = 1;
            struct sc_span w = longest_idle(marks, n_marks, b->ts[c] - b->tasks[c].gap, b->ts[c]);
            if (w.b - w.a < long_gap)
                continue;
            uint32_t x = polled_task(b, r, res, w.a, w.b, MODEL_HOST_POLL_EARLY_NS, MODEL_HOST_POLL_LATE_NS);
            if (x == MODEL_NONE)
                continue;
            b->tasks[c].gap -= w.b - w.a;
            b->stats.host_waits_gap++;
            rc = add_edge(b, x, c, b->ts[c] - b->end[x], MODEL_FS, MODEL_EDGE_HOST_POLL, 1);
        }
        free(marks);
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

static int inter_thread_edges(struct builder *b, struct rank_build *r)
{
    uint32_t nthreads = r->thread_hi - r->thread_lo;
    struct sc_span **busy = calloc(nthreads ? nthreads : 1, sizeof *busy);
    size_t *nbusy = calloc(nthreads ? nthreads : 1, sizeof *nbusy);
    int rc = SC_OK;
    int64_t gap_min = b->o.inter_thread_gap_ns;

    if (!busy || !nbusy) {
        rc = OOM(b);
        goto out;
    }
    for (uint32_t i = 0; i < nthreads && rc == SC_OK; i++)
        rc = thread_spans(b, r, b->res[r->thread_lo + i].track, SPANS_OPS, &busy[i], &nbusy[i]);
    for (uint32_t i = 0; i < nthreads && rc == SC_OK; i++) {
        const struct model_resource *rb = &b->res[r->thread_lo + i];
        for (uint32_t k = rb->first; k < rb->first + rb->n && rc == SC_OK; k++) {
            int64_t p = k == rb->first ? r->origin : b->end[k - 1], q = b->ts[k];
            if (q - p < gap_min)
                continue;
            struct sc_span idle = longest_idle(busy[i], nbusy[i], p, q);
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

/* ---- what the trace cannot explain ------------------------------------------------------------ */

/* A GPU task that started later than everything the graph knows of allowed
 * on the measured timeline: its launch call had ended (a task launched
 * before the window: by the window's start), its stream was free and every
 * other edge into it was met, yet it waited. The wait (beyond ORDER_TOL_NS
 * of clock jitter) becomes an `unexplained` edge from the constraint met
 * last, finish to start, its latency the wait: a replay applies it only
 * when asked to keep such waits. What they cost each step is found by a
 * replay that reports it (model_replay_opts.step_unexplained). */
static int unexplained_waits(struct builder *b)
{
    size_t n = b->n_tasks;
    int64_t *ready = malloc((n ? n : 1) * sizeof *ready);
    uint32_t *by = malloc((n ? n : 1) * sizeof *by);
    int rc = SC_OK;

    if (!ready || !by) {
        rc = OOM(b);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        ready[i] = INT64_MIN;
        by[i] = MODEL_NONE;
    }
    /* the latest edge into each GPU task, its base the source's end: a
     * launch counts once the call has ended; start-to-start edges are
     * launches or measured latencies, never an earlier constraint */
    for (size_t e = 0; e < b->n_edges; e++) {
        const struct pending_edge *ed = &b->edges[e];
        if (!model_task_on_gpu(b->tasks[ed->to].kind) || (ed->type != MODEL_FS && ed->kind != MODEL_EDGE_LAUNCH))
            continue;
        int64_t t = b->end[ed->from] + (ed->kind == MODEL_EDGE_LAUNCH ? 0 : ed->lat);
        if (t > ready[ed->to]) {
            ready[ed->to] = t;
            by[ed->to] = ed->from;
        }
    }
    const struct rank_build *r = &b->r;
    uint32_t origin_marker = MODEL_NONE; /* the begin marker of its first step */
    for (size_t k = 0; k < b->n_steps && origin_marker == MODEL_NONE; k++)
        if (b->steps[k].step == r->step_lo)
            origin_marker = b->steps[k].begin;
    for (size_t si = 0; si < r->n_streams && rc == SC_OK; si++) {
        const struct stream *st = &r->streams[si];
        for (uint32_t k = 0; k < st->n && rc == SC_OK; k++) {
            uint32_t task = st->first + k, from = by[task];
            int64_t at = ready[task];
            if (from == MODEL_NONE) { /* launched before the window */
                at = r->origin;
                from = origin_marker;
            }
            if (k && b->end[task - 1] >= at) {
                at = b->end[task - 1];
                from = task - 1;
            }
            if (from != MODEL_NONE && b->ts[task] - at > ORDER_TOL_NS)
                rc = add_edge(b, from, task, b->ts[task] - b->end[from], MODEL_FS, MODEL_EDGE_UNEXPLAINED, 1);
        }
    }
out:
    free(ready);
    free(by);
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

/* The collective metadata of a communication kernel's event, or NULL. */
static const struct model_collective *coll_of(const struct model_trace *t, uint32_t ev)
{
    uint32_t info = t->events[ev].info;
    if (info == MODEL_NONE || t->infos[info].coll == MODEL_NONE)
        return NULL;
    return &t->colls[t->infos[info].coll];
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
static int rank_keep(struct builder *b)
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
            const struct model_collective *c = coll_of(t, task->event);
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

/* Free what only finding the rank's edges needed; trim the rest to size. */
static void rank_trim(struct builder *b)
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
    r->outer = r->task_of = r->records = NULL;
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

static void rank_free(struct builder *b)
{
    if (!b)
        return;
    rank_trim(b);
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

/* ---- folding alike ranks (graph.h, MODEL_FOLD_OVER) ---------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The hash of a string id of t (MODEL_NONE: none). */
static uint64_t str_hash(const struct model_trace *t, uint32_t id)
{
    return id == MODEL_NONE ? 0 : t->strings.strs[id].hash;
}

/* What folding compares of the rank's part: a hash of its structure (what
 * same_structure compares) and its work. */
static void rank_profile(struct builder *b)
{
    const struct model_trace *t = b->r.t;
    uint64_t h = mix(mix(mix(mix(0, b->n_tasks), b->n_edges), b->n_res), b->n_steps);
    b->work_gpu = b->work_cpu = 0;
    for (size_t i = 0; i < b->n_tasks; i++) {
        const struct btask *k = &b->tasks[i];
        h = mix(h, (uint64_t)k->kind << 40 ^ (uint64_t)k->sub << 32 ^ k->res);
        h = mix(h, str_hash(t, k->name));
        if (!b->res[k->res].gpu)
            b->work_cpu += k->dur + k->gap;
        else if (k->kind != MODEL_TASK_COMM)
            b->work_gpu += k->dur;
    }
    for (size_t i = 0; i < b->n_edges; i++) {
        const struct pending_edge *e = &b->edges[i];
        h = mix(h, (uint64_t)e->to << 32 ^ e->from);
        h = mix(h, (uint64_t)e->type << 16 ^ (uint64_t)e->kind << 8 ^ e->inferred);
    }
    double after = 0; /* the collectives' mean end after the first's */
    for (size_t i = 0; i < b->n_comm; i++) {
        const struct comm_meta *m = &b->comm[i];
        h = mix(mix(mix(h, str_hash(t, m->pg)), (uint64_t)m->key_seq), (uint64_t)m->bytes);
        after += ((double)(m->end - b->comm[0].end) - after) / (double)(i + 1);
    }
    b->sig = h;
    b->anchor = b->n_comm ? b->r.origin - b->comm[0].end - (int64_t)after : 0;
}

/* Whether two strings of two traces are equal (MODEL_NONE: none). */
static int same_str(const struct model_trace *ta, uint32_t a, const struct model_trace *tb, uint32_t b)
{
    if (a == MODEL_NONE || b == MODEL_NONE)
        return a == b;
    return strcmp(model_str(ta, a), model_str(tb, b)) == 0;
}

/* Whether two ranks' parts have the same resources, tasks, edges, steps
 * and collectives (durations, gaps and latencies aside). */
static int same_structure(const struct builder *a, const struct builder *b)
{
    const struct model_trace *ta = a->r.t, *tb = b->r.t;
    if (a->sig != b->sig || a->n_tasks != b->n_tasks || a->n_edges != b->n_edges || a->n_res != b->n_res ||
        a->n_steps != b->n_steps || a->n_comm != b->n_comm)
        return 0;
    for (size_t i = 0; i < a->n_res; i++) {
        const struct model_resource *x = &a->res[i], *y = &b->res[i];
        if (x->gpu != y->gpu || x->comm != y->comm || x->first != y->first || x->n != y->n ||
            (x->gpu && ta->tracks[x->track].tid != tb->tracks[y->track].tid))
            return 0;
    }
    for (size_t i = 0; i < a->n_tasks; i++) {
        const struct btask *x = &a->tasks[i], *y = &b->tasks[i];
        if (x->kind != y->kind || x->sub != y->sub || x->res != y->res || !same_str(ta, x->name, tb, y->name))
            return 0;
    }
    for (size_t i = 0; i < a->n_edges; i++) {
        const struct pending_edge *x = &a->edges[i], *y = &b->edges[i];
        if (x->to != y->to || x->from != y->from || x->type != y->type || x->kind != y->kind ||
            x->inferred != y->inferred)
            return 0;
    }
    for (size_t i = 0; i < a->n_steps; i++) {
        const struct model_graph_step *x = &a->steps[i], *y = &b->steps[i];
        if (x->begin != y->begin || x->end != y->end || x->partial != y->partial ||
            !same_str(ta, ta->steps[x->step].name, tb, tb->steps[y->step].name))
            return 0;
    }
    for (size_t i = 0; i < a->n_comm; i++) {
        const struct comm_meta *x = &a->comm[i], *y = &b->comm[i];
        if (x->task != y->task || x->key_seq != y->key_seq || x->seq != y->seq || x->bytes != y->bytes ||
            x->stream != y->stream || x->group_size != y->group_size || x->op != y->op ||
            !same_str(ta, x->pg, tb, y->pg) || !same_str(ta, x->dtype, tb, y->dtype))
            return 0;
    }
    return 1;
}

/* The MODEL_FOLD_TOL-wide bucket work w falls in (log scale). */
static int64_t work_bucket(int64_t w)
{
    return (int64_t)floor(log1p((double)(w > 0 ? w : 0) / MODEL_FOLD_FLOOR_NS) / log1p(MODEL_FOLD_TOL));
}

static int alike(const struct builder *a, const struct builder *b)
{
    return a->sig == b->sig && work_bucket(a->work_gpu) == work_bucket(b->work_gpu) &&
           work_bucket(a->work_cpu) == work_bucket(b->work_cpu) && same_structure(a, b);
}

/* Whether a rather than b stands for both: the one with more GPU work,
 * then more CPU work (the later to arrive at a collective), then the
 * first by trace name, whatever order they came in. */
static int stands_for(const struct builder *a, const struct builder *b)
{
    if (a->work_gpu != b->work_gpu)
        return a->work_gpu > b->work_gpu;
    if (a->work_cpu != b->work_cpu)
        return a->work_cpu > b->work_cpu;
    return strcmp(a->r.t->source, b->r.t->source) < 0;
}

/* Fold m (and the ranks folded into it) into rep; m is freed, also on
 * failure. */
static int fold_into(struct builder *rep, struct builder *m, struct sc_error *err)
{
    int64_t *measured = NULL;
    int rc = SC_OK;
    if (!rep->comm_min && rep->n_comm) {
        if (!(rep->comm_min = malloc(rep->n_comm * sizeof *rep->comm_min)))
            goto oom;
        for (size_t i = 0; i < rep->n_comm; i++)
            rep->comm_min[i] = rep->tasks[rep->comm[i].task].dur;
    }
    for (size_t i = 0; i < rep->n_comm; i++)
        rep->comm_min[i] = min64(rep->comm_min[i], m->comm_min ? m->comm_min[i] : m->tasks[m->comm[i].task].dur);
    if (sc_vec_reserve((void **)&rep->folded, &rep->cap_folded, rep->n_folded + m->n_folded + 1, sizeof *rep->folded))
        goto oom;
    if (!(measured = malloc((m->n_steps ? m->n_steps : 1) * sizeof *measured)))
        goto oom;
    for (size_t k = 0; k < m->n_steps; k++)
        measured[k] = m->steps[k].measured_ns;
    if (m->n_folded)
        memcpy(rep->folded + rep->n_folded, m->folded, m->n_folded * sizeof *m->folded);
    rep->n_folded += m->n_folded;
    m->n_folded = 0;
    rep->folded[rep->n_folded++] = (struct folded){m->r.t, -1, measured, m->anchor};
out:
    rank_free(m);
    return rc;
oom:
    rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    goto out;
}

/* The ranks' parts as they are found: all held while the job has at most
 * `over` ranks, then folded as they come (the classes of alike ranks and
 * who stands for each do not depend on the order). */
struct folder {
    size_t over, seen;
    size_t reps_max; /* model_graph_opts.fold_reps_max */
    struct builder **v; /* the parts held: every rank's, or once folding, the representatives */
    size_t n, cap;
};

/* Take p (freed on failure) among the representatives. */
static int fold_one(struct folder *f, struct builder *p, struct sc_error *err)
{
    for (size_t k = 0; k < f->n; k++) {
        struct builder *r = f->v[k];
        if (!alike(r, p))
            continue;
        if (!stands_for(p, r))
            return fold_into(r, p, err);
        f->v[k] = p;
        return fold_into(p, r, err);
    }
    if (f->reps_max && f->n >= f->reps_max) {
        rank_free(p);
        return sc_error_set(err, SC_ELIMIT,
                            "the job's ranks fold to more than %zu representatives (fold_reps_max), more "
                            "than its memory was estimated for",
                            f->reps_max);
    }
    if (sc_vec_reserve((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v)) {
        rank_free(p);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    f->v[f->n++] = p;
    return SC_OK;
}

/* Take a rank's part p (freed on failure). */
static int folder_add(struct folder *f, struct builder *p, struct sc_error *err)
{
    if (++f->seen <= f->over) {
        if (sc_vec_reserve((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v)) {
            rank_free(p);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        f->v[f->n++] = p;
        return SC_OK;
    }
    if (f->seen == f->over + 1) { /* past the threshold: fold what is held */
        struct builder **held = f->v;
        size_t n = f->n;
        int rc = SC_OK;
        f->v = NULL;
        f->n = f->cap = 0;
        for (size_t i = 0; i < n; i++)
            if (rc)
                rank_free(held[i]);
            else
                rc = fold_one(f, held[i], err);
        free(held);
        if (rc) {
            rank_free(p);
            return rc;
        }
    }
    return fold_one(f, p, err);
}

static int folder_on(const struct folder *f)
{
    return f->seen > f->over;
}

static void folder_release(struct folder *f)
{
    for (size_t i = 0; i < f->n; i++)
        rank_free(f->v[i]);
    free(f->v);
    memset(f, 0, sizeof *f);
}

/* One rank's tasks, edges and steps from its trace (rank_keep's notes
 * included), into a new builder. */
static int rank_part(const struct model_trace *t, const struct model_graph_opts *o, struct builder **out,
                     struct sc_error *err)
{
    struct builder *b = calloc(1, sizeof *b);
    struct rank_build *r;
    int rc;

    *out = NULL;
    if (!b)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    b->err = err;
    b->o = *o;
    r = &b->r;
    r->t = t;
    r->outer = malloc((t->n_events ? t->n_events : 1) * sizeof *r->outer);
    r->task_of = malloc((t->n_events ? t->n_events : 1) * sizeof *r->task_of);
    if (!r->outer || !r->task_of) {
        rc = OOM(b);
        goto out;
    }
    memset(r->outer, 0xff, t->n_events * sizeof *r->outer);
    memset(r->task_of, 0xff, t->n_events * sizeof *r->task_of);
    if ((rc = rank_window(b, r)) || (rc = rank_threads(b, r)) || (rc = rank_streams(b, r)))
        goto out;
    size_t n = b->n_tasks ? b->n_tasks : 1;
    b->wait_done = calloc(n, sizeof *b->wait_done);
    b->next_gpu = malloc(n * sizeof *b->next_gpu);
    b->cur_gpu = malloc(n * sizeof *b->cur_gpu);
    b->last_rec = malloc(n * sizeof *b->last_rec);
    b->stream_ix = malloc((b->n_res ? b->n_res : 1) * sizeof *b->stream_ix);
    if (!b->wait_done || !b->next_gpu || !b->cur_gpu || !b->last_rec || !b->stream_ix) {
        rc = OOM(b);
        goto out;
    }
    memset(b->stream_ix, 0xff, b->n_res * sizeof *b->stream_ix);
    if ((rc = thread_scans(b, r)) || (rc = api_medians(b, r, &r->med)) || (rc = calibrate_latencies(b, r)) ||
        (rc = launch_edges(b, r)) || (rc = cuda_sync_edges(b, r)) || (rc = inferred_event_edges(b, r)) ||
        (rc = launch_queue_edges(b, r, &b->queue_depth)) || (rc = gpu_wait_edges(b, r)) ||
        (rc = host_sync_edges(b, r)) || (rc = host_poll_edges(b, r)) || (rc = inter_thread_edges(b, r)) ||
        (rc = step_end_edges(b, r)) || (rc = unexplained_waits(b)) || (rc = rank_keep(b)))
        goto out;
    rank_profile(b);
out:
    rank_trim(b);
    b->err = NULL;
    if (rc) {
        rank_free(b);
        return rc;
    }
    *out = b;
    return SC_OK;
}

/* The join gives the memory of the parts it has freed back to the system
 * after about this many tasks (~60 MB of parts), so the parts and the graph
 * being built are not both held whole. */
#define TRIM_TASKS 1000000

/* ---- joining the ranks ------------------------------------------------------------------ */

/* The ranks' parts, in rank order, and what is found across them. */
struct join {
    struct builder **parts;
    const struct model_trace **traces; /* each part's trace (its header is enough) */
    int *rank_ids;
    size_t n;
    size_t total; /* the job's ranks: n and those folded into them */
    int folded;   /* the job was folded (graph.h, MODEL_FOLD_OVER) */
    struct sc_error *err;
    uint32_t *base;        /* per rank: its first task in the graph */
    int64_t *clock_offset; /* per rank */
    struct bgroup *groups;
    size_t n_groups, cap_groups;
    uint32_t *group_tasks;
    size_t n_group_tasks, cap_group_tasks;
    struct model_graph_stats stats;
};

/* A communication kernel and the key that finds it on the other ranks:
 * its process group and sequence number where the trace has them, else
 * its position among the communication kernels of its stream. */
struct comm_ref {
    const char *pg;   /* process group name, or NULL: keyed by stream */
    int64_t seq;      /* sequence number in the process group */
    int64_t stream;   /* stream id */
    uint32_t ordinal; /* position among the comm kernels of that stream */
    uint16_t rank;
    const struct comm_meta *m;
    int32_t size;     /* its group's size as the trace gives it, or -1 */
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


/* What a group of one collective carries, from its first member: its
 * kind, its size in bytes (nccl-tests convention, graph.h), dtype, process
 * group, sequence number and group size (the trace's, else the members'
 * count: a world size assumed for want of one is not recorded). */
static struct model_group_spec group_spec(const struct model_trace *t, const struct comm_meta *m, size_t members)
{
    struct model_group_spec s = {.op = m->op, .bytes = m->bytes, .seq = m->seq, .size = (uint32_t)members};
    s.dtype = m->dtype == MODEL_NONE ? NULL : model_str(t, m->dtype);
    s.pg = m->pg == MODEL_NONE ? NULL : model_str(t, m->pg);
    if (m->group_size > 0 && (size_t)m->group_size >= members)
        s.size = (uint32_t)m->group_size;
    return s;
}

/* The job's world size when some of its ranks were not traced: the
 * largest distributedInfo.world_size of the traces, when it exceeds the
 * ranks given; else 0 (every rank traced, or the traces do not say). */
static size_t untraced_world(const struct join *j)
{
    int64_t world = 0;
    for (size_t rk = 0; rk < j->n; rk++)
        if (j->traces[rk]->world_size > world)
            world = j->traces[rk]->world_size;
    return world > 0 && (uint64_t)world > j->total ? (size_t)world : 0;
}

/* How many ranks part rk stands for: itself and those folded into it. */
static size_t stands(const struct join *j, size_t rk)
{
    return 1 + j->parts[rk]->n_folded;
}

/* Group one collective's kernels across ranks: by process group and
 * sequence number where the trace has them, else the k-th communication
 * kernel of each communication stream across the ranks that have that
 * stream. Its group is as large as the trace says (the kernel's group
 * size, else its process group's in distributedInfo); where the trace
 * does not say, the world when some ranks of the job were not traced,
 * else every rank having the process group (or stream). A group whose
 * members were all traced, one kernel each, all of the same operation, is
 * matched: clocks are aligned on their ends and members get their
 * intrinsic time (the shortest member: the last to arrive waited for
 * nobody). Any other collective is kept on each rank, a group of its own
 * kernel, as a single traced rank's is (its untraced peers are taken to
 * run like it). A part that stands for ranks folded into it (graph.h,
 * MODEL_FOLD_OVER) counts as all of them, and its intrinsic time is the
 * shortest of all of theirs. */
static int collectives(struct join *j)
{
    size_t nranks = j->n;
    struct comm_ref *refs = NULL;
    size_t n = 0;
    int rc = SC_OK;
    int64_t **diffs = NULL;
    size_t *ndiff = NULL, *capdiff = NULL;
    uint32_t *seen = NULL, stamp = 0;
    size_t want = 0, world = untraced_world(j);

    for (size_t rk = 0; rk < nranks; rk++)
        n += j->parts[rk]->n_comm;
    if (!(refs = malloc((n ? n : 1) * sizeof *refs)))
        goto oom;
    n = 0;
    for (size_t rk = 0; rk < nranks; rk++) {
        const struct builder *p = j->parts[rk];
        const struct model_trace *t = j->traces[rk];
        uint32_t ord = 0;
        for (size_t i = 0; i < p->n_comm; i++) {
            const struct comm_meta *m = &p->comm[i];
            if (i && p->tasks[m->task].res != p->tasks[p->comm[i - 1].task].res)
                ord = 0; /* the next stream */
            struct comm_ref ref = {NULL, -1, m->stream, ord++, (uint16_t)rk, m, m->group_size};
            if (m->pg != MODEL_NONE && m->key_seq >= 0) {
                ref.pg = model_str(t, m->pg);
                ref.seq = m->key_seq;
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
        size_t e = i;
        while (e < n && same_key(&refs[e], &refs[i]))
            e++;
        /* how many members a complete group has: the ranks having this
         * stream (or process group) at all */
        if (i == 0 || !same_set(&refs[i], &refs[i - 1])) {
            want = 0;
            stamp++;
            for (size_t q = i; q < n && same_set(&refs[q], &refs[i]); q++)
                if (seen[refs[q].rank] != stamp) {
                    seen[refs[q].rank] = stamp;
                    want += stands(j, refs[q].rank);
                }
        }
        size_t need = refs[i].size > 0 ? (size_t)refs[i].size : world ? world : want, members = 0;
        for (size_t q = i; q < e; q++)
            members += stands(j, refs[q].rank);
        int same = members == need && need > 1;
        for (size_t q = i + 1; q < e && same; q++) /* one kernel per rank, one operation */
            same = refs[q].rank != refs[q - 1].rank && refs[q].m->op == refs[i].m->op;
        if (!same) {
            /* kept: each a group of its own, holding what the trace says
             * of the collective (its size, the ranks taking part) */
            if (sc_vec_reserve((void **)&j->groups, &j->cap_groups, j->n_groups + (e - i), sizeof *j->groups) ||
                sc_vec_reserve((void **)&j->group_tasks, &j->cap_group_tasks, j->n_group_tasks + (e - i),
                               sizeof *j->group_tasks))
                goto oom;
            for (size_t q = i; q < e; q++) {
                size_t rk = refs[q].rank;
                j->parts[rk]->tasks[refs[q].m->task].kept = 1;
                j->groups[j->n_groups++] =
                    (struct bgroup){(uint32_t)j->n_group_tasks, 1, group_spec(j->traces[rk], refs[q].m, 1)};
                j->group_tasks[j->n_group_tasks++] = j->base[rk] + refs[q].m->task;
            }
            j->stats.collectives_kept += e - i;
            i = e;
            continue;
        }
        int64_t intrinsic = INT64_MAX, ref_end = INT64_MIN;
        for (size_t q = i; q < e; q++) {
            const struct builder *p = j->parts[refs[q].rank];
            intrinsic = min64(intrinsic, p->comm_min ? p->comm_min[refs[q].m - p->comm] : p->tasks[refs[q].m->task].dur);
            if (refs[q].rank == refs[i].rank)
                ref_end = refs[q].m->end;
        }
        if (sc_vec_reserve((void **)&j->groups, &j->cap_groups, j->n_groups + 1, sizeof *j->groups) ||
            sc_vec_reserve((void **)&j->group_tasks, &j->cap_group_tasks, j->n_group_tasks + (e - i),
                           sizeof *j->group_tasks))
            goto oom;
        j->groups[j->n_groups++] = (struct bgroup){(uint32_t)j->n_group_tasks, (uint32_t)(e - i),
                                                   group_spec(j->traces[refs[i].rank], refs[i].m, members)};
        for (size_t q = i; q < e; q++) {
            size_t rk = refs[q].rank;
            j->parts[rk]->tasks[refs[q].m->task].dur = intrinsic;
            j->group_tasks[j->n_group_tasks++] = j->base[rk] + refs[q].m->task;
            if (refs[i].rank == 0) {
                if (sc_vec_reserve((void **)&diffs[rk], &capdiff[rk], ndiff[rk] + 1, sizeof **diffs))
                    goto oom;
                diffs[rk][ndiff[rk]++] = refs[q].m->end - ref_end;
            }
        }
        j->stats.collectives_matched++;
        i = e;
    }
    for (size_t rk = 0; rk < nranks; rk++) {
        if (ndiff[rk]) {
            sc_sort(diffs[rk], ndiff[rk], sizeof **diffs, cmp_i64);
            j->clock_offset[rk] = diffs[rk][ndiff[rk] / 2];
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
    rc = sc_error_set(j->err, SC_ENOMEM, "out of memory");
    goto out;
}

/* One rank's resources, tasks (laid out by measured start on rank 0's
 * clock), edges and steps, through the public builder. Task and resource
 * ids follow on from the ranks before. */
static int emit_rank(struct join *j, size_t rk, struct model_gb *gb)
{
    const struct builder *p = j->parts[rk];
    const struct model_trace *t = j->traces[rk];
    uint32_t res0 = 0, id, base = j->base[rk];
    int64_t off = j->clock_offset[rk];
    int rc = SC_OK;

    for (size_t i = 0; i < p->n_res && rc == SC_OK; i++) {
        const struct model_resource *r = &p->res[i];
        const struct model_track *tk = &t->tracks[r->track];
        struct model_res_spec rs = {.rank = (uint16_t)rk, .gpu = r->gpu, .comm = r->comm,
                                    .label = tk->label == MODEL_NONE ? NULL : model_str(t, tk->label),
                                    .pid = tk->pid, .tid = tk->tid, .track = r->track, .has_track = 1,
                                    .origin = p->r.origin - off};
        rc = model_gb_add_resource(gb, &rs, &id);
        if (i == 0)
            res0 = id;
    }
    /* tasks in index order: each resource's are contiguous and in its
     * order, so the builder gives every task its index here as its id */
    for (size_t i = 0; i < p->n_tasks && rc == SC_OK; i++) {
        const struct btask *k = &p->tasks[i];
        struct model_task_spec ts = {.res = res0 + k->res, .cls = k->kind, .sub = k->sub, .dur = k->dur,
                                     .gap = k->gap, .event = k->event, .has_event = k->event != MODEL_NONE,
                                     .kept = k->kept, .order = p->ts[i] - off,
                                     .name = k->name == MODEL_NONE ? "(step boundary)" : model_str(t, k->name)};
        rc = model_gb_add_task(gb, &ts, &id);
    }
    for (size_t i = 0; i < p->n_edges && rc == SC_OK; i++) {
        const struct pending_edge *e = &p->edges[i];
        rc = model_gb_add_edge(gb, base + e->from, base + e->to, e->kind, e->type, e->lat, e->inferred);
    }
    for (size_t i = 0; i < p->n_steps && rc == SC_OK; i++) {
        const struct model_graph_step *s = &p->steps[i];
        rc = model_gb_add_step(gb, &(struct model_step_spec){(uint16_t)rk, base + s->begin,
                                                             s->end == MODEL_NONE ? MODEL_NONE : base + s->end,
                                                             model_str(t, t->steps[s->step].name),
                                                             s->measured_ns, s->partial, s->step});
    }
    return rc;
}

static void add_stats(struct model_graph_stats *to, const struct model_graph_stats *s)
{
    to->inferred_event_syncs += s->inferred_event_syncs;
    to->cuda_sync_event_syncs += s->cuda_sync_event_syncs;
    to->host_waits_gap += s->host_waits_gap;
    to->host_waits_loop += s->host_waits_loop;
}

/* Join the ranks' parts into the graph: group collectives, align clocks,
 * then hand each rank over to the public builder and free its part (so
 * the parts and the graph being built are not all held at once). */
static int join(struct join *j, const struct model_job *job, struct model_graph **out)
{
    struct model_gb *gb = NULL;
    size_t tasks = 0, edges = 0;
    uint16_t rank;
    int rc = SC_OK;

    j->base = malloc(j->n * sizeof *j->base);
    j->clock_offset = calloc(j->n, sizeof *j->clock_offset);
    if (!j->base || !j->clock_offset)
        return sc_error_set(j->err, SC_ENOMEM, "out of memory");
    for (size_t rk = 0; rk < j->n; rk++) {
        if (tasks + j->parts[rk]->n_tasks >= (1u << 30))
            return sc_error_set(j->err, SC_ELIMIT, "more than %u tasks", 1u << 30);
        j->base[rk] = (uint32_t)tasks;
        tasks += j->parts[rk]->n_tasks;
        edges += j->parts[rk]->n_edges;
        add_stats(&j->stats, &j->parts[rk]->stats);
    }
    if ((rc = collectives(j)))
        return rc;
    if (!(gb = model_gb_new(j->err)))
        return SC_ENOMEM;
    model_gb_set_job(gb, job);
    rc = model_gb_reserve(gb, tasks, edges, j->n_groups, j->n_group_tasks);
    for (size_t rk = 0; rk < j->n && rc == SC_OK; rk++)
        rc = model_gb_add_rank(gb, &(struct model_rank_spec){j->rank_ids[rk], j->clock_offset[rk],
                                                              j->parts[rk]->queue_depth}, &rank);
    if (j->folded)
        model_gb_folding_on(gb, j->total);
    for (size_t rk = 0; rk < j->n && rc == SC_OK; rk++) {
        const struct builder *p = j->parts[rk];
        for (size_t k = 0; k < p->n_folded && rc == SC_OK; k++)
            rc = model_gb_add_folded(gb, &(struct model_folded_spec){(uint16_t)rk, p->folded[k].id,
                                                                     p->folded[k].anchor - p->anchor,
                                                                     p->folded[k].measured, p->n_steps});
    }
    size_t freed = 0; /* tasks of the parts freed since the heap was last trimmed */
    for (size_t rk = 0; rk < j->n && rc == SC_OK; rk++) {
        rc = emit_rank(j, rk, gb);
        freed += j->parts[rk]->n_tasks;
        rank_free(j->parts[rk]);
        j->parts[rk] = NULL;
        if (freed >= TRIM_TASKS || rk + 1 == j->n) {
            sc_heap_trim();
            freed = 0;
        }
    }
    for (size_t i = 0; i < j->n_groups && rc == SC_OK; i++)
        rc = model_gb_add_group(gb, &j->groups[i].spec, j->group_tasks + j->groups[i].first, j->groups[i].n, NULL);
    if (rc) {
        model_gb_free(gb);
        return rc;
    }
    *model_gb_stats(gb) = j->stats;
    return model_gb_finish(gb, out, j->err);
}

static void join_release(struct join *j)
{
    for (size_t rk = 0; j->parts && rk < j->n; rk++)
        rank_free(j->parts[rk]);
    free(j->parts);
    free(j->traces);
    free(j->rank_ids);
    free(j->base);
    free(j->clock_offset);
    free(j->groups);
    free(j->group_tasks);
}

/* ---- building -------------------------------------------------------------------------- */

/* A trace and the rank number the job gave it. */
struct ranked {
    const struct model_trace *t;
    int id;
};

static int by_trace(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct ranked *)a)->t, y = (uintptr_t)((const struct ranked *)b)->t;
    return (x > y) - (x < y);
}

static int by_folded_id(const void *a, const void *b)
{
    int x = ((const struct folded *)a)->id, y = ((const struct folded *)b)->id;
    return (x > y) - (x < y);
}

/* The join's parts: the folder's, in the job's rank order, each with the
 * rank numbers of those folded into it. The folder gives its parts over. */
static int assemble(struct join *j, struct folder *f, const struct model_job *job, struct sc_error *err)
{
    struct ranked *by_t = malloc((job->n_ranks ? job->n_ranks : 1) * sizeof *by_t);
    size_t folded = 0;
    int rc = SC_OK;

    j->total = job->n_ranks;
    j->folded = folder_on(f);
    j->parts = calloc(f->n ? f->n : 1, sizeof *j->parts);
    j->traces = malloc((f->n ? f->n : 1) * sizeof *j->traces);
    j->rank_ids = malloc((f->n ? f->n : 1) * sizeof *j->rank_ids);
    if (!by_t || !j->parts || !j->traces || !j->rank_ids) {
        free(by_t);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < job->n_ranks; i++)
        by_t[i] = (struct ranked){job->ranks[i], (int)i}; /* the job's index, for now */
    sc_sort(by_t, job->n_ranks, sizeof *by_t, by_trace);
    /* each part at its trace's index in the job; the others folded */
    struct builder **at = calloc(job->n_ranks ? job->n_ranks : 1, sizeof *at);
    if (!at) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < f->n; k++) {
        struct builder *p = f->v[k];
        struct ranked key = {p->r.t, 0}, *hit = bsearch(&key, by_t, job->n_ranks, sizeof *by_t, by_trace);
        if (!hit || at[hit->id]) {
            rc = sc_error_set(err, SC_EINTERNAL, "'%s' was built but is not in the job", p->r.t->source);
            goto out;
        }
        at[hit->id] = p;
        for (size_t q = 0; q < p->n_folded; q++) {
            struct ranked fk = {p->folded[q].t, 0}, *fh = bsearch(&fk, by_t, job->n_ranks, sizeof *by_t, by_trace);
            if (!fh) {
                rc = sc_error_set(err, SC_EINTERNAL, "'%s' was folded but is not in the job", fk.t->source);
                goto out;
            }
            p->folded[q].id = job->rank_ids[fh->id];
        }
        sc_sort(p->folded, p->n_folded, sizeof *p->folded, by_folded_id);
        folded += p->n_folded;
    }
    if (f->n + folded != job->n_ranks) {
        rc = sc_error_set(err, SC_EINTERNAL, "%zu traces were loaded but %zu built", job->n_ranks, f->n + folded);
        goto out;
    }
    for (size_t i = 0; i < job->n_ranks; i++) {
        if (!at[i])
            continue;
        j->parts[j->n] = at[i];
        j->traces[j->n] = job->ranks[i];
        j->rank_ids[j->n++] = job->rank_ids[i];
    }
    free(f->v); /* the parts are the join's now */
    f->v = NULL;
    f->n = f->cap = 0;
out:
    free(by_t);
    free(at);
    return rc;
}

struct job_parts {
    const struct model_job *job;
    const struct model_graph_opts *o;
    struct builder **parts;
};

static int part_of_rank(void *ctx, size_t i, struct sc_error *err)
{
    struct job_parts *jp = ctx;
    return rank_part(jp->job->ranks[i], jp->o, &jp->parts[i], err);
}

int model_graph_build(const struct model_job *job, const struct model_graph_opts *opts,
                      struct model_graph **out, struct sc_error *err)
{
    struct model_graph_opts o;
    struct join j = {.err = err};
    struct folder f = {0};
    struct builder **parts = NULL;
    int rc;

    *out = NULL;
    if (opts)
        o = *opts;
    else
        model_graph_opts_default(&o);
    if (!job->n_ranks)
        return sc_error_set(err, SC_EINVAL, "no trace to build a graph from");
    if (!(parts = calloc(job->n_ranks, sizeof *parts)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    struct job_parts jp = {job, &o, parts};
    f.over = o.fold_over;
    f.reps_max = o.fold_reps_max;
    rc = sc_parallel_for(job->n_ranks, 0, part_of_rank, &jp, err);
    for (size_t i = 0; i < job->n_ranks; i++) { /* in rank order */
        if (rc == SC_OK)
            rc = folder_add(&f, parts[i], err);
        else
            rank_free(parts[i]);
    }
    free(parts);
    if (rc == SC_OK && (rc = assemble(&j, &f, job, err)) == SC_OK)
        rc = join(&j, job, out);
    folder_release(&f);
    join_release(&j);
    return rc;
}

/* ---- building while loading ------------------------------------------------------------- */

struct streamed {
    const struct model_graph_opts *o;
    const struct model_graph_load *l;
    pthread_mutex_t mu;
    struct folder fold;
    size_t n;
};

/* model_job_each: a trace just loaded -> its part; the trace keeps only
 * its header. */
static int part_of_loaded(void *ctx, struct model_trace *t, struct sc_error *err)
{
    struct streamed *s = ctx;
    struct builder *p;
    int rc = rank_part(t, s->o, &p, err);
    if (rc)
        return rc;
    model_trace_shed(t);
    pthread_mutex_lock(&s->mu);
    rc = folder_add(&s->fold, p, err);
    size_t done = ++s->n;
    pthread_mutex_unlock(&s->mu);
    if (rc == SC_OK && s->l->progress)
        s->l->progress(s->l->progress_ctx, done);
    return rc;
}

int model_graph_build_paths(const char *const *paths, size_t n, const struct model_graph_load *l,
                            const struct model_graph_opts *opts, struct model_job **job_out,
                            struct model_graph **out, struct sc_error *err)
{
    static const struct model_graph_load none;
    struct model_graph_opts o;
    struct model_load_opts lo;
    struct model_job *job = NULL;
    struct streamed s = {.o = &o, .l = l ? l : &none};
    struct join j = {.err = err};
    int rc;

    *out = NULL;
    *job_out = NULL;
    if (opts)
        o = *opts;
    else
        model_graph_opts_default(&o);
    if (s.l->load)
        lo = *s.l->load;
    else
        model_load_opts_default(&lo);
    s.fold.over = o.fold_over;
    s.fold.reps_max = o.fold_reps_max;
    pthread_mutex_init(&s.mu, NULL);
    struct model_job_each each = {part_of_loaded, &s};
    rc = model_job_load_each(paths, n, s.l->ranks, &lo, s.l->threads, &each, &job, err);
    if (rc == SC_OK)
        rc = assemble(&j, &s.fold, job, err);
    folder_release(&s.fold); /* the parts not taken (a failed load) */
    pthread_mutex_destroy(&s.mu);
    sc_heap_trim(); /* the traces' tables, freed by the loading threads */
    if (rc == SC_OK)
        rc = join(&j, job, out);
    join_release(&j);
    if (rc) {
        model_job_free(job);
        return rc;
    }
    *job_out = job;
    return SC_OK;
}
