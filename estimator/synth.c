/* estimator/synth.c: a training step synthesised from a spec (synth.h).
 *
 * Three parts: the operations of one layer (and of the embedding, the
 * loss and the optimizer) with their costs, computed once per kind of
 * layer; the emitter, which turns a rank's sequence of operations into
 * dispatches on its CPU thread and tasks on its streams, merging runs as
 * the level of detail asks; and the schedule, which walks Megatron's
 * pipeline schedule on every pipeline rank and wires the transfers between
 * them. */
#include "estimator/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "estimator/cluster_profile.h"
#include "estimator/flops.h"
#include "estimator/memory.h"
#include "estimator/placement.h"
#include "estimator/quant.h"
#include "model/graph_builder.h"
#include "model/kernel_family.h"
#include "common/cancel.h"
#include "common/checked.h"
#include "common/banned.h"

static const char *const detail_names[] = {"stage", "layer", "kernel"};

const char *est_detail_name(enum est_detail d)
{
    return (unsigned)d <= EST_DETAIL_KERNEL ? detail_names[d] : "?";
}

int est_detail_parse(const char *s, enum est_detail *out, struct sc_error *err)
{
    for (int d = 0; d <= EST_DETAIL_KERNEL; d++)
        if (s && strcmp(s, detail_names[d]) == 0) {
            *out = (enum est_detail)d;
            return SC_OK;
        }
    return sc_error_set(err, SC_EINVAL, "--detail: '%s' is none of stage, layer, kernel", s ? s : "");
}

/* The cited host dispatch cost per GPU operation, microseconds, and the
 * busiest expert's load over the mean: see README "Cost models". */
#define EST_HOST_OP_US 10.0
#define EST_HOST_COLL_US 10.0
#define EST_MOE_IMBALANCE 1.25

void est_costs_cited(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c)
{
    memset(c, 0, sizeof *c);
    kernel_params_for_gpu(&c->kernel, hw);
    coll_params_from_hw(hw, &c->coll);
    if (spec && spec->cluster.intra_node_gbps > 0) { /* the spec's fabric, not the one measured */
        c->coll.intra.busbw_gbps = spec->cluster.intra_node_gbps * COLL_INTRA_FRACTION;
        memset(c->coll.lines, 0, sizeof c->coll.lines);
    }
    if (spec && spec->cluster.inter_node_gbps > 0)
        c->coll.inter.busbw_gbps = spec->cluster.inter_node_gbps * COLL_INTER_FRACTION;
    c->host_op_us = EST_HOST_OP_US;
    c->host_coll_us = EST_HOST_COLL_US;
    c->moe_imbalance = EST_MOE_IMBALANCE;
}

/* What `make validate` fits on all 1,440 measured A100 steps of
 * ../shared/validation (BENCHMARKS.md, "Estimator validation"), starting
 * from the cited values: host time per synthesised operation (a
 * collective's extra host time keeps its cited value), the GEMM ceiling's
 * share of each GPU's own MAMF figure, the memory-bound kernels' share of
 * HBM bandwidth and a synthesised kernel's fixed time (a synthesised
 * layer has about 40 operations where Megatron's has about 100, so both
 * per-operation costs stand for two or three of PyTorch's). A GPU whose profile carries GEMM ceilings measured on it
 * (gemm_tflops) keeps them as they are: the share fitted on the A100 is
 * the A100's, the best guess only for GPUs nobody measured here. */
#define EST_FIT_HOST_OP_US 65.35
#define EST_FIT_GEMM_CEILING_SCALE 0.852
#define EST_FIT_HBM_FRACTION 0.706
#define EST_FIT_KERNEL_FIXED_US 8.29

void est_costs_base(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c)
{
    est_costs_cited(hw, spec, c);
    c->host_op_us = EST_FIT_HOST_OP_US;
    c->kernel.gemm_ceiling_scale = hw_has_gemm_tflops(hw) ? 1 : EST_FIT_GEMM_CEILING_SCALE;
    c->kernel.hbm_fraction = EST_FIT_HBM_FRACTION;
    c->kernel.kernel_fixed_us = EST_FIT_KERNEL_FIXED_US;
}

/* What `make validate` fits on the published step times of NeMo and
 * Megatron-Core jobs of 8 to 2,304 GPUs (../shared/validation/published;
 * BENCHMARKS.md, "Published runs"), per GPU and precision, starting from
 * est_costs_base: the same four parameters, the GEMM ceiling's share
 * relative to the GPU's own measured table (H100) or its MAMF (GB200).
 * They hold for Megatron's step (options.framework megatron) at scale, and
 * carry over by a rule: every Hopper GPU takes the H100's, every
 * Blackwell GPU the GB200's (the same silicon generation and software
 * stack); fp4 takes fp8's (Transformer Engine's low-precision recipes),
 * fp16 bf16's. fp32 and other GPUs keep the base. */
static const struct {
    enum hw_arch arch;
    int low_precision; /* fp8 and fp4 */
    double host_op_us, gemm_ceiling_scale, hbm_fraction, kernel_fixed_us;
} published_fit[] = {
    {HW_ARCH_HOPPER, 0, 91.030, 0.844, 0.633, 12.687},
    {HW_ARCH_HOPPER, 1, 68.635, 0.999, 0.636, 20.365},
    {HW_ARCH_BLACKWELL, 0, 144.059, 0.700, 0.676, 10.630},
    {HW_ARCH_BLACKWELL, 1, 142.422, 0.710, 0.636, 3.130},
};

void est_costs_default(const struct hw_profile *hw, const struct est_spec *spec, struct est_costs *c)
{
    est_costs_base(hw, spec, c);
    if (!spec || spec->options.framework != EST_FRAMEWORK_MEGATRON || spec->options.dtype == HW_FP32)
        return;
    int low = spec->options.dtype == HW_FP8 || spec->options.dtype == HW_FP4;
    for (size_t i = 0; i < sizeof published_fit / sizeof published_fit[0]; i++)
        if (published_fit[i].arch == hw->arch && published_fit[i].low_precision == low) {
            c->host_op_us = published_fit[i].host_op_us;
            c->kernel.gemm_ceiling_scale = published_fit[i].gemm_ceiling_scale;
            c->kernel.hbm_fraction = published_fit[i].hbm_fraction;
            c->kernel.kernel_fixed_us = published_fit[i].kernel_fixed_us;
        }
}

int est_costs_apply_profile(struct est_costs *c, const char *json, size_t len, const char *gpu,
                            struct sc_error *err)
{
    struct cluster_profile p;
    memset(&p, 0, sizeof p);
    p.coll = c->coll;
    p.kernel = c->kernel;
    if (cluster_profile_parse(json, len, &p, err))
        return sc_error_prefix(err, "cluster.profile");
    if (p.gpu[0] && strcmp(p.gpu, gpu) != 0)
        return sc_error_set(err, SC_EINVAL, "cluster.profile: measured on %s, but cluster.gpu is %s", p.gpu,
                            gpu);
    c->coll = p.coll;
    if (p.has_kernel)
        c->kernel = p.kernel;
    return SC_OK;
}

/* ---- operations and their costs ---- */

enum op_special {
    OP_PLAIN,
    OP_CP_ATTENTION /* attention in a context-parallel ring: blocks and key/value exchanges */
};

struct op {
    const char *name;
    uint8_t cls;     /* MODEL_TASK_KERNEL or MODEL_TASK_COMM */
    uint8_t sub;     /* kernel family or collective kind */
    uint8_t special; /* enum op_special */
    uint8_t ndisp;   /* host dispatches it takes (a fused sequence may take several) */
    int64_t dur;     /* ns */
    int64_t bytes;   /* a collective's size (nccl-tests convention) */
    uint32_t group_size;
    double flops;    /* executed by a GEMM or attention kernel (est_executed_flops_per_token) */
    int64_t comm;    /* of a kernel's time, communication it runs beside (overlap_tp) */
};

/* What a run of operations on the compute stream adds to a pending run
 * (see struct run and run_add): computed once per list, so that at layer
 * and stage detail a layer's operations are emitted in one step. */
struct run_sum {
    int64_t n;           /* operations */
    int64_t cpu;         /* host time: its dispatches */
    int64_t gpu;         /* GPU time */
    int64_t comm;        /* of which communication */
    double flops;        /* executed by its kernels */
    int64_t first_cpu;   /* the first dispatch */
    int64_t tail;        /* max over its ops of (host time before it + its dispatch + GPU work from there on) */
    uint8_t cls, sub;    /* the first operation's */
    uint8_t kernel;      /* any operation a kernel */
    uint8_t mixed;       /* any operation of another sub than the first */
    const struct op *first;
};

struct oplist {
    struct op *v;
    size_t n, cap;
    struct run_sum sum;
    int summed; /* sum holds the whole list (no operation that needs emitting alone) */
};

#define COLL_MEMO 8

/* What a spec makes of one rank's work, derived once. */
struct shape {
    enum hw_dtype dt;
    enum hw_dtype dt16; /* what runs outside the fp8 and fp4 recipes (attention, the output layer, activations): bf16 then, else dt */
    enum est_fp8_recipe recipe; /* with dt fp8 */
    double B;           /* bytes per element of activations */
    double T;           /* tokens of a micro-batch on one rank: micro_batch x seq / cp */
    double Tl;          /* tokens a norm or dropout sees: T / tp with sequence parallelism */
    double h, hd, heads, kv, ffn, vocab;
    double tp, cp;
    int sp;             /* sequence parallelism on (and tp > 1) */
    int flash;
    struct coll_group tp_group, cp_group, ep_group, etp_group, dp_group, edp_group, pp_pair, mp_group;
    /* ZeRO-3's shard group (parallel.fsdp_shard of the dp x cp ranks) and
     * the replicas of a shard (hybrid sharding) */
    struct coll_group shard_group, replica_group;
    struct coll_group tpep_group; /* the ep x etp ranks (the all-gather dispatcher's) */
};

struct synth {
    const struct est_spec *s;
    const struct hw_profile *hw;
    const struct est_costs *c;
    enum est_detail detail;
    int calls; /* a host task per call (else a thread's calls between two
                * synchronisations are one task: host_call) */
    int names; /* the tasks get names and tags (else the builder keeps none) */
    struct shape sh;
    struct model_gb *gb;
    struct sc_error *err;
    int failed;
    /* per layer kind (0 dense, 1 MoE): forward, backward, recomputation */
    struct oplist fwd[2], bwd[2], recompute[2];
    struct oplist embed_fwd, embed_bwd, head_fwd, head_bwd;
    /* the context-parallel ring's pieces, [0] forward, [1] backward (a
     * pending run points at them until it is flushed) */
    struct op cp_block[2], cp_exchange[2];
    /* the collectives timed last (coll_ns): a step times the same few
     * (ZeRO-3's gathers and reduce-scatters of each layer in every pass)
     * over and over */
    struct {
        int op, ranks, per_domain;
        double bytes;
        int64_t ns;
    } coll_memo[COLL_MEMO];
    unsigned n_coll_memo;
    /* a layer's parameters on one rank, dense and expert, per layer kind
     * (0 dense, 1 MoE), once known (layer_rank_params) */
    double layer_dense[2], layer_experts[2];
    uint8_t layer_known[2];
    /* set: the schedule only times ZeRO-3's streams of a rank
     * (est_synth_bound_z3), building nothing */
    struct z3_sim *sim;
};

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

static int64_t ns(double us)
{
    return sc_sat_round(us * 1000.0);
}

/* A GEMM in dtype dt. */
static void gemm_in(struct synth *y, struct oplist *l, const char *name, double m, double n, double k,
                    double batch, enum hw_dtype dt)
{
    struct gemm_estimate e;
    struct gemm_shape g = {m, n, k, batch, dt};
    if (y->failed)
        return;
    if (kernel_gemm(&y->c->kernel, y->hw, &g, &e, y->err)) {
        y->failed = sc_error_prefix(y->err, "%s", name);
        return;
    }
    op_push(y, l, &(struct op){name, MODEL_TASK_KERNEL, MODEL_KF_GEMM, OP_PLAIN, 1, ns(e.time_us), 0, 0,
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
                               ns(kernel_memory_us(&y->c->kernel, y->hw, bytes)), 0, 0});
}

