/* tests/unit/test_spec.c: the estimation spec: the issue's example and its
 * defaults, strictness (unknown keys named by path), every rule of what can
 * run with the field it names, writing and re-reading, and agreement with
 * data/spec.schema.json. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char example[] =
    "{\"model\":{\"layers\":30,\"hidden\":3072,\"heads\":32,\"kv_heads\":32,\"ffn\":12288,"
    "\"mlp\":\"gelu\",\"seq\":2048,\"vocab\":51200,\"moe\":{\"experts\":0,\"top_k\":0,\"ffn\":null,"
    "\"shared_experts\":0,\"every\":1,\"dense_layers\":0}},\"parallel\":{\"tp\":1,\"cp\":1,\"pp\":1,"
    "\"dp\":64,\"ep\":1,\"etp\":null,\"micro_batch\":8,\"global_batch\":512,\"schedule\":\"1f1b\","
    "\"vpp\":1},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\",\"gpus_per_node\":8,\"intra_node_gbps\":null,"
    "\"inter_node_gbps\":null,\"profile\":null,\"gpu_hour_usd\":null},\"options\":{\"dtype\":"
    "\"bf16\",\"recompute\":\"none\",\"zero_stage\":0,\"sequence_parallel\":false,"
    "\"overlap_grad_reduce\":true,\"overlap_param_gather\":true,\"tp_comm_overlap\":false,"
    "\"train_tokens\":null}}";

static const char minimal[] =
    "{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"seq\":128},\"cluster\":{\"gpu\":\"h100-sxm\"}}";

static int parse(const char *text, struct est_spec *s, struct sc_error *err)
{
    memset(s, 0, sizeof *s);
    return spec_parse(text, strlen(text), s, err);
}

TEST(spec_issue_example_parses)
{
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(example, &s, &err), SC_OK);
    CHECK_EQ_INT(s.model.layers, 30);
    CHECK_EQ_INT(s.model.hidden, 3072);
    CHECK_EQ_INT(s.model.ffn, 12288);
    CHECK_EQ_INT(s.model.head_dim, 96);
    CHECK_EQ_INT(s.model.vocab, 51200);
    CHECK_EQ_INT(s.parallel.dp, 64);
    CHECK_EQ_INT(s.parallel.etp, 1);
    CHECK_EQ_INT(s.parallel.global_batch, 512);
    CHECK_STREQ(s.cluster.gpu, "a100-sxm4-80gb");
    CHECK_EQ_INT(spec_gpus(&s), 64);
    CHECK_EQ_INT(spec_micro_batches(&s), 1);
    CHECK(s.cluster.intra_node_gbps == 0 && s.cluster.gpu_hour_usd < 0);
    CHECK(s.options.overlap_grad_reduce && s.options.overlap_param_gather);
    CHECK(!s.options.tp_comm_overlap && !s.options.sequence_parallel);
}

TEST(spec_defaults)
{
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(minimal, &s, &err), SC_OK);
    CHECK_EQ_INT(s.model.ffn, 4 * 64);
    CHECK_EQ_INT(s.model.kv_heads, 4);
    CHECK_EQ_INT(s.model.head_dim, 16);
    CHECK_EQ_INT(s.model.vocab, 50257);
    CHECK_EQ_INT(s.model.mlp, EST_MLP_GELU);
    CHECK_EQ_INT(s.model.moe.experts, 0);
    CHECK_EQ_INT(s.model.moe.every, 1);
    CHECK(s.parallel.tp == 1 && s.parallel.cp == 1 && s.parallel.pp == 1 && s.parallel.dp == 1);
    CHECK(s.parallel.ep == 1 && s.parallel.etp == 1 && s.parallel.vpp == 1);
    CHECK_EQ_INT(s.parallel.micro_batch, 1);
    CHECK_EQ_INT(s.parallel.global_batch, 1);
    CHECK_EQ_INT(s.parallel.schedule, EST_SCHEDULE_1F1B);
    CHECK_EQ_INT(s.cluster.gpus_per_node, 8);
    CHECK_EQ_INT(s.options.dtype, HW_BF16);
    CHECK_EQ_INT(s.options.recompute, EST_RECOMPUTE_NONE);
    CHECK_EQ_INT(s.options.zero_stage, 0);
    CHECK(s.options.train_tokens == 0 && s.cluster.profile[0] == '\0');
    CHECK_EQ_INT(s.options.master_weights, EST_MASTER_FP32);
    CHECK_EQ_INT(s.options.framework, EST_FRAMEWORK_MEGATRON);
    CHECK_EQ_INT(s.model.dropout, 1);

    /* defaults that follow other fields */
    CHECK_EQ_INT(parse("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"seq\":128,"
                       "\"ffn\":100,\"moe\":{\"experts\":8,\"top_k\":2}},\"parallel\":{\"dp\":"
                       "4,\"micro_batch\":3,\"tp\":2,\"ep\":4},\"options\":{\"sequence_parallel\":"
                       "true},\"cluster\":{\"gpu\":\"h100-sxm\"}}",
                       &s, &err),
                 SC_OK);
    CHECK_EQ_INT(s.model.moe.ffn, 100);
    CHECK_EQ_INT(s.parallel.global_batch, 12);
    CHECK_EQ_INT(s.parallel.etp, 2);
}

