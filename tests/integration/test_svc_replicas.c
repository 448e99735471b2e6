/* tests/integration/test_svc_replicas.c: several stepcastd replicas on one
 * real PostgreSQL (tests/pg_server.h): what one daemon guarantees holds
 * across replicas (the last admin token, a token's room, revocations,
 * plans run once). The failpoint store.counted holds each counting
 * transaction 0.3 s, so that without a lock shared by the replicas the
 * races below would let both writes through. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/pg_server.h"
#include "common/banned.h"

static void replicas_stop(struct svc_daemon *d, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
}

/* A new token of scope through d: its secret into secret, its id into id. */
static void new_token(const struct svc_daemon *d, const char *as, const char *scope, char secret[128], char id[64])
{
    char body[96];
    struct svc_resp r;
    snprintf(body, sizeof body, "{\"scope\":\"%s\",\"name\":\"replica test\"}", scope);
    CHECK_EQ_INT(svc_call_as(d, as, "POST", "/v1/tokens", body, &r), 201);
    snprintf(secret, 128, "%s", svc_json_str(r.body, "token"));
    snprintf(id, 64, "%s", svc_json_str(r.body, "id"));
    svc_resp_release(&r);
}

/* One request of a race, run on its own thread. */
struct racer {
    const struct svc_daemon *d;
    const char *token, *method;
    char path[128];
    const char *body;
    long status;
};

static void *race_one(void *arg)
{
    struct racer *c = arg;
    c->status = svc_call_as(c->d, c->token, c->method, c->path, c->body, NULL);
    return NULL;
}

/* Run both requests at once. */
static void race(struct racer *a, struct racer *b)
{
    pthread_t t[2];
    REQUIRE(pthread_create(&t[0], NULL, race_one, a) == 0);
    REQUIRE(pthread_create(&t[1], NULL, race_one, b) == 0);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
}

/* The two last admin tokens revoked at once through two replicas, each
 * with the other token: exactly one revocation succeeds, and one admin
 * token stays active. Three rounds. */
