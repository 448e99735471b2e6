/* estimator/spec/memory.h: the memory one GPU needs for a spec, per pipeline
 * stage, and whether it fits.
 *
 * Model states (Rajbhandari et al. 2020, ZeRO), bytes per parameter
 * (spec_state_bytes), by options.master_weights:
 *   fp32 (mixed precision, the default): 2 of 16-bit weights, 4 of fp32
 *     gradients (Megatron accumulates them in its fp32 main-grad buffers;
 *     PyTorch's autocast over fp32 weights has fp32 gradients too) and 12
 *     of optimizer state (fp32 master weights, Adam's momentum and
 *     variance): 18;
 *   bf16 (pure bf16 training): weights, gradients and the two moments all
 *     in bf16: 2 + 2 + 4;
 * fp32 training 4 + 4 + 8 (no master copy). fp8 and fp4 training keep
 * 16-bit weights as Transformer Engine does. ZeRO stage 1 (Megatron's distributed optimizer)
 * shards the optimizer state over the data-parallel ranks, stage 2 the
 * gradients too, stage 3 the weights too (plus a gathered copy of two
 * layers' weights, or of the embedding or output layer when larger, the
 * one computing and the one prefetched). Dense weights
 * are split by tp and sharded over dp x cp; expert weights are split over
 * ep x etp and sharded over the expert data-parallel ranks tp x cp x dp /
 * (ep x etp); norms and routers are replicated within the tensor-parallel
 * group.
 *
 * Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation
 * in Large Transformer Models") are derived from the tensors each layer
 * keeps for its backward, per micro-batch of T = micro_batch x seq / cp
 * tokens, 16-bit values (fp32 training: 4 bytes), 1-byte dropout masks
 * (none when model.dropout is false); under fp8 and fp4 a GEMM's input
 * (the QKV, output projection, first and second matrices' inputs, a
 * routed token's) is kept as Transformer Engine keeps it for its weight
 * gradient, quantised: a byte (fp8), or half a byte and a scale per 16
 * (NVFP4):
 *   attention: norm input, QKV input, Q, K, V, the output projection's
 *     input, dropout mask; unfused attention (options.attention) also keeps
 *     the softmax output, its dropout mask and the dropout output (heads x
 *     seq x seq/cp each: the paper's 5·a·s/h term); flash attention, the
 *     default, keeps instead only the softmax statistics (one fp32
 *     log-sum-exp per head and query row, 4 x heads x seq/cp bytes);
 *   MLP: norm input, first matrix's input, the activation's input (gated:
 *     gate and up, 2 x ffn) and output, dropout mask; an MoE layer keeps
 *     these for its shared experts and, for top_k x T tokens, each routed
 *     token's input and its expert's intermediates.
 * The norms' and first matrices' inputs and the masks are replicated
 * across tp unless sequence parallelism splits them; everything else is
 * split by tp. With heads = kv_heads, ffn = 4 x hidden, a plain MLP and
 * unfused attention this gives the paper's s·b·h·(34 + 5·a·s/h) without
 * tp, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tp t, and the sum over t with
 * sequence parallelism. Selective recomputation drops the attention-score
 * tensors (or flash attention's statistics); full recomputation keeps
 * each recomputed layer's input (of every layer, or with
 * options.recompute_layers N of the first N of each model chunk, the
 * others keeping all of theirs) and, once per stage, one layer's
 * activations while it is recomputed. The first stage also keeps the embedding's dropout mask;
 * the last stage the final norm's and the output layer's inputs, and at
 * its peak the logits' working set (per token and vocabulary entry / tp):
 * Megatron's vocab-parallel cross entropy holds the fp32 softmax, which
 * its backward turns into the gradient in place, beside the 16-bit logits
 * or the gradient's 16-bit cast: 6 bytes.
 *
 * options.framework "pytorch" models a plain eager PyTorch loop instead
 * of Megatron's step (profiler/torch-step.py's), where it differs:
 *   - with fp32 master weights the loop is torch.autocast over fp32
 *     weights: the residual stream (each norm's input) is fp32, the norms'
 *     outputs are cast to 16 bits for the matrices that keep them, and
 *     autocast's 16-bit copies of the weights live through the forward and
 *     backward (the 2-byte weights above); with bf16 master weights the
 *     model is cast to bf16 and every value is 16-bit;
 *   - SwiGLU is unfused: silu(gate) is kept too (4 x ffn, not 3);
 *   - F.cross_entropy over fp32 logits keeps the log-softmax, and its
 *     backward holds it with the NLL's gradient and its own: 12 bytes per
 *     token and vocabulary entry;
 *   - zero_grad(set_to_none=True) frees the gradients between steps: the
 *     peak is the larger of the backward's start (states less gradients,
 *     every activation) and its end (all states, less autocast's copies).
 *
 * Micro-batches in flight: pipeline rank r runs its forward and backward
 * passes in Megatron's order: W warm-up forward passes, pairs of one
 * forward and one backward, the remaining backward passes; W = pp - r - 1
 * under 1F1B, 2(pp - r - 1) + (vpp - 1)pp under the interleaved schedule
 * (at most m x vpp, m micro-batches per step). Interleaved forward pass f
 * runs model chunk (f mod pp·vpp) / pp, backward pass b chunk vpp - 1 -
 * (b mod pp·vpp) / pp. Its peak holds W + 1 forward passes (1F1B: min(pp -
 * r, m) micro-batches); with chunks of unequal size, the peak is the
 * largest such set along that order.
 *
 * Not modelled: temporary buffers of a single kernel, the norms' saved
 * means and deviations (8 bytes a token each), communication buffers, the CUDA context and allocator fragmentation; those are what the
 * reserve of EST_MEMORY_RESERVE_GB plus EST_MEMORY_RESERVE_FRACTION of the
 * GPU's memory is kept for. GB = 1e9 bytes. */
