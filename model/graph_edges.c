/* model/graph_edges.c: the edges of one rank's part (graph.h, edge
 * classes): launches, CUDA synchronisations, events recorded and waited
 * on, host polls and waits hidden in calls, the launch queue, hand-offs
 * between threads and step ends; then the waits the trace cannot explain.
 *
 * Each finder reads measured times only to tell a wait from work and to
 * pick among candidate dependencies, and cuts the waits it finds out of
 * the durations that hid them. Apart from the sequences (graph_rank.c)
 * because this is where the build decides what waited for what. */
#include "model/graph_build_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "model/runtime_api.h"
#include "model/steps.h"
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

/* ---- waits hidden in calls ----------------------------------------------------------- */

/* Call task c waited for task x to finish (ff) or to start (!ff): an edge
 * from x, and c keeps only the time after x as its duration. */
static int add_wait(struct builder *b, struct rank_build *r, uint32_t c, uint32_t x, int ff,
                    uint8_t kind)
{
    if (x == MODEL_NONE)
        return SC_OK;
    assert(c < b->n_tasks && x < b->n_tasks && b->tasks[c].kind == MODEL_TASK_CALL); /* a call waits */
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
    return gb_add_edge(b, x, c, lat, ff ? MODEL_FF : MODEL_SF, kind, 0);
}

/* Among the streams' last tasks launched before call c, the one whose end
 * the call most likely waited for: the latest end not after the call's. */
static uint32_t awaited_task(struct builder *b, struct rank_build *r, uint32_t c, int *close)
{
    uint32_t best = MODEL_NONE;
    for (size_t i = 0; i < r->n_streams; i++) {
        uint32_t x = gb_last_launched_before(&r->streams[i], b->ts[c]);
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
        uint32_t x = gb_last_ending_by(b, s->first, s->n, to + ORDER_TOL_NS);
        if (x == MODEL_NONE)
            continue;
        if (b->end[x] >= from && (best == MODEL_NONE || b->end[x] > b->end[best]))
            best = x;
    }
    return best;
}

/* An event's name's slot among n_names string ids: n_names for none. */
static size_t name_slot(const struct model_trace *t, uint32_t event, size_t n_names)
{
    uint32_t name = t->events[event].name;
    return name < n_names ? name : n_names;
}

/* The median duration of each name of the rank's calls: their durations
 * gathered by name (a counting pass over the trace's string ids, no id
 * last), then each name's middle one selected. */
