/* estimator/spec/memory.c: model states, activations and in-flight micro-batches
 * per pipeline stage (the model is described in memory.h). */
#include "estimator/spec/memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/placement.h"
#include "common/banned.h"

/* Bytes of a stored weight or activation value: 4 in fp32 training, else
 * 2 (fp8 and fp4 training keep 16-bit copies). */
static double value_bytes(enum hw_dtype dtype)
{
    return dtype == HW_FP32 || dtype == HW_TF32 ? 4 : 2;
}

/* Bytes of a GEMM input kept for the backward: Transformer Engine's fp8
 * and fp4 linear layers keep the quantised copy their weight-gradient
 * GEMM reads (fp8: a byte; NVFP4: half a byte and an fp8 scale per 16),
 * not the 16-bit tensor; Megatron's step only (PyTorch's eager loop keeps
 * its 16-bit values). */
static double gemm_input_bytes(const struct est_spec *s)
{
    if (s->options.framework == EST_FRAMEWORK_MEGATRON && s->options.dtype == HW_FP8)
        return 1;
    if (s->options.framework == EST_FRAMEWORK_MEGATRON && s->options.dtype == HW_FP4)
        return 0.5 + 1.0 / 16;
    return value_bytes(s->options.dtype);
}

void spec_state_bytes(const struct est_options *o, struct est_state_bytes *out)
{
    if (o->dtype == HW_FP32) /* the weights are the master: Adam's two moments beside them */
        *out = (struct est_state_bytes){4, 4, 8, 0};
    else if (o->master_weights == EST_MASTER_BF16) /* weights, gradients, moments in bf16 */
        *out = (struct est_state_bytes){2, 2, 4, 0};
    else /* 16-bit weights and gradients (fp32 with grad_reduce_in_fp32); fp32 master weights,
            momentum, variance */
        *out = (struct est_state_bytes){2, o->grad_reduce_in_fp32 ? 4 : 2, 12, 1};
}

double spec_optimizer_step_bytes(const struct est_state_bytes *b)
{
    /* the gradient read, the state read and written, and the weights
     * written from the master (or, without one, read and written) */
    return b->gradients + 2 * b->optimizer + (b->master ? 1 : 2) * b->weights;
}

void spec_model_states(double params, const struct est_state_bytes *b, int zero_stage, int64_t shards,
                      struct est_model_states *out)
{
    double d = (double)shards;
    out->weights = params * b->weights / (zero_stage >= 3 ? d : 1);
    out->gradients = params * b->gradients / (zero_stage >= 2 ? d : 1);
    out->optimizer = params * b->optimizer / (zero_stage >= 1 ? d : 1);
}

/* Tokens of one micro-batch on one GPU before any tensor-parallel split. */
static double micro_batch_tokens(const struct est_spec *s)
{
    return (double)(s->parallel.micro_batch * s->model.seq) / (double)s->parallel.cp;
}

/* Bytes of a norm's input, the residual stream: fp32 where autocast runs
 * over fp32 weights (the PyTorch framework with fp32 master weights: the
 * embedding's output and every residual sum are fp32), else a value's. */
static double residual_bytes(const struct est_spec *s)
{
    const struct est_options *o = &s->options;
    return o->framework == EST_FRAMEWORK_PYTORCH && o->master_weights == EST_MASTER_FP32 ? 4
                                                                                         : value_bytes(o->dtype);
}

/* What tensors replicated across tp are divided by: tp with sequence
 * parallelism, else 1. */
static double replicated_split(const struct est_spec *s)
{
    return s->options.sequence_parallel ? (double)s->parallel.tp : 1;
}

