/* tests/integration/test_svc_store.c: durability of the store: restarts,
 * kill -9 at every failpoint and mid-upload, SIGTERM draining, and many
 * concurrent clients. "Consistent" is what stepcastd --check verifies:
 * integrity_check ok, every row's blob present and hashing to its name, no
 * blob or temp file that no row names; plus, here, everything acknowledged
 * still there. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <sqlite3.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/pg_server.h"
#include "tests/integration/svc_harness.h"
#include "daemon/digest.h"
#include "daemon/store.h"
#include "common/banned.h"

static long put_trace(const struct svc_daemon *d, const char *job, int rank, const char *trace,
                      size_t n, char *sha, size_t sha_n)
{
    char path[256];
    struct svc_resp r;
    struct svc_opts o = {SVC_ADMIN, trace, n, NULL, NULL};
    snprintf(path, sizeof path, "/v1/jobs/%s/ranks/%d/trace", job, rank);
    long st = svc_call(d, "PUT", path, &o, &r);
    if (sha)
        snprintf(sha, sha_n, "%s", svc_json_str(r.body, "sha256"));
    svc_resp_release(&r);
    return st;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)))
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* --check reads a store; where there is none it says so and creates nothing */
TEST(svc_check_of_no_store_creates_nothing)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/empty", th_tmpdir());
    CHECK_EQ_INT(mkdir(dir, 0755), 0);
    char *argv[] = {(char *)th_build_path("stepcastd"), "--check", "--data-dir", dir, NULL};
    char *err = NULL;
    CHECK(th_run(argv, NULL, &err) != 0);
    CHECK_CONTAINS(err, "no store");
    free(err);
    CHECK_EQ_INT(count_files(dir), 0);
}

/* Builds a stop left `building` are built again at start; those beyond
 * max-queued-builds fail with a reason instead of staying `building`. */
/* One daemon per data directory: a second start on it exits 2 naming the
 * first one's pid and touches nothing of it (its port file, its
 * service); the lock is what `make run` tests from the shell. */
TEST(svc_one_daemon_per_data_directory)
{
    struct svc_daemon d;
    char port_before[64] = "", other_port[PATH_MAX], pid[32], lock[PATH_MAX];
    svc_start(&d, NULL, NULL, NULL);
    char *text = th_read_file(d.portfile, NULL);
    REQUIRE(text != NULL);
    snprintf(port_before, sizeof port_before, "%s", text);
    free(text);
    snprintf(other_port, sizeof other_port, "%s/second.port", th_tmpdir());
    snprintf(pid, sizeof pid, "pid %d", (int)d.pid);
    char *argv[] = {(char *)th_build_path("stepcastd"), "--data-dir", d.data, "--listen", "127.0.0.1:0",
                    "--port-file", other_port, NULL};
    free(th_run_expect(argv, 2, NULL, pid));
    CHECK(access(other_port, F_OK) != 0);
    text = th_read_file(d.portfile, NULL);
    CHECK_STREQ(text ? text : "", port_before);
    free(text);
    struct svc_resp r;
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", NULL, &r), 200);
    svc_resp_release(&r);
    snprintf(lock, sizeof lock, "flock -n '%s/lock' true", d.data);
    char *held[] = {"/bin/sh", "-c", lock, NULL};
    CHECK_EQ_INT(th_run(held, NULL, NULL), 1);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(th_run(held, NULL, NULL), 0);
}

/* `make run` (daemon/run.sh) beside a daemon already serving ./var: it
 * says where that one serves and exits 0, leaving it running, its lock
 * held and its port file in place (a second make run used to delete it). */
