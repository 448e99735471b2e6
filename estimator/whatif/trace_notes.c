/* estimator/whatif/trace_notes.c: what a what-if reads of a rank's trace,
 * taken once while the trace is whole (trace_notes.h). */
#include "estimator/whatif/trace_notes.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/gemm_samples.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/runtime_api.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

static int oom(struct sc_error *err)
{
    return sc_error_set(err, SC_ENOMEM, "out of memory");
}

static int has_prefix(const char *s, const char *p)
{
    return s && strncmp(s, p, strlen(p)) == 0;
}

/* ---- the spans around a call ---- */

#define AUTOGRAD_FUNCTION "autograd::engine::evaluate_function: "

/* The layer number of "nn.Module: <Class>_<N>" with Class ending in Layer
 * or Block, or -1. */
static int32_t module_layer(const char *name)
{
    static const char prefix[] = "nn.Module: ";
    if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0)
        return -1;
    const char *cls = name + sizeof prefix - 1, *us = strrchr(cls, '_');
    if (!us || us == cls || !us[1])
        return -1;
    size_t len = (size_t)(us - cls);
    int layer_cls = (len >= 5 && strncmp(us - 5, "Layer", 5) == 0) || (len >= 5 && strncmp(us - 5, "Block", 5) == 0);
    if (!layer_cls)
        return -1;
    char *end;
    long v = strtol(us + 1, &end, 10);
    return *end || v < 0 || v > (1 << 20) ? -1 : (int32_t)v;
}

/* FSDP2's hooks around a unit whose module path ends in a layer number
 * ("FSDP::pre_forward (blocks.3)", "FSDP::post_backward_reduce
 * (model.layers.3)"): the hook's kind (enum unit_hook) | the layer << 2,
 * or -1. The unit's forward runs from its pre_forward to its post_forward
 * hook, its backward from its pre_backward hook to its post_backward ones,
 * each on one thread (unit_spans). */
enum unit_hook { UNIT_PRE_FORWARD, UNIT_POST_FORWARD, UNIT_PRE_BACKWARD, UNIT_POST_BACKWARD };
#define UNIT_MAX_LAYERS (1 << 16)

static int32_t unit_label(const char *name)
{
    static const char *const prefixes[] = {"FSDP::pre_forward (", "FSDP::post_forward (", "FSDP::pre_backward (",
                                           "FSDP::post_backward_"};
    int kind = -1;
    for (int k = 0; k < 4 && kind < 0; k++)
        if (has_prefix(name, prefixes[k]))
            kind = k;
    const char *paren = kind < 0 ? NULL : strchr(name, '('), *close = paren ? strchr(paren, ')') : NULL;
    if (!close || close[1] || close - paren < 3)
        return -1;
    const char *digits = close;
    while (digits > paren + 1 && digits[-1] >= '0' && digits[-1] <= '9')
        digits--;
    if (digits == close || close - digits > 5 || digits[-1] != '.')
        return -1;
    long layer = strtol(digits, NULL, 10);
    return layer < UNIT_MAX_LAYERS ? (int32_t)(layer << 2 | kind) : -1;
}

static int32_t autograd_label(const char *name)
{
    return has_prefix(name, AUTOGRAD_FUNCTION) ? 1 : -1;
}

/* The hooks that launch data-parallel collectives, by the names PyTorch's
 * autograd engine, DDP and FSDP (FSDP2's "FSDP::", FSDP1's
 * "FullyShardedDataParallel.") record them with, and the optimizer's step
 * (torch.optim's "Optimizer.step#AdamW.step"). */
