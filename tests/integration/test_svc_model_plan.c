/* tests/integration/test_svc_model_plan.c: plans from a traced job
 * (estimator/whatif/whatif_plan.h) as users run them: `stepcast plan
 * --from-traces` here, POST /v1/models/{id}/plan on the daemon (200 for a
 * small space, 202 and GET /v1/plans/{id} for a larger one) and `stepcast
 * --server URL plan --from-model ID`. Every returned row must equal the
 * what-if of that configuration (the same command line, or POST
 * /v1/models/{id}/whatif); bad bodies are 400 naming the field, a model
 * whose job has no config (or one that lacks what a plan needs) 422; a
 * background plan killed mid-run resumes (POST /v1/plans/{id}/resume) to
 * the same rows. The traced job is a `stepcast synth` trace, so no shared
 * data is needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

static const char spec[] =
    "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048},\"parallel\":{\"tp\":1,\"pp\":1,\"dp\":4,"
    "\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
static const char config[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8,\"layers\":4,"
                             "\"hidden\":2048,\"heads\":16,\"seq\":2048}";

/* The synth trace of spec: its directory (static). */
static const char *synth_dir(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/model-plan-synth", th_tmpdir());
    char *spec_path = strdup(th_write_file("model-plan-spec.json", spec, strlen(spec)));
    char *argv[] = {(char *)th_build_path("stepcast"), "synth", "--spec", spec_path, "--out", dir, "--detail",
                    "kernel", NULL};
    free(th_run_expect(argv, 0, NULL, NULL));
    free(spec_path);
    return dir;
}

/* The set of a plan row: its tp, pp, dp, micro_batch and global_batch. */
static void row_set(const json_t *row, char *out, size_t n, int as_json)
{
    const json_t *p = json_object_get(row, "parallel");
    long long tp = json_integer_value(json_object_get(p, "tp")), pp = json_integer_value(json_object_get(p, "pp")),
              dp = json_integer_value(json_object_get(p, "dp")),
              mb = json_integer_value(json_object_get(p, "micro_batch")),
              gb = json_integer_value(json_object_get(p, "global_batch"));
    if (as_json)
        snprintf(out, n, "{\"set\":{\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"micro_batch\":%lld,\"global_batch\":%lld}}",
                 tp, pp, dp, mb, gb);
    else
        snprintf(out, n, "tp=%lld,pp=%lld,dp=%lld,micro_batch=%lld,global_batch=%lld", tp, pp, dp, mb, gb);
}

/* A plan document's step_ms has 4 decimals: a row equals a what-if to
 * half of its last one. */
#define ROUNDED 0.51e-4

static double row_ms(const json_t *row)
{
    return json_number_value(json_object_get(json_object_get(row, "estimate"), "step_ms"));
}

TEST(cli_plan_from_traces_rows_equal_their_whatifs)
{
    const char *dir = synth_dir();
    unsetenv("STEPCAST_SERVER");
    char *cfg = strdup(th_write_file("model-plan-config.json", config, strlen(config)));
    char *stepcast = strdup(th_build_path("stepcast"));
    char *argv[] = {stepcast, "plan", "--from-traces", "--config", cfg, "--gpus", "8", "--top", "6", "--json",
                    (char *)dir, NULL};
    char *out = th_run_expect(argv, 0, NULL, NULL);
    json_t *doc = json_loads(out ? out : "", 0, NULL), *row;
    size_t i;
    CHECK(json_array_size(json_object_get(doc, "top")) == 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(doc, "pruned")), 0); /* no bound: nothing pruned */
    double prev = 0;
    json_array_foreach (json_object_get(doc, "top"), i, row) {
        char set[128];
        row_set(row, set, sizeof set, 0);
        char *wargv[] = {stepcast, "whatif", "--config", cfg, "--set", set, "--json", (char *)dir, NULL};
        char *w = th_run_expect(wargv, 0, NULL, NULL);
        json_t *wd = json_loads(w ? w : "", 0, NULL);
        double want = json_number_value(json_object_get(wd, "step_ms"));
        CHECK(want > 0);
        CHECK_NEAR(row_ms(row), want, ROUNDED);
        CHECK(row_ms(row) >= prev); /* best first */
        prev = row_ms(row);
        json_decref(wd);
        free(w);
    }
    json_decref(doc);
    free(out);
    /* what the command line refuses */
    char *no_cfg[] = {stepcast, "plan", "--from-traces", "--gpus", "8", (char *)dir, NULL};
    free(th_run_expect(no_cfg, 2, NULL, "--config"));
    char *both[] = {stepcast, "plan", "--from-traces", "--config", cfg, "--spec", cfg, "--gpus", "8", (char *)dir,
                    NULL};
    free(th_run_expect(both, 2, NULL, "--spec"));
    static const char thin[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":4}";
    char *thin_path = strdup(th_write_file("model-plan-thin.json", thin, strlen(thin)));
    char *lacking[] = {stepcast, "plan", "--from-traces", "--config", thin_path, "--gpus", "8", (char *)dir, NULL};
    free(th_run_expect(lacking, 2, NULL, "config.hidden"));
    char *remote_only[] = {stepcast, "plan", "--from-model", "m", "--gpus", "8", NULL};
    free(th_run_expect(remote_only, 2, NULL, "--server"));
    free(thin_path);
    free(cfg);
    free(stepcast);
}