void spec_layer_activations(const struct est_spec *s, int64_t layer, struct est_layer_activations *out)
{
    const struct est_model *m = &s->model;
    double a = value_bytes(s->options.dtype), g = gemm_input_bytes(s), t = (double)s->parallel.tp,
           T = micro_batch_tokens(s);
    double h = (double)m->hidden, q = (double)(m->heads * m->head_dim),
           kv = (double)(m->kv_heads * m->head_dim), o = q, r = replicated_split(s), latents = 0;
    const struct est_mla *la = &m->mla;
    if (la->kv_lora_rank) {
        /* the values narrower than the keys; the latents kept as their
         * norms' inputs and the up projections' (GEMM) inputs, and the
         * keys' shared rotary part */
        kv = (double)m->heads * (double)(m->head_dim + la->v_head_dim) / 2;
        o = (double)(m->heads * la->v_head_dim);
        latents = T * ((double)(la->q_lora_rank + la->kv_lora_rank) * (a + g) + (double)la->qk_pos_emb_head_dim * a) / r;
    }
    /* the activation's input (gated: gate and up) and output; PyTorch's
     * unfused SwiGLU also keeps silu(gate) for the product's backward */
    double mats = m->mlp == EST_MLP_GELU ? 2 : s->options.framework == EST_FRAMEWORK_PYTORCH ? 4 : 3;
    double masks = m->dropout ? 2 : 0;

    /* replicated: two norm inputs (the residual stream), the QKV and MLP
     * inputs (GEMM inputs: g bytes), two dropout masks (1) */
    double replicated = T * h * (2 * residual_bytes(s) + 2 * g + masks) / r;
    /* split by tp: Q, K, V, the output projection's input (a GEMM's) */
    double attention = T * ((q + 2 * kv) * a + o * g) / t + latents;
    /* unfused: the softmax output (in fp32 where PyTorch runs the softmax,
     * spec_fused_softmax), its dropout mask and the dropout output (b x
     * heads x s x s/cp each); flash: only the softmax statistics, one fp32
     * log-sum-exp per query row */
    double rows = (double)s->parallel.micro_batch * (double)m->heads * (double)m->seq /
                  (double)s->parallel.cp / t;
    double probs = spec_fused_softmax(s) ? a : 4, dropped = m->dropout ? a + 1 : 0;
    double scores = s->options.attention == EST_ATTENTION_UNFUSED ? (probs + dropped) * rows * (double)m->seq
                                                                   : 4 * rows;
    double mlp;
    if (spec_model_layer_is_moe(m, layer)) {
        const struct est_moe *e = &m->moe;
        double etp = (double)s->parallel.etp;
        /* routed tokens gathered over etp ranks that hold T / tp each */
        double routed = T * (double)e->top_k * etp / t;
        mlp = T * (double)(e->shared_experts * e->ffn) * ((mats - 1) * a + g) / t +
              routed * (h * g + (double)e->ffn * ((mats - 1) * a + g) / etp);
    } else { /* the activation's output is the second matrix's input */
        mlp = T * (double)m->ffn * ((mats - 1) * a + g) / t;
    }
    out->full = replicated + attention + scores + mlp;
    switch (s->options.recompute) {
    case EST_RECOMPUTE_NONE:
    case EST_RECOMPUTE_AUTO: /* spec_memory_estimate resolves it first */
        out->kept = out->full;
        break;
    case EST_RECOMPUTE_SELECTIVE: out->kept = out->full - scores; break;
    case EST_RECOMPUTE_FULL: out->kept = T * h * residual_bytes(s) / r; break;
    }
}

/* A layer's parameters and activations depend on the layer only through
 * whether it is an MoE layer: each kind's, made once per estimate, with
 * its parameters per GPU (dense: split by tp; experts: by ep x etp). */
struct layer_kinds {
    struct est_layer_activations acts[2];
    double dense[2], experts[2];
    int moe_model; /* any MoE layer: else every layer is of kind 0 */
};

/* The kind of layer i (1: MoE). */
static int kind_of(const struct est_spec *s, const struct layer_kinds *k, int64_t i)
{
    return k->moe_model && spec_model_layer_is_moe(&s->model, i);
}

