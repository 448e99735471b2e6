/* estimator/whatif/structure.c: layers and collective roles of a traced job's
 * graph, checked against its description (structure.h). */
#include "estimator/whatif/structure.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/costs/hardware.h"
#include "estimator/whatif/job_check.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/runtime_api.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

/* The longest block (kernels) the repeat search tries: a layer of more
 * kernels than this is not found by its repeats. */
#define STRUCT_MAX_BLOCK 2048

static const char *const role_names[STRUCT_ROLE_COUNT] = {"none", "dp", "tp", "pp", "cp", "other"};

const char *whatif_struct_role_name(enum struct_role r)
{
    return (unsigned)r < STRUCT_ROLE_COUNT ? role_names[r] : "none";
}

const char *whatif_struct_layer_source_name(enum struct_layer_source s)
{
    return s == STRUCT_LAYERS_MODULES ? "module annotations" : s == STRUCT_LAYERS_REPEAT ? "repeating kernel sequence"
                                                                                        : "none";
}

void whatif_job_structure_release(struct job_structure *s)
{
    if (!s)
        return;
    free(s->layer);
    free(s->role);
    free(s->coll_bytes);
    free(s->coll_size);
    free(s->phase);
    free(s->dp_use);
    free(s->host_ops);
    s->host_ops = NULL;
    s->phase = NULL;
    s->dp_use = NULL;
    s->layer = NULL;
    s->role = NULL;
    s->coll_bytes = NULL;
    s->coll_size = NULL;
}

int whatif_job_structure_copy(const struct job_structure *src, size_t n_tasks, struct job_structure *out,
                       struct sc_error *err)
{
    size_t n = n_tasks ? n_tasks : 1;
    *out = *src;
    out->layer = malloc(n * sizeof *out->layer);
    out->role = malloc(n);
    out->coll_bytes = malloc(n * sizeof *out->coll_bytes);
    out->coll_size = malloc(n * sizeof *out->coll_size);
    out->phase = malloc(n);
    out->dp_use = malloc(n);
    out->host_ops = malloc(n * sizeof *out->host_ops);
    if (!out->layer || !out->role || !out->coll_bytes || !out->coll_size || !out->phase || !out->dp_use ||
        !out->host_ops) {
        whatif_job_structure_release(out);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    if (src->host_ops)
        memcpy(out->host_ops, src->host_ops, n_tasks * sizeof *out->host_ops);
    else
        memset(out->host_ops, 0, n * sizeof *out->host_ops);
    memcpy(out->layer, src->layer, n_tasks * sizeof *out->layer);
    memcpy(out->role, src->role, n_tasks);
    memcpy(out->coll_bytes, src->coll_bytes, n_tasks * sizeof *out->coll_bytes);
    memcpy(out->coll_size, src->coll_size, n_tasks * sizeof *out->coll_size);
    memcpy(out->phase, src->phase, n_tasks);
    memcpy(out->dp_use, src->dp_use, n_tasks);
    return SC_OK;
}

const struct model_trace *whatif_job_structure_trace(const struct model_graph *g, uint16_t r)
{
    return model_graph_trace(g, r);
}

int whatif_job_structure_gpu(const struct model_graph *g, const struct hw_profile **out, char *name, size_t n,
                      struct sc_error *err)
{
    *out = NULL;
    if (n)
        name[0] = '\0';
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        const struct model_trace *t = whatif_job_structure_trace(g, r);
        if (!t || !t->n_devices)
            continue;
        const char *dev = model_str(t, t->devices[0].name);
        if (n)
            snprintf(name, n, "%s", dev ? dev : "");
        *out = cost_hw_profile_for_device(dev);
        if (!*out)
            return sc_error_set(err, SC_EINVAL,
                                "the trace's GPU '%s' has no hardware profile: the kernel and collective models "
                                "cannot time it (see stepcast hardware)",
                                dev ? dev : "");
        return SC_OK;
    }
    return sc_error_set(err, SC_EINVAL, "the trace names no GPU (no deviceProperties): the traced GPU is unknown");
}

/* ---- CPU spans around a call ---- */

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

