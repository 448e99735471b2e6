/* tests/unit/test_job_config.c: the job description's keys beyond the
 * parallelism and model sizes (estimator/spec/job_config.h): parsed strictly,
 * written back, applied by a set, passed into the spec, and checked
 * against a trace (estimator/whatif/job_check.h). */
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

#include "estimator/costs/hardware.h"
#include "estimator/whatif/job_check.h"
#include "estimator/spec/job_config.h"
#include "estimator/spec/spec.h"
#include "common/banned.h"

static const char full[] =
    "{\"tp\":2,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":32,\"layers\":8,\"hidden\":2048,\"heads\":16,"
    "\"seq\":2048,\"kv_heads\":4,\"head_dim\":256,\"mlp\":\"swiglu\",\"cp\":2,\"ep\":4,\"etp\":1,\"zero_stage\":0,"
    "\"sequence_parallel\":true,\"recompute\":\"selective\",\"gpus_per_node\":4,\"framework\":\"pytorch\","
    "\"master_weights\":\"bf16\",\"bias\":false,\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":1024,\"shared_experts\":1,"
    "\"every\":2,\"dense_layers\":1}}";

TEST(job_config_new_keys_parse_and_write_back)
{
    struct job_config c, back;
    struct sc_error err;
    REQUIRE(spec_job_config_parse(full, strlen(full), &c, &err) == SC_OK);
    CHECK_EQ_INT(c.kv_heads, 4);
    CHECK(c.has_mlp && c.mlp == EST_MLP_SWIGLU);
    CHECK(c.cp == 2 && c.ep == 4 && c.etp == 1 && c.gpus_per_node == 4);
    CHECK(c.has_zero_stage && c.zero_stage == 0);
    CHECK_EQ_INT(c.sequence_parallel, 1);
    CHECK(c.has_recompute && c.recompute == EST_RECOMPUTE_SELECTIVE);
    CHECK(c.has_framework && c.framework == EST_FRAMEWORK_PYTORCH);
    CHECK(c.has_master_weights && c.master_weights == EST_MASTER_BF16);
    CHECK_EQ_INT(c.bias, 0);
    CHECK(c.moe.experts == 8 && c.moe.top_k == 2 && c.moe.ffn == 1024 && c.moe.shared_experts == 1 &&
          c.moe.every == 2 && c.moe.dense_layers == 1);
    CHECK_EQ_INT(spec_job_config_world_size(&c), 16);
    char *text = spec_job_config_json(&c);
    REQUIRE(text);
    CHECK_CONTAINS(text, "\"zero_stage\":0");
    CHECK_CONTAINS(text, "\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":1024,\"shared_experts\":1,\"every\":2,"
                         "\"dense_layers\":1}");
    CHECK_EQ_INT(spec_job_config_parse(text, strlen(text), &back, &err), SC_OK);
    CHECK(memcmp(&back, &c, sizeof c) == 0);
    free(text);

    /* nothing given: the spec's defaults, and nothing written */
    static const char bare[] = "{\"tp\":2,\"pp\":1,\"dp\":4}";
    REQUIRE(spec_job_config_parse(bare, strlen(bare), &c, &err) == SC_OK);
    CHECK_EQ_INT(c.sequence_parallel, -1);
    CHECK_EQ_INT(c.bias, -1);
    CHECK_EQ_INT(spec_job_config_sequence_parallel(&c), 0);
    CHECK(!c.has_zero_stage && !c.has_mlp && !c.has_recompute && c.cp == 0 && c.moe.experts == 0);
    CHECK_EQ_INT(spec_job_config_world_size(&c), 8);
    text = spec_job_config_json(&c);
    REQUIRE(text);
    CHECK_STREQ(text, "{\"tp\":2,\"pp\":1,\"dp\":4}");
    free(text);
}

