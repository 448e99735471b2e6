/* estimator/whatif/coll_placement.c: the collectives a traced step lacks,
 * placed as Megatron-LM runs them (coll_placement.h). */
#include "estimator/whatif/coll_placement.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/whatif/structure.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "common/vec.h"
#include "common/banned.h"

/* A layer's kernels back to back on one stream: [first, last] in the
 * stream's kernel list. */
struct pass {
    uint32_t first, last;
    int32_t layer;
    int gemms; /* at most MAX_GEMMS */
    int backward, transformer;
    int recomputed; /* a forward run again just before its backward (split_recomputed) */
};

/* One stream's kernels and passes. */
struct walk {
    const struct model_graph *g;
    const struct job_structure *st;
    int sp;
    uint32_t *k; /* the stream's kernels in order (task ids) */
    size_t n_k, cap_k;
    struct pass *p;
    size_t n_p, cap_p;
    struct coll_placement *out;
};

static int is_gemm(const struct walk *w, uint32_t ki)
{
    return w->g->tasks[w->k[ki]].sub == MODEL_KF_GEMM;
}

static int is_attention(const struct walk *w, uint32_t ki)
{
    unsigned sub = w->g->tasks[w->k[ki]].sub;
    return sub == MODEL_KF_ATTENTION || sub == MODEL_KF_SOFTMAX;
}

/* An attention kernel's name says it is the backward's. */
static int backward_name(const char *name)
{
    static const char *const words[] = {"bprop", "bwd", "backward", NULL};
    return model_kernel_name_has(name, words) || (name && strstr(name, "cutlassB"));
}