static int spans_collect(const struct model_trace *t, span_label_fn label, struct spans *out, struct sc_error *err)
{
    size_t cap = 0;
    out->v = NULL;
    out->n = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (e->kind != MODEL_EV_PYTHON && e->kind != MODEL_EV_USER_ANNOTATION && e->kind != MODEL_EV_CPU_OP)
            continue;
        int32_t l = label(model_str(t, e->name));
        if (l < 0)
            continue;
        if (sc_vec_reserve((void **)&out->v, &cap, out->n + 1, sizeof *out->v)) {
            free(out->v);
            out->v = NULL;
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        out->v[out->n++] = (struct span){e->track, e->ts, e->ts + e->dur, 0, l};
    }
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, span_cmp);
    for (size_t k = 0; k < out->n; k++) {
        int64_t prev = k && out->v[k - 1].track == out->v[k].track ? out->v[k - 1].reach : INT64_MIN;
        out->v[k].reach = out->v[k].end > prev ? out->v[k].end : prev;
    }
    return SC_OK;
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
    assert(lo == s->n || s->v[lo].track > track || s->v[lo].start > ts);
    for (size_t k = lo; k-- > 0 && s->v[k].track == track && s->v[k].reach >= ts;)
        if (s->v[k].end >= ts)
            return s->v[k].label;
    return -1;
}

/* The trace event of the call behind task i: a CPU task's own, a GPU
 * task's launching call's; MODEL_NONE when there is none. */
static uint32_t call_event(const struct model_graph *g, uint32_t i)
{
    if (model_task_on_gpu(g->tasks[i].cls)) {
        uint32_t from = MODEL_NONE;
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1] && from == MODEL_NONE; e++)
            if (g->edges[e].kind == MODEL_EDGE_LAUNCH)
                from = g->edges[e].from;
        if (from == MODEL_NONE)
            return MODEL_NONE;
        assert(!model_task_on_gpu(g->tasks[from].cls)); /* launched from a CPU thread */
        i = from;
    }
    return g->src[i].event;
}

/* Label every task by the spans around its call in its rank's trace (-1
 * where none is) into label[], in one pass over the tasks; found[r] gets
 * whether rank r's trace has such spans. */
static int label_tasks(const struct model_graph *g, span_label_fn fn, int32_t *label, uint8_t *found,
                       struct sc_error *err)
{
    struct spans *sp = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *sp);
    int rc = sp ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
    for (uint16_t r = 0; !rc && r < g->n_ranks; r++) {
        const struct model_trace *t = whatif_job_structure_trace(g, r);
        rc = t ? spans_collect(t, fn, &sp[r], err) : SC_OK;
        found[r] = !rc && sp[r].n > 0;
    }
    for (uint32_t i = 0; !rc && i < g->n_tasks; i++) {
        uint16_t r = g->tasks[i].rank;
        const struct model_trace *t = whatif_job_structure_trace(g, r);
        assert(r < g->n_ranks && (!sp[r].n || t));
        uint32_t ev = sp[r].n ? call_event(g, i) : MODEL_NONE;
        if (ev == MODEL_NONE || ev >= t->n_events)
            continue;
        int32_t l = spans_around(&sp[r], t->events[ev].track, t->events[ev].ts);
        if (l >= 0)
            label[i] = l;
    }
    for (uint16_t r = 0; sp && r < g->n_ranks; r++)
        free(sp[r].v);
    free(sp);
    return rc;
}

/* ---- layers from module annotations ---- */

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

/* Layers of rank r's CPU tasks from its trace's module annotations; *found
 * gets the most layers seen (0: no annotation). */
static int modules_rank(const struct model_graph *g, uint16_t r, int32_t *layer, int *found, struct sc_error *err)
{
    const struct model_trace *t = whatif_job_structure_trace(g, r);
    struct spans sp;
    *found = 0;
    if (!t)
        return SC_OK;
    if (spans_collect(t, module_layer, &sp, err))
        return err->code;
    for (size_t k = 0; k < sp.n; k++)
        if (sp.v[k].label + 1 > *found)
            *found = sp.v[k].label + 1;
    for (uint32_t i = 0; sp.n && i < g->n_tasks; i++) {
        const struct model_task *tk = &g->tasks[i];
        uint32_t ev = g->src[i].event;
        if (tk->rank != r || model_task_on_gpu(tk->cls) || ev == MODEL_NONE || ev >= t->n_events)
            continue;
        int32_t l = spans_around(&sp, t->events[ev].track, t->events[ev].ts);
        if (l >= 0)
            layer[i] = l;
    }
    free(sp.v);
    return SC_OK;
}

