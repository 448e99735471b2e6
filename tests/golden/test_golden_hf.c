/* tests/golden/test_golden_hf.c: `spec from-hf` on every real Hugging Face
 * config.json in ../shared/models/hf: each model field checked against the
 * config's own fields for its family. Skips when the shared folder is
 * absent. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/hf_config.h"
#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static long long field(json_t *cfg, const char *key)
{
    json_t *v = json_object_get(cfg, key);
    if (!json_is_integer(v))
        sc_check_fail(__FILE__, __LINE__, "config lacks %s", key);
    return (long long)json_integer_value(v);
}

/* field, or fallback when the config does not give it */
static long long field_or(json_t *cfg, const char *key, long long fallback)
{
    json_t *v = json_object_get(cfg, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : fallback;
}

/* The model from config text must match the config's fields. Returns 1 when
 * checked with the read-back, 0 when checked without it. */
static int check_config(const char *name, const char *text, size_t n)
{
    json_t *cfg = json_loadb(text, n, 0, NULL);
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    struct est_model m;
    struct sc_error err;
    const char *from = NULL;
    int rc = spec_model_from_hf(text, n, 0, &m, &from, &err);
    int checked = 0;
    if (!type) {
        sc_check_fail(__FILE__, __LINE__, "%s: no model_type", name);
    } else if (!strcmp(type, "deepseek_v3")) {
        /* latent attention and fine-grained MoE after dense layers; the
         * parameters DeepSeek-V3's report gives (arXiv 2412.19437: 671B
         * in all, 37B active a token; the multi-token prediction module's
         * 14B not among them) */
        CHECK_EQ_INT(rc, SC_OK);
        CHECK_EQ_INT(m.mla.kv_lora_rank, field(cfg, "kv_lora_rank"));
        CHECK_EQ_INT(m.mla.q_lora_rank, field(cfg, "q_lora_rank"));
        CHECK_EQ_INT(m.mla.qk_head_dim, field(cfg, "qk_nope_head_dim"));
        CHECK_EQ_INT(m.mla.qk_pos_emb_head_dim, field(cfg, "qk_rope_head_dim"));
        CHECK_EQ_INT(m.mla.v_head_dim, field(cfg, "v_head_dim"));
        CHECK_EQ_INT(m.head_dim, field(cfg, "qk_nope_head_dim") + field(cfg, "qk_rope_head_dim"));
        CHECK_EQ_INT(m.kv_heads, m.heads);
        CHECK_EQ_INT(m.ffn, field(cfg, "intermediate_size"));
        CHECK_EQ_INT(m.moe.experts, field(cfg, "n_routed_experts"));
        CHECK_EQ_INT(m.moe.top_k, field(cfg, "num_experts_per_tok"));
        CHECK_EQ_INT(m.moe.ffn, field(cfg, "moe_intermediate_size"));
        CHECK_EQ_INT(m.moe.shared_experts, field(cfg, "n_shared_experts"));
        CHECK_EQ_INT(m.moe.dense_layers, field(cfg, "first_k_dense_replace"));
        CHECK(!spec_model_layer_is_moe(&m, m.moe.dense_layers - 1) && spec_model_layer_is_moe(&m, m.moe.dense_layers));
        struct est_params p;
        spec_model_params(&m, &p);
        double active = p.active_gemm + p.embedding; /* the report counts the embedding */
        printf("  %s: %.1fB parameters, %.2fB active\n", name, p.total / 1e9, active / 1e9);
        CHECK(p.total > 668e9 && p.total < 674e9);
        CHECK(active > 36.5e9 && active < 38.5e9);
        checked = 1;
    } else if (!strcmp(type, "gpt_oss")) {
        /* sliding-window layers alternating with full ones, as layer_types
         * says: the window, and every second layer full */
        CHECK_EQ_INT(rc, SC_OK);
        CHECK_EQ_INT(m.attention_window, field(cfg, "sliding_window"));
        json_t *types = json_object_get(cfg, "layer_types");
        REQUIRE(json_array_size(types) == (size_t)m.layers);
        for (size_t i = 0; i < json_array_size(types); i++)
            CHECK_EQ_INT(spec_model_layer_is_windowed(&m, (int64_t)i),
                         !strcmp(json_string_value(json_array_get(types, i)), "sliding_attention"));
        CHECK_EQ_INT(m.moe.experts, field(cfg, "num_local_experts"));
        CHECK_EQ_INT(m.moe.top_k, field(cfg, "num_experts_per_tok"));
        CHECK_EQ_INT(m.head_dim, field(cfg, "head_dim"));
    } else if (rc) {
        sc_check_fail(__FILE__, __LINE__, "%s: %s", name, err.msg);
    } else if (!strcmp(type, "gpt2")) {
        CHECK_EQ_INT(m.layers, field(cfg, "n_layer"));
        CHECK_EQ_INT(m.hidden, field(cfg, "n_embd"));
        CHECK_EQ_INT(m.heads, field(cfg, "n_head"));
        CHECK_EQ_INT(m.kv_heads, field(cfg, "n_head"));
        CHECK_EQ_INT(m.ffn, field_or(cfg, "n_inner", 4 * field(cfg, "n_embd")));
        CHECK_EQ_INT(m.seq, field(cfg, "n_positions"));
        CHECK_EQ_INT(m.vocab, field(cfg, "vocab_size"));
        CHECK_EQ_INT(m.mlp, EST_MLP_GELU);
        CHECK(m.tied_embeddings);
        checked = 1;
    } else {
        CHECK_EQ_INT(m.layers, field(cfg, "num_hidden_layers"));
        CHECK_EQ_INT(m.hidden, field(cfg, "hidden_size"));
        CHECK_EQ_INT(m.heads, field(cfg, "num_attention_heads"));
        CHECK_EQ_INT(m.kv_heads, field_or(cfg, "num_key_value_heads", m.heads));
        CHECK_EQ_INT(m.head_dim, field_or(cfg, "head_dim", m.hidden / m.heads));
        CHECK_EQ_INT(m.ffn, field(cfg, "intermediate_size"));
        CHECK_EQ_INT(m.vocab, field(cfg, "vocab_size"));
        CHECK_EQ_INT(m.tied_embeddings, json_is_true(json_object_get(cfg, "tie_word_embeddings")));
        json_t *rope = json_object_get(cfg, "rope_scaling");
        CHECK_EQ_INT(m.seq, field_or(rope, "original_max_position_embeddings",
                                     field(cfg, "max_position_embeddings")));
        CHECK_EQ_INT(m.mlp, !strcmp(type, "gpt_neox") ? EST_MLP_GELU : EST_MLP_SWIGLU);
        if (!strcmp(type, "mixtral")) {
            CHECK_EQ_INT(m.moe.experts, field(cfg, "num_local_experts"));
            CHECK_EQ_INT(m.moe.top_k, field(cfg, "num_experts_per_tok"));
            CHECK_EQ_INT(m.moe.ffn, field(cfg, "intermediate_size"));
        } else if (!strcmp(type, "qwen3_moe")) {
            CHECK_EQ_INT(m.moe.experts, field(cfg, "num_experts"));
            CHECK_EQ_INT(m.moe.top_k, field(cfg, "num_experts_per_tok"));
            CHECK_EQ_INT(m.moe.ffn, field(cfg, "moe_intermediate_size"));
            CHECK_EQ_INT(m.moe.every, field(cfg, "decoder_sparse_step"));
            CHECK_EQ_INT(m.moe.dense_layers, json_array_size(json_object_get(cfg, "mlp_only_layers")));
        } else {
            CHECK_EQ_INT(m.moe.experts, 0);
        }
        checked = 1;
    }
    if (checked) {
        /* what is written reads back the same, and --seq overrides */
        char *out = spec_model_json(&m);
        struct est_model back;
        memset(&back, 0, sizeof back);
        CHECK_EQ_INT(spec_model_parse(out, strlen(out), &back, &err), SC_OK);
        CHECK(memcmp(&back, &m, sizeof m) == 0);
        free(out);
        CHECK_EQ_INT(spec_model_from_hf(text, n, 4096, &m, NULL, &err), SC_OK);
        CHECK_EQ_INT(m.seq, 4096);
        CHECK(from != NULL);
    }
    json_decref(cfg);
    return checked;
}

TEST(golden_hf_configs)
{
    const char *dir = th_shared_dir("models/hf");
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0, mapped = 0, qwen_moe = 0;
    CHECK(d != NULL);
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char path[1024];
        size_t n;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = th_read_file(path, &n);
        CHECK(text != NULL);
        if (!text)
            continue;
        files++;
        mapped += check_config(e->d_name, text, n);
        qwen_moe += strstr(text, "\"qwen3_moe\"") != NULL;
        free(text);
    }
    if (d)
        closedir(d);
    /* the folder's README lists 13 configs, every one mapped (gpt_oss's
     * checked without the read-back) */
    CHECK(files >= 13);
    CHECK_EQ_INT(mapped, files - 1);
    CHECK(qwen_moe >= 2);
}