int gb_api_medians(struct builder *b, struct rank_build *r, struct api_median *m)
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
        m->name[m->n] = q < n_names ? (uint32_t)q : MODEL_NONE;
        m->median[m->n++] = sc_select_i64(durs + from, at[q] - from, (at[q] - from) / 2);
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
int gb_calibrate_latencies(struct builder *b, struct rank_build *r)
{
    int64_t *v = NULL;
    size_t n = 0, cap = 0;
    r->launch_lat = DEFAULT_LAUNCH_NS;
    r->return_lat = DEFAULT_RETURN_NS;
    for (size_t i = 0; i < r->n_streams; i++) {
        const struct stream *s = &r->streams[i];
        for (uint32_t k = 0; k < s->n; k++) {
            uint32_t task = s->first + k, ct = gb_launch_task(r, b->tasks[task].event);
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
        r->launch_lat = max64(0, sc_select_i64(v, n, n / 10));
    }
    free(v);
    return SC_OK;
}

/* ---- edges of one rank ----------------------------------------------------------------- */

int gb_launch_edges(struct builder *b, struct rank_build *r)
{
    for (size_t i = 0; i < r->n_streams; i++) {
        const struct stream *s = &r->streams[i];
        for (uint32_t k = 0; k < s->n; k++) {
            uint32_t task = s->first + k, ct = gb_launch_task(r, b->tasks[task].event);
            if (ct == MODEL_NONE)
                continue;
            int rc = gb_add_edge(b, ct, task, r->launch_lat, MODEL_SS, MODEL_EDGE_LAUNCH, 0);
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
        if (gb_is_call(t->events[i].kind) && t->events[i].correlation >= 0 &&
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
int gb_cuda_sync_edges(struct builder *b, struct rank_build *r)
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
        const struct model_info *in = e->kind == MODEL_EV_CUDA_SYNC ? model_event_info(t, e) : NULL;
        if (!in || in->sync == MODEL_NONE)
            continue;
        uint32_t call = t->link[i] == MODEL_NONE ? MODEL_NONE : r->outer[t->link[i]];
        uint32_t ct = call == MODEL_NONE ? MODEL_NONE : r->task_of[call];
        if (ct == MODEL_NONE) /* its call is not in the window */
            continue;
        const struct model_sync *sy = &t->syncs[in->sync];
        const char *kind = model_str(t, e->name);
        uint32_t rec = MODEL_NONE, x = MODEL_NONE;
        if (sy->wait_on_record_corr >= 0 && sc_i64map_get(&by_corr, sy->wait_on_record_corr, &rec)) {
            struct stream *a = stream_by_tid(b, r, sy->wait_on_stream);
            if (a)
                x = gb_last_launched_before(a, t->events[rec].ts);
        }
        if (strcmp(kind, "Stream Wait Event") == 0) {
            uint32_t y = MODEL_NONE;
            struct stream *bs = stream_by_tid(b, r, in->stream);
            if (bs) {
                /* the first work on the waiting stream launched after the wait */
                uint32_t before = gb_last_launched_before(bs, b->ts[ct] + 1);
                y = before == MODEL_NONE ? bs->first : before + 1;
                if (y >= bs->first + bs->n)
                    y = MODEL_NONE;
            }
            b->wait_done[ct] = 1;
            if (x != MODEL_NONE && y != MODEL_NONE && b->end[x] <= b->ts[y] + ORDER_TOL_NS) {
                rc = gb_add_edge(b, x, y, 0, MODEL_FS, MODEL_EDGE_EVENT_SYNC, 0);
                b->stats.cuda_sync_event_syncs++;
            }
        } else if (strcmp(kind, "Event Sync") == 0) {
            rc = add_wait(b, r, ct, x, 1, MODEL_EDGE_HOST_SYNC);
        } else if (strcmp(kind, "Stream Sync") == 0) {
            int64_t sid = sy->wait_on_stream >= 0 ? sy->wait_on_stream : in->stream;
            struct stream *s = stream_by_tid(b, r, sid);
            if (s)
                rc = add_wait(b, r, ct, gb_last_launched_before(s, b->ts[ct]), 1, MODEL_EDGE_HOST_SYNC);
        } else if (strcmp(kind, "Context Sync") == 0) {
            for (size_t k = 0; k < r->n_streams && rc == SC_OK; k++)
                rc = add_wait(b, r, ct, gb_last_launched_before(&r->streams[k], b->ts[ct]), 1,
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
int gb_inferred_event_edges(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    int rc = SC_OK;

    for (uint32_t res = r->thread_lo; res < r->thread_hi && rc == SC_OK; res++) {
        for (uint32_t w = b->res[res].first; w < b->res[res].first + b->res[res].n && rc == SC_OK; w++) {
            if (b->tasks[w].kind != MODEL_TASK_CALL || b->wait_done[w] ||
                t->events[b->tasks[w].event].rt != MODEL_RT_STREAM_WAIT)
                continue;
            uint32_t y = gb_next_launched(b, w);
            if (y == MODEL_NONE)
                continue;
            struct stream *ys = gb_stream_of_task(r, b, y);
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
            uint32_t cur = rec == MODEL_NONE ? MODEL_NONE : gb_current_stream_task(b, rec);
            struct stream *as = cur == MODEL_NONE ? NULL : gb_stream_of_task(r, b, cur);
            if (as && as != ys) {
                x = gb_last_launched_before(as, cutoff);
                if (x != MODEL_NONE && b->end[x] > b->ts[y] + ORDER_TOL_NS)
                    x = MODEL_NONE;
            }
            if (x == MODEL_NONE) {
                /* evidence: y started right after the candidate ended, later than
                 * its launch and its stream allowed */
                int64_t own_ready = b->ts[y];
                uint32_t yc = gb_launch_task(r, b->tasks[y].event);
                if (yc != MODEL_NONE)
                    own_ready = b->ts[yc] + r->launch_lat;
                if (y > ys->first)
                    own_ready = max64(own_ready, b->end[y - 1]);
                for (size_t i = 0; i < r->n_streams; i++) {
                    if (&r->streams[i] == ys)
                        continue;
                    uint32_t c = gb_last_launched_before(&r->streams[i], cutoff);
                    if (c == MODEL_NONE || b->end[c] > b->ts[y] + ORDER_TOL_NS)
                        continue;
                    if (b->ts[y] - b->end[c] <= EVIDENCE_AFTER_NS && b->ts[y] - own_ready > EVIDENCE_DELAY_NS &&
                        (x == MODEL_NONE || b->end[c] > b->end[x]))
                        x = c;
                }
            }
            if (x == MODEL_NONE)
                continue;
            rc = gb_add_edge(b, x, y, 0, MODEL_FS, MODEL_EDGE_EVENT_SYNC, 1);
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

int gb_gpu_wait_edges(struct builder *b, struct rank_build *r)
{
    int rc = SC_OK;
    for (size_t i = 0; i < r->n_streams && rc == SC_OK; i++) {
        const struct stream *ys = &r->streams[i];
        int64_t device = r->t->tracks[b->res[ys->res].track].pid;
        for (uint32_t k = 0; k < ys->n && rc == SC_OK; k++) {
            uint32_t y = ys->first + k, yc = gb_launch_task(r, b->tasks[y].event);
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
            rc = gb_add_edge(b, best, y, b->ts[y] - b->end[best], MODEL_FS, MODEL_EDGE_GPU_WAIT, 1);
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
        uint32_t x = gb_last_launched_before(&r->streams[i], p);
        if (x == MODEL_NONE)
            continue;
        uint32_t call = gb_launch_task(r, b->tasks[x].event);
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
                              const int64_t *marks, size_t n_marks)
{
    uint32_t end = c;
    while (end + 1 < last && is_query(b, r, end + 1) && b->tasks[end + 1].gap <= MODEL_HOST_POLL_LOOP_GAP_NS) {
        size_t k = sc_first_after(marks, n_marks, b->end[end]);
        if (k < n_marks && marks[k] < b->ts[end + 1])
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
    return gb_add_edge(b, x, end, lat, MODEL_FF, MODEL_EDGE_HOST_POLL, 1);
}

/* Syncs, blocking copies, polling loops and other calls that waited. */
int gb_host_sync_edges(struct builder *b, struct rank_build *r)
{
    const struct model_trace *t = r->t;
    const struct api_median *med = &r->med;
    int rc = SC_OK;
    for (uint32_t res = r->thread_lo; res < r->thread_hi && rc == SC_OK; res++) {
        uint32_t first = b->res[res].first, last = first + b->res[res].n;
        int64_t *marks = NULL; /* the thread's, once a query needs them */
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
                    rc = add_wait(b, r, c, gb_last_launched_before(&r->streams[i], b->ts[c]), 1,
                                  MODEL_EDGE_HOST_SYNC);
                continue;
            case MODEL_RT_SYNC_STREAM:
            case MODEL_RT_SYNC_EVENT: {
                uint32_t x = awaited_task(b, r, c, &close);
                if (!close) { /* it did not wait: assume the current stream */
                    uint32_t cur = gb_current_stream_task(b, c);
                    struct stream *s = cur == MODEL_NONE ? NULL : gb_stream_of_task(r, b, cur);
                    if (s)
                        x = gb_last_launched_before(s, b->ts[c]);
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
                    if (model_copy_pageable_dtoh(name)) {
                        rc = add_wait(b, r, c, own_task, 1, MODEL_EDGE_HOST_SYNC);
                        continue;
                    }
                    if (model_copy_pageable_htod(name)) {
                        /* it returns once its data is staged. When it
                         * returned after most of its copy had run, it ran
                         * with the copy: it ends when the copy does, less
                         * the last chunk still in flight (a latency, maybe
                         * negative); else once the copy had started */
                        int64_t cs = b->ts[own_task], ce = b->end[own_task];
                        if (cs >= b->ts[c] && b->end[c] - cs >= (ce - cs) / 2 && b->end[c] <= ce + WAIT_END_TOL_NS) {
                            b->tasks[c].dur = max64(0, min64(b->tasks[c].dur, b->end[c] - ce));
                            b->wait_done[c] = 1;
                            rc = gb_add_edge(b, own_task, c, b->end[c] - ce, MODEL_FF, MODEL_EDGE_HOST_SYNC, 0);
                        } else {
                            rc = add_wait(b, r, c, own_task, 0, MODEL_EDGE_HOST_SYNC);
                        }
                        continue;
                    }
                }
                break;
            case MODEL_RT_QUERY:
                if (!have_marks)
                    have_marks = (rc = gb_thread_marks(b, r, b->res[res].track, SPANS_MARKS_CALLS, &marks, &n_marks)) == SC_OK;
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
        if (have_marks && rc == SC_OK && marks && !gb_thread_has(r, b->res[res].track, MODEL_EV_PYTHON)) {
            /* also the thread's SPANS_MARKS: kept for gb_host_poll_edges */
            uint32_t nthreads = r->thread_hi - r->thread_lo;
            if (!r->marks && (!(r->marks = calloc(nthreads, sizeof *r->marks)) ||
                              !(r->n_marks = calloc(nthreads, sizeof *r->n_marks)))) {
                free(marks);
                return OOM(b);
            }
            r->marks[res - r->thread_lo] = marks;
            r->n_marks[res - r->thread_lo] = n_marks;
            marks = NULL;
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
int gb_host_poll_edges(struct builder *b, struct rank_build *r)
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
        int64_t usual = sc_select_i64(gaps, n, n / 2);
        if (usual > MODEL_HOST_POLL_USUAL_MAX_NS)
            continue;
        int64_t long_gap = max64(MODEL_HOST_POLL_MIN_NS, MODEL_HOST_POLL_RATIO * usual);
        int64_t *marks = NULL;
        size_t n_marks = 0;
        int have_marks = 0;
        for (uint32_t c = first + 1; c < last && rc == SC_OK; c++) {
            if (b->tasks[c].kind != MODEL_TASK_CALL || b->tasks[c].gap < long_gap || waits_itself(b, r, c))
                continue;
            if (!have_marks) {
                /* a thread whose trace records no operator (runtime calls
                 * alone, as CUPTI's) is silent between its calls whatever
                 * it runs: its gaps are host work */
                if (!gb_thread_has(r, b->res[res].track, MODEL_EV_CPU_OP))
                    break;
                if (r->marks && r->marks[res - r->thread_lo]) { /* the host-sync pass's */
                    marks = r->marks[res - r->thread_lo];
                    n_marks = r->n_marks[res - r->thread_lo];
                    r->marks[res - r->thread_lo] = NULL;
                } else if ((rc = gb_thread_marks(b, r, b->res[res].track, SPANS_MARKS, &marks, &n_marks))) {
                    break;
                }
            }
            have_marks = 1;
            struct sc_span w = gb_longest_between(marks, n_marks, b->ts[c] - b->tasks[c].gap, b->ts[c]);
            if (w.b - w.a < long_gap)
                continue;
            uint32_t x = polled_task(b, r, res, w.a, w.b, MODEL_HOST_POLL_EARLY_NS, MODEL_HOST_POLL_LATE_NS);
            if (x == MODEL_NONE)
                continue;
            b->tasks[c].gap -= w.b - w.a;
            b->stats.host_waits_gap++;
            rc = gb_add_edge(b, x, c, b->ts[c] - b->end[x], MODEL_FS, MODEL_EDGE_HOST_POLL, 1);
        }
        free(marks);
    }
    free(gaps);
    gb_rank_drop_marks(r); /* what the host-sync pass kept and no thread here took */
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

int gb_launch_queue_edges(struct builder *b, struct rank_build *r, int64_t *depth_out)
{
    const struct model_trace *t = r->t;
    struct op_ref *ops = NULL;
    int64_t *starts = NULL;
    void *tmp = NULL;
    size_t n = 0, cap = 0;
    int rc = SC_OK;
    const struct api_median *med = &r->med;

    *depth_out = 0;
    for (size_t i = 0; i < r->n_streams; i++)
        for (uint32_t k = 0; k < r->streams[i].n; k++) {
            uint32_t task = r->streams[i].first + k, ct = gb_launch_task(r, b->tasks[task].event);
            if (ct == MODEL_NONE)
                continue;
            if (sc_vec_reserve((void **)&ops, &cap, n + 1, sizeof *ops))
                goto oom;
            ops[n++] = (struct op_ref){b->ts[ct], task, ct};
        }
    if (n < 64)
        goto out;
    /* each stream's launches come in order: merged as runs, through tmp */
    if (!(tmp = malloc(n * sizeof *ops)) || !(starts = malloc(n * sizeof *starts)))
        goto oom;
    sc_sort_runs(ops, tmp, n, sizeof *ops, by_lstart);
    for (size_t j = 0; j < n; j++)
        starts[j] = b->ts[ops[j].task];
    sc_sort_runs(starts, tmp, n, sizeof *starts, cmp_i64);
    /* pending when each launch returns: launched so far minus started */
    int64_t qmax = 0;
    size_t *pending = malloc(n * sizeof *pending);
    if (!pending)
        goto oom;
    for (size_t j = 0, started = 0; j < n; j++) {
        started = sc_first_after(starts, n, b->end[ops[j].call]);
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
        rc = gb_add_edge(b, x, c, lat, MODEL_SF, MODEL_EDGE_LAUNCH_QUEUE, 0);
    }
    free(pending);
out:
    free(ops);
    free(starts);
    free(tmp);
    return rc;
oom:
    rc = OOM(b);
    goto out;
}

/* ---- hand-offs between threads ------------------------------------------------------------ */

int gb_inter_thread_edges(struct builder *b, struct rank_build *r)
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
        rc = gb_thread_ops(b, r, b->res[r->thread_lo + i].track, &busy[i], &nbusy[i]);
    for (uint32_t i = 0; i < nthreads && rc == SC_OK; i++) {
        const struct model_resource *rb = &b->res[r->thread_lo + i];
        for (uint32_t k = rb->first; k < rb->first + rb->n && rc == SC_OK; k++) {
            int64_t p = k == rb->first ? r->origin : b->end[k - 1], q = b->ts[k];
            if (q - p < gap_min)
                continue;
            struct sc_span idle = gb_longest_idle(busy[i], nbusy[i], p, q);
            if (idle.b - idle.a < gap_min)
                continue;
            /* another thread that went idle just before this one resumed */
            uint32_t from = MODEL_NONE;
            for (uint32_t j = 0; j < nthreads; j++) {
                if (j == i)
                    continue;
                const struct model_resource *ra = &b->res[r->thread_lo + j];
                /* the last of its tasks ending by idle.b (tasks end in order) */
                uint32_t c = gb_last_ending_by(b, ra->first, ra->n, idle.b);
                if (c == MODEL_NONE)
                    continue;
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
            rc = gb_add_edge(b, from, k, q - b->end[from], MODEL_FS, MODEL_EDGE_INTER_THREAD, 1);
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
int gb_step_end_edges(struct builder *b, struct rank_build *r)
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
            if (gb_launch_task(r, ev) == MODEL_NONE || gb_launch_ts(r, ev) < last->start)
                continue;
            end = max64(end, b->end[task]);
            rc = gb_add_edge(b, task, gs->end, 0, MODEL_FS, MODEL_EDGE_STEP_END, 0);
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
int gb_unexplained_waits(struct builder *b)
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
                rc = gb_add_edge(b, from, task, b->ts[task] - b->end[from], MODEL_FS, MODEL_EDGE_UNEXPLAINED, 1);
        }
    }
out:
    free(ready);
    free(by);
    return rc;
}