/* ---- layers from the repeating kernel sequence ---- */

struct run {
    size_t start, period, reps;
};

/* The longest run of a block of at least STRUCT_MIN_BLOCK names (two of
 * them distinct) repeated back to back in a[0..n) (reps >= 2; reps == 0
 * when none); want_reps > 0 takes only runs of that many repeats. */
static struct run longest_repeat(const int64_t *a, size_t n, size_t want_reps)
{
    struct run best = {0, 0, 0};
    size_t max_p = n / 2 < STRUCT_MAX_BLOCK ? n / 2 : STRUCT_MAX_BLOCK;
    for (size_t p = STRUCT_MIN_BLOCK; p <= max_p; p++) {
        size_t run = 0;
        for (size_t i = 0; i + p <= n; i++) {
            int same = i + p < n && a[i] >= 0 && a[i] == a[i + p];
            if (same) {
                run++;
                continue;
            }
            size_t reps = run / p + 1, st = i - run;
            if (run >= p && reps * p > best.reps * best.period && (!want_reps || reps == want_reps)) {
                int distinct = 0;
                for (size_t k = st + 1; k < st + p && !distinct; k++)
                    distinct = a[k] != a[st];
                if (distinct)
                    best = (struct run){st, p, reps};
            }
            run = 0;
        }
    }
    return best;
}

/* Layers of rank r from the repeats of its busiest compute stream, step by
 * step, among the kernels no layer holds yet; with want > 0 only runs of
 * that many repeats (the layers module annotations found). *found gets the
 * most layers seen, *both the most seen in a step's two runs alike (the
 * forward's and the backward's: a count the trace confirms). */
static int repeats_rank(const struct model_graph *g, uint16_t r, int want, int32_t *layer, int *found, int *both,
                        struct sc_error *err)
{
    uint32_t stream = MODEL_NONE, most = 0;
    *found = *both = 0;
    for (uint32_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        /* a compute stream may carry a collective or two (a gradient
         * norm's all-reduce): its kernels decide */
        if (res->rank != r || !res->gpu)
            continue;
        uint32_t kernels = 0;
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i])
            kernels += g->tasks[i].cls == MODEL_TASK_KERNEL;
        if (kernels > most) {
            most = kernels;
            stream = k;
        }
    }
    if (stream == MODEL_NONE)
        return SC_OK;
    uint32_t *idx = malloc((size_t)most * sizeof *idx);
    int64_t *names = malloc((size_t)most * sizeof *names);
    if (!idx || !names) {
        free(idx);
        free(names);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t s = 0; s < g->n_steps; s++) {
        const struct model_graph_step *st = &g->steps[s];
        if (st->rank != r || st->end == MODEL_NONE)
            continue;
        size_t n = 0;
        for (uint32_t i = g->res[stream].first; i != MODEL_NONE; i = g->next[i])
            if (i > st->begin && i < st->end && g->tasks[i].cls == MODEL_TASK_KERNEL && n < most) {
                idx[n] = i;
                /* a kernel in a layer already is out of the search */
                names[n] = layer[i] >= 0 ? -1 - (int64_t)n : (int64_t)g->src[i].name;
                n++;
            }
        size_t reps = (size_t)want;
        for (int pass = 0; pass < 2; pass++) {
            struct run run = longest_repeat(names, n, reps);
            if (!run.reps)
                break;
            for (size_t j = 0; j < run.reps * run.period; j++) {
                layer[idx[run.start + j]] = (int32_t)(j / run.period);
                names[run.start + j] = -1 - (int64_t)j; /* out of the next search */
            }
            if ((int)run.reps > *found)
                *found = (int)run.reps;
            if (pass && (int)run.reps > *both)
                *both = (int)run.reps;
            reps = run.reps;
        }
    }
    free(idx);
    free(names);
    return SC_OK;
}

