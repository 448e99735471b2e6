/* estimator/synth/synth_ops.c: the operations of one layer of a synthesised
 * step, and of the embedding, the loss and the optimizer, with their costs
 * (synth_internal.h).
 *
 * Computed once per kind of layer (dense, MoE) and direction, as lists the
 * emitter (synth_emit.c) then replays for every pass: GEMMs and attention
 * timed by the kernel model, memory-bound kernels by bytes moved,
 * collectives by the collective model on the spec's parallel groups. Apart
 * from the schedule because what a layer costs does not depend on where
 * the schedule puts it. */
#include "estimator/synth/synth_internal.h"

#include <math.h>

#include "common/vec.h"
#include "estimator/synth/quant.h"
#include "model/kernel_family.h"
#include "common/banned.h"

static int op_push(struct synth *y, struct oplist *l, const struct op *o)
{
    if (y->failed)
        return -1;
    if (sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        y->failed = sc_error_set(y->err, SC_ENOMEM, "out of memory synthesising the step");
        return -1;
    }
    l->v[l->n++] = *o;
    return 0;
}

/* A GEMM in dtype dt. */
static void gemm_in(struct synth *y, struct oplist *l, const char *name, double m, double n, double k,
                    double batch, enum hw_dtype dt)
{
    struct gemm_estimate e;
    struct gemm_shape g = {m, n, k, batch, dt};
    if (y->failed)
        return;
    if (cost_kernel_gemm(&y->c->kernel, y->hw, &g, &e, y->err)) {
        y->failed = sc_error_prefix(y->err, "%s", name);
        return;
    }
    op_push(y, l, &(struct op){name, MODEL_TASK_KERNEL, MODEL_KF_GEMM, OP_PLAIN, 1, synth_ns(e.time_us), 0, 0,
                               2 * m * n * k * batch});
}

/* A GEMM of a transformer layer: in the spec's dtype. */
static void gemm(struct synth *y, struct oplist *l, const char *name, double m, double n, double k,
                 double batch)
{
    gemm_in(y, l, name, m, n, k, batch, y->sh.dt);
}

/* The two GEMMs of a GEMM's backward in dtype dt: input gradient and
 * weight gradient. */
static void gemm_bwd_in(struct synth *y, struct oplist *l, const char *dgrad, const char *wgrad, double m,
                        double n, double k, double batch, enum hw_dtype dt)
{
    gemm_in(y, l, dgrad, m, k, n, batch, dt);
    gemm_in(y, l, wgrad, k, n, m, batch, dt);
}

static void gemm_bwd(struct synth *y, struct oplist *l, const char *dgrad, const char *wgrad, double m,
                     double n, double k, double batch)
{
    gemm_bwd_in(y, l, dgrad, wgrad, m, n, k, batch, y->sh.dt);
}

static void mem_bytes(struct synth *y, struct oplist *l, const char *name, int family, double bytes)
{
    op_push(y, l, &(struct op){name, MODEL_TASK_KERNEL, (uint8_t)family, OP_PLAIN, 1,
                               synth_ns(cost_kernel_memory_us(&y->c->kernel, y->hw, bytes)), 0, 0});
}

static void mem(struct synth *y, struct oplist *l, const char *name, int family,
                enum kernel_mem_kind kind, double elements)
{
    mem_bytes(y, l, name, family,
              cost_kernel_mem_bytes(kind, elements, y->sh.dt16, HW_FP32));
}

/* A linear layer's bias gradient: the output gradient summed over tokens.
 * GPT-style models (plain MLP) have biases unless model.bias says they
 * were built without; gated (Llama-style) ones none. */
static void bias_grad(struct synth *y, struct oplist *l, const char *name, double tokens, double n)
{
    if (y->s->model.mlp == EST_MLP_GELU && y->s->model.bias)
        mem_bytes(y, l, name, MODEL_KF_REDUCTION, tokens * n * y->sh.B);
}

/* A norm's backward: the input gradient, then its weights' gradient
 * reduced over tokens. */
static void norm_bwd_width(struct synth *y, struct oplist *l, const char *name, double tokens, double width)
{
    mem(y, l, name, MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_BWD, tokens * width);
    mem_bytes(y, l, "norm weight gradient", MODEL_KF_NORMALIZATION, 2 * tokens * width * y->sh.B);
}

static void norm_bwd(struct synth *y, struct oplist *l, const char *name, double tokens)
{
    norm_bwd_width(y, l, name, tokens, y->sh.h);
}

int64_t synth_coll_ns(struct synth *y, enum model_coll_op op, const struct coll_group *g, double bytes)
{
    struct coll_estimate e;
    if (y->failed || g->ranks <= 1)
        return 0;
    for (unsigned i = 0; i < COLL_MEMO && i < y->n_coll_memo; i++)
        if (y->coll_memo[i].op == (int)op && y->coll_memo[i].ranks == g->ranks &&
            y->coll_memo[i].per_domain == g->ranks_per_domain && y->coll_memo[i].bytes == bytes)
            return y->coll_memo[i].ns;
    if (cost_coll_estimate(&y->c->coll, op, g, bytes, &e, y->err)) {
        y->failed = y->err->code;
        return 0;
    }
    unsigned slot = y->n_coll_memo++ % COLL_MEMO;
    y->coll_memo[slot].op = (int)op;
    y->coll_memo[slot].ranks = g->ranks;
    y->coll_memo[slot].per_domain = g->ranks_per_domain;
    y->coll_memo[slot].bytes = bytes;
    y->coll_memo[slot].ns = synth_ns(e.time_us);
    return y->coll_memo[slot].ns;
}