#ifndef ESTIMATOR_MEMORY_H
#define ESTIMATOR_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "estimator/spec/spec.h"

#define EST_MEMORY_RESERVE_GB 2.0        /* CUDA context, cuBLAS and NCCL workspaces */
#define EST_MEMORY_RESERVE_FRACTION 0.05 /* allocator fragmentation */

/* Bytes per GPU of parameters' weights, gradients and optimizer state. */
struct est_model_states {
    double weights, gradients, optimizer;
};

/* Bytes per parameter of each model state under options o (above);
 * master: a separate fp32 master copy (in optimizer) beside the weights. */
struct est_state_bytes {
    double weights, gradients, optimizer;
    int master;
};
void spec_state_bytes(const struct est_options *o, struct est_state_bytes *out);
/* Bytes an Adam step moves per parameter: the gradient read, the
 * optimizer state read and written, the weights written from the master
 * copy (without one, read and written). */
double spec_optimizer_step_bytes(const struct est_state_bytes *b);

/* The model states of `params` parameters of b's bytes under ZeRO stage
 * zero_stage (0-3) over `shards` data-parallel ranks, per GPU. */
void spec_model_states(double params, const struct est_state_bytes *b, int zero_stage, int64_t shards,
                      struct est_model_states *out);

/* Bytes one transformer layer keeps per micro-batch on one GPU. */
struct est_layer_activations {
    double kept; /* under the spec's recomputation */
    double full; /* without recomputation (held while the layer is recomputed) */
};
void spec_layer_activations(const struct est_spec *s, int64_t layer, struct est_layer_activations *out);

/* A pipeline rank's parameters per GPU, before ZeRO shards them. */
struct est_stage_params {
    double dense;   /* sharded over dp x cp */
    double experts; /* sharded over the expert data-parallel ranks */
    /* the most weights one ZeRO-3 gather brings to this GPU: a layer's,
     * the embedding's or the output layer's (synth_data_parallel.c gathers each) */
    double largest_layer;
};

struct est_stage_memory {
    int64_t stage;        /* pipeline rank */
    struct est_stage_params params;
    struct est_model_states states;
    double activations;   /* at the peak, with the transient: a layer recomputed, the loss */
    int64_t in_flight;    /* model-chunk forward passes held at the peak */
    double total;         /* bytes at the peak: states + activations (PyTorch: see above) */
};

struct est_memory {
    struct est_stage_memory *stages; /* one per pipeline rank, malloc'd */
    int64_t n_stages;
    int64_t worst_stage;
    double gb_per_gpu;  /* the worst stage's peak, GB */
    double capacity_gb; /* the GPU's memory less the reserve */
    int fits;           /* gb_per_gpu <= capacity_gb */
    enum est_recompute recompute; /* the one modelled: options.recompute, or what auto chose */
    int64_t recompute_layers;     /* with full: options.recompute_layers, or what auto chose (0: all) */
};

/* The memory of every pipeline stage of spec s on a GPU with hbm_gb of
 * memory. Release with spec_memory_release(). Under options.recompute
 * "auto" it is the memory of the least recomputation that fits (none,
 * selective, full of 1, 2, ... layers of each model chunk, full of all;
 * full of all when none does), out->recompute and out->recompute_layers
 * say which. */
int spec_memory_estimate(const struct est_spec *s, double hbm_gb, struct est_memory *out,
                        struct sc_error *err);
/* spec_memory_estimate with the parameters, activations and in-flight
 * passes of like's stages copied from `like` (NULL: modelled), an
 * estimate of a spec that differs from s in options.zero_stage at most:
 * they do not depend on ZeRO, so a search that tries each ZeRO stage of a
 * layout models them once. With `until_over`, it stops at the first stage
 * that does not fit (pipeline rank 0 first, which holds the most passes
 * in flight): out->n_stages counts the stages modelled, and when it is
 * less than pp the estimate does not fit, which is all a check needs. */
int spec_memory_estimate_like(const struct est_spec *s, const struct est_memory *like, double hbm_gb,
                             int until_over, struct est_memory *out, struct sc_error *err);
void spec_memory_release(struct est_memory *m);
/* *out = *s with the recomputation m was estimated with: options.recompute
 * (and recompute_layers) as given, or what "auto" chose. */
void spec_memory_chosen_spec(const struct est_spec *s, const struct est_memory *m, struct est_spec *out);
/* *out = *s with options.recompute "auto" replaced by what it chooses on a
 * GPU with hbm_gb of memory (any other value kept): what the step is
 * synthesised with. */
int spec_memory_resolve_recompute(const struct est_spec *s, double hbm_gb, struct est_spec *out,
                                 struct sc_error *err);

/* One line on the fit, e.g. "pipeline stage 0 needs 93.2 GB per GPU, more
 * than the 74.0 GB usable" (or "..., within the 74.0 GB usable"). */
void spec_memory_fit_text(const struct est_memory *m, char *buf, size_t n);

#endif
