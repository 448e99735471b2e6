/* tests/integration/test_svc_replicas_load.c: replicas on one real
 * PostgreSQL under load (tests/pg_server.h).
 *
 * 50 clients spread over three replicas for STEPCAST_LOAD_SECONDS (20 s
 * when unset; `make check` sets the 60 for its plain phase, while
 * its ASan+UBSan phase keeps 20 s, each request there costing several
 * times more) mix uploads, builds, job
 * reads, lists, estimates, plans and deletes: no answer is 5xx, and after
 * every replica restarted each acknowledged job is there (and each deleted
 * one is not). The replicas share one blob directory (--blobs), so every
 * request, uploads and builds included, goes to any replica; --check runs
 * on replica 0's data directory and the shared blobs.
 *
 * Then PostgreSQL is stopped under load with two replicas: what needs the
 * catalog is 503 while it is down, and the replicas recover by themselves. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/pg_server.h"
#include "common/banned.h"

#define CLIENTS 50
#define MAX_JOBS 2048

static const char spec_one_node[] = "{\"model\":{\"layers\":8,\"hidden\":1024,\"heads\":16,\"seq\":1024},"
                                    "\"parallel\":{\"tp\":2,\"dp\":4,\"micro_batch\":2,\"global_batch\":32},"
                                    "\"cluster\":{\"gpu\":\"h100-sxm\"}}";
static const char small_plan[] = "{\"spec\":{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                                 "\"parallel\":{\"global_batch\":64,\"micro_batch\":1},\"cluster\":{\"gpu\":"
                                 "\"h100-sxm\"},\"options\":{\"zero_stage\":1}},\"gpus\":16,\"top\":3}";

static double load_seconds(void)
{
    const char *v = getenv("STEPCAST_LOAD_SECONDS");
    double s = v && *v ? atof(v) : 20;
    return s > 0 ? s : 20;
}

struct client {
    int i;
    const struct svc_daemon *d; /* the three replicas */
    double until;
    long requests, server_errors;
    char first_error[200];
    char live[MAX_JOBS][32]; /* acknowledged and not deleted */
    int n_live, first_live;
    char gone[MAX_JOBS][32]; /* acknowledged, then deleted */
    int n_gone;
};

/* One request; a 5xx is counted and the first kept. */
static long call(struct client *c, int replica, const char *method, const char *path, const void *body, size_t n)
{
    struct svc_opts o = {SVC_ADMIN, body, n, NULL, NULL};
    struct svc_resp r;
    long st = svc_call(&c->d[replica], method, path, &o, &r);
    c->requests++;
    if (st >= 500 || st == 0) {
        if (!c->server_errors++)
            snprintf(c->first_error, sizeof c->first_error, "%s %s on replica %d: %ld %.120s", method, path, replica,
                     st, r.body ? r.body : "");
    }
    svc_resp_release(&r);
    return st;
}

static void *client_run(void *arg)
{
    struct client *c = arg;
    char path[128];
    for (int k = 0; th_now_s() < c->until && c->n_live < MAX_JOBS && c->n_gone < MAX_JOBS; k++) {
        int any = (c->i + k) % 3;
        char job[32];
        size_t n;
        snprintf(job, sizeof job, "c%02d-%d", c->i, k);
        char *trace = svc_small_trace(0, 2 + k % 3, (long)c->i * 1000000 + k, &n);
        snprintf(path, sizeof path, "/v1/jobs/%s/ranks/0/trace", job);
        long st = call(c, any, "PUT", path, trace, n);
        free(trace);
        if (st == 201)
            snprintf(c->live[c->n_live++], 32, "%s", job);
        snprintf(path, sizeof path, "/v1/jobs/%s", job);
        long got = call(c, any, "GET", path, NULL, 0);
        if (st == 201 && got != 200 && got < 500 && !c->server_errors++)
            snprintf(c->first_error, sizeof c->first_error, "acknowledged %s: GET on replica %d is %ld", job, any, got);
        call(c, (any + 1) % 3, "POST", "/v1/estimate", spec_one_node, strlen(spec_one_node));
        call(c, (any + 2) % 3, "GET", "/v1/jobs?limit=5", NULL, 0);
        if (k % 4 == 0 && st == 201) {
            snprintf(path, sizeof path, "/v1/jobs/%s/models", job);
            call(c, (any + 2) % 3, "POST", path, NULL, 0);
        }
        if (k % 5 == 1)
            call(c, any, "POST", "/v1/plans", small_plan, strlen(small_plan));
        if (k % 3 == 2 && c->first_live < c->n_live) {
            const char *old = c->live[c->first_live];
            snprintf(path, sizeof path, "/v1/jobs/%s", old);
            if (call(c, (any + 1) % 3, "DELETE", path, NULL, 0) == 200) {
                memcpy(c->gone[c->n_gone++], old, sizeof c->gone[0]);
                c->first_live++;
            }
        }
    }
    return NULL;
}

