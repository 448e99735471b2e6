/* tests/integration/test_svc_plan.c: the planner over HTTP against the real
 * daemon: a small plan answers at once and equals POST /v1/estimate on its
 * rows, a larger one runs in the background and is polled (its progress
 * while it runs, then the document the command line prints), a finished
 * plan survives a restart, a running one can be cancelled, and bad input
 * is 400/422 with the reason. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/ledger.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* few combinations: planned inside the request */
static const char small[] = "{\"spec\":{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                            "\"parallel\":{\"global_batch\":64,\"micro_batch\":1},\"cluster\":{\"gpu\":\"h100-sxm\"},"
                            "\"options\":{\"zero_stage\":1}},\"gpus\":16,\"top\":3}";
/* thousands: planned in the background (in about 10 ms) */
#define LARGER_SPEC                                                                                                 \
    "{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},\"parallel\":{\"global_batch\":32},"     \
    "\"cluster\":{\"gpu\":\"h100-sxm\"}}"
static const char larger[] = "{\"spec\":" LARGER_SPEC ",\"gpus\":16,\"top\":5,\"objective\":\"cost\"}";
/* a plan no machine finishes before the DELETE sent right after it: GPT-3
 * on 1,024 GPUs with a batch of 16,384 (every evaluation replays thousands
 * of micro-batches), its best 1,000 of some 10,000 combinations evaluated:
 * about 48 s on the machine that measured it, of which a cancel waits for
 * one evaluation */
static const char slow[] = "{\"spec\":{\"model\":{\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq\":2048,"
                           "\"vocab\":51200},\"parallel\":{\"global_batch\":16384},\"cluster\":{\"gpu\":"
                           "\"a100-sxm4-80gb\"}},\"gpus\":1024,\"top\":1000}";

TEST(svc_plan_small_at_once_equals_estimates)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    REQUIRE(svc_admin(&d, "POST", "/v1/plans", small, &r) == 200);
    json_t *plan = json_loads(r.body, 0, NULL), *row;
    svc_resp_release(&r);
    REQUIRE(plan);
    CHECK_STREQ(json_string_value(json_object_get(plan, "state")), "done");
    CHECK_EQ_INT(json_array_size(json_object_get(plan, "top")), 3);
    size_t i;
    json_array_foreach (json_object_get(plan, "top"), i, row) {
        json_t *spec = json_pack("{s:{s:i, s:i, s:i, s:i}, s:O, s:{s:s}, s:O}", "model", "layers", 8, "hidden", 2048,
                                 "heads", 16, "seq", 4096, "parallel", json_object_get(row, "parallel"), "cluster",
                                 "gpu", "h100-sxm", "options", json_object_get(row, "options"));
        char *text = json_dumps(spec, JSON_COMPACT);
        CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", text, &r), 200);
        json_t *est = r.body ? json_loads(r.body, 0, NULL) : NULL;
        CHECK(est && json_real_value(json_object_get(est, "step_ms")) ==
                         json_real_value(json_object_get(json_object_get(row, "estimate"), "step_ms")));
        CHECK(json_is_true(json_object_get(json_object_get(row, "estimate"), "fits")));
        json_decref(est);
        svc_resp_release(&r);
        free(text);
        json_decref(spec);
    }
    json_decref(plan);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The ledger's estimates of a region rank its rows: ten runs measured 25%
 * slower than estimated (an error of -20%) put the step at risk at the
 * estimate / 0.8, and the band says it comes from the ledger. */