/* text is rejected with code, and the message starts with field */
static void check_rejected(const char *text, int code, const char *field)
{
    struct est_spec s;
    struct sc_error err;
    int rc = parse(text, &s, &err);
    if (rc != code) {
        sc_check_fail(__FILE__, __LINE__, "%s: status %d, not %d (%s)", text, rc, code,
                      rc ? err.msg : "accepted");
        return;
    }
    if (strncmp(err.msg, field, strlen(field)) != 0)
        sc_check_fail(__FILE__, __LINE__, "%s: the message does not start with %s: %s", text,
                      field, err.msg);
}

/* Members (JSON text without braces) set in obj's member key. */
static void set_members(json_t *doc, const char *key, const char *members)
{
    char text[1024];
    snprintf(text, sizeof text, "{%s}", members);
    json_t *add = json_loads(text, 0, NULL), *obj = json_object_get(doc, key);
    if (!add) {
        sc_check_fail(__FILE__, __LINE__, "bad test input %s", text);
        return;
    }
    if (!obj)
        json_object_set_new(doc, key, obj = json_object());
    json_object_update(obj, add);
    json_decref(add);
}

/* The minimal spec with members set in model, parallel and options, on
 * gpu (NULL: h100-sxm). Static buffer. */
static const char *spec_with(const char *model, const char *parallel, const char *options,
                             const char *gpu)
{
    static char buf[2048];
    json_t *doc = json_loads(minimal, 0, NULL);
    set_members(doc, "model", model);
    set_members(doc, "parallel", parallel);
    set_members(doc, "options", options);
    json_object_set_new(json_object_get(doc, "cluster"), "gpu", json_string(gpu ? gpu : "h100-sxm"));
    char *text = json_dumps(doc, JSON_COMPACT);
    snprintf(buf, sizeof buf, "%s", text);
    free(text);
    json_decref(doc);
    return buf;
}

TEST(spec_unknown_keys_are_named_by_path)
{
    check_rejected("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"seq\":128},"
                   "\"parallel\":{\"tpp\":2},\"cluster\":{\"gpu\":\"h100-sxm\"}}",
                   SC_EINVAL, "parallel.tpp: unknown key");
    check_rejected(spec_with("\"moe\":{\"topk\":2}", "", "", NULL), SC_EINVAL,
                   "model.moe.topk: unknown key");
    check_rejected("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"seq\":128},\"extra\":1,"
                   "\"cluster\":{\"gpu\":\"h100-sxm\"}}",
                   SC_EINVAL, "extra: unknown key");
    check_rejected(spec_with("", "", "\"dtype\":\"bf16\",\"zero\":1", NULL), SC_EINVAL,
                   "options.zero: unknown key");
}

/* The documented limits (spec.h, EST_MAX_*): the value at the limit is
 * taken, the one past it refused naming the field; a default that would
 * pass one (global_batch = micro_batch x dp) too. */
