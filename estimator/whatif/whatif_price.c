/* estimator/whatif/whatif_price.c: the kernel and collective models' prices
 * of a described job's work on the traced and the target GPU, for the
 * what-if's transforms (whatif_price.h). */
#include "estimator/whatif/whatif_price.h"

#include <math.h>

#include "estimator/calibrate/cost_set.h"
#include "estimator/spec/flops.h"
#include "estimator/spec/spec.h"
#include "estimator/whatif/coll_split.h"
#include "estimator/whatif/structure.h"
#include "model/collective.h"
#include "common/banned.h"

void whatif_price_init(struct whatif_price *p, const struct hw_profile *hw0, const struct hw_profile *hw1)
{
    struct est_costs defaults;
    p->hw0 = hw0;
    p->hw1 = hw1;
    calib_costs_base(hw0, NULL, &defaults);
    p->kp0 = defaults.kernel;
    calib_costs_base(hw1, NULL, &defaults);
    p->kp1 = defaults.kernel;
    cost_coll_params_from_hw(hw0, &p->cp0);
    cost_coll_params_from_hw(hw1, &p->cp1);
}

/* c's context-parallel degree (1 when not given). */
int64_t whatif_cp_of(const struct job_config *c)
{
    return c->cp ? c->cp : 1;
}

/* How a collective of role `role` lays out under configuration c on
 * domains of `node` GPUs: its members and how many share a domain. */
struct coll_group whatif_coll_layout(int role, const struct job_config *c, int node, int *kind)
{
    struct coll_group gr = {1, 1};
    int64_t stride = 1, n = 1, ep, etp, edp;
    switch (role) {
    case STRUCT_ROLE_TP: n = c->tp; stride = 1; break;
    case STRUCT_ROLE_DP: n = c->dp * whatif_cp_of(c); stride = c->tp; break; /* gradients over dp x cp */
    case STRUCT_ROLE_EP: /* expert ranks are numbered with etp innermost, then ep */
        spec_job_config_expert_groups(c, &n, &stride, &edp);
        break;
    case STRUCT_ROLE_EDP: /* then the expert-data-parallel ranks */
        spec_job_config_expert_groups(c, &ep, &etp, &n);
        stride = ep * etp;
        break;
    case STRUCT_ROLE_PP:
        n = 2;
        stride = c->tp * c->dp;
        *kind = MODEL_COLL_SENDRECV;
        break;
    case STRUCT_ROLE_CP: /* a ring neighbour, tp ranks apart (whatif_attention_us) */
        n = 2;
        stride = c->tp;
        *kind = MODEL_COLL_SENDRECV;
        break;
    default: n = c->tp * c->pp * c->dp; stride = 1; break;
    }
    if (whatif_struct_coll_is_p2p(*kind) && role != STRUCT_ROLE_PP && role != STRUCT_ROLE_CP)
        *kind = MODEL_COLL_ALLTOALL; /* NCCL runs all-to-all as send/recv */
    int64_t per = stride >= node ? 1 : node / stride;
    gr.ranks = (int)n;
    gr.ranks_per_domain = (int)(per < n ? per : n);
    if (gr.ranks_per_domain < 1)
        gr.ranks_per_domain = 1;
    return gr;
}

/* GPUs to an NVLink domain under configuration c on GPU hw: the
 * description's gpus_per_node, else the profile's (as an estimate's). */
int whatif_node_of(const struct job_config *c, const struct hw_profile *hw)
{
    return c->gpus_per_node ? (int)c->gpus_per_node : hw->gpus_per_node;
}

/* One GEMM on hw (the traced or the target GPU, each with its own
 * defaults: a GPU with measured GEMM ceilings keeps them) in its dtype
 * (fp32 where hw lacks it) into *e; nonzero when the model cannot time it. */
static int gemm_on(const struct whatif_price *p, const struct hw_profile *hw, struct gemm_shape s,
                   struct gemm_estimate *e)
{
    const struct kernel_params *kp = hw == p->hw0 ? &p->kp0 : &p->kp1;
    struct sc_error ignored;
    if (cost_kernel_gemm_ceiling_tflops(kp, hw, s.dtype) <= 0)
        s.dtype = HW_FP32;
    return cost_kernel_gemm(kp, hw, &s, e, &ignored);
}

