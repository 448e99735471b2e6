/* estimator/spec/spec.h: the training-job spec that estimates are made from.
 *
 * A spec is one JSON document with four objects, model, parallel, cluster
 * and options; data/spec.schema.json is its JSON Schema and README.md
 * ("Estimating a configuration") documents each field. The format is
 * stable: tools write it. Parsing is strict: an unknown key, a value of the
 * wrong type or range, or a configuration that cannot run (heads not
 * divisible by tp, ...) is SC_EINVAL with a message that starts with the
 * field's JSON path, e.g. "parallel.tpp: unknown key". Absent keys take the
 * documented defaults, so a parsed spec is complete.
 *
 * Two steps: spec_parse() checks everything that needs no hardware
 * profile; spec_check_gpu() checks the GPU (it has a profile, and the
 * dtype is one it computes in). spec_load() does both. */
#ifndef ESTIMATOR_SPEC_H
#define ESTIMATOR_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/hardware.h"
#include "estimator/doc/json_doc.h"

enum est_mlp {
    EST_MLP_GELU,  /* two matrices and any plain activation (GELU, ReLU, squared ReLU) */
    EST_MLP_SWIGLU /* gated: three matrices, the first two fused (gate and up) */
};
enum est_schedule { EST_SCHEDULE_1F1B, EST_SCHEDULE_INTERLEAVED };
enum est_attention {
    EST_ATTENTION_FLASH,  /* one fused kernel (FlashAttention, cuDNN): the scores never in memory */
    EST_ATTENTION_UNFUSED /* scores by a batched GEMM, a fused softmax and dropout, then P V */
};
/* Megatron-Core's MoE token dispatchers (--moe-token-dispatcher-type). */
enum est_moe_dispatcher {
    EST_MOE_DISPATCHER_ALLTOALL,  /* all-to-all over ep (the default) */
    EST_MOE_DISPATCHER_ALLGATHER, /* every token gathered over ep x etp, reduce-scattered back */
    EST_MOE_DISPATCHER_FLEX       /* DeepEP's fused dispatch and combine */
};
enum est_moe_routing {
    EST_MOE_ROUTING_BALANCED, /* dropless, every expert the mean load (force-balanced, as benchmarks run) */
    EST_MOE_ROUTING_NATURAL   /* learned routing: the busiest expert est_costs.moe_imbalance x the mean */
};
/* Transformer Engine's fp8 scaling recipes (transformer_engine/common/
 * recipe): the kernels each runs to quantise a GEMM's operands are in
 * estimator/synth/quant.h. NONE: the dtype is not fp8. */
enum est_fp8_recipe {
    EST_FP8_RECIPE_NONE,
    EST_FP8_RECIPE_TENSORWISE, /* one scale per tensor (Float8CurrentScaling; delayed scaling's too) */
    EST_FP8_RECIPE_BLOCKWISE,  /* Float8BlockScaling: 1x128 activation and gradient blocks, 128x128 weight blocks */
    EST_FP8_RECIPE_MXFP8       /* MXFP8BlockScaling: 1x32 blocks, E8M0 scales (Blackwell) */
};
/* AUTO: the least of none, selective and full that fits the GPU's memory
 * (spec_memory_resolve_recompute), chosen per estimate. */
enum est_recompute { EST_RECOMPUTE_NONE, EST_RECOMPUTE_SELECTIVE, EST_RECOMPUTE_FULL, EST_RECOMPUTE_AUTO };
/* Where the optimizer's weights and state live (estimator/spec/memory.h):
 * FP32: mixed precision, fp32 master weights, gradients and Adam moments
 * beside the 16-bit weights; BF16: pure bf16 training, weights, gradients
 * and moments all in bf16. */
enum est_master_weights { EST_MASTER_FP32, EST_MASTER_BF16 };
/* Whose training step the memory model follows (estimator/spec/memory.h):
 * Megatron-LM's, or a plain eager PyTorch loop's (torch.autocast,
 * F.cross_entropy, optimizer.zero_grad(set_to_none=True)). */
enum est_framework { EST_FRAMEWORK_MEGATRON, EST_FRAMEWORK_PYTORCH };

/* The largest values a spec, a job description and a what-if set take.
 * No real training job comes near them (the largest published runs have
 * ~130 layers, hidden 25,600, 256 routed experts, 16M tokens a step); they
 * keep every count the estimator forms (tasks, micro-batches, FLOPs,
 * bytes) far from overflow, and a request past one is refused by the
 * parser, the field named. README.md ("Limits of a spec") lists them. */
