/* tests/integration/test_svc_durable.c: acknowledged work is never lost,
 * and a shutdown honours --drain-timeout, against the real daemon.
 *
 * A background plan is in the catalog before its 202: killed with SIGKILL
 * mid-run, the restarted daemon shows it `interrupted` with the progress
 * it had saved; POST /v1/plans/{id}/resume, or the same request again,
 * runs it again, to the same document a fresh plan gives. On SIGTERM, work still running when the
 * drain timeout expires is cancelled: the heavy request is answered 503,
 * the background plan is stored `interrupted`, and the daemon exits
 * within seconds of the timeout instead of when the work would end. The
 * request pool's queue, when full, refuses with 429 and Retry-After. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* thousands of combinations: a background plan of about 10 ms */
static const char larger[] = "{\"spec\":{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                             "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"}},\"gpus\":16,"
                             "\"top\":5,\"objective\":\"cost\"}";
/* GPT-3 on 1,024 GPUs, its best 1,000 of some 10,000 combinations: a
 * background plan of tens of seconds (test_svc_plan.c) */
static const char slow[] = "{\"spec\":{\"model\":{\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq\":2048,"
                           "\"vocab\":51200},\"parallel\":{\"global_batch\":16384},\"cluster\":{\"gpu\":"
                           "\"a100-sxm4-80gb\"}},\"gpus\":1024,\"top\":1000}";

/* POST a background plan: its id (the test fails unless it is 202). */
static void post_plan(const struct svc_daemon *d, const char *body, char id[64], long long *space)
{
    struct svc_resp r;
    long st = svc_admin(d, "POST", "/v1/plans", body, &r);
    if (st != 202)
        sc_check_fail(__FILE__, __LINE__, "POST /v1/plans: want 202, got %ld %s", st, r.body);
    snprintf(id, 64, "%s", svc_json_str(r.body, "id"));
    if (space)
        *space = svc_json_int(r.body, "space");
    svc_resp_release(&r);
}

static json_t *get_plan(const struct svc_daemon *d, const char *id)
{
    char path[128];
    struct svc_resp r;
    snprintf(path, sizeof path, "/v1/plans/%s", id);
    CHECK_EQ_INT(svc_admin(d, "GET", path, NULL, &r), 200);
    json_t *doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
    svc_resp_release(&r);
    return doc;
}

static long long progress_of(const json_t *doc, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(doc, "progress"), key));
}

/* Poll until the running plan has evaluated some combinations, then long
 * enough for that progress to be saved (PLANS_SAVE_EVERY_S). */
static void wait_some_progress(const struct svc_daemon *d, const char *id)
{
    for (int i = 0; i < 600; i++) {
        json_t *doc = get_plan(d, id);
        long long done = progress_of(doc, "done");
        int running = doc && !strcmp(json_string_value(json_object_get(doc, "state")), "running");
        json_decref(doc);
        REQUIRE(running);
        if (done > 0)
            break;
        usleep(50000);
    }
    usleep(1500000);
}

/* Plan id after a restart: interrupted, with the progress it had saved. */
static void expect_interrupted(const struct svc_daemon *d, const char *id, long long space, int with_progress)
{
    json_t *doc = get_plan(d, id);
    REQUIRE(doc);
    CHECK_STREQ(json_string_value(json_object_get(doc, "state")), "interrupted");
    CHECK_STREQ(json_string_value(json_object_get(doc, "id")), id);
    CHECK_EQ_INT(progress_of(doc, "total"), space);
    CHECK(progress_of(doc, "done") >= (with_progress ? 1 : 0) && progress_of(doc, "done") <= space);
    CHECK(!json_object_get(doc, "top"));
    json_decref(doc);
}

TEST(svc_durable_plan_killed_reads_interrupted_and_resumes)
{
    struct svc_daemon d;
    struct svc_resp r;
    char id[64], path[128];
    long long space;
    svc_start(&d, NULL, NULL, NULL);

    /* SIGKILL right after the 202: the plan is there after the restart */
    post_plan(&d, slow, id, &space);
    svc_kill9(&d);
    svc_start(&d, d.data, NULL, NULL);
    expect_interrupted(&d, id, space, 0);

    /* the same request again runs that plan again (its id), and SIGKILL
     * mid-run leaves it interrupted with the progress saved */
    char again[64];
    post_plan(&d, slow, again, &space);
    CHECK_STREQ(again, id);
    wait_some_progress(&d, id);
    svc_kill9(&d);
    svc_start(&d, d.data, NULL, NULL);
    expect_interrupted(&d, id, space, 1);
    snprintf(path, sizeof path, "/v1/plans/%s", id);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200); /* forgotten */

    /* a plan held at its first progress report (saved), killed, resumed
     * after the restart: it completes, to the document a fresh plan of the
     * same request gives */
    static const char *const hold[] = {"STEPCAST_FAILPOINT=plan.progress", NULL};
    svc_kill9(&d);
    svc_start(&d, d.data, NULL, hold);
    post_plan(&d, larger, id, &space);
    usleep(500000);
    svc_kill9(&d);
    svc_start(&d, d.data, NULL, NULL);
    expect_interrupted(&d, id, space, 0);
    snprintf(path, sizeof path, "/v1/plans/%s/resume", id);
    REQUIRE(svc_admin(&d, "POST", path, NULL, &r) == 202);
    CHECK_STREQ(svc_json_str(r.body, "id"), id);
    CHECK_STREQ(svc_json_str(r.body, "state"), "running");
    CHECK_CONTAINS(r.headers, "/v1/plans/");
    svc_resp_release(&r);
    json_t *resumed = svc_wait_plan(&d, id);
    REQUIRE(resumed);
    CHECK_STREQ(json_string_value(json_object_get(resumed, "state")), "done");
    CHECK(!json_object_get(resumed, "progress"));
    char fresh_id[64];
    post_plan(&d, larger, fresh_id, NULL);
    json_t *fresh = svc_wait_plan(&d, fresh_id);
    REQUIRE(fresh);
    json_object_del(resumed, "id");
    json_object_del(fresh, "id");
    CHECK(json_equal(resumed, fresh));
    CHECK_EQ_INT(json_array_size(json_object_get(resumed, "top")), 5);
    json_decref(resumed);
    json_decref(fresh);

    /* only an interrupted plan resumes */
    CHECK_EQ_INT(svc_admin(&d, "POST", path, NULL, &r), 409);
    CHECK_CONTAINS(r.body, "is done");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/plans/p-none/resume", NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