/* gemm_on's time, us; -1 when the model cannot time it. */
static double gemm_time(const struct whatif_price *p, const struct hw_profile *hw, struct gemm_shape s)
{
    struct gemm_estimate e;
    return gemm_on(p, hw, s, &e) ? -1 : e.time_us;
}

/* The kernel model's ratio target / traced for a GEMM of that shape. */
double whatif_gemm_ratio(const struct whatif_price *p, struct gemm_shape s)
{
    double t0 = gemm_time(p, p->hw0, s), t1 = gemm_time(p, p->hw1, s);
    return t0 > 0 && t1 > 0 ? t1 / t0 : -1;
}

/* Without the shape: the ratio for the square GEMM the model gives the
 * measured time on the traced GPU. */
double whatif_square_gemm_ratio(const struct whatif_price *p, double us, enum hw_dtype d)
{
    double lo = 1, hi = 65536;
    struct gemm_shape s = {1, 1, 1, 1, d};
    if (gemm_time(p, p->hw0, s) >= us)
        return whatif_gemm_ratio(p, s);
    for (int i = 0; i < 40; i++) {
        double mid = sqrt(lo * hi);
        s.m = s.n = s.k = mid;
        double t = gemm_time(p, p->hw0, s);
        if (t < 0)
            return -1;
        if (t < us)
            lo = mid;
        else
            hi = mid;
    }
    s.m = s.n = s.k = lo;
    return whatif_gemm_ratio(p, s);
}

/* `batch` GEMMs of m x n x k (a grouped GEMM's: one of each) on the
 * target GPU, us, without the kernel's fixed cost: a measured GEMM's
 * duration scales with its work (the eager steps of
 * data/calibration/torch-steps run GEMMs of 0.05 and 1 TFLOP at the same
 * throughput), so a fixed cost in the ratio would shrink a small layer's
 * growth. */
static double gemms_us(const struct whatif_price *p, double m, double n, double k, double batch, enum hw_dtype d)
{
    struct gemm_estimate e;
    return gemm_on(p, p->hw1, (struct gemm_shape){m, n, k, batch, d}, &e) ? -1 : fmax(e.compute_us, e.memory_us);
}

static double gemm_us(const struct whatif_price *p, double m, double n, double k, enum hw_dtype d)
{
    return gemms_us(p, m, n, k, 1, d);
}

static double kv_heads_of(const struct job_config *c)
{
    return (double)(c->kv_heads ? c->kv_heads : c->heads);
}

/* One head's width: head_dim, else hidden / heads (the spec's default). */
static double head_dim_of(const struct job_config *c)
{
    return c->head_dim ? (double)c->head_dim : (double)c->hidden / (double)c->heads;
}

/* c's MoE as the spec's model has it: every layer's when `every` is not
 * given. */
static struct est_moe moe_of(const struct job_config *c)
{
    struct est_moe e = c->moe;
    if (!e.every)
        e.every = 1;
    return e;
}

/* The spec model c describes (resolved); -1 when c lacks its sizes or
 * they do not make one. */
static int model_of(const struct job_config *c, struct est_model *m)
{
    struct sc_error ignored;
    if (!c->layers || !c->hidden || !c->heads)
        return -1;
    spec_model_init(m);
    m->layers = c->layers;
    m->hidden = c->hidden;
    m->heads = c->heads;
    m->ffn = c->ffn;
    m->kv_heads = c->kv_heads;
    m->head_dim = c->head_dim;
    m->mla = c->mla;
    m->moe = moe_of(c);
    if (c->has_mlp)
        m->mlp = c->mlp;
    if (c->tied_embeddings >= 0)
        m->tied_embeddings = c->tied_embeddings;
    m->seq = c->seq ? c->seq : 1;
    if (c->vocab)
        m->vocab = c->vocab;
    return spec_model_resolve(m, &ignored) ? -1 : 0;
}

/* The attention kernel's head width: head_dim, or latent attention's mean
 * of the query/key and value widths (spec_attention_head_dim). */
static double attention_head_dim_of(const struct job_config *c)
{
    struct est_model m;
    if (c->mla.kv_lora_rank && !model_of(c, &m))
        return spec_attention_head_dim(&m);
    return head_dim_of(c);
}

