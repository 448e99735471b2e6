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
#include "estimator/whatif/trace_notes.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/kernel_family.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

/* The longest block (kernels) the repeat search tries: a layer of more
 * kernels than this is not found by its repeats. */
#define STRUCT_MAX_BLOCK 2048

static const char *const role_names[STRUCT_ROLE_COUNT] = {"none", "dp", "tp", "pp", "cp", "ep", "edp", "other"};

const char *whatif_struct_role_name(enum struct_role r)
{
    return (unsigned)r < STRUCT_ROLE_COUNT ? role_names[r] : "none";
}

const char *whatif_struct_layer_source_name(enum struct_layer_source s)
{
    return s == STRUCT_LAYERS_MODULES  ? "module annotations"
           : s == STRUCT_LAYERS_REPEAT ? "repeating kernel sequence"
           : s == STRUCT_LAYERS_UNITS  ? "FSDP units"
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
    free(s->param_work);
    free(s->host_ops);
    free(s->gemm);
    free(s->gemms);
    s->gemm = NULL;
    s->gemms = NULL;
    s->host_ops = NULL;
    s->phase = NULL;
    s->dp_use = NULL;
    s->param_work = NULL;
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
    out->param_work = malloc(n);
    out->host_ops = malloc(n * sizeof *out->host_ops);
    out->gemm = malloc(n * sizeof *out->gemm);
    out->gemms = malloc((src->n_gemms ? src->n_gemms : 1) * sizeof *out->gemms);
    if (!out->layer || !out->role || !out->coll_bytes || !out->coll_size || !out->phase || !out->dp_use ||
        !out->param_work || !out->host_ops || !out->gemm || !out->gemms) {
        whatif_job_structure_release(out);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    memcpy(out->gemm, src->gemm, n_tasks * sizeof *out->gemm);
    if (src->n_gemms)
        memcpy(out->gemms, src->gemms, src->n_gemms * sizeof *out->gemms);
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
    memcpy(out->param_work, src->param_work, n_tasks);
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

/* ---- the notes of a task's call ---- */

/* The notes of graph rank r. */
static const struct trace_notes *notes_of(const struct trace_notes_set *n, uint16_t r)
{
    assert(r < n->n_ranks);
    return &n->rank[r];
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

/* The note of the call behind task i, or NULL. */
static const struct trace_call_note *call_note(const struct model_graph *g, const struct trace_notes_set *n,
                                               uint32_t i)
{
    uint32_t ev = call_event(g, i);
    return ev == MODEL_NONE ? NULL : trace_notes_call(notes_of(n, g->tasks[i].rank), ev);
}

/* ---- layers from module annotations ---- */

/* Layers of rank r's CPU tasks from its trace's module annotations; *found
 * gets the most layers seen (0: no annotation). */
static void modules_rank(const struct model_graph *g, const struct trace_notes_set *n, uint16_t r, int32_t *layer,
                         int *found)
{
    const struct trace_notes *nt = notes_of(n, r);
    *found = nt->module_layers;
    for (uint32_t i = 0; *found && i < g->n_tasks; i++) {
        const struct model_task *tk = &g->tasks[i];
        uint32_t ev = g->src[i].event;
        if (tk->rank != r || model_task_on_gpu(tk->cls) || ev == MODEL_NONE)
            continue;
        const struct trace_call_note *c = trace_notes_call(nt, ev);
        if (c && c->layer >= 0)
            layer[i] = c->layer;
    }
}

/* ---- layers from the repeating kernel sequence ---- */

/* A run of layers: reps blocks of `period` kernels from start, the same
 * names each, and beside them the layers at either end of the stack that
 * differ from the rest (edge_layer): `lead` kernels before, `tail` after
 * (0: none). */
struct run {
    size_t start, period, reps, lead, tail;
};

static size_t run_layers(const struct run *r)
{
    return r->reps + (r->lead > 0) + (r->tail > 0);
}

/* The longest run of a block of at least STRUCT_MIN_BLOCK names (two of
 * them distinct) repeated back to back in a[0..n) (reps >= 2; reps == 0
 * when none); want_reps > 0 takes only runs of that many repeats. With
 * `loose`, a block may differ from the one before it in up to a quarter of
 * its names (no more in any stretch of a block's length): torch.compile
 * names a layer's fused kernels after what each fuses, and in mixed
 * precision its layers alternate between two or three such names. */
static struct run longest_repeat(const int64_t *a, size_t n, size_t want_reps, int loose)
{
    struct run best = {0, 0, 0, 0, 0};
    size_t max_p = n / 2 < STRUCT_MAX_BLOCK ? n / 2 : STRUCT_MAX_BLOCK;
    uint8_t missed[STRUCT_MAX_BLOCK]; /* loose: the last p comparisons, each 1 where the names differ */
    for (size_t p = STRUCT_MIN_BLOCK; p <= max_p; p++) {
        size_t run = 0, misses = 0, slack = loose ? p / 4 : 0;
        for (size_t i = 0; i + p <= n; i++) {
            int known = i + p < n && a[i] >= 0 && a[i + p] >= 0, same = known && a[i] == a[i + p];
            size_t gone = run >= p ? missed[run % p] : 0; /* the comparison leaving the window */
            if (same || (known && run && misses - gone + 1 <= slack)) {
                misses += !same - gone;
                missed[run % p] = (uint8_t)!same;
                run++;
                continue;
            }
            size_t reps = run / p + 1, st = i - run;
            if (run >= p && reps * p > best.reps * best.period && (!want_reps || reps == want_reps)) {
                int distinct = 0;
                for (size_t k = st + 1; k < st + p && !distinct; k++)
                    distinct = a[k] != a[st];
                if (distinct)
                    best = (struct run){st, p, reps, 0, 0};
            }
            run = misses = 0;
        }
    }
    return best;
}

/* The k-th name of the stretch of a from `at` going `dir` (+1: a[at],
 * a[at + 1], ...; -1: a[at - 1], a[at - 2], ...). */
static int64_t stretch_at(const int64_t *a, size_t at, int dir, size_t k)
{
    return a[dir > 0 ? at + k : at - 1 - k];
}

/* How many of the first k names of that stretch are v. */
static size_t count_of(const int64_t *a, size_t at, int dir, size_t k, int64_t v)
{
    size_t c = 0;
    for (size_t j = 0; j < k; j++)
        c += stretch_at(a, at, dir, j) == v;
    return c;
}

/* The kernels of the stretch of a[0, n) beside run r (dir -1: before it,
 * +1: after it) that make one more layer of r's block, or 0. The layers at
 * either end of a stack differ from the rest where torch.compile fuses
 * them with the embedding, the final norm or the loss (Inductor's kernels
 * there are other ones), yet they hold the block's anchors: the names the
 * block holds once (a layer's attention kernel, its GEMMs). The stretch is
 * the shortest that holds every anchor, made up to a block's length where
 * the kernels allow (at most one and a half blocks, up to a kernel a layer
 * already holds); it is a layer when it holds each anchor once and at
 * least half its kernels are the block's. */
static size_t edge_layer(const int64_t *a, size_t n, const struct run *r, int dir)
{
    size_t st = r->start, p = r->period, at = dir > 0 ? st + r->reps * p : st;
    size_t avail = 0, max = p + p / 2, anchors = 0, seen = 0, len = 0;
    for (size_t i = 0; i < p; i++)
        anchors += count_of(a, st, +1, p, a[st + i]) == 1;
    while (avail < max && (dir > 0 ? at + avail < n : avail < at) && stretch_at(a, at, dir, avail) >= 0)
        avail++;
    for (size_t k = 0; k < avail && !len; k++) { /* the shortest stretch holding every anchor */
        int64_t v = stretch_at(a, at, dir, k);
        seen += count_of(a, st, +1, p, v) == 1 && !count_of(a, at, dir, k, v);
        if (anchors && seen == anchors)
            len = k + 1;
    }
    if (!len)
        return 0;
    if (len < p)
        len = avail < p ? avail : p;
    size_t once = 0, of_block = 0;
    for (size_t k = 0; k < len; k++) {
        int64_t v = stretch_at(a, at, dir, k);
        size_t in = count_of(a, st, +1, p, v);
        once += in == 1 && count_of(a, at, dir, len, v) == 1;
        of_block += in > 0;
    }
    return once == anchors && 2 * of_block >= len ? len : 0;
}

/* The layers of a[0, n): the longest run of a repeated block
 * (longest_repeat) with the edge layers beside it (edge_layer). With
 * want > 0, a run of that many layers: an exact run of as many repeats,
 * else one of one or two fewer whose edge layers make up the count, else
 * the same from loose repeats. */
static struct run layers_run(const int64_t *a, size_t n, size_t want)
{
    struct run none = {0, 0, 0, 0, 0};
    for (int loose = 0; loose <= (want > 0); loose++)
        for (size_t less = 0; less <= (want ? 2 : 0) && (!want || want - less >= 2); less++) {
            struct run r = longest_repeat(a, n, want ? want - less : 0, loose);
            if (!r.reps)
                continue;
            if (want && !less)
                return r;
            r.lead = edge_layer(a, n, &r, -1);
            r.tail = edge_layer(a, n, &r, +1);
            if (!want || run_layers(&r) == want)
                return r;
        }
    return none;
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
            struct run run = layers_run(names, n, reps);
            if (!run.reps)
                break;
            size_t layers = run_layers(&run), first = run.start - run.lead, body = run.reps * run.period;
            for (size_t j = 0; j < run.lead + body + run.tail; j++) {
                size_t l = j < run.lead ? 0 : j - run.lead < body ? (run.lead > 0) + (j - run.lead) / run.period
                                                                  : layers - 1;
                layer[idx[first + j]] = (int32_t)l;
                names[first + j] = -1 - (int64_t)j; /* out of the next search */
            }
            if ((int)layers > *found)
                *found = (int)layers;
            if (pass && (int)layers > *both)
                *both = (int)layers;
            reps = layers;
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

/* Phases, data-parallel uses, the gradient reduction and the work on the
 * gradients of g's tasks (the roles already classified), from the spans
 * around their calls. */
static void launchers(const struct model_graph *g, const struct trace_notes_set *n, struct job_structure *out)
{
    int fsdp = 0, scattered = 0;
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        out->inductor_kernels += notes_of(n, r)->inductor_kernels;
        out->compiled_regions += notes_of(n, r)->compiled_regions;
        fsdp |= notes_of(n, r)->unit_layers;
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct trace_call_note *c = call_note(g, n, i);
        int hook = c ? c->hook : -1;
        if (hook == TRACE_HOOK_OPTIMIZER)
            out->phase[i] = STRUCT_PHASE_OPTIMIZER;
        else if (notes_of(n, g->tasks[i].rank)->has_autograd)
            out->phase[i] = c && c->backward ? STRUCT_PHASE_BACKWARD : STRUCT_PHASE_FORWARD;
        out->backward_tasks += out->phase[i] == STRUCT_PHASE_BACKWARD;
        if (hook == TRACE_HOOK_GRADS && model_task_on_gpu(g->tasks[i].cls) && g->tasks[i].cls != MODEL_TASK_COMM) {
            out->param_work[i] = 1;
            out->param_work_tasks++;
        }
        if (out->role[i] != STRUCT_ROLE_DP)
            continue;
        enum struct_dp_use use = hook == TRACE_HOOK_GRADS || hook == TRACE_HOOK_FSDP_GRADS ? STRUCT_DP_GRADS
                                 : hook == TRACE_HOOK_FSDP_PARAMS                          ? STRUCT_DP_PARAMS
                                 : hook == TRACE_HOOK_DDP_BUFFERS && g->tasks[i].sub == MODEL_COLL_BROADCAST
                                     ? STRUCT_DP_BUFFERS
                                     : STRUCT_DP_OTHER;
        fsdp |= hook == TRACE_HOOK_FSDP_GRADS || hook == TRACE_HOOK_FSDP_PARAMS;
        scattered |= use == STRUCT_DP_GRADS && g->tasks[i].sub == MODEL_COLL_REDUCESCATTER;
        out->dp_use[i] = (uint8_t)use;
        out->by_use[use]++;
        out->use_bytes[use] += out->coll_bytes[i] > 0 ? (double)out->coll_bytes[i] : 0;
        out->use_ms[use] += (double)g->tasks[i].dur / 1e6;
    }
    out->grad_sync = fsdp                              ? STRUCT_SYNC_FSDP
                     : scattered                       ? STRUCT_SYNC_ZERO
                     : out->by_use[STRUCT_DP_GRADS] > 0 ? STRUCT_SYNC_DDP
                                                       : STRUCT_SYNC_NONE;
    for (size_t s = 0; s < g->n_steps; s++)
        out->steps += g->steps[s].end != MODEL_NONE;
    layers_by_phase(g, out);
}

/* ---- collective roles ---- */

int whatif_struct_is_optimizer(const struct model_graph *g, const struct job_structure *st, uint32_t i)
{
    return g->tasks[i].cls == MODEL_TASK_KERNEL &&
           (g->tasks[i].sub == MODEL_KF_OPTIMIZER || st->phase[i] == STRUCT_PHASE_OPTIMIZER);
}

int whatif_struct_coll_is_p2p(int op)
{
    return op == MODEL_COLL_SENDRECV || op == MODEL_COLL_SEND || op == MODEL_COLL_RECV;
}

/* Communication task i's size and group size: its group's, else its
 * kernel's arguments'. */
static void comm_info(const struct model_graph *g, const struct trace_notes_set *n, uint32_t i, int64_t *bytes,
                      int32_t *size)
{
    const struct model_task *t = &g->tasks[i];
    *bytes = -1;
    *size = 0;
    if (t->group != MODEL_NONE) {
        *bytes = g->groups[t->group].bytes;
        *size = (int32_t)g->groups[t->group].size;
    } else if (g->src[i].event != MODEL_NONE) {
        const struct trace_coll_note *c = trace_notes_coll(notes_of(n, t->rank), g->src[i].event);
        if (c) {
            *bytes = trace_coll_note_bytes(c, t->sub);
            *size = c->group_size;
        }
    }
    if (*size <= 1)
        *size = 0; /* unknown */
}

/* The role of an MoE job's collective of `size` ranks (known) among its
 * expert groups, or STRUCT_ROLE_NONE. Inside a layer, an all-to-all over
 * the expert-parallel group (NCCL's send/recv where no other group of two
 * or cp ranks sends), or an all-gather or reduce-scatter over it with the
 * expert-tensor-parallel slices (the all-gather dispatcher), is the token
 * exchange; a reduction over the expert-data-parallel group, where that
 * group is neither the data-parallel nor the tensor-parallel one, the
 * experts' gradients. */
static enum struct_role expert_role(const struct model_task *t, int32_t layer, int64_t size,
                                    const struct job_config *c)
{
    int64_t ep, etp, edp, cp = c->cp > 1 ? c->cp : 1;
    spec_job_config_expert_groups(c, &ep, &etp, &edp);
    if (!c->moe.experts || size < 2)
        return STRUCT_ROLE_NONE;
    int op = t->sub, p2p = whatif_struct_coll_is_p2p(op);
    int gather = op == MODEL_COLL_ALLGATHER || op == MODEL_COLL_REDUCESCATTER;
    if (ep > 1 && layer >= 0 && ((op == MODEL_COLL_ALLTOALL && (size == ep || size == ep * etp)) ||
                       (p2p && size == ep && size != cp && (size != 2 || (cp == 1 && c->pp == 1))) ||
                       (gather && size == ep * etp && size != c->tp)))
        return STRUCT_ROLE_EP;
    if ((op == MODEL_COLL_ALLREDUCE || gather) && size == edp && whatif_struct_experts_apart(c))
        return STRUCT_ROLE_EDP;
    return STRUCT_ROLE_NONE;
}

int whatif_struct_experts_apart(const struct job_config *c)
{
    int64_t ep, etp, edp, cp = c->cp > 1 ? c->cp : 1;
    spec_job_config_expert_groups(c, &ep, &etp, &edp);
    return c->moe.experts && edp != c->dp * cp && (edp != c->tp || c->tp == 1);
}

static enum struct_role classify(const struct model_graph *g, uint32_t i, int32_t layer, int64_t size,
                                 const struct job_config *c)
{
    const struct model_task *t = &g->tasks[i];
    enum struct_role expert = expert_role(t, layer, size, c);
    if (expert != STRUCT_ROLE_NONE)
        return expert;
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

/* The gradient reduction the trace shows against the description's
 * zero_stage, where it gives one: DDP's all-reduced buckets are stage 0,
 * a distributed optimizer's reduce-scattered ones 1 or 2, FSDP's per-unit
 * gathers 3. SC_EINVAL naming zero_stage. */
static int check_grad_sync(const struct job_config *c, enum struct_grad_sync sync, struct sc_error *err)
{
    static const char *const shows[] = {
        "", "DDP's buckets, all-reduced (zero_stage 0)",
        "buckets reduce-scattered by a distributed optimizer (zero_stage 1 or 2)",
        "FSDP's units, their parameters gathered and gradients reduce-scattered (zero_stage 3)"};
    int ok = sync == STRUCT_SYNC_NONE || !c->has_zero_stage ||
             (sync == STRUCT_SYNC_DDP && c->zero_stage == 0) ||
             (sync == STRUCT_SYNC_ZERO && (c->zero_stage == 1 || c->zero_stage == 2)) ||
             (sync == STRUCT_SYNC_FSDP && c->zero_stage == 3);
    return ok ? SC_OK
              : sc_error_set(err, SC_EINVAL, "zero_stage: the job description gives zero_stage=%lld, but the trace shows %s",
                             (long long)c->zero_stage, shows[sync]);
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

/* ---- the profiler's operators and the GEMMs' shapes ---- */

/* out->host_ops: for each runtime call on a CPU thread, the operators its
 * trace recorded on its thread within its host gap (the gap ends where the
 * call starts); out->host_ops_ns: the host's working time inside them. */
static void host_ops(const struct model_graph *g, const struct trace_notes_set *n, struct job_structure *out)
{
    for (uint16_t r = 0; r < g->n_ranks; r++)
        out->host_ops_ns += notes_of(n, r)->ops_busy_ns;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *tk = &g->tasks[i];
        const struct trace_notes *nt = notes_of(n, tk->rank);
        uint32_t ev = g->src[i].event;
        if (!nt->n_op_keys || tk->cls != MODEL_TASK_CALL || ev == MODEL_NONE || tk->gap <= 0)
            continue;
        const struct trace_call_note *c = trace_notes_call(nt, ev);
        if (!c)
            continue;
        size_t k = trace_notes_ops_between(nt, c->track, c->at - tk->gap, c->at);
        out->host_ops[i] = (uint16_t)(k < UINT16_MAX ? k : UINT16_MAX);
        out->host_ops_total += out->host_ops[i];
    }
}

/* out->gemm and out->gemms: the shapes of the GPU tasks launched by a GEMM
 * op that records its shape. */
static int gemm_shapes(const struct model_graph *g, const struct trace_notes_set *n, struct job_structure *out,
                       struct sc_error *err)
{
    size_t cap = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *tk = &g->tasks[i];
        const struct trace_gemm_note *s = NULL;
        out->gemm[i] = UINT32_MAX;
        if (model_task_on_gpu(tk->cls) && tk->cls != MODEL_TASK_COMM && g->src[i].event != MODEL_NONE)
            s = trace_notes_gemm(notes_of(n, tk->rank), g->src[i].event);
        if (!s)
            continue;
        if (sc_vec_reserve((void **)&out->gemms, &cap, out->n_gemms + 1, sizeof *out->gemms))
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        out->gemm[i] = (uint32_t)out->n_gemms;
        out->gemms[out->n_gemms++] = s->shape;
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
                        "%s %s %d on rank %d",
                        (long long)cfg->layers, (long long)cfg->pp, (long long)(cfg->layers / cfg->pp),
                        whatif_struct_layer_source_name(source),
                        source == STRUCT_LAYERS_REPEAT ? "shows, forward and backward," : "show", found, rank);
}

/* whatif_job_structure_recover with g's notes n. */
static int recover(const struct model_graph *g, const struct trace_notes_set *n, const struct job_config *cfg,
                   struct job_structure *out, struct sc_error *err)
{
    size_t nt = g->n_tasks ? g->n_tasks : 1;
    out->layer = malloc(nt * sizeof *out->layer);
    out->role = calloc(nt, 1);
    out->coll_bytes = malloc(nt * sizeof *out->coll_bytes);
    out->coll_size = calloc(nt, sizeof *out->coll_size);
    out->phase = calloc(nt, 1);
    out->dp_use = calloc(nt, 1);
    out->param_work = calloc(nt, 1);
    out->host_ops = calloc(nt, sizeof *out->host_ops);
    out->gemm = malloc(nt * sizeof *out->gemm);
    if (!out->layer || !out->role || !out->coll_bytes || !out->coll_size || !out->phase || !out->dp_use ||
        !out->param_work || !out->host_ops || !out->gemm)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
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
            if (whatif_job_check_world_size(cfg, t->world_size, "", err))
                return err->code;
        }
    }
    int rc = check_groups(g, cfg, err);

    /* layers: module annotations or FSDP units on any rank, else repeats */
    for (uint16_t r = 0; !rc && r < g->n_ranks; r++) {
        int found;
        enum struct_layer_source source = notes_of(n, r)->unit_layers ? STRUCT_LAYERS_UNITS : STRUCT_LAYERS_MODULES;
        modules_rank(g, n, r, out->layer, &found);
        if (found > out->layers_per_rank) {
            out->layers_per_rank = found;
            out->layer_source = source;
        }
        if (found)
            rc = check_layers(cfg, found, source, g->ranks[r].id, err);
    }
    propagate(g, out->layer);
    /* without annotations, the repeats; with them, the repeats of the
     * work they leave out (the backward, run by the autograd engine without
     * module calls) as many times as there are layers */
    int by_modules = out->layers_per_rank;
    for (uint16_t r = 0; !rc && r < g->n_ranks; r++) {
        int found, both;
        if (notes_of(n, r)->unit_layers)
            continue;
        rc = repeats_rank(g, r, by_modules, out->layer, &found, &both, err);
        if (!by_modules && found > out->layers_per_rank)
            out->layers_per_rank = found;
        if (!rc && !by_modules && both)
            rc = check_layers(cfg, both, STRUCT_LAYERS_REPEAT, g->ranks[r].id, err);
    }
    if (!out->layer_source && out->layers_per_rank)
        out->layer_source = STRUCT_LAYERS_REPEAT;
    if (rc)
        return rc;

    propagate(g, out->layer);
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        out->layer_tasks += out->layer[i] >= 0;
        if (g->tasks[i].cls != MODEL_TASK_COMM)
            continue;
        comm_info(g, n, i, &out->coll_bytes[i], &out->coll_size[i]);
        if (out->coll_size[i] &&
            !whatif_job_config_has_group(cfg, out->coll_size[i], whatif_struct_coll_is_p2p(g->tasks[i].sub)))
            return contradiction(cfg, out->coll_size[i], g->tasks[i].sub, "kernel",
                                 model_graph_str(g, g->src[i].name), err);
        enum struct_role role = classify(g, i, out->layer[i], out->coll_size[i], cfg);
        out->role[i] = (uint8_t)role;
        out->by_role[role]++;
        out->role_ms[role] += (double)g->tasks[i].dur / 1e6;
    }
    launchers(g, n, out);
    if ((rc = check_grad_sync(cfg, out->grad_sync, err)))
        return rc;
    host_ops(g, n, out);
    return gemm_shapes(g, n, out, err);
}

int whatif_job_structure_recover(const struct model_graph *g, const struct trace_notes_set *notes,
                                 const struct job_config *cfg, struct job_structure *out, struct sc_error *err)
{
    struct trace_notes_set own = {0};
    atomic_fetch_add(&recoveries, 1);
    memset(out, 0, sizeof *out);
    out->world_size = -1;
    if (!g->job)
        return sc_error_set(err, SC_EINVAL, "the graph was not built from a trace");
    if (!notes) {
        int rc = trace_notes_of_graph(g, &own, err);
        if (rc)
            return rc;
        notes = &own;
    }
    assert(notes->n_ranks == g->n_ranks);
    int rc = recover(g, notes, cfg, out, err);
    trace_notes_set_release(&own);
    if (rc)
        whatif_job_structure_release(out);
    return rc;
}