static int add(struct walk *w, uint32_t ki, int op, int tensor, int in_layer, const char *name)
{
    struct coll_placement *o = w->out;
    assert(ki < w->n_k);
    if (sc_vec_reserve((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
        return SC_ENOMEM;
    o->v[o->n++] = (struct tp_collective){w->k[ki], (uint8_t)op, (uint8_t)tensor, (uint8_t)in_layer, name};
    return SC_OK;
}

/* After the kernel before kernel ki on the stream (before ki). */
static uint32_t before(uint32_t ki)
{
    return ki ? ki - 1 : ki;
}

static int gemms_in(const struct walk *w, uint32_t from, uint32_t to, uint32_t *at, size_t max)
{
    size_t n = 0;
    for (uint32_t i = from; i <= to && to != UINT32_MAX; i++)
        if (is_gemm(w, i)) {
            if (n < max)
                at[n] = i;
            n++;
        }
    return (int)(n < max ? n : max);
}

/* The pass's attention kernel (its first), or UINT32_MAX. */
static uint32_t attention_of(const struct walk *w, const struct pass *p)
{
    assert(p->first <= p->last && p->last < w->n_k);
    for (uint32_t i = p->first; i <= p->last; i++)
        if (is_attention(w, i))
            return i;
    return UINT32_MAX;
}

#define MAX_GEMMS 64

static const char AR[] = "tensor-parallel all-reduce (what-if)", AG[] = "tensor-parallel all-gather (what-if)",
                  RS[] = "tensor-parallel reduce-scatter (what-if)",
                  REGATHER[] = "sequence-parallel input re-gather (what-if)";

/* Mark the kernels strictly between kernels a and b of the stream. */
static void mark_between(struct walk *w, uint32_t a, uint32_t b, uint8_t what)
{
    assert(b <= w->n_k);
    for (uint32_t i = a + 1; i < b; i++)
        if (!is_gemm(w, i))
            w->out->mlp_activation[w->k[i]] = what;
}

static int layer_forward(struct walk *w, const struct pass *p)
{
    uint32_t gm[MAX_GEMMS], a = attention_of(w, p);
    int n = gemms_in(w, p->first, p->last, gm, MAX_GEMMS), proj = 1;
    for (int i = 0; i < n; i++)
        if (a != UINT32_MAX && gm[i] > a) {
            proj = i;
            break;
        }
    int mlp = proj + 1 < n ? proj + 1 : n - 1;
    if (mlp < n - 1)
        mark_between(w, gm[mlp], gm[n - 1], COLL_MLP_FORWARD);
    if (!w->sp)
        return add(w, gm[proj], MODEL_COLL_ALLREDUCE, TP_TENSOR_ACTIVATION, 1, AR) ||
               add(w, gm[n - 1], MODEL_COLL_ALLREDUCE, TP_TENSOR_ACTIVATION, 1, AR);
    return add(w, before(gm[0]), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 1, AG) ||
           add(w, gm[proj], MODEL_COLL_REDUCESCATTER, TP_TENSOR_ACTIVATION, 1, RS) ||
           add(w, before(gm[mlp]), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 1, AG) ||
           add(w, gm[n - 1], MODEL_COLL_REDUCESCATTER, TP_TENSOR_ACTIVATION, 1, RS);
}

static int layer_backward(struct walk *w, const struct pass *p)
{
    uint32_t gm[MAX_GEMMS], a = attention_of(w, p);
    int n = gemms_in(w, p->first, p->last, gm, MAX_GEMMS), pre = n, qkv = n - 2;
    for (int i = 0; i < n; i++)
        if (a != UINT32_MAX && gm[i] > a) {
            pre = i; /* GEMMs before the attention's backward: the MLP's and the output projection's */
            qkv = i;
            break;
        }
    int mlp_in = pre >= 4 ? pre - 4 : 0, proj = pre >= 2 ? pre - 2 : 0;
    if (mlp_in >= 1)
        mark_between(w, gm[mlp_in - 1], gm[mlp_in], COLL_MLP_BACKWARD);
    if (!w->sp)
        return add(w, gm[mlp_in], MODEL_COLL_ALLREDUCE, TP_TENSOR_ACTIVATION, 1, AR) ||
               add(w, gm[qkv], MODEL_COLL_ALLREDUCE, TP_TENSOR_ACTIVATION, 1, AR);
    return add(w, before(gm[0]), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 1, AG) ||
           add(w, before(gm[mlp_in]), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 1, REGATHER) ||
           add(w, gm[mlp_in], MODEL_COLL_REDUCESCATTER, TP_TENSOR_ACTIVATION, 1, RS) ||
           add(w, before(gm[proj]), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 1, AG) ||
           add(w, before(gm[qkv]), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 1, REGATHER) ||
           add(w, gm[qkv], MODEL_COLL_REDUCESCATTER, TP_TENSOR_ACTIVATION, 1, RS);
}

/* The kernels between the last layer's forward and the first backward
 * (from, to), where a loss is computed: the output layer's and the cross
 * entropy's, all over the logits (vocabulary-parallel) but norms. */
static int loss_region(struct walk *w, uint32_t from, uint32_t to)
{
    uint32_t s = UINT32_MAX;
    for (uint32_t i = from; i <= to; i++) {
        unsigned sub = w->g->tasks[w->k[i]].sub;
        if (sub == MODEL_KF_SOFTMAX || sub == MODEL_KF_LOSS) {
            s = i;
            break;
        }
    }
    if (s == UINT32_MAX)
        return SC_OK; /* not the last pipeline stage */
    for (uint32_t i = from; i <= to; i++)
        w->out->vocab_parallel[w->k[i]] = w->g->tasks[w->k[i]].sub != MODEL_KF_NORMALIZATION;
    if (w->sp)
        for (uint32_t i = from; i < s; i++)
            if (is_gemm(w, i)) {
                if (add(w, before(i), MODEL_COLL_ALLGATHER, TP_TENSOR_ACTIVATION, 0,
                        "output layer all-gather (what-if)"))
                    return SC_ENOMEM;
                break;
            }
    for (int j = 0; j < 3; j++)
        if (add(w, s, MODEL_COLL_ALLREDUCE, TP_TENSOR_TOKEN_FP32, 0, "cross-entropy all-reduce (what-if)"))
            return SC_ENOMEM;
    for (uint32_t i = s + 1; i <= to; i++)
        if (is_gemm(w, i))
            return add(w, i, w->sp ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLREDUCE, TP_TENSOR_ACTIVATION, 0,
                       w->sp ? "output layer backward reduce-scatter (what-if)"
                             : "output layer backward all-reduce (what-if)");
    return SC_OK;
}

/* Whether kernels [from, to] of the stream hold a fused attention kernel
 * whose name says it is the backward's (1), the forward's (0), or none
 * (-1). */
static int attention_direction(const struct walk *w, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i <= to; i++)
        if (w->g->tasks[w->k[i]].sub == MODEL_KF_ATTENTION)
            return backward_name(model_graph_str(w->g, w->g->src[w->k[i]].name));
    return -1;
}

/* One more than the highest layer of the stream's passes. */
static int32_t layer_count(const struct walk *w)
{
    int32_t layers = 0;
    for (size_t j = 0; j < w->n_p; j++)
        layers = w->p[j].layer + 1 > layers ? w->p[j].layer + 1 : layers;
    return layers;
}

/* Under full recomputation a layer runs its forward again right before
 * its backward, on the same stream with nothing between: the two join in
 * one pass. Split such a pass where the layer's forward ends, as long as
 * the layer's first pass (its first micro-batch's forward): there, its
 * head has the forward's GEMMs and the rest at least twice as many (a
 * backward's), and a fused attention kernel in each is the forward's and
 * the backward's. */
static int split_recomputed(struct walk *w)
{
    int32_t layers = layer_count(w);
    size_t *first_pass = malloc((layers ? (size_t)layers : 1) * sizeof *first_pass); /* by layer */
    if (!first_pass)
        return SC_ENOMEM;
    for (int32_t l = 0; l < layers; l++)
        first_pass[l] = SIZE_MAX;
    for (size_t j = 0; j < w->n_p; j++) {
        size_t f = first_pass[w->p[j].layer];
        if (f == SIZE_MAX) {
            first_pass[w->p[j].layer] = j;
            continue;
        }
        uint32_t gm[MAX_GEMMS], len = w->p[f].last - w->p[f].first + 1, first = w->p[j].first, last = w->p[j].last;
        int gf = gemms_in(w, w->p[f].first, w->p[f].last, gm, MAX_GEMMS);
        if (last - first + 1 <= len || !gf)
            continue;
        uint32_t cut = first + len;
        if (gemms_in(w, first, cut - 1, gm, MAX_GEMMS) != gf || gemms_in(w, cut, last, gm, MAX_GEMMS) < 2 * gf ||
            attention_direction(w, first, cut - 1) == 1 || attention_direction(w, cut, last) == 0)
            continue;
        if (sc_vec_reserve((void **)&w->p, &w->cap_p, w->n_p + 1, sizeof *w->p)) {
            free(first_pass);
            return SC_ENOMEM;
        }
        memmove(&w->p[j + 2], &w->p[j + 1], (w->n_p - j - 1) * sizeof *w->p);
        w->n_p++;
        w->p[j].last = cut - 1;
        w->p[j].recomputed = 1;
        w->p[j + 1] = (struct pass){cut, last, w->p[j].layer, 0, 0, 0, 0};
        j++;
    }
    free(first_pass);
    return SC_OK;
}

/* Passes of one stream's kernels, classified. */
static int find_passes(struct walk *w)
{
    for (uint32_t i = 0; i < w->n_k; i++) {
        int32_t l = w->st->layer[w->k[i]];
        if (l < 0)
            continue;
        if (w->n_p && w->p[w->n_p - 1].layer == l && w->p[w->n_p - 1].last + 1 == i) {
            w->p[w->n_p - 1].last = i;
            continue;
        }
        if (sc_vec_reserve((void **)&w->p, &w->cap_p, w->n_p + 1, sizeof *w->p))
            return SC_ENOMEM;
        w->p[w->n_p++] = (struct pass){i, i, l, 0, 0, 0, 0};
    }
    if (split_recomputed(w))
        return SC_ENOMEM;
    /* each layer's fewest GEMMs in a pass (its forward's) */
    int32_t layers = layer_count(w);
    int *least = malloc((layers ? (size_t)layers : 1) * sizeof *least);
    if (!least)
        return SC_ENOMEM;
    for (int32_t l = 0; l < layers; l++)
        least[l] = MAX_GEMMS;
    for (size_t j = 0; j < w->n_p; j++) {
        uint32_t gm[MAX_GEMMS];
        w->p[j].gemms = gemms_in(w, w->p[j].first, w->p[j].last, gm, MAX_GEMMS);
        least[w->p[j].layer] = w->p[j].gemms < least[w->p[j].layer] ? w->p[j].gemms : least[w->p[j].layer];
    }
    for (size_t j = 0; j < w->n_p; j++) {
        struct pass *p = &w->p[j];
        uint32_t a = attention_of(w, p);
        int n = p->gemms, fewest = least[p->layer];
        p->transformer = n >= 4 && a != UINT32_MAX;
        if (a != UINT32_MAX && w->g->tasks[w->k[a]].sub == MODEL_KF_ATTENTION)
            p->backward = backward_name(model_graph_str(w->g, w->g->src[w->k[a]].name));
        else /* no fused attention kernel: a backward pass has twice the GEMMs */
            p->backward = 2 * n >= 3 * fewest && n > fewest;
    }
    free(least);
    return SC_OK;
}

/* An FSDP unit of kernels [a, b] of the stream (b = a - 1: none; a may
 * be n_k, at the stream's end). */
static int add_unit(const struct walk *w, struct coll_grads *c, uint32_t a, uint32_t b, int kind, int backward)
{
    assert(a <= w->n_k && b + 1 >= a && (b == a - 1 || b < w->n_k));
    if (sc_vec_reserve((void **)&c->units, &c->cap_units, c->n_units + 1, sizeof *c->units))
        return SC_ENOMEM;
    uint32_t prev = a ? w->k[a - 1] : MODEL_NONE;
    c->units[c->n_units++] = (struct coll_unit){a < w->n_k ? w->k[a] : MODEL_NONE, prev, b + 1 > a ? w->k[b] : prev,
                                                (uint8_t)kind, (uint8_t)backward};
    return SC_OK;
}

/* The kernel of [from, to) after which the output layer's backward
 * begins: the first softmax or loss kernel; UINT32_MAX when none (a stage
 * without the loss). */
static uint32_t loss_kernel(const struct walk *w, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        unsigned sub = w->g->tasks[w->k[i]].sub;
        if (sub == MODEL_KF_SOFTMAX || sub == MODEL_KF_LOSS)
            return i;
    }
    return UINT32_MAX;
}

/* The FSDP units of the stream's kernels before kernel `end` (the
 * optimizer's first, or n_k), into c (coll_placement.h). */
static int find_units(const struct walk *w, uint32_t end, struct coll_grads *c)
{
    uint32_t from = 0, lead = w->n_p ? w->p[0].first : 0; /* the step's first micro-batch's embedding kernels */
    int dir = -1; /* the last pass's: forward 0, backward 1 */
    for (size_t j = 0; j < w->n_p && w->p[j].first < end; j++) {
        const struct pass *p = &w->p[j];
        uint32_t last = p->last;
        int backward = p->backward || p->recomputed;
        if (p->recomputed && j + 1 < w->n_p && w->p[j + 1].backward && w->p[j + 1].layer == p->layer)
            last = w->p[++j].last; /* its backward: one unit */
        int rc = SC_OK;
        if (!backward && dir != 0) { /* a micro-batch's forward begins */
            uint32_t cut = p->first - from > lead ? p->first - lead : from;
            if (dir == 1)
                rc = add_unit(w, c, from, cut - 1, COLL_UNIT_EMBEDDING, 1);
            if (!rc)
                rc = add_unit(w, c, cut, p->first - 1, COLL_UNIT_EMBEDDING, 0);
        } else if (backward && dir == 0) { /* the loss between */
            uint32_t s = loss_kernel(w, from, p->first);
            if (s != UINT32_MAX)
                rc = add_unit(w, c, from, s, COLL_UNIT_OUTPUT, 0) || add_unit(w, c, s + 1, p->first - 1, COLL_UNIT_OUTPUT, 1);
        }
        if (rc || add_unit(w, c, p->first, last, COLL_UNIT_LAYER, backward))
            return SC_ENOMEM;
        from = last + 1;
        dir = backward;
    }
    if (dir == 1 && add_unit(w, c, from, end - 1, COLL_UNIT_EMBEDDING, 1))
        return SC_ENOMEM;
    return SC_OK;
}

/* The host's launch of kernel task i, else i. */
static uint32_t launch_of(const struct model_graph *g, uint32_t i)
{
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_LAUNCH)
            return g->edges[e].from;
    return i;
}