/* Whether c's MLP is gated (SwiGLU: gate and up). */
int whatif_gated(const struct job_config *c)
{
    return c->has_mlp && c->mlp == EST_MLP_SWIGLU;
}

/* A token's MLP activation on the target GPU, forward or backward, us
 * (kernel_model.h): GELU reads and writes the FFN's width (its gradient
 * reads two); SwiGLU fused (Megatron's) reads gate and up and writes their
 * product, and its backward reads both and the gradient and writes two.
 * Eager (framework pytorch) SwiGLU works on the chunked halves of one
 * GEMM's output, strided views that PyTorch's elementwise kernels take
 * without vector loads: forward a silu and a multiply; backward a multiply
 * on contiguous operands, one on the strided gate, the silu's gradient,
 * and the two halves' gradients concatenated (contiguous). */
double whatif_activation_us(const struct whatif_price *p, const struct job_config *c, int backward)
{
    double f = (double)(c->ffn ? c->ffn : 4 * c->hidden);
    enum hw_dtype d = c->has_dtype ? c->dtype : HW_BF16;
    double e = f * cost_hw_dtype_bytes(d == HW_FP8 || d == HW_FP4 ? HW_BF16 : d);
    const struct kernel_params *kp = &p->kp1;
    int eager = c->has_framework && c->framework == EST_FRAMEWORK_PYTORCH;
#define HBM(n) cost_kernel_strided_us(kp, p->hw1, 0, (n) * e)
#define STRIDED(n) cost_kernel_strided_us(kp, p->hw1, f, (n) * e)
    if (!whatif_gated(c))
        return backward ? HBM(3) : HBM(2);
    if (!eager)
        return backward ? HBM(5) : HBM(3);
    return backward ? HBM(3) + STRIDED(3) + STRIDED(3) + HBM(4) : STRIDED(2) + STRIDED(3);
#undef HBM
#undef STRIDED
}

/* The share of c's layers that are MoE layers (moe.every, moe.dense_layers;
 * all of them when the description gives no layer count). */
static double moe_layer_share(const struct job_config *c)
{
    if (!c->moe.experts)
        return 0;
    if (!c->layers)
        return 1;
    struct est_model m = {.layers = c->layers, .moe = moe_of(c)};
    int64_t n = 0;
    for (int64_t i = 0; i < c->layers; i++)
        n += spec_model_layer_is_moe(&m, i);
    return (double)n / (double)c->layers;
}

/* The forward GEMMs of an MoE layer's experts on the target GPU, us, as
 * the estimate runs them (synth_ops.c, over the mean load): the router
 * on the rank's sequence-parallel tokens, each local expert's grouped
 * GEMMs on the routed tokens its slice sees, and the shared experts as a
 * dense MLP; -1 when the model cannot time one. */
static double expert_gemms_us(const struct whatif_price *p, const struct job_config *c, double tokens,
                              enum hw_dtype d)
{
    int64_t ep, etp, edp;
    spec_job_config_expert_groups(c, &ep, &etp, &edp);
    double h = (double)c->hidden, tp = (double)c->tp, experts = (double)c->moe.experts;
    double f = (double)(c->moe.ffn ? c->moe.ffn : c->ffn ? c->ffn : 4 * c->hidden), gate = whatif_gated(c) ? 2 : 1;
    double own = tokens / tp, local = experts / (double)ep;
    double per_expert = own * (double)(c->moe.top_k ? c->moe.top_k : 1) * (double)ep / experts * (double)etp;
    double router = gemm_us(p, own, experts, h, d),
           fc1 = gemms_us(p, per_expert, f * gate / (double)etp, h, local, d),
           fc2 = gemms_us(p, per_expert, h, f / (double)etp, local, d), shared = 0;
    if (c->moe.shared_experts) {
        double sf = f * (double)c->moe.shared_experts;
        double s1 = gemm_us(p, tokens, sf * gate / tp, h, d), s2 = gemm_us(p, tokens, h, sf / tp, d);
        shared = s1 < 0 || s2 < 0 ? -1 : s1 + s2;
    }
    return router < 0 || fc1 < 0 || fc2 < 0 || shared < 0 ? -1 : router + fc1 + fc2 + shared;
}