static void layer_kinds_init(const struct est_spec *s, struct layer_kinds *k)
{
    const struct est_parallel *p = &s->parallel;
    double t = (double)p->tp, experts_split = (double)(p->ep * p->etp);
    int done[2] = {0, 0};
    memset(k, 0, sizeof *k);
    k->moe_model = s->model.moe.experts > 0;
    for (int64_t i = 0; i < s->model.layers && !(done[0] && (done[1] || !k->moe_model)); i++) {
        int moe = kind_of(s, k, i);
        if (!done[moe]) {
            struct est_layer_params lp;
            spec_layer_params(&s->model, i, &lp);
            k->dense[moe] = spec_layer_dense_per_rank(&lp, t);
            k->experts[moe] = lp.experts / experts_split;
            spec_layer_activations(s, i, &k->acts[moe]);
            done[moe] = 1;
        }
    }
}

/* Per-GPU parameters of one virtual stage. */
static void virtual_stage_params(const struct est_spec *s, const struct layer_kinds *kinds,
                                 const struct est_stage_layers *v, struct est_stage_params *out)
{
    const struct est_model *m = &s->model;
    double embedding = (double)m->vocab * (double)m->hidden / (double)s->parallel.tp;
    memset(out, 0, sizeof *out);
    for (int64_t i = v->first_layer; i < v->first_layer + v->layers; i++) {
        int k = kind_of(s, kinds, i);
        double dense = kinds->dense[k], experts = kinds->experts[k];
        out->dense += dense;
        out->experts += experts;
        if (dense + experts > out->largest_layer)
            out->largest_layer = dense + experts;
    }
    double head = v->loss ? (m->tied_embeddings && v->embedding ? 0 : embedding) + (double)m->hidden : 0;
    if (v->embedding)
        out->dense += embedding;
    /* output layer (a copy of the embedding when tied), final norm */
    out->dense += head;
    out->largest_layer = fmax(out->largest_layer, fmax(v->embedding ? embedding : 0, head));
}

/* The logits' working set per token and vocabulary entry on the stage
 * holding the loss, held at its peak: Megatron's vocab-parallel cross
 * entropy keeps the fp32 softmax and turns it into the gradient in place,
 * beside the 16-bit logits (forward) or the gradient's 16-bit cast
 * (backward); PyTorch's F.cross_entropy over fp32 logits keeps the
 * log-softmax, and its backward holds it with two fp32 gradients (the
 * NLL's and the log-softmax's). */
static double loss_bytes(const struct est_spec *s)
{
    double a = value_bytes(s->options.dtype);
    return s->options.framework == EST_FRAMEWORK_PYTORCH ? 12 : 4 + (a < 4 ? a : 0);
}

/* Activation bytes of one virtual stage's forward pass of one micro-batch
 * (kept: under full recomputation of N layers of each chunk, its first N
 * layers' inputs and the others' full activations), and the most it holds
 * beyond them for a while (transient): the largest recomputed layer's full
 * activations while it is recomputed, the loss's working set. */
static void virtual_stage_activations(const struct est_spec *s, const struct layer_kinds *kinds,
                                      const struct est_stage_layers *v, double *kept, double *transient)
{
    const struct est_model *m = &s->model;
    double a = value_bytes(s->options.dtype), T = micro_batch_tokens(s), h = (double)m->hidden,
           r = replicated_split(s), t = (double)s->parallel.tp;
    *kept = *transient = 0;
    for (int64_t i = 0; i < v->layers; i++) {
        struct est_layer_activations la = kinds->acts[kind_of(s, kinds, v->first_layer + i)];
        int recomputed = spec_layer_recomputed(s, i); /* kept is full without recomputation */
        *kept += recomputed ? la.kept : la.full;
        if (recomputed && s->options.recompute == EST_RECOMPUTE_FULL && la.full > *transient)
            *transient = la.full;
    }
    if (v->embedding && m->dropout) /* the embedding's dropout mask */
        *kept += T * h / r;
    if (v->loss) { /* final norm and output layer inputs; the logits */
        *kept += T * h * (residual_bytes(s) + a) / r;
        *transient = fmax(*transient, loss_bytes(s) * T * (double)m->vocab / t);
    }
}

