/* tests/integration/test_svc_build_cancel.c: a model build is cancelled
 * cooperatively, against the real daemon on SQLite.
 *
 * Deleting a model mid-build stops its build within a second (a gentrace
 * job of 3.2 million events, whose whole build takes seconds): the build
 * frees what it made, publishes nothing, and its worker builds the next
 * model. A job deleted while its model's build waits in the queue, or
 * while it runs, stops it the same way. On SIGTERM, a build still running when --drain-timeout expires is
 * cancelled and its model stored `interrupted` with its progress; the
 * daemon exits within seconds of the timeout; after the restart the model
 * is still `interrupted` (not built again behind the user's back), and
 * POST /v1/models/{id}/resume builds it, to the replay the command line
 * gives. Schema 10 (the `interrupted` status) rebuilds the models table
 * without losing a model's traces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "daemon/store.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"

static json_t *get_model(const struct svc_daemon *d, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/models/%s", id);
    return svc_admin_json(d, path);
}

static const char *str_of(const json_t *doc, const char *key)
{
    const char *s = json_string_value(json_object_get(doc, key));
    return s ? s : "";
}

/* A gentrace job of two ranks in <tmp>/name, uploaded as job `job`. */
static void upload_gentrace(const struct svc_daemon *d, const char *name, const char *job, const char *const *args,
                            char dir[4096])
{
    char file[4200];
    svc_gentrace(name, args, dir);
    for (int r = 0; r < 2; r++) {
        snprintf(file, sizeof file, "%s/rank%d.json.gz", dir, r);
        svc_put_trace_file(d, job, r, file);
    }
}

TEST(svc_build_delete_mid_build_stops_it_within_a_second)
{
    static const char *const big[] = {"--ranks", "2", "--steps", "400", "--layers", "64", NULL};
    static const char *const one_worker[] = {"--build-workers", "1", NULL};
    struct svc_daemon d;
    char dir[4096], path[128];
    size_t n;
    svc_start(&d, NULL, one_worker, NULL);
    upload_gentrace(&d, "cancel-big", "big", big, dir);
    char *id = svc_request_model(&d, "big", NULL);
    REQUIRE(svc_wait_builds_running(&d, 1, 120) >= 0); /* admitted and loading */
    snprintf(path, sizeof path, "/v1/models/%s", id);
    double t0 = th_now_s();
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200);
    double stop = svc_wait_builds_running(&d, 0, 60), took = th_now_s() - t0;
    fprintf(stderr, "    deleted mid-build: the build stopped %.3f s after the DELETE was sent\n", took);
    CHECK(stop >= 0);
    CHECK(took < 1.5);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=cancelled"), 1); /* stopped, not run to its end */
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=ready"), 0);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=lease_lost"), 0);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 404);

    /* the daemon is well, and its one worker, its memory given back,
     * builds the next model */
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", &(struct svc_opts){0}, NULL), 200);
    char *t = svc_small_trace(0, 40, 7, &n);
    struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/small/ranks/0/trace", &o, NULL), 201);
    free(t);
    char *next = svc_build_model(&d, "small", NULL);
    free(next);
    free(id);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* A model deleted after its build's last look at the cancel flag, while
 * the build is held on its way to publish (STEPCAST_FAILPOINT=
 * build.publishing, its blob written): the build finds its lease gone,
 * publishes nothing and logs the deletion as a cancellation, not as a
 * lease another replica took. */
TEST(svc_build_delete_while_publishing_is_a_cancellation)
{
    static const char *const held[] = {"STEPCAST_FAILPOINT=build.publishing", NULL};
    struct svc_daemon d;
    char path[128];
    size_t n;
    svc_start(&d, NULL, NULL, held);
    char *t = svc_small_trace(0, 40, 7, &n);
    struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/late/ranks/0/trace", &o, NULL), 201);
    free(t);
    char *id = svc_request_model(&d, "late", NULL);
    REQUIRE(svc_wait_hold(&d, "build.publishing", 60));
    snprintf(path, sizeof path, "/v1/models/%s", id);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200);
    CHECK(svc_wait_builds_running(&d, 0, 30) >= 0);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=cancelled"), 1);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=lease_lost"), 0);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=ready"), 0);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    free(id);
}

/* Model id's progress once its build is held at its first rank built
 * (STEPCAST_FAILPOINT=build.progress): above 0, or 0 after 20 s. */
static double held_build(const struct svc_daemon *d, const char *id)
{
    double progress = 0;
    for (int i = 0; i < 2000 && progress <= 0; i++) {
        json_t *m = get_model(d, id);
        progress = json_number_value(json_object_get(m, "progress"));
        json_decref(m);
        usleep(10000);
    }
    return progress;
}

/* A job deleted while its model's build waits in the queue, and another
 * while its model's build runs (held at its first rank built, the one
 * build worker taken): both answer 200, the running build stops, neither
 * model is published, and the catalog is consistent (--check). Before
 * cancellation, the running build ran to its end, and a build whose job
 * was deleted while it waited reached memcpy from NULL. */