#define EST_MAX_LAYERS 4096
#define EST_MAX_HIDDEN (1 << 17)
#define EST_MAX_HEADS (1 << 12)      /* heads, kv_heads, head_dim */
#define EST_MAX_FFN (1 << 20)        /* model.ffn, model.moe.ffn */
#define EST_MAX_SEQ (1 << 24)
#define EST_MAX_VOCAB (1 << 22)
#define EST_MAX_EXPERTS (1 << 14)
#define EST_MAX_DEGREE (1 << 20)     /* tp, cp, pp, dp, ep, etp, fsdp_shard */
#define EST_MAX_MICRO_BATCH (1 << 16)
#define EST_MAX_GLOBAL_BATCH (1 << 24)
#define EST_MAX_GPUS (1 << 24)       /* tp x cp x pp x dp */

struct est_moe {
    int64_t experts;        /* routed experts; 0 = no MoE */
    int64_t top_k;          /* experts per token */
    int64_t ffn;            /* each expert's FFN size (default: model.ffn) */
    int64_t shared_experts; /* experts every token passes through, each of size ffn */
    int64_t every;          /* MoE in every `every`-th layer ... */
    int64_t dense_layers;   /* ... after this many dense layers first */
};

/* Multi-head latent attention (DeepSeek-V2 and V3; Megatron-Core's
 * MLATransformerConfig names): queries and keys/values projected down to
 * latent vectors, normed, and up again per head. Each query and key head is
 * qk_head_dim wide plus a rotary part of qk_pos_emb_head_dim (the key's
 * shared by every head), each value head v_head_dim. The down projections
 * are replicated across tensor-parallel ranks, the up ones split by heads. */
struct est_mla {
    int64_t kv_lora_rank;        /* the key/value latent; 0 = no latent attention */
    int64_t q_lora_rank;         /* the query latent; 0 = queries projected in one GEMM */
    int64_t qk_head_dim;         /* default 128 */
    int64_t qk_pos_emb_head_dim; /* default 64 */
    int64_t v_head_dim;          /* default 128 */
};

struct est_model {
    int64_t layers, hidden, heads;
    int64_t kv_heads;  /* key/value heads (grouped-query attention when < heads) */
    int64_t head_dim;  /* default hidden / heads; with mla, qk_head_dim + qk_pos_emb_head_dim */
    int64_t ffn;       /* default 4 x hidden */
    enum est_mlp mlp;
    int64_t seq, vocab;
    /* sliding-window attention: a query attends to at most this many keys
     * (itself and the ones before it) in a windowed layer; 0 = none */
    int64_t attention_window;
    /* with a window, every k-th layer (the k-th, 2k-th, ...) attends to the
     * whole sequence (GPT-OSS alternates: 2); 0 = every layer windowed */
    int64_t full_attention_every;
    int tied_embeddings; /* the output layer reuses the input embedding's weights */
    struct est_moe moe;
    struct est_mla mla;
    int dropout; /* hidden (and attention) dropout: its masks kept for the backward */
    /* a plain (GELU) MLP model's linear layers have biases, whose gradients
     * the backward sums over tokens; a gated (SwiGLU) one's never do */
    int bias;
};

struct est_parallel {
    int64_t tp, cp, pp, dp, ep;
    int64_t etp;          /* expert tensor parallelism, default tp */
    int64_t micro_batch;  /* sequences per micro-batch */
    int64_t global_batch; /* sequences per step, default micro_batch x dp */
    enum est_schedule schedule;
    int64_t vpp;          /* virtual stages (model chunks) per pipeline rank */
    /* ZeRO-3's shard group: the dp x cp ranks shard parameters, gradients
     * and optimizer state within groups of this size and replicate them
     * across groups (hybrid sharding); 0 = all dp x cp ranks */
    int64_t fsdp_shard;
};

struct est_cluster {
    char gpu[48];            /* hardware profile id, e.g. "h100-sxm" */
    int64_t gpus_per_node;   /* GPUs in one NVLink domain (default: the profile's, 72 on GB200) */
    double intra_node_gbps;  /* GB/s per GPU per direction; 0 = the profile's */
    double inter_node_gbps;  /* 0 = the profile's */
    char profile[1024];      /* calibrated cluster profile (path), "" = none */
    double gpu_hour_usd;     /* < 0 = not given */
};