static void mem(struct synth *y, struct oplist *l, const char *name, int family,
                enum kernel_mem_kind kind, double elements)
{
    mem_bytes(y, l, name, family,
              kernel_mem_bytes(kind, elements, y->sh.dt16, HW_FP32));
}

/* A linear layer's bias gradient: the output gradient summed over tokens.
 * GPT-style models (plain MLP) have biases; gated (Llama-style) ones none. */
static void bias_grad(struct synth *y, struct oplist *l, const char *name, double tokens, double n)
{
    if (y->s->model.mlp == EST_MLP_GELU)
        mem_bytes(y, l, name, MODEL_KF_REDUCTION, tokens * n * y->sh.B);
}

/* A norm's backward: the input gradient, then its weights' gradient
 * reduced over tokens. */
static void norm_bwd(struct synth *y, struct oplist *l, const char *name, double tokens)
{
    mem(y, l, name, MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_BWD, tokens * y->sh.h);
    mem_bytes(y, l, "norm weight gradient", MODEL_KF_NORMALIZATION, 2 * tokens * y->sh.h * y->sh.B);
}

static int64_t coll_ns(struct synth *y, enum model_coll_op op, const struct coll_group *g, double bytes)
{
    struct coll_estimate e;
    if (y->failed || g->ranks <= 1)
        return 0;
    for (unsigned i = 0; i < COLL_MEMO && i < y->n_coll_memo; i++)
        if (y->coll_memo[i].op == (int)op && y->coll_memo[i].ranks == g->ranks &&
            y->coll_memo[i].per_domain == g->ranks_per_domain && y->coll_memo[i].bytes == bytes)
            return y->coll_memo[i].ns;
    if (coll_estimate(&y->c->coll, op, g, bytes, &e, y->err)) {
        y->failed = y->err->code;
        return 0;
    }
    unsigned slot = y->n_coll_memo++ % COLL_MEMO;
    y->coll_memo[slot].op = (int)op;
    y->coll_memo[slot].ranks = g->ranks;
    y->coll_memo[slot].per_domain = g->ranks_per_domain;
    y->coll_memo[slot].bytes = bytes;
    y->coll_memo[slot].ns = ns(e.time_us);
    return y->coll_memo[slot].ns;
}

static void coll(struct synth *y, struct oplist *l, const char *name, enum model_coll_op op,
                 const struct coll_group *g, double bytes)
{
    if (g->ranks <= 1)
        return;
    op_push(y, l, &(struct op){name, MODEL_TASK_COMM, (uint8_t)op, OP_PLAIN, 1, coll_ns(y, op, g, bytes),
                               sc_sat_trunc(bytes), (uint32_t)g->ranks});
}

/* Quantisation of one bf16 tensor of `elements` for a low-precision GEMM,
 * with the kernels the spec's recipe runs (quant.h). A weight is
 * quantised once a step: the synthesised layer is every micro-batch's,
 * so its kernels' time is spread over the step's micro-batches. */