TEST(svc_build_job_deleted_while_queued_and_while_running)
{
    static const char *const run[] = {"--ranks", "2", "--steps", "8", "--seed", "6", NULL};
    static const char *const one_worker[] = {"--build-workers", "1", NULL};
    static const char *const hold[] = {"STEPCAST_FAILPOINT=build.progress", NULL};
    struct svc_daemon d;
    char dir[4096], path[160];
    svc_start(&d, NULL, one_worker, hold);
    upload_gentrace(&d, "deleted-running", "running", run, dir);
    upload_gentrace(&d, "deleted-queued", "queued", run, dir);
    char *running = svc_request_model(&d, "running", NULL);
    REQUIRE(held_build(&d, running) > 0);
    char *queued = svc_request_model(&d, "queued", NULL);
    json_t *m = get_model(&d, queued);
    CHECK_STREQ(str_of(m, "status"), "building"); /* waiting for the one worker */
    json_decref(m);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/queued", NULL, NULL), 200);
    double t0 = th_now_s();
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/running", NULL, NULL), 200);
    CHECK(svc_wait_builds_running(&d, 0, 30) >= 0);
    fprintf(stderr, "    job deleted mid-build: the build stopped %.3f s after the DELETE\n", th_now_s() - t0);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/v1/models/%s", i ? queued : running);
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 404);
    }
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", &(struct svc_opts){0}, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_log_lines(&d, 1, running, "event=cancelled"), 1);
    CHECK_EQ_INT(svc_log_lines(&d, 1, running, "event=ready"), 0);
    CHECK_EQ_INT(svc_log_lines(&d, 1, queued, "event=ready"), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    free(running);
    free(queued);
}

TEST(svc_build_drain_timeout_interrupts_and_resume_builds_it)
{
    static const char *const run[] = {"--ranks", "2", "--steps", "8", "--seed", "5", NULL};
    static const char *const drain[] = {"--drain-timeout", "1", NULL};
    static const char *const hold[] = {"STEPCAST_FAILPOINT=build.progress", NULL};
    struct svc_daemon d;
    struct svc_resp r;
    char dir[4096], path[160];
    svc_start(&d, NULL, drain, hold);
    upload_gentrace(&d, "drain-run", "run", run, dir);
    char *id = svc_request_model(&d, "run", NULL);
    double progress = held_build(&d, id);
    REQUIRE(progress > 0);
    double t0 = th_now_s();
    int st = svc_stop(&d);
    double took = th_now_s() - t0;
    fprintf(stderr, "    SIGTERM with --drain-timeout 1 during a build: exit %d after %.2f s\n", st, took);
    CHECK_EQ_INT(st, 0);
    CHECK(took >= 1);     /* the build had its drain timeout */
    CHECK(took < 1 + 2.5); /* then it was cancelled: not left to run */
    CHECK_EQ_INT(svc_log_lines(&d, 1, "event=drain_timeout builds=1", "cancelled"), 1);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=interrupted"), 1);

    /* after the restart: interrupted, with its progress, and left so */
    svc_start(&d, d.data, NULL, NULL);
    for (int look = 0; look < 2; look++) {
        json_t *m = get_model(&d, id);
        CHECK_STREQ(str_of(m, "status"), "interrupted");
        double p = json_number_value(json_object_get(m, "progress"));
        CHECK(p >= progress - 1e-9 && p < 1);
        CHECK_CONTAINS(str_of(m, "error"), "/resume");
        json_decref(m);
        if (!look)
            usleep(1500000); /* longer than an idle builder's look at the queue (BQ_POLL_S) */
    }
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=start"), 1); /* the first run's only */

    /* resumed: built again, under its id, to the command line's replay */
    snprintf(path, sizeof path, "/v1/models/%s/resume", id);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, NULL, &r), 202);
    CHECK_STREQ(svc_json_str(r.body, "id"), id);
    CHECK_CONTAINS(r.headers, "/v1/models/");
    svc_resp_release(&r);
    CHECK_STREQ(svc_wait_model(&d, id, 120), "ready");
    snprintf(path, sizeof path, "/v1/models/%s/replay", id);
    svc_check_same_json(svc_admin_json(&d, path), svc_cli_replay(dir), "replay of the resumed model");

    /* only an interrupted model resumes */
    snprintf(path, sizeof path, "/v1/models/%s/resume", id);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, NULL, &r), 409);
    CHECK_CONTAINS(r.body, "is ready");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/models/m-none/resume", NULL, NULL), 404);
    free(id);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
}

/* Schema 10 builds the models table again (SQLite changes a CHECK no
 * other way): run once more on a catalog of this schema, marked 9, it
 * keeps every model and the traces each is pinned to. */
TEST(svc_build_schema_10_keeps_models_and_their_traces)
{
    static const char *const ranks[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz"};
    struct svc_daemon d;
    char db[4200], path[128];
    svc_start(&d, NULL, NULL, NULL);
    char *id = svc_model_of_files(&d, "sample", 0, ranks, 2);
    snprintf(path, sizeof path, "/v1/models/%s/replay", id);
    json_t *before = svc_admin_json(&d, path);
    CHECK_EQ_INT(svc_stop(&d), 0);

    snprintf(db, sizeof db, "%s/catalog.db", d.data);
    sqlite3 *s = NULL;
    CHECK_EQ_INT(sqlite3_open(db, &s), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(s, "PRAGMA user_version = 9", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);

    svc_start(&d, d.data, NULL, NULL);
    json_t *m = get_model(&d, id);
    CHECK_STREQ(str_of(m, "status"), "ready");
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "n_ranks")), 2); /* its pins kept */
    json_decref(m);
    svc_check_same_json(svc_admin_json(&d, path), before, "replay after the migration");
    struct svc_resp r;
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", &(struct svc_opts){0}, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "schema"), STORE_SCHEMA_VERSION);
    svc_resp_release(&r);
    free(id);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
}