/* The GPU work a call launched is in the call's layer, and the call that
 * launched GPU work found in a layer is in it. */
static void propagate(const struct model_graph *g, int32_t *layer)
{
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        if (!model_task_on_gpu(g->tasks[i].cls))
            continue;
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
            const struct model_edge *ed = &g->edges[e];
            if (ed->kind != MODEL_EDGE_LAUNCH)
                continue;
            if (layer[i] < 0)
                layer[i] = layer[ed->from];
            else if (layer[ed->from] < 0)
                layer[ed->from] = layer[i];
        }
    }
}

/* ---- what launched the work ---- */

static const char *const dp_use_names[STRUCT_DP_USE_COUNT] = {"none", "gradients", "parameters", "buffers", "other"};

const char *whatif_struct_dp_use_name(enum struct_dp_use u)
{
    return (unsigned)u < STRUCT_DP_USE_COUNT ? dp_use_names[u] : "none";
}

const char *whatif_struct_grad_sync_name(enum struct_grad_sync s)
{
    static const char *const names[] = {"none", "ddp", "zero", "fsdp"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "none";
}

static int has_prefix(const char *s, const char *p)
{
    return s && strncmp(s, p, strlen(p)) == 0;
}

#define AUTOGRAD_FUNCTION "autograd::engine::evaluate_function: "

static int32_t autograd_label(const char *name)
{
    return has_prefix(name, AUTOGRAD_FUNCTION) ? 1 : -1;
}

/* The hooks that launch data-parallel collectives, by the names PyTorch's
 * autograd engine, DDP and FSDP (FSDP2's "FSDP::", FSDP1's
 * "FullyShardedDataParallel.") record them with. */
enum hook { HOOK_GRADS, HOOK_FSDP_GRADS, HOOK_FSDP_PARAMS, HOOK_DDP_BUFFERS };

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
        return strstr(name, "AccumulateGrad") ? HOOK_GRADS : -1;
    if (has_prefix(name, "FSDP::post_backward") || has_prefix(name, "FullyShardedDataParallel._post_backward_hook"))
        return HOOK_FSDP_GRADS;
    for (size_t k = 0; k < sizeof fsdp_params / sizeof *fsdp_params; k++)
        if (has_prefix(name, fsdp_params[k]))
            return HOOK_FSDP_PARAMS;
    return strcmp(name, "DistributedDataParallel.forward") == 0 ? HOOK_DDP_BUFFERS : -1;
}