TEST(spec_limits_are_named)
{
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(spec_with("\"layers\":4096", "\"global_batch\":16777216", "", NULL), &s, &err), SC_OK);
    CHECK_EQ_INT(s.model.layers, EST_MAX_LAYERS);
    CHECK_EQ_INT(s.parallel.global_batch, EST_MAX_GLOBAL_BATCH);
    check_rejected(spec_with("\"layers\":4097", "", "", NULL), SC_EINVAL,
                   "model.layers: 4097 is out of range (1 to 4096)");
    check_rejected(spec_with("", "\"global_batch\":16777217", "", NULL), SC_EINVAL,
                   "parallel.global_batch: 16777217 is out of range (1 to 16777216)");
    check_rejected(spec_with("", "\"global_batch\":2147483648", "", NULL), SC_EINVAL,
                   "parallel.global_batch: 2147483648 is out of range");
    check_rejected(spec_with("\"hidden\":262144,\"heads\":4", "", "", NULL), SC_EINVAL, "model.hidden:");
    check_rejected(spec_with("\"heads\":8192", "", "", NULL), SC_EINVAL, "model.heads:");
    check_rejected(spec_with("\"seq\":33554432", "", "", NULL), SC_EINVAL, "model.seq:");
    check_rejected(spec_with("\"vocab\":8388608", "", "", NULL), SC_EINVAL, "model.vocab:");
    check_rejected(spec_with("\"ffn\":2097152", "", "", NULL), SC_EINVAL, "model.ffn:");
    check_rejected(spec_with("\"moe\":{\"experts\":32768,\"top_k\":1}", "", "", NULL), SC_EINVAL,
                   "model.moe.experts:");
    check_rejected(spec_with("", "\"micro_batch\":131072", "", NULL), SC_EINVAL, "parallel.micro_batch:");
    check_rejected(spec_with("", "\"micro_batch\":65536,\"dp\":1024", "", NULL), SC_EINVAL,
                   "parallel.global_batch: micro_batch x dp = 67108864 sequences, over the limit");
}

TEST(spec_types_ranges_and_required_fields)
{
    check_rejected("{\"model\":", SC_EPARSE, "not valid JSON");
    check_rejected("[1]", SC_EINVAL, "the spec must be a JSON object");
    check_rejected("{\"model\":{\"layers\":4,\"layers\":5,\"hidden\":64,\"heads\":4,\"seq\":1}}",
                   SC_EPARSE, "not valid JSON");
    check_rejected(spec_with("\"ffn\":1.5", "", "", NULL), SC_EINVAL, "model.ffn: must be an integer");
    check_rejected(spec_with("\"ffn\":null", "", "", NULL), SC_EINVAL, "model.ffn: must be an integer");
    check_rejected(spec_with("\"mlp\":\"relu\"", "", "", NULL), SC_EINVAL,
                   "model.mlp: \"relu\" is not one of gelu, swiglu");
    check_rejected(spec_with("", "\"tp\":0", "", NULL), SC_EINVAL, "parallel.tp: 0 is out of range");
    check_rejected(spec_with("", "", "\"zero_stage\":4", NULL), SC_EINVAL,
                   "options.zero_stage: 4 is out of range");
    check_rejected(spec_with("", "", "\"sequence_parallel\":1", NULL), SC_EINVAL,
                   "options.sequence_parallel: must be true or false");
    check_rejected(spec_with("", "", "\"dtype\":\"tf32\"", NULL), SC_EINVAL, "options.dtype");
    check_rejected(spec_with("", "", "\"train_tokens\":0", NULL), SC_EINVAL,
                   "options.train_tokens: 0 is out of range");
    check_rejected(spec_with("", "", "\"master_weights\":\"fp16\"", NULL), SC_EINVAL,
                   "options.master_weights: \"fp16\" is not one of fp32, bf16");
    check_rejected(spec_with("", "", "\"master_weights\":true", NULL), SC_EINVAL,
                   "options.master_weights: must be a string");
    check_rejected(spec_with("", "", "\"master_weights\":\"bf16\",\"dtype\":\"fp32\"", NULL), SC_EINVAL,
                   "options.master_weights: \"bf16\" (pure bf16 training) needs options.dtype bf16, fp8 or fp4, not fp32");
    check_rejected(spec_with("", "", "\"framework\":\"jax\"", NULL), SC_EINVAL,
                   "options.framework: \"jax\" is not one of megatron, pytorch");
    check_rejected(spec_with("", "", "\"recompute\":\"some\"", NULL), SC_EINVAL,
                   "options.recompute: \"some\" is not one of none, selective, full, auto");
    check_rejected(spec_with("\"dropout\":0", "", "", NULL), SC_EINVAL, "model.dropout: must be true or false");
    check_rejected("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4},\"cluster\":{\"gpu\":\"x\"}}",
                   SC_EINVAL, "model.seq: missing");
    check_rejected("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"seq\":8}}", SC_EINVAL,
                   "cluster: missing");
    check_rejected("{\"cluster\":{\"gpu\":\"x\"}}", SC_EINVAL, "model: missing");
    check_rejected("{\"model\":[],\"cluster\":{\"gpu\":\"x\"}}", SC_EINVAL,
                   "model: must be an object");
}

