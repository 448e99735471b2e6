/* tests/integration/test_cli_spec.c: `stepcast spec` as a user runs it:
 * from-hf writes a model that reads back, check prints a complete spec, and
 * an invalid spec exits 2 with the field named. */
#include <stdlib.h>
#include <string.h>

#include "estimator/spec.h"
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
    CHECK_EQ_INT(est_model_parse(out, out ? strlen(out) : 0, &m, &e), SC_OK);
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
    CHECK_EQ_INT(est_spec_parse(out, out ? strlen(out) : 0, &s, &e), SC_OK);
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