TEST(job_config_new_keys_refused_naming_the_key)
{
    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"kv_heads\":0}", "kv_heads: 0 is out of range (1 to "},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"mlp\":\"relu\"}", "mlp: \"relu\" is not one of gelu, swiglu"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"zero_stage\":4}", "zero_stage: 4 is out of range (0 to 3)"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"sequence_parallel\":1}", "sequence_parallel: must be true or false"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"recompute\":\"auto\"}", "recompute: must be \"none\""},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"cp\":\"2\"}", "cp: must be an integer"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"moe\":8}", "moe: must be an object"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"moe\":{\"top_k\":0}}", "moe.top_k: 0 is out of range (1 to "},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"moe\":{\"expert\":8}}", "moe.expert: unknown key"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"moe.experts\":8}", "moe.experts: unknown key"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"moe\":{\"moe\":{}}}", "moe.moe: unknown key"},
    };
    struct job_config c;
    struct sc_error err;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_EQ_INT(spec_job_config_parse(bad[k].doc, strlen(bad[k].doc), &c, &err), SC_EINVAL);
        CHECK(strncmp(err.msg, bad[k].msg, strlen(bad[k].msg)) == 0);
        if (strncmp(err.msg, bad[k].msg, strlen(bad[k].msg)))
            sc_check_fail(__FILE__, __LINE__, "%s: '%s'", bad[k].doc, err.msg);
    }
    static const char neg[] = "{\"moe\":{\"experts\":-1}}";
    CHECK_EQ_INT(spec_job_config_parse_set_json(neg, strlen(neg), &c, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.moe.experts: ");
    CHECK_EQ_INT(spec_job_config_parse_set_list("moe.experts=x", &c, &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "set.moe.experts: ", 17) == 0);
    CHECK_EQ_INT(spec_job_config_parse_set_list("sequence_parallel=1", &c, &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "set.sequence_parallel: ", 23) == 0);
    CHECK_EQ_INT(spec_job_config_parse_set_list("moe=8", &c, &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "set.moe: unknown key", 20) == 0);
}

TEST(job_config_sets_of_new_keys_apply)
{
    struct job_config base, set, out;
    struct sc_error err;
    REQUIRE(spec_job_config_parse(full, strlen(full), &base, &err) == SC_OK);
    REQUIRE(spec_job_config_parse_set_list("moe.experts=16,sequence_parallel=false,zero_stage=3,recompute=full,"
                                      "mlp=gelu,cp=1,kv_heads=8,bias=true",
                                      &set, &err) == SC_OK);
    CHECK_EQ_INT(set.tp, 0);
    spec_job_config_apply(&base, &set, &out);
    CHECK(out.moe.experts == 16 && out.moe.top_k == 2);
    CHECK_EQ_INT(out.sequence_parallel, 0);
    CHECK(out.has_zero_stage && out.zero_stage == 3);
    CHECK(out.recompute == EST_RECOMPUTE_FULL && out.mlp == EST_MLP_GELU);
    CHECK(out.cp == 1 && out.kv_heads == 8 && out.ep == 4);
    CHECK_EQ_INT(out.bias, 1);

    /* a set that gives none of them leaves them: "not given" is not false */
    static const char dp8[] = "{\"dp\":8,\"moe\":{\"top_k\":1}}";
    REQUIRE(spec_job_config_parse_set_json(dp8, strlen(dp8), &set, &err) == SC_OK);
    CHECK_EQ_INT(set.sequence_parallel, -1);
    spec_job_config_apply(&base, &set, &out);
    CHECK(out.dp == 8 && out.moe.top_k == 1 && out.moe.experts == 8);
    CHECK_EQ_INT(out.sequence_parallel, 1);
    CHECK(out.has_zero_stage && out.zero_stage == 0);
    spec_job_config_init(&set);
    spec_job_config_apply(&base, &set, &out);
    CHECK(memcmp(&out, &base, sizeof out) == 0);

    const char *const *keys = spec_job_config_keys();
    int found = 0;
    for (size_t i = 0; keys[i]; i++)
        found += !strcmp(keys[i], "moe.shared_experts") || !strcmp(keys[i], "sequence_parallel");
    CHECK_EQ_INT(found, 2);
}

TEST(job_config_new_keys_reach_the_spec)
{
    struct job_config c;
    struct est_spec s;
    struct sc_error err;
    REQUIRE(spec_job_config_parse(full, strlen(full), &c, &err) == SC_OK);
    if (spec_job_config_spec(&c, "h100-sxm", &s, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    CHECK(s.model.kv_heads == 4 && s.model.head_dim == 256 && s.model.mlp == EST_MLP_SWIGLU);
    CHECK(s.model.moe.experts == 8 && s.model.moe.top_k == 2 && s.model.moe.ffn == 1024 &&
          s.model.moe.shared_experts == 1 && s.model.moe.every == 2 && s.model.moe.dense_layers == 1);

    CHECK(s.parallel.cp == 2 && s.parallel.ep == 4 && s.parallel.etp == 1 && s.parallel.global_batch == 32);
    CHECK_EQ_INT(s.cluster.gpus_per_node, 4);
    CHECK(s.options.zero_stage == 0 && s.options.sequence_parallel == 1 &&
          s.options.recompute == EST_RECOMPUTE_SELECTIVE);
    CHECK(s.options.framework == EST_FRAMEWORK_PYTORCH && s.options.master_weights == EST_MASTER_BF16);
    CHECK_EQ_INT(s.model.bias, 0);

    /* the planner's template leaves the parallelism open, keeps the rest */
    char text[JOB_CONFIG_SPEC_TEXT_MAX];
    REQUIRE(spec_job_config_spec_text(&c, "h100-sxm", 1, text, sizeof text, &err) == SC_OK);
    CHECK(strstr(text, "\"tp\"") == NULL);
    CHECK_CONTAINS(text, "\"cp\":2");
    CHECK_CONTAINS(text, "\"sequence_parallel\":true");

    /* not given: the spec's default (biases) */
    static const char plain[] = "{\"tp\":1,\"pp\":1,\"dp\":1,\"layers\":2,\"hidden\":1024,\"heads\":16,\"seq\":1024}";
    REQUIRE(spec_job_config_parse(plain, strlen(plain), &c, &err) == SC_OK);
    REQUIRE(spec_job_config_spec(&c, "h100-sxm", &s, &err) == SC_OK);
    CHECK_EQ_INT(s.model.bias, 1);

    /* the spec's own checks name the spec's field */
    static const char moe_tp[] = "{\"tp\":2,\"pp\":1,\"dp\":4,\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048,"
                                 "\"moe\":{\"experts\":8,\"top_k\":2}}";
    REQUIRE(spec_job_config_parse(moe_tp, strlen(moe_tp), &c, &err) == SC_OK);
    CHECK_EQ_INT(spec_job_config_spec(&c, "h100-sxm", &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "options.sequence_parallel");
    CHECK_EQ_INT(spec_job_config_spec_text(&c, "h100-sxm", 0, text, 64, &err), SC_ELIMIT);

    /* latent attention: the spec's model.mla, written back; a set dots its members */
    static const char latent[] = "{\"tp\":1,\"pp\":1,\"dp\":2,\"layers\":2,\"hidden\":1024,\"heads\":8,\"seq\":1024,"
                                 "\"mla\":{\"kv_lora_rank\":512,\"q_lora_rank\":1024,\"v_head_dim\":64}}";
    struct job_config back;
    REQUIRE(spec_job_config_parse(latent, strlen(latent), &c, &err) == SC_OK);
    REQUIRE(spec_job_config_spec(&c, "h100-sxm", &s, &err) == SC_OK);
    CHECK(s.model.mla.kv_lora_rank == 512 && s.model.mla.q_lora_rank == 1024 && s.model.mla.v_head_dim == 64);
    CHECK(s.model.head_dim == 192 && s.model.kv_heads == 8);
    char *written = spec_job_config_json(&c);
    REQUIRE(written);
    CHECK_CONTAINS(written, "\"mla\":{\"kv_lora_rank\":512,\"q_lora_rank\":1024,\"v_head_dim\":64}");
    CHECK_EQ_INT(spec_job_config_parse(written, strlen(written), &back, &err), SC_OK);
    CHECK(memcmp(&back, &c, sizeof c) == 0);
    free(written);
    REQUIRE(spec_job_config_parse_set_list("mla.kv_lora_rank=256,moe.top_k=4,dp=4", &back, &err) == SC_OK);
    CHECK(back.mla.kv_lora_rank == 256 && back.moe.top_k == 4 && back.dp == 4);
    CHECK_EQ_INT(spec_job_config_parse_set_list("mla.rank=2", &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.mla.rank: unknown key");
}

TEST(job_check_world_size_groups_and_mfu)
{
    struct job_config c;
    struct sc_error err;
    static const char cp2[] = "{\"tp\":2,\"pp\":2,\"dp\":2,\"cp\":2,\"moe\":{\"experts\":8,\"top_k\":2},\"ep\":4}";
    REQUIRE(spec_job_config_parse(cp2, strlen(cp2), &c, &err) == SC_OK);
    CHECK_EQ_INT(whatif_job_check_world_size(&c, 16, "", &err), SC_OK);
    CHECK_EQ_INT(whatif_job_check_world_size(&c, -1, "", &err), SC_OK);
    CHECK_EQ_INT(whatif_job_check_world_size(&c, 8, "config.", &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "config.dp: tp x cp x pp x dp = 2 x 2 x 2 x 2 = 16 GPUs", 54) == 0);
    CHECK(whatif_job_config_has_group(&c, 4, 0));  /* cp x tp, dp x cp, ep */
    CHECK(whatif_job_config_has_group(&c, 2, 0));  /* tp */
    CHECK(whatif_job_config_has_group(&c, 16, 0)); /* the world */
    CHECK(whatif_job_config_has_group(&c, 8, 0));  /* etp x ep */
    CHECK(!whatif_job_config_has_group(&c, 3, 1));
    CHECK(!whatif_job_config_has_group(&c, 32, 0));

    /* 64 sequences of 2048 tokens of a 24-layer, hidden-2048 model in 10 ms
     * on 8 H100s is far above their peak */
    static const char big[] = "{\"tp\":1,\"pp\":1,\"dp\":8,\"micro_batch\":1,\"global_batch\":64,\"layers\":24,"
                              "\"hidden\":2048,\"heads\":16,\"seq\":2048}";
    REQUIRE(spec_job_config_parse(big, strlen(big), &c, &err) == SC_OK);
    const struct hw_profile *hw = cost_hw_profile_find("h100-sxm");
    REQUIRE(hw);
    CHECK_EQ_INT(whatif_job_check_mfu(&c, hw, 10, "", &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "global_batch: 64 sequences", 26) == 0);
    CHECK_EQ_INT(whatif_job_check_mfu(&c, hw, 10000, "", &err), SC_OK);
    CHECK_EQ_INT(whatif_job_check_mfu(&c, NULL, 10, "", &err), SC_OK);
    c.global_batch = 0; /* micro_batch x dp sequences: the micro-batch is named */
    CHECK_EQ_INT(whatif_job_check_mfu(&c, hw, 0.1, "", &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "micro_batch: ", 13) == 0);
    c.layers = 0; /* no model: nothing to check */
    CHECK_EQ_INT(whatif_job_check_mfu(&c, hw, 0.1, "", &err), SC_OK);
}