/* The forward GEMMs of one layer on the target GPU, microseconds: QKV
 * (grouped-query: the key/value heads' share; heads of head_dim), the
 * output projection from the heads, the MLP's (gated: gate and up
 * together); of an MoE job, the mean over its layers, an MoE layer's MLP
 * being its experts' (expert_gemms_us). */
double whatif_layer_gemms_us(const struct whatif_price *p, const struct job_config *c)
{
    double tokens = (double)(c->micro_batch ? c->micro_batch : 1) * (double)c->seq / (double)whatif_cp_of(c);
    double h = (double)c->hidden, f = (double)(c->ffn ? c->ffn : 4 * c->hidden), tp = (double)c->tp;
    double qkv = c->heads ? (double)(c->heads + 2 * kv_heads_of(c)) * head_dim_of(c) : 3 * h,
           q = c->heads ? (double)c->heads * head_dim_of(c) : h;
    enum hw_dtype d = c->has_dtype ? c->dtype : HW_BF16;
    double a = gemm_us(p, tokens, qkv / tp, h, d), o = gemm_us(p, tokens, h, q / tp, d),
           f1 = gemm_us(p, tokens, f * (whatif_gated(c) ? 2 : 1) / tp, h, d), f2 = gemm_us(p, tokens, h, f / tp, d);
    if (a < 0 || o < 0 || f1 < 0 || f2 < 0)
        return -1;
    double moe = moe_layer_share(c), experts = moe > 0 ? expert_gemms_us(p, c, tokens, d) : 0;
    return experts < 0 ? -1 : a + o + (1 - moe) * (f1 + f2) + moe * experts;
}

/* Whether the description gives what re-timing a layer's shapes needs. */
int whatif_has_dims(const struct job_config *c)
{
    return c->hidden && c->seq;
}

/* The output layer's GEMM (tokens x vocab / tp x hidden) on the target
 * relative to the traced job's, by the kernel model as a layer's GEMMs
 * are; 0 when the descriptions do not give its shape. */
double whatif_output_gemm_ratio(const struct whatif_price *p, const struct job_config *b, const struct job_config *t)
{
    if (!whatif_has_dims(b) || !whatif_has_dims(t) || !b->vocab || !t->vocab)
        return 0;
    double g[2];
    const struct job_config *c[2] = {b, t};
    for (int k = 0; k < 2; k++) {
        double tokens =
            (double)(c[k]->micro_batch ? c[k]->micro_batch : 1) * (double)c[k]->seq / (double)whatif_cp_of(c[k]);
        g[k] = gemm_us(p, tokens, (double)c[k]->vocab / (double)c[k]->tp, (double)c[k]->hidden,
                       c[k]->has_dtype ? c[k]->dtype : HW_BF16);
    }
    return g[0] > 0 && g[1] >= 0 ? g[1] / g[0] : 0;
}

/* A layer's attention forward on the target GPU, microseconds: flash
 * attention over the sequence, or with context parallelism one block of
 * seq / cp queries and keys, or (ring) the whole ring the estimator's step
 * runs (synth_ops.c): cp blocks, block i + 1 after the key/value exchange
 * that ran beside block i. */
double whatif_attention_us(const struct whatif_price *p, const struct job_config *c, int ring, int backward)
{
    double t_us;
    struct sc_error ignored;
    double heads = (double)(c->heads / c->tp), kv = kv_heads_of(c) / (double)c->tp, cp = (double)whatif_cp_of(c);
    double b = (double)(c->micro_batch ? c->micro_batch : 1), hd = attention_head_dim_of(c);
    enum hw_dtype d = c->has_dtype ? c->dtype : HW_BF16;
    struct attn_shape s = {b, heads < 1 ? 1 : heads, kv < 1 ? 1 : kv, (double)c->seq / cp, (double)c->seq / cp,
                           hd, 1, d == HW_FP8 || d == HW_FP4 ? HW_BF16 : d};
    if (cost_kernel_flash_attention(&p->kp1, p->hw1, &s, backward, &t_us, &ignored))
        return -1;
    if (cp <= 1 || !ring)
        return t_us;
    int64_t node = whatif_node_of(c, p->hw1);
    struct coll_group pair = {2, c->tp * 2 <= node ? 2 : 1};
    double ex = whatif_coll_split_us(&p->cp1, MODEL_COLL_SENDRECV, pair,
                                     2 * b * s.seq_q * s.kv_heads * hd * cost_hw_dtype_bytes(s.dtype));
    double block_end = 0, exchange_end = 0;
    for (int64_t i = 0; i < whatif_cp_of(c); i++) {
        double prev = block_end, received = exchange_end;
        if (i + 1 < whatif_cp_of(c))
            exchange_end = fmax(exchange_end, prev) + ex;
        block_end = (i > 0 ? fmax(prev, received) : prev) + t_us;
    }
    return block_end;
}

