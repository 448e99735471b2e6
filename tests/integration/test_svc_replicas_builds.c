/* tests/integration/test_svc_replicas_builds.c: stepcastd as replicas: two and
 * three daemons, each its own data directory, on one real PostgreSQL
 * (tests/pg_server.h) and one blob directory (--blobs). A job uploaded
 * through one is built through another (by whichever replica takes it
 * from the catalog's queue, build_queue.h) and replayed through a third,
 * as the local command line replays it; a replica killed mid-build loses
 * its lease and another finishes the build; each model is built once. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/build_queue.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/pg_server.h"

/* The blob directory the replicas share: <tmp>/shared-blobs. */
static const char *shared_blobs(void)
{
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/shared-blobs", th_tmpdir());
    return dir;
}

/* n replicas on the server pg, data directories <tmp>/replica<i> and
 * blobs in shared_blobs(); extra flags after those. */
static void start_replicas_env(struct svc_daemon *d, size_t n, const struct pg_server *pg, const char *const *extra,
                               const char *const *env)
{
    const char *args[16] = {"--blobs", shared_blobs()};
    size_t k = 2;
    for (size_t i = 0; extra && extra[i] && k < 15; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    svc_start_replicas(d, n, pg->url, args, env);
}

static void start_replicas(struct svc_daemon *d, size_t n, const struct pg_server *pg, const char *const *extra)
{
    start_replicas_env(d, n, pg, extra, NULL);
}

/* One replica named name (svc_start_replica: data directory and log of its
 * own) on the server pg and shared_blobs(), with the environment env (may
 * be NULL). */
static void start_replica(struct svc_daemon *d, const char *name, const struct pg_server *pg,
                          const char *const *env)
{
    const char *const args[] = {"--store", pg->url, "--blobs", shared_blobs(), NULL};
    svc_start_replica(d, name, args, env);
}

/* Uploaded through the first replica, built through the second, replayed
 * through the third, then through each, the same as `stepcast replay
 * --json` of the file: the replicas that did not build it load it from
 * its blob on first use. */
static void upload_build_replay(size_t n)
{
    struct pg_server pg;
    struct svc_daemon d[3];
    char path[256];
    char file[4096];
    snprintf(file, sizeof file, "%s",
             th_shared_path("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"));
    pg_server_start(&pg);
    start_replicas(d, n, &pg, NULL);
    svc_put_trace_file(&d[0], "hta", 0, file);
    char *id = svc_request_model(&d[1], "hta", NULL);
    CHECK_STREQ(svc_wait_model(&d[n - 1], id, 120), "ready");
    snprintf(path, sizeof path, "/v1/models/%s/replay", id);
    svc_check_same_json(svc_admin_json(&d[n - 1], path), svc_cli_replay(file), "replay through another replica");
    for (size_t i = 0; i + 1 < n; i++) /* and through every other one */
        svc_check_same_json(svc_admin_json(&d[i], path), svc_cli_replay(file), "replay through each replica");
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
    CHECK_EQ_INT(svc_log_lines(d, n, id, "event=start"), 1);
    CHECK_EQ_INT(svc_log_lines(d, n, id, "event=ready"), 1);
    /* the replicas that did not build it loaded it from its blob, never
     * from its traces */
    CHECK_EQ_INT(svc_log_lines(d, n, id, "event=reloaded from=blob"), (int)n - 1);
    CHECK_EQ_INT(svc_log_lines(d, n, id, "event=reloaded from=traces"), 0);
    free(id);
}

TEST(svc_replicas_two_upload_build_replay)
{
    upload_build_replay(2);
}

TEST(svc_replicas_three_upload_build_replay)
{
    upload_build_replay(3);
}

/* A replica killed (SIGKILL, STEPCAST_FAILPOINT=build.after_load) in the
 * middle of a build it had taken: its lease runs out and another replica
 * takes the build and finishes it within 30 s. */
TEST(svc_replicas_killed_mid_build_is_finished_by_another)
{
    struct pg_server pg;
    struct svc_daemon a, b;
    struct svc_resp r;
    char path[256];
    size_t n;
    const char *const env[] = {"STEPCAST_FAILPOINT=build.after_load", NULL};
    pg_server_start(&pg);
    start_replica(&a, "replica-a", &pg, env);
    char *t = svc_small_trace(0, 40, 5, &n);
    struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&a, "PUT", "/v1/jobs/j/ranks/0/trace", &o, NULL), 201);
    free(t);
    /* the build may reach the failpoint before the 202 is sent: the model
     * is known from the catalog then */
    svc_admin(&a, "POST", "/v1/jobs/j/models", NULL, NULL);
    int status = 0;
    REQUIRE(waitpid(a.pid, &status, 0) == a.pid); /* killed at the failpoint */
    double died = th_now_s();
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    a.pid = 0;

    start_replica(&b, "replica-b", &pg, NULL);
    CHECK_EQ_INT(svc_admin(&b, "GET", "/v1/models?job=j", NULL, &r), 200);
    json_t *doc = json_loads(r.body ? r.body : "", 0, NULL), *models = json_object_get(doc, "models");
    REQUIRE(json_array_size(models) == 1);
    char *id = strdup(json_string_value(json_object_get(json_array_get(models, 0), "id")));
    json_decref(doc);
    svc_resp_release(&r);
    REQUIRE(id);
    /* the dead replica's lease still holds: b reports the build as taken */
    snprintf(path, sizeof path, "/v1/models/%s", id);
    CHECK_EQ_INT(svc_admin(&b, "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "status"), "building");
    svc_resp_release(&r);
    CHECK_STREQ(svc_wait_model(&b, id, 60), "ready");
    double took = th_now_s() - died;
    CHECK(took <= 30);
    CHECK(took >= 1); /* not before the lease ran out */
    fprintf(stderr, "    finished by another replica %.1f s after the first died (lease %d s)\n", took,
            BQ_LEASE_S);
    CHECK_EQ_INT(svc_stop(&b), 0);
    /* each replica's own log: A took the build and died in it, B built it */
    CHECK_EQ_INT(svc_log_lines(&a, 1, id, "event=start"), 1);
    CHECK_EQ_INT(svc_log_lines(&a, 1, id, "event=ready"), 0);
    CHECK_EQ_INT(svc_log_lines(&b, 1, id, "event=ready"), 1);
    free(id);
}

/* A build taken by replica A (held at its first rank built,
 * STEPCAST_FAILPOINT=build.progress, so it runs on any machine), its model
 * deleted through replica B: A finds its lease gone at its next look
 * (every BQ_POLL_S, between renewals every BQ_RENEW_S) and stops the build,
 * publishing nothing. */
TEST(svc_replicas_delete_through_another_stops_the_build)
{
    struct pg_server pg;
    struct svc_daemon a, b;
    struct svc_resp r;
    char path[256];
    size_t n;
    const char *const hold[] = {"STEPCAST_FAILPOINT=build.progress", NULL};
    pg_server_start(&pg);
    start_replica(&a, "replica-a", &pg, hold);
    for (int rank = 0; rank < 2; rank++) {
        char *t = svc_small_trace(rank, 200, 60 + rank, &n), p[64];
        struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
        snprintf(p, sizeof p, "/v1/jobs/j/ranks/%d/trace", rank);
        CHECK_EQ_INT(svc_call(&a, "PUT", p, &o, NULL), 201);
        free(t);
    }
    char *id = svc_request_model(&a, "j", NULL);
    snprintf(path, sizeof path, "/v1/models/%s", id);
    double progress = 0;
    for (int i = 0; i < 2000 && progress <= 0; i++) { /* A builds it, held */
        CHECK_EQ_INT(svc_admin(&a, "GET", path, NULL, &r), 200);
        json_t *doc = json_loads(r.body, 0, NULL);
        progress = json_number_value(json_object_get(doc, "progress"));
        json_decref(doc);
        svc_resp_release(&r);
        usleep(10000);
    }
    REQUIRE(progress > 0);

    start_replica(&b, "replica-b", &pg, NULL);
    CHECK_EQ_INT(svc_admin(&b, "DELETE", path, NULL, NULL), 200);
    double took = svc_wait_builds_running(&a, 0, 30);
    fprintf(stderr, "    deleted through another replica: the build stopped %.2f s later (renewals every %d s)\n",
            took, BQ_RENEW_S);
    CHECK(took >= 0 && took < BQ_RENEW_S + 2);
    CHECK_EQ_INT(svc_admin(&a, "GET", path, NULL, NULL), 404);
    CHECK_EQ_INT(svc_admin(&b, "GET", path, NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&a), 0);
    CHECK_EQ_INT(svc_stop(&b), 0);
    /* started once, by A (each replica logs to its own file), and stopped
     * there; B, which deleted it, never took it */
    CHECK_EQ_INT(svc_log_lines(&a, 1, id, "event=start"), 1);
    CHECK_EQ_INT(svc_log_lines(&a, 1, id, "event=lease_gone"), 1);
    CHECK_EQ_INT(svc_log_lines(&a, 1, id, "event=cancelled"), 1);
    CHECK_EQ_INT(svc_log_lines(&a, 1, id, "event=ready"), 0);
    CHECK_EQ_INT(svc_log_lines(&b, 1, id, "event=start"), 0);
    free(id);
}

/* Two replicas asked, through each of them, to build models of one job:
 * each model is taken by one replica and built once. */
TEST(svc_replicas_build_each_model_once)
{
    struct pg_server pg;
    struct svc_daemon d[2];
    char *ids[8];
    size_t n;
    pg_server_start(&pg);
    start_replicas(d, 2, &pg, (const char *const[]){"--build-workers", "2", NULL});
    for (int rank = 0; rank < 2; rank++) {
        char *t = svc_small_trace(rank, 300, 40 + rank, &n), path[64];
        struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
        snprintf(path, sizeof path, "/v1/jobs/j/ranks/%d/trace", rank);
        CHECK_EQ_INT(svc_call(&d[rank], "PUT", path, &o, NULL), 201);
        free(t);
    }
    for (int i = 0; i < 8; i++)
        ids[i] = svc_request_model(&d[i % 2], "j", NULL);
    for (int i = 0; i < 8; i++)
        CHECK_STREQ(svc_wait_model(&d[(i + 1) % 2], ids[i], 120), "ready");
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
    int on[2] = {0, 0};
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(svc_log_lines(d, 2, ids[i], "event=start"), 1);
        CHECK_EQ_INT(svc_log_lines(d, 2, ids[i], "event=ready"), 1);
        for (int k = 0; k < 2; k++)
            on[k] += svc_log_lines(&d[k], 1, ids[i], "event=start");
        free(ids[i]);
    }
    CHECK_EQ_INT(on[0] + on[1], 8);
}