/* Where the last micro-batch's gradients become ready on this stream
 * (its last backward passes, the rank's layers' worth, and the kernels
 * around the optimizer's first), into *c. */
static int grads_ready(struct walk *w, int layers, struct coll_grads *c)
{
    uint32_t opt = UINT32_MAX;
    for (uint32_t i = 0; i < w->n_k; i++)
        if (whatif_struct_is_optimizer(w->g, w->st, w->k[i])) {
            opt = i;
            break;
        }
    size_t n = 0, last = w->n_p;
    for (size_t j = w->n_p; j-- > 0 && n < (size_t)layers;) {
        const struct pass *p = &w->p[j];
        if (!p->backward || (opt != UINT32_MAX && p->first > opt))
            continue;
        n++;
        last = j;
    }
    free(c->ready);
    free(c->units);
    memset(c, 0, sizeof *c);
    if (n && !(c->ready = malloc(n * sizeof *c->ready)))
        return SC_ENOMEM;
    if (find_units(w, opt == UINT32_MAX ? (uint32_t)w->n_k : opt, c))
        return SC_ENOMEM;
    c->start = w->n_k ? launch_of(w->g, w->k[0]) : MODEL_NONE;
    for (size_t j = last; j < w->n_p && c->n < n; j++)
        if (w->p[j].backward && (opt == UINT32_MAX || w->p[j].first < opt))
            c->ready[c->n++] = w->k[w->p[j].last];
    c->kernels = w->n_k;
    c->first_kernel = w->n_k ? w->k[0] : MODEL_NONE;
    c->first_forward = MODEL_NONE;
    for (size_t j = 0; j < w->n_p && c->first_forward == MODEL_NONE; j++)
        if (!w->p[j].backward)
            c->first_forward = w->k[w->p[j].first];
    c->optimizer_begin = opt == UINT32_MAX ? MODEL_NONE : w->k[opt];
    c->backward_end = w->n_k ? w->k[opt == UINT32_MAX ? w->n_k - 1 : before(opt)] : MODEL_NONE;
    return SC_OK;
}