TEST(spec_rules_of_what_can_run)
{
    /* tensor parallelism */
    check_rejected(spec_with("", "\"tp\":8", "", NULL), SC_EINVAL, "model.heads: 4 is not divisible");
    check_rejected(spec_with("\"heads\":8,\"kv_heads\":2", "\"tp\":4", "", NULL), SC_EINVAL,
                   "model.kv_heads: 2 is not divisible");
    check_rejected(spec_with("\"kv_heads\":3", "", "", NULL), SC_EINVAL,
                   "model.kv_heads: 3 does not divide model.heads");
    check_rejected(spec_with("\"hidden\":66", "", "", NULL), SC_EINVAL,
                   "model.hidden: 66 is not divisible by model.heads");
    /* a head as wide as a given head_dim may be (the fuzzer's what-if of
     * hidden 65536 over 2 heads printed a spec that did not parse) */
    check_rejected(spec_with("\"hidden\":65536,\"heads\":2", "", "", NULL), SC_EINVAL,
                   "model.head_dim: model.hidden / model.heads = 32768, over 4096");
    check_rejected(spec_with("\"ffn\":101", "\"tp\":2", "", NULL), SC_EINVAL,
                   "model.ffn: 101 is not divisible");
    /* latent attention: every head its key and value, head_dim the query's */
    check_rejected(spec_with("\"mla\":{\"q_lora_rank\":32}", "", "", NULL), SC_EINVAL,
                   "model.mla: q_lora_rank needs model.mla.kv_lora_rank");
    check_rejected(spec_with("\"heads\":4,\"kv_heads\":2,\"mla\":{\"kv_lora_rank\":32}", "", "", NULL), SC_EINVAL,
                   "model.kv_heads: 2, but latent attention");
    check_rejected(spec_with("\"head_dim\":16,\"mla\":{\"kv_lora_rank\":32}", "", "", NULL), SC_EINVAL,
                   "model.head_dim: 16, but with model.mla it is qk_head_dim + qk_pos_emb_head_dim = 192");
    /* the sequence over 2 x cp, and tp with sequence parallelism */
    check_rejected(spec_with("\"seq\":100", "\"cp\":4", "", NULL), SC_EINVAL,
                   "model.seq: 100 is not divisible by 2 x parallel.cp");
    check_rejected(spec_with("\"seq\":80", "\"cp\":4,\"tp\":4", "\"sequence_parallel\":true", NULL),
                   SC_EINVAL, "model.seq: 80 is not divisible by 2 x parallel.cp x parallel.tp");
    check_rejected(spec_with("\"seq\":126", "\"tp\":4", "\"sequence_parallel\":true", NULL),
                   SC_EINVAL, "model.seq: 126 is not divisible by parallel.tp");
    /* pipeline */
    check_rejected(spec_with("", "\"pp\":7", "", NULL), SC_EINVAL,
                   "parallel.pp: pp x vpp = 7 virtual pipeline stages are more than");
    check_rejected(spec_with("", "\"pp\":2,\"vpp\":4,\"schedule\":\"interleaved\"", "", NULL),
                   SC_EINVAL, "parallel.vpp: pp x vpp = 8");
    check_rejected(spec_with("", "\"pp\":2,\"vpp\":2", "", NULL), SC_EINVAL,
                   "parallel.vpp: 2 virtual stages need parallel.schedule");
    check_rejected(spec_with("", "\"pp\":2,\"schedule\":\"interleaved\"", "", NULL), SC_EINVAL,
                   "parallel.schedule:");
    check_rejected(spec_with("", "\"vpp\":2,\"schedule\":\"interleaved\"", "", NULL), SC_EINVAL,
                   "parallel.vpp: 2 virtual stages need parallel.pp > 1");
    /* batches */
    check_rejected(spec_with("", "\"dp\":4,\"micro_batch\":2,\"global_batch\":12", "", NULL),
                   SC_EINVAL, "parallel.global_batch: 12 is not divisible");
    check_rejected(spec_with("", "\"pp\":2,\"vpp\":2,\"schedule\":\"interleaved\",\"global_batch\":3",
                             "", NULL),
                   SC_EINVAL, "parallel.global_batch: the interleaved schedule needs");
    /* MoE and its parallel folding */
    check_rejected(spec_with("\"moe\":{\"experts\":8,\"top_k\":2}", "\"ep\":3,\"dp\":3", "", NULL),
                   SC_EINVAL, "model.moe.experts: 8 is not divisible by parallel.ep");
    check_rejected(spec_with("\"moe\":{\"experts\":8,\"top_k\":2}", "\"ep\":4,\"dp\":2", "", NULL),
                   SC_EINVAL, "parallel.ep: etp x ep = 4 does not divide tp x cp x dp = 2");
    check_rejected(spec_with("\"moe\":{\"experts\":8,\"top_k\":9}", "", "", NULL), SC_EINVAL,
                   "model.moe.top_k: 9 is not in 1 to 8");
    check_rejected(spec_with("\"moe\":{\"experts\":8,\"top_k\":2,\"dense_layers\":4}", "", "", NULL),
                   SC_EINVAL, "model.moe.dense_layers:");
    check_rejected(spec_with("\"moe\":{\"top_k\":2}", "", "", NULL), SC_EINVAL,
                   "model.moe: top_k needs model.moe.experts");
    check_rejected(spec_with("", "\"ep\":2,\"dp\":2", "", NULL), SC_EINVAL, "parallel.ep:");
    check_rejected(spec_with("", "\"etp\":2,\"dp\":2", "", NULL), SC_EINVAL, "parallel.etp:");
    check_rejected(spec_with("\"moe\":{\"experts\":8,\"top_k\":2}", "\"tp\":2", "", NULL), SC_EINVAL,
                   "options.sequence_parallel: MoE");
    check_rejected(spec_with("\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":30}",
                             "\"etp\":4,\"dp\":4", "", NULL),
                   SC_EINVAL, "model.moe.ffn: 30 is not divisible by parallel.etp");
    check_rejected(spec_with("", "\"tp\":2", "\"tp_comm_overlap\":true", NULL), SC_EINVAL,
                   "options.tp_comm_overlap:");
    /* full recomputation of some layers of each model chunk */
    check_rejected(spec_with("", "", "\"recompute_layers\":2", NULL), SC_EINVAL,
                   "options.recompute_layers: only with options.recompute \"full\" (it is \"none\")");
    check_rejected(spec_with("", "", "\"recompute\":\"auto\",\"recompute_layers\":1", NULL), SC_EINVAL,
                   "options.recompute_layers: only with options.recompute \"full\" (it is \"auto\")");
    check_rejected(spec_with("", "", "\"recompute\":\"full\",\"recompute_layers\":0", NULL), SC_EINVAL,
                   "options.recompute_layers: 0 is out of range");
    /* 4 layers over pp 2: 2 a chunk */
    check_rejected(spec_with("", "\"pp\":2", "\"recompute\":\"full\",\"recompute_layers\":3", NULL),
                   SC_EINVAL, "options.recompute_layers: 3 is more than the 2 transformer layers of the largest");
    /* 11 layers over pp 4: 2, 4, 3, 2 (the middle stages take the rest) */
    check_rejected(spec_with("\"layers\":11", "\"pp\":4", "\"recompute\":\"full\",\"recompute_layers\":5", NULL),
                   SC_EINVAL, "options.recompute_layers: 5 is more than the 4 ");

    /* and what is fine */
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(spec_with("\"moe\":{\"experts\":8,\"top_k\":2}",
                                 "\"tp\":2,\"ep\":4,\"etp\":1,\"dp\":2,\"pp\":2,\"vpp\":3,"
                                 "\"global_batch\":4,"
                                 "\"schedule\":\"interleaved\"",
                                 "\"sequence_parallel\":true", NULL),
                       &s, &err),
                 SC_OK);
    CHECK_EQ_INT(spec_gpus(&s), 8);
    CHECK_EQ_INT(parse(spec_with("\"seq\":127", "", "", NULL), &s, &err), SC_OK);
    CHECK_EQ_INT(parse(spec_with("\"layers\":11", "\"pp\":4", "\"recompute\":\"full\",\"recompute_layers\":4", NULL),
                       &s, &err),
                 SC_OK);
    CHECK_EQ_INT(s.options.recompute_layers, 4);
    CHECK(spec_layer_recomputed(&s, 3) && !spec_layer_recomputed(&s, 4));
    CHECK_EQ_INT(parse(spec_with("", "", "\"recompute\":\"full\",\"recompute_layers\":null", NULL), &s, &err),
                 SC_OK);
    CHECK_EQ_INT(s.options.recompute_layers, 0); /* all */
    CHECK(spec_layer_recomputed(&s, 1000));
}

