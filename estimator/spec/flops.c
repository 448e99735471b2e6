/* estimator/spec/flops.c: parameter and FLOP counts (definitions in flops.h). */
#include "estimator/spec/flops.h"

#include "estimator/costs/kernel_model.h"
#include "estimator/spec/placement.h"
#include "common/banned.h"

/* Weights of one MLP of FFN size ffn: two matrices, three when gated. */
static double mlp_weights(const struct est_model *m, int64_t ffn)
{
    return (m->mlp == EST_MLP_SWIGLU ? 3.0 : 2.0) * (double)m->hidden * (double)ffn;
}

/* The attention's weights: split by tp (the q, k, v and output
 * projections; with latent attention the up projections and the output
 * one) and replicated (latent attention's down projections), and its
 * norms' (the input norm's; the latents' too). */
static void attention_weights(const struct est_model *m, struct est_layer_params *out)
{
    double h = (double)m->hidden, heads = (double)m->heads;
    const struct est_mla *a = &m->mla;
    out->norms = h;
    if (!a->kv_lora_rank) {
        double q = heads * (double)m->head_dim, kv = (double)(m->kv_heads * m->head_dim);
        out->attention = h * q + 2 * h * kv + q * h;
        out->latent = 0;
        return;
    }
    double qk = (double)(a->qk_head_dim + a->qk_pos_emb_head_dim), ql = (double)a->q_lora_rank,
           kl = (double)a->kv_lora_rank;
    double q_up = ql ? ql * heads * qk : h * heads * qk; /* no query latent: one projection, split */
    out->attention = q_up + kl * heads * (double)(a->qk_head_dim + a->v_head_dim) +
                     heads * (double)a->v_head_dim * h;
    out->latent = h * (ql + kl + (double)a->qk_pos_emb_head_dim);
    out->norms += ql + kl;
}

void spec_layer_params(const struct est_model *m, int64_t i, struct est_layer_params *out)
{
    double h = (double)m->hidden;
    attention_weights(m, out);
    out->norms += h; /* the MLP's */
    out->active = out->attention + out->latent;
    if (spec_model_layer_is_moe(m, i)) {
        const struct est_moe *e = &m->moe;
        double one = mlp_weights(m, e->ffn);
        out->mlp = (double)e->shared_experts * one;
        out->experts = (double)e->experts * one;
        out->router = h * (double)e->experts;
        out->active += out->router + (double)(e->top_k + e->shared_experts) * one;
    } else {
        out->mlp = mlp_weights(m, m->ffn);
        out->experts = out->router = 0;
        out->active += out->mlp;
    }
}

double spec_layer_dense_per_rank(const struct est_layer_params *lp, double tp)
{
    return (lp->attention + lp->mlp) / tp + lp->latent + lp->router + lp->norms;
}

void spec_model_params(const struct est_model *m, struct est_params *out)
{
    double h = (double)m->hidden;
    out->embedding = (double)m->vocab * h;
    out->output = m->tied_embeddings ? 0 : out->embedding;
    out->layers = h; /* the final norm */
    out->active_gemm = (double)m->vocab * h; /* the output layer's GEMM runs either way */
    for (int64_t i = 0; i < m->layers; i++) {
        struct est_layer_params lp;
        spec_layer_params(m, i, &lp);
        out->layers += lp.attention + lp.latent + lp.mlp + lp.experts + lp.router + lp.norms;
        out->active_gemm += lp.active;
    }
    out->total = out->embedding + out->output + out->layers;
}

/* Which keys of its row a query's attention counts. */
enum keys {
    KEYS_PALM,    /* PaLM's model FLOPs: the sequence (a windowed layer: its window) */
    KEYS_VISIBLE, /* what flash attention computes: the visible ones (cost_attn_visible_keys) */
    KEYS_SQUARE   /* what unfused attention computes: the whole square */
};

static double layer_keys(const struct est_model *m, int64_t i, enum keys k)
{
    int windowed = spec_model_layer_is_windowed(m, i);
    struct attn_shape a = {.seq_q = (double)m->seq, .seq_kv = (double)m->seq, .causal = 1,
                           .window = windowed ? (double)m->attention_window : 0};
    if (k == KEYS_VISIBLE)
        return cost_attn_visible_keys(&a);
    return k == KEYS_PALM && windowed ? (double)m->attention_window : (double)m->seq;
}

/* Attention-score FLOPs of one token, forward, over all layers. */
static double attention_fwd(const struct est_model *m, enum keys k)
{
    double keys = 0;
    for (int64_t i = 0; i < m->layers; i++)
        keys += layer_keys(m, i, k);
    return 4.0 * (double)m->heads * spec_attention_head_dim(m) * keys;
}

double spec_attention_flops_fwd(const struct est_model *m)
{
    return attention_fwd(m, KEYS_PALM);
}

double spec_model_flops_per_token(const struct est_model *m)
{
    struct est_params p;
    spec_model_params(m, &p);
    return 6 * p.active_gemm + 3 * spec_attention_flops_fwd(m);
}

/* The GEMM weights a token passes through in transformer layer i, padded
 * experts included (they run), and latent attention's replicated down
 * projections once on every tensor-parallel rank unless sequence
 * parallelism splits their tokens. */
static double layer_weights(const struct est_spec *s, int64_t i)
{
    const struct est_model *m = &s->model;
    double capacity = s->options.moe_capacity_factor > 0 ? s->options.moe_capacity_factor : 1;
    double copies = s->options.sequence_parallel ? 1 : (double)s->parallel.tp;
    struct est_layer_params lp;
    spec_layer_params(m, i, &lp);
    double w = lp.active + (copies - 1) * lp.latent;
    if (spec_model_layer_is_moe(m, i))
        return w + (capacity - 1) * (double)m->moe.top_k * mlp_weights(m, m->moe.ffn);
    return w;
}

double spec_hardware_flops_per_token(const struct est_spec *s)
{
    const struct est_model *m = &s->model;
    const struct est_parallel *p = &s->parallel;
    int causal = s->options.attention != EST_ATTENTION_UNFUSED || p->cp > 1;
    enum keys k = causal ? KEYS_VISIBLE : KEYS_SQUARE;
    double layers = 0, recomputed = 0; /* GEMM weights of all layers; what the recomputed ones run again */
    for (int64_t i = 0; i < m->layers; i++)
        layers += layer_weights(s, i);
    double attention = attention_fwd(m, k);
    double flops = 6 * (layers + (double)m->vocab * (double)m->hidden) + 3 * attention;
    if (s->options.recompute == EST_RECOMPUTE_SELECTIVE)
        return flops + attention;
    if (s->options.recompute != EST_RECOMPUTE_FULL)
        return flops;
    /* each recomputed transformer layer's forward (not the output layer's):
     * of each model chunk, its first recompute_layers, or all */
    if (!s->options.recompute_layers)
        return flops + 2 * layers + attention;
    for (int64_t v = 0; v < p->pp * p->vpp; v++) {
        struct est_stage_layers st;
        if (spec_place_stage((int)m->layers, (int)p->pp, (int)p->vpp, (int)v, &st, NULL))
            break;
        for (int64_t i = 0; i < st.layers && spec_layer_recomputed(s, i); i++)
            recomputed += 2 * layer_weights(s, st.first_layer + i) +
                          4.0 * (double)m->heads * spec_attention_head_dim(m) * layer_keys(m, st.first_layer + i, k);
    }
    return flops + recomputed;
}