static void coll(struct synth *y, struct oplist *l, const char *name, enum model_coll_op op,
                 const struct coll_group *g, double bytes)
{
    if (g->ranks <= 1)
        return;
    op_push(y, l, &(struct op){name, MODEL_TASK_COMM, (uint8_t)op, OP_PLAIN, 1, synth_coll_ns(y, op, g, bytes),
                               sc_sat_trunc(bytes), (uint32_t)g->ranks});
}

/* Quantisation of one bf16 tensor of `elements` for a low-precision GEMM,
 * with the kernels the spec's recipe runs (quant.h). A weight is
 * quantised once a step: the synthesised layer is every micro-batch's,
 * so its kernels' time is spread over the step's micro-batches. */
static void quantize(struct synth *y, struct oplist *l, enum quant_tensor t, double elements)
{
    struct quant_kernel k[QUANT_MAX_KERNELS];
    int n = synth_quant_kernels(y->sh.dt, y->sh.recipe, y->hw->arch, t, k);
    double share = t == QUANT_WEIGHT ? 1.0 / (double)spec_micro_batches(y->s) : 1.0;
    for (int i = 0; i < n; i++)
        op_push(y, l, &(struct op){k[i].name, MODEL_TASK_KERNEL, MODEL_KF_FP8, OP_PLAIN, 1,
                                   synth_ns(share * cost_kernel_memory_us(&y->c->kernel, y->hw, k[i].bytes * elements)), 0,
                                   0});
}

/* Before a GEMM's forward, C[m x n] = A[m x k] W[k x n]: its input and weight. */
static void quantize_fwd(struct synth *y, struct oplist *l, double m, double n, double k)
{
    quantize(y, l, QUANT_INPUT, m * k);
    quantize(y, l, QUANT_WEIGHT, k * n);
}

/* Tensor-parallel collectives around a block: its input gathered (with
 * sequence parallelism) and its output reduced. */
static void tp_in_width(struct synth *y, struct oplist *l, int backward, double width)
{
    const struct shape *sh = &y->sh;
    if (sh->tp <= 1)
        return;
    if (sh->sp)
        coll(y, l, backward ? "tp reduce-scatter" : "tp all-gather",
             backward ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLGATHER, &sh->tp_group, sh->T * width * sh->B);
    else if (backward)
        coll(y, l, "tp all-reduce", MODEL_COLL_ALLREDUCE, &sh->tp_group, sh->T * width * sh->B);
}

static void tp_in(struct synth *y, struct oplist *l, int backward)
{
    tp_in_width(y, l, backward, y->sh.h);
}

/* At a block's output they are the input's, in the other direction: a
 * reduce-scatter (or all-reduce) forward, an all-gather backward. */
static void tp_out(struct synth *y, struct oplist *l, int backward)
{
    tp_in(y, l, !backward);
}

/* The softmax when Megatron's fused kernel does not take the scores
 * (spec_fused_softmax): PyTorch's
 * ops one by one, in fp32 (query-key layer scaling on): a cast up, the
 * scale, the causal mask, the softmax and a cast back, forward; their
 * gradients backward. Bytes per score element read and written, with a
 * byte of mask. */
static void torch_softmax(struct synth *y, struct oplist *l, double scores, int backward)
{
    static const struct { const char *name; double fwd, bwd; } step[] = {
        {"softmax input cast", 2 + 4, 2 + 4}, {"softmax scale", 4 + 4, 4 + 4},
        {"causal mask fill", 4 + 1 + 4, 4 + 1 + 4}, {"softmax", 4 + 4, 4 + 4 + 4},
        {"softmax output cast", 4 + 2, 4 + 2},
    };
    for (size_t i = 0; i < sizeof step / sizeof step[0]; i++) {
        size_t k = backward ? sizeof step / sizeof step[0] - 1 - i : i;
        mem_bytes(y, l, step[k].name, MODEL_KF_SOFTMAX, scores * (backward ? step[k].bwd : step[k].fwd));
    }
}

/* Attention as Megatron ran it before fused kernels: scores by a batched
 * GEMM, a scale-mask-softmax (fused when the kernel takes the shape),
 * dropout on the probabilities, their product with the values, and the
 * context transposed back to [s, b, h]. */
