/* tests/unit/test_hf_config.c: what `spec from-hf` refuses, each with the
 * field or feature named, Qwen's MoE layer rule, and latent attention's
 * weights without a query latent. */
#include <math.h>
#include <string.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/hf_config.h"
#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "common/banned.h"

TEST(hf_config_refusals)
{
    struct est_model m;
    struct sc_error err;
    const char *bad[][2] = {
        {"{\"model_type\":\"bert\",\"num_hidden_layers\":2}", "model_type \"bert\" is unsupported"},
        {"{\"num_hidden_layers\":2}", "model_type \"(none)\""},
        {"{\"model_type\":\"llama\",\"hidden_size\":64}", "num_hidden_layers is missing"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2.5}", "num_hidden_layers must be an integer"},
        {"{\"model_type\":\"mistral\",\"num_hidden_layers\":3,\"hidden_size\":64,"
         "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
         "\"max_position_embeddings\":32768,\"sliding_window\":4096,\"layer_types\":[\"full_attention\","
         "\"sliding_attention\",\"full_attention\"]}",
         "full attention other than every k-th layer"},
        {"{\"model_type\":\"qwen2_moe\",\"num_hidden_layers\":4,\"hidden_size\":64,"
         "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
         "\"max_position_embeddings\":64,\"num_experts\":4,\"num_experts_per_tok\":2,"
         "\"moe_intermediate_size\":32,\"mlp_only_layers\":[2]}",
         "mlp_only_layers other than the first layers"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,"
         "\"num_attention_heads\":4,\"num_key_value_heads\":3,\"intermediate_size\":128,"
         "\"vocab_size\":100,\"max_position_embeddings\":64}",
         "model.kv_heads: 3 does not divide"},
        {"{\"model_type\":\"deepseek_v3\",\"num_hidden_layers\":4,\"hidden_size\":64,"
         "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
         "\"max_position_embeddings\":64,\"q_lora_rank\":32,\"qk_nope_head_dim\":16,"
         "\"qk_rope_head_dim\":8,\"v_head_dim\":16}",
         "kv_lora_rank is missing"},
        {"{\"model_type\":\"deepseek_v3\",\"num_hidden_layers\":4,\"hidden_size\":64,"
         "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
         "\"max_position_embeddings\":64,\"kv_lora_rank\":16,\"qk_nope_head_dim\":16,"
         "\"qk_rope_head_dim\":8,\"v_head_dim\":16,\"n_routed_experts\":8,\"num_experts_per_tok\":2,"
         "\"moe_intermediate_size\":32,\"moe_layer_freq\":2}",
         "moe_layer_freq 2"},
        {"not json", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(spec_model_from_hf(bad[i][0], strlen(bad[i][0]), 0, &m, NULL, &err) != SC_OK);
        CHECK_CONTAINS(err.msg, bad[i][1]);
    }
    /* Qwen2-MoE: a shared expert four experts wide, MoE every second layer */
    const char *qwen2 = "{\"model_type\":\"qwen2_moe\",\"num_hidden_layers\":4,\"hidden_size\":64,"
                        "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
                        "\"max_position_embeddings\":64,\"num_experts\":4,\"num_experts_per_tok\":2,"
                        "\"moe_intermediate_size\":32,\"shared_expert_intermediate_size\":128,"
                        "\"decoder_sparse_step\":2}";
    CHECK_EQ_INT(spec_model_from_hf(qwen2, strlen(qwen2), 0, &m, NULL, &err), SC_OK);
    CHECK_EQ_INT(m.moe.shared_experts, 4);
    /* Qwen's rule: layer i is sparse when (i + 1) % step == 0 */
    CHECK(!spec_model_layer_is_moe(&m, 0) && spec_model_layer_is_moe(&m, 1));
    CHECK(!spec_model_layer_is_moe(&m, 2) && spec_model_layer_is_moe(&m, 3));

    /* DeepSeek-V2-Lite's shape: latent attention with no query latent (one
     * query projection, split by tp), no MoE given */
    const char *lite = "{\"model_type\":\"deepseek_v2\",\"num_hidden_layers\":2,\"hidden_size\":64,"
                       "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
                       "\"max_position_embeddings\":64,\"q_lora_rank\":null,\"kv_lora_rank\":16,"
                       "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12}";
    CHECK_EQ_INT(spec_model_from_hf(lite, strlen(lite), 0, &m, NULL, &err), SC_OK);
    CHECK_EQ_INT(m.mla.q_lora_rank, 0);
    CHECK_EQ_INT(m.head_dim, 24);
    CHECK_EQ_INT(m.moe.experts, 0);
    struct est_layer_params lp;
    spec_layer_params(&m, 0, &lp);
    /* q: 64 x 4 x 24; kv up: 16 x 4 x (16 + 12); out: 4 x 12 x 64; down: 64 x (16 + 8) */
    CHECK_EQ_INT((long long)lp.attention, 64 * 4 * 24 + 16 * 4 * 28 + 4 * 12 * 64);
    CHECK_EQ_INT((long long)lp.latent, 64 * 24);
    CHECK_EQ_INT((long long)lp.norms, 2 * 64 + 16);
    CHECK(fabs(spec_attention_head_dim(&m) - 18) < 1e-9); /* (24 + 12) / 2 */
}