TEST(svc_make_run_leaves_a_live_daemon_alone)
{
    struct svc_daemon d;
    char var[PATH_MAX], port_file[PATH_MAX + 8], cwd[PATH_MAX], bin[PATH_MAX], cmd[3 * PATH_MAX + 64], pid[32];
    snprintf(var, sizeof var, "%s/var", th_tmpdir());
    svc_start(&d, var, NULL, NULL);
    REQUIRE(getcwd(cwd, sizeof cwd) != NULL && realpath(th_build_path("stepcastd"), bin) != NULL);
    *strrchr(bin, '/') = '\0';
    /* the port where run.sh reads it */
    snprintf(port_file, sizeof port_file, "%s/port", var);
    char *port = th_read_file(d.portfile, NULL);
    REQUIRE(port != NULL);
    th_write_file("var/port", port, strlen(port));
    snprintf(cmd, sizeof cmd, "cd '%s' && sh '%s/daemon/run.sh' '%s'", th_tmpdir(), cwd, bin);
    snprintf(pid, sizeof pid, "(pid %d)", (int)d.pid);
    char *run[] = {"/bin/sh", "-c", cmd, NULL};
    char *out = th_run_expect(run, 0, "already serves ./var at http://127.0.0.1:", NULL);
    CHECK_CONTAINS(out, pid);
    CHECK_CONTAINS(out, d.url);
    free(out);
    char *after = th_read_file(port_file, NULL);
    CHECK_STREQ(after ? after : "", port);
    free(after);
    free(port);
    struct svc_resp r;
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", NULL, &r), 200);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_builds_left_building_at_start)
{
    static const char *const ids[] = {"m-left-a", "m-left-b", "m-left-c"};
    struct svc_daemon d;
    size_t n;
    char *t = svc_small_trace(0, 4, 1, &n), catalog[4200];
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(put_trace(&d, "job", 0, t, n, NULL, 0), 201);
    free(t);
    CHECK_EQ_INT(svc_stop(&d), 0);

    /* what a stop in the middle of three builds leaves in the catalog */
    struct store *st = NULL;
    struct sc_error err;
    snprintf(catalog, sizeof catalog, "sqlite:%s/catalog.db", d.data);
    CHECK_EQ_INT(store_open(catalog, 1, &st, &err), SC_OK);
    for (size_t i = 0; st && i < 3; i++) {
        struct api_model m = {.status = API_MODEL_BUILDING};
        snprintf(m.id, sizeof m.id, "%s", ids[i]);
        snprintf(m.job, sizeof m.job, "job");
        CHECK_EQ_INT(store_model_create(st, &m, &err), SC_OK);
    }
    store_close(st);

    /* the queue is the catalog: all three are built, one after another,
     * whatever max-queued-builds bounds new submissions to */
    static const char *const args[] = {"--build-workers", "1", "--max-queued-builds", "1", NULL};
    svc_start(&d, d.data, args, NULL);
    for (size_t i = 0; i < 3; i++)
        CHECK_STREQ(svc_wait_model(&d, ids[i], 30), "ready");
    /* with all built, one more fits the bound again */
    char *m = svc_build_model(&d, "job", NULL);
    CHECK(m != NULL);
    free(m);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* stepcastd --check loads each built model's blob and checks its graph:
 * a blob changed on disk is named, and the store is inconsistent. */
TEST(svc_check_verifies_built_model_blobs)
{
    struct svc_daemon d;
    char *report = NULL, catalog[4200], path[4400], sha[80] = "";
    size_t n;
    svc_start(&d, NULL, NULL, NULL);
    char *t = svc_small_trace(0, 30, 9, &n);
    CHECK_EQ_INT(put_trace(&d, "job", 0, t, n, NULL, 0), 201);
    free(t);
    char *model = svc_build_model(&d, "job", NULL);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, &report), 0);
    CHECK_CONTAINS(report, "built models: 1 of 1 blobs load");
    free(report);

    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    snprintf(catalog, sizeof catalog, "%s/catalog.db", d.data);
    REQUIRE(sqlite3_open(catalog, &db) == SQLITE_OK);
    REQUIRE(sqlite3_prepare_v2(db, "SELECT built FROM models", -1, &st, NULL) == SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(sha, sizeof sha, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    REQUIRE(strlen(sha) == 64);
    snprintf(path, sizeof path, "%s/blobs/%.2s/%s", d.data, sha, sha);
    FILE *f = fopen(path, "r+b");
    REQUIRE(f != NULL);
    fseek(f, 200, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    CHECK(svc_run_check(d.data, &report) != 0);
    CHECK_CONTAINS(report, "checksum mismatch");
    CHECK_CONTAINS(report, model);
    CHECK_CONTAINS(report, "built models: 0 of 1 blobs load");
    CHECK_CONTAINS(report, "INCONSISTENT");
    free(report);

    /* the byte put back, and the blob said to be of format 1, stored
     * under its new digest: an earlier format is named, and is no
     * inconsistency (its model is built again from its traces) */
    char *blob = NULL, stale[DIGEST_HEX_LEN + 1], sql[600], stale_path[4400];
    uint32_t one = 1;
    struct sc_error err;
    REQUIRE((blob = th_read_file(path, &n)) != NULL && n > 200);
    blob[200] = (char)c;
    memcpy(blob + 8, &one, sizeof one);
    REQUIRE(digest_hex(blob, n, stale, &err) == SC_OK);
    snprintf(stale_path, sizeof stale_path, "%s/blobs/%.2s", d.data, stale);
    mkdir(stale_path, 0755);
    snprintf(stale_path, sizeof stale_path, "%s/blobs/%.2s/%s", d.data, stale, stale);
    REQUIRE((f = fopen(stale_path, "wb")) != NULL);
    REQUIRE(fwrite(blob, 1, n, f) == n);
    fclose(f);
    REQUIRE(unlink(path) == 0);
    snprintf(sql, sizeof sql,
             "INSERT INTO blobs VALUES('%s', %zu, 1); UPDATE models SET built = '%s'; "
             "DELETE FROM blobs WHERE sha256 = '%s';",
             stale, n, stale, sha);
    REQUIRE(sqlite3_open(catalog, &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    free(blob);
    CHECK_EQ_INT(svc_run_check(d.data, &report), 0);
    CHECK_CONTAINS(report, "an earlier format, built again from its traces");
    CHECK_CONTAINS(report, "built models: 0 of 1 blobs load, their graphs checked; 1 of an earlier format");
    free(report);
    free(model);
}

static void restart_keeps_everything(void)
{
    struct svc_daemon d;
    struct svc_resp r;
    size_t n;
    char path[256];
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/a", "{\"config\":{\"dp\":2},\"hardware\":\"a100\"}", NULL), 201);
    for (int i = 0; i < 3; i++) {
        char *t = svc_small_trace(i, 5 + i, 100 + i, &n);
        CHECK_EQ_INT(put_trace(&d, i < 2 ? "a" : "b", i, t, n, NULL, 0), 201);
        free(t);
    }
    char *model = svc_build_model(&d, "a", NULL);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/tokens", "{\"scope\":\"read\",\"name\":\"dash\"}", NULL), 201);
    char *before = svc_fingerprint(&d);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);

    svc_start(&d, d.data, NULL, NULL);
    char *after = svc_fingerprint(&d);
    CHECK_STREQ(after, before);
    /* the model comes back into memory from its traces on first use */
    snprintf(path, sizeof path, "/v1/models/%s/replay", model);
    svc_admin(&d, "GET", path, NULL, &r);
    CHECK_EQ_INT(r.status, 200);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    char *log = th_read_file(d.log, NULL);
    CHECK_CONTAINS(log, "event=reloaded");
    free(log);
    free(before);
    free(after);
    free(model);
}

TEST(svc_restart_keeps_everything)
{
    restart_keeps_everything();
}

TEST(svc_pg_restart_keeps_everything)
{
    pg_server_use();
    restart_keeps_everything();
}

TEST(svc_build_of_a_lost_blob)
{
    struct svc_daemon d;
    struct svc_resp r;
    size_t n;
    char sha[80], path[4200], *t = svc_small_trace(0, 3, 21, &n);
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(put_trace(&d, "j", 0, t, n, sha, sizeof sha), 201);
    free(t);
    snprintf(path, sizeof path, "%s/blobs/%.2s/%s", d.data, sha, sha);
    CHECK_EQ_INT(unlink(path), 0);
    char *model = svc_request_model(&d, "j", NULL);
    snprintf(path, sizeof path, "/v1/models/%s", model);
    CHECK_STREQ(svc_wait_model(&d, model, 30), "failed");
    /* the error names the trace by rank and hash, never by a server path */
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    const char *e = svc_json_str(r.body, "error");
    CHECK_CONTAINS(e, "rank 0");
    CHECK_CONTAINS(e, sha);
    CHECK(strstr(e, d.data) == NULL && strstr(e, "blobs/") == NULL);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    /* a blob a row names is gone: that is an inconsistency */
    char *report = NULL;
    CHECK_EQ_INT(svc_run_check(d.data, &report), 1);
    CHECK_CONTAINS(report, sha);
    CHECK_CONTAINS(report, "INCONSISTENT");
    free(report);
    free(model);
}

struct fp_case {
    const char *point;
    const char *action;   /* "upload", "delete", "build" */
    int acked_after;      /* after the restart, the action's effect is there */
    int leftover;         /* the crash leaves a temp file or an orphan blob */
};

static void failpoint_case(const struct fp_case *fc)
{
    struct svc_daemon d;
    struct svc_resp r;
    size_t n;
    char env[128], *t;
    const char *envs[] = {env, NULL};
    char sha_seed[80];

    /* what is acknowledged before the crash must survive it */
    svc_start(&d, NULL, NULL, NULL);
    t = svc_small_trace(0, 4, 1, &n);
    CHECK_EQ_INT(put_trace(&d, "keep", 0, t, n, sha_seed, sizeof sha_seed), 201);
    free(t);
    t = svc_small_trace(0, 6, 2, &n);
    CHECK_EQ_INT(put_trace(&d, "doomed", 0, t, n, NULL, 0), 201);
    free(t);
    CHECK_EQ_INT(svc_stop(&d), 0);

    snprintf(env, sizeof env, "STEPCAST_FAILPOINT=%s", fc->point);
    svc_start(&d, d.data, NULL, envs);
    if (!strcmp(fc->action, "upload")) {
        t = svc_small_trace(1, 2000, 3, &n); /* ~150 KB: several chunks */
        CHECK_EQ_INT(put_trace(&d, "keep", 1, t, n, NULL, 0), 0); /* no answer: it died */
        free(t);
    } else if (!strcmp(fc->action, "delete")) {
        CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/doomed", NULL, NULL), 0);
    } else { /* the build may crash the daemon before the 202 goes out */
        long st = svc_admin(&d, "POST", "/v1/jobs/keep/models", NULL, &r);
        CHECK(st == 202 || st == 0);
        svc_resp_release(&r);
    }
    CHECK_EQ_INT(svc_wait_exit(&d, 30), -SIGKILL);
    /* what the crash left, before the restart sweeps it: listed, and no
     * inconsistency (the next start removes it) */
    char *left = NULL;
    if (svc_run_check(d.data, &left) != 0)
        sc_check_fail(__FILE__, __LINE__, "failpoint %s: --check before the restart:\n%s", fc->point, left);
    if (fc->leftover)
        CHECK_CONTAINS(left, "leftover (the next start removes it): ");
    else
        CHECK(strstr(left, "leftover (") == NULL);
    CHECK_CONTAINS(left, "consistent");
    free(left);

    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/keep/ranks/0/trace", NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "sha256"), sha_seed);
    svc_resp_release(&r);
    if (!strcmp(fc->action, "upload")) {
        CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/keep/ranks/1/trace", NULL, NULL),
                     fc->acked_after ? 200 : 404);
    } else if (!strcmp(fc->action, "delete")) {
        CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/doomed", NULL, NULL), 404);
    } else { /* the interrupted build is resubmitted and finishes */
        CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/models?job=keep", NULL, &r), 200);
        char id[80];
        snprintf(id, sizeof id, "%.18s", strstr(r.body, "\"id\":\"") ? strstr(r.body, "\"id\":\"") + 6 : "");
        svc_resp_release(&r);
        CHECK_STREQ(svc_wait_model(&d, id, 30), "ready");
    }
    CHECK_EQ_INT(svc_stop(&d), 0);
    char *report = NULL;
    if (svc_run_check(d.data, &report) != 0)
        sc_check_fail(__FILE__, __LINE__, "failpoint %s: inconsistent", fc->point);
    free(report);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d.data);
    CHECK_EQ_INT(system(cmd), 0);
}