static void unfused_attention(struct synth *y, struct oplist *l, double bh, double sq, int backward)
{
    const struct shape *sh = &y->sh;
    double scores = bh * sq * sq, d = sh->hd;
    int fused = spec_fused_softmax(y->s);
    if (!backward) {
        gemm(y, l, "attention scores (baddbmm)", sq, sq, d, bh);
        if (fused)
            mem(y, l, "scale mask softmax", MODEL_KF_SOFTMAX, KERNEL_MEM_SOFTMAX_FWD, scores);
        else
            torch_softmax(y, l, scores, 0);
        mem(y, l, "attention dropout", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, scores);
        gemm(y, l, "attention context (bmm)", sq, d, sq, bh);
        mem(y, l, "context transpose", MODEL_KF_COPY, KERNEL_MEM_UNARY, bh * sq * d);
        return;
    }
    mem(y, l, "context transpose backward", MODEL_KF_COPY, KERNEL_MEM_UNARY, bh * sq * d);
    gemm(y, l, "attention context dgrad (bmm)", sq, sq, d, bh);
    gemm(y, l, "attention values dgrad (bmm)", sq, d, sq, bh);
    mem(y, l, "attention dropout backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, scores);
    if (fused)
        mem(y, l, "scale mask softmax backward", MODEL_KF_SOFTMAX, KERNEL_MEM_SOFTMAX_BWD, scores);
    else
        torch_softmax(y, l, scores, 1);
    gemm(y, l, "attention query dgrad (bmm)", sq, d, sq, bh);
    gemm(y, l, "attention key dgrad (bmm)", sq, d, sq, bh);
}

/* The FLOPs a flash attention kernel executes as the FLOP formulas count
 * them: the visible keys of each query (cost_attn_visible_keys), the backward
 * twice the forward (the scores it recomputes are not counted, as
 * recomputation in hardware FLOPs counts only what the framework runs
 * again). */
static double flash_flops(const struct attn_shape *a, int backward)
{
    return 4 * a->batch * a->heads * a->seq_q * cost_attn_visible_keys(a) * a->head_dim * (backward ? 2 : 1);
}

/* The share of the model's layers that attend through a sliding window. */
static double windowed_share(const struct est_model *m)
{
    int64_t n = 0;
    for (int64_t i = 0; i < m->layers; i++)
        n += spec_model_layer_is_windowed(m, i);
    return (double)n / (double)m->layers;
}

static void attention_core(struct synth *y, struct oplist *l, int backward)
{
    const struct shape *sh = &y->sh;
    const struct est_spec *s = y->s;
    double b = (double)s->parallel.micro_batch, heads = sh->heads / sh->tp, kv = fmax(1, sh->kv / sh->tp);
    double sq = (double)s->model.seq / sh->cp;
    double t = 0;
    if (sh->cp > 1) {
        op_push(y, l, &(struct op){"attention (context-parallel ring)", MODEL_TASK_KERNEL, MODEL_KF_ATTENTION,
                                   OP_CP_ATTENTION, 1, 0, 0, 0});
        return;
    }
    if (!sh->flash) {
        unfused_attention(y, l, b * heads, sq, backward);
        return;
    }
    /* a synthesised layer stands for every layer of its kind: with
     * sliding-window layers among them, its attention is their mean */
    struct attn_shape a = {b, heads, kv, sq, sq, sh->hd, 1, sh->dt16, 0}, w = a;
    double share = windowed_share(&s->model), tw = 0;
    w.window = (double)s->model.attention_window;
    if (y->failed)
        return;
    if (cost_kernel_flash_attention(&y->c->kernel, y->hw, &a, backward, &t, y->err) ||
        (share > 0 && cost_kernel_flash_attention(&y->c->kernel, y->hw, &w, backward, &tw, y->err))) {
        y->failed = y->err->code;
        return;
    }
    op_push(y, l, &(struct op){backward ? "flash attention backward" : "flash attention", MODEL_TASK_KERNEL,
                               MODEL_KF_ATTENTION, OP_PLAIN, 1, synth_ns((1 - share) * t + share * tw), 0, 0,
                               (1 - share) * flash_flops(&a, backward) + share * flash_flops(&w, backward)});
}

void synth_cp_pieces(struct synth *y)
{
    const struct shape *sh = &y->sh;
    const struct est_spec *s = y->s;
    double b = (double)s->parallel.micro_batch, heads = sh->heads / sh->tp, kv = fmax(1, sh->kv / sh->tp);
    double blk = (double)s->model.seq / sh->cp, tf = 0, tb = 0;
    struct attn_shape a = {b, heads, kv, blk, blk, sh->hd, 1, sh->dt16, 0};
    if (sh->cp <= 1 || y->failed)
        return;
    if (cost_kernel_flash_attention(&y->c->kernel, y->hw, &a, 0, &tf, y->err) ||
        cost_kernel_flash_attention(&y->c->kernel, y->hw, &a, 1, &tb, y->err)) {
        y->failed = y->err->code;
        return;
    }
    double kv_bytes = 2 * b * blk * kv * sh->hd * sh->B;
    struct coll_group pair = sh->cp_group;
    pair.ranks = 2;
    pair.ranks_per_domain = sh->cp_group.ranks_per_domain >= 2 ? 2 : 1;
    for (int backward = 0; backward < 2; backward++) {
        y->cp_block[backward] = (struct op){backward ? "attention block backward" : "attention block",
                                            MODEL_TASK_KERNEL, MODEL_KF_ATTENTION, OP_PLAIN, 1,
                                            synth_ns(backward ? tb : tf), 0, 0, flash_flops(&a, backward)};
        y->cp_exchange[backward] = (struct op){"context-parallel key/value exchange", MODEL_TASK_COMM,
                                               MODEL_COLL_SENDRECV, OP_PLAIN, 1,
                                               synth_coll_ns(y, MODEL_COLL_SENDRECV, &pair, (1 + backward) * kv_bytes),
                                               0, 0};
    }
}

/* The attention block's output projection from proj_k (per rank), reduced
 * over tp, and the residual's bias-dropout-add; backward the other way. */
static void output_projection(struct synth *y, struct oplist *l, int backward, double proj_k)
{
    const struct shape *sh = &y->sh;
    if (!backward) {
        quantize_fwd(y, l, sh->T, sh->h, proj_k);
        gemm(y, l, "output projection", sh->T, sh->h, proj_k, 1);
        tp_out(y, l, 0);
        mem(y, l, "bias dropout add", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, sh->Tl * sh->h);
        return;
    }
    mem(y, l, "bias dropout add backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, sh->Tl * sh->h);
    tp_out(y, l, 1);
    quantize(y, l, QUANT_GRAD, sh->T * sh->h);
    gemm_bwd(y, l, "output projection dgrad", "output projection wgrad", sh->T, sh->h, proj_k, 1);
    bias_grad(y, l, "output projection bias gradient", sh->T, sh->h);
}

/* Latent attention as Megatron-Core's MLASelfAttention runs it: the
 * down projections (replicated, on the tokens a norm sees) and the
 * latents' norms; the latents gathered over tp (with sequence
 * parallelism; their gradients reduced, backward) instead of the hidden
 * state; the up projections split by heads; the rotary part applied to
 * queries and keys as they are laid out for the attention kernel; the
 * output projection from the value heads. */
static void latent_attention_block(struct synth *y, struct oplist *l, int backward)
{
    const struct shape *sh = &y->sh;
    const struct est_model *m = &y->s->model;
    const struct est_mla *a = &m->mla;
    double ql = (double)a->q_lora_rank, kl = (double)a->kv_lora_rank, rope = (double)a->qk_pos_emb_head_dim;
    double heads = sh->heads / sh->tp, qk = (double)m->head_dim, v = (double)a->v_head_dim;
    double down_n = ql + kl + rope;                        /* the latents, and the keys' rotary part */
    double q_k = ql ? ql : sh->h;                          /* the query projection's input */
    double gathered = q_k + kl + rope;                     /* what tp gathers for the up projections */
    double q_n = heads * qk, kv_n = heads * (a->qk_head_dim + v), proj_k = heads * v;
    double laid_out = sh->T * heads * (2 * qk + v);        /* queries, keys and values for the kernel */
    if (!backward) {
        mem(y, l, "input norm", MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_FWD, sh->Tl * sh->h);
        quantize_fwd(y, l, sh->Tl, down_n, sh->h);
        gemm(y, l, "latent down projection", sh->Tl, down_n, sh->h, 1);
        mem(y, l, "latent norms", MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_FWD, sh->Tl * (ql + kl));
        tp_in_width(y, l, 0, gathered);
        quantize_fwd(y, l, sh->T, q_n, q_k);
        gemm(y, l, ql ? "query up projection" : "query projection", sh->T, q_n, q_k, 1);
        quantize_fwd(y, l, sh->T, kv_n, kl);
        gemm(y, l, "key/value up projection", sh->T, kv_n, kl, 1);
        mem(y, l, "rotary embedding", MODEL_KF_ELEMENTWISE, KERNEL_MEM_UNARY, laid_out);
        attention_core(y, l, 0);
        output_projection(y, l, 0, proj_k);
        return;
    }
    output_projection(y, l, 1, proj_k);
    attention_core(y, l, 1);
    mem(y, l, "rotary embedding backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_UNARY, laid_out);
    quantize(y, l, QUANT_GRAD, sh->T * kv_n);
    gemm_bwd(y, l, "key/value up projection dgrad", "key/value up projection wgrad", sh->T, kv_n, kl, 1);
    quantize(y, l, QUANT_GRAD, sh->T * q_n);
    gemm_bwd(y, l, ql ? "query up projection dgrad" : "query projection dgrad",
             ql ? "query up projection wgrad" : "query projection wgrad", sh->T, q_n, q_k, 1);
    tp_in_width(y, l, 1, gathered);
    norm_bwd_width(y, l, "latent norms backward", sh->Tl, ql + kl);
    quantize(y, l, QUANT_GRAD, sh->Tl * down_n);
    gemm_bwd(y, l, "latent down projection dgrad", "latent down projection wgrad", sh->Tl, down_n, sh->h, 1);
    norm_bwd(y, l, "input norm backward", sh->Tl);
}

static void attention_block(struct synth *y, struct oplist *l, int backward)
{
    const struct shape *sh = &y->sh;
    if (y->s->model.mla.kv_lora_rank) {
        latent_attention_block(y, l, backward);
        return;
    }
    double qkv_n = (sh->heads + 2 * sh->kv) * sh->hd / sh->tp, proj_k = sh->heads * sh->hd / sh->tp;
    if (!backward) {
        mem(y, l, "input norm", MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_FWD, sh->Tl * sh->h);
        tp_in(y, l, 0);
        quantize_fwd(y, l, sh->T, qkv_n, sh->h);
        gemm(y, l, "qkv projection", sh->T, qkv_n, sh->h, 1);
        attention_core(y, l, 0);
        output_projection(y, l, 0, proj_k);
        return;
    }
    output_projection(y, l, 1, proj_k);
    attention_core(y, l, 1);
    quantize(y, l, QUANT_GRAD, sh->T * qkv_n);
    gemm_bwd(y, l, "qkv projection dgrad", "qkv projection wgrad", sh->T, qkv_n, sh->h, 1);
    bias_grad(y, l, "qkv projection bias gradient", sh->T, qkv_n);
    tp_in(y, l, 1);
    norm_bwd(y, l, "input norm backward", sh->Tl);
}

/* A dense MLP of `ffn` (split by tp), or the shared experts of an MoE layer. */
static void mlp(struct synth *y, struct oplist *l, double ffn, int backward)
{
    const struct shape *sh = &y->sh;
    int gated = y->s->model.mlp == EST_MLP_SWIGLU;
    double n1 = ffn * (gated ? 2 : 1) / sh->tp, n2 = ffn / sh->tp;
    if (!backward) {
        quantize_fwd(y, l, sh->T, n1, sh->h);
        gemm(y, l, gated ? "mlp gate and up" : "mlp fc1", sh->T, n1, sh->h, 1);
        mem(y, l, gated ? "swiglu" : "activation", MODEL_KF_ELEMENTWISE,
            gated ? KERNEL_MEM_BINARY : KERNEL_MEM_UNARY, sh->T * n2);
        quantize_fwd(y, l, sh->T, sh->h, n2);
        gemm(y, l, gated ? "mlp down" : "mlp fc2", sh->T, sh->h, n2, 1);
        return;
    }
    quantize(y, l, QUANT_GRAD, sh->T * sh->h);
    gemm_bwd(y, l, gated ? "mlp down dgrad" : "mlp fc2 dgrad", gated ? "mlp down wgrad" : "mlp fc2 wgrad",
             sh->T, sh->h, n2, 1);
    bias_grad(y, l, "mlp fc2 bias gradient", sh->T, sh->h);
    mem(y, l, gated ? "swiglu backward" : "activation backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_BINARY,
        sh->T * n1);
    quantize(y, l, QUANT_GRAD, sh->T * n1);
    gemm_bwd(y, l, gated ? "mlp gate and up dgrad" : "mlp fc1 dgrad",
             gated ? "mlp gate and up wgrad" : "mlp fc1 wgrad", sh->T, n1, sh->h, 1);
    bias_grad(y, l, "mlp fc1 bias gradient", sh->T, n1);
}

/* The tokens each expert computes over the mean (dropless) load: a
 * capacity factor pads (or drops) every expert to that many; natural
 * routing makes the busiest expert's the rank's, balanced routing the
 * mean. *excess gets the part of it that only the busiest rank runs (the
 * others wait for it): time, not FLOPs of the step. */
static double expert_load(const struct synth *y, double *excess)
{
    const struct est_options *o = &y->s->options;
    *excess = 1;
    if (o->moe_capacity_factor > 0)
        return o->moe_capacity_factor;
    if (o->moe_routing == EST_MOE_ROUTING_NATURAL)
        *excess = y->c->moe_imbalance;
    return *excess;
}

/* The FLOPs of the operations of l from index `from` on, divided by d. */
static void flops_divide(struct oplist *l, size_t from, double d)
{
    for (size_t i = from; i < l->n; i++)
        l->v[i].flops /= d;
}

/* DeepEP's dispatch or combine (the flex dispatcher) of `tokens` tokens
 * of the rank, each to top_k experts spread evenly over the EP group's
 * domains: a token crosses the network once per other domain that holds
 * one of its experts (DeepEP forwards it inside the domain over NVLink),
 * and every routed copy but those for the rank's own experts crosses
 * NVLink once; the two run at once, each at its tier's bandwidth
 * (DeepEP's normal kernels reach 153 GB/s of an H800's NVLink and 43 to
 * 58 GB/s over 400 Gb/s RDMA: deepseek-ai/DeepEP README, close to the
 * collective model's tiers), after the collective's fixed cost. */
static int64_t deepep_ns(const struct synth *y, double tokens)
{
    const struct shape *sh = &y->sh;
    const struct est_moe *m = &y->s->model.moe;
    double E = (double)m->experts, k = (double)m->top_k, g = sh->ep_group.ranks_per_domain,
           domains = (double)sh->ep_group.ranks / g, miss = 1;
    for (double i = 0; i < k; i++) /* no expert of a given other domain among the token's top_k */
        miss *= fmax(0, E - E / domains - i) / (E - i);
    double token = sh->h * sh->B, remote = (domains - 1) * (1 - miss);
    double nvlink_us = tokens * k * token * (g - 1) / g / (y->c->coll.intra.busbw_gbps * 1e3);
    double network_us = domains > 1 ? tokens * remote * token / (y->c->coll.inter.busbw_gbps * 1e3) : 0;
    return synth_ns(y->c->coll.base_us + fmax(nvlink_us, network_us));
}

/* What an MoE block's token exchange moves (moe_exchange). */
struct moe_tokens {
    double tokens, routed; /* the rank's tokens, and their routed copies */
    double gathered;       /* bytes the expert-tensor-parallel group gathers */
};

/* The routed tokens moved to the experts (to_experts) or back, as the
 * spec's dispatcher (options.moe_dispatcher) runs it; names[0] and [1]
 * name the exchange and its permutation:
 *   alltoall: permuted locally, an all-to-all over ep, then gathered over
 *     the expert-tensor-parallel group (its ranks hold slices of the same
 *     experts); back: reduce-scattered over it, all-to-all, unpermuted;
 *   allgather: every token all-gathered over the ep x etp ranks, each
 *     rank picking its experts' tokens; back: reduce-scattered;
 *   flex: DeepEP's fused dispatch (permutation inside it) over ep, then
 *     the expert-tensor-parallel gather; back the reverse. */
static void moe_exchange(struct synth *y, struct oplist *l, const struct moe_tokens *t, int to_experts,
                         const char *const names[2])
{
    const struct shape *sh = &y->sh;
    double bytes = t->routed * sh->h * sh->B;
    switch (y->s->options.moe_dispatcher) {
    case EST_MOE_DISPATCHER_ALLGATHER: {
        double all = t->tokens * sh->h * sh->B * sh->tpep_group.ranks;
        if (to_experts) {
            coll(y, l, names[0], MODEL_COLL_ALLGATHER, &sh->tpep_group, all);
            mem(y, l, names[1], MODEL_KF_MOE, KERNEL_MEM_UNARY, t->routed * sh->h);
        } else {
            mem(y, l, names[1], MODEL_KF_MOE, KERNEL_MEM_BINARY, t->routed * sh->h);
            coll(y, l, names[0], MODEL_COLL_REDUCESCATTER, &sh->tpep_group, all);
        }
        return;
    }
    case EST_MOE_DISPATCHER_FLEX:
        if (!to_experts)
            coll(y, l, "expert tp reduce-scatter", MODEL_COLL_REDUCESCATTER, &sh->etp_group, t->gathered);
        if (sh->ep_group.ranks > 1)
            op_push(y, l, &(struct op){names[0], MODEL_TASK_COMM, MODEL_COLL_ALLTOALL, OP_PLAIN, 1,
                                       deepep_ns(y, t->tokens), sc_sat_trunc(bytes), 0});
        if (to_experts)
            coll(y, l, "expert tp all-gather", MODEL_COLL_ALLGATHER, &sh->etp_group, t->gathered);
        return;
    case EST_MOE_DISPATCHER_ALLTOALL:
        if (to_experts) {
            mem(y, l, names[1], MODEL_KF_MOE, KERNEL_MEM_UNARY, t->routed * sh->h);
            coll(y, l, names[0], MODEL_COLL_ALLTOALL, &sh->ep_group, bytes);
            coll(y, l, "expert tp all-gather", MODEL_COLL_ALLGATHER, &sh->etp_group, t->gathered);
        } else {
            coll(y, l, "expert tp reduce-scatter", MODEL_COLL_REDUCESCATTER, &sh->etp_group, t->gathered);
            coll(y, l, names[0], MODEL_COLL_ALLTOALL, &sh->ep_group, bytes);
            mem(y, l, names[1], MODEL_KF_MOE, KERNEL_MEM_BINARY, t->routed * sh->h);
        }
        return;
    }
}

/* An MoE block as Megatron-Core runs it: router and top-k, the tokens
 * moved to their experts (moe_exchange), the local experts' grouped GEMMs,
 * the outputs moved back; shared experts beside. Each local expert's GEMMs
 * take the EP group's routed tokens over the experts, times etp (its slice
 * sees every token of the group) and the load (expert_load); their FLOPs
 * count that load's tokens, padded ones included, the busiest expert's
 * excess under natural routing only as time. */
/* The grouped experts' weight gradients added into the main gradient
 * buffer, one more memory-bound kernel per backward: Megatron-Core's
 * grouped-GEMM experts compute them into a fresh tensor and its DDP hook
 * adds that to main_grad (no gradient-accumulation fusion there, unlike
 * its dense linear layers, whose weight-gradient GEMM accumulates in
 * place). It reads the gradient and the buffer and writes the buffer,
 * which is fp32 under grad_reduce_in_fp32, else the activations' dtype. */
static void expert_grad_accumulation(struct synth *y, struct oplist *l, double params)
{
    double grad = cost_hw_dtype_bytes(y->sh.dt16);
    double main_grad = y->s->options.grad_reduce_in_fp32 ? 4 : grad;
    mem_bytes(y, l, "expert gradient accumulation", MODEL_KF_ELEMENTWISE, params * (grad + 2 * main_grad));
}

static void moe(struct synth *y, struct oplist *l, int backward)
{
    static const char *const dispatch[2] = {"moe dispatch", "permute"};
    static const char *const combine[2] = {"moe combine", "unpermute"};
    static const char *const dispatch_bwd[2] = {"moe dispatch backward", "permute backward"};
    static const char *const combine_bwd[2] = {"moe combine backward", "unpermute backward"};
    const struct shape *sh = &y->sh;
    const struct est_moe *m = &y->s->model.moe;
    int gated = y->s->model.mlp == EST_MLP_SWIGLU;
    double etp = (double)y->s->parallel.etp, ep = (double)y->s->parallel.ep;
    double tokens = sh->T / sh->tp; /* MoE runs on the sequence-parallel split */
    double routed = tokens * (double)m->top_k, local = (double)m->experts / ep;
    double excess;
    double per_expert = routed * ep / (double)m->experts * etp * expert_load(y, &excess);
    size_t experts_from;
    double n1 = (double)m->ffn * (gated ? 2 : 1) / etp, n2 = (double)m->ffn / etp;
    struct moe_tokens t = {tokens, routed, per_expert * local * sh->h * sh->B};
    if (!backward) {
        gemm(y, l, "router", tokens, (double)m->experts, sh->h, 1);
        mem(y, l, "router top-k", MODEL_KF_MOE, KERNEL_MEM_UNARY, tokens * (double)m->experts);
        /* the load-balancing loss: the routing probabilities summed per
         * expert and the tokens each got counted (Megatron's aux_loss) */
        mem(y, l, "router aux loss", MODEL_KF_MOE, KERNEL_MEM_UNARY, tokens * (double)m->experts);
        moe_exchange(y, l, &t, 1, dispatch);
        experts_from = l->n;
        quantize_fwd(y, l, per_expert * local, n1, sh->h);
        gemm(y, l, "expert fc1 (grouped)", per_expert, n1, sh->h, local);
        mem(y, l, gated ? "expert swiglu" : "expert activation", MODEL_KF_ELEMENTWISE,
            gated ? KERNEL_MEM_BINARY : KERNEL_MEM_UNARY, per_expert * local * n2);
        quantize_fwd(y, l, per_expert * local, sh->h, n2);
        gemm(y, l, "expert fc2 (grouped)", per_expert, sh->h, n2, local);
        flops_divide(l, experts_from, excess);
        moe_exchange(y, l, &t, 0, combine);
        if (m->shared_experts > 0)
            mlp(y, l, (double)(m->ffn * m->shared_experts), 0);
        return;
    }
    if (m->shared_experts > 0)
        mlp(y, l, (double)(m->ffn * m->shared_experts), 1);
    moe_exchange(y, l, &t, 1, combine_bwd);
    experts_from = l->n;
    quantize(y, l, QUANT_GRAD, per_expert * local * sh->h);
    gemm_bwd(y, l, "expert fc2 dgrad (grouped)", "expert fc2 wgrad (grouped)", per_expert, sh->h, n2, local);
    mem(y, l, "expert activation backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_BINARY, per_expert * local * n1);
    quantize(y, l, QUANT_GRAD, per_expert * local * n1);
    gemm_bwd(y, l, "expert fc1 dgrad (grouped)", "expert fc1 wgrad (grouped)", per_expert, n1, sh->h, local);
    expert_grad_accumulation(y, l, (n1 + n2) * sh->h * local);
    flops_divide(l, experts_from, excess);
    moe_exchange(y, l, &t, 0, dispatch_bwd);
    mem(y, l, "router aux loss backward", MODEL_KF_MOE, KERNEL_MEM_BINARY, tokens * (double)m->experts);
    mem(y, l, "router top-k backward", MODEL_KF_MOE, KERNEL_MEM_BINARY, tokens * (double)m->experts);
    gemm_bwd(y, l, "router dgrad", "router wgrad", tokens, (double)m->experts, sh->h, 1);
}

static void mlp_block(struct synth *y, struct oplist *l, int is_moe, int backward)
{
    const struct shape *sh = &y->sh;
    if (!backward) {
        mem(y, l, "post-attention norm", MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_FWD, sh->Tl * sh->h);
        tp_in(y, l, 0);
        if (is_moe)
            moe(y, l, 0);
        else
            mlp(y, l, sh->ffn, 0);
        tp_out(y, l, 0);
        mem(y, l, "bias dropout add", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, sh->Tl * sh->h);
        return;
    }
    mem(y, l, "bias dropout add backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, sh->Tl * sh->h);
    tp_out(y, l, 1);
    if (is_moe)
        moe(y, l, 1);
    else
        mlp(y, l, sh->ffn, 1);
    tp_in(y, l, 1);
    norm_bwd(y, l, "post-attention norm backward", sh->Tl);
}

void synth_layer_ops(struct synth *y, int is_moe)
{
    attention_block(y, &y->fwd[is_moe], 0);
    mlp_block(y, &y->fwd[is_moe], is_moe, 0);
    mlp_block(y, &y->bwd[is_moe], is_moe, 1);
    attention_block(y, &y->bwd[is_moe], 1);
    if (y->s->options.recompute == EST_RECOMPUTE_FULL) {
        attention_block(y, &y->recompute[is_moe], 0);
        mlp_block(y, &y->recompute[is_moe], is_moe, 0);
    } else if (y->s->options.recompute == EST_RECOMPUTE_SELECTIVE) {
        attention_core(y, &y->recompute[is_moe], 0);
    }
}

/* Eager PyTorch's F.cross_entropy on the logits cast to fp32, op by op:
 * forward, the cast up, log_softmax (each logit read for the row's
 * maximum and its sum of exponentials, then read and written) and
 * nll_loss (the target's logit of each token); backward, nll_loss's
 * gradient (an fp32 tensor of zeros the size of the logits, the targets'
 * entries set), log_softmax's (the gradient and the output read, the
 * input's gradient written) and the cast's back down. Bytes per logit
 * (per token for nll_loss's: an 8-byte target and an fp32), the 16-bit
 * side of a cast added; fp32 logits are not cast. */
static void torch_cross_entropy(struct synth *y, double logits, int backward)
{
    enum { PER_LOGIT, CAST, PER_TOKEN };
    static const struct {
        const char *name;
        uint8_t family, per;
        double bytes;
    } ops[2][4] = {
        {{"logits cast", MODEL_KF_COPY, CAST, 4},
         {"log softmax", MODEL_KF_SOFTMAX, PER_LOGIT, 4 + 4 + 4},
         {"nll loss", MODEL_KF_LOSS, PER_TOKEN, 8 + 4}},
        {{"loss gradient zeros", MODEL_KF_ELEMENTWISE, PER_LOGIT, 4},
         {"nll loss backward", MODEL_KF_LOSS, PER_TOKEN, 8 + 4},
         {"log softmax backward", MODEL_KF_SOFTMAX, PER_LOGIT, 4 + 4 + 4},
         {"logits gradient cast", MODEL_KF_COPY, CAST, 4}},
    };
    const struct shape *sh = &y->sh;
    for (size_t i = 0; i < 4 && ops[backward][i].name; i++) {
        int per = ops[backward][i].per;
        if (per == CAST && sh->B >= 4)
            continue;
        double bytes = ops[backward][i].bytes * (per == PER_TOKEN ? sh->T : logits);
        mem_bytes(y, backward ? &y->head_bwd : &y->head_fwd, ops[backward][i].name, ops[backward][i].family,
                  bytes + (per == CAST ? logits * sh->B : 0));
    }
}

void synth_embedding_and_loss_ops(struct synth *y)
{
    const struct shape *sh = &y->sh;
    double v = sh->vocab / sh->tp, logits = sh->T * v;
    mem(y, &y->embed_fwd, "embedding", MODEL_KF_EMBEDDING, KERNEL_MEM_UNARY, sh->T * sh->h);
    tp_out(y, &y->embed_fwd, 0); /* the vocabulary-parallel lookup is summed over tp */
    mem(y, &y->embed_fwd, "embedding dropout", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, sh->Tl * sh->h);
    mem(y, &y->embed_bwd, "embedding dropout backward", MODEL_KF_ELEMENTWISE, KERNEL_MEM_DROPOUT, sh->Tl * sh->h);
    tp_out(y, &y->embed_bwd, 1);
    mem(y, &y->embed_bwd, "embedding backward", MODEL_KF_EMBEDDING, KERNEL_MEM_BINARY, sh->T * sh->h);

    mem(y, &y->head_fwd, "final norm", MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_FWD, sh->Tl * sh->h);
    tp_in(y, &y->head_fwd, 0);
    /* Megatron's output layer is a plain tensor-parallel linear layer,
     * outside Transformer Engine's fp8 and fp4 recipes: 16-bit */
    gemm_in(y, &y->head_fwd, "output layer", sh->T, v, sh->h, 1, sh->dt16);
    if (y->s->options.framework == EST_FRAMEWORK_PYTORCH) {
        torch_cross_entropy(y, logits, 0);
    } else {
        /* vocabulary-parallel cross-entropy on fp32 logits: max, sum of
         * exponentials and the target's logit */
        op_push(y, &y->head_fwd, &(struct op){"cross entropy", MODEL_TASK_KERNEL, MODEL_KF_LOSS, OP_PLAIN, 3,
                                              synth_ns(cost_kernel_memory_us(&y->c->kernel, y->hw, logits * 4 * 3)), 0,
                                              0});
    }
    /* each of the three all-reduced over tp */
    for (int i = 0; i < 3 && sh->tp > 1; i++)
        coll(y, &y->head_fwd, "cross entropy all-reduce", MODEL_COLL_ALLREDUCE, &sh->tp_group, sh->T * 4);
    if (y->s->options.framework == EST_FRAMEWORK_PYTORCH)
        torch_cross_entropy(y, logits, 1);
    else
        mem_bytes(y, &y->head_bwd, "cross entropy backward", MODEL_KF_LOSS, logits * (4 + sh->B));
    gemm_bwd_in(y, &y->head_bwd, "output layer dgrad", "output layer wgrad", sh->T, v, sh->h, 1, sh->dt16);
    tp_in(y, &y->head_bwd, 1);
    norm_bwd(y, &y->head_bwd, "final norm backward", sh->Tl);
}

/* Where a group's members sit: `stride` ranks apart in Megatron's order
 * (tp fastest, then cp, dp, pp), so that ranks_per_domain of them share an
 * NVLink domain of `per_node` GPUs. */
static struct coll_group layout(int64_t ranks, int64_t stride, int64_t per_node)
{
    int64_t in = stride >= per_node ? 1 : per_node / stride;
    if (in > ranks)
        in = ranks;
    if (in < 1)
        in = 1;
    return (struct coll_group){(int)ranks, (int)in};
}

void synth_shape_init(struct synth *y)
{
    const struct est_spec *s = y->s;
    struct shape *sh = &y->sh;
    int64_t tp = s->parallel.tp, cp = s->parallel.cp, dp = s->parallel.dp, pp = s->parallel.pp;
    int64_t node = s->cluster.gpus_per_node, ep = s->parallel.ep, etp = s->parallel.etp;
    sh->dt = s->options.dtype;
    sh->dt16 = sh->dt == HW_FP8 || sh->dt == HW_FP4 ? HW_BF16 : sh->dt;
    sh->recipe = s->options.fp8_recipe;
    sh->B = sh->dt == HW_FP32 ? 4 : 2; /* fp8 and fp4 keep 16-bit activations between GEMMs */
    sh->tp = (double)tp;
    sh->cp = (double)cp;
    sh->T = (double)(s->parallel.micro_batch * s->model.seq) / sh->cp;
    sh->sp = s->options.sequence_parallel && tp > 1;
    sh->Tl = sh->sp ? sh->T / sh->tp : sh->T;
    sh->h = (double)s->model.hidden;
    sh->hd = spec_attention_head_dim(&s->model);
    sh->heads = (double)s->model.heads;
    sh->kv = (double)s->model.kv_heads;
    sh->ffn = (double)s->model.ffn;
    sh->vocab = (double)s->model.vocab;
    sh->flash = s->options.attention != EST_ATTENTION_UNFUSED;
    sh->tp_group = layout(tp, 1, node);
    sh->cp_group = layout(cp, tp, node);
    sh->dp_group = layout(dp * cp, tp, node);
    sh->ep_group = layout(ep, etp, node);
    sh->etp_group = layout(etp, 1, node);
    sh->tpep_group = layout(ep * etp, 1, node);
    sh->edp_group = layout(tp * cp * dp / (ep * etp), ep * etp, node);
    sh->pp_pair = layout(2, tp * cp * dp, node);
    int64_t shard = s->parallel.fsdp_shard ? s->parallel.fsdp_shard : dp * cp;
    sh->shard_group = layout(shard, tp, node);
    sh->replica_group = layout(dp * cp / shard, tp * shard, node);
    sh->mp_group = layout(tp * pp, 1, node);
}