static int32_t hook_label(const char *name)
{
    static const char *const fsdp_params[] = {"FSDP::all_gather",
                                              "FSDP::pre_forward",
                                              "FSDP::pre_backward",
                                              "FSDP::unshard",
                                              "FullyShardedDataParallel._pre_forward",
                                              "FullyShardedDataParallel._pre_backward_hook",
                                              "FullyShardedDataParallel._pre_backward_prefetch",
                                              "FullyShardedDataParallel._post_backward_prefetch",
                                              "FullyShardedDataParallel._unshard"};
    if (!name)
        return -1;
    if (has_prefix(name, AUTOGRAD_FUNCTION))
        return strstr(name, "AccumulateGrad") ? TRACE_HOOK_GRADS : -1;
    if (has_prefix(name, "FSDP::post_backward") || has_prefix(name, "FullyShardedDataParallel._post_backward_hook"))
        return TRACE_HOOK_FSDP_GRADS;
    for (size_t k = 0; k < sizeof fsdp_params / sizeof *fsdp_params; k++)
        if (has_prefix(name, fsdp_params[k]))
            return TRACE_HOOK_FSDP_PARAMS;
    if (has_prefix(name, "Optimizer.step#"))
        return TRACE_HOOK_OPTIMIZER;
    return strcmp(name, "DistributedDataParallel.forward") == 0 ? TRACE_HOOK_DDP_BUFFERS : -1;
}

/* Spans of one kind of CPU event (module calls, the autograd engine's
 * functions, gradient hooks), labelled, sorted by track and start; reach
 * is the latest end of the track's spans up to this one, so that the
 * search for the spans around a time stops where none reaches it. */
struct span {
    uint32_t track;
    int64_t start, end, reach;
    int32_t label;
};

struct spans {
    struct span *v;
    size_t n;
};

typedef int32_t (*span_label_fn)(const char *name); /* -1: not such a span */

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* Sort s by track and start (its spans come in a few runs in time order,
 * which the sort keeps) and set their reach. */
static int spans_sort(struct spans *s, struct sc_error *err)
{
    if (sc_sort_runs_alloc(s->v, s->n, sizeof *s->v, span_cmp)) {
        free(s->v);
        s->v = NULL;
        s->n = 0;
        return oom(err);
    }
    for (size_t k = 0; k < s->n; k++) {
        int64_t prev = k && s->v[k - 1].track == s->v[k].track ? s->v[k - 1].reach : INT64_MIN;
        s->v[k].reach = s->v[k].end > prev ? s->v[k].end : prev;
    }
    return SC_OK;
}

/* The spans of t that label names, sorted by track and start. A name's
 * label is found once (names are interned: a trace has few distinct
 * ones). */
static int spans_collect(const struct model_trace *t, span_label_fn label, struct spans *out, struct sc_error *err)
{
    enum { UNSEEN = INT32_MIN };
    size_t cap = 0, n_names = t->strings.n;
    int32_t *memo = malloc((n_names ? n_names : 1) * sizeof *memo);
    out->v = NULL;
    out->n = 0;
    if (!memo)
        return oom(err);
    for (size_t i = 0; i < n_names; i++)
        memo[i] = UNSEEN;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (e->kind != MODEL_EV_PYTHON && e->kind != MODEL_EV_USER_ANNOTATION && e->kind != MODEL_EV_CPU_OP)
            continue;
        int32_t l = e->name < n_names ? memo[e->name] : -1;
        if (l == UNSEEN)
            l = memo[e->name] = label(model_str(t, e->name));
        if (l < 0)
            continue;
        if (sc_vec_reserve((void **)&out->v, &cap, out->n + 1, sizeof *out->v)) {
            free(memo);
            free(out->v);
            out->v = NULL;
            return oom(err);
        }
        out->v[out->n++] = (struct span){e->track, e->ts, e->ts + e->dur, 0, l};
    }
    free(memo);
    return spans_sort(out, err);
}

/* The layer spans of FSDP2's units into `layers` (kept sorted): from the
 * unit hooks `hooks` (unit_label's, sorted), on each thread a unit's
 * forward from the start of its pre_forward hook to the end of its
 * post_forward hook, its backward from the start of its pre_backward hook
 * to the end of the post_backward hooks that follow it, each labelled
 * with the unit's layer: the hooks' own work (gathering the unit's
 * parameters, reducing its gradients) is the unit's, once a layer.
 * *backward is set when a backward span was found (the units then place
 * the backward's work too). */
