/* model/inspect.c: per-rank summary of a trace (inspect.h). */
#include "model/inspect.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/spans.h"
#include "common/vec.h"
#include "model/collective.h"
#include "model/runtime_api.h"
#include "model/trace.h"
#include "common/banned.h"

static const char *const lack_names[MODEL_LACK_COUNT] = {
    "flows", "cuda_sync", "collective_sizes", "sampled",
    "steps", "device_properties", "correlation", "time_anchor",
};

static const char *const lack_texts[MODEL_LACK_COUNT] = {
    "no launch flows: launches are joined by correlation id only",
    "no cuda_sync events: cross-stream waits are inferred from cudaEventRecord/cudaStreamWaitEvent",
    "collectives without message sizes: their cost cannot be re-timed for other sizes",
    "sampled: events were filtered out of this trace; a replay would miss work",
    "no steps: no ProfilerStep#N annotation (name a marker with --step-marker)",
    "no deviceProperties: the GPU type is unknown",
    "GPU work without correlation ids: launches cannot be joined to kernels",
    "relative timestamps without baseTimeNanoseconds: not placed in time",
};

const char *model_inspect_lack_name(unsigned i)
{
    return i < MODEL_LACK_COUNT ? lack_names[i] : "unknown";
}

const char *model_inspect_lack_text(unsigned i)
{
    return i < MODEL_LACK_COUNT ? lack_texts[i] : "unknown";
}

/* Whether event e counts toward its track's busy time, and as which of
 * the track's two kinds of work (a stream's GPU work, a thread's calls),
 * each unioned on its own: 0 not at all, 1 GPU work, 2 a thread's. */
static int busy_kind(const struct model_event *e)
{
    if (model_kind_is_gpu(e->kind))
        return 1;
    return e->kind <= MODEL_EV_DRIVER && e->kind != MODEL_EV_USER_ANNOTATION ? 2 : 0;
}

/* busy[track] += the length of the union of each track's spans of each
 * kind (busy_kind). The spans are grouped by track and kind with a
 * counting sort (stable, so each group keeps file order, which is usually
 * time order already: old traces list CPU ops, then runtime calls, a few
 * sorted runs the union sorts in a pass or two). */
static int union_busy(const struct model_trace *t, int64_t *busy)
{
    size_t groups = 2 * (size_t)t->n_tracks, n = 0;
    size_t *start = calloc(groups + 1, sizeof *start);
    if (!start)
        return -1;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        int k = busy_kind(e);
        if (k) {
            assert(e->track < t->n_tracks && e->dur >= 0);
            start[2 * (size_t)e->track + (size_t)k]++;
            n++;
        }
    }
    struct sc_span *g = malloc((n ? n : 1) * sizeof *g), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!g || !tmp) {
        free(start);
        free(g);
        free(tmp);
        return -1;
    }
    for (size_t k = 0; k < groups; k++)
        start[k + 1] += start[k];
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        int k = busy_kind(e);
        if (k)
            g[start[2 * (size_t)e->track + (size_t)k - 1]++] = (struct sc_span){e->ts, e->ts + e->dur};
    }
    for (size_t k = 0, lo_i = 0; k < groups; k++) {
        size_t hi_i = start[k]; /* after placement start[k] is the group's end */
        assert(lo_i <= hi_i && hi_i <= n);
        struct sc_span *u;
        size_t m = sc_span_union(g + lo_i, tmp, hi_i - lo_i, &u);
        lo_i = hi_i;
        for (size_t i = 0; i < m; i++) {
            assert(u[i].b >= u[i].a && (i == 0 || u[i].a > u[i - 1].b)); /* disjoint, in order */
            busy[k / 2] += u[i].b - u[i].a;
        }
    }
    free(start);
    free(g);
    free(tmp);
    return 0;
}