struct est_options {
    enum hw_dtype dtype; /* fp32, fp16, bf16, fp8 or fp4 */
    enum est_recompute recompute;
    /* with recompute full, the transformer layers of each model chunk
     * recomputed, the first of it (Megatron's --recompute-method block
     * --recompute-num-layers); 0 = all of them */
    int64_t recompute_layers;
    enum est_attention attention;
    int64_t zero_stage; /* 0-3; Megatron's distributed optimizer is stage 1 */
    int sequence_parallel, overlap_grad_reduce, overlap_param_gather, tp_comm_overlap;
    double train_tokens; /* 0 = not given */
    enum est_moe_routing moe_routing;
    enum est_moe_dispatcher moe_dispatcher;
    /* tokens an expert takes, over the mean: beyond it they are dropped,
     * below it padded (Megatron's --moe-expert-capacity-factor with its
     * input padded to capacity); 0 = dropless */
    double moe_capacity_factor;
    /* with dtype fp8: default by the GPU's architecture (mxfp8 on
     * Blackwell, else tensorwise); NONE with any other dtype */
    enum est_fp8_recipe fp8_recipe;
    enum est_master_weights master_weights;
    /* gradients accumulated and reduced in fp32 (Megatron's main grads,
     * --accumulate-allreduce-grads-in-fp32; NeMo's grad_reduce_in_fp32):
     * by default on with bf16 weights (dtype bf16, fp8, fp4), off with fp16
     * and fp32 (which has them anyway) */
    int grad_reduce_in_fp32;
    enum est_framework framework;
};

struct est_spec {
    struct est_model model;
    struct est_parallel parallel;
    struct est_cluster cluster;
    struct est_options options;
};

/* The pipeline schedule's checks, shared by a spec and a job description
 * (job_config.h): vpp > 1 needs pp > 1 and the interleaved schedule, which
 * needs vpp > 1; pp x vpp virtual stages at most layers + 2; the
 * interleaved schedule's micro-batches per step divisible by pp. layers
 * and micro_batches 0 = not known (their checks skipped). SC_EINVAL naming
 * the field, the parallelism fields after prefix par ("parallel.") and
 * the layers after mod ("model."). */
int spec_schedule_check(int64_t pp, int64_t vpp, enum est_schedule schedule, int64_t layers,
                       int64_t micro_batches, const char *par, const char *mod, struct sc_error *err);
/* The names of the spec's enums as documents spell them, each list ending
 * in a NULL name (estimator/doc/json_doc.h). */
extern const struct doc_name spec_schedule_names[], spec_recompute_names[], spec_mlp_names[],
    spec_framework_names[], spec_master_weights_names[];
/* "1f1b" or "interleaved" to the schedule (SC_EINVAL for another name), and
 * back. */
int spec_schedule_parse(const char *name, enum est_schedule *out);
const char *spec_schedule_name(enum est_schedule s);
/* "none", "selective", "full" or "auto" to the recomputation (SC_EINVAL
 * for another name), and back. */
int spec_recompute_parse(const char *name, enum est_recompute *out);
const char *spec_recompute_name(enum est_recompute r);
/* "gelu" or "swiglu" to the MLP (SC_EINVAL for another name), and back. */
int spec_mlp_parse(const char *name, enum est_mlp *out);
const char *spec_mlp_name(enum est_mlp m);
/* "megatron" or "pytorch" to the framework, "fp32" or "bf16" to the master
 * weights (SC_EINVAL for another name), and back. */
int spec_framework_parse(const char *name, enum est_framework *out);
const char *spec_framework_name(enum est_framework f);
int spec_master_weights_parse(const char *name, enum est_master_weights *out);
const char *spec_master_weights_name(enum est_master_weights m);

/* Parse and check a spec document (text of len bytes, not NUL-terminated
 * necessarily). *out is complete with defaults on success. Bad JSON is
 * SC_EPARSE; everything else SC_EINVAL or SC_ELIMIT, the field named. */
int spec_parse(const char *text, size_t len, struct est_spec *out, struct sc_error *err);
/* Which keys a document held (spec_parse_template). */
#define EST_SPEC_MAX_KEYS 96
struct est_spec_given {
    unsigned char key[EST_SPEC_MAX_KEYS]; /* by the index in spec_keys() */
};

