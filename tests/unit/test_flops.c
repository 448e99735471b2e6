/* tests/unit/test_flops.c: parameter and FLOP counts against published
 * model sizes, each recomputed here by hand from the architecture. */
#include <string.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "common/banned.h"

static struct est_model model(const char *json)
{
    struct est_model m;
    struct sc_error err;
    memset(&m, 0, sizeof m);
    if (spec_model_parse(json, strlen(json), &m, &err))
        sc_check_fail(__FILE__, __LINE__, "%s: %s", json, err.msg);
    return m;
}

TEST(flops_llama31_8b_parameters)
{
    /* meta-llama/Llama-3.1-8B: 8,030,261,248 parameters (its safetensors) */
    struct est_model m = model("{\"model\":{\"layers\":32,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,"
                               "\"ffn\":14336,\"mlp\":\"swiglu\",\"seq\":8192,\"vocab\":128256}}");
    struct est_params p;
    spec_model_params(&m, &p);
    double h = 4096, kv = 8 * 128, V = 128256;
    double layer = h * h * 2 + 2 * h * kv + 3 * h * 14336 + 2 * h;
    CHECK_NEAR(p.total, 2 * V * h + 32 * layer + h, 0.5);
    CHECK_NEAR(p.total, 8030261248.0, 0.5);
    CHECK_NEAR(p.active_gemm, 32 * (layer - 2 * h) + V * h, 0.5);
}

TEST(flops_gpt3_175b_parameters_and_flops)
{
    /* GPT-3 175B (Brown et al. 2020): 96 layers, hidden 12288, 96 heads,
     * seq 2048, tied embeddings: 12 L h^2 + V h (+ norms) ~ 175e9 */
    struct est_model m = model("{\"model\":{\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq\":2048,"
                               "\"vocab\":50257,\"tied_embeddings\":true}}");
    struct est_params p;
    spec_model_params(&m, &p);
    double L = 96, h = 12288, V = 50257, s = 2048;
    CHECK_NEAR(p.total, 12 * L * h * h + V * h + L * 2 * h + h, 0.5);
    CHECK_NEAR(p.total / 175e9, 1, 0.01);
    double n = 12 * L * h * h + V * h; /* GEMMs a token passes, the output layer's included */
    CHECK_NEAR(p.active_gemm, n, 0.5);
    double model_flops = 6 * n + 12 * L * h * s;
    CHECK_NEAR(spec_model_flops_per_token(&m) / model_flops, 1, 1e-12);

    /* hardware FLOPs: causal attention's visible keys, (s + 1) / 2 a query,
     * under flash attention (and context parallelism), the whole square
     * unfused */
    struct est_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.model = m;
    sp.parallel.cp = 1;
    double visible = 2 * L * h * (s + 1); /* forward, a token */
    double causal = 6 * n + 3 * visible;
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / causal, 1, 1e-12);
    sp.options.recompute = EST_RECOMPUTE_SELECTIVE;
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / (causal + visible), 1, 1e-12);
    sp.options.recompute = EST_RECOMPUTE_FULL;
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / (causal + 2 * 12 * L * h * h + visible), 1, 1e-12);
    sp.options.attention = EST_ATTENTION_UNFUSED;
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / (model_flops + 2 * 12 * L * h * h + 4 * L * h * s), 1, 1e-12);
    sp.parallel.cp = 2; /* the ring's blocks are flash attention's */
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / (causal + 2 * 12 * L * h * h + visible), 1, 1e-12);

    /* the first 3 of each model chunk's 12 layers (pp 4 x vpp 2): a quarter of
     * the layers run their forward again */
    sp.parallel.pp = 4;
    sp.parallel.vpp = 2;
    sp.options.recompute_layers = 3;
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / (causal + (2 * 12 * L * h * h + visible) / 4), 1, 1e-12);
    /* 95 layers over 8 (neither 95 nor 97 divides): chunks of 11, 13, 12 x 5
     * and 11; of each its first 3 (24 layers) or 12 (94 layers) */
    sp.model.layers = 95;
    sp.options.recompute_layers = 0;
    double all = spec_hardware_flops_per_token(&sp);
    sp.options.recompute = EST_RECOMPUTE_NONE;
    double none = spec_hardware_flops_per_token(&sp);
    sp.options.recompute = EST_RECOMPUTE_FULL;
    sp.options.recompute_layers = 3;
    CHECK_NEAR((spec_hardware_flops_per_token(&sp) - none) / (all - none), 24.0 / 95, 1e-12);
    sp.options.recompute_layers = 12;
    CHECK_NEAR((spec_hardware_flops_per_token(&sp) - none) / (all - none), 94.0 / 95, 1e-12);
    /* a sliding window of w keys in every second layer: PaLM's model FLOPs
     * count the window there, the executed ones its visible keys,
     * w - w (w - 1) / 2s a query */
    double w = 512;
    m.attention_window = (int64_t)w;
    m.full_attention_every = 2;
    sp.model = m;
    sp.parallel.cp = sp.parallel.pp = sp.parallel.vpp = 1;
    sp.options.recompute_layers = 0;
    sp.options.attention = EST_ATTENTION_FLASH;
    sp.options.recompute = EST_RECOMPUTE_NONE;
    CHECK_NEAR(spec_model_flops_per_token(&m) / (6 * n + 12 * (L / 2) * h * (s + w)), 1, 1e-12);
    double windowed = 4 * (L / 2) * h * ((s + 1) / 2 + (w - w * (w - 1) / (2 * s)));
    CHECK_NEAR(spec_hardware_flops_per_token(&sp) / (6 * n + 3 * windowed), 1, 1e-12);
}

