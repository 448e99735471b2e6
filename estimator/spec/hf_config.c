/* estimator/spec/hf_config.c: Hugging Face config.json field names to a spec's
 * model (the mapping is documented in hf_config.h). */
#include "estimator/spec/hf_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/banned.h"

enum family { LLAMA, MIXTRAL, QWEN_MOE, GPT2, NEOX, LATENT_ATTENTION };

static const struct {
    const char *model_type;
    enum family family;
} model_types[] = {
    {"llama", LLAMA},        {"mistral", LLAMA},         {"qwen2", LLAMA},
    {"qwen3", LLAMA},        {"mixtral", MIXTRAL},       {"gpt_oss", MIXTRAL},
    {"qwen2_moe", QWEN_MOE}, {"qwen3_moe", QWEN_MOE},    {"gpt2", GPT2},
    {"gpt_neox", NEOX},      {"deepseek_v2", LATENT_ATTENTION},
    {"deepseek_v3", LATENT_ATTENTION},
};

/* Larger integers are not sizes of any model (and would overflow). */
#define HF_MAX_INT (1LL << 40)

/* An integer field: absent leaves *out (returns SC_OK) unless required;
 * present must be an integer from min to HF_MAX_INT. */
static int get_int(json_t *cfg, const char *key, int required, int64_t min, int64_t *out,
                   struct sc_error *err)
{
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        if (required)
            return sc_error_set(err, SC_EINVAL, "config.json: %s is missing", key);
        return SC_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > HF_MAX_INT)
        return sc_error_set(err, SC_EINVAL, "config.json: %s must be an integer from %lld to %lld",
                            key, (long long)min, HF_MAX_INT);
    *out = (int64_t)json_integer_value(v);
    return SC_OK;
}

/* The sequence length from the config: the pretraining length when rope
 * scaling extends it, else the longest position. */
static int config_seq(json_t *cfg, enum family f, int64_t *seq, const char **from,
                      struct sc_error *err)
{
    json_t *rope = json_object_get(cfg, "rope_scaling");
    if (json_is_object(rope) && json_object_get(rope, "original_max_position_embeddings")) {
        *from = "rope_scaling.original_max_position_embeddings";
        return get_int(rope, "original_max_position_embeddings", 1, 1, seq, err);
    }
    *from = f == GPT2 ? "n_positions" : "max_position_embeddings";
    return get_int(cfg, *from, 1, 1, seq, err);
}

/* Sliding-window attention: sliding_window (unless use_sliding_window is
 * false, as qwen's configs say), in every layer or in those layer_types
 * names "sliding_attention"; the others ("full_attention") must be every
 * k-th layer, which model.full_attention_every expresses. */
static int sliding_window(json_t *cfg, struct est_model *m, struct sc_error *err)
{
    json_t *use = json_object_get(cfg, "use_sliding_window"), *types = json_object_get(cfg, "layer_types");
    int rc;
    if ((use && json_is_false(use)) || !json_object_get(cfg, "sliding_window") ||
        json_is_null(json_object_get(cfg, "sliding_window")))
        return SC_OK;
    if ((rc = get_int(cfg, "sliding_window", 0, 1, &m->attention_window, err)))
        return rc;
    if (!json_is_array(types))
        return SC_OK; /* every layer windowed */
    if ((int64_t)json_array_size(types) != m->layers)
        return sc_error_set(err, SC_EINVAL, "config.json: layer_types has %zu entries for %lld layers",
                            json_array_size(types), (long long)m->layers);
    int64_t first_full = 0;
    for (size_t i = 0; i < json_array_size(types) && !first_full; i++)
        if (!strcmp(json_string_value(json_array_get(types, i)) ? json_string_value(json_array_get(types, i)) : "",
                    "full_attention"))
            first_full = (int64_t)i + 1;
    for (size_t i = 0; i < json_array_size(types); i++) {
        const char *t = json_string_value(json_array_get(types, i));
        int full = t && !strcmp(t, "full_attention");
        if (!t || (!full && strcmp(t, "sliding_attention")))
            return sc_error_set(err, SC_EINVAL, "config.json: layer_types[%zu] is neither sliding_attention nor "
                                                "full_attention",
                                i);
        if (full != (first_full && ((int64_t)i + 1) % first_full == 0))
            return sc_error_set(err, SC_EINVAL,
                                "config.json: layer_types: full attention other than every k-th layer is "
                                "unsupported");
    }
    m->full_attention_every = first_full;
    return SC_OK;
}