TEST(svc_plan_ranks_at_risk_with_the_ledger)
{
    static const char one[] = "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                              "\"parallel\":{\"global_batch\":64,\"micro_batch\":1,\"dp\":16},"
                              "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"zero_stage\":1}}";
    static const char risky[] = "{\"spec\":{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                                "\"parallel\":{\"global_batch\":64,\"micro_batch\":1},\"cluster\":{\"gpu\":"
                                "\"h100-sxm\"},\"options\":{\"zero_stage\":1}},\"gpus\":16,\"top\":3,\"risk\":0.9}";
    struct svc_daemon d;
    struct svc_resp r;
    char body[1024];
    svc_start(&d, NULL, NULL, NULL);
    REQUIRE(svc_admin(&d, "POST", "/v1/estimate", one, &r) == 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    double est = json_number_value(json_object_get(doc, "step_ms"));
    json_decref(doc);
    svc_resp_release(&r);
    REQUIRE(est > 0);
    for (int i = 0; i < LEDGER_BAND_MIN; i++) {
        snprintf(body, sizeof body, "{\"spec\":%s,\"measured_step_ms\":%.6f,\"source\":\"run %d\"}", one,
                 est / 0.8, i);
        CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/validations", body, &r), 201);
        svc_resp_release(&r);
    }
    REQUIRE(svc_admin(&d, "POST", "/v1/plans", risky, &r) == 200);
    json_t *plan = json_loads(r.body, 0, NULL), *row;
    svc_resp_release(&r);
    REQUIRE(plan);
    CHECK_NEAR(json_number_value(json_object_get(plan, "risk")), 0.9, 0);
    size_t i;
    json_array_foreach (json_object_get(plan, "top"), i, row) {
        json_t *band = json_object_get(row, "band"), *at = json_object_get(row, "at_risk");
        double step = json_number_value(json_object_get(json_object_get(row, "estimate"), "step_ms"));
        REQUIRE(json_is_object(band) && json_is_object(at));
        CHECK_CONTAINS(json_string_value(json_object_get(band, "source")), "the ledger");
        CHECK_EQ_INT(json_integer_value(json_object_get(band, "rows")), LEDGER_BAND_MIN);
        CHECK_STREQ(json_string_value(json_object_get(band, "sharding")), "distributed_optimizer");
        CHECK_NEAR(json_number_value(json_object_get(at, "step_ms")), step / 0.8, 1e-6 * step);
        CHECK_EQ_INT(json_object_get(row, "kernel") != NULL, i == 0);
    }
    json_decref(plan);
    /* a risk out of range: 400 naming it */
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans", "{\"spec\":{},\"gpus\":8,\"risk\":1.5}", &r), 400);
    CHECK_CONTAINS(r.body, "risk: ");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_plan_background_restart_and_cancel)
{
    struct svc_daemon d;
    struct svc_resp r;
    char path[128], id[64];
    svc_start(&d, NULL, NULL, NULL);
    REQUIRE(svc_admin(&d, "POST", "/v1/plans", larger, &r) == 202);
    snprintf(id, sizeof id, "%s", svc_json_str(r.body, "id") ? svc_json_str(r.body, "id") : "");
    CHECK_CONTAINS(r.headers, "/v1/plans/");
    svc_resp_release(&r);
    json_t *done = svc_wait_plan(&d, id);
    REQUIRE(done);
    CHECK_STREQ(json_string_value(json_object_get(done, "state")), "done");
    long long evaluated = json_integer_value(json_object_get(done, "evaluated"));
    CHECK(evaluated > 0);
    CHECK_EQ_INT(json_array_size(json_object_get(done, "top")), 5);

    /* a restart keeps the finished plan as it was */
    CHECK_EQ_INT(svc_stop(&d), 0);
    svc_start(&d, d.data, NULL, NULL);
    snprintf(path, sizeof path, "/v1/plans/%s", id);
    REQUIRE(svc_admin(&d, "GET", path, NULL, &r) == 200);
    json_t *again = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    CHECK(again && json_equal(again, done));
    json_decref(again);
    json_decref(done);

    /* a running plan is cancelled: the DELETE answers once it has stopped */
    REQUIRE(svc_admin(&d, "POST", "/v1/plans", slow, &r) == 202);
    snprintf(id, sizeof id, "%s", svc_json_str(r.body, "id") ? svc_json_str(r.body, "id") : "");
    svc_resp_release(&r);
    snprintf(path, sizeof path, "/v1/plans/%s", id);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "cancelled");
    CHECK_STREQ(svc_json_str(r.body, "id"), id);
    CHECK(!strstr(r.body, "\"top\"")); /* a cancelled plan has no rows */
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "cancelled");
    svc_resp_release(&r);
    /* and a finished one forgotten */
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

struct progress_seen {
    const char *id;
    long long space, last_done;
    int replies;
};

/* A running plan's answer: its id, "running" and its progress, done never
 * going back and never past total, the space the 202 gave. */
static void check_progress(const json_t *doc, void *ctx)
{
    struct progress_seen *p = ctx;
    const json_t *prog = json_object_get(doc, "progress");
    long long done = json_integer_value(json_object_get(prog, "done"));
    long long total = json_integer_value(json_object_get(prog, "total"));
    CHECK_STREQ(json_string_value(json_object_get(doc, "id")), p->id);
    CHECK_EQ_INT(json_object_size(doc), 3); /* id, state, progress: no document yet */
    CHECK(json_is_integer(json_object_get(prog, "done")) && json_is_integer(json_object_get(prog, "total")));
    CHECK(total > 0);
    CHECK_EQ_INT(total, p->space);
    CHECK(done >= p->last_done && done <= total);
    p->last_done = done;
    p->replies++;
}

/* With the plan.progress failpoint a background plan waits at its first
 * progress report until a GET has read it: the polls find it running, and
 * with some combinations done, however fast the machine. The plan then
 * ends as the document `stepcast plan --json` prints for the same
 * request. */
