/* tests/integration/test_cli_plan.c: `stepcast plan` as a user runs it:
 * every row of its plan is what `stepcast estimate` answers for that
 * configuration, --megatron names each row's layout, and bad input exits 2
 * with the field named. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char spec[] = "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"kv_heads\":4,\"seq\":4096,"
                           "\"vocab\":32000,\"mlp\":\"swiglu\"},\"parallel\":{\"global_batch\":64},"
                           "\"cluster\":{\"gpu\":\"h100-sxm\",\"gpu_hour_usd\":2.5},"
                           "\"options\":{\"overlap_param_gather\":false}}";

TEST(cli_plan_rows_equal_estimate)
{
    const char *path = th_write_file("plan-spec.json", spec, strlen(spec));
    char *argv[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "16",
                    "--top", "5", "--objective", "cost", "--json", NULL};
    char *out = th_run_expect(argv, 0, "\"evaluated\"", NULL);
    json_t *plan = out ? json_loads(out, 0, NULL) : NULL, *row;
    REQUIRE(plan);
    CHECK(json_integer_value(json_object_get(plan, "evaluated")) > 0);
    CHECK(json_is_integer(json_object_get(plan, "pruned")));
    CHECK(json_is_integer(json_object_get(json_object_get(plan, "infeasible"), "memory")));
    CHECK(json_is_integer(json_object_get(json_object_get(plan, "infeasible"), "divisibility")));
    CHECK_EQ_INT(json_array_size(json_object_get(plan, "top")), 5);
    size_t i;
    double prev = 0;
    json_array_foreach (json_object_get(plan, "top"), i, row) {
        /* the configuration as a spec of its own: the template's model and
         * cluster, the row's parallel and options */
        json_t *one = json_loads(spec, 0, NULL);
        json_object_set(one, "parallel", json_object_get(row, "parallel"));
        json_object_set(one, "options", json_object_get(row, "options"));
        char *text = json_dumps(one, JSON_COMPACT), name[32];
        snprintf(name, sizeof name, "row%zu.json", i);
        const char *row_path = th_write_file(name, text, strlen(text));
        char *est_argv[] = {(char *)th_build_path("stepcast"), "estimate", "--spec", (char *)row_path, "--json",
                            NULL};
        char *est_out = th_run_expect(est_argv, 0, "\"step_ms\"", NULL);
        json_t *est = est_out ? json_loads(est_out, 0, NULL) : NULL, *mine = json_object_get(row, "estimate");
        CHECK(est && json_equal(est, mine));
        CHECK(json_is_true(json_object_get(mine, "fits")));
        CHECK_NEAR(json_number_value(json_object_get(mine, "gpus")), 16, 0);
        /* ranked by the cost at the default risk (the band's median): on the
         * same GPUs at one price, by the step time at that risk */
        double at_risk = json_number_value(json_object_get(json_object_get(row, "at_risk"), "step_ms"));
        CHECK(json_number_value(json_object_get(mine, "cost_usd_per_m_tokens")) > 0);
        CHECK(at_risk > 0 && at_risk >= prev * (1 - 1e-9));
        prev = at_risk;
        json_decref(est);
        free(est_out);
        free(text);
        json_decref(one);
    }
    json_decref(plan);
    free(out);

    char *meg[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "16", "--top", "2",
                   "--megatron", NULL};
    out = th_run_expect(meg, 0, "--tensor-model-parallel-size", NULL);
    CHECK_CONTAINS(out, "--global-batch-size 64");
    CHECK_CONTAINS(out, "--group-query-attention --num-query-groups 4");
    CHECK_CONTAINS(out, "--swiglu");
    free(out);

    char *text_argv[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "16", NULL};
    out = th_run_expect(text_argv, 0, "infeasible: memory", NULL);
    free(out);
    /* at a risk: the step time at it beside the estimate, the top row at
     * kernel detail, and why a row is extrapolated (no run on an H200 was
     * validated) */
    char h200[sizeof spec];
    const char *at = strstr(spec, "h100-sxm");
    REQUIRE(at);
    snprintf(h200, sizeof h200, "%.*sh200%s", (int)(at - spec), spec, at + strlen("h100-sxm"));
    const char *h200_path = th_write_file("plan-h200.json", h200, strlen(h200));
    char *risk_argv[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)h200_path, "--gpus", "16",
                         "--top", "3", "--risk", "0.9", NULL};
    out = th_run_expect(risk_argv, 0, "ms at p90", NULL);
    CHECK_CONTAINS(out, "#1 at kernel detail: ");
    CHECK_CONTAINS(out, "! #1 extrapolated: ");
    free(out);
}

/* A latent-attention MoE model after a dense layer, as DeepSeek-V3 is
 * built: the arguments say its latent attention, the experts' and the
 * shared expert's sizes and which layers are MoE. */
TEST(cli_plan_megatron_args_of_latent_attention_and_moe)
{
    static const char mla[] =
        "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":8,\"seq\":1024,\"vocab\":32000,\"mlp\":\"swiglu\","
        "\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":512,\"shared_experts\":1,\"dense_layers\":1},"
        "\"mla\":{\"kv_lora_rank\":256,\"q_lora_rank\":512}},\"parallel\":{\"global_batch\":32},"
        "\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    const char *path = th_write_file("plan-mla.json", mla, strlen(mla));
    char *argv[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "8", "--top", "1",
                    "--megatron", NULL};
    char *out = th_run_expect(argv, 0, "--multi-latent-attention --kv-lora-rank 256 --q-lora-rank 512 "
                                       "--qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128", NULL);
    CHECK_CONTAINS(out, "--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 512 "
                        "--moe-shared-expert-intermediate-size 512 --moe-layer-freq \"[0,1,1,1]\"");
    CHECK(out && !strstr(out, "--group-query-attention"));
    free(out);
}

TEST(cli_plan_bad_input)
{
    const char *path = th_write_file("plan-spec.json", spec, strlen(spec));
    char *no_gpus[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, NULL};
    free(th_run_expect(no_gpus, 2, NULL, "--gpus N"));
    char *bad_obj[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "8",
                       "--objective", "speed", NULL};
    free(th_run_expect(bad_obj, 2, NULL, "objective"));
    char *bad_risk[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "8",
                        "--risk", "0.3", NULL};
    free(th_run_expect(bad_risk, 2, NULL, "--risk"));
    static const char no_batch[] = "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                                   "\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    path = th_write_file("no-batch.json", no_batch, strlen(no_batch));
    char *argv[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)path, "--gpus", "8", NULL};
    free(th_run_expect(argv, 2, NULL, "parallel.global_batch"));
}