static int place_stream(struct walk *w)
{
    int32_t lo = INT32_MAX;
    if (find_passes(w))
        return SC_ENOMEM;
    for (size_t j = 0; j < w->n_p; j++)
        if (w->p[j].transformer) {
            lo = w->p[j].layer < lo ? w->p[j].layer : lo;
            w->out->forward_passes += !w->p[j].backward;
            w->out->backward_passes += w->p[j].backward;
        }
    for (size_t j = 0; j < w->n_p; j++) {
        const struct pass *p = &w->p[j];
        if (!p->transformer)
            continue;
        uint32_t gap_from = j ? w->p[j - 1].last + 1 : 0;
        /* the embedding's output: after the work before the first layer
         * (not before its forward run again for its backward) */
        if (!p->backward && !p->recomputed && p->layer == lo && p->first > gap_from &&
            add(w, p->first - 1, w->sp ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLREDUCE, TP_TENSOR_ACTIVATION, 0,
                w->sp ? "embedding reduce-scatter (what-if)" : "embedding all-reduce (what-if)"))
            return SC_ENOMEM;
        if (p->backward ? layer_backward(w, p) : layer_forward(w, p))
            return SC_ENOMEM;
        /* between the last layer's forward and the first backward (or the
         * forward run again before it) */
        const struct pass *q = j + 1 < w->n_p ? &w->p[j + 1] : NULL;
        if (!p->backward && q && q->transformer && (q->backward || q->recomputed) && q->first > p->last + 1 &&
            loss_region(w, p->last + 1, q->first - 1))
            return SC_ENOMEM;
    }
    return SC_OK;
}