/* A spec whose parallel and options objects may leave values open (the
 * planner's input): parsed and checked as spec_parse does, defaults
 * filled, except the checks across parallel and options, which
 * spec_check() makes once every value is set. *given records which
 * keys the document held (a null etp counts as not given). */
int spec_parse_template(const char *text, size_t len, struct est_spec *out,
                            struct est_spec_given *given, struct sc_error *err);
/* Whether the document held the key at path (e.g. "parallel.tp"). */
int spec_given_has(const struct est_spec_given *given, const char *path);
/* The checks across parallel and options that spec_parse makes (and
 * the defaults that depend on them: etp = tp when 0, global_batch =
 * micro_batch x dp when 0): SC_EINVAL naming the field. */
int spec_check(struct est_spec *s, struct sc_error *err);

/* The GPU has a profile and computes in the spec's dtype (fp4, NVFP4, on
 * Blackwell only), and takes its fp8 recipe (mxfp8 on Blackwell only,
 * blockwise on Hopper and later); *profile (may be NULL) is set to it.
 * SC_EINVAL naming cluster.gpu, options.dtype or options.fp8_recipe. */
int spec_check_gpu(const struct est_spec *spec, const struct hw_profile **profile,
                       struct sc_error *err);
/* spec_parse() then spec_check_gpu(). */
int spec_load(const char *text, size_t len, struct est_spec *out,
                  const struct hw_profile **profile, struct sc_error *err);

/* A model with the defaults that depend on nothing else (mlp gelu, vocab
 * 50257, moe.every 1, dropout, bias) and 0 in every other field, meaning "not given". */
void spec_model_init(struct est_model *m);
/* Fill the defaults that depend on other fields (kv_heads, head_dim, ffn,
 * moe.ffn) and check what the model alone must satisfy. */
int spec_model_resolve(struct est_model *m, struct sc_error *err);

/* Parse {"model":{...}}, a spec's model alone (what spec_model_json writes). */
int spec_model_parse(const char *text, size_t len, struct est_model *out, struct sc_error *err);

/* The spec as JSON text with every default written out (malloc'd; NULL when
 * out of memory). Parsing it again gives the same spec. */
char *spec_json(const struct est_spec *spec);
/* {"model":{...}} with every model field written out (malloc'd or NULL). */
char *spec_model_json(const struct est_model *model);

/* GPUs the job uses: tp x cp x pp x dp. */
int64_t spec_gpus(const struct est_spec *spec);
/* Micro-batches per step on each pipeline: global_batch / (micro_batch x dp). */
int64_t spec_micro_batches(const struct est_spec *spec);
/* Whether Megatron's fused causal scale-mask-softmax kernel takes the
 * scores of the spec's unfused attention (FusedScaleMaskSoftmax.
 * is_kernel_available, NVIDIA/Megatron-LM megatron/model/fused_softmax.py):
 * keys (seq / cp) 17 to 4096, a multiple of 4, and the attention batches
 * (micro-batch x heads per rank) a multiple of the kernel's batches per
 * block, 4 (8 when there are at most 128 keys). Else PyTorch runs the
 * softmax op by op, in fp32. */
int spec_fused_softmax(const struct est_spec *spec);
/* Whether transformer layer i (0-based) attends through a window narrower
 * than the sequence. */
int spec_model_layer_is_windowed(const struct est_model *model, int64_t i);
/* Whether the transformer layer at place `in_chunk` (0-based) of its
 * model chunk runs options.recompute's recomputation before its backward:
 * under "selective" every layer; under "full" every layer or, with
 * options.recompute_layers N, the chunk's first N; else none. */
int spec_layer_recomputed(const struct est_spec *spec, int64_t in_chunk);
/* The most transformer layers one model chunk (virtual pipeline stage)
 * holds, as estimator/spec/placement.h places them; 0 when they cannot be
 * placed. */
int64_t spec_chunk_layers_most(const struct est_spec *spec);
/* The width the attention core's cost follows: head_dim, or with latent
 * attention the mean of the query/key and value heads' (their products
 * with the scores cost what heads of that one width would). */
double spec_attention_head_dim(const struct est_model *model);
/* Whether transformer layer i (0-based) is an MoE layer. */
int spec_model_layer_is_moe(const struct est_model *model, int64_t i);

/* Every key path the parser accepts ("model.layers", "model.moe.top_k",
 * ...; objects too: "model", "model.moe"), NULL-terminated. The schema test
 * compares it with data/spec.schema.json. */
const char *const *spec_keys(void);

#endif