TEST(svc_kill9_at_each_failpoint)
{
    static const struct fp_case cases[] = {
        {"upload.mid_body", "upload", 0, 1},      {"upload.after_fsync", "upload", 0, 1},
        {"upload.after_rename", "upload", 0, 1},  {"upload.after_commit", "upload", 1, 0},
        {"delete.after_commit", "delete", 1, 1},  {"build.after_load", "build", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        failpoint_case(&cases[i]);
}

/* A client that sends headers and part of a body, and the rest later. */
static int open_upload(const struct svc_daemon *d, const char *path, size_t total)
{
    struct sockaddr_in a;
    char head[512];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)d->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a))
        return -1;
    int k = snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Length: %zu\r\n\r\n", path, SVC_ADMIN, total);
    return send(fd, head, (size_t)k, MSG_NOSIGNAL) == k ? fd : -1;
}

static int send_all(int fd, const char *p, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t k = send(fd, p + off, n - off, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        off += (size_t)k;
    }
    return 0;
}

/* Wait until the daemon has a temp file (the upload is being received). */
static int wait_temp(const struct svc_daemon *d)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/blobs/.tmp", d->data);
    for (int i = 0; i < 500; i++, usleep(10000))
        if (count_files(tmp) > 0)
            return 1;
    return 0;
}