int whatif_coll_placement_find(const struct model_graph *g, const struct job_structure *st, int sequence_parallel,
                        struct coll_placement *out, struct sc_error *err)
{
    struct walk w = {g, st, sequence_parallel, NULL, 0, 0, NULL, 0, 0, out};
    int rc = SC_OK;
    memset(out, 0, sizeof *out);
    out->n_ranks = g->n_ranks;
    out->grads = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *out->grads);
    out->mlp_activation = calloc(g->n_tasks ? g->n_tasks : 1, 1);
    if (!(out->vocab_parallel = calloc(g->n_tasks ? g->n_tasks : 1, 1)) || !out->grads || !out->mlp_activation)
        rc = SC_ENOMEM;
    for (size_t r = 0; !rc && r < g->n_ranks; r++)
        out->grads[r].backward_end = out->grads[r].optimizer_begin = out->grads[r].first_kernel =
            out->grads[r].first_forward = out->grads[r].start = MODEL_NONE;
    for (size_t r = 0; r < g->n_res && !rc; r++) {
        const struct model_resource *res = &g->res[r];
        if (!res->gpu)
            continue;
        w.n_k = w.n_p = 0;
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            if (g->tasks[i].cls != MODEL_TASK_KERNEL)
                continue;
            if (sc_vec_reserve((void **)&w.k, &w.cap_k, w.n_k + 1, sizeof *w.k)) {
                rc = SC_ENOMEM;
                break;
            }
            w.k[w.n_k++] = i;
        }
        if (!rc)
            rc = place_stream(&w);
        /* a rank's gradients: those of its stream running the most kernels */
        if (!rc && w.n_k > out->grads[res->rank].kernels)
            rc = grads_ready(&w, st->layers_per_rank, &out->grads[res->rank]);
    }
    free(w.k);
    free(w.p);
    if (rc) {
        whatif_coll_placement_release(out);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    return SC_OK;
}

int whatif_coll_placement_tp_check(const struct coll_placement *p, const struct job_structure *st, struct sc_error *err)
{
    if (p->forward_passes)
        return SC_OK;
    return sc_error_set(err, SC_EINVAL,
                        "set.tp: the trace shows no transformer layer (%d layers per rank found, %s; none with the "
                        "four GEMMs of attention and MLP and an attention kernel), so there is nowhere to place "
                        "tensor parallelism's collectives",
                        st->layers_per_rank, whatif_struct_layer_source_name(st->layer_source));
}

void whatif_coll_placement_release(struct coll_placement *p)
{
    free(p->v);
    free(p->vocab_parallel);
    free(p->mlp_activation);
    for (size_t r = 0; p->grads && r < p->n_ranks; r++) {
        free(p->grads[r].ready);
        free(p->grads[r].units);
    }
    free(p->grads);
    memset(p, 0, sizeof *p);
}
