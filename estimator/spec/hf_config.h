/* estimator/spec/hf_config.h: a spec's model from a Hugging Face config.json.
 *
 * Users start from the model they train: `stepcast spec from-hf` reads the
 * config.json of a model on the Hugging Face hub and writes the "model"
 * object of a spec. Supported model_type values and their field names:
 *   llama, mistral, qwen2, qwen3: num_hidden_layers, hidden_size,
 *     num_attention_heads, num_key_value_heads, head_dim, intermediate_size,
 *     vocab_size, tie_word_embeddings; gated MLP ("swiglu");
 *   mixtral, gpt_oss: the same and num_local_experts, num_experts_per_tok
 *     (gpt_oss also experts_per_token), each expert of intermediate_size;
 *   qwen2_moe, qwen3_moe: the same and num_experts, moe_intermediate_size,
 *     shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers;
 *   gpt2: n_layer, n_embd, n_head, n_inner, vocab_size, n_positions; plain
 *     MLP, tied embeddings;
 *   gpt_neox: num_hidden_layers, hidden_size, num_attention_heads,
 *     intermediate_size, vocab_size; plain MLP;
 *   deepseek_v2, deepseek_v3: the llama fields (intermediate_size is the
 *     dense layers' FFN) and multi-head latent attention (kv_lora_rank,
 *     q_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim: model.mla),
 *     n_routed_experts, num_experts_per_tok, moe_intermediate_size,
 *     n_shared_experts, first_k_dense_replace (moe_layer_freq 1 only).
 *     Multi-token prediction modules (num_nextn_predict_layers) are a
 *     training option a spec does not run, and not counted; group-limited
 *     routing (n_group, topk_group) costs what plain top-k routing does.
 * Sliding-window attention: sliding_window (unless use_sliding_window is
 * false), in every layer, or in the layers layer_types names
 * sliding_attention when the full_attention ones are every k-th layer
 * (gpt_oss: every second; model.full_attention_every).
 * What a spec cannot express is an error naming it, never approximated:
 * other patterns of windowed and full layers, dense layers other than the first ones
 * among MoE layers.
 *
 * The sequence length is the one given, else the pretraining length that
 * rope_scaling.original_max_position_embeddings names, else
 * max_position_embeddings (n_positions for gpt2). */
#ifndef ESTIMATOR_HF_CONFIG_H
#define ESTIMATOR_HF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/spec/spec.h"

/* Map config.json text to *out. seq > 0 sets the sequence length; else it
 * comes from the config, and seq_from (may be NULL) names the field it came
 * from (a static string). SC_EPARSE for bad JSON, SC_EINVAL naming the
 * field or the feature that is unsupported. */
int spec_model_from_hf(const char *text, size_t len, int64_t seq, struct est_model *out,
                      const char **seq_from, struct sc_error *err);

#endif