TEST(svc_kill9_mid_upload)
{
    struct svc_daemon d;
    size_t n;
    char *t = svc_small_trace(1, 3000, 5, &n), tmp[4200];
    svc_start(&d, NULL, NULL, NULL);
    char *seed = svc_small_trace(0, 3, 4, &n);
    CHECK_EQ_INT(put_trace(&d, "j", 0, seed, n, NULL, 0), 201);
    free(seed);
    n = strlen(t);
    int fd = open_upload(&d, "/v1/jobs/j/ranks/1/trace", n);
    CHECK(fd >= 0);
    CHECK(send_all(fd, t, n / 2) == 0);
    CHECK(wait_temp(&d));
    svc_kill9(&d);
    close(fd);
    snprintf(tmp, sizeof tmp, "%s/blobs/.tmp", d.data);
    CHECK_EQ_INT(count_files(tmp), 1); /* the half-received upload */
    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(count_files(tmp), 0); /* swept at start */
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j/ranks/0/trace", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j/ranks/1/trace", NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    free(t);
}

TEST(svc_sigterm_drains_requests_in_flight)
{
    struct svc_daemon d;
    size_t n;
    char *t = svc_small_trace(3, 3000, 6, &n), reply[512] = "";
    svc_start(&d, NULL, NULL, NULL);
    int fd = open_upload(&d, "/v1/jobs/j/ranks/3/trace", n);
    CHECK(fd >= 0);
    CHECK(send_all(fd, t, n / 2) == 0);
    CHECK(wait_temp(&d));
    kill(d.pid, SIGTERM);
    usleep(300000);
    /* draining: no new connections, but the upload in flight goes on */
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", NULL, NULL), 0);
    CHECK(send_all(fd, t + n / 2, n - n / 2) == 0);
    ssize_t k = recv(fd, reply, sizeof reply - 1, 0);
    close(fd);
    CHECK(k > 12 && strncmp(reply, "HTTP/1.1 201", 12) == 0);
    CHECK_EQ_INT(svc_wait_exit(&d, 30), 0);
    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j/ranks/3/trace", NULL, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    free(t);
}