static int unit_spans(const struct spans *hooks, struct spans *layers, uint8_t *backward, struct sc_error *err)
{
    int32_t most = 0;
    for (size_t k = 0; k < hooks->n; k++)
        if ((hooks->v[k].label >> 2) + 1 > most)
            most = (hooks->v[k].label >> 2) + 1;
    if (!most)
        return SC_OK;
    /* per layer and pass (forward, backward): the open pre hook's start,
     * and the span its post hook closed (that later post hooks extend) */
    int64_t *since = malloc(2 * (size_t)most * sizeof *since);
    size_t *closed = malloc(2 * (size_t)most * sizeof *closed), cap = layers->n;
    if (!since || !closed) {
        free(since);
        free(closed);
        return oom(err);
    }
    for (size_t k = 0; k < hooks->n; k++) {
        const struct span *h = &hooks->v[k];
        if (!k || h->track != hooks->v[k - 1].track)
            for (int32_t l = 0; l < 2 * most; l++) {
                since[l] = -1;
                closed[l] = SIZE_MAX;
            }
        int32_t layer = h->label >> 2, kind = h->label & 3, at = 2 * layer + (kind >= UNIT_PRE_BACKWARD);
        if (kind == UNIT_PRE_FORWARD || kind == UNIT_PRE_BACKWARD) {
            since[at] = h->start;
            closed[at] = SIZE_MAX;
            continue;
        }
        if (since[at] < 0) { /* a later post hook of the same pass */
            if (closed[at] != SIZE_MAX && h->end > layers->v[closed[at]].end)
                layers->v[closed[at]].end = h->end;
            continue;
        }
        if (sc_vec_reserve((void **)&layers->v, &cap, layers->n + 1, sizeof *layers->v)) {
            free(since);
            free(closed);
            return oom(err);
        }
        closed[at] = layers->n;
        layers->v[layers->n++] = (struct span){h->track, since[at], h->end > since[at] ? h->end : since[at], 0, layer};
        *backward |= kind == UNIT_POST_BACKWARD;
        since[at] = -1;
    }
    free(since);
    free(closed);
    return spans_sort(layers, err);
}

/* The label of the innermost span around time ts on a track (the latest
 * start at or before it that has not ended), or -1. */
static int32_t spans_around(const struct spans *s, uint32_t track, int64_t ts)
{
    size_t lo = 0, hi = s->n; /* first span after (track, ts) */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].track < track || (s->v[mid].track == track && s->v[mid].start <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k-- > 0 && s->v[k].track == track && s->v[k].reach >= ts;)
        if (s->v[k].end >= ts)
            return s->v[k].label;
    return -1;
}

static int is_call(const struct model_event *e)
{
    return e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER;
}

/* out->calls: every runtime and driver call, with the spans around it. */
static int calls_of(const struct model_trace *t, struct trace_notes *out, struct sc_error *err)
{
    struct spans modules = {0}, autograd = {0}, hooks = {0}, units = {0};
    int rc = spans_collect(t, module_layer, &modules, err);
    if (!rc)
        rc = spans_collect(t, unit_label, &units, err);
    if (!rc)
        rc = unit_spans(&units, &modules, &out->unit_layers, err);
    free(units.v);
    if (!rc)
        rc = spans_collect(t, autograd_label, &autograd, err);
    if (!rc)
        rc = spans_collect(t, hook_label, &hooks, err);
    for (size_t k = 0; !rc && k < modules.n; k++)
        if (modules.v[k].label + 1 > out->module_layers)
            out->module_layers = modules.v[k].label + 1;
    out->has_autograd = autograd.n > 0;
    out->has_hooks = hooks.n > 0;
    size_t n = 0;
    for (size_t i = 0; !rc && i < t->n_events; i++)
        n += is_call(&t->events[i]);
    if (!rc && n && !(out->calls = malloc(n * sizeof *out->calls)))
        rc = oom(err);
    for (size_t i = 0; !rc && i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (!is_call(e))
            continue;
        out->calls[out->n_calls++] = (struct trace_call_note){
            .event = (uint32_t)i,
            .track = e->track,
            .at = e->ts - t->first_ts,
            .layer = modules.n ? spans_around(&modules, e->track, e->ts) : -1,
            .backward = (int8_t)(autograd.n && spans_around(&autograd, e->track, e->ts) >= 0),
            .hook = (int8_t)(hooks.n ? spans_around(&hooks, e->track, e->ts) : -1),
        };
    }
    free(modules.v);
    free(autograd.v);
    free(hooks.v);
    return rc;
}