TEST(flops_moe_counts_top_k_and_shared_experts)
{
    /* Mixtral 8x7B: 46.7e9 parameters, 12.9e9 active per token (Jiang et
     * al. 2024), the embedding lookup included in the active ones */
    struct est_model m = model("{\"model\":{\"layers\":32,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,"
                               "\"ffn\":14336,\"mlp\":\"swiglu\",\"seq\":4096,\"vocab\":32000,"
                               "\"moe\":{\"experts\":8,\"top_k\":2}}}");
    struct est_params p;
    spec_model_params(&m, &p);
    double h = 4096, attn = 2 * h * h + 2 * h * 1024, expert = 3 * h * 14336, V = 32000;
    CHECK_NEAR(p.total, 32 * (attn + 8 * expert + 8 * h + 2 * h) + h + 2 * V * h, 0.5);
    CHECK_NEAR(p.active_gemm, 32 * (attn + 2 * expert + 8 * h) + V * h, 0.5);
    CHECK_NEAR(p.total / 46.7e9, 1, 0.005);
    CHECK_NEAR((p.active_gemm + p.embedding) / 12.9e9, 1, 0.005);

    /* Qwen3-235B-A22B: head_dim 128 x 64 heads = 8192 > hidden 4096 */
    m = model("{\"model\":{\"layers\":94,\"hidden\":4096,\"heads\":64,\"kv_heads\":4,\"head_dim\":128,"
              "\"ffn\":12288,\"mlp\":\"swiglu\",\"seq\":4096,\"vocab\":151936,\"moe\":{\"experts\":"
              "128,\"top_k\":8,\"ffn\":1536}}}");
    spec_model_params(&m, &p);
    CHECK_NEAR(p.total / 235e9, 1, 0.01);
    CHECK_NEAR((p.active_gemm + p.embedding) / 22e9, 1, 0.02);

    /* a shared expert and dense first layers: by hand */
    m = model("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":128,\"vocab\":1000,"
              "\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":32,\"shared_experts\":1,\"dense_layers\":1,"
              "\"every\":2}}}");
    spec_model_params(&m, &p);
    double a = 4 * 64.0 * 64, dense = 2 * 64.0 * 256, e = 2 * 64.0 * 32, r = 64.0 * 8;
    /* layers 0 and 2 dense, 1 and 3 MoE */
    CHECK_NEAR(p.active_gemm, 4 * a + 2 * dense + 2 * (r + 3 * e) + 1000 * 64.0, 1e-6);
    CHECK_NEAR(p.total, 4 * a + 2 * dense + 2 * (r + 9 * e) + 9 * 64.0 + 2 * 1000 * 64.0, 1e-6);
}