/* Where `a` first appears in the daemon's log, past `b`'s first line
 * (-1: one of them is absent, or `a` comes first). */
static long log_after(const struct svc_daemon *d, const char *b, const char *a)
{
    char *log = th_read_file(d->log, NULL);
    const char *pb = log ? strstr(log, b) : NULL, *pa = log ? strstr(log, a) : NULL;
    long at = pb && pa && pa > pb ? (long)(pa - log) : -1;
    free(log);
    return at;
}

/* A SIGTERM while a worker is still in a deferred request's answer
 * callback (http.answered holds it there 1 s, its upload answered):
 * libmicrohttpd is stopped only after the worker has left it, and the
 * daemon exits cleanly with the upload kept. */
TEST(svc_sigterm_waits_for_a_worker_in_its_answer)
{
    static const char *const held[] = {"STEPCAST_FAILPOINT=http.answered", NULL};
    struct svc_daemon d;
    size_t n;
    char *t = svc_small_trace(0, 40, 8, &n);
    svc_start(&d, NULL, NULL, held);
    CHECK_EQ_INT(put_trace(&d, "j", 0, t, n, NULL, 0), 201); /* answered, its worker held */
    CHECK(svc_wait_hold(&d, "http.answered", 10));
    kill(d.pid, SIGTERM);
    CHECK_EQ_INT(svc_wait_exit(&d, 30), 0);
    CHECK(log_after(&d, "hold=http.answered", "held=http.answered") > 0);
    CHECK(log_after(&d, "held=http.answered", "event=stopped") > 0);
    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j/ranks/0/trace", NULL, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
    free(t);
}

/* ---- 50 clients at once ---- */

enum { CLIENTS = 50, JOBS = 5, UPLOADS = 2, READS = 6 };

struct client {
    const struct svc_daemon *d;
    int id;
    char sha[UPLOADS][80];
};

static atomic_int failures;