/* ---- the profiler's operators ---- */

static int int64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Whether event e of t is a runtime call that blocks its thread on the
 * GPU: a synchronising call, or an async copy to pageable host memory
 * (it returns once the copy has run, as the graph has it: an item(), a
 * .cpu() of a loss). */
static int blocking_call(const struct model_trace *t, size_t e)
{
    const struct model_event *c = &t->events[e];
    if (!is_call(c))
        return 0;
    if (c->rt == MODEL_RT_LAUNCH) {
        uint32_t l = t->link ? t->link[e] : MODEL_NONE;
        return l != MODEL_NONE && t->events[l].kind == MODEL_EV_MEMCPY &&
               model_copy_pageable_dtoh(model_str(t, t->events[l].name));
    }
    return c->rt == MODEL_RT_LAUNCH_SYNC || c->rt == MODEL_RT_SYNC_STREAM || c->rt == MODEL_RT_SYNC_DEVICE ||
           c->rt == MODEL_RT_SYNC_EVENT || c->rt == MODEL_RT_QUERY;
}

/* The time trace t's host threads spend working inside recorded operators:
 * the union of their spans v[0..k) (sorted by track and start; merged here
 * in place) on each thread, less the calls in them that wait for the GPU
 * (a .item(), a blocking copy), ns. */
static double ops_busy_ns(const struct model_trace *t, struct span *v, size_t k)
{
    double busy = 0;
    size_t m = 0;
    for (size_t i = 0; i < k; i++) { /* merged in place, per thread */
        if (m && v[m - 1].track == v[i].track && v[i].start <= v[m - 1].end) {
            if (v[i].end > v[m - 1].end)
                v[m - 1].end = v[i].end;
        } else {
            v[m++] = v[i];
        }
    }
    for (size_t i = 0; i < m; i++)
        busy += (double)(v[i].end - v[i].start);
    for (size_t e = 0; e < t->n_events; e++) {
        const struct model_event *c = &t->events[e];
        if (!blocking_call(t, e))
            continue;
        size_t lo = 0, hi = m; /* the first merged span after the call's start */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (v[mid].track < c->track || (v[mid].track == c->track && v[mid].start <= c->ts))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo && v[lo - 1].track == c->track && c->ts < v[lo - 1].end)
            busy -= (double)((c->ts + c->dur < v[lo - 1].end ? c->ts + c->dur : v[lo - 1].end) - c->ts);
    }
    return busy;
}

/* out->op_keys and out->ops_busy_ns, from the operators' spans sorted once.
 * Keys are (track, time since the trace's first event) packed in 64 bits:
 * 16 bits of track, 48 of nanoseconds (78 hours); taken in the spans'
 * order, they are in order already but past 78 hours (the sort then
 * makes them so). */