/* An upload through one replica, run on its own thread. */
struct upload {
    const struct svc_daemon *d;
    const char *path;
    const char *body;
    size_t n;
    long status;
};

static void *upload_run(void *arg)
{
    struct upload *u = arg;
    struct svc_opts o = {SVC_ADMIN, u->body, u->n, NULL, NULL};
    u->status = svc_call(u->d, "PUT", u->path, &o, NULL);
    return NULL;
}

/* The blob race across replicas: job x holds a trace (through replica 0);
 * the same bytes are uploaded to job y through replica 1 while replica 0
 * deletes x. The failpoint store.placed holds replica 1's transaction 1 s
 * after it found the blob there and before its rows, and the delete is
 * sent once replica 1 logs that hold: without a lock on the digest shared
 * by the replicas, replica 0 frees the blob (no committed row names it)
 * and unlinks the file that y's acknowledged trace names. y must still
 * build and replay as x did. */
TEST(svc_replicas_delete_keeps_a_blob_another_replica_commits)
{
    static const char *const hold[] = {"STEPCAST_FAILPOINT=store.placed", NULL};
    struct pg_server pg;
    struct svc_daemon d[2];
    struct svc_resp r;
    char path[256], blob[4400];
    size_t n;
    pg_server_start(&pg);
    start_replicas_env(d, 2, &pg, NULL, hold);
    char *t = svc_small_trace(0, 60, 7, &n);
    struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d[0], "PUT", "/v1/jobs/x/ranks/0/trace", &o, &r), 201);
    snprintf(blob, sizeof blob, "%s/%.2s/%s", shared_blobs(), svc_json_str(r.body, "sha256"),
             svc_json_str(r.body, "sha256"));
    svc_resp_release(&r);
    char *x = svc_request_model(&d[0], "x", NULL);
    REQUIRE(strcmp(svc_wait_model(&d[0], x, 120), "ready") == 0);
    snprintf(path, sizeof path, "/v1/models/%s/replay", x);
    json_t *want = svc_admin_json(&d[0], path);
    REQUIRE(want);

    struct upload u = {&d[1], "/v1/jobs/y/ranks/0/trace", t, n, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, upload_run, &u) == 0);
    CHECK(svc_wait_hold(&d[1], "store.placed", 60));
    CHECK_EQ_INT(svc_admin(&d[0], "DELETE", "/v1/jobs/x", NULL, NULL), 200);
    pthread_join(th, NULL);
    CHECK_EQ_INT(u.status, 201);
    CHECK(access(blob, F_OK) == 0);

    char *y = svc_request_model(&d[1], "y", NULL);
    CHECK_STREQ(svc_wait_model(&d[0], y, 120), "ready");
    snprintf(path, sizeof path, "/v1/models/%s/replay", y);
    /* the same trace: the same replay, whichever job holds it */
    svc_check_same_json(svc_admin_json(&d[0], path), want, "replay of the job whose blob was raced");
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
    free(t);
    free(x);
    free(y);
}