/* Qwen's MoE layers: layer i is sparse when (i + 1) % step == 0 and i is
 * not in mlp_only_layers; a spec expresses that when the dense ones are the
 * first layers. */
static int qwen_moe_layers(json_t *cfg, struct est_model *m, struct sc_error *err)
{
    int64_t step = 1, shared = 0;
    json_t *only = json_object_get(cfg, "mlp_only_layers");
    int rc;
    if ((rc = get_int(cfg, "decoder_sparse_step", 0, 1, &step, err)) ||
        (rc = get_int(cfg, "shared_expert_intermediate_size", 0, 0, &shared, err)))
        return rc;
    m->moe.every = step;
    m->moe.dense_layers = step - 1;
    if (only && !json_is_array(only))
        return sc_error_set(err, SC_EINVAL, "config.json: mlp_only_layers must be an array");
    for (size_t i = 0; only && i < json_array_size(only); i++)
        if (json_integer_value(json_array_get(only, i)) != (json_int_t)i || step != 1)
            return sc_error_set(err, SC_EINVAL,
                                "config.json: mlp_only_layers other than the first layers are "
                                "unsupported");
    if (only && json_array_size(only))
        m->moe.dense_layers = (int64_t)json_array_size(only);
    if (shared) {
        if (shared % m->moe.ffn)
            return sc_error_set(err, SC_EINVAL,
                                "config.json: shared_expert_intermediate_size %lld is not a "
                                "multiple of moe_intermediate_size %lld: unsupported",
                                (long long)shared, (long long)m->moe.ffn);
        m->moe.shared_experts = shared / m->moe.ffn;
    }
    return SC_OK;
}

/* DeepSeek's latent attention and MoE: layer i is sparse when i >=
 * first_k_dense_replace and i % moe_layer_freq == 0, which a spec
 * expresses when the frequency is 1; shared experts of the experts' size. */
static int latent_attention_fields(json_t *cfg, struct est_model *m, struct sc_error *err)
{
    int64_t freq = 1;
    int rc;
    if ((rc = get_int(cfg, "kv_lora_rank", 1, 1, &m->mla.kv_lora_rank, err)) ||
        (rc = get_int(cfg, "q_lora_rank", 0, 1, &m->mla.q_lora_rank, err)) ||
        (rc = get_int(cfg, "qk_nope_head_dim", 1, 1, &m->mla.qk_head_dim, err)) ||
        (rc = get_int(cfg, "qk_rope_head_dim", 1, 1, &m->mla.qk_pos_emb_head_dim, err)) ||
        (rc = get_int(cfg, "v_head_dim", 1, 1, &m->mla.v_head_dim, err)) ||
        (rc = get_int(cfg, "n_routed_experts", 0, 1, &m->moe.experts, err)))
        return rc;
    m->head_dim = 0; /* the latent attention's (spec_model_resolve) */
    if (!m->moe.experts)
        return SC_OK;
    if ((rc = get_int(cfg, "num_experts_per_tok", 1, 1, &m->moe.top_k, err)) ||
        (rc = get_int(cfg, "moe_intermediate_size", 1, 1, &m->moe.ffn, err)) ||
        (rc = get_int(cfg, "n_shared_experts", 0, 0, &m->moe.shared_experts, err)) ||
        (rc = get_int(cfg, "first_k_dense_replace", 0, 0, &m->moe.dense_layers, err)) ||
        (rc = get_int(cfg, "moe_layer_freq", 0, 1, &freq, err)))
        return rc;
    if (freq != 1)
        return sc_error_set(err, SC_EINVAL,
                            "config.json: moe_layer_freq %lld (MoE in every k-th layer counted from the first) "
                            "is unsupported",
                            (long long)freq);
    return SC_OK;
}

