/* tests/integration/test_cli_spec.c: `stepcast spec` as a user runs it:
 * from-hf writes a model that reads back (and, given GPUs, a whole spec
 * laid out as the planner ranks first), check prints a complete spec, and
 * an invalid spec exits 2 with the field named. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static int stepcast(const char *a, const char *b, const char *c, const char *d, char **out,
                    char **err)
{
    char *argv[] = {(char *)th_build_path("stepcast"), (char *)a, (char *)b, (char *)c, (char *)d,
                    NULL};
    return th_run(argv, out, err);
}

TEST(cli_spec_from_hf_and_check)
{
    static const char config[] =
        "{\"model_type\":\"llama\",\"num_hidden_layers\":32,\"hidden_size\":4096,"
        "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"intermediate_size\":14336,"
        "\"vocab_size\":128256,\"max_position_embeddings\":131072,\"rope_scaling\":{"
        "\"original_max_position_embeddings\":8192},\"tie_word_embeddings\":false}";
    const char *path = th_write_file("config.json", config, strlen(config));
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(stepcast("spec", "from-hf", path, NULL, &out, &err), 0);
    CHECK_CONTAINS(err, "seq 8192 from rope_scaling.original_max_position_embeddings");
    struct est_model m;
    struct sc_error e;
    CHECK_EQ_INT(spec_model_parse(out, out ? strlen(out) : 0, &m, &e), SC_OK);
    CHECK_EQ_INT(m.kv_heads, 8);
    CHECK_EQ_INT(m.seq, 8192);
    free(out);
    free(err);

    CHECK_EQ_INT(stepcast("spec", "from-hf", "--seq", "4096", &out, &err), 2); /* no file */
    free(out);
    free(err);

    static const char spec[] = "{\"model\":{\"layers\":32,\"hidden\":4096,\"heads\":32,\"seq\":4096},"
                               "\"parallel\":{\"tp\":8,\"dp\":4},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    path = th_write_file("spec.json", spec, strlen(spec));
    CHECK_EQ_INT(stepcast("spec", "check", path, NULL, &out, &err), 0);
    struct est_spec s;
    CHECK_EQ_INT(spec_parse(out, out ? strlen(out) : 0, &s, &e), SC_OK);
    CHECK_EQ_INT(s.parallel.global_batch, 4);
    CHECK_CONTAINS(out, "\"zero_stage\": 0");
    CHECK_CONTAINS(err, "32 GPUs (h100-sxm)");
    CHECK_CONTAINS(err, "GB usable");
    free(out);
    free(err);

    static const char bad[] = "{\"model\":{\"layers\":32,\"hidden\":4096,\"heads\":32,\"seq\":4096},"
                              "\"parallel\":{\"tpp\":8},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    path = th_write_file("bad.json", bad, strlen(bad));
    CHECK_EQ_INT(stepcast("spec", "check", path, NULL, &out, &err), 2);
    CHECK_CONTAINS(err, "parallel.tpp: unknown key");
    free(out);
    free(err);

    static const char gpu[] = "{\"model\":{\"layers\":32,\"hidden\":4096,\"heads\":32,\"seq\":4096},"
                              "\"cluster\":{\"gpu\":\"tpu-v5\"}}";
    path = th_write_file("gpu.json", gpu, strlen(gpu));
    CHECK_EQ_INT(stepcast("spec", "check", path, NULL, &out, &err), 2);
    CHECK_CONTAINS(err, "cluster.gpu: no hardware profile \"tpu-v5\"");
    free(out);
    free(err);
}

/* from-hf --gpus N --gpu ID: a whole spec of a real config (Llama 3.1 70B,
 * ../shared/models/hf) that runs as written, on all N GPUs, its layout the
 * first row of `stepcast plan` on those GPUs at the same global batch
 * (4 Mi tokens: 512 sequences of 8,192); a model no layout of the GPUs
 * fits is refused. */