struct call {
    const struct svc_daemon *d;
    const char *path, *body;
    long status;
    int retry_after;
    char error[64];
};

static void *post(void *arg)
{
    struct call *c = arg;
    struct svc_resp r;
    c->status = svc_admin(c->d, "POST", c->path, c->body, &r);
    c->retry_after = r.headers && strstr(r.headers, "Retry-After:") != NULL;
    snprintf(c->error, sizeof c->error, "%s", svc_error_code(&r));
    svc_resp_release(&r);
    return NULL;
}

/* A kernel-detail estimate of 30 layers at global batch 8192: seconds of
 * CPU (about 8 s on the 2-core machine that measured it) and about 1 GB. */
#define LONG_ESTIMATE                                                                                           \
    "{\"model\":{\"layers\":30,\"hidden\":3072,\"heads\":32,\"seq\":2048},\"parallel\":{\"dp\":1,\"global_batch\":" \
    "8192},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}"

TEST_ALONE(svc_durable_drain_timeout_cancels_what_still_runs)
{
    static const char *const args[] = {"--drain-timeout", "1", NULL};
    struct svc_daemon d;
    char id[64];
    long long space;
    pthread_t t;
    svc_start(&d, NULL, args, NULL);
    post_plan(&d, slow, id, &space);
    wait_some_progress(&d, id);
    struct call est = {&d, "/v1/estimate?detail=kernel", LONG_ESTIMATE, 0, 0, ""};
    pthread_create(&t, NULL, post, &est);
    usleep(300000); /* on the pool */
    double t0 = th_now_s();
    int st = svc_stop(&d);
    double dt = th_now_s() - t0;
    pthread_join(t, NULL);
    fprintf(stderr, "  SIGTERM with --drain-timeout 1: exit %d after %.2f s; the estimate %ld\n", st, dt, est.status);
    CHECK_EQ_INT(st, 0);
    CHECK(dt < 1 + 4); /* the timeout, then a prompt cancel: not the work's seconds */
    CHECK_EQ_INT(est.status, 503);
    CHECK_STREQ(est.error, "unavailable");
    char *log = th_read_file(d.log, NULL);
    CHECK_CONTAINS(log, "event=drain_timeout requests_left=1 computing=1"); /* it was computing */
    free(log);
    svc_start(&d, d.data, NULL, NULL);
    expect_interrupted(&d, id, space, 1);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* One thread computing for requests and one waiting: of four estimates
 * at once, the others are told to come back (429, Retry-After), and the
 * two taken are answered. */
TEST_ALONE(svc_durable_request_pool_full_is_429)
{
    enum { N = 4 };
    static const char *const args[] = {"--heavy-requests", "1", "--heavy-queue", "1", NULL};
    struct svc_daemon d;
    struct call c[N];
    pthread_t t[N];
    char body[N][512];
    int ok = 0, busy = 0;
    svc_start(&d, NULL, args, NULL);
    for (int i = 0; i < N; i++) {
        snprintf(body[i], sizeof body[i],
                 "{\"model\":{\"layers\":30,\"hidden\":3072,\"heads\":32,\"seq\":2048},\"parallel\":{\"dp\":1,"
                 "\"global_batch\":%d},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}",
                 2048 + 8 * i);
        c[i] = (struct call){&d, "/v1/estimate?detail=kernel", body[i], 0, 0, ""};
        pthread_create(&t[i], NULL, post, &c[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        if (c[i].status == 200)
            ok++;
        else if (c[i].status == 429 && c[i].retry_after && !strcmp(c[i].error, "busy"))
            busy++;
        else
            sc_check_fail(__FILE__, __LINE__, "estimate %d: %ld %s", i, c[i].status, c[i].error);
    }
    fprintf(stderr, "  %d answered, %d told to retry\n", ok, busy);
    CHECK(ok >= 2);
    CHECK(busy >= 1);
    CHECK_EQ_INT(ok + busy, N);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