static int map_fields(json_t *cfg, enum family f, struct est_model *m, struct sc_error *err)
{
    int gpt2 = f == GPT2;
    int rc;
    if ((rc = get_int(cfg, gpt2 ? "n_layer" : "num_hidden_layers", 1, 1, &m->layers, err)) ||
        (rc = get_int(cfg, gpt2 ? "n_embd" : "hidden_size", 1, 1, &m->hidden, err)) ||
        (rc = get_int(cfg, gpt2 ? "n_head" : "num_attention_heads", 1, 1, &m->heads, err)) ||
        (rc = get_int(cfg, "vocab_size", 1, 1, &m->vocab, err)) ||
        (rc = get_int(cfg, gpt2 ? "n_inner" : "intermediate_size", !gpt2, 1, &m->ffn, err)))
        return rc;
    m->kv_heads = m->heads;
    if (f == GPT2 || f == NEOX) {
        m->mlp = EST_MLP_GELU;
        m->tied_embeddings = gpt2; /* transformers' default for each */
    } else {
        m->mlp = EST_MLP_SWIGLU;
        if ((rc = get_int(cfg, "num_key_value_heads", 0, 1, &m->kv_heads, err)) ||
            (rc = get_int(cfg, "head_dim", 0, 1, &m->head_dim, err)))
            return rc;
    }
    json_t *tied = json_object_get(cfg, "tie_word_embeddings");
    if (json_is_boolean(tied))
        m->tied_embeddings = json_is_true(tied);
    if (f == MIXTRAL) {
        m->moe.ffn = m->ffn;
        if ((rc = get_int(cfg, "num_local_experts", 1, 1, &m->moe.experts, err)))
            return rc;
        if ((rc = get_int(cfg, json_object_get(cfg, "num_experts_per_tok") ? "num_experts_per_tok"
                                                                             : "experts_per_token",
                          1, 1, &m->moe.top_k, err)))
            return rc;
    } else if (f == QWEN_MOE) {
        if ((rc = get_int(cfg, "num_experts", 1, 1, &m->moe.experts, err)) ||
            (rc = get_int(cfg, "num_experts_per_tok", 1, 1, &m->moe.top_k, err)) ||
            (rc = get_int(cfg, "moe_intermediate_size", 1, 1, &m->moe.ffn, err)) ||
            (rc = qwen_moe_layers(cfg, m, err)))
            return rc;
    } else if (f == LATENT_ATTENTION && (rc = latent_attention_fields(cfg, m, err))) {
        return rc;
    }
    return SC_OK;
}

int spec_model_from_hf(const char *text, size_t len, int64_t seq, struct est_model *out,
                      const char **seq_from, struct sc_error *err)
{
    json_error_t je;
    json_t *cfg = json_loadb(text, len, 0, &je);
    struct est_model m;
    const char *from = "--seq", *type;
    int rc = SC_OK;
    if (!cfg)
        return sc_error_set(err, SC_EPARSE, "config.json: not valid JSON: %s (line %d)", je.text,
                            je.line);
    spec_model_init(&m);
    type = json_string_value(json_object_get(cfg, "model_type"));
    size_t k = 0, n = sizeof model_types / sizeof model_types[0];
    while (type && k < n && strcmp(model_types[k].model_type, type) != 0)
        k++;
    if (!type || k == n) {
        rc = sc_error_set(err, SC_EINVAL,
                          "config.json: model_type \"%.64s\" is unsupported (supported: llama, "
                          "mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, gpt_oss, gpt2, "
                          "gpt_neox, deepseek_v2, deepseek_v3)",
                          type ? type : "(none)");
    } else if (!(rc = map_fields(cfg, model_types[k].family, &m, err))) {
        if (seq > 0)
            m.seq = seq;
        else
            rc = config_seq(cfg, model_types[k].family, &m.seq, &from, err);
        if (!rc)
            rc = sliding_window(cfg, &m, err);
        if (!rc)
            rc = spec_model_resolve(&m, err);
    }
    json_decref(cfg);
    if (rc)
        return rc;
    /* the spec's range checks, by way of its text */
    char *json = spec_model_json(&m);
    if (!json)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    rc = spec_model_parse(json, strlen(json), out, err);
    free(json);
    if (rc)
        return sc_error_prefix(err, "config.json (model_type %s)", model_types[k].model_type);
    if (seq_from)
        *seq_from = from;
    return SC_OK;
}