TEST(svc_plan_progress_while_running_then_the_cli_document)
{
    static const char *const env[] = {"STEPCAST_FAILPOINT=plan.progress", NULL};
    struct svc_daemon d;
    struct svc_resp r;
    char id[64];
    svc_start(&d, NULL, NULL, env);
    REQUIRE(svc_admin(&d, "POST", "/v1/plans", larger, &r) == 202);
    snprintf(id, sizeof id, "%s", svc_json_str(r.body, "id"));
    struct progress_seen seen = {.id = id, .space = svc_json_int(r.body, "space")};
    svc_resp_release(&r);
    CHECK(seen.space > 1000); /* over the inline limit: it is why the plan is in the background */
    json_t *done = svc_poll_plan(&d, id, check_progress, &seen);
    REQUIRE(done);
    CHECK(seen.replies >= 1);
    CHECK(seen.last_done > 0);
    CHECK_STREQ(json_string_value(json_object_get(done, "state")), "done");
    CHECK_STREQ(json_string_value(json_object_get(done, "id")), id);
    CHECK(!json_object_get(done, "progress"));

    const char *spec = th_write_file("progress-plan.json", LARGER_SPEC, strlen(LARGER_SPEC));
    char *argv[] = {(char *)th_build_path("stepcast"), "plan", "--spec", (char *)spec, "--gpus", "16", "--top",
                    "5", "--objective", "cost", "--json", NULL};
    char *out = th_run_expect(argv, 0, "\"evaluated\"", NULL);
    json_t *cli = out ? json_loads(out, 0, NULL) : NULL;
    REQUIRE(cli);
    json_object_del(done, "id");
    json_object_del(done, "state");
    CHECK(json_equal(done, cli));
    CHECK_EQ_INT(json_array_size(json_object_get(cli, "top")), 5);
    json_decref(cli);
    free(out);
    json_decref(done);

    /* a plan held so, never read, is cancelled like any other */
    REQUIRE(svc_admin(&d, "POST", "/v1/plans", larger, &r) == 202);
    char path[128];
    snprintf(path, sizeof path, "/v1/plans/%s", svc_json_str(r.body, "id"));
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "cancelled");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_plan_bad_input)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_call(&d, "POST", "/v1/plans", &(struct svc_opts){.body = small, .len = strlen(small)}, NULL),
                 401);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans", "{\"spec\":{}}", &r), 400);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans", "{\"gpus\":8,\"spec\":{\"model\":{\"layers\":2}}}", &r), 400);
    CHECK_STREQ(svc_error_code(&r), "invalid_spec");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans",
                           "{\"gpus\":8,\"top\":3,\"objective\":\"speed\",\"spec\":{\"model\":{\"layers\":2,"
                           "\"hidden\":64,\"heads\":2,\"seq\":64},\"parallel\":{\"global_batch\":8},"
                           "\"cluster\":{\"gpu\":\"h100-sxm\"}}}",
                           &r),
                 400);
    CHECK_CONTAINS(r.body, "objective");
    svc_resp_release(&r);
    /* a space over the cap: 422 with its size */
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans",
                           "{\"gpus\":65536,\"up_to\":true,\"spec\":{\"model\":{\"layers\":500,\"hidden\":8192,"
                           "\"heads\":64,\"seq\":131072},\"parallel\":{\"global_batch\":4096},"
                           "\"cluster\":{\"gpu\":\"h100-sxm\"}}}",
                           &r),
                 422);
    CHECK_CONTAINS(r.body, "configurations, over the limit");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/plans/p-none", NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* `stepcast --server URL plan` prints what `stepcast plan` prints here:
 * the same rows, through 200 (small) and 202 and polling (larger). */
TEST(svc_plan_remote_cli_mirrors_local)
{
    struct svc_daemon d;
    svc_start(&d, NULL, NULL, NULL);
    static const char spec[] = "{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                               "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    const char *path = th_write_file("remote-plan.json", spec, strlen(spec));
    char *sc = (char *)th_build_path("stepcast"), env[128];
    snprintf(env, sizeof env, "STEPCAST_TOKEN=%s", SVC_ADMIN);
    putenv(env);
    for (int fix = 0; fix < 2; fix++) {
        char *gpus = fix ? "2" : "16"; /* 2 GPUs: a small space, answered at once */
        char *remote[] = {sc, "--server", d.url, "plan", "--spec", (char *)path, "--gpus", gpus, "--json", NULL};
        char *local[] = {sc, "plan", "--spec", (char *)path, "--gpus", gpus, "--json", NULL};
        char *a = th_run_expect(remote, 0, "\"evaluated\"", NULL), *b = th_run_expect(local, 0, "\"evaluated\"", NULL);
        json_t *ja = a ? json_loads(a, 0, NULL) : NULL, *jb = b ? json_loads(b, 0, NULL) : NULL;
        REQUIRE(ja && jb);
        CHECK(json_equal(json_object_get(ja, "top"), json_object_get(jb, "top")));
        CHECK(json_equal(json_object_get(ja, "evaluated"), json_object_get(jb, "evaluated")));
        CHECK(json_equal(json_object_get(ja, "infeasible"), json_object_get(jb, "infeasible")));
        json_decref(ja);
        json_decref(jb);
        free(a);
        free(b);
    }
    unsetenv("STEPCAST_TOKEN");
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_plan_body_limits)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    char deep[512];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"gpus\":8,\"spec\":");
    for (int i = 0; i < 100; i++)
        deep[n++] = '[';
    for (int i = 0; i < 100; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans", deep, &r), 400);
    CHECK_STREQ(svc_error_code(&r), "json_too_deep");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans", "{\"gpus\":8", &r), 400);
    CHECK_STREQ(svc_error_code(&r), "invalid_json");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