/* Each job of the clients answers as it must through replica j % 3. */
static void check_jobs(const struct svc_daemon *d, struct client *cl)
{
    char path[96];
    long live = 0, gone = 0;
    for (int i = 0; i < CLIENTS; i++) {
        for (int j = cl[i].first_live; j < cl[i].n_live; j++, live++) {
            snprintf(path, sizeof path, "/v1/jobs/%s", cl[i].live[j]);
            CHECK_EQ_INT(svc_admin(&d[j % 3], "GET", path, NULL, NULL), 200);
        }
        for (int j = 0; j < cl[i].n_gone; j++, gone++) {
            snprintf(path, sizeof path, "/v1/jobs/%s", cl[i].gone[j]);
            CHECK_EQ_INT(svc_admin(&d[j % 3], "GET", path, NULL, NULL), 404);
        }
    }
    printf("    %ld jobs acknowledged and kept, %ld deleted: all as acknowledged\n", live, gone);
}

TEST_ALONE(svc_replicas_fifty_clients_over_three_replicas)
{
    static struct client cl[CLIENTS];
    struct svc_daemon d[3];
    char dirs[3][4200], blobs[4200], *report = NULL;
    const char *data[3];
    pthread_t t[CLIENTS];
    double secs = load_seconds();
    long requests = 0, errors = 0;
    pg_server_use();
    for (int i = 0; i < 3; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%s/replica%d", th_tmpdir(), i);
        data[i] = dirs[i];
    }
    snprintf(blobs, sizeof blobs, "%s/shared-blobs", th_tmpdir());
    const char *const shared[] = {"--blobs", blobs, NULL};
    svc_start_many(d, 3, data, shared, NULL);
    double until = th_now_s() + secs;
    for (int i = 0; i < CLIENTS; i++) {
        memset(&cl[i], 0, sizeof cl[i]);
        cl[i] = (struct client){.i = i, .d = d, .until = until};
        REQUIRE(pthread_create(&t[i], NULL, client_run, &cl[i]) == 0);
    }
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(t[i], NULL);
        requests += cl[i].requests;
        errors += cl[i].server_errors;
        if (cl[i].server_errors)
            sc_check_fail(__FILE__, __LINE__, "client %d: %ld failures, the first: %s", i, cl[i].server_errors,
                          cl[i].first_error);
    }
    printf("    %d clients, 3 replicas, %.0f s: %ld requests (%.0f/s), %ld 5xx\n", CLIENTS, secs, requests,
           (double)requests / secs, errors);
    CHECK_EQ_INT(errors, 0);
    CHECK(requests > CLIENTS * 5);

    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
    svc_start_many(d, 3, data, shared, NULL);
    check_jobs(d, cl);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
    setenv("STEPCAST_BLOBS", blobs, 1); /* --check reads the shared blobs */
    CHECK_EQ_INT(svc_run_check(dirs[0], &report), 0);
    unsetenv("STEPCAST_BLOBS");
    CHECK_CONTAINS(report, "consistent");
    free(report);
}