/* What chunk c of a rank holds per forward pass in flight (kept[c]), and
 * its sums: pre[k] over chunks 0 .. k - 1, suf[k] over chunks vpp - k ..
 * vpp - 1 (vpp + 1 each). */
struct chunk_kept {
    double *kept, *pre, *suf;
};

static void chunk_sums(int64_t vpp, struct chunk_kept *k)
{
    k->pre[0] = k->suf[0] = 0;
    for (int64_t c = 0; c < vpp; c++) {
        k->pre[c + 1] = k->pre[c] + k->kept[c];
        k->suf[c + 1] = k->suf[c] + k->kept[vpp - 1 - c];
    }
}

/* Activations held after `fwd` forward and `bwd` backward passes.
 * Megatron runs pp micro-batches of chunk 0, then the same pp of chunk 1,
 * ...: of the first n forward passes, n / (pp x vpp) x pp are of each
 * chunk, and of the rest r = n % (pp x vpp), pp of each chunk before
 * r / pp and r % pp of that one; the first n backward passes hold as many
 * of chunk vpp - 1 - c. */
static double held_after(int64_t fwd, int64_t bwd, int64_t pp, int64_t vpp, const struct chunk_kept *k)
{
    if (vpp == 1) /* one chunk: every pass is of it */
        return k->kept[0] * (double)(fwd - bwd);
    int64_t group = pp * vpp, fw = fwd / group * pp, fr = fwd % group, bw = bwd / group * pp, br = bwd % group;
    int64_t qf = fr / pp, qb = br / pp;
    return (double)(fw - bw) * k->pre[vpp] + (double)pp * (k->pre[qf] - k->suf[qb]) +
           (double)(fr % pp) * k->kept[qf] - (double)(br % pp) * k->kept[vpp - 1 - qb];
}

/* The peak of activations pipeline rank r holds over a step of m
 * micro-batches, and how many forward passes it holds then. Megatron's
 * order: W warm-up forward passes (1F1B: pp - r - 1; interleaved: 2(pp -
 * r - 1) + (vpp - 1)pp; at most m x vpp), then steady pairs, each one
 * forward then one backward, then the rest of the backward passes. The
 * peak is right after a steady forward, with W + 1 passes held; which
 * chunks they are of repeats every pp x vpp pairs. From pair i to pair i +
 * 1 the rank gains forward pass W + 1 + i's chunk and frees backward pass
 * i's, which change only where a run of pp passes of one chunk starts: the
 * peak is at such a pair (where the gain stops outweighing the loss) or at
 * the first or last, so those are all looked at. */
static double peak_held(int64_t pp, int64_t vpp, int64_t m, int64_t r, const struct chunk_kept *kept,
                        int64_t *passes)
{
    int64_t total = m * vpp, group = pp * vpp;
    int64_t warmup = vpp > 1 ? 2 * (pp - r - 1) + (vpp - 1) * pp : pp - r - 1;
    if (warmup >= total) {
        *passes = total;
        return held_after(total, 0, pp, vpp, kept);
    }
    int64_t steady = total - warmup, span = steady < group ? steady : group;
    double peak = held_after(warmup + 1, 0, pp, vpp, kept);
    *passes = warmup + 1;
    /* pair i holds forward passes 0 .. warmup + i and backward 0 .. i - 1;
     * backward runs start at pairs 0, pp, ..., forward runs where
     * warmup + 1 + i is a multiple of pp */
    int64_t offset = (pp - (warmup + 1) % pp) % pp;
    for (int64_t start = 0; start < (offset ? 2 : 1); start++) {
        for (int64_t i = start ? offset : 0; i < span; i += pp) {
            double held = held_after(warmup + 1 + i, i, pp, vpp, kept);
            if (held > peak)
                peak = held;
        }
    }
    double last = held_after(warmup + span, span - 1, pp, vpp, kept);
    return last > peak ? last : peak;
}