static void quantize(struct synth *y, struct oplist *l, enum quant_tensor t, double elements)
{
    struct quant_kernel k[QUANT_MAX_KERNELS];
    int n = quant_kernels(y->sh.dt, y->sh.recipe, y->hw->arch, t, k);
    double share = t == QUANT_WEIGHT ? 1.0 / (double)est_spec_micro_batches(y->s) : 1.0;
    for (int i = 0; i < n; i++)
        op_push(y, l, &(struct op){k[i].name, MODEL_TASK_KERNEL, MODEL_KF_FP8, OP_PLAIN, 1,
                                   ns(share * kernel_memory_us(&y->c->kernel, y->hw, k[i].bytes * elements)), 0,
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
static void tp_in(struct synth *y, struct oplist *l, int backward)
{
    const struct shape *sh = &y->sh;
    if (sh->tp <= 1)
        return;
    if (sh->sp)
        coll(y, l, backward ? "tp reduce-scatter" : "tp all-gather",
             backward ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLGATHER, &sh->tp_group, sh->T * sh->h * sh->B);
    else if (backward)
        coll(y, l, "tp all-reduce", MODEL_COLL_ALLREDUCE, &sh->tp_group, sh->T * sh->h * sh->B);
}

/* At a block's output they are the input's, in the other direction: a
 * reduce-scatter (or all-reduce) forward, an all-gather backward. */
static void tp_out(struct synth *y, struct oplist *l, int backward)
{
    tp_in(y, l, !backward);
}

/* The softmax when Megatron's fused kernel does not take the scores
 * (est_spec_fused_softmax): PyTorch's
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
    int fused = est_spec_fused_softmax(y->s);
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
 * them: the visible keys of each query (attn_visible_keys), the backward
 * twice the forward (the scores it recomputes are not counted, as
 * recomputation in hardware FLOPs counts only what the framework runs
 * again). */
static double flash_flops(const struct attn_shape *a, int backward)
{
    return 4 * a->batch * a->heads * a->seq_q * attn_visible_keys(a) * a->head_dim * (backward ? 2 : 1);
}

/* The share of the model's layers that attend through a sliding window. */
static double windowed_share(const struct est_model *m)
{
    int64_t n = 0;
    for (int64_t i = 0; i < m->layers; i++)
        n += est_model_layer_is_windowed(m, i);
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
    if (kernel_flash_attention(&y->c->kernel, y->hw, &a, backward, &t, y->err) ||
        (share > 0 && kernel_flash_attention(&y->c->kernel, y->hw, &w, backward, &tw, y->err))) {
        y->failed = y->err->code;
        return;
    }
    op_push(y, l, &(struct op){backward ? "flash attention backward" : "flash attention", MODEL_TASK_KERNEL,
                               MODEL_KF_ATTENTION, OP_PLAIN, 1, ns((1 - share) * t + share * tw), 0, 0,
                               (1 - share) * flash_flops(&a, backward) + share * flash_flops(&w, backward)});
}

static void cp_pieces(struct synth *y)
{
    const struct shape *sh = &y->sh;
    const struct est_spec *s = y->s;
    double b = (double)s->parallel.micro_batch, heads = sh->heads / sh->tp, kv = fmax(1, sh->kv / sh->tp);
    double blk = (double)s->model.seq / sh->cp, tf = 0, tb = 0;
    struct attn_shape a = {b, heads, kv, blk, blk, sh->hd, 1, sh->dt16, 0};
    if (sh->cp <= 1 || y->failed)
        return;
    if (kernel_flash_attention(&y->c->kernel, y->hw, &a, 0, &tf, y->err) ||
        kernel_flash_attention(&y->c->kernel, y->hw, &a, 1, &tb, y->err)) {
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
                                            ns(backward ? tb : tf), 0, 0, flash_flops(&a, backward)};
        y->cp_exchange[backward] = (struct op){"context-parallel key/value exchange", MODEL_TASK_COMM,
                                               MODEL_COLL_SENDRECV, OP_PLAIN, 1,
                                               coll_ns(y, MODEL_COLL_SENDRECV, &pair, (1 + backward) * kv_bytes),
                                               0, 0};
    }
}

static void attention_block(struct synth *y, struct oplist *l, int backward)
{
    const struct shape *sh = &y->sh;
    double qkv_n = (sh->heads + 2 * sh->kv) * sh->hd / sh->tp, proj_k = sh->heads * sh->hd / sh->tp;
    if (!backward) {
        mem(y, l, "input norm", MODEL_KF_NORMALIZATION, KERNEL_MEM_NORM_FWD, sh->Tl * sh->h);
        tp_in(y, l, 0);
        quantize_fwd(y, l, sh->T, qkv_n, sh->h);
        gemm(y, l, "qkv projection", sh->T, qkv_n, sh->h, 1);
        attention_core(y, l, 0);
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
    return ns(y->c->coll.base_us + fmax(nvlink_us, network_us));
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
    double grad = hw_dtype_bytes(y->sh.dt16);
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

static void layer_ops(struct synth *y, int is_moe)
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

static void embedding_and_loss_ops(struct synth *y)
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
    /* vocabulary-parallel cross-entropy on fp32 logits: max, sum of
     * exponentials and the target's logit, each all-reduced over tp */
    op_push(y, &y->head_fwd, &(struct op){"cross entropy", MODEL_TASK_KERNEL, MODEL_KF_LOSS, OP_PLAIN, 3,
                                          ns(kernel_memory_us(&y->c->kernel, y->hw, logits * 4 * 3)), 0, 0});
    for (int i = 0; i < 3 && sh->tp > 1; i++)
        coll(y, &y->head_fwd, "cross entropy all-reduce", MODEL_COLL_ALLREDUCE, &sh->tp_group, sh->T * 4);
    op_push(y, &y->head_bwd, &(struct op){"cross entropy backward", MODEL_TASK_KERNEL, MODEL_KF_LOSS, OP_PLAIN, 1,
                                          ns(kernel_memory_us(&y->c->kernel, y->hw, logits * (4 + sh->B))), 0, 0});
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

static void shape_init(struct synth *y)
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
    sh->hd = (double)s->model.head_dim;
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

/* ---- the emitter: a rank's operations as dispatches and tasks ---- */

enum stream { ST_COMPUTE, ST_SEND, ST_RECV, ST_DP, ST_CP, ST_COUNT };
static const char *const stream_labels[ST_COUNT] = {"compute", "pipeline send", "pipeline receive",
                                                    "data-parallel", "context-parallel"};

#define MAX_WAITS 8

/* Operations not yet turned into tasks: a run on one stream that the level
 * of detail lets merge. */
struct run {
    int stream;
    struct run_sum sum;
    struct op first; /* a copy: operations may live on the caller's stack */
};

struct rank {
    uint16_t id;
    uint32_t cpu, st[ST_COUNT];
    uint32_t last[ST_COUNT]; /* the last task on each stream, or MODEL_NONE */
    uint8_t last_paired[ST_COUNT]; /* that task sits on the other side's stream (p2p_batch) */
    uint32_t synced[ST_COUNT]; /* the last task on each stream a host synchronisation waited for */
    /* the host calls since the thread last synchronised, as one task
     * (host_call, without `calls`), and how long they take so far */
    uint32_t call;
    int64_t call_ns;
    struct run run;
    /* what the next task on each stream waits for */
    uint32_t waits[ST_COUNT][MAX_WAITS];
    int n_waits[ST_COUNT];
    char region[96];         /* what a merged task is named after */
    /* ZeRO-3 (see z3_gather): the compute stream's last task before the
     * layer computing now, and the gradients of the layer before waiting
     * to be reduce-scattered after the next gather */
    uint32_t z3_free;
    struct {
        double dense, experts;
        uint32_t after;
    } z3_grads;
};

static uint32_t add_task(struct synth *y, const struct model_task_spec *t)
{
    uint32_t id = MODEL_NONE;
    if (!y->failed && model_gb_add_task(y->gb, t, &id))
        y->failed = y->err->code;
    return id;
}

static void add_edge(struct synth *y, uint32_t from, uint32_t to, enum model_edge_kind kind,
                     enum model_edge_type type, int64_t lat)
{
    if (!y->failed && from != MODEL_NONE && to != MODEL_NONE &&
        model_gb_add_edge(y->gb, from, to, kind, type, lat, 0))
        y->failed = y->err->code;
}

static uint32_t add_group(struct synth *y, enum model_coll_op op, int64_t bytes, uint32_t size,
                          const uint32_t *tasks, size_t n)
{
    uint32_t g = MODEL_NONE;
    struct model_group_spec gs = {.op = op, .bytes = bytes, .dtype = hw_dtype_name(y->sh.dt),
                                  .pg = NULL, .seq = -1, .size = size};
    if (!y->failed && model_gb_add_group(y->gb, &gs, tasks, n, &g))
        y->failed = y->err->code;
    return g;
}

/* A host call on rank r's thread (t, on r->cpu); returns the task that
 * holds it, and *at (unless NULL) when the call starts in that task. With
 * `calls` (est_synth's graph) each call is a task (at 0); without (the one
 * est_estimate only replays) the task holds the calls since the thread
 * last synchronised: the calls run
 * back to back, nothing waits on one but the work it launches, and that
 * work waits on the task's start plus the call's place in it (SS and SF
 * edges), so every time stays as it was. A synchronising call (`sync`:
 * the caller adds what it waits for, which holds the task's finish) ends
 * the task. */
static uint32_t host_call(struct synth *y, struct rank *r, const struct model_task_spec *t, int sync,
                          int64_t *at)
{
    int64_t offset = 0;
    uint32_t call;
    if (y->calls) {
        call = add_task(y, t);
    } else {
        if (r->call == MODEL_NONE) {
            r->call = add_task(y, t);
            r->call_ns = t->dur;
        } else {
            offset = r->call_ns;
            r->call_ns = sc_sat_add(r->call_ns, t->dur);
            if (!y->failed && model_gb_set_dur(y->gb, r->call, r->call_ns))
                y->failed = y->err->code;
        }
        call = r->call;
        if (sync)
            r->call = MODEL_NONE;
    }
    if (at)
        *at = offset;
    return call;
}

/* Turn the pending run into a host dispatch and a GPU task. */
static void flush(struct synth *y, struct rank *r)
{
    struct run *u = &r->run;
    const struct run_sum *m = &u->sum;
    if (m->n == 0)
        return;
    int single = m->n == 1;
    uint8_t cls = m->kernel ? MODEL_TASK_KERNEL : m->cls;
    const char *name = single ? u->first.name : r->region;
    int64_t at;
    uint32_t call = host_call(y, r, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_CALL,
                                                              .sub = MODEL_CALL_LAUNCH, .dur = m->cpu,
                                                              .name = single ? "dispatch" : "dispatches",
                                                              .tag = name}, 0, &at);
    uint32_t task = add_task(y, &(struct model_task_spec){.res = r->st[u->stream], .cls = cls,
                                                          .sub = m->mixed ? MODEL_KF_OTHER : m->sub,
                                                          .dur = m->gpu, .name = name, .tag = r->region});
    /* compute merged with collectives among peers: the breakdown counts
     * the collectives' time as communication, as the kernels apart show;
     * and the FLOPs its kernels execute */
    if (cls == MODEL_TASK_KERNEL && (m->comm > 0 || m->flops > 0) && !y->failed &&
        model_gb_set_part(y->gb, task, m->comm, m->flops))
        y->failed = y->err->code;
    /* it starts once its first dispatch is done, and it cannot end before
     * any of its operations could have: dispatched, then it and the ones
     * after it run (the FF latency counts from the last dispatch; the SF
     * one, of a call merged with others, from the first) */
    add_edge(y, call, task, MODEL_EDGE_LAUNCH, MODEL_SS, at + m->first_cpu);
    if (y->calls)
        add_edge(y, call, task, MODEL_EDGE_LAUNCH, MODEL_FF, m->tail - m->cpu);
    else
        add_edge(y, call, task, MODEL_EDGE_LAUNCH, MODEL_SF, at + m->tail);
    for (int i = 0; i < r->n_waits[u->stream]; i++)
        add_edge(y, r->waits[u->stream][i], task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
    r->n_waits[u->stream] = 0;
    if (single && cls == MODEL_TASK_COMM && u->first.group_size > 1)
        add_group(y, (enum model_coll_op)m->sub, u->first.bytes, u->first.group_size, &task, 1);
    r->last[u->stream] = task;
    memset(u, 0, sizeof *u);
}

/* The next task on `stream` waits for `task` (on another stream or rank). */
static void wait_on(struct synth *y, struct rank *r, int stream, uint32_t task)
{
    if (task == MODEL_NONE)
        return;
    if (r->run.sum.n > 0 && r->run.stream == stream)
        flush(y, r);
    for (int i = 0; i < r->n_waits[stream]; i++)
        if (r->waits[stream][i] == task)
            return;
    if (r->n_waits[stream] == MAX_WAITS) {
        y->failed = sc_error_set(y->err, SC_EINTERNAL, "a synthesised task waits on more than %d others",
                                 MAX_WAITS);
        return;
    }
    r->waits[stream][r->n_waits[stream]++] = task;
}

/* The host time of dispatching operation o: launches are asynchronous, the
 * host does not wait for the GPU work it dispatched. */
static int64_t op_host(const struct synth *y, const struct op *o)
{
    double us = o->cls == MODEL_TASK_COMM ? y->c->host_coll_us : y->c->host_op_us;
    return sc_sat_mul(ns(us), o->ndisp ? o->ndisp : 1);
}

static int64_t max_i64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Append summary a to b (b's operations after a's). The tail composes in
 * max-plus arithmetic: a run dispatched from host time t0 whose GPU work
 * ended by tail0 ends by max(tail0 + gpu, t0 + tail) after it. */
static void sum_append(struct run_sum *b, const struct run_sum *a)
{
    if (b->n == 0) {
        *b = *a;
        return;
    }
    b->tail = max_i64(sc_sat_add(b->tail, a->gpu), sc_sat_add(b->cpu, a->tail));
    b->mixed |= a->mixed || a->sub != b->sub;
    b->kernel |= a->kernel;
    b->cpu = sc_sat_add(b->cpu, a->cpu);
    b->gpu = sc_sat_add(b->gpu, a->gpu);
    b->comm = sc_sat_add(b->comm, a->comm);
    b->flops += a->flops;
    b->n += a->n;
}

static void sum_op(const struct synth *y, const struct op *o, struct run_sum *out)
{
    int64_t cpu = op_host(y, o);
    *out = (struct run_sum){.n = 1, .cpu = cpu, .gpu = o->dur, .comm = o->cls == MODEL_TASK_COMM ? o->dur : o->comm,
                            .flops = o->flops, .first_cpu = cpu, .tail = sc_sat_add(cpu, o->dur),
                            .cls = o->cls, .sub = o->sub, .kernel = o->cls == MODEL_TASK_KERNEL, .first = o};
}

/* Whether o is a sequence-parallel all-gather or reduce-scatter of the
 * tensor-parallel group (tp_in, tp_out). */
static int tp_coll(const struct op *o, enum model_coll_op op)
{
    return o->cls == MODEL_TASK_COMM && o->sub == op && o->special == OP_PLAIN &&
           !strcmp(o->name, op == MODEL_COLL_ALLGATHER ? "tp all-gather" : "tp reduce-scatter");
}

/* The GEMM next to index i of l in direction dir (+1 after, -1 before),
 * past other kernels (quantisation, bias gradients) but no communication;
 * l->n when none. */
static size_t gemm_beside(const struct oplist *l, size_t i, int dir)
{
    for (size_t j = i + (size_t)dir; j < l->n; j += (size_t)dir) { /* wraps past 0 to SIZE_MAX */
        if (l->v[j].cls != MODEL_TASK_KERNEL || l->v[j].special != OP_PLAIN)
            return l->n;
        if (l->v[j].sub == MODEL_KF_GEMM)
            return j;
    }
    return l->n;
}

/* Transformer Engine's tensor-parallel communication overlap
 * (options.tp_comm_overlap, its userbuffers): a sequence-parallel
 * all-gather runs in tp chunks beside the GEMM that takes it, a
 * reduce-scatter beside the GEMM before it (in the backward, the weight
 * gradient's, as its bulk overlap runs). Each pair becomes one operation:
 * the longer of the two and one chunk of the shorter, which nothing hides;
 * the GEMM's FLOPs, and what it takes beyond the GEMM counted as
 * communication. */
static void overlap_tp(const struct synth *y, struct oplist *l)
{
    if (!y->s->options.tp_comm_overlap || !y->sh.sp)
        return;
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        int ag = tp_coll(&l->v[i], MODEL_COLL_ALLGATHER), rs = tp_coll(&l->v[i], MODEL_COLL_REDUCESCATTER);
        /* an all-gather's GEMM is ahead, a reduce-scatter's among those kept */
        size_t g = ag ? gemm_beside(l, i, 1) : rs && w > 0 ? gemm_beside(l, w, -1) : l->n;
        if (g == l->n || l->v[g].comm > 0) {
            l->v[w++] = l->v[i];
            continue;
        }
        struct op *gemm = &l->v[g];
        int64_t c = l->v[i].dur, k = gemm->dur;
        int64_t both = sc_sat_add(c > k ? c : k, (c < k ? c : k) / (int64_t)y->sh.tp);
        gemm->comm = both - k;
        gemm->dur = both;
        /* the collective is dropped: its GEMM holds its time */
    }
    l->n = w;
}

/* Summarise a list of operations on the compute stream, once its costs are
 * known. */
static void summarise(const struct synth *y, struct oplist *l)
{
    overlap_tp(y, l);
    memset(&l->sum, 0, sizeof l->sum);
    l->summed = 1;
    for (size_t i = 0; i < l->n; i++) {
        struct run_sum one;
        if (l->v[i].special != OP_PLAIN)
            l->summed = 0;
        sum_op(y, &l->v[i], &one);
        sum_append(&l->sum, &one);
    }
}

/* Add operations (summarised) on `stream` to the pending run. */
static void run_add(struct synth *y, struct rank *r, int stream, const struct run_sum *a)
{
    struct run *u = &r->run;
    /* waits on this stream predate the run (wait_on flushes a run on its
     * stream): they are the run's, so it goes on */
    if (u->sum.n > 0 && u->stream != stream)
        flush(y, r);
    if (u->sum.n == 0) {
        u->stream = stream;
        u->first = *a->first;
    }
    sum_append(&u->sum, a);
    if (y->detail == EST_DETAIL_KERNEL)
        flush(y, r);
}

static void emit(struct synth *y, struct rank *r, int stream, const struct op *o)
{
    struct run_sum one;
    sum_op(y, o, &one);
    run_add(y, r, stream, &one);
}

/* The last task on a stream, for other work to wait on. */
static uint32_t anchor(struct synth *y, struct rank *r, int stream)
{
    if (r->run.sum.n > 0 && r->run.stream == stream)
        flush(y, r);
    return r->last[stream];
}

/* A host synchronisation: the thread waits until every task in `on` is
 * done. Returns the call. */
static uint32_t host_sync(struct synth *y, struct rank *r, const char *name, const uint32_t *on, size_t n)
{
    flush(y, r);
    uint32_t call = host_call(y, r, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_CALL,
                                                              .sub = MODEL_CALL_SYNC, .dur = 0, .name = name},
                              1, NULL);
    for (size_t i = 0; i < n; i++)
        add_edge(y, on[i], call, MODEL_EDGE_HOST_SYNC, MODEL_FF, 0);
    return call;
}

/* Call `call` (a host synchronisation) waits for the last task of every
 * stream. A task an earlier synchronisation of the thread waited for needs
 * no edge: the thread's calls run in order, so `call` ends after it anyway. */
static void sync_streams(struct synth *y, struct rank *r, uint32_t call)
{
    for (int st = 0; st < ST_COUNT; st++)
        if (r->last[st] != r->synced[st]) {
            add_edge(y, r->last[st], call, MODEL_EDGE_HOST_SYNC, MODEL_FF, 0);
            r->synced[st] = r->last[st];
        }
}

static void device_sync(struct synth *y, struct rank *r, const char *name)
{
    sync_streams(y, r, host_sync(y, r, name, NULL, 0));
}

/* At layer detail a merged run ends with its layer. */
static void layer_boundary(struct synth *y, struct rank *r)
{
    if (y->detail == EST_DETAIL_LAYER)
        flush(y, r);
}

static void emit_cp_attention(struct synth *y, struct rank *r, int backward)
{
    int64_t steps = y->s->parallel.cp;
    const struct op *blk = &y->cp_block[backward], *ex = &y->cp_exchange[backward];
    /* exchange i runs beside block i; block i + 1 needs exchange i */
    for (int64_t i = 0; i < steps; i++) {
        uint32_t prev = anchor(y, r, ST_COMPUTE), received = r->last[ST_CP]; /* exchange i - 1 */
        if (i + 1 < steps) {
            wait_on(y, r, ST_CP, prev);
            emit(y, r, ST_CP, ex);
            flush(y, r);
        }
        if (i > 0)
            wait_on(y, r, ST_COMPUTE, received);
        emit(y, r, ST_COMPUTE, blk);
    }
}

static void emit_ops(struct synth *y, struct rank *r, const struct oplist *l, int backward)
{
    if (l->summed && y->detail != EST_DETAIL_KERNEL) {
        if (l->n)
            run_add(y, r, ST_COMPUTE, &l->sum);
        return;
    }
    for (size_t i = 0; i < l->n && !y->failed; i++) {
        if (l->v[i].special == OP_CP_ATTENTION)
            emit_cp_attention(y, r, backward);
        else
            emit(y, r, ST_COMPUTE, &l->v[i]);
    }
}

/* ---- gradient buckets ---- */

double est_grad_bucket_params(const struct est_spec *s)
{
    double per_dp = 1e6 * (double)(s->parallel.dp * s->parallel.cp);
    return per_dp > 40e6 ? per_dp : 40e6;
}

struct bucket_state {
    double dense, experts; /* parameters gathered into the open bucket */
};

void est_layer_rank_params(const struct est_spec *s, int64_t i, double *dense, double *experts)
{
    struct est_layer_params p;
    est_layer_params(&s->model, i, &p);
    *dense = (p.attention + p.mlp) / (double)s->parallel.tp + p.norms + p.router;
    *experts = p.experts / (double)(s->parallel.ep * s->parallel.etp);
}

/* layer_rank_params of layer i of kind is_moe, derived once per kind
 * (they depend on nothing else). */
static void kind_rank_params(struct synth *y, int64_t i, int is_moe, double *dense, double *experts)
{
    if (!y->layer_known[is_moe]) {
        est_layer_rank_params(y->s, i, &y->layer_dense[is_moe], &y->layer_experts[is_moe]);
        y->layer_known[is_moe] = 1;
    }
    *dense = y->layer_dense[is_moe];
    *experts = y->layer_experts[is_moe];
}

double est_grad_bytes(const struct est_spec *s)
{
    struct est_state_bytes b;
    est_state_bytes(&s->options, &b);
    return b.gradients;
}

/* A collective of the data-parallel stream. */
struct dp_coll {
    enum model_coll_op op;
    const struct coll_group *group;
    double bytes;
};

/* The collectives that run `op` over a set of parameters (dense and
 * expert; bytes_per per parameter), one after another: the dense ones over
 * dp x cp, the experts' over their own data-parallel ranks. ZeRO-3's
 * (`z3`) dense ones run over their shard group (parallel.fsdp_shard), and
 * a reduce-scatter's shard is then all-reduced over the replicas. Returns
 * how many (at most 3). */
static size_t dp_coll_list(const struct synth *y, enum model_coll_op op, int z3, double dense, double experts,
                           double bytes_per, struct dp_coll out[3])
{
    const struct shape *sh = &y->sh;
    double sizes[2] = {dense, experts};
    const struct coll_group *groups[2] = {z3 ? &sh->shard_group : &sh->dp_group, &sh->edp_group};
    size_t n = 0;
    for (int k = 0; k < 2; k++)
        if (sizes[k] > 0 && groups[k]->ranks > 1)
            out[n++] = (struct dp_coll){op, groups[k], sizes[k] * bytes_per};
    if (z3 && op == MODEL_COLL_REDUCESCATTER && dense > 0 && sh->replica_group.ranks > 1)
        out[n++] = (struct dp_coll){MODEL_COLL_ALLREDUCE, &sh->replica_group,
                                    dense * bytes_per / sh->shard_group.ranks};
    return n;
}

/* dp_coll_list's collectives on the data-parallel stream, after task
 * `after`. */
static void dp_colls(struct synth *y, struct rank *r, enum model_coll_op op, int z3, const char *name,
                     double dense, double experts, double bytes_per, uint32_t after)
{
    struct dp_coll c[3];
    size_t n = dp_coll_list(y, op, z3, dense, experts, bytes_per, c);
    for (size_t k = 0; k < n; k++) {
        struct op o = {c[k].op == op ? name : "gradient all-reduce across replicas", MODEL_TASK_COMM,
                       (uint8_t)c[k].op, OP_PLAIN, 1, coll_ns(y, c[k].op, c[k].group, c[k].bytes),
                       sc_sat_trunc(c[k].bytes), (uint32_t)c[k].group->ranks};
        wait_on(y, r, ST_DP, after);
        emit(y, r, ST_DP, &o);
        flush(y, r);
    }
}

/* Reduce the open bucket's gradients (after the work emitted so far). */
static void bucket_reduce(struct synth *y, struct rank *r, struct bucket_state *b)
{
    enum model_coll_op op = y->s->options.zero_stage >= 1 ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLREDUCE;
    dp_colls(y, r, op, 0, op == MODEL_COLL_ALLREDUCE ? "gradient all-reduce" : "gradient reduce-scatter", b->dense,
             b->experts, est_grad_bytes(y->s), anchor(y, r, ST_COMPUTE));
    b->dense = b->experts = 0;
}

/* ---- ZeRO-3: parameters gathered and gradients reduce-scattered per layer ---- */

/* Stage 3 (DeepSpeed's ZeRO-3, PyTorch's FSDP) shards the parameters too:
 * each layer's (and the embedding's and output layer's) are all-gathered
 * before its forward and again before its backward, in every micro-batch,
 * and its gradients reduce-scattered after its backward, also in every
 * micro-batch, since only a shard of them is kept (memory.c). */
static int zero3(const struct synth *y)
{
    return y->s->options.zero_stage >= 3 && y->sh.dp_group.ranks > 1;
}

/* The embedding's and the output layer's parameters on one rank of virtual
 * stage st, as memory.c counts them: the output layer's own unless it is
 * the embedding, tied on the same stage, and the final norm with it. */
static void edge_params(const struct est_spec *s, const struct est_stage_layers *st, double *embedding,
                        double *head)
{
    double emb = (double)(s->model.vocab * s->model.hidden) / (double)s->parallel.tp;
    *embedding = st->embedding ? emb : 0;
    *head = st->loss ? (s->model.tied_embeddings && st->embedding ? 0 : emb) + (double)s->model.hidden : 0;
}

/* Reduce-scatter the gradients left by z3_grads_done, if any. */
static void z3_reduce(struct synth *y, struct rank *r)
{
    if (r->z3_grads.dense + r->z3_grads.experts <= 0)
        return;
    dp_colls(y, r, MODEL_COLL_REDUCESCATTER, 1, "gradient reduce-scatter", r->z3_grads.dense, r->z3_grads.experts,
             est_grad_bytes(y->s), r->z3_grads.after);
    r->z3_grads.dense = r->z3_grads.experts = 0;
}

/* Before a layer's compute: its parameters all-gathered on the
 * data-parallel stream, and the compute waits for them. With
 * overlap_param_gather the gather is prefetched (FSDP's forward and
 * backward prefetch): it waits only for the compute before the layer that
 * computes now, whose gathered parameters it may then replace, so that it
 * runs beside that layer and two layers are gathered at most (as memory.c
 * counts); without it, for all the compute before its own layer. The
 * previous layer's gradients are reduce-scattered after it on the stream:
 * the prefetch is issued before that layer's backward. */
static void z3_gather(struct synth *y, struct rank *r, double dense, double experts)
{
    if (!zero3(y))
        return;
    uint32_t before = anchor(y, r, ST_COMPUTE);
    uint32_t freed = y->s->options.overlap_param_gather ? r->z3_free : before;
    r->z3_free = before;
    if (dense + experts > 0) {
        dp_colls(y, r, MODEL_COLL_ALLGATHER, 1, "parameter all-gather", dense, experts, y->sh.B, freed);
        wait_on(y, r, ST_COMPUTE, r->last[ST_DP]);
    }
    z3_reduce(y, r);
}

/* After a layer's backward: its gradients, to reduce-scatter after the
 * next gather (or at the end of the pass). */
static void z3_grads_done(struct synth *y, struct rank *r, double dense, double experts)
{
    if (!zero3(y))
        return;
    r->z3_grads.dense = dense;
    r->z3_grads.experts = experts;
    r->z3_grads.after = anchor(y, r, ST_COMPUTE);
}

/* ---- ZeRO-3's streams of one rank, timed without a graph ---- */

/* The data-parallel stream's time for one collective of a unit's
 * parameters per shard group (as dp_colls runs them, one after another):
 * `any` when one runs at all. */
struct z3_colls {
    int any;
    int64_t ns;
};

/* What a unit (a layer, the embedding, the output layer) puts on the
 * stream: its parameters gathered, its gradients reduce-scattered; and
 * whether it has parameters at all. */
struct z3_unit {
    int params;
    struct z3_colls gather, reduce;
};

/* est_synth_bound_z3 follows a rank's passes in the schedule's order with
 * only what z3_gather, z3_reduce and z3_grads_done make the two streams
 * wait for, and each unit's compute at its cost in est_pass_costs (the
 * compute stream's time of its operations); times in ns from the step's
 * start. */
struct z3_sim {
    const struct est_pass_costs *pc;
    int64_t compute; /* the end of the compute so far */
    int64_t stream;  /* the end of the data-parallel stream's work so far */
    int64_t free_at; /* z3_free: the compute's end at the unit before */
    struct z3_colls grads; /* the reduce-scatter of the last backward unit's gradients, pending */
    int64_t grads_after;
    struct z3_unit layer[2]; /* per layer kind (0 dense, 1 MoE), once known */
    uint8_t layer_known[2];
    /* a virtual stage's embedding and output layer, per [embedding][loss] */
    struct z3_unit edge[2][2][2];
    uint8_t edge_known[2][2];
};

static struct z3_colls z3_colls_of(struct synth *y, enum model_coll_op op, double dense, double experts,
                                   double bytes_per)
{
    struct dp_coll list[3];
    size_t n = dp_coll_list(y, op, 1, dense, experts, bytes_per, list);
    struct z3_colls c = {n > 0, 0};
    for (size_t k = 0; k < n; k++)
        c.ns = sc_sat_add(c.ns, coll_ns(y, list[k].op, list[k].group, list[k].bytes));
    return c;
}

static struct z3_unit z3_unit_of(struct synth *y, double dense, double experts)
{
    return (struct z3_unit){dense + experts > 0, z3_colls_of(y, MODEL_COLL_ALLGATHER, dense, experts, y->sh.B),
                            z3_colls_of(y, MODEL_COLL_REDUCESCATTER, dense, experts, est_grad_bytes(y->s))};
}

/* Collectives c on the stream after `after`. */
static void z3_sim_colls(struct z3_sim *z, const struct z3_colls *c, int64_t after)
{
    if (c->any)
        z->stream = sc_sat_add(max_i64(z->stream, after), c->ns);
}

/* z3_reduce: the gradients left by the last backward unit reduce-scattered. */
static void z3_sim_reduce(struct z3_sim *z)
{
    z3_sim_colls(z, &z->grads, z->grads_after);
    z->grads = (struct z3_colls){0, 0};
}

/* z3_gather, the unit's compute (ns) and, after a backward, z3_grads_done. */
static void z3_sim_unit(struct synth *y, const struct z3_unit *u, int64_t compute, int backward)
{
    struct z3_sim *z = y->sim;
    int64_t before = z->compute, freed = y->s->options.overlap_param_gather ? z->free_at : before;
    z->free_at = before;
    if (u->params) {
        z3_sim_colls(z, &u->gather, freed);
        z->compute = max_i64(z->compute, z->stream);
    }
    z3_sim_reduce(z);
    z->compute = sc_sat_add(z->compute, compute);
    if (backward) {
        z->grads = u->reduce;
        z->grads_after = z->compute;
    }
}

/* The backward of a layer of kind moe at place in_chunk of its model
 * chunk, with its recomputation where it runs it. */
static int64_t layer_b_ns(const struct est_spec *s, const struct est_pass_costs *pc, int moe, int64_t in_chunk)
{
    return pc->layer_b[moe] - (est_spec_layer_recomputed(s, in_chunk) ? 0 : pc->layer_r[moe]);
}

/* run_pass's units of virtual stage st, in its order. */
static void z3_sim_pass(struct synth *y, const struct est_stage_layers *st, int backward)
{
    struct z3_sim *z = y->sim;
    const struct est_pass_costs *pc = z->pc;
    struct z3_unit *edge = z->edge[st->embedding != 0][st->loss != 0];
    if (!z->edge_known[st->embedding != 0][st->loss != 0]) {
        double emb, head;
        edge_params(y->s, st, &emb, &head);
        edge[0] = z3_unit_of(y, emb, 0);
        edge[1] = z3_unit_of(y, head, 0);
        z->edge_known[st->embedding != 0][st->loss != 0] = 1;
    }
    const struct z3_unit *ue = &edge[0], *uh = &edge[1];
    if (!backward && st->embedding)
        z3_sim_unit(y, ue, pc->embed_f, 0);
    if (backward && st->loss)
        z3_sim_unit(y, uh, pc->head_b, 1);
    for (int i = 0; i < st->layers; i++) {
        int in_chunk = backward ? st->layers - 1 - i : i;
        int64_t layer = st->first_layer + in_chunk;
        int moe = est_model_layer_is_moe(&y->s->model, layer);
        if (!z->layer_known[moe]) {
            double dense, experts;
            kind_rank_params(y, layer, moe, &dense, &experts);
            z->layer[moe] = z3_unit_of(y, dense, experts);
            z->layer_known[moe] = 1;
        }
        z3_sim_unit(y, &z->layer[moe], backward ? layer_b_ns(y->s, pc, moe, in_chunk) : pc->layer_f[moe], backward);
    }
    if (!backward && st->loss)
        z3_sim_unit(y, uh, pc->head_f, 0);
    if (backward && st->embedding)
        z3_sim_unit(y, ue, pc->embed_b, 1);
    if (backward) /* z3_reduce at the pass's end */
        z3_sim_reduce(z);
}

/* ---- the schedule ---- */

struct p2p {
    uint32_t *v;
    size_t n, cap;
};

enum { P2P_FWD_SEND, P2P_FWD_RECV, P2P_BWD_SEND, P2P_BWD_RECV, P2P_KINDS };

/* A pass's compute as one run (pass_ops summed), per direction, made at
 * its first use: at stage detail it serves every micro-batch. */
struct pass_sum {
    struct run_sum sum[2]; /* forward, backward */
    uint8_t known[2];
};

struct pipeline {
    int64_t pp, vpp, m; /* ranks, chunks per rank, micro-batches */
    struct est_stage_layers *vstages;
    struct pass_sum *pass; /* per virtual stage; NULL when a pass is emitted op by op */
    struct p2p *p2p; /* [rank * P2P_KINDS + kind] */
    uint32_t *grad_norm; /* per rank: its member of the gradient-norm all-reduce */
    int64_t act_bytes;
    int64_t p2p_dur;
};

/* The bytes of one pipeline transfer: a micro-batch's activations (or
 * their gradients) at a stage boundary. */
static int64_t act_bytes(const struct synth *y)
{
    return sc_sat_trunc(y->sh.Tl * y->sh.h * y->sh.B);
}

/* How long one pipeline transfer takes, ns. */
static int64_t p2p_ns(struct synth *y)
{
    return coll_ns(y, MODEL_COLL_SENDRECV, &y->sh.pp_pair, (double)act_bytes(y));
}

static struct p2p *p2p_list(struct pipeline *p, int64_t rank, int kind)
{
    return &p->p2p[rank * P2P_KINDS + kind];
}

static int virtual_stage(const struct pipeline *p, int64_t rank, int64_t chunk)
{
    return (int)(chunk * p->pp + rank);
}

/* Write v in decimal at p; returns the end. */
static char *put_i64(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do
        tmp[n++] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* The region of a pass, "forward mb M chunk C" (or "backward ..."), written
 * without printf: it is formatted once per pass of every estimate. */
static void pass_region(struct rank *r, int backward, int64_t mb, int64_t chunk)
{
    static const char fwd[] = "forward mb ", bwd[] = "backward mb ", ch[] = " chunk ";
    char *p = r->region;
    _Static_assert(sizeof r->region >= sizeof bwd + sizeof ch + 2 * 21, "the region holds any pass");
    memcpy(p, backward ? bwd : fwd, backward ? sizeof bwd - 1 : sizeof fwd - 1);
    p = put_i64(p + (backward ? sizeof bwd - 1 : sizeof fwd - 1), mb);
    memcpy(p, ch, sizeof ch - 1);
    *put_i64(p + sizeof ch - 1, chunk) = '\0';
}

/* The operations of one pass (forward or backward) of virtual stage st on
 * rank r, in the order they run, with ZeRO-3's collectives and the last
 * micro-batch's gradient buckets between them. */
static void pass_ops(struct synth *y, struct rank *r, const struct est_stage_layers *st, int64_t mb, int backward,
                     int last_mb, struct bucket_state *bucket)
{
    const struct est_spec *s = y->s;
    double emb, head;
    edge_params(s, st, &emb, &head);
    if (!backward) {
        if (st->embedding) {
            z3_gather(y, r, emb, 0);
            emit_ops(y, r, &y->embed_fwd, 0);
        }
        for (int i = 0; i < st->layers && !y->failed; i++) {
            int64_t layer = st->first_layer + i;
            int is_moe = est_model_layer_is_moe(&s->model, layer);
            double dense, experts;
            if (y->names && y->detail != EST_DETAIL_STAGE)
                snprintf(r->region, sizeof r->region, "layer %lld forward mb %lld", (long long)layer, (long long)mb);
            kind_rank_params(y, layer, is_moe, &dense, &experts);
            z3_gather(y, r, dense, experts);
            emit_ops(y, r, &y->fwd[is_moe], 0);
            layer_boundary(y, r);
        }
        if (st->loss) {
            if (y->names && y->detail != EST_DETAIL_STAGE)
                snprintf(r->region, sizeof r->region, "output layer forward mb %lld", (long long)mb);
            z3_gather(y, r, head, 0);
            emit_ops(y, r, &y->head_fwd, 0);
        }
        return;
    }
    if (st->loss) {
        z3_gather(y, r, head, 0);
        emit_ops(y, r, &y->head_bwd, 1);
        z3_grads_done(y, r, head, 0);
    }
    for (int i = st->layers - 1; i >= 0 && !y->failed; i--) {
        int64_t layer = st->first_layer + i;
        int is_moe = est_model_layer_is_moe(&s->model, layer);
        double dense, experts;
        if (y->names && y->detail != EST_DETAIL_STAGE)
            snprintf(r->region, sizeof r->region, "layer %lld backward mb %lld", (long long)layer, (long long)mb);
        kind_rank_params(y, layer, is_moe, &dense, &experts);
        z3_gather(y, r, dense, experts);
        if (est_spec_layer_recomputed(s, i))
            emit_ops(y, r, &y->recompute[is_moe], 0);
        emit_ops(y, r, &y->bwd[is_moe], 1);
        layer_boundary(y, r);
        z3_grads_done(y, r, dense, experts);
        if (last_mb && !zero3(y)) {
            bucket->dense += dense;
            bucket->experts += experts;
            if (s->options.overlap_grad_reduce && bucket->dense + bucket->experts >= est_grad_bucket_params(s))
                bucket_reduce(y, r, bucket);
        }
    }
    if (st->embedding) {
        if (y->names && y->detail != EST_DETAIL_STAGE)
            snprintf(r->region, sizeof r->region, "embedding backward mb %lld", (long long)mb);
        z3_gather(y, r, emb, 0);
        emit_ops(y, r, &y->embed_bwd, 1);
        z3_grads_done(y, r, emb, 0);
    }
    z3_reduce(y, r);
    if (last_mb && !zero3(y)) {
        double e = (double)(s->model.vocab * s->model.hidden) / (double)s->parallel.tp;
        if (st->embedding || (st->loss && !s->model.tied_embeddings))
            bucket->dense += e * ((st->embedding ? 1 : 0) + (st->loss && !s->model.tied_embeddings ? 1 : 0));
        if (s->options.overlap_grad_reduce)
            bucket_reduce(y, r, bucket);
    }
}

/* Virtual stage v's pass as one run: pass_ops on a rank of its own, where
 * (at stage detail, every operation list summed, no ZeRO-3 and not the
 * last micro-batch's backward) it only sums the lists in their order. */
static const struct run_sum *pass_sum(struct synth *y, struct pipeline *p, int v, int backward)
{
    struct pass_sum *ps = &p->pass[v];
    if (!ps->known[backward]) {
        struct rank scratch;
        memset(&scratch, 0, sizeof scratch);
        pass_ops(y, &scratch, &p->vstages[v], 0, backward, 0, NULL);
        ps->sum[backward] = scratch.run.sum;
        ps->known[backward] = 1;
    }
    return &ps->sum[backward];
}

/* Run forward or backward of one micro-batch on one model chunk. */
static void run_pass(struct synth *y, struct pipeline *p, struct rank *r, int64_t chunk, int64_t mb,
                     int backward, int last_mb, struct bucket_state *bucket)
{
    int v = virtual_stage(p, r->id, chunk);
    int sync_recv = backward ? v < p->pp * p->vpp - 1 : v > 0;
    if (!y->failed && sc_cancelled())
        y->failed = sc_error_set(y->err, SC_ECANCELED, "the synthesis was called off");
    if (y->failed)
        return;
    if (y->sim) {
        z3_sim_pass(y, &p->vstages[v], backward);
        return;
    }
    /* the pass starts on what the pipeline received (a task of its own).
     * The batch of transfers before it synchronised on the receive, and
     * the pass is dispatched after, so the graph est_estimate replays (no
     * `calls`) needs no edge for it; est_synth's shows the wait a trace
     * has */
    if (sync_recv && y->calls)
        wait_on(y, r, ST_COMPUTE, r->last[ST_RECV]);
    else if (sync_recv)
        anchor(y, r, ST_COMPUTE);
    if (y->names)
        pass_region(r, backward, mb, chunk);
    if (p->pass && !zero3(y) && !(backward && last_mb)) {
        const struct run_sum *sum = pass_sum(y, p, v, backward);
        if (sum->n)
            run_add(y, r, ST_COMPUTE, sum);
        return;
    }
    pass_ops(y, r, &p->vstages[v], mb, backward, last_mb, bucket);
}

static void p2p_remember(struct synth *y, struct pipeline *p, struct rank *r, int kind, uint32_t task)
{
    struct p2p *l = p2p_list(p, r->id, kind);
    if (!y->failed && sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
        y->failed = sc_error_set(y->err, SC_ENOMEM, "out of memory synthesising the step");
    if (!y->failed)
        l->v[l->n++] = task;
}

/* The transfers that pair with rank's of `kind`, the k-th with the k-th:
 * forward sends go to the next rank's forward receives, backward sends to
 * the rank before's backward receives (and receives the other way); the
 * ring's ends meet. */
static struct p2p *p2p_partners(struct pipeline *p, int64_t rank, int kind)
{
    static const int partner_kind[P2P_KINDS] = {P2P_FWD_RECV, P2P_FWD_SEND, P2P_BWD_RECV, P2P_BWD_SEND};
    int64_t partner = rank + (kind == P2P_FWD_SEND || kind == P2P_BWD_RECV ? 1 : -1);
    partner = partner < 0 ? p->pp - 1 : partner == p->pp ? 0 : partner;
    return p2p_list(p, partner, partner_kind[kind]);
}

/* The task of the transfer that pairs with rank r's next one of `kind`,
 * when its partner has been emitted; MODEL_NONE when not yet. */
static uint32_t p2p_partner(struct pipeline *p, const struct rank *r, int kind)
{
    const struct p2p *mine = p2p_list(p, r->id, kind), *theirs = p2p_partners(p, r->id, kind);
    return mine->n < theirs->n ? theirs->v[mine->n] : MODEL_NONE;
}

/* An edge into the transfer `to`: into its other side when `peer`. */
static void side_edge(struct synth *y, int peer, uint32_t from, uint32_t to, enum model_edge_kind kind,
                      enum model_edge_type type, int64_t lat)
{
    if (!peer) {
        add_edge(y, from, to, kind, type, lat);
    } else if (!y->failed && from != MODEL_NONE &&
               model_gb_add_peer_edge(y->gb, from, to, kind, type, lat)) {
        y->failed = y->err->code;
    }
}

/* A batch of pipeline transfers (kinds < 0 are skipped) as Megatron posts
 * them: one host call issues them all (host_coll_us each) and then
 * synchronises the device, so it ends when they and all earlier work have.
 * A send carries what the compute stream has produced so far; the
 * transfers are paired across ranks by pair_transfers (collective groups
 * of two), or, in the graph est_estimate replays, joined here as one task
 * on both sides. */
static void p2p_batch(struct synth *y, struct pipeline *p, struct rank *r, const int *kinds, int n)
{
    int posted = 0;
    for (int i = 0; i < n; i++)
        posted += kinds[i] >= 0;
    if (!posted || y->sim) /* the bound's timing counts no transfer */
        return;
    uint32_t produced = anchor(y, r, ST_COMPUTE);
    flush(y, r);
    int64_t issue = ns(y->c->host_coll_us), at;
    uint32_t call = host_call(y, r, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_CALL,
                                                              .sub = MODEL_CALL_SYNC, .dur = issue * posted,
                                                              .name = "pipeline transfers and synchronize"},
                              1, &at);
    int k = 0, sent = 0, in_batch[ST_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        if (kinds[i] < 0)
            continue;
        int send = kinds[i] == P2P_FWD_SEND || kinds[i] == P2P_BWD_SEND;
        int stream = send ? ST_SEND : ST_RECV;
        /* without `calls` (the graph est_estimate replays) a transfer is
         * one task on both sides (model_gb_pair): the side emitted second
         * joins the first one's task */
        uint32_t task = y->calls ? MODEL_NONE : p2p_partner(p, r, kinds[i]);
        int joined = task != MODEL_NONE;
        if (joined) {
            if (!y->failed && model_gb_pair(y->gb, task, r->st[stream]))
                y->failed = y->err->code;
        } else {
            task = add_task(y, &(struct model_task_spec){.res = r->st[stream], .cls = MODEL_TASK_COMM,
                                                         .sub = MODEL_COLL_SENDRECV, .dur = p->p2p_dur,
                                                         .name = send ? "pipeline send" : "pipeline receive",
                                                         .tag = r->region});
        }
        side_edge(y, joined, call, task, MODEL_EDGE_LAUNCH, MODEL_SS, at + issue * ++k);
        /* the first send waits for what it carries; a second one follows
         * it on the stream, so it does too */
        if (send && !sent++)
            side_edge(y, joined, produced, task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
        for (int w = 0; w < r->n_waits[stream]; w++)
            side_edge(y, joined, r->waits[stream][w], task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
        r->n_waits[stream] = 0;
        /* the stream runs its transfers in order: one on another rank's
         * stream is ordered here by an edge. A transfer of an earlier batch
         * needs none: that batch's call waited for it, and this one's
         * launch comes after */
        if (in_batch[stream] && (joined || r->last_paired[stream]))
            side_edge(y, joined, r->last[stream], task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
        in_batch[stream] = 1;
        r->last[stream] = task;
        r->last_paired[stream] = (uint8_t)joined;
        p2p_remember(y, p, r, kinds[i], task);
    }
    /* a send ends after the compute it carries: waiting for the send, the
     * call has waited for that compute */
    if (sent)
        r->synced[ST_COMPUTE] = produced;
    sync_streams(y, r, call);
}

/* Megatron's 1F1B schedule (pipeline_parallel/schedules.py,
 * forward_backward_pipelining_without_interleaving). */
static void schedule_1f1b(struct synth *y, struct pipeline *p, struct rank *r, struct bucket_state *b)
{
    int64_t pp = p->pp, m = p->m, rank = r->id;
    int first = rank == 0, last = rank == pp - 1;
    int64_t warmup = pp - rank - 1 < m ? pp - rank - 1 : m, steady = m - warmup;
    int recv_f = first ? -1 : P2P_FWD_RECV, send_f = last ? -1 : P2P_FWD_SEND;
    int recv_b = last ? -1 : P2P_BWD_RECV, send_b = first ? -1 : P2P_BWD_SEND;
    int64_t fwd = 0, bwd = 0;
    for (int64_t i = 0; i < warmup; i++) {
        p2p_batch(y, p, r, (int[]){recv_f}, 1);
        run_pass(y, p, r, 0, fwd++, 0, 0, b);
        p2p_batch(y, p, r, (int[]){send_f}, 1);
    }
    if (steady > 0)
        p2p_batch(y, p, r, (int[]){recv_f}, 1);
    for (int64_t i = 0; i < steady; i++) {
        int last_iter = i == steady - 1;
        run_pass(y, p, r, 0, fwd++, 0, 0, b);
        p2p_batch(y, p, r, (int[]){send_f, recv_b}, 2);
        run_pass(y, p, r, 0, bwd, 1, bwd == m - 1, b);
        bwd++;
        if (last_iter)
            p2p_batch(y, p, r, (int[]){send_b}, 1);
        else
            p2p_batch(y, p, r, (int[]){send_b, recv_f}, 2);
    }
    for (int64_t i = 0; i < warmup; i++) {
        p2p_batch(y, p, r, (int[]){recv_b}, 1);
        run_pass(y, p, r, 0, bwd, 1, bwd == m - 1, b);
        bwd++;
        p2p_batch(y, p, r, (int[]){send_b}, 1);
    }
}

/* Megatron's interleaved schedule (forward_backward_pipelining_with_
 * interleaving), without p2p overlap: virtual micro-batch k runs chunk
 * (k / pp) % vpp forward, chunk vpp - 1 - (k / pp) % vpp backward. */
static int64_t chunk_of(const struct pipeline *p, int64_t k, int forward)
{
    int64_t c = (k / p->pp) % p->vpp;
    return forward ? c : p->vpp - 1 - c;
}

static int64_t mb_of(const struct pipeline *p, int64_t k)
{
    return (k / (p->pp * p->vpp)) * p->pp + k % p->pp;
}

static void schedule_interleaved(struct synth *y, struct pipeline *p, struct rank *r,
                                 struct bucket_state *b)
{
    int64_t pp = p->pp, vpp = p->vpp, total = p->m * vpp, rank = r->id;
    int first = rank == 0, last = rank == pp - 1;
    int64_t warmup = (pp - rank - 1) * 2 + (vpp - 1) * pp;
    if (warmup > total)
        warmup = total;
    int64_t steady = total - warmup;
    /* the stage that would receive or send is virtual: rank 0 chunk 0 has
     * no input, the last rank's last chunk no output */
#define NEEDS_RECV_F(k) (!(first && chunk_of(p, (k), 1) == 0))
#define HAS_SEND_F(k) (!(last && chunk_of(p, (k), 1) == vpp - 1))
#define NEEDS_RECV_B(k) (!(last && chunk_of(p, (k), 0) == vpp - 1))
#define HAS_SEND_B(k) (!(first && chunk_of(p, (k), 0) == 0))
    p2p_batch(y, p, r, (int[]){NEEDS_RECV_F(0) ? P2P_FWD_RECV : -1}, 1);
    for (int64_t k = 0; k < warmup; k++) {
        int64_t c = chunk_of(p, k, 1);
        run_pass(y, p, r, c, mb_of(p, k), 0, 0, b);
        int recv_f = k + 1 < total && NEEDS_RECV_F(k + 1) ? P2P_FWD_RECV : -1;
        int send_f = HAS_SEND_F(k) ? P2P_FWD_SEND : -1;
        int recv_b = k == warmup - 1 && steady > 0 && NEEDS_RECV_B(0) ? P2P_BWD_RECV : -1;
        p2p_batch(y, p, r, (int[]){send_f, recv_f, recv_b}, 3);
    }
    for (int64_t k = 0; k < steady; k++) {
        int64_t kf = k + warmup, kb = k;
        run_pass(y, p, r, chunk_of(p, kf, 1), mb_of(p, kf), 0, 0, b);
        int64_t cb = chunk_of(p, kb, 0), mbb = mb_of(p, kb);
        run_pass(y, p, r, cb, mbb, 1, mbb == p->m - 1, b);
        int send_f = HAS_SEND_F(kf) ? P2P_FWD_SEND : -1;
        int send_b = HAS_SEND_B(kb) ? P2P_BWD_SEND : -1;
        int recv_f = kf + 1 < total && NEEDS_RECV_F(kf + 1) ? P2P_FWD_RECV : -1;
        int recv_b = kb + 1 < total && NEEDS_RECV_B(kb + 1) ? P2P_BWD_RECV : -1;
        p2p_batch(y, p, r, (int[]){send_f, send_b, recv_f, recv_b}, 4);
    }
    if (steady == 0)
        p2p_batch(y, p, r, (int[]){NEEDS_RECV_B(0) ? P2P_BWD_RECV : -1}, 1);
    for (int64_t kb = steady; kb < total; kb++) {
        int64_t cb = chunk_of(p, kb, 0), mbb = mb_of(p, kb);
        run_pass(y, p, r, cb, mbb, 1, mbb == p->m - 1, b);
        int send_b = HAS_SEND_B(kb) ? P2P_BWD_SEND : -1;
        int recv_b = kb + 1 < total && NEEDS_RECV_B(kb + 1) ? P2P_BWD_RECV : -1;
        p2p_batch(y, p, r, (int[]){send_b, recv_b}, 2);
    }
#undef NEEDS_RECV_F
#undef HAS_SEND_F
#undef NEEDS_RECV_B
#undef HAS_SEND_B
}

/* Parameters of pipeline rank r (for the optimizer and parameter gather). */
static double rank_params(struct synth *y, const struct pipeline *p, int64_t rank)
{
    const struct est_spec *s = y->s;
    double total = 0;
    for (int64_t c = 0; c < p->vpp; c++) {
        const struct est_stage_layers *st = &p->vstages[c * p->pp + rank];
        for (int i = 0; i < st->layers; i++) {
            int64_t layer = st->first_layer + i;
            double dense, experts;
            kind_rank_params(y, layer, est_model_layer_is_moe(&s->model, layer), &dense, &experts);
            total += dense + experts;
        }
        double emb = (double)(s->model.vocab * s->model.hidden) / (double)s->parallel.tp;
        total += (st->embedding ? emb : 0) + (st->loss && !s->model.tied_embeddings ? emb : 0);
    }
    return total;
}

/* The distributed optimizer's parameter all-gather of the previous step
 * (ZeRO stages 1 and 2; stage 3 gathers per layer), overlapped with this
 * step's forward, that rank's step begins with: 1 and *o when there is
 * one. */
static int param_gather(struct synth *y, const struct pipeline *p, int64_t rank, struct op *o)
{
    const struct est_spec *s = y->s;
    if (s->options.zero_stage < 1 || zero3(y) || !s->options.overlap_param_gather || y->sh.dp_group.ranks <= 1)
        return 0;
    double bytes = rank_params(y, p, rank) * y->sh.B;
    *o = (struct op){"parameter all-gather", MODEL_TASK_COMM, MODEL_COLL_ALLGATHER, OP_PLAIN, 1,
                     coll_ns(y, MODEL_COLL_ALLGATHER, &y->sh.dp_group, bytes), sc_sat_trunc(bytes),
                     (uint32_t)y->sh.dp_group.ranks};
    return 1;
}

static void step_begin(struct synth *y, struct pipeline *p, struct rank *r, uint32_t *begin)
{
    *begin = add_task(y, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_MARKER, .name = "step"});
    struct op o;
    if (param_gather(y, p, r->id, &o)) {
        snprintf(r->region, sizeof r->region, "parameter gather");
        emit(y, r, ST_DP, &o);
        flush(y, r);
        /* the first forward waits for it (layer-wise prefetch is finer) */
        wait_on(y, r, ST_COMPUTE, r->last[ST_DP]);
    }
}

static void step_end(struct synth *y, struct pipeline *p, struct rank *r, struct bucket_state *b,
                     uint32_t begin)
{
    const struct est_spec *s = y->s;
    double params = rank_params(y, p, r->id);
    double shards = s->options.zero_stage >= 1 ? (double)(s->parallel.dp * s->parallel.cp) : 1;
    if (!zero3(y) && (!s->options.overlap_grad_reduce || b->dense + b->experts > 0)) {
        snprintf(r->region, sizeof r->region, "gradient reduction");
        if (!s->options.overlap_grad_reduce) {
            /* every bucket after the backward */
            b->dense = params;
            b->experts = 0;
        }
        bucket_reduce(y, r, b);
    }
    snprintf(r->region, sizeof r->region, "optimizer");
    wait_on(y, r, ST_COMPUTE, r->last[ST_DP]);
    struct est_state_bytes sb; /* the gradients and optimizer state the step reads */
    est_state_bytes(&s->options, &sb);
    struct op norm = {"gradient norm", MODEL_TASK_KERNEL, MODEL_KF_REDUCTION, OP_PLAIN, 1,
                      ns(kernel_memory_us(&y->c->kernel, y->hw, params / shards * sb.gradients)), 0, 0};
    emit(y, r, ST_COMPUTE, &norm);
    flush(y, r); /* the all-reduce below is a group member of its own */
    struct op norm_ar = {"gradient norm all-reduce", MODEL_TASK_COMM, MODEL_COLL_ALLREDUCE, OP_PLAIN, 1,
                         coll_ns(y, MODEL_COLL_ALLREDUCE, &y->sh.mp_group, 4), 4, 0};
    emit(y, r, ST_COMPUTE, &norm_ar);
    flush(y, r);
    p->grad_norm[r->id] = r->last[ST_COMPUTE];
    /* the step's loss and norm are read on the host: the optimizer runs
     * after that synchronisation */
    host_sync(y, r, "gradient norm .item()", &p->grad_norm[r->id], 1);
    struct op adam = {"optimizer step", MODEL_TASK_KERNEL, MODEL_KF_OPTIMIZER, OP_PLAIN, 1,
                      ns(kernel_memory_us(&y->c->kernel, y->hw, params / shards * est_optimizer_step_bytes(&sb))),
                      0, 0};
    emit(y, r, ST_COMPUTE, &adam);
    if (s->options.zero_stage >= 1 && !zero3(y) && !s->options.overlap_param_gather && y->sh.dp_group.ranks > 1) {
        double bytes = params * y->sh.B;
        struct op o = {"parameter all-gather", MODEL_TASK_COMM, MODEL_COLL_ALLGATHER, OP_PLAIN, 1,
                       coll_ns(y, MODEL_COLL_ALLGATHER, &y->sh.dp_group, bytes), sc_sat_trunc(bytes),
                       (uint32_t)y->sh.dp_group.ranks};
        emit(y, r, ST_COMPUTE, &o);
    }
    device_sync(y, r, "end of step synchronize");
    uint32_t end = add_task(y, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_MARKER, .name = "step"});
    if (!y->failed && model_gb_add_step(y->gb, &(struct model_step_spec){.rank = r->id, .begin = begin,
                                                                         .end = end, .name = "step",
                                                                         .measured_ns = -1,
                                                                         .trace_step = MODEL_NONE}))
        y->failed = y->err->code;
}

static int add_rank(struct synth *y, int64_t id, struct rank *r)
{
    memset(r, 0, sizeof *r);
    if (model_gb_add_rank(y->gb, &(struct model_rank_spec){.id = (int)id}, &r->id))
        return y->failed = y->err->code;
    if (model_gb_add_resource(y->gb, &(struct model_res_spec){.rank = r->id, .label = "main thread",
                                                              .pid = id, .tid = 1}, &r->cpu))
        return y->failed = y->err->code;
    r->z3_free = r->call = MODEL_NONE;
    for (int k = 0; k < ST_COUNT; k++) {
        r->last[k] = r->synced[k] = MODEL_NONE;
        if (model_gb_add_resource(y->gb, &(struct model_res_spec){.rank = r->id, .gpu = 1, .comm = k != ST_COMPUTE,
                                                                  .label = stream_labels[k], .pid = id,
                                                                  .tid = 7 + k}, &r->st[k]))
            return y->failed = y->err->code;
    }
    return SC_OK;
}

/* Check that every transfer has its partner, and group the pairs (with
 * `calls`; without, p2p_batch joined them); then the gradient norm's
 * all-reduce across the pipeline. */
static void pair_transfers(struct synth *y, struct pipeline *p)
{
    for (int64_t r = 0; r < p->pp && !y->failed; r++) {
        struct p2p *fs = p2p_list(p, r, P2P_FWD_SEND), *fr = p2p_partners(p, r, P2P_FWD_SEND);
        struct p2p *bs = p2p_list(p, r, P2P_BWD_SEND), *br = p2p_partners(p, r, P2P_BWD_SEND);
        if (fs->n != fr->n || bs->n != br->n) {
            y->failed = sc_error_set(y->err, SC_EINTERNAL,
                                     "pipeline rank %lld: %zu forward sends but %zu receives next, %zu backward sends but %zu receives before",
                                     (long long)r, fs->n, fr->n, bs->n, br->n);
            return;
        }
        if (!y->calls) /* paired as they were emitted (p2p_batch) */
            continue;
        for (size_t i = 0; i < fs->n; i++)
            add_group(y, MODEL_COLL_SENDRECV, p->act_bytes, 2, (uint32_t[]){fs->v[i], fr->v[i]}, 2);
        for (size_t i = 0; i < bs->n; i++)
            add_group(y, MODEL_COLL_SENDRECV, p->act_bytes, 2, (uint32_t[]){bs->v[i], br->v[i]}, 2);
    }
    /* the gradient norm is reduced across every pipeline rank */
    add_group(y, MODEL_COLL_ALLREDUCE, 4, (uint32_t)y->sh.mp_group.ranks, p->grad_norm, (size_t)p->pp);
}

/* About how many tasks and edges the step takes (more rather than fewer:
 * room not used costs address space only). */
static void room(const struct synth *y, const struct pipeline *p, struct est_synth_size *out, int64_t *groups)
{
    int64_t layers = 0, per_layer = 0;
    for (int64_t v = 0; v < p->pp * p->vpp; v++)
        layers = p->vstages[v].layers > layers ? p->vstages[v].layers : layers;
    for (int k = 0; k < 2; k++) {
        int64_t n = (int64_t)(y->fwd[k].n + y->recompute[k].n + y->bwd[k].n);
        per_layer = n > per_layer ? n : per_layer;
    }
    per_layer += 6 * y->s->parallel.cp; /* the context-parallel ring's blocks and exchanges */
    int64_t ops = 4; /* GPU runs of one micro-batch's forward and backward on one virtual stage */
    if (y->detail == EST_DETAIL_LAYER)
        ops += 2 * layers;
    else if (y->detail == EST_DETAIL_KERNEL)
        ops += layers * per_layer +
               (int64_t)(y->embed_fwd.n + y->embed_bwd.n + y->head_fwd.n + y->head_bwd.n);
    if (y->detail != EST_DETAIL_KERNEL && y->sh.cp > 1) /* the ring's blocks and exchanges cut the merged runs */
        ops += layers * 6 * y->s->parallel.cp;
    if (zero3(y)) /* each unit's gathers and reduce-scatter, and the compute runs they cut */
        ops += 8 * (layers + 2);
    /* the spec's limits (EST_MAX_*) keep these far below 2^63 */
    int64_t passes = p->pp * p->vpp * p->m;
    /* at stage detail one pipeline rank's passes merge into the same few
     * runs, however many micro-batches there are (nothing waits on a pass
     * but the next) */
    if (y->detail == EST_DETAIL_STAGE && y->sh.cp <= 1 && p->pp == 1 && !zero3(y))
        passes = 1;
    out->tasks = passes * (2 * ops + 10) + 64 * p->pp;
    out->edges = passes * (3 * ops + 24) + 64 * p->pp;
    out->bytes = (double)out->tasks * EST_SYNTH_BYTES_PER_TASK;
    *groups = passes * (ops / 2 + 4) + 64 * p->pp;
}

/* Room for room()'s tasks and edges, so that the builder's arrays are not
 * grown and copied as the step is emitted. */
static void reserve_room(struct synth *y, const struct pipeline *p)
{
    struct est_synth_size z;
    int64_t groups;
    room(y, p, &z, &groups);
    if (!y->failed && model_gb_reserve(y->gb, (size_t)z.tasks, (size_t)z.edges, (size_t)groups, (size_t)(2 * groups)))
        y->failed = y->err->code;
}

static void synth_release(struct synth *y, struct pipeline *p)
{
    for (int k = 0; k < 2; k++) {
        free(y->fwd[k].v);
        free(y->bwd[k].v);
        free(y->recompute[k].v);
    }
    free(y->embed_fwd.v);
    free(y->embed_bwd.v);
    free(y->head_fwd.v);
    free(y->head_bwd.v);
    if (p->p2p)
        for (int64_t i = 0; i < p->pp * P2P_KINDS; i++)
            free(p->p2p[i].v);
    free(p->p2p);
    free(p->vstages);
    free(p->pass);
    free(p->grad_norm);
}

/* The operations of every layer kind, the embedding and the loss, with
 * their costs (what both est_synth and est_synth_bound start from). */
static void make_ops(struct synth *y)
{
    layer_ops(y, 0);
    if (y->s->model.moe.experts > 0)
        layer_ops(y, 1);
    embedding_and_loss_ops(y);
    cp_pieces(y);
    for (int k = 0; k < 2; k++) {
        summarise(y, &y->fwd[k]);
        summarise(y, &y->bwd[k]);
        summarise(y, &y->recompute[k]);
    }
    summarise(y, &y->embed_fwd);
    summarise(y, &y->embed_bwd);
    summarise(y, &y->head_fwd);
    summarise(y, &y->head_bwd);
}

/* The compute stream's time for list l (emit_ops puts all of it there: a
 * context-parallel attention is cp blocks). */
static int64_t list_compute_ns(const struct synth *y, const struct oplist *l, int backward)
{
    int64_t t = 0;
    for (size_t i = 0; i < l->n; i++)
        t = sc_sat_add(t, l->v[i].special == OP_CP_ATTENTION ? sc_sat_mul(y->s->parallel.cp, y->cp_block[backward].dur)
                                                             : l->v[i].dur);
    return t;
}

int est_synth_pass_costs(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                         struct est_pass_costs *out, struct sc_error *err)
{
    struct est_spec chosen; /* recompute "auto" resolved */
    int rc = est_memory_resolve_recompute(s, hw->hbm_gb, &chosen, err);
    if (rc)
        return rc;
    struct synth y = {.s = &chosen, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {0};
    shape_init(&y);
    make_ops(&y);
    for (int k = 0; k < 2; k++) {
        out->layer_f[k] = list_compute_ns(&y, &y.fwd[k], 0);
        out->layer_r[k] = list_compute_ns(&y, &y.recompute[k], 0);
        out->layer_b[k] = sc_sat_add(out->layer_r[k], list_compute_ns(&y, &y.bwd[k], 1));
    }
    out->embed_f = list_compute_ns(&y, &y.embed_fwd, 0);
    out->embed_b = list_compute_ns(&y, &y.embed_bwd, 1);
    out->head_f = list_compute_ns(&y, &y.head_fwd, 0);
    out->head_b = list_compute_ns(&y, &y.head_bwd, 1);
    synth_release(&y, &p);
    return y.failed;
}

/* One micro-batch's forward (*f) and backward with its recomputation (*b)
 * on virtual stage st. */
static void pass_ns(const struct est_spec *s, const struct est_pass_costs *pc, const struct est_stage_layers *st,
                    int64_t *f, int64_t *b)
{
    *f = st->embedding ? pc->embed_f : 0;
    *b = st->embedding ? pc->embed_b : 0;
    if (st->loss) {
        *f = sc_sat_add(*f, pc->head_f);
        *b = sc_sat_add(*b, pc->head_b);
    }
    for (int i = 0; i < st->layers; i++) {
        int moe = est_model_layer_is_moe(&s->model, st->first_layer + i);
        *f = sc_sat_add(*f, pc->layer_f[moe]);
        *b = sc_sat_add(*b, layer_b_ns(s, pc, moe, i));
    }
}

/* ZeRO-3's data-parallel stream of one unit (z3_gather): its parameters
 * gathered twice and its gradients reduce-scattered once, per micro-batch,
 * ns. */
static int64_t z3_unit_ns(struct synth *y, double dense, double experts)
{
    double sizes[2] = {dense, experts};
    const struct coll_group *groups[2] = {&y->sh.dp_group, &y->sh.edp_group};
    int64_t t = 0;
    for (int k = 0; k < 2; k++)
        if (sizes[k] > 0)
            t = sc_sat_add(t, sc_sat_add(sc_sat_mul(2, coll_ns(y, MODEL_COLL_ALLGATHER, groups[k], sizes[k] * y->sh.B)),
                                         coll_ns(y, MODEL_COLL_REDUCESCATTER, groups[k],
                                                 sizes[k] * est_grad_bytes(y->s))));
    return t;
}

/* What ZeRO-3's gathers and reduce-scatters keep pipeline rank `rank`'s
 * data-parallel stream busy for, one after another, ns: the step lasts at
 * least that too. 0 below stage 3. */
static int64_t z3_stream_ns(struct synth *y, const struct pipeline *p, int64_t rank, int64_t m)
{
    const struct est_spec *s = y->s;
    int64_t kind_ns[2] = {-1, -1}, t = 0;
    if (!zero3(y))
        return 0;
    for (int64_t chunk = 0; chunk < p->vpp; chunk++) {
        const struct est_stage_layers *st = &p->vstages[virtual_stage(p, rank, chunk)];
        double emb, head;
        edge_params(s, st, &emb, &head);
        t = sc_sat_add(t, sc_sat_add(z3_unit_ns(y, emb, 0), z3_unit_ns(y, head, 0)));
        for (int i = 0; i < st->layers; i++) {
            int64_t layer = st->first_layer + i;
            int moe = est_model_layer_is_moe(&s->model, layer);
            if (kind_ns[moe] < 0) {
                double dense, experts;
                est_layer_rank_params(s, layer, &dense, &experts);
                kind_ns[moe] = z3_unit_ns(y, dense, experts);
            }
            t = sc_sat_add(t, kind_ns[moe]);
        }
    }
    return sc_sat_mul(m, t);
}

/* A bound's virtual stages: p->vstages placed (malloc'd) for p's pp and vpp. */
static int bound_stages(const struct est_spec *s, struct pipeline *p, struct sc_error *err)
{
    if (!(p->vstages = calloc((size_t)(p->pp * p->vpp), sizeof *p->vstages)))
        return sc_error_set(err, SC_ENOMEM, "out of memory bounding the step");
    if (est_place_layers((int)s->model.layers, (int)p->pp, (int)p->vpp, p->vstages, err)) {
        free(p->vstages);
        p->vstages = NULL;
        return err->code;
    }
    return SC_OK;
}

/* How many of pipeline rank `rank`'s sends come before one of its passes
 * in the schedule of schedule_1f1b and schedule_interleaved (m
 * micro-batches). A send carries the compute before it, the batch's call
 * waits for it, and the next pass is dispatched after that call; a
 * batch's sends follow one another on the send stream (p2p_batch), so the
 * compute stream is idle for each of them. Every forward pass sends but
 * the last rank's last chunk's; every backward pass but the first rank's
 * chunk 0's; the final backward's send comes after the last pass. */
static int64_t send_gaps(int64_t pp, int64_t vpp, int64_t m, int64_t rank)
{
    int first = rank == 0, last = rank == pp - 1;
    if (pp < 2 || m < 1)
        return 0;
    /* the interleaved schedule runs m passes of each chunk (m is a
     * multiple of pp), the last backward on chunk 0; 1F1B is vpp 1 */
    int64_t total = m * vpp;
    return (total - (last ? m : 0)) + (total - (first ? m : 1));
}

int est_synth_bound_of(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       const struct est_pass_costs *pc, double *ms, struct sc_error *err)
{
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp};
    int64_t m = est_spec_micro_batches(s), best = 0, head = 0, tail = 0, p2p = 0;
    int rc;
    *ms = 0;
    shape_init(&y);
    if ((rc = bound_stages(s, &p, err)))
        return rc;
    if (p.pp > 1)
        p2p = p2p_ns(&y);
    /* head: when rank's first forward can start (its parameter gather
     * done, and chunk 0's forward of the first micro-batch on the ranks
     * before); tail: chunk 0's backward on the ranks before */
    for (int64_t rank = 0; rank < p.pp; rank++) {
        int64_t busy = 0, f, b, f0 = 0, b0 = 0;
        struct op gather;
        if (param_gather(&y, &p, rank, &gather) && gather.dur > head)
            head = gather.dur;
        for (int64_t chunk = 0; chunk < p.vpp; chunk++) {
            pass_ns(s, pc, &p.vstages[virtual_stage(&p, rank, chunk)], &f, &b);
            busy = sc_sat_add(busy, sc_sat_mul(m, sc_sat_add(f, b)));
            if (chunk == 0) {
                f0 = f;
                b0 = b;
            }
        }
        busy = sc_sat_add(busy, sc_sat_mul(send_gaps(p.pp, p.vpp, m, rank), p2p));
        best = max_i64(best, sc_sat_add(sc_sat_add(head, busy), tail));
        int64_t stream = z3_stream_ns(&y, &p, rank, m);
        best = stream > best ? stream : best;
        /* chunk 0's passes, which the later ranks wait for, each handed
         * on by a transfer */
        head = sc_sat_add(head, sc_sat_add(f0, p2p));
        tail = sc_sat_add(tail, sc_sat_add(b0, p2p));
    }
    free(p.vstages);
    *ms = (double)best / 1e6;
    return y.failed;
}

int est_synth_bound(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                    double *ms, struct sc_error *err)
{
    struct est_pass_costs pc;
    struct est_spec chosen; /* recompute "auto" resolved: which layers recompute */
    int rc = est_memory_resolve_recompute(s, hw->hbm_gb, &chosen, err);
    *ms = 0;
    if (!rc)
        rc = est_synth_pass_costs(&chosen, hw, c, &pc, err);
    return rc ? rc : est_synth_bound_of(&chosen, hw, c, &pc, ms, err);
}

int est_synth_bound_z3(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       const struct est_pass_costs *pc, double enough_ms, double *ms, struct sc_error *err)
{
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp, .m = est_spec_micro_batches(s)};
    int64_t best = 0;
    int rc;
    *ms = 0;
    shape_init(&y);
    if (!zero3(&y))
        return SC_OK;
    if ((rc = bound_stages(s, &p, err)))
        return rc;
    for (int64_t rank = 0; rank < p.pp && (double)best / 1e6 < enough_ms; rank++) {
        struct z3_sim z = {.pc = pc};
        struct rank r;
        memset(&r, 0, sizeof r);
        r.id = (uint16_t)rank;
        y.sim = &z;
        if (p.vpp > 1)
            schedule_interleaved(&y, &p, &r, NULL);
        else
            schedule_1f1b(&y, &p, &r, NULL);
        best = max_i64(best, max_i64(z.compute, z.stream));
    }
    free(p.vstages);
    *ms = (double)best / 1e6;
    return y.failed;
}

/* The kernels of list l (and of l2, may be NULL) scaled so that they take
 * `ns` in all; the other operations (collectives, a context-parallel ring)
 * are kept. */
static void scale_kernels(struct synth *y, int64_t ns, struct oplist *l, struct oplist *l2)
{
    struct oplist *ls[2] = {l, l2};
    double k = 0;
    if (ns <= 0)
        return;
    for (int j = 0; j < 2; j++)
        for (size_t i = 0; ls[j] && i < ls[j]->n; i++)
            if (ls[j]->v[i].cls == MODEL_TASK_KERNEL && ls[j]->v[i].special == OP_PLAIN)
                k += (double)ls[j]->v[i].dur;
    if (k <= 0)
        return;
    for (int j = 0; j < 2; j++) {
        for (size_t i = 0; ls[j] && i < ls[j]->n; i++)
            if (ls[j]->v[i].cls == MODEL_TASK_KERNEL && ls[j]->v[i].special == OP_PLAIN)
                ls[j]->v[i].dur = sc_sat_round((double)ls[j]->v[i].dur * (double)ns / k);
        if (ls[j])
            summarise(y, ls[j]);
    }
}

/* Each pass's kernels taking what `m` gives. */
static void apply_measured(struct synth *y, const struct est_pass_costs *m)
{
    for (int k = 0; k < 2; k++) {
        scale_kernels(y, m->layer_f[k], &y->fwd[k], NULL);
        scale_kernels(y, m->layer_b[k], &y->recompute[k], &y->bwd[k]);
    }
    scale_kernels(y, m->embed_f, &y->embed_fwd, NULL);
    scale_kernels(y, m->embed_b, &y->embed_bwd, NULL);
    scale_kernels(y, m->head_f, &y->head_fwd, NULL);
    scale_kernels(y, m->head_b, &y->head_bwd, NULL);
}

/* The step of spec s, its passes' kernels scaled to `measured` (NULL: as
 * costed), with a host task per call or not, with the tasks' names and
 * tags or without them. */
static int synth_step(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      enum est_detail detail, const struct est_pass_costs *measured, int calls, int names,
                      struct est_synth_size *size_only, struct model_graph **out, struct sc_error *err)
{
    struct est_spec chosen; /* recompute "auto" resolved */
    int rc;
    if (out)
        *out = NULL;
    if ((rc = est_memory_resolve_recompute(s, hw->hbm_gb, &chosen, err)))
        return rc;
    s = &chosen;
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = detail, .calls = calls, .names = names, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp, .m = est_spec_micro_batches(s)};
    shape_init(&y);
    p.vstages = calloc((size_t)(p.pp * p.vpp), sizeof *p.vstages);
    p.p2p = calloc((size_t)(p.pp * P2P_KINDS), sizeof *p.p2p);
    p.grad_norm = calloc((size_t)p.pp, sizeof *p.grad_norm);
    /* a pass summed once (pass_sum) where pass_ops only sums: at stage
     * detail, and without the context-parallel ring's blocks and exchanges */
    int summed = detail == EST_DETAIL_STAGE && y.sh.cp <= 1;
    if (summed)
        p.pass = calloc((size_t)(p.pp * p.vpp), sizeof *p.pass);
    y.gb = size_only ? NULL : model_gb_new(err);
    if (!p.vstages || !p.p2p || !p.grad_norm || (summed && !p.pass) || (!size_only && !y.gb)) {
        synth_release(&y, &p);
        model_gb_free(y.gb);
        return sc_error_set(err, SC_ENOMEM, "out of memory synthesising the step");
    }
    if (est_place_layers((int)s->model.layers, (int)p.pp, (int)p.vpp, p.vstages, err)) {
        synth_release(&y, &p);
        model_gb_free(y.gb);
        return err->code;
    }
    p.act_bytes = act_bytes(&y);
    p.p2p_dur = p2p_ns(&y);
    if (size_only) {
        int64_t groups;
        make_ops(&y);
        room(&y, &p, size_only, &groups);
        synth_release(&y, &p);
        return y.failed;
    }
    if (!names)
        model_gb_skip_names(y.gb);
    make_ops(&y);
    if (measured)
        apply_measured(&y, measured);
    reserve_room(&y, &p);
    for (int64_t rank = 0; rank < p.pp && !y.failed; rank++) {
        struct rank r;
        struct bucket_state b = {0, 0};
        uint32_t begin;
        if (add_rank(&y, rank, &r))
            break;
        step_begin(&y, &p, &r, &begin);
        if (p.vpp > 1)
            schedule_interleaved(&y, &p, &r, &b);
        else
            schedule_1f1b(&y, &p, &r, &b);
        step_end(&y, &p, &r, &b, begin);
    }
    if (!y.failed)
        pair_transfers(&y, &p);
    synth_release(&y, &p);
    if (y.failed) {
        model_gb_free(y.gb);
        return y.failed;
    }
    return model_gb_finish(y.gb, out, err);
}

int est_synth(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
              enum est_detail detail, struct model_graph **out, struct sc_error *err)
{
    return synth_step(s, hw, c, detail, NULL, 1, 1, NULL, out, err);
}

int est_synth_unnamed(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      enum est_detail detail, struct model_graph **out, struct sc_error *err)
{
    return synth_step(s, hw, c, detail, NULL, 0, 0, NULL, out, err);
}

int est_synth_size(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                   enum est_detail detail, struct est_synth_size *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    return synth_step(s, hw, c, detail, NULL, 0, 0, out, NULL, err);
}

int est_synth_measured(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       enum est_detail detail, const struct est_pass_costs *measured, int names,
                       struct model_graph **out, struct sc_error *err)
{
    return synth_step(s, hw, c, detail, measured, 1, names, NULL, out, err);
}
