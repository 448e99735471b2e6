/* tests/integration/test_svc_scale.c: the daemon builds a many-rank job
 * from uploads the way `make bench` builds a 512-rank one (bench_scale.sh),
 * at a size `make check` can afford: ranks uploaded over HTTP, built on
 * all cores keeping only the traces' headers, and the replay the same as
 * the command line's on the same files, before and after a restart (the
 * model then comes back from its stored traces). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/job.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define RANKS 16

static json_t *replay_http(const struct svc_daemon *d, const char *model)
{
    char path[256];
    struct svc_resp r;
    snprintf(path, sizeof path, "/v1/models/%s/replay", model);
    CHECK_EQ_INT(svc_admin(d, "GET", path, NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    CHECK(doc != NULL);
    return doc;
}

/* Upload dir's rank<r>.json files as ranks 0..RANKS-1 of job. */
static void upload_ranks(const struct svc_daemon *d, const char *job, const char *dir)
{
    for (int i = 0; i < RANKS; i++) {
        char file[4300];
        snprintf(file, sizeof file, "%s/rank%d.json", dir, i);
        svc_put_trace_file(d, job, i, file);
    }
}

TEST(svc_builds_a_many_rank_job_from_uploads_as_the_cli_replays_it)
{
    static const char *const gen[] = {"--steps", "4", "--layers", "8", NULL};
    char dir[4096], path[4400];
    struct svc_daemon d;
    struct svc_resp r;
    th_gentrace_dir(RANKS, gen, dir, sizeof dir);
    svc_start(&d, NULL, NULL, NULL);
    upload_ranks(&d, "scale", dir);
    char *model = svc_build_model(&d, "scale", NULL);

    /* the summary counts every event although the model keeps none */
    struct model_job *job = th_gentrace_job(1, gen); /* one rank's count, for scale */
    long long events = 0;
    snprintf(path, sizeof path, "/v1/models/%s", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL), *summary = json_object_get(doc, "summary");
    CHECK_EQ_INT(json_integer_value(json_object_get(summary, "n_ranks")), RANKS);
    events = json_integer_value(json_object_get(summary, "events"));
    CHECK(job && events > (long long)job->ranks[0]->n_events * (RANKS - 1));
    json_decref(doc);
    svc_resp_release(&r);
    model_job_free(job);

    char *stepcast = strdup(th_build_path("stepcast"));
    char *argv[] = {stepcast, "replay", "--json", dir, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    json_t *cli = json_loads(out ? out : "", 0, NULL);
    free(out);
    CHECK(cli != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(cli, "steps")), RANKS * 4);
    for (int pass = 0; pass < 2; pass++) { /* before and after a restart */
        json_t *http = replay_http(&d, model);
        if (!json_equal(http, cli))
            sc_check_fail(__FILE__, __LINE__, "pass %d: the daemon's replay differs from the CLI's", pass);
        json_decref(http);
        if (pass == 0) {
            CHECK_EQ_INT(svc_stop(&d), 0);
            svc_start(&d, d.data, NULL, NULL);
        }
    }
    json_decref(cli);
    free(stepcast);
    free(model);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The model's fold option (POST /v1/jobs/{job}/models {"fold":...}) as
 * the command line's --fold and --no-fold: the same replay, kept across a
 * restart; anything but a boolean is refused. */
TEST(svc_builds_folded_and_unfolded_as_the_cli_replays_them)
{
    static const char *const gen[] = {"--steps", "3", "--layers", "6", "--slow-rank", "3", "--slow-factor", "1.5",
                                      NULL};
    static const char *const bodies[2] = {"{\"fold\":false}", "{\"fold\":true}"};
    static const char *const flags[2] = {"--no-fold", "--fold"};
    char dir[4096], path[4400];
    struct svc_daemon d;
    struct svc_resp r;
    char *model[2];
    json_t *cli[2];
    th_gentrace_dir(RANKS, gen, dir, sizeof dir);
    svc_start(&d, NULL, NULL, NULL);
    upload_ranks(&d, "fold", dir);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/fold/models", "{\"fold\":\"yes\"}", &r), 400);
    CHECK_CONTAINS(r.body, "'fold' must be a boolean");
    svc_resp_release(&r);
    char *stepcast = strdup(th_build_path("stepcast"));
    for (int k = 0; k < 2; k++) {
        model[k] = svc_build_model(&d, "fold", bodies[k]);
        snprintf(path, sizeof path, "/v1/models/%s", model[k]);
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
        json_t *doc = json_loads(r.body, 0, NULL);
        CHECK(json_is_boolean(json_object_get(json_object_get(doc, "options"), "fold")));
        CHECK_EQ_INT(json_is_true(json_object_get(json_object_get(doc, "options"), "fold")), k);
        json_decref(doc);
        svc_resp_release(&r);
        char *argv[] = {stepcast, "replay", "--json", (char *)flags[k], dir, NULL};
        char *out = NULL;
        CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
        cli[k] = json_loads(out ? out : "", 0, NULL);
        free(out);
        REQUIRE(cli[k] != NULL);
    }
    json_t *folding = json_object_get(cli[1], "folding");
    CHECK(json_object_get(cli[0], "folding") == NULL && folding != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(folding, "ranks")), RANKS);
    CHECK(json_integer_value(json_object_get(folding, "representatives")) < RANKS);
    for (int pass = 0; pass < 2; pass++) { /* before and after a restart */
        for (int k = 0; k < 2; k++) {
            json_t *http = replay_http(&d, model[k]);
            if (!json_equal(http, cli[k]))
                sc_check_fail(__FILE__, __LINE__, "pass %d: the daemon's %s replay differs from the CLI's", pass,
                              flags[k]);
            json_decref(http);
        }
        if (pass == 0) {
            CHECK_EQ_INT(svc_stop(&d), 0);
            svc_start(&d, d.data, NULL, NULL);
        }
    }
    for (int k = 0; k < 2; k++) {
        json_decref(cli[k]);
        free(model[k]);
    }
    free(stepcast);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