/* Kernels Inductor generated and compiled regions in rank r's trace. */
static void compiled_rank(const struct model_trace *t, struct job_structure *out)
{
    for (size_t i = 0; t && i < t->n_events; i++) {
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

/* The most distinct layers with forward (backward) kernels in one step of
 * a rank. */
static void layers_by_phase(const struct model_graph *g, struct job_structure *out)
{
    int32_t most = out->layers_per_rank;
    uint8_t *seen = most > 0 ? calloc((size_t)most, 1) : NULL;
    for (size_t s = 0; seen && s < g->n_steps; s++) {
        const struct model_graph_step *st = &g->steps[s];
        if (st->end == MODEL_NONE)
            continue;
        memset(seen, 0, (size_t)most);
        int fwd = 0, bwd = 0;
        for (uint32_t i = st->begin + 1; i < st->end; i++) {
            int32_t l = out->layer[i];
            if (g->tasks[i].rank != st->rank || g->tasks[i].cls != MODEL_TASK_KERNEL || l < 0 || l >= most)
                continue;
            uint8_t bit = out->phase[i] == STRUCT_PHASE_BACKWARD ? 2 : out->phase[i] == STRUCT_PHASE_FORWARD ? 1 : 0;
            if (bit && !(seen[l] & bit)) {
                seen[l] |= bit;
                fwd += bit == 1;
                bwd += bit == 2;
            }
        }
        if (fwd > out->layers_forward)
            out->layers_forward = fwd;
        if (bwd > out->layers_backward)
            out->layers_backward = bwd;
    }
    free(seen);
}

/* Phases, data-parallel uses and the gradient reduction of g's tasks (the
 * roles already classified). */
static int launchers(const struct model_graph *g, struct job_structure *out, struct sc_error *err)
{
    int32_t *label = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *label);
    int32_t *hook = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *hook);
    if (!label || !hook) {
        free(label);
        free(hook);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->n_tasks; i++)
        label[i] = hook[i] = -1;
    int rc = SC_OK, fsdp = 0, scattered = 0;
    uint8_t *found = calloc(g->n_ranks ? g->n_ranks : 1, 1), *hooks = calloc(g->n_ranks ? g->n_ranks : 1, 1);
    rc = !found || !hooks ? sc_error_set(err, SC_ENOMEM, "out of memory")
                          : label_tasks(g, autograd_label, label, found, err);
    if (!rc)
        rc = label_tasks(g, hook_label, hook, hooks, err);
    for (uint32_t i = 0; !rc && i < g->n_tasks; i++)
        if (found[g->tasks[i].rank])
            out->phase[i] = label[i] >= 0 ? STRUCT_PHASE_BACKWARD : STRUCT_PHASE_FORWARD;
    for (uint16_t r = 0; !rc && r < g->n_ranks; r++)
        compiled_rank(whatif_job_structure_trace(g, r), out);
    free(found);
    free(hooks);
    for (uint32_t i = 0; !rc && i < g->n_tasks; i++) {
        out->backward_tasks += out->phase[i] == STRUCT_PHASE_BACKWARD;
        if (out->role[i] != STRUCT_ROLE_DP)
            continue;
        enum struct_dp_use use = hook[i] == HOOK_GRADS || hook[i] == HOOK_FSDP_GRADS ? STRUCT_DP_GRADS
                                 : hook[i] == HOOK_FSDP_PARAMS                        ? STRUCT_DP_PARAMS
                                 : hook[i] == HOOK_DDP_BUFFERS && g->tasks[i].sub == MODEL_COLL_BROADCAST
                                     ? STRUCT_DP_BUFFERS
                                                                                      : STRUCT_DP_OTHER;
        fsdp |= hook[i] == HOOK_FSDP_GRADS || hook[i] == HOOK_FSDP_PARAMS;
        scattered |= use == STRUCT_DP_GRADS && g->tasks[i].sub == MODEL_COLL_REDUCESCATTER;
        out->dp_use[i] = (uint8_t)use;
        out->by_use[use]++;
        out->use_bytes[use] += out->coll_bytes[i] > 0 ? (double)out->coll_bytes[i] : 0;
        out->use_ms[use] += (double)g->tasks[i].dur / 1e6;
    }
    free(label);
    free(hook);
    if (rc)
        return rc;
    out->grad_sync = fsdp                              ? STRUCT_SYNC_FSDP
                     : scattered                       ? STRUCT_SYNC_ZERO
                     : out->by_use[STRUCT_DP_GRADS] > 0 ? STRUCT_SYNC_DDP
                                                       : STRUCT_SYNC_NONE;
    for (size_t s = 0; s < g->n_steps; s++)
        out->steps += g->steps[s].end != MODEL_NONE;
    layers_by_phase(g, out);
    return SC_OK;
}

/* ---- collective roles ---- */

int whatif_struct_coll_is_p2p(int op)
{
    return op == MODEL_COLL_SENDRECV || op == MODEL_COLL_SEND || op == MODEL_COLL_RECV;
}

/* Communication task i's size and group size: its group's, else its
 * kernel's arguments'. */
static void comm_info(const struct model_graph *g, uint32_t i, int64_t *bytes, int32_t *size)
{
    const struct model_task *t = &g->tasks[i];
    *bytes = -1;
    *size = 0;
    if (t->group != MODEL_NONE) {
        *bytes = g->groups[t->group].bytes;
        *size = (int32_t)g->groups[t->group].size;
    } else {
        const struct model_trace *tr = whatif_job_structure_trace(g, t->rank);
        uint32_t ev = g->src[i].event;
        if (tr && ev != MODEL_NONE && ev < tr->n_events) {
            uint32_t info = tr->events[ev].info;
            if (info != MODEL_NONE && tr->infos[info].coll != MODEL_NONE) {
                const struct model_collective *c = &tr->colls[tr->infos[info].coll];
                *bytes = model_coll_bytes(tr, c, (enum model_coll_op)t->sub);
                *size = c->group_size;
            }
        }
    }
    if (*size <= 1)
        *size = 0; /* unknown */
}