struct writer {
    const struct svc_daemon *d;
    int i;
    atomic_int *stop;
    long ok, unavailable, other;
    char other_first[160];
    char acked[4096][24];
    int n_acked;
};

static void *writer_run(void *arg)
{
    struct writer *w = arg;
    char path[64];
    for (int k = 0; !atomic_load(w->stop) && w->n_acked < 4096; k++) {
        struct svc_resp r;
        snprintf(path, sizeof path, "/v1/jobs/w%d-%d", w->i, k);
        long st = k % 2 ? svc_admin(w->d, "GET", "/v1/jobs?limit=3", NULL, &r)
                        : svc_admin(w->d, "PUT", path, "{}", &r);
        if (st == 201)
            snprintf(w->acked[w->n_acked++], 24, "%s", path + 9);
        if (st == 200 || st == 201)
            w->ok++;
        else if (st == 503)
            w->unavailable++;
        else if (!w->other++)
            snprintf(w->other_first, sizeof w->other_first, "%s: %ld %.100s", path, st, r.body ? r.body : "");
        svc_resp_release(&r);
        usleep(5000);
    }
    return NULL;
}

/* PostgreSQL stopped for a second under load on two replicas: requests
 * are 200 or 503 (never another failure), some are 503 while it is down,
 * and once it is back both replicas answer again without a restart;
 * every job acknowledged is there. */
TEST_ALONE(svc_replicas_postgresql_restarted_under_load)
{
    struct pg_server pg;
    struct svc_daemon d[2];
    static struct writer w[8];
    pthread_t t[8];
    atomic_int stop = 0;
    char dirs[2][4200];
    const char *data[2];
    pg_server_start(&pg);
    const char *const args[] = {"--store", pg.url, NULL};
    for (int i = 0; i < 2; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%s/replica%d", th_tmpdir(), i);
        data[i] = dirs[i];
    }
    svc_start_many(d, 2, data, args, NULL);
    for (int i = 0; i < 8; i++) {
        w[i] = (struct writer){.d = &d[i % 2], .i = i, .stop = &stop};
        REQUIRE(pthread_create(&t[i], NULL, writer_run, &w[i]) == 0);
    }
    usleep(500000);
    pg_server_ctl(&pg, "stop");
    for (int i = 0; i < 2; i++) {
        struct svc_resp r;
        CHECK_EQ_INT(svc_admin(&d[i], "GET", "/healthz", NULL, &r), 503);
        CHECK_CONTAINS(r.body, "\"reachable\":false");
        svc_resp_release(&r);
    }
    usleep(1000000);
    pg_server_ctl(&pg, "start");
    double t0 = th_now_s();
    for (int i = 0; i < 2; i++)
        while (svc_admin(&d[i], "GET", "/healthz", NULL, NULL) != 200 && th_now_s() - t0 < 10)
            usleep(50000);
    long before[8];
    for (int i = 0; i < 8; i++)
        before[i] = w[i].ok;
    usleep(1000000); /* load after the restart */
    atomic_store(&stop, 1);
    long ok = 0, unavailable = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].ok > before[i]); /* it recovered */
        ok += w[i].ok;
        unavailable += w[i].unavailable;
        if (w[i].other)
            sc_check_fail(__FILE__, __LINE__, "writer %d: %ld answers neither 2xx nor 503, the first: %s", i,
                          w[i].other, w[i].other_first);
    }
    printf("    %ld answered, %ld 503 while PostgreSQL was down\n", ok, unavailable);
    CHECK(unavailable > 0);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < w[i].n_acked; j++) {
            char path[64];
            snprintf(path, sizeof path, "/v1/jobs/%s", w[i].acked[j]);
            CHECK_EQ_INT(svc_admin(&d[j % 2], "GET", path, NULL, NULL), 200);
        }
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
}