/* A rank's key/value width under c: its key/value heads x head dim (the
 * hidden size when the description gives no heads). */
double whatif_kv_width(const struct job_config *c)
{
    double h = (double)(c->hidden ? c->hidden : 1);
    double hd = c->head_dim ? (double)c->head_dim : h / (double)(c->heads ? c->heads : 1);
    return (c->heads ? kv_heads_of(c) * hd : h) / (double)c->tp;
}

/* Weights one GPU holds under c: a pipeline stage's share of the layers,
 * their dense weights split by tp (spec_layer_dense_per_rank) and their
 * experts by ep x etp, and the embedding and output layer split by tp as
 * Megatron's vocabulary-parallel layers are. Nonzero when the description
 * lacks the model's dimensions. */
static int weights_per_gpu(const struct job_config *c, double *dense, double *experts)
{
    struct est_model m;
    int64_t ep, etp, edp;
    if (model_of(c, &m))
        return -1;
    spec_job_config_expert_groups(c, &ep, &etp, &edp);
    double layers = 0, expert_layers = 0, tp = (double)c->tp;
    for (int64_t i = 0; i < m.layers; i++) {
        struct est_layer_params lp;
        spec_layer_params(&m, i, &lp);
        layers += spec_layer_dense_per_rank(&lp, tp);
        expert_layers += lp.experts / (double)(ep * etp);
    }
    double embedding = (double)m.vocab * (double)m.hidden;
    *dense = layers / (double)c->pp + embedding * (m.tied_embeddings ? 1 : 2) / tp;
    *experts = expert_layers / (double)c->pp;
    return 0;
}

/* The ranks that share c's optimizer step: the distributed optimizer's
 * (zero_stage 1 and up, the spec's default 0 when not given) data-parallel
 * ranks, each updating its shard. */
double whatif_optimizer_shards(const struct job_config *c)
{
    return c->has_zero_stage && c->zero_stage >= 1 ? (double)(c->dp * whatif_cp_of(c)) : 1.0;
}

double whatif_params_ratio(const struct job_config *b, const struct job_config *t, enum whatif_weights part)
{
    double d0, x0, d1, x1;
    if (part == WHATIF_WEIGHTS_DP)
        part = whatif_struct_experts_apart(b) ? WHATIF_WEIGHTS_DENSE : WHATIF_WEIGHTS_ALL;
    if (!weights_per_gpu(b, &d0, &x0) && !weights_per_gpu(t, &d1, &x1)) {
        double p0 = part == WHATIF_WEIGHTS_DENSE ? d0 : part == WHATIF_WEIGHTS_EXPERTS ? x0 : d0 + x0,
               p1 = part == WHATIF_WEIGHTS_DENSE ? d1 : part == WHATIF_WEIGHTS_EXPERTS ? x1 : d1 + x1;
        if (p0 > 0 && p1 > 0)
            return p1 / p0;
    }
    int64_t ep0, ep1, etp0, etp1, edp;
    spec_job_config_expert_groups(b, &ep0, &etp0, &edp);
    spec_job_config_expert_groups(t, &ep1, &etp1, &edp);
    double r = part == WHATIF_WEIGHTS_EXPERTS ? (double)(ep0 * etp0) / (double)(ep1 * etp1)
                                              : (double)b->tp / (double)t->tp;
    r *= (double)b->pp / (double)t->pp;
    if (b->layers && t->layers)
        r *= (double)t->layers / (double)b->layers;
    return r;
}