static int ops_of(const struct model_trace *t, struct trace_notes *out, struct sc_error *err)
{
    size_t n = 0, ops = 0, k = 0;
    for (size_t e = 0; e < t->n_events; e++)
        if (t->events[e].kind == MODEL_EV_CPU_OP) {
            ops++;
            n += t->events[e].track <= 0xffff;
        }
    if (!n)
        return SC_OK;
    struct span *v = malloc(ops * sizeof *v);
    if (!v || !(out->op_keys = malloc(n * sizeof *out->op_keys))) {
        free(v);
        return oom(err);
    }
    for (size_t e = 0; e < t->n_events; e++)
        if (t->events[e].kind == MODEL_EV_CPU_OP)
            v[k++] = (struct span){t->events[e].track, t->events[e].ts, t->events[e].ts + t->events[e].dur, 0, 0};
    int rc = sc_sort_runs_alloc(v, k, sizeof *v, span_cmp) ? oom(err) : SC_OK;
    for (size_t i = 0; !rc && i < k; i++)
        if (v[i].track <= 0xffff)
            out->op_keys[out->n_op_keys++] =
                (int64_t)v[i].track << 48 | ((v[i].start - t->first_ts) & ((1LL << 48) - 1));
    if (!rc && sc_sort_runs_alloc(out->op_keys, n, sizeof *out->op_keys, int64_cmp)) /* one pass: in order */
        rc = oom(err);
    if (!rc)
        out->ops_busy_ns = ops_busy_ns(t, v, k);
    free(v);
    return rc;
}

static size_t lower_bound(const int64_t *v, size_t n, int64_t k)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t trace_notes_ops_between(const struct trace_notes *n, uint32_t track, int64_t from, int64_t at)
{
    if (from < 0 || at < from || at >= 1LL << 48 || track > 0xffff)
        return 0;
    int64_t t = (int64_t)track << 48;
    return lower_bound(n->op_keys, n->n_op_keys, t | at) - lower_bound(n->op_keys, n->n_op_keys, t | from);
}

/* ---- kernels: collectives, GEMMs, what compiled them ---- */

static int colls_of(const struct model_trace *t, struct trace_notes *out, struct sc_error *err)
{
    size_t cap = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_collective *c = model_event_coll(t, &t->events[i]);
        if (!c)
            continue;
        if (sc_vec_reserve((void **)&out->colls, &cap, out->n_colls + 1, sizeof *out->colls))
            return oom(err);
        out->colls[out->n_colls++] = (struct trace_coll_note){
            (uint32_t)i, c->group_size, model_dtype_bytes(c->dtype == MODEL_NONE ? NULL : model_str(t, c->dtype)),
            c->in_nelems, c->out_nelems};
    }
    return SC_OK;
}

int64_t trace_coll_note_bytes(const struct trace_coll_note *c, int op)
{
    return model_coll_bytes_of(c->dtype_bytes, c->in_nelems, c->out_nelems, (enum model_coll_op)op);
}

static int gemms_of(const struct model_trace *t, struct trace_notes *out, struct sc_error *err)
{
    struct gemm_samples samples = {0};
    uint32_t *sample_of = malloc((t->n_events ? t->n_events : 1) * sizeof *sample_of);
    size_t cap = 0;
    if (!sample_of)
        return oom(err);
    int rc = calib_gemm_samples_of_kernels(t, &samples, NULL, sample_of, err);
    for (size_t i = 0; !rc && i < t->n_events; i++) {
        if (sample_of[i] == MODEL_NONE)
            continue;
        const struct gemm_sample *s = &samples.v[sample_of[i]];
        if (sc_vec_reserve((void **)&out->gemms, &cap, out->n_gemms + 1, sizeof *out->gemms))
            rc = oom(err);
        else
            out->gemms[out->n_gemms++] =
                (struct trace_gemm_note){(uint32_t)i, (struct gemm_shape){s->m, s->n, s->k, s->batch, s->dtype}};
    }
    calib_gemm_samples_release(&samples);
    free(sample_of);
    return rc;
}