TEST(spec_gpu_and_dtype_need_a_profile)
{
    struct est_spec s;
    struct sc_error err;
    const struct hw_profile *hw = NULL;
    const char *text = spec_with("", "", "", "no-such-gpu");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "cluster.gpu: no hardware profile \"no-such-gpu\"");
    CHECK_CONTAINS(err.msg, "h100-sxm");
    text = spec_with("", "", "\"dtype\":\"fp4\"", "h100-sxm");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.dtype: the h100-sxm has no fp4");
    text = spec_with("", "", "\"dtype\":\"fp8\"", "a100-sxm4-80gb");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.dtype: the a100-sxm4-80gb has no fp8");
    text = spec_with("", "", "\"dtype\":\"fp4\"", "b200");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK(hw && strcmp(hw->id, "b200") == 0);
}

static void check_roundtrip(const char *text);

TEST(spec_fp8_recipe_by_gpu_generation)
{
    struct est_spec s;
    struct sc_error err;
    const struct hw_profile *hw = NULL;
    /* the default follows the architecture: per-tensor scaling on Hopper,
     * MXFP8 on Blackwell; none without fp8 */
    const char *text = spec_with("", "", "\"dtype\":\"fp8\"", "h100-sxm");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK_EQ_INT(s.options.fp8_recipe, EST_FP8_RECIPE_TENSORWISE);
    text = spec_with("", "", "\"dtype\":\"fp8\"", "b200");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK_EQ_INT(s.options.fp8_recipe, EST_FP8_RECIPE_MXFP8);
    text = spec_with("", "", "\"dtype\":\"fp8\"", "b300");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK_EQ_INT(s.options.fp8_recipe, EST_FP8_RECIPE_MXFP8);
    text = spec_with("", "", "", "b200");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK_EQ_INT(s.options.fp8_recipe, EST_FP8_RECIPE_NONE);
    text = spec_with("", "", "\"dtype\":\"fp8\",\"fp8_recipe\":\"blockwise\"", "h100-sxm");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK_EQ_INT(s.options.fp8_recipe, EST_FP8_RECIPE_BLOCKWISE);
    text = spec_with("", "", "\"dtype\":\"fp8\",\"fp8_recipe\":\"tensorwise\"", "b200");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_OK);
    CHECK_EQ_INT(s.options.fp8_recipe, EST_FP8_RECIPE_TENSORWISE);
    /* MXFP8 needs Blackwell's tensor cores */
    text = spec_with("", "", "\"dtype\":\"fp8\",\"fp8_recipe\":\"mxfp8\"", "h100-sxm");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.fp8_recipe: \"mxfp8\" needs a Blackwell GPU; the h100-sxm is hopper");
    text = spec_with("", "", "\"dtype\":\"fp8\",\"fp8_recipe\":\"blockwise\"", "mi300x");
    CHECK_EQ_INT(spec_load(text, strlen(text), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.fp8_recipe: \"blockwise\" needs a Hopper or Blackwell GPU");
    /* a recipe is fp8's only */
    text = spec_with("", "", "\"fp8_recipe\":\"tensorwise\"", "h100-sxm");
    CHECK_EQ_INT(parse(text, &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.fp8_recipe: only with options.dtype \"fp8\" (it is \"bf16\")");
    text = spec_with("", "", "\"dtype\":\"fp4\",\"fp8_recipe\":\"mxfp8\"", "b200");
    CHECK_EQ_INT(parse(text, &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.fp8_recipe");
    text = spec_with("", "", "\"fp8_recipe\":\"nvfp4\"", "b200");
    CHECK_EQ_INT(parse(text, &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.fp8_recipe: \"nvfp4\" is not one of tensorwise, blockwise, mxfp8");
    /* written out and read back, the recipe stays (null without fp8) */
    check_roundtrip(spec_with("", "", "\"dtype\":\"fp8\",\"fp8_recipe\":\"blockwise\"", "h100-sxm"));
    check_roundtrip(spec_with("", "", "", "b200"));
}

TEST(spec_nvlink_domain_defaults_to_the_profile)
{
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(spec_with("", "", "", "gb200"), &s, &err), SC_OK);
    CHECK_EQ_INT(s.cluster.gpus_per_node, cost_hw_profile_find("gb200")->gpus_per_node);
    CHECK_EQ_INT(s.cluster.gpus_per_node, 72);
    CHECK_EQ_INT(parse(spec_with("", "", "", "h100-sxm"), &s, &err), SC_OK);
    CHECK_EQ_INT(s.cluster.gpus_per_node, 8);
}

/* Writing a spec out and reading it back gives the same spec. */
static void check_roundtrip(const char *text)
{
    struct est_spec a, b;
    struct sc_error err;
    CHECK_EQ_INT(parse(text, &a, &err), SC_OK);
    char *out = spec_json(&a);
    CHECK(out != NULL);
    if (!out)
        return;
    CHECK_EQ_INT(parse(out, &b, &err), SC_OK);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    free(out);
}

TEST(spec_written_out_reads_back_the_same)
{
    check_roundtrip(example);
    check_roundtrip(minimal);
    check_roundtrip(
        "{\"model\":{\"layers\":61,\"hidden\":7168,\"heads\":128,\"kv_heads\":8,\"ffn\":18432,"
        "\"mlp\":\"swiglu\",\"seq\":4096,\"vocab\":129280,\"head_dim\":128,\"moe\":{\"experts\":"
        "256,\"top_k\":8,\"ffn\":2048,\"shared_experts\":1,\"dense_layers\":3}},\"parallel\":{"
        "\"tp\":2,\"pp\":16,\"dp\":64,\"ep\":64,\"etp\":1,\"micro_batch\":1,\"global_batch\":"
        "15360,\"schedule\":\"interleaved\",\"vpp\":2},\"cluster\":{\"gpu\":\"h800\","
        "\"gpus_per_node\":8,\"inter_node_gbps\":50.5,\"profile\":\"calibrated.json\","
        "\"gpu_hour_usd\":2.25},\"options\":{\"dtype\":\"fp8\",\"recompute\":\"selective\","
        "\"zero_stage\":1,\"sequence_parallel\":true,\"train_tokens\":1.48e13}}");
    check_roundtrip("{\"model\":{\"layers\":4,\"hidden\":64,\"heads\":4,\"seq\":128,\"dropout\":false},"
                    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"recompute\":\"auto\","
                    "\"master_weights\":\"bf16\",\"framework\":\"pytorch\"}}");
    check_roundtrip("{\"model\":{\"layers\":12,\"hidden\":64,\"heads\":4,\"seq\":128},"
                    "\"parallel\":{\"pp\":2,\"vpp\":2,\"schedule\":\"interleaved\",\"global_batch\":2},"
                    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"recompute\":\"full\",\"recompute_layers\":2}}");
    struct est_model m;
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(example, &s, &err), SC_OK);
    char *text = spec_model_json(&s.model);
    CHECK_EQ_INT(spec_model_parse(text, strlen(text), &m, &err), SC_OK);
    CHECK(memcmp(&m, &s.model, sizeof m) == 0);
    free(text);
}

TEST(spec_moe_layers)
{
    struct est_spec s;
    struct sc_error err;
    CHECK_EQ_INT(parse(spec_with("\"layers\":10,\"moe\":{\"experts\":4,\"top_k\":1,\"every\":2,"
                                 "\"dense_layers\":3}",
                                 "", "", NULL),
                       &s, &err),
                 SC_OK);
    int moe[10];
    for (int i = 0; i < 10; i++)
        moe[i] = spec_model_layer_is_moe(&s.model, i);
    static const int want[10] = {0, 0, 0, 1, 0, 1, 0, 1, 0, 1};
    CHECK(memcmp(moe, want, sizeof want) == 0);
}

/* The schema's value for a property: its default when not null, else its
 * first example, else its first enum value; NULL when none. */
static json_t *schema_value(json_t *prop)
{
    json_t *d = json_object_get(prop, "default");
    if (d && !json_is_null(d))
        return d;
    if (json_array_size(json_object_get(prop, "examples")))
        return json_array_get(json_object_get(prop, "examples"), 0);
    if (json_array_size(json_object_get(prop, "enum")))
        return json_array_get(json_object_get(prop, "enum"), 0);
    return NULL;
}

/* A spec: the minimal one with path set to v (a fresh document). */
static char *spec_setting(const char *path, json_t *v)
{
    json_t *doc = json_loads(minimal, 0, NULL), *obj = doc;
    char part[64];
    const char *p = path, *dot;
    while ((dot = strchr(p, '.'))) {
        snprintf(part, sizeof part, "%.*s", (int)(dot - p), p);
        if (!json_object_get(obj, part))
            json_object_set_new(obj, part, json_object());
        obj = json_object_get(obj, part);
        p = dot + 1;
    }
    json_object_set(obj, p, v);
    char *text = json_dumps(doc, 0);
    json_decref(doc);
    return text;
}

/* Collect every property path of a schema object into paths (a JSON
 * object used as a set), checking each property on the way. */
static void walk_schema(json_t *schema, const char *prefix, json_t *paths, struct est_spec *base)
{
    const char *key;
    json_t *prop;
    json_object_foreach (json_object_get(schema, "properties"), key, prop) {
        char path[128];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        json_object_set_new(paths, path, json_true());
        if (json_is_object(json_object_get(prop, "properties"))) {
            CHECK(json_is_false(json_object_get(prop, "additionalProperties")));
            walk_schema(prop, path, paths, base);
            continue;
        }
        struct est_spec s;
        struct sc_error err;
        json_t *v = schema_value(prop);
        if (!v) {
            sc_check_fail(__FILE__, __LINE__, "%s: the schema gives no default or example", path);
            continue;
        }
        char *text = spec_setting(path, v);
        int rc = parse(text, &s, &err);
        /* accepted, or refused only by a rule across fields, never for
         * the key or its type or range */
        if (rc && (strstr(err.msg, "unknown key") || strstr(err.msg, "must be") ||
                   strstr(err.msg, "out of range") || strstr(err.msg, "is not one of")))
            sc_check_fail(__FILE__, __LINE__, "%s: %s", text, err.msg);
        /* a default written out is the default left out */
        json_t *d = json_object_get(prop, "default");
        if (d) {
            char *with = spec_setting(path, d);
            CHECK_EQ_INT(parse(with, &s, &err), SC_OK);
            if (memcmp(&s, base, sizeof s) != 0)
                sc_check_fail(__FILE__, __LINE__, "%s: the schema's default differs from the parser's",
                              path);
            free(with);
        }
        /* every enum value is taken */
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(prop, "enum"), i, e) {
            char *with = spec_setting(path, e);
            rc = parse(with, &s, &err);
            CHECK(rc == SC_OK || !strstr(err.msg, "is not one of"));
            free(with);
        }
        /* just past the schema's range is refused */
        json_t *max = json_object_get(prop, "maximum");
        if (json_is_number(max)) {
            json_t *over = json_is_integer(max) ? json_integer(json_integer_value(max) + 1)
                                                : json_real(json_number_value(max) * 2);
            char *with = spec_setting(path, over);
            CHECK_EQ_INT(parse(with, &s, &err), SC_EINVAL);
            CHECK_CONTAINS(err.msg, path);
            free(with);
            json_decref(over);
        }
        free(text);
    }
}

TEST(spec_schema_agrees_with_the_parser)
{
    json_error_t je;
    json_t *schema = json_load_file("data/spec.schema.json", 0, &je);
    if (!schema) {
        sc_check_fail(__FILE__, __LINE__, "data/spec.schema.json: %s", je.text);
        return;
    }
    struct est_spec base;
    struct sc_error err;
    CHECK_EQ_INT(parse(minimal, &base, &err), SC_OK);
    json_t *paths = json_object();
    walk_schema(schema, "", paths, &base);
    /* the same set of keys on both sides */
    size_t n = 0;
    for (const char *const *k = spec_keys(); *k; k++, n++)
        if (!json_object_get(paths, *k))
            sc_check_fail(__FILE__, __LINE__, "the parser takes %s; the schema lacks it", *k);
    CHECK_EQ_INT(json_object_size(paths), n);
    json_decref(paths);

    /* the schema's required keys are the parser's: a document of them
     * alone parses, and without any one of them it is refused naming it */
    json_t *doc = json_object();
    const char *key;
    json_t *obj;
    json_object_foreach (json_object_get(schema, "properties"), key, obj) {
        size_t i;
        json_t *req;
        json_array_foreach (json_object_get(obj, "required"), i, req) {
            json_t *v = schema_value(json_object_get(json_object_get(obj, "properties"),
                                                     json_string_value(req)));
            if (!json_object_get(doc, key))
                json_object_set_new(doc, key, json_object());
            json_object_set(json_object_get(doc, key), json_string_value(req), v);
        }
    }
    CHECK_EQ_INT(json_array_size(json_object_get(schema, "required")), json_object_size(doc));
    char *text = json_dumps(doc, 0);
    struct est_spec s;
    CHECK_EQ_INT(parse(text, &s, &err), SC_OK);
    free(text);
    json_t *sections = json_copy(doc);
    json_object_foreach (sections, key, obj) {
        const char *member;
        json_t *v;
        json_object_foreach (obj, member, v) {
            json_t *without = json_deep_copy(doc);
            char path[128];
            json_object_del(json_object_get(without, key), member);
            snprintf(path, sizeof path, "%s.%s: missing", key, member);
            text = json_dumps(without, 0);
            CHECK_EQ_INT(parse(text, &s, &err), SC_EINVAL);
            CHECK_CONTAINS(err.msg, path);
            free(text);
            json_decref(without);
        }
    }
    json_decref(sections);
    json_decref(doc);
    json_decref(schema);
}