int spec_memory_estimate(const struct est_spec *s, double hbm_gb, struct est_memory *out,
                        struct sc_error *err)
{
    return spec_memory_estimate_like(s, NULL, hbm_gb, 0, out, err);
}

/* The peak of one stage: its states and activations together, except in
 * a PyTorch loop, where zero_grad(set_to_none=True) frees the gradients
 * between steps: the backward allocates them while it frees the
 * activations (and autocast's 16-bit weight copies), so the peak is the
 * larger of its start (no gradients) and its end (no activations). */
static double stage_total(const struct est_spec *s, const struct est_state_bytes *b,
                          const struct est_stage_memory *st)
{
    const struct est_model_states *m = &st->states;
    double all = m->weights + m->gradients + m->optimizer;
    if (s->options.framework == EST_FRAMEWORK_MEGATRON)
        return all + st->activations;
    return fmax(all - m->gradients + st->activations, all - (b->master ? m->weights : 0));
}

static int estimate_like(const struct est_spec *s, const struct est_memory *like, double hbm_gb, int until_over,
                         struct est_memory *out, struct sc_error *err)
{
    const struct est_parallel *p = &s->parallel;
    int64_t pp = p->pp, vpp = p->vpp, nv = pp * vpp, m = spec_micro_batches(s);
    double dense_shards = (double)(p->fsdp_shard ? p->fsdp_shard : p->dp * p->cp),
           expert_shards = (double)(p->tp * p->cp * p->dp) / (double)(p->ep * p->etp);
    int zero = (int)s->options.zero_stage, rc;
    int64_t known = like ? like->n_stages : 0; /* the stages `like` gives */
    struct layer_kinds kinds;
    struct est_stage_layers *place = NULL;
    double *kept = NULL; /* per chunk of one rank, and its sums (struct chunk_kept) */
    struct chunk_kept ck;
    struct est_state_bytes b;
    spec_state_bytes(&s->options, &b);
    memset(out, 0, sizeof *out);
    out->recompute = s->options.recompute;
    out->recompute_layers = s->options.recompute_layers;
    out->capacity_gb = hbm_gb * (1 - EST_MEMORY_RESERVE_FRACTION) - EST_MEMORY_RESERVE_GB;
    out->stages = calloc((size_t)pp, sizeof *out->stages);
    if (!out->stages)
        return sc_error_set(err, SC_ENOMEM, "out of memory for %lld pipeline stages", (long long)pp);
    if (known < pp) { /* some stages to model */
        place = calloc((size_t)nv, sizeof *place);
        kept = calloc((size_t)(3 * vpp + 2), sizeof *kept);
        rc = !place || !kept ? sc_error_set(err, SC_ENOMEM, "out of memory for %lld pipeline stages", (long long)pp)
                             : spec_place_layers((int)s->model.layers, (int)pp, (int)vpp, place, err);
        if (rc) {
            free(place);
            free(kept);
            spec_memory_release(out);
            return rc;
        }
        ck = (struct chunk_kept){kept, kept + vpp, kept + 2 * vpp + 1};
        layer_kinds_init(s, &kinds);
    }
    for (int64_t r = 0; r < pp; r++) {
        struct est_stage_memory *st = &out->stages[r];
        struct est_stage_params sp = {0};
        double transient = 0;
        st->stage = r;
        if (r < known) { /* the same parameters and activations: they do not depend on ZeRO */
            sp = like->stages[r].params;
            st->activations = like->stages[r].activations;
            st->in_flight = like->stages[r].in_flight;
        } else {
            for (int64_t c = 0; c < vpp; c++) {
                struct est_stage_params chunk;
                double held;
                virtual_stage_params(s, &kinds, &place[c * pp + r], &chunk);
                sp.dense += chunk.dense;
                sp.experts += chunk.experts;
                if (chunk.largest_layer > sp.largest_layer)
                    sp.largest_layer = chunk.largest_layer;
                virtual_stage_activations(s, &kinds, &place[c * pp + r], &kept[c], &held);
                transient = fmax(transient, held);
            }
            chunk_sums(vpp, &ck);
            st->activations = peak_held(pp, vpp, m, r, &ck, &st->in_flight) + transient;
        }
        st->params = sp;

        struct est_model_states dense, experts;
        spec_model_states(sp.dense, &b, zero, (int64_t)dense_shards, &dense);
        spec_model_states(sp.experts, &b, zero, (int64_t)expert_shards, &experts);
        st->states.weights = dense.weights + experts.weights;
        st->states.gradients = dense.gradients + experts.gradients;
        st->states.optimizer = dense.optimizer + experts.optimizer;
        if (zero >= 3) /* the layer computing and the one prefetched, gathered */
            st->states.weights += 2 * sp.largest_layer * b.weights;
        st->total = stage_total(s, &b, st);
        if (st->total > out->stages[out->worst_stage].total)
            out->worst_stage = r;
        out->n_stages = r + 1;
        if (until_over && st->total / 1e9 > out->capacity_gb)
            break; /* does not fit: all a check needs */
    }
    free(place);
    free(kept);
    out->gb_per_gpu = out->stages[out->worst_stage].total / 1e9;
    out->fits = out->gb_per_gpu <= out->capacity_gb;
    return SC_OK;
}