/* Kernels Inductor generated and compiled regions. */
static void compiled_of(const struct model_trace *t, struct trace_notes *out)
{
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const char *name = model_str(t, e->name);
        if (e->kind == MODEL_EV_KERNEL)
            out->inductor_kernels += has_prefix(name, "triton_");
        else if (e->kind == MODEL_EV_CPU_OP || e->kind == MODEL_EV_USER_ANNOTATION || e->kind == MODEL_EV_PYTHON)
            out->compiled_regions += name && (strcmp(name, "CompiledFunction") == 0 ||
                                              has_prefix(name, "Torch-Compiled Region") ||
                                              strcmp(name, AUTOGRAD_FUNCTION "CompiledFunctionBackward") == 0);
    }
}

/* ---- notes ---- */

int trace_notes_of_trace(const struct model_trace *t, struct trace_notes *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = calls_of(t, out, err);
    if (!rc)
        rc = ops_of(t, out, err);
    if (!rc)
        rc = colls_of(t, out, err);
    if (!rc)
        rc = gemms_of(t, out, err);
    if (!rc)
        compiled_of(t, out);
    if (rc)
        trace_notes_release(out);
    return rc;
}

void trace_notes_release(struct trace_notes *n)
{
    if (!n)
        return;
    free(n->calls);
    free(n->colls);
    free(n->gemms);
    free(n->op_keys);
    memset(n, 0, sizeof *n);
}

size_t trace_notes_bytes(const struct trace_notes *n)
{
    return sizeof *n + n->n_calls * sizeof *n->calls + n->n_colls * sizeof *n->colls +
           n->n_gemms * sizeof *n->gemms + n->n_op_keys * sizeof *n->op_keys;
}

int trace_notes_of_graph(const struct model_graph *g, struct trace_notes_set *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    if (!g->job)
        return sc_error_set(err, SC_EINVAL, "the graph was not built from a trace");
    if (!(out->rank = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *out->rank)))
        return oom(err);
    out->n_ranks = g->n_ranks;
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        const struct model_trace *t = model_graph_trace(g, r);
        int rc = SC_OK;
        if (t && t->shed)
            rc = sc_error_set(err, SC_EINVAL, "rank %d: its trace was shed: its events are gone", g->ranks[r].id);
        else if (t)
            rc = trace_notes_of_trace(t, &out->rank[r], err);
        if (rc) {
            trace_notes_set_release(out);
            return rc;
        }
    }
    return SC_OK;
}

void trace_notes_set_release(struct trace_notes_set *s)
{
    for (size_t r = 0; s && r < s->n_ranks; r++)
        trace_notes_release(&s->rank[r]);
    if (s) {
        free(s->rank);
        memset(s, 0, sizeof *s);
    }
}

size_t trace_notes_set_bytes(const struct trace_notes_set *s)
{
    size_t bytes = 0;
    for (size_t r = 0; r < s->n_ranks; r++)
        bytes += trace_notes_bytes(&s->rank[r]);
    return bytes;
}

/* The element of v (n of size bytes, sorted by a leading uint32_t event)
 * for event, or NULL. */
static const void *by_event(const void *v, size_t n, size_t size, uint32_t event)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t at;
        memcpy(&at, (const char *)v + mid * size, sizeof at);
        if (at < event)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n)
        return NULL;
    uint32_t at;
    memcpy(&at, (const char *)v + lo * size, sizeof at);
    return at == event ? (const char *)v + lo * size : NULL;
}

const struct trace_call_note *trace_notes_call(const struct trace_notes *n, uint32_t event)
{
    return by_event(n->calls, n->n_calls, sizeof *n->calls, event);
}

const struct trace_coll_note *trace_notes_coll(const struct trace_notes *n, uint32_t event)
{
    return by_event(n->colls, n->n_colls, sizeof *n->colls, event);
}

const struct trace_gemm_note *trace_notes_gemm(const struct trace_notes *n, uint32_t event)
{
    return by_event(n->gemms, n->n_gemms, sizeof *n->gemms, event);
}
