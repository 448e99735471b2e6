/* estimator/spec/flops.h: parameter and FLOP counts of a spec's model.
 *
 * Parameters are the weights of the GEMMs (query, key/value, output
 * projection, latent attention's down and up projections, MLP matrices, routers, experts, input embedding, output
 * layer) and the norms' scales; biases are not counted (under 0.1% of any
 * model large enough to need an estimate). With tied embeddings the output
 * layer reuses the input embedding's weights: counted once in the total,
 * but its GEMM is still run.
 *
 * Model FLOPs per token follow PaLM (Chowdhery et al. 2022, appendix B):
 * 6 x N + 12 x layers x heads x head_dim x seq (with latent attention
 * head_dim is spec_attention_head_dim's mean of the query/key and value
 * widths), where N counts the GEMM
 * weights a token passes through (attention, the dense MLP or, in an MoE
 * layer, the router, top_k experts and the shared experts, and the output
 * layer; not the embedding lookup) and the second term is the attention
 * scores and their use on values, forward (1/3) and backward (2/3), without
 * halving for the causal mask (a sliding-window layer counts its window
 * for seq). Recomputation is not counted.
 *
 * Hardware FLOPs per token are what the synthesised step executes (the
 * FLOPs of its GEMM and attention tasks, summed, equal them): model FLOPs
 * with causal attention's visible keys only (flash attention, and every
 * context-parallel block, skips the masked half, a sliding-window layer
 * all but its window; unfused attention computes the whole square), the routed experts' GEMMs times the capacity factor (padded
 * tokens run), latent attention's down projections on every tensor-parallel
 * rank without sequence parallelism (replicated, each runs them on every
 * token), plus what recomputation executes again: the attention
 * core's forward under selective recomputation, each recomputed
 * transformer layer's forward under full recomputation (every layer, or
 * with options.recompute_layers N the first N of each model chunk). The backward of attention counts
 * twice its forward, as PaLM's does (flash attention's backward recomputes
 * the scores too; like other formulas, this one does not count that). */
#ifndef ESTIMATOR_FLOPS_H
#define ESTIMATOR_FLOPS_H

#include <stdint.h>

#include "estimator/spec/spec.h"

/* One transformer layer's parameters, by how they are sharded. */
struct est_layer_params {
    double attention; /* q, k, v and output projections (split by tp) */
    double latent;    /* latent attention's down projections (replicated) */
    double mlp;       /* the dense MLP, or an MoE layer's shared experts (split by tp) */
    double experts;   /* an MoE layer's routed experts, all of them (split by ep x etp) */
    double router;    /* an MoE layer's router (replicated) */
    double norms;     /* the two norms' scales, and latent attention's two (replicated) */
    double active;    /* GEMM weights one token passes through in this layer */
};

struct est_params {
    double total;      /* every parameter once */
    double embedding;  /* vocab x hidden */
    double output;     /* the output layer's own weights (0 when tied) */
    double layers;     /* all transformer layers, final norm included */
    double active_gemm; /* N of the PaLM formula: GEMM weights a token passes through */
};

/* Layer i (0-based; dense or MoE by the model's moe fields). */
void spec_layer_params(const struct est_model *m, int64_t i, struct est_layer_params *out);
/* A layer's weights on one of tp ranks but the routed experts': the
 * split ones' share, and the replicated ones. */
double spec_layer_dense_per_rank(const struct est_layer_params *lp, double tp);
void spec_model_params(const struct est_model *m, struct est_params *out);

/* Attention-score FLOPs of one token, forward only, over all layers:
 * 2 x (QK^T and its use on V) = 4 x heads x head_dim x the keys a query
 * attends to, the sequence (a windowed layer: its window). */
double spec_attention_flops_fwd(const struct est_model *m);

/* PaLM's model FLOPs per token (recomputation not counted). */
double spec_model_flops_per_token(const struct est_model *m);
/* What spec s's step executes per token (hardware FLOPs, above). */
double spec_hardware_flops_per_token(const struct est_spec *s);

#endif