static struct model_inspect_coll *coll_slot(struct model_inspect *in, size_t *cap,
                                            const char *name)
{
    for (size_t i = 0; i < in->n_colls; i++)
        if (strcmp(in->colls[i].name, name) == 0)
            return &in->colls[i];
    if (sc_vec_reserve((void **)&in->colls, cap, in->n_colls + 1, sizeof *in->colls))
        return NULL;
    assert(in->n_colls < *cap);
    struct model_inspect_coll *c = &in->colls[in->n_colls++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->min_nelems = c->max_nelems = c->total_bytes = -1;
    c->dtype = MODEL_NONE;
    return c;
}

static void coll_add(const struct model_trace *t, struct model_inspect_coll *c,
                     const struct model_event *e, int is_kernel)
{
    const struct model_collective *m = model_event_coll(t, e);
    if (is_kernel) {
        c->kernels++;
        c->kernel_ns += e->dur;
    } else {
        c->cpu_ops++;
    }
    if (!m)
        return;
    int64_t nel = m->in_nelems > m->out_nelems ? m->in_nelems : m->out_nelems;
    if (m->dtype != MODEL_NONE && c->dtype == MODEL_NONE)
        c->dtype = m->dtype;
    if (nel < 0)
        return;
    c->sized++;
    if (c->min_nelems < 0 || nel < c->min_nelems)
        c->min_nelems = nel;
    if (nel > c->max_nelems)
        c->max_nelems = nel;
    int b = m->dtype != MODEL_NONE ? model_dtype_bytes(model_str(t, m->dtype)) : 0;
    if (is_kernel && b)
        c->total_bytes = (c->total_bytes < 0 ? 0 : c->total_bytes) + nel * b;
}

int model_inspect_trace(const struct model_trace *t, struct model_inspect **out,
                        struct sc_error *err)
{
    struct model_inspect *in = calloc(1, sizeof *in);
    int64_t *busy = calloc(t->n_tracks ? t->n_tracks : 1, sizeof *busy);
    uint32_t *stream_of = malloc((t->n_tracks ? t->n_tracks : 1) * sizeof *stream_of);
    uint32_t *thread_of = malloc((t->n_tracks ? t->n_tracks : 1) * sizeof *thread_of);
    size_t coll_cap = 0, stream_cap = 0, thread_cap = 0;
    uint64_t runtime_total = 0, runtime_launch = 0, no_corr = 0, comm_kernels = 0;
    int device = -1;

    *out = NULL;
    if (!in || !busy || !stream_of || !thread_of)
        goto oom;
    for (size_t i = 0; i < t->n_tracks; i++)
        stream_of[i] = thread_of[i] = MODEL_NONE;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const char *name = model_str(t, e->name);
        if (model_kind_is_gpu(e->kind)) {
            const struct model_info *info = model_event_info(t, e);
            if (stream_of[e->track] == MODEL_NONE) {
                if (sc_vec_reserve((void **)&in->streams, &stream_cap, in->n_streams + 1,
                                   sizeof *in->streams))
                    goto oom;
                struct model_inspect_stream *p = &in->streams[in->n_streams];
                memset(p, 0, sizeof *p);
                p->track = (uint32_t)e->track;
                p->device = t->tracks[e->track].pid;
                p->stream = info && info->stream >= 0 ? info->stream : t->tracks[e->track].tid;
                stream_of[e->track] = (uint32_t)in->n_streams++;
            }
            struct model_inspect_stream *s = &in->streams[stream_of[e->track]];
            if (device < 0)
                device = info && info->device >= 0 ? info->device : (int)t->tracks[e->track].pid;
            if (e->kind == MODEL_EV_KERNEL) {
                s->kernels++;
                in->kernels++;
                if (model_is_comm_kernel(name)) {
                    s->comm_kernels++;
                    comm_kernels++;
                    enum model_coll_op op = model_coll_op_parse(name);
                    struct model_inspect_coll *c = coll_slot(in, &coll_cap, op ? model_coll_op_name(op) : "unknown");
                    if (!c)
                        goto oom;
                    coll_add(t, c, e, 1);
                }
            } else if (e->kind == MODEL_EV_MEMCPY) {
                s->memcpys++;
                in->memcpys++;
            } else {
                s->memsets++;
                in->memsets++;
            }
            if (e->correlation < 0)
                no_corr++;
            else if (t->link[i] == MODEL_NONE)
                in->gpu_without_launch++;
        } else if (e->kind <= MODEL_EV_DRIVER) {
            if (thread_of[e->track] == MODEL_NONE) {
                if (sc_vec_reserve((void **)&in->threads, &thread_cap, in->n_threads + 1,
                                   sizeof *in->threads))
                    goto oom;
                struct model_inspect_thread *p = &in->threads[in->n_threads];
                memset(p, 0, sizeof *p);
                p->track = e->track;
                thread_of[e->track] = (uint32_t)in->n_threads++;
            }
            struct model_inspect_thread *th = &in->threads[thread_of[e->track]];
            th->events++;
            if (e->kind == MODEL_EV_CPU_OP)
                th->cpu_ops++;
            if (e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER) {
                th->runtime_calls++;
                in->runtime_calls++;
                runtime_total++;
                if (e->rt == MODEL_RT_LAUNCH || e->rt == MODEL_RT_LAUNCH_SYNC) {
                    runtime_launch++;
                    if (e->correlation >= 0 && t->link[i] == MODEL_NONE)
                        in->launch_without_gpu++;
                }
            }
            const struct model_collective *m = e->kind == MODEL_EV_CPU_OP ? model_event_coll(t, e) : NULL;
            if (m) {
                char raw[32];
                enum model_coll_op op = m->name != MODEL_NONE ? model_coll_op_parse(model_str(t, m->name)) : MODEL_COLL_UNKNOWN;
                snprintf(raw, sizeof raw, "%s",
                         op ? model_coll_op_name(op) : m->name != MODEL_NONE ? model_str(t, m->name) : "unknown");
                struct model_inspect_coll *c = coll_slot(in, &coll_cap, raw);
                if (!c)
                    goto oom;
                coll_add(t, c, e, 0);
            }
        }
    }
    if (union_busy(t, busy))
        goto oom;
    for (size_t i = 0; i < in->n_streams; i++)
        in->streams[i].busy_ns = busy[in->streams[i].track];
    for (size_t i = 0; i < in->n_threads; i++)
        in->threads[i].busy_ns = busy[in->threads[i].track];

    for (size_t i = 0; i < t->n_devices; i++)
        if (t->devices[i].id == device || (device < 0 && i == 0))
            in->gpu_name = t->devices[i].name;
    if (!t->n_devices)
        in->gpu_name = MODEL_NONE;

    uint64_t syncs = 0;
    for (size_t i = 0; i < t->n_cats; i++)
        if (t->cats[i].kind == MODEL_EV_CUDA_SYNC)
            syncs += t->cats[i].count;
    int sized = 0;
    for (size_t i = 0; i < in->n_colls; i++)
        sized |= in->colls[i].sized > 0;
    if (!t->n_launch_flows && in->kernels)
        in->lacks |= MODEL_LACK_FLOWS;
    if (!syncs && in->kernels)
        in->lacks |= MODEL_LACK_CUDA_SYNC;
    if (comm_kernels && !sized)
        in->lacks |= MODEL_LACK_COLL_SIZES;
    /* a full CUDA trace always holds runtime calls besides launches
     * (stream queries, event records, allocations); a filtered one may not */
    if (runtime_total >= 100 && runtime_launch == runtime_total)
        in->lacks |= MODEL_LACK_SAMPLED;
    if (!t->n_steps)
        in->lacks |= MODEL_LACK_STEPS;
    if (!t->has_device_properties)
        in->lacks |= MODEL_LACK_DEVICE_PROPERTIES;
    if (no_corr)
        in->lacks |= MODEL_LACK_CORRELATION;
    if (t->time_unanchored)
        in->lacks |= MODEL_LACK_TIME_ANCHOR;

    free(busy);
    free(stream_of);
    free(thread_of);
    *out = in;
    return SC_OK;
oom:
    free(busy);
    free(stream_of);
    free(thread_of);
    model_inspect_free(in);
    return sc_error_set(err, SC_ENOMEM, "out of memory");
}

void model_inspect_free(struct model_inspect *in)
{
    if (!in)
        return;
    free(in->streams);
    free(in->threads);
    free(in->colls);
    free(in);
}