/* Every row of plan document `body` equals POST /v1/models/{model}/whatif
 * of its configuration. */
static void rows_equal_whatifs(const struct svc_daemon *d, const char *model, const json_t *doc)
{
    char path[256], set[160];
    struct svc_resp r;
    const json_t *row;
    size_t i;
    snprintf(path, sizeof path, "/v1/models/%s/whatif", model);
    CHECK(json_array_size(json_object_get(doc, "top")) > 0);
    json_array_foreach (json_object_get(doc, "top"), i, row) {
        row_set(row, set, sizeof set, 1);
        CHECK_EQ_INT(svc_admin(d, "POST", path, set, &r), 200);
        json_t *w = json_loads(r.body ? r.body : "", 0, NULL);
        double want = json_number_value(json_object_get(w, "step_ms"));
        CHECK(want > 0);
        CHECK_NEAR(row_ms(row), want, ROUNDED);
        json_decref(w);
        svc_resp_release(&r);
    }
}

TEST(svc_model_plan_rows_equal_whatifs_200_202_and_errors)
{
    struct svc_daemon d;
    struct svc_resp r;
    char trace[600], path[256];
    snprintf(trace, sizeof trace, "%s/rank0.pt.trace.json", synth_dir());
    svc_start(&d, NULL, NULL, NULL);
    char *model = svc_model_of_files(&d, "mp", 0, (const char *const[]){trace}, 1);
    snprintf(path, sizeof path, "/v1/models/%s/plan", model);

    /* no config, then one without the model's dimensions: 422 */
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":4}", &r), 422);
    CHECK_CONTAINS(r.body, "config");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/mp", "{\"config\":{\"tp\":1,\"pp\":1,\"dp\":4}}", NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":4}", &r), 422);
    CHECK_CONTAINS(r.body, "config.layers");
    svc_resp_release(&r);
    /* a global batch the traced step cannot have run (MFU above 1): 422
     * naming it, not a plan at an MFU of hundreds of percent */
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/mp",
                           "{\"config\":{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8192,"
                           "\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048}}",
                           NULL),
                 200);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":4}", &r), 422);
    CHECK_CONTAINS(r.body, "config.global_batch: 8192 sequences");
    CHECK_CONTAINS(r.body, "MFU");
    svc_resp_release(&r);
    char cfg_body[512];
    snprintf(cfg_body, sizeof cfg_body, "{\"config\":%s}", config);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/mp", cfg_body, NULL), 200);

    /* bad bodies: 400 naming the field */
    static const char *const bad[][2] = {
        {"{\"gpus\":0}", "gpus"},
        {"{}", "gpus"},
        {"{\"gpus\":4,\"top\":0}", "top"},
        {"{\"gpus\":4,\"objective\":\"speed\"}", "objective"},
        {"{\"gpus\":4,\"spec\":{}}", "spec"},
        {"{\"gpus\":4,\"up_to\":1}", "up_to"},
        {"[4]", "object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(svc_admin(&d, "POST", path, bad[i][0], &r), 400);
        CHECK_CONTAINS(r.body, bad[i][1]);
        svc_resp_release(&r);
    }
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/models/nosuch/plan", "{\"gpus\":4}", &r), 404);
    svc_resp_release(&r);

    /* a small space: 200 with the plan, answered and not stored (no id) */
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":4,\"top\":5}", &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "done");
    CHECK_STREQ(svc_json_str(r.body, "id"), "");
    json_t *a = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    rows_equal_whatifs(&d, model, a);

    /* the remote command line prints the same rows */
    setenv("STEPCAST_SERVER", d.url, 1);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *remote[] = {(char *)th_build_path("stepcast"), "plan", "--from-model", model, "--gpus", "4", "--top",
                      "5", "--json", NULL};
    char *out = th_run_expect(remote, 0, NULL, NULL);
    json_t *cli = json_loads(out ? out : "", 0, NULL);
    CHECK(cli && json_equal(json_object_get(a, "top"), json_object_get(cli, "top")));
    json_decref(cli);
    free(out);
    char *remote_bad[] = {(char *)th_build_path("stepcast"), "plan", "--from-model", "nosuch", "--gpus", "4", NULL};
    free(th_run_expect(remote_bad, 2, NULL, "nosuch"));
    unsetenv("STEPCAST_SERVER");
    unsetenv("STEPCAST_TOKEN");
    json_decref(a);

    /* a larger one: 202, then the plan at GET /v1/plans/{id} */
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":32,\"up_to\":true,\"top\":3}", &r), 202);
    char *id = strdup(svc_json_str(r.body, "id"));
    svc_resp_release(&r);
    json_t *done = svc_wait_plan(&d, id);
    CHECK_STREQ(json_string_value(json_object_get(done, "state")), "done");
    rows_equal_whatifs(&d, model, done);
    free(id);

    /* the same, killed while it runs (held at its first progress report):
     * interrupted after the restart, and resumed, from the model it names,
     * to the same rows */
    static const char *const hold[] = {"STEPCAST_FAILPOINT=plan.progress", NULL};
    char resume[128];
    svc_kill9(&d);
    svc_start(&d, d.data, NULL, hold);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":32,\"up_to\":true,\"top\":3}", &r), 202);
    id = strdup(svc_json_str(r.body, "id"));
    svc_resp_release(&r);
    usleep(500000);
    svc_kill9(&d);
    svc_start(&d, d.data, NULL, NULL);
    snprintf(resume, sizeof resume, "/v1/plans/%s", id);
    CHECK_EQ_INT(svc_admin(&d, "GET", resume, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "interrupted");
    svc_resp_release(&r);
    snprintf(resume, sizeof resume, "/v1/plans/%s/resume", id);
    CHECK_EQ_INT(svc_admin(&d, "POST", resume, NULL, NULL), 202);
    json_t *again = svc_wait_plan(&d, id);
    CHECK_STREQ(json_string_value(json_object_get(again, "state")), "done");
    CHECK(again && json_equal(json_object_get(again, "top"), json_object_get(done, "top")));
    json_decref(again);
    json_decref(done);
    free(id);
    free(model);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The trace files daemon d has read from its blobs (its /metrics). */
static long long trace_reads(const struct svc_daemon *d)
{
    struct svc_resp r;
    long long n = -1;
    CHECK_EQ_INT(svc_admin(d, "GET", "/metrics", NULL, &r), 200);
    const char *at = r.body ? strstr(r.body, "\nstepcast_trace_reads_total{") : NULL;
    if (at && (at = strchr(at, '}')))
        n = atoll(at + 1);
    svc_resp_release(&r);
    return n;
}

/* The "top" rows of plan document `body`, compact (from malloc). */
static char *plan_rows(const char *body)
{
    json_t *doc = json_loads(body ? body : "", 0, NULL);
    char *rows = json_dumps(json_object_get(doc, "top"), JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    return rows;
}

/* What-if document `body` less its band (the ledger's, which the
 * validations in between change), as it was sent (from malloc). */
static char *whatif_less_band(const char *body)
{
    const char *band = body ? strstr(body, ",\"band\":") : NULL;
    size_t n = band ? (size_t)(band - body) : 0;
    char *out = malloc(n + 1);
    memcpy(out, body, n);
    out[n] = '\0';
    return out;
}

/* What-ifs (each set another, so none is memoised), a what-if validation
 * and a plan of one model read no trace from its blobs: they read the
 * notes the model took of its traces when it was built, and its
 * built-model blob keeps them, so that after a restart (the model back
 * from its blob, never its traces) they still read none and answer the
 * same, byte for byte (but for the what-if's band, from the ledger the
 * validations add to). A calibration, which joins ops to kernels, reads
 * the model's trace once for its samples, which the model keeps: more
 * calibrations of it, for the same GPU (the same document) or another,
 * read none. */
TEST(svc_model_whatifs_and_plans_read_no_trace_calibrations_once)
{
    static const char *const sets[] = {"{\"set\":{\"dp\":2}}", "{\"set\":{\"dp\":8}}", "{\"set\":{\"tp\":2}}",
                                       "{\"set\":{\"micro_batch\":2,\"global_batch\":16}}"};
    enum { N_SETS = sizeof sets / sizeof sets[0] };
    struct svc_daemon d;
    struct svc_resp r;
    char trace[600], path[256], body[512];
    char *first[N_SETS] = {NULL}, *first_plan = NULL;
    double first_validation = 0;
    snprintf(trace, sizeof trace, "%s/rank0.pt.trace.json", synth_dir());
    svc_start(&d, NULL, NULL, NULL);
    char *model = svc_model_of_files(&d, "once", 0, (const char *const[]){trace}, 1);
    snprintf(body, sizeof body, "{\"config\":%s}", config);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/once", body, NULL), 200);
    for (int round = 0; round < 2; round++) {
        long long built = trace_reads(&d);
        CHECK(round == 0 ? built == 1 : built == 0); /* its build's read; none after the restart */
        snprintf(path, sizeof path, "/v1/models/%s/whatif", model);
        for (int i = 0; i < N_SETS; i++) {
            CHECK_EQ_INT(svc_admin(&d, "POST", path, sets[i], &r), 200);
            char *got = whatif_less_band(r.body);
            svc_resp_release(&r);
            CHECK(strlen(got) > 100 && strstr(got, "\"step_ms\":"));
            if (round == 0) {
                first[i] = got;
                continue;
            }
            if (strcmp(first[i], got))
                sc_check_fail(__FILE__, __LINE__, "what-if %s after the restart: %s, before: %s", sets[i], got,
                              first[i]);
            free(got);
        }
        CHECK_EQ_INT(trace_reads(&d), built);
        snprintf(body, sizeof body, "{\"model\":\"%s\",\"set\":{\"dp\":16},\"measured_step_ms\":20}", model);
        CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/validations", body, &r), 201);
        json_t *v = json_loads(r.body ? r.body : "", 0, NULL);
        double predicted = json_number_value(json_object_get(v, "predicted_step_ms"));
        json_decref(v);
        svc_resp_release(&r);
        CHECK(predicted > 0);
        if (round == 0)
            first_validation = predicted;
        else
            CHECK(predicted == first_validation);
        CHECK_EQ_INT(trace_reads(&d), built);
        snprintf(path, sizeof path, "/v1/models/%s/plan", model);
        CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"gpus\":8,\"top\":2}", &r), 200);
        char *rows = plan_rows(r.body);
        svc_resp_release(&r);
        CHECK(rows && strlen(rows) > 2);
        if (round == 0)
            first_plan = rows;
        else {
            CHECK(rows && first_plan && strcmp(rows, first_plan) == 0);
            free(rows);
        }
        CHECK_EQ_INT(trace_reads(&d), built);
        snprintf(path, sizeof path, "/v1/models/%s/calibration?name=once%d&gpu=a100-sxm4-80gb", model, round);
        CHECK_EQ_INT(svc_admin(&d, "POST", path, NULL, &r), 201);
        char *sha = strdup(svc_json_str(r.body, "sha256"));
        svc_resp_release(&r);
        CHECK_EQ_INT(trace_reads(&d), built + 1);
        /* again, and for another GPU: from the samples the model kept, the
         * same document for the same GPU */
        snprintf(path, sizeof path, "/v1/models/%s/calibration?name=again%d&gpu=a100-sxm4-80gb", model, round);
        CHECK_EQ_INT(svc_admin(&d, "POST", path, NULL, &r), 201);
        CHECK(sha && strlen(sha) == 64);
        CHECK_STREQ(svc_json_str(r.body, "sha256"), sha ? sha : "");
        svc_resp_release(&r);
        snprintf(path, sizeof path, "/v1/models/%s/calibration?name=h100%d&gpu=h100-sxm", model, round);
        CHECK_EQ_INT(svc_admin(&d, "POST", path, NULL, &r), 201);
        CHECK(strcmp(svc_json_str(r.body, "sha256"), sha ? sha : "") != 0);
        svc_resp_release(&r);
        free(sha);
        CHECK_EQ_INT(trace_reads(&d), built + 1);
        if (round == 0) {
            CHECK_EQ_INT(svc_stop(&d), 0);
            svc_start(&d, d.data, NULL, NULL);
        } else {
            CHECK_EQ_INT(svc_log_lines(&d, 1, model, "event=reloaded from=blob"), 1);
        }
    }
    for (int i = 0; i < N_SETS; i++)
        free(first[i]);
    free(first_plan);
    free(model);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