TEST(svc_replicas_never_revoke_the_last_admin_token)
{
    static const char *const hold[] = {"STEPCAST_FAILPOINT=store.counted", NULL};
    struct pg_server pg;
    struct svc_daemon d[2];
    struct svc_resp r;
    char keep[128] = SVC_ADMIN, keep_id[64] = "", other[128], other_id[64];
    pg_server_start(&pg);
    svc_start_replicas(d, 2, pg.url, NULL, hold);
    CHECK_EQ_INT(svc_admin(&d[0], "GET", "/v1/tokens", NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    REQUIRE(doc);
    snprintf(keep_id, sizeof keep_id, "%s",
             json_string_value(json_object_get(json_array_get(json_object_get(doc, "tokens"), 0), "id")));
    json_decref(doc);
    for (int round = 0; round < 3; round++) {
        new_token(&d[0], keep, "admin", other, other_id);
        struct racer a = {&d[0], other, "DELETE", "", NULL, 0}, b = {&d[1], keep, "DELETE", "", NULL, 0};
        snprintf(a.path, sizeof a.path, "/v1/tokens/%s", keep_id);
        snprintf(b.path, sizeof b.path, "/v1/tokens/%s", other_id);
        race(&a, &b);
        /* the loser is refused as the last admin token (409), or finds the
         * token it calls with revoked already (401) */
        CHECK((a.status == 200) != (b.status == 200));
        CHECK(a.status == 200 || a.status == 409 || a.status == 401);
        CHECK(b.status == 200 || b.status == 409 || b.status == 401);
        if (a.status == 200) { /* keep was revoked: other is the one left */
            snprintf(keep, sizeof keep, "%s", other);
            snprintf(keep_id, sizeof keep_id, "%s", other_id);
        }
        for (int i = 0; i < 2; i++)
            CHECK_EQ_INT(svc_call_as(&d[i], keep, "GET", "/v1/tokens", NULL, NULL), 200);
    }
    replicas_stop(d, 2);
}

/* --max-stored-per-token 3 with two jobs stored: two new jobs PUT at once
 * through two replicas: one is stored (201), the other is over the limit
 * (413). Three rounds, each deleting the job stored. */
TEST(svc_replicas_token_room_holds_across_replicas)
{
    static const char *const hold[] = {"STEPCAST_FAILPOINT=store.counted", NULL};
    static const char *const args[] = {"--max-stored-per-token", "3", NULL};
    struct pg_server pg;
    struct svc_daemon d[2];
    char w[128], w_id[64];
    pg_server_start(&pg);
    svc_start_replicas(d, 2, pg.url, args, hold);
    new_token(&d[0], SVC_ADMIN, "write", w, w_id);
    CHECK_EQ_INT(svc_call_as(&d[0], w, "PUT", "/v1/jobs/a", "{}", NULL), 201);
    CHECK_EQ_INT(svc_call_as(&d[1], w, "PUT", "/v1/jobs/b", "{}", NULL), 201);
    for (int round = 0; round < 3; round++) {
        struct racer a = {&d[0], w, "PUT", "", "{}", 0}, b = {&d[1], w, "PUT", "", "{}", 0};
        snprintf(a.path, sizeof a.path, "/v1/jobs/x%d", round);
        snprintf(b.path, sizeof b.path, "/v1/jobs/y%d", round);
        race(&a, &b);
        CHECK((a.status == 201 && b.status == 413) || (a.status == 413 && b.status == 201));
        struct svc_resp r;
        CHECK_EQ_INT(svc_admin(&d[1], "GET", "/v1/jobs", NULL, &r), 200);
        json_t *doc = json_loads(r.body, 0, NULL);
        svc_resp_release(&r);
        REQUIRE(doc);
        CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 3);
        json_decref(doc);
        CHECK_EQ_INT(svc_admin(&d[0], "DELETE", a.status == 201 ? a.path : b.path, NULL, NULL), 200);
    }
    replicas_stop(d, 2);
}

/* A token revoked through replica 1 is refused by replica 2 within 1 s
 * (no replica keeps tokens it read), and a token created through replica
 * 2 works on replica 1 as soon. */
TEST_ALONE(svc_replicas_revocation_takes_effect_everywhere)
{
    struct pg_server pg;
    struct svc_daemon d[2];
    struct svc_resp r;
    char t[128], id[64], path[96];
    pg_server_start(&pg);
    svc_start_replicas(d, 2, pg.url, NULL, NULL);
    new_token(&d[1], SVC_ADMIN, "read", t, id);
    CHECK_EQ_INT(svc_call_as(&d[0], t, "GET", "/v1/jobs", NULL, NULL), 200);
    for (int i = 0; i < 20; i++) /* replica 2 has used it, often */
        CHECK_EQ_INT(svc_call_as(&d[1], t, "GET", "/v1/jobs", NULL, NULL), 200);
    snprintf(path, sizeof path, "/v1/tokens/%s", id);
    CHECK_EQ_INT(svc_admin(&d[0], "DELETE", path, NULL, NULL), 200);
    double t0 = th_now_s(), waited;
    long st;
    while ((st = svc_call_as(&d[1], t, "GET", "/v1/jobs", NULL, &r)) == 200 && th_now_s() - t0 < 2) {
        svc_resp_release(&r);
        usleep(20000);
    }
    waited = th_now_s() - t0;
    CHECK_EQ_INT(st, 401);
    CHECK_CONTAINS(r.body, "revoked");
    svc_resp_release(&r);
    CHECK(waited < 1.0);
    replicas_stop(d, 2);
}

static const char larger[] = "{\"spec\":{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                             "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"}},"
                             "\"gpus\":16,\"top\":5}";

/* A background plan runs once: held at its first progress report on
 * replica 1, it reads `running` through replica 2; a replica starting
 * meanwhile leaves it running (it interrupts only the plans no replica
 * runs); resuming it through replica 2 is 409; once done, every replica
 * reads the one document. A plan whose replica was killed is interrupted
 * by the next replica to start, and resumes once. */
TEST(svc_replicas_plan_runs_once)
{
    static const char *const hold[] = {"STEPCAST_FAILPOINT=plan.progress", NULL};
    struct pg_server pg;
    struct svc_daemon d[3];
    struct svc_resp r;
    char id[64], path[128], resume[160];
    pg_server_start(&pg);
    svc_start_replicas(d, 2, pg.url, NULL, hold);
    REQUIRE(svc_admin(&d[0], "POST", "/v1/plans", larger, &r) == 202);
    snprintf(id, sizeof id, "%s", svc_json_str(r.body, "id"));
    svc_resp_release(&r);
    snprintf(path, sizeof path, "/v1/plans/%s", id);
    snprintf(resume, sizeof resume, "/v1/plans/%s/resume", id);
    usleep(300000);
    CHECK_EQ_INT(svc_admin(&d[1], "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "running");
    svc_resp_release(&r);

    const char *const args[] = {"--store", pg.url, NULL};
    svc_start_replica(&d[2], "replica2", args, NULL);
    CHECK_EQ_INT(svc_admin(&d[2], "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "running");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d[1], "POST", resume, NULL, &r), 409);
    svc_resp_release(&r);

    json_t *done = svc_wait_plan(&d[0], id); /* its GET lets the plan go on */
    REQUIRE(done);
    CHECK_STREQ(json_string_value(json_object_get(done, "state")), "done");
    for (int i = 1; i < 3; i++) {
        CHECK_EQ_INT(svc_admin(&d[i], "GET", path, NULL, &r), 200);
        json_t *other = json_loads(r.body, 0, NULL);
        svc_resp_release(&r);
        CHECK(other && json_equal(done, other));
        json_decref(other);
    }
    json_decref(done);
    CHECK_EQ_INT(svc_admin(&d[1], "POST", resume, NULL, &r), 409);
    CHECK_CONTAINS(r.body, "is done");
    svc_resp_release(&r);

    /* killed while it runs: the next replica to start interrupts it */
    REQUIRE(svc_admin(&d[0], "POST", "/v1/plans", "{\"spec\":{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,"
                                                   "\"seq\":2048},\"parallel\":{\"global_batch\":64},\"cluster\":"
                                                   "{\"gpu\":\"h100-sxm\"}},\"gpus\":16,\"top\":5}", &r) == 202);
    snprintf(path, sizeof path, "/v1/plans/%s", svc_json_str(r.body, "id"));
    snprintf(resume, sizeof resume, "%s/resume", path);
    svc_resp_release(&r);
    usleep(300000);
    svc_kill9(&d[0]);
    CHECK_EQ_INT(svc_stop(&d[2]), 0);
    svc_start_replica(&d[2], "replica2", args, NULL);
    CHECK_EQ_INT(svc_admin(&d[1], "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "interrupted");
    svc_resp_release(&r);
    struct racer a = {&d[1], SVC_ADMIN, "POST", "", NULL, 0}, b = {&d[2], SVC_ADMIN, "POST", "", NULL, 0};
    snprintf(a.path, sizeof a.path, "%s", resume);
    snprintf(b.path, sizeof b.path, "%s", resume);
    race(&a, &b);
    CHECK((a.status == 202 && b.status == 409) || (a.status == 409 && b.status == 202));
    json_t *again = svc_wait_plan(a.status == 202 ? &d[1] : &d[2], strrchr(path, '/') + 1);
    REQUIRE(again);
    CHECK_STREQ(json_string_value(json_object_get(again, "state")), "done");
    json_decref(again);
    CHECK_EQ_INT(svc_stop(&d[1]), 0);
    CHECK_EQ_INT(svc_stop(&d[2]), 0);
}

/* /metrics is per replica: every sample carries its replica label, the
 * --replica-name given or its data directory's own (DATA-DIR/replica,
 * the name its build leases carry), and counts its own requests
 * only. A name that would need escaping is refused at startup. */
TEST(svc_replicas_metrics_carry_the_replica_label)
{
    static const char *const unnamed[] = {"STEPCAST_REPLICA_NAME=", NULL};
    struct pg_server pg;
    struct svc_daemon d[2];
    struct svc_resp r;
    char want[512], host[256] = "";
    pg_server_start(&pg);
    const char *const east[] = {"--store", pg.url, "--replica-name", "east-1", NULL};
    const char *const plain[] = {"--store", pg.url, NULL};
    svc_start_replica(&d[0], "replica0", east, NULL);
    svc_start_replica(&d[1], "replica1", plain, unnamed);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(svc_admin(&d[0], "GET", "/v1/jobs", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d[1], "GET", "/v1/jobs", NULL, NULL), 200);

    CHECK_EQ_INT(svc_call(&d[0], "GET", "/metrics", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "stepcast_http_requests_total{replica=\"east-1\",route=\"listJobs\",status=\"200\"} 3\n");
    CHECK_CONTAINS(r.body, "stepcast_store_jobs{replica=\"east-1\"} 0\n");
    for (const char *p = r.body; *p; p = strchr(p, '\n') + 1) { /* every sample */
        if (*p != '#')
            CHECK(strncmp(strpbrk(p, "{ "), "{replica=\"east-1\"", 17) == 0);
        if (!strchr(p, '\n'))
            break;
    }
    svc_resp_release(&r);

    /* unnamed: the data directory's own name, made once */
    snprintf(want, sizeof want, "%s/replica", d[1].data);
    char *own = th_read_file(want, NULL);
    REQUIRE(own != NULL && *own);
    snprintf(host, sizeof host, "%s", own);
    free(own);
    CHECK_EQ_INT(svc_call(&d[1], "GET", "/metrics", NULL, &r), 200);
    snprintf(want, sizeof want, "stepcast_http_requests_total{replica=\"%s\",route=\"listJobs\",status=\"200\"} 1\n",
             host);
    CHECK_CONTAINS(r.body, want);
    svc_resp_release(&r);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);

    const char *const bad[] = {"--store", pg.url, "--replica-name", "a\"b", NULL};
    char *argv[8] = {(char *)th_build_path("stepcastd")}, *out = NULL, *err = NULL;
    for (int i = 0; bad[i]; i++)
        argv[i + 1] = (char *)bad[i];
    CHECK(th_run(argv, &out, &err) != 0);
    CHECK_CONTAINS(err, "replica-name");
    free(out);
    free(err);
}