static void *client_main(void *arg)
{
    struct client *c = arg;
    char job[16];
    snprintf(job, sizeof job, "c%d", c->id % JOBS);
    for (int k = 0; k < UPLOADS; k++) {
        size_t n;
        char *t = svc_small_trace(-1, 3 + c->id % 7, c->id * UPLOADS + k, &n);
        long st = put_trace(c->d, job, c->id / JOBS * UPLOADS + k, t, n, c->sha[k], sizeof c->sha[k]);
        if (st != 201) {
            fprintf(stderr, "client %d upload %d: %ld\n", c->id, k, st);
            atomic_fetch_add(&failures, 1);
        }
        free(t);
        for (int i = 0; i < READS / UPLOADS; i++) {
            static const char *const paths[] = {"/healthz", "/v1/jobs", "/v1/models"};
            char p[64];
            if (i == 0)
                snprintf(p, sizeof p, "%s", paths[c->id % 3]);
            else
                snprintf(p, sizeof p, "/v1/jobs/%s", job);
            if (svc_admin(c->d, "GET", p, NULL, NULL) != 200) {
                fprintf(stderr, "client %d GET %s failed\n", c->id, p);
                atomic_fetch_add(&failures, 1);
            }
        }
    }
    return NULL;
}

static void concurrent_clients(void)
{
    struct svc_daemon d;
    static struct client cl[CLIENTS];
    pthread_t th[CLIENTS];
    const char *args[] = {"--max-uploads", "64", NULL};
    svc_start(&d, NULL, args, NULL);
    for (int i = 0; i < CLIENTS; i++) {
        cl[i].d = &d;
        cl[i].id = i;
        pthread_create(&th[i], NULL, client_main, &cl[i]);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ_INT(atomic_load(&failures), 0);
    /* no upload lost: every rank holds what its client sent */
    for (int i = 0; i < CLIENTS; i++)
        for (int k = 0; k < UPLOADS; k++) {
            char p[128];
            struct svc_resp r;
            snprintf(p, sizeof p, "/v1/jobs/c%d/ranks/%d/trace", i % JOBS, i / JOBS * UPLOADS + k);
            CHECK_EQ_INT(svc_admin(&d, "GET", p, NULL, &r), 200);
            CHECK_STREQ(svc_json_str(r.body, "sha256"), cl[i].sha[k]);
            svc_resp_release(&r);
        }
    struct svc_resp r;
    svc_admin(&d, "GET", "/metrics", NULL, &r);
    CHECK_CONTAINS(r.body, "stepcast_uploads_total{replica=\"" SVC_REPLICA "\",result=\"created\"} 100\n");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
}

TEST(svc_concurrent_clients)
{
    concurrent_clients();
}

TEST(svc_pg_concurrent_clients)
{
    pg_server_use();
    concurrent_clients();
}

TEST(svc_sigterm_finishes_builds_in_flight)
{
    struct svc_daemon d;
    size_t n;
    char *t = svc_small_trace(0, 30000, 8, &n); /* 90,001 events: a build that takes a while */
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(put_trace(&d, "big", 0, t, n, NULL, 0), 201);
    free(t);
    char *id = svc_request_model(&d, "big", NULL);
    /* a build still queued at SIGTERM is left for the next start (below);
     * this one is in flight once a worker has started it */
    char started[128];
    snprintf(started, sizeof started, "model=%s job=big event=start", id);
    int in_flight = 0;
    for (int i = 0; i < 400 && !in_flight; i++) {
        char *so_far = th_read_file(d.log, NULL);
        in_flight = so_far && strstr(so_far, started);
        free(so_far);
        if (!in_flight)
            nanosleep(&(struct timespec){0, 25 * 1000 * 1000}, NULL);
    }
    CHECK(in_flight);
    CHECK_EQ_INT(svc_stop(&d), 0); /* SIGTERM while the build runs */
    char *log = th_read_file(d.log, NULL);
    char *ready = log ? strstr(log, "event=ready") : NULL, *exited = log ? strstr(log, "comp=main event=exit") : NULL;
    CHECK(ready && exited && ready < exited); /* it finished before the exit */
    free(log);
    svc_start(&d, d.data, NULL, NULL);
    CHECK_STREQ(svc_wait_model(&d, id, 1), "ready");
    CHECK_EQ_INT(svc_stop(&d), 0);
    free(id);
}