static enum struct_role classify(const struct model_graph *g, uint32_t i, int32_t layer, int64_t size,
                                 const struct job_config *c)
{
    const struct model_task *t = &g->tasks[i];
    if (whatif_struct_coll_is_p2p(t->sub)) {
        if (c->cp > 1 && (size == 0 || size == 2 || size == c->cp) && (c->pp == 1 || layer >= 0))
            return STRUCT_ROLE_CP;
        if (c->pp > 1 && (size == 0 || size == 2))
            return STRUCT_ROLE_PP;
        return size == 0 || size == c->dp ? STRUCT_ROLE_DP : STRUCT_ROLE_OTHER;
    }
    if (size) {
        if (size == c->tp && c->tp > 1 && (size != c->dp || layer >= 0))
            return STRUCT_ROLE_TP;
        if (size == c->dp * (c->cp > 1 ? c->cp : 1) && size > 1) /* gradients reduce over dp x cp */
            return STRUCT_ROLE_DP;
        return STRUCT_ROLE_OTHER;
    }
    if (c->tp == 1)
        return STRUCT_ROLE_DP;
    if (c->dp == 1)
        return STRUCT_ROLE_TP;
    return layer >= 0 ? STRUCT_ROLE_TP : STRUCT_ROLE_DP;
}

/* The error for a collective of `size` ranks no group of c has. */
static int contradiction(const struct job_config *c, int64_t size, int op, const char *what, const char *name,
                         struct sc_error *err)
{
    return sc_error_set(err, SC_EINVAL,
                        "job description (tp=%lld, pp=%lld, dp=%lld) has no group of %lld ranks, but the trace's %s "
                        "%s '%s' spans %lld",
                        (long long)c->tp, (long long)c->pp, (long long)c->dp, (long long)size,
                        model_coll_op_name((enum model_coll_op)op), what, name && *name ? name : "?",
                        (long long)size);
}

static int check_groups(const struct model_graph *g, const struct job_config *c, struct sc_error *err)
{
    for (size_t k = 0; k < g->n_groups; k++) {
        const struct model_coll_group *gr = &g->groups[k];
        if (gr->size > 1 && !whatif_job_config_has_group(c, gr->size, whatif_struct_coll_is_p2p(gr->op)))
            return contradiction(c, gr->size, gr->op, "on process group", model_graph_str(g, gr->pg), err);
    }
    return SC_OK;
}

/* ---- the profiler's operators ---- */

static int int64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The first of the n sorted keys at or after k. */
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

/* Whether event e of t is a runtime call that blocks its thread on the
 * GPU: a synchronising call, or an async copy to pageable host memory
 * (it returns once the copy has run, as the graph has it: an item(), a
 * .cpu() of a loss). */
static int blocking_call(const struct model_trace *t, size_t e)
{
    const struct model_event *c = &t->events[e];
    if (c->kind != MODEL_EV_RUNTIME && c->kind != MODEL_EV_DRIVER)
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
 * the union of its cpu_op spans on each thread, less the calls in them
 * that wait for the GPU (a .item(), a blocking copy), ns. */
static int ops_busy_ns(const struct model_trace *t, double *out, struct sc_error *err)
{
    struct span *v = malloc((t->n_events ? t->n_events : 1) * sizeof *v);
    size_t k = 0, m = 0;
    if (!v)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t e = 0; e < t->n_events; e++)
        if (t->events[e].kind == MODEL_EV_CPU_OP)
            v[k++] = (struct span){t->events[e].track, t->events[e].ts, t->events[e].ts + t->events[e].dur, 0, 0};
    qsort(v, k, sizeof *v, span_cmp);
    for (size_t i = 0; i < k; i++) { /* merged in place, per thread */
        if (m && v[m - 1].track == v[i].track && v[i].start <= v[m - 1].end) {
            if (v[i].end > v[m - 1].end)
                v[m - 1].end = v[i].end;
        } else {
            v[m++] = v[i];
        }
    }
    for (size_t i = 0; i < m; i++)
        *out += (double)(v[i].end - v[i].start);
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
            *out -= (double)((c->ts + c->dur < v[lo - 1].end ? c->ts + c->dur : v[lo - 1].end) - c->ts);
    }
    free(v);
    return SC_OK;
}