int spec_memory_estimate_like(const struct est_spec *s, const struct est_memory *like, double hbm_gb,
                             int until_over, struct est_memory *out, struct sc_error *err)
{
    if (s->options.recompute != EST_RECOMPUTE_AUTO)
        return estimate_like(s, like, hbm_gb, until_over, out, err);
    /* the least recomputation that fits: none, selective, full of 1, 2,
     * ... layers of each chunk, a check of each that does not, stopped at
     * its first stage over (until_over); then full of all, whatever it
     * needs */
    struct est_spec c = *s;
    int64_t most = spec_chunk_layers_most(s);
    int rc;
    c.options.recompute_layers = 0;
    for (c.options.recompute = EST_RECOMPUTE_NONE;;) {
        int last = c.options.recompute == EST_RECOMPUTE_FULL && !c.options.recompute_layers;
        if ((rc = estimate_like(&c, NULL, hbm_gb, last ? until_over : 1, out, err)) || out->fits || last)
            return rc;
        spec_memory_release(out);
        if (c.options.recompute == EST_RECOMPUTE_NONE) {
            c.options.recompute = EST_RECOMPUTE_SELECTIVE;
        } else if (c.options.recompute == EST_RECOMPUTE_SELECTIVE) {
            c.options.recompute = EST_RECOMPUTE_FULL;
            c.options.recompute_layers = most > 1; /* 1 layer first; with chunks of one, all */
        } else if (++c.options.recompute_layers >= most) {
            c.options.recompute_layers = 0; /* as many as the largest chunk holds: all */
        }
    }
}

void spec_memory_chosen_spec(const struct est_spec *s, const struct est_memory *m, struct est_spec *out)
{
    *out = *s;
    out->options.recompute = m->recompute;
    out->options.recompute_layers = m->recompute_layers;
}

int spec_memory_resolve_recompute(const struct est_spec *s, double hbm_gb, struct est_spec *out,
                               struct sc_error *err)
{
    struct est_memory m;
    int rc;
    *out = *s;
    if (s->options.recompute != EST_RECOMPUTE_AUTO)
        return SC_OK;
    if ((rc = spec_memory_estimate(s, hbm_gb, &m, err)))
        return rc;
    spec_memory_chosen_spec(s, &m, out);
    spec_memory_release(&m);
    return SC_OK;
}

void spec_memory_release(struct est_memory *m)
{
    free(m->stages);
    memset(m, 0, sizeof *m);
}

void spec_memory_fit_text(const struct est_memory *m, char *buf, size_t n)
{
    snprintf(buf, n, "pipeline stage %lld needs %.1f GB per GPU, %s the %.1f GB usable",
             (long long)m->worst_stage, m->gb_per_gpu, m->fits ? "within" : "more than",
             m->capacity_gb);
}