TEST(cli_spec_from_hf_whole_spec)
{
    char config[4096], big[4096], plan_spec[8192];
    snprintf(config, sizeof config, "%s/llama-3.1-70b.json", th_shared_dir("models/hf"));
    snprintf(big, sizeof big, "%s/llama-3.1-405b.json", th_shared_dir("models/hf"));
    char *cli = (char *)th_build_path("stepcast");
    char *argv[] = {cli, "spec", "from-hf", "--gpus", "256", "--gpu", "h100-sxm", config, NULL};
    char *out = th_run_expect(argv, 0, "\"global_batch\": 512", "the planner's first layout");
    struct est_spec s;
    struct sc_error e;
    REQUIRE(out != NULL);
    CHECK_EQ_INT(spec_parse(out, strlen(out), &s, &e), SC_OK);
    CHECK_EQ_INT(spec_gpus(&s), 256);
    const char *whole = th_write_file("llama70b-whole.json", out, strlen(out));
    char *est[] = {cli, "estimate", "--spec", (char *)whole, NULL};
    free(th_run_expect(est, 0, "on 256 x h100-sxm", NULL));
    /* the same model and batch planned: its first row is this layout */
    char *model_only[] = {cli, "spec", "from-hf", config, NULL};
    char *model = th_run_expect(model_only, 0, "\"model\"", NULL);
    REQUIRE(model != NULL && strrchr(model, '}') != NULL);
    snprintf(plan_spec, sizeof plan_spec,
             "%.*s,\"parallel\":{\"global_batch\":512},\"cluster\":{\"gpu\":\"h100-sxm\"}}",
             (int)(strrchr(model, '}') - model), model);
    const char *pp = th_write_file("llama70b-plan.json", plan_spec, strlen(plan_spec));
    char *plan[] = {cli, "plan", "--spec", (char *)pp, "--gpus", "256", "--top", "1", "--json", NULL};
    char *po = th_run_expect(plan, 0, NULL, NULL);
    json_t *doc = json_loads(po ? po : "", 0, NULL);
    json_t *par = json_object_get(json_array_get(json_object_get(doc, "top"), 0), "parallel");
    CHECK_EQ_INT(json_integer_value(json_object_get(par, "tp")), s.parallel.tp);
    CHECK_EQ_INT(json_integer_value(json_object_get(par, "pp")), s.parallel.pp);
    CHECK_EQ_INT(json_integer_value(json_object_get(par, "dp")), s.parallel.dp);
    CHECK_EQ_INT(json_integer_value(json_object_get(par, "cp")), s.parallel.cp);
    CHECK_EQ_INT(json_integer_value(json_object_get(par, "micro_batch")), s.parallel.micro_batch);
    json_decref(doc);
    free(po);
    free(model);
    free(out);
    /* 405B on 8 GPUs: nothing fits */
    char *none[] = {cli, "spec", "from-hf", "--gpus", "8", "--gpu", "h100-sxm", big, NULL};
    free(th_run_expect(none, 2, NULL, "no layout of 8 h100-sxm fits this model"));
    char *no_gpu[] = {cli, "spec", "from-hf", "--gpus", "8", config, NULL};
    free(th_run_expect(no_gpu, 2, NULL, "name its GPU with --gpu ID"));
}

/* Every Hugging Face config of ../shared/models/hf on 64 H100s: from-hf
 * either writes a whole spec that `stepcast estimate` runs as written on
 * all 64 GPUs, or refuses with exit 2 naming the config file and why (an
 * attention a spec cannot express, no layout that fits). */
TEST(cli_spec_from_hf_whole_specs_estimate)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", th_shared_dir("models/hf"));
    char *cli = (char *)th_build_path("stepcast");
    DIR *d = opendir(dir);
    REQUIRE(d != NULL);
    struct dirent *e;
    int written = 0, refused = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
            continue;
        char config[4096], name[300];
        snprintf(config, sizeof config, "%s/%s", dir, e->d_name);
        char *argv[] = {cli, "spec", "from-hf", "--gpus", "64", "--gpu", "h100-sxm", config, NULL};
        char *out = NULL, *err = NULL;
        int rc = th_run(argv, &out, &err);
        if (rc == 0) {
            snprintf(name, sizeof name, "whole-%s", e->d_name);
            const char *spec = th_write_file(name, out, out ? strlen(out) : 0);
            char *est[] = {cli, "estimate", "--spec", (char *)spec, NULL};
            char *so = th_run_expect(est, 0, "on 64 x h100-sxm", NULL);
            if (!so)
                fprintf(stderr, "  %s: its whole spec does not estimate\n", e->d_name);
            free(so);
            written++;
        } else {
            CHECK_EQ_INT(rc, 2);
            CHECK_CONTAINS(err, config);
            refused++;
        }
        free(out);
        free(err);
    }
    closedir(d);
    CHECK(written >= 1);
    fprintf(stderr, "  %d configs written as whole specs and estimated, %d refused\n", written, refused);
}
