/* tests/integration/test_svc_view_fields.c: what the dashboard's views read
 * from the real daemon beyond the documents the command line prints: a
 * spec's model from a pasted config.json (POST /v1/specs/from-hf, as
 * `stepcast spec from-hf`), each pipeline stage's memory by part and the
 * GPU's usable memory in an estimate, a hardware profile's sources, and the
 * top row of a plan as Megatron-LM arguments (as `stepcast plan --megatron`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* A Llama-shaped config.json, as the hub has them. */
static const char llama[] = "{\"model_type\":\"llama\",\"num_hidden_layers\":16,\"hidden_size\":2048,"
                            "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"intermediate_size\":8192,"
                            "\"vocab_size\":128256,\"max_position_embeddings\":131072,\"rope_scaling\":"
                            "{\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"},"
                            "\"tie_word_embeddings\":true}";

static json_t *answer(const struct svc_daemon *d, const char *method, const char *path, const char *body,
                      long status)
{
    struct svc_resp r;
    CHECK_EQ_INT(svc_admin(d, method, path, body, &r), status);
    json_t *doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
    svc_resp_release(&r);
    REQUIRE(doc != NULL);
    return doc;
}

static char *cli(char *a1, char *a2, char *a3, char *a4, char *a5, char *a6, char *a7, char *a8)
{
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", th_build_path("stepcast"));
    char *argv[] = {bin, a1, a2, a3, a4, a5, a6, a7, a8, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    return out;
}

TEST(svc_spec_from_hf_is_the_clis_model)
{
    struct svc_daemon d;
    struct svc_resp r;
    char file[4096];
    snprintf(file, sizeof file, "%s", th_write_file("config.json", llama, strlen(llama)));
    svc_start(&d, NULL, NULL, NULL);
    json_t *doc = answer(&d, "POST", "/v1/specs/from-hf", llama, 200);
    char *out = cli("spec", "from-hf", file, NULL, NULL, NULL, NULL, NULL);
    json_t *want = json_loads(out ? out : "", 0, NULL);
    CHECK(want && json_equal(json_object_get(doc, "model"), json_object_get(want, "model")));
    CHECK_STREQ(json_string_value(json_object_get(doc, "seq_from")), "rope_scaling.original_max_position_embeddings");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "model"), "seq")), 8192);
    json_decref(want);
    json_decref(doc);
    free(out);

    /* ?seq gives the length; seq_from is null then */
    doc = answer(&d, "POST", "/v1/specs/from-hf?seq=4096", llama, 200);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "model"), "seq")), 4096);
    CHECK(json_is_null(json_object_get(doc, "seq_from")));
    json_decref(doc);

    /* what a spec cannot express is named; a bad seq or body is refused */
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/specs/from-hf", "{\"model_type\":\"jamba\"}", &r), 422);
    CHECK_CONTAINS(r.body, "model_type \\\"jamba\\\" is unsupported");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/specs/from-hf?seq=0", llama, &r), 400);
    CHECK_CONTAINS(r.body, "seq must be a number");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/specs/from-hf?seq=12x", llama, &r), 400);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/specs/from-hf", "{\"model_type\":", &r), 400);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_estimate_memory_by_part_and_usable)
{
    static const char spec[] = "{\"model\":{\"layers\":16,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                               "\"parallel\":{\"tp\":2,\"pp\":2,\"dp\":2,\"global_batch\":16},"
                               "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"zero_stage\":1}}";
    struct svc_daemon d;
    svc_start(&d, NULL, NULL, NULL);
    json_t *e = answer(&d, "POST", "/v1/estimate", spec, 200), *stage;
    json_t *hw = answer(&d, "GET", "/v1/hardware/h100-sxm", NULL, 200);
    /* the GPU's memory less 5% and 2 GB (data/hardware/README.md) */
    double hbm = json_real_value(json_object_get(hw, "hbm_gb"));
    CHECK(fabs(json_real_value(json_object_get(e, "memory_usable_gb")) - (hbm * 0.95 - 2)) < 1e-3);
    double worst = 0;
    size_t i;
    CHECK_EQ_INT(json_array_size(json_object_get(e, "per_stage")), 2);
    json_array_foreach (json_object_get(e, "per_stage"), i, stage) {
        json_t *m = json_object_get(stage, "memory");
        double parts = json_real_value(json_object_get(m, "weights_gb")) +
                       json_real_value(json_object_get(m, "gradients_gb")) +
                       json_real_value(json_object_get(m, "optimizer_gb")) +
                       json_real_value(json_object_get(m, "activations_gb"));
        double total = json_real_value(json_object_get(stage, "memory_gb"));
        CHECK(json_real_value(json_object_get(m, "activations_gb")) > 0 &&
              json_real_value(json_object_get(m, "optimizer_gb")) > 0);
        /* Megatron's peak is the states and the activations (each rounded to 0.1 MB) */
        CHECK(fabs(parts - total) < 5e-4);
        worst = fmax(worst, total);
    }
    CHECK(fabs(worst - json_real_value(json_object_get(e, "memory_gb_per_gpu"))) < 1e-9);
    json_decref(hw);
    json_decref(e);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_hardware_carries_its_files_sources)
{
    struct svc_daemon d;
    size_t n = 0;
    char *text = th_read_file("data/hardware/h100-sxm.json", &n);
    json_t *file = text ? json_loadb(text, n, 0, NULL) : NULL;
    free(text);
    REQUIRE(file != NULL);
    svc_start(&d, NULL, NULL, NULL);
    json_t *one = answer(&d, "GET", "/v1/hardware/h100-sxm", NULL, 200);
    CHECK(json_object_size(json_object_get(file, "sources")) > 0 &&
          json_equal(json_object_get(one, "sources"), json_object_get(file, "sources")));
    json_t *all = answer(&d, "GET", "/v1/hardware", NULL, 200), *p;
    size_t i;
    json_array_foreach (json_object_get(all, "hardware"), i, p)
        CHECK(json_is_object(json_object_get(p, "sources")));
    json_decref(all);
    json_decref(one);
    json_decref(file);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_plan_top_row_megatron_args_as_the_cli)
{
    static const char spec[] = "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                               "\"parallel\":{\"global_batch\":64,\"micro_batch\":1},\"cluster\":{\"gpu\":\"h100-sxm\"},"
                               "\"options\":{\"zero_stage\":1,\"dtype\":\"fp8\"}}";
    char body[1024], file[4096];
    struct svc_daemon d;
    snprintf(body, sizeof body, "{\"spec\":%s,\"gpus\":16,\"top\":3}", spec);
    snprintf(file, sizeof file, "%s", th_write_file("spec.json", spec, strlen(spec)));
    svc_start(&d, NULL, NULL, NULL);
    json_t *plan = answer(&d, "POST", "/v1/plans", body, 200), *row;
    char *out = cli("plan", "--spec", file, "--gpus", "16", "--top", "3", "--megatron");
    size_t i;
    json_array_foreach (json_object_get(plan, "top"), i, row) {
        const char *args = json_string_value(json_object_get(row, "megatron_args"));
        if (i > 0) {
            CHECK(args == NULL); /* the top row's only */
            continue;
        }
        REQUIRE(args != NULL);
        /* the command line prints "# 1: T ms" and then the same line */
        char line[4096];
        snprintf(line, sizeof line, " ms\n%s\n", args);
        CHECK_CONTAINS(out, line);
        CHECK_CONTAINS(args, "--tensor-model-parallel-size ");
        CHECK_CONTAINS(args, "--use-distributed-optimizer");
        CHECK_CONTAINS(args, "--fp8-format hybrid --fp8-recipe tensorwise");
    }
    free(out);
    json_decref(plan);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