/* out->host_ops: for each runtime call on a CPU thread, the cpu_op events
 * of its trace that began on its thread within its host gap (the gap ends
 * where the call starts); out->host_ops_ns: the host's working time inside
 * them (ops_busy_ns). Keys are (track, time since the trace's first
 * event) packed in 64 bits: 16 bits of track, 48 of nanoseconds (78 hours). */
static int host_ops(const struct model_graph *g, struct job_structure *out, struct sc_error *err)
{
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        const struct model_trace *t = whatif_job_structure_trace(g, r);
        size_t n = 0, k = 0;
        for (size_t e = 0; t && e < t->n_events; e++)
            n += t->events[e].kind == MODEL_EV_CPU_OP && t->events[e].track <= 0xffff;
        if (!n)
            continue;
        int rc = ops_busy_ns(t, &out->host_ops_ns, err);
        if (rc)
            return rc;
        int64_t *key = malloc(n * sizeof *key);
        if (!key)
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        for (size_t e = 0; e < t->n_events; e++)
            if (t->events[e].kind == MODEL_EV_CPU_OP && t->events[e].track <= 0xffff)
                key[k++] = (int64_t)t->events[e].track << 48 | ((t->events[e].ts - t->first_ts) & ((1LL << 48) - 1));
        qsort(key, n, sizeof *key, int64_cmp);
        for (uint32_t i = 0; i < g->n_tasks; i++) {
            const struct model_task *tk = &g->tasks[i];
            uint32_t ev = g->src[i].event;
            if (tk->rank != r || tk->cls != MODEL_TASK_CALL || ev == MODEL_NONE || ev >= t->n_events || tk->gap <= 0)
                continue;
            const struct model_event *e = &t->events[ev];
            int64_t at = e->ts - t->first_ts, from = at - tk->gap;
            if (at < 0 || from < 0 || at >= 1LL << 48 || e->track > 0xffff)
                continue;
            int64_t track = (int64_t)e->track << 48;
            size_t c = lower_bound(key, n, track | at) - lower_bound(key, n, track | from);
            out->host_ops[i] = (uint16_t)(c < UINT16_MAX ? c : UINT16_MAX);
            out->host_ops_total += out->host_ops[i];
        }
        free(key);
    }
    return SC_OK;
}

static atomic_ulong recoveries;

unsigned long whatif_job_structure_recoveries(void)
{
    return atomic_load(&recoveries);
}

/* The layers found on a rank (from `source`) against the description's
 * layers / pp: all of them with one stage, else one fewer or more where
 * the stages do not split them evenly (Megatron's placement counts the
 * embedding and the loss as layers then). SC_EINVAL naming layers. */
static int check_layers(const struct job_config *cfg, int found, enum struct_layer_source source, int rank,
                        struct sc_error *err)
{
    if (!cfg->layers)
        return SC_OK;
    int64_t lo = cfg->pp > 1 ? cfg->layers / cfg->pp - 1 : cfg->layers, hi = (cfg->layers + cfg->pp - 1) / cfg->pp;
    if (found >= lo && found <= hi)
        return SC_OK;
    return sc_error_set(err, SC_EINVAL,
                        "layers: the job description gives %lld layers over pp=%lld (%lld per rank), but the trace's "
                        "%s %d on rank %d",
                        (long long)cfg->layers, (long long)cfg->pp, (long long)(cfg->layers / cfg->pp),
                        source == STRUCT_LAYERS_MODULES ? "module annotations show"
                                                        : "repeating kernel sequence shows, forward and backward,",
                        found, rank);
}

