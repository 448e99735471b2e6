/* tests/integration/test_cli_synth.c: `stepcast synth` as a user runs it:
 * the traces it writes replay with `stepcast replay` to the step time
 * `stepcast estimate` gives, and bad input exits 2 saying why. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char spec[] =
    "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"mlp\":\"swiglu\"},"
    "\"parallel\":{\"tp\":2,\"pp\":2,\"dp\":2,\"micro_batch\":1,\"global_batch\":8},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true}}";

static double json_number_at(const char *text, const char *key)
{
    json_error_t je;
    json_t *doc = json_loads(text ? text : "", 0, &je);
    double v = json_number_value(json_object_get(doc, key));
    json_decref(doc);
    return v;
}

TEST(cli_synth_traces_replay_to_the_estimate)
{
    const char *spec_path = th_write_file("synth-spec.json", spec, strlen(spec));
    char dir[512];
    snprintf(dir, sizeof dir, "%s/synth-out", th_tmpdir());
    char *argv_synth[] = {(char *)th_build_path("stepcast"), "synth", "--spec", (char *)spec_path, "--out", dir,
                          "--detail", "layer", NULL};
    char *out = th_run_expect(argv_synth, 0, "rank4.pt.trace.json", NULL);
    CHECK_CONTAINS(out, "rank0.pt.trace.json");
    free(out);

    char *argv_est[] = {(char *)th_build_path("stepcast"), "estimate", "--spec", (char *)spec_path, "--detail",
                        "layer", "--json", NULL};
    out = th_run_expect(argv_est, 0, "\"step_ms\"", NULL);
    double est_ms = json_number_at(out, "step_ms");
    free(out);

    char *argv_replay[] = {(char *)th_build_path("stepcast"), "replay", "--json", dir, NULL};
    out = th_run_expect(argv_replay, 0, "ProfilerStep#1", NULL);
    json_error_t je;
    json_t *doc = json_loads(out ? out : "", 0, &je), *st;
    size_t i;
    double slowest = 0;
    json_array_foreach(json_object_get(doc, "steps"), i, st)
    {
        double ms = json_number_value(json_object_get(st, "replayed_ms"));
        slowest = ms > slowest ? ms : slowest;
    }
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "steps")), 2);
    CHECK(est_ms > 0);
    CHECK_NEAR(slowest, est_ms, est_ms * 0.01);
    json_decref(doc);
    free(out);
}

TEST(cli_synth_bad_input)
{
    char spec_path[512];
    snprintf(spec_path, sizeof spec_path, "%s", th_write_file("synth-spec.json", spec, strlen(spec)));
    char *argv_no_out[] = {(char *)th_build_path("stepcast"), "synth", "--spec", spec_path, NULL};
    free(th_run_expect(argv_no_out, 2, NULL, "--out DIR"));

    static const char bad[] = "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048},"
                              "\"parallel\":{\"tp\":3},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    const char *bad_path = th_write_file("synth-bad.json", bad, strlen(bad));
    char dir[512];
    snprintf(dir, sizeof dir, "%s/synth-bad-out", th_tmpdir());
    char *argv_bad[] = {(char *)th_build_path("stepcast"), "synth", "--spec", (char *)bad_path, "--out", dir, NULL};
    free(th_run_expect(argv_bad, 2, NULL, "tp"));

    /* --out holds files already: a replay of it would mix them in */
    snprintf(dir, sizeof dir, "%s", th_tmpdir());
    char *argv_full[] = {(char *)th_build_path("stepcast"), "synth", "--spec", spec_path, "--out", dir, NULL};
    free(th_run_expect(argv_full, 2, NULL, "not empty"));

    /* --out names a file */
    char *argv_file[] = {(char *)th_build_path("stepcast"), "synth", "--spec", spec_path, "--out", spec_path, NULL};
    free(th_run_expect(argv_file, 2, NULL, "not a directory"));
}
