/* tests/unit/test_hf_config.c: what `spec from-hf` refuses, each with the
 * field or feature named, and Qwen's MoE layer rule. */
#include <string.h>

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
}