int whatif_job_structure_recover(const struct model_graph *g, const struct job_config *cfg, struct job_structure *out,
                          struct sc_error *err)
{
    atomic_fetch_add(&recoveries, 1);
    memset(out, 0, sizeof *out);
    out->world_size = -1;
    if (!g->job)
        return sc_error_set(err, SC_EINVAL, "the graph was not built from a trace");
    out->layer = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *out->layer);
    out->role = calloc(g->n_tasks ? g->n_tasks : 1, 1);
    out->coll_bytes = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *out->coll_bytes);
    out->coll_size = calloc(g->n_tasks ? g->n_tasks : 1, sizeof *out->coll_size);
    out->phase = calloc(g->n_tasks ? g->n_tasks : 1, 1);
    out->dp_use = calloc(g->n_tasks ? g->n_tasks : 1, 1);
    out->host_ops = calloc(g->n_tasks ? g->n_tasks : 1, sizeof *out->host_ops);
    if (!out->layer || !out->role || !out->coll_bytes || !out->coll_size || !out->phase || !out->dp_use ||
        !out->host_ops) {
        whatif_job_structure_release(out);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->n_tasks; i++) {
        out->layer[i] = -1;
        out->coll_bytes[i] = -1;
    }
    const struct hw_profile *hw;
    struct sc_error ignored;
    whatif_job_structure_gpu(g, &hw, out->device_name, sizeof out->device_name, &ignored);
    out->gpu = hw;

    for (uint16_t r = 0; r < g->n_ranks; r++) {
        const struct model_trace *t = whatif_job_structure_trace(g, r);
        if (t && t->world_size > 0) {
            out->world_size = t->world_size;
            if (whatif_job_check_world_size(cfg, t->world_size, "", err)) {
                whatif_job_structure_release(out);
                return err->code;
            }
        }
    }
    int rc = check_groups(g, cfg, err);

    /* layers: module annotations on any rank, else repeats */
    for (uint16_t r = 0; !rc && r < g->n_ranks; r++) {
        int found;
        rc = modules_rank(g, r, out->layer, &found, err);
        if (found > out->layers_per_rank)
            out->layers_per_rank = found;
        if (!rc && found)
            rc = check_layers(cfg, found, STRUCT_LAYERS_MODULES, g->ranks[r].id, err);
    }
    if (out->layers_per_rank)
        out->layer_source = STRUCT_LAYERS_MODULES;
    propagate(g, out->layer);
    /* without annotations, the repeats; with them, the repeats of the
     * work they leave out (the backward, run by the autograd engine without
     * module calls) as many times as there are layers */
    int by_modules = out->layers_per_rank;
    for (uint16_t r = 0; !rc && r < g->n_ranks; r++) {
        int found, both;
        rc = repeats_rank(g, r, by_modules, out->layer, &found, &both, err);
        if (!by_modules && found > out->layers_per_rank)
            out->layers_per_rank = found;
        if (!rc && !by_modules && both)
            rc = check_layers(cfg, both, STRUCT_LAYERS_REPEAT, g->ranks[r].id, err);
    }
    if (!out->layer_source && out->layers_per_rank)
        out->layer_source = STRUCT_LAYERS_REPEAT;
    if (rc) {
        whatif_job_structure_release(out);
        return rc;
    }

    propagate(g, out->layer);
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        out->layer_tasks += out->layer[i] >= 0;
        if (g->tasks[i].cls != MODEL_TASK_COMM)
            continue;
        comm_info(g, i, &out->coll_bytes[i], &out->coll_size[i]);
        if (out->coll_size[i] && !whatif_job_config_has_group(cfg, out->coll_size[i], whatif_struct_coll_is_p2p(g->tasks[i].sub))) {
            rc = contradiction(cfg, out->coll_size[i], g->tasks[i].sub, "kernel", model_graph_str(g, g->src[i].name),
                               err);
            whatif_job_structure_release(out);
            return rc;
        }
        enum struct_role role = classify(g, i, out->layer[i], out->coll_size[i], cfg);
        out->role[i] = (uint8_t)role;
        out->by_role[role]++;
        out->role_ms[role] += (double)g->tasks[i].dur / 1e6;
    }
    if ((rc = launchers(g, out, err)) || (rc = host_ops(g, out, err)))
        whatif_job_structure_release(out);
    return rc;
}
