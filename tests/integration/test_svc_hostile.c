/* tests/integration/test_svc_hostile.c: hostile input, each answered with
 * the expected status and leaving the store exactly as it was. */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

struct ctx {
    struct svc_daemon d;
    char *before;
    char read_tok[128], revoked_tok[128];
};

/* The store must look exactly as before the request, once the daemon has
 * finished with a connection the client dropped (up to 3 s). */
static void untouched(struct ctx *c, const char *what)
{
    char *now = svc_fingerprint(&c->d);
    for (int i = 0; i < 30 && strcmp(now, c->before) != 0; i++) {
        usleep(100000);
        free(now);
        now = svc_fingerprint(&c->d);
    }
    if (strcmp(now, c->before) != 0)
        sc_check_fail(__FILE__, __LINE__, "%s changed the store:\n--- before\n%s--- after\n%s", what,
                      c->before, now);
    free(now);
}

/* A request with a status and error code expected. */
static void expect(struct ctx *c, const char *method, const char *path, const char *token,
                   const void *body, size_t n, const char *const *headers, long status,
                   const char *code)
{
    struct svc_resp r;
    struct svc_opts o = {token, body, n, NULL, headers};
    long got = svc_call(&c->d, method, path, &o, &r);
    if (got != status || (code && strcmp(svc_error_code(&r), code) != 0))
        sc_check_fail(__FILE__, __LINE__, "%s %s: want %ld %s, got %ld %s", method, path, status,
                      code ? code : "", got, r.body);
    if (got >= 400 && !strstr(r.body, "{\"error\":{\"code\":\""))
        sc_check_fail(__FILE__, __LINE__, "%s %s: error body is not the JSON error: %s", method, path,
                      r.body);
    svc_resp_release(&r);
    untouched(c, path);
}

/* Raw bytes on a socket: the status line must start with `status_line`. */
static void expect_raw(struct ctx *c, const char *what, const void *data, size_t n,
                       const char *status_line, const char *body_has)
{
    char *got = svc_raw(&c->d, data, n, 5);
    if (strncmp(got, status_line, strlen(status_line)) != 0 || (body_has && !strstr(got, body_has)))
        sc_check_fail(__FILE__, __LINE__, "%s: want '%s' ... '%s', got '%.300s'", what, status_line,
                      body_has ? body_has : "", got);
    free(got);
    untouched(c, what);
}

/* A daemon (its data in data_dir, or the default) with a job "seed", a
 * read token and a revoked write token. */
static void setup_in(struct ctx *c, const char *data_dir, const char *const *args)
{
    struct svc_resp r;
    size_t n;
    char *t = svc_small_trace(0, 3, 7, &n);
    struct svc_opts up = {SVC_ADMIN, t, n, NULL, NULL};
    svc_start(&c->d, data_dir, args, NULL);
    CHECK_EQ_INT(svc_call(&c->d, "PUT", "/v1/jobs/seed/ranks/0/trace", &up, NULL), 201);
    free(t);
    CHECK_EQ_INT(svc_admin(&c->d, "POST", "/v1/tokens", "{\"scope\":\"read\"}", &r), 201);
    snprintf(c->read_tok, sizeof c->read_tok, "%s", svc_json_str(r.body, "token"));
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&c->d, "POST", "/v1/tokens", "{\"scope\":\"write\"}", &r), 201);
    snprintf(c->revoked_tok, sizeof c->revoked_tok, "%s", svc_json_str(r.body, "token"));
    char path[128];
    snprintf(path, sizeof path, "/v1/tokens/%s", svc_json_str(r.body, "id"));
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&c->d, "DELETE", path, NULL, NULL), 200);
    c->before = svc_fingerprint(&c->d);
}

static void setup(struct ctx *c, const char *const *args)
{
    setup_in(c, NULL, args);
}

TEST(svc_hostile_auth_and_bodies)
{
    struct ctx c;
    size_t n;
    char *good = svc_small_trace(1, 3, 9, &n);
    setup(&c, NULL);
    const char *up = "/v1/jobs/seed/ranks/1/trace";

    /* tokens */
    expect(&c, "PUT", up, NULL, good, n, NULL, 401, "unauthorized");
    expect(&c, "PUT", up, "sct_0000000000000000000000000000000000000000", good, n, NULL, 401, "unauthorized");
    expect(&c, "PUT", up, c.revoked_tok, good, n, NULL, 401, "unauthorized");
    expect(&c, "PUT", up, c.read_tok, good, n, NULL, 403, "forbidden");
    expect(&c, "DELETE", "/v1/jobs/seed", c.read_tok, NULL, 0, NULL, 403, "forbidden");
    expect(&c, "GET", "/v1/jobs", "x", NULL, 0, NULL, 401, "unauthorized");

    /* trace bodies */
    const char *gz = th_write_gzip("good.json.gz", good, n);
    size_t gzn;
    char *gzb = th_read_file(gz, &gzn);
    expect(&c, "PUT", up, SVC_ADMIN, gzb, gzn / 2, NULL, 400, "invalid_trace"); /* truncated gzip */
    expect(&c, "PUT", up, SVC_ADMIN, gzb, 10, NULL, 400, "invalid_trace");
    free(gzb);
    expect(&c, "PUT", up, SVC_ADMIN, "this is not JSON", 16, NULL, 400, "invalid_trace");
    expect(&c, "PUT", up, SVC_ADMIN, "{\"traceEvents\":[", 16, NULL, 400, "invalid_trace");
    expect(&c, "PUT", up, SVC_ADMIN, "", 0, NULL, 400, "invalid_trace");
    static const char bad_utf8[] = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"\xc3\x28\","
                                   "\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]}";
    expect(&c, "PUT", up, SVC_ADMIN, bad_utf8, sizeof bad_utf8 - 1, NULL, 400, "invalid_trace");
    expect(&c, "PUT", up, SVC_ADMIN, "\x1f\x8b\x08\x00garbage", 12, NULL, 400, "invalid_trace");

    /* JSON bodies */
    expect(&c, "PUT", "/v1/jobs/x", SVC_ADMIN, "{\"description\":\"\xff\xfe\"}", 21, NULL, 400, "invalid_json");
    expect(&c, "PUT", "/v1/jobs/x", SVC_ADMIN, "{\"config\":", 10, NULL, 400, "invalid_json");
    expect(&c, "POST", "/v1/tokens", SVC_ADMIN, "null", 4, NULL, 400, "invalid_json");
    size_t deep_n = 100000;
    char *deep = malloc(deep_n + 1);
    memset(deep, '[', deep_n);
    expect(&c, "PUT", "/v1/jobs/x", SVC_ADMIN, deep, deep_n, NULL, 400, "json_too_deep");
    expect(&c, "PUT", up, SVC_ADMIN, deep, deep_n, NULL, 400, "invalid_trace"); /* a trace, too */
    for (size_t i = 0; i + 5 <= deep_n; i += 5)
        memcpy(deep + i, "{\"a\":", 5);
    expect(&c, "POST", "/v1/tokens", SVC_ADMIN, deep, deep_n, NULL, 400, "json_too_deep");
    expect(&c, "POST", "/v1/jobs/seed/models", SVC_ADMIN, deep, deep_n, NULL, 400, "json_too_deep");
    free(deep);
    char *big = malloc((2u << 20) + 1);
    memset(big, ' ', 2u << 20);
    expect(&c, "PUT", "/v1/jobs/x", SVC_ADMIN, big, 2u << 20, NULL, 413, "too_large");
    expect(&c, "GET", "/v1/jobs", SVC_ADMIN, big, 2u << 20, NULL, 413, "too_large");
    free(big);

    /* a 16 GiB declared body is refused before any of it is read */
    static const char huge[] = "PUT /v1/jobs/seed/ranks/1/trace HTTP/1.1\r\nHost: x\r\n"
                               "Authorization: Bearer " SVC_ADMIN "\r\n"
                               "Content-Length: 17179869184\r\n\r\n{\"traceEvents\":[";
    expect_raw(&c, "16 GiB declared", huge, sizeof huge - 1, "HTTP/1.1 413", "\"code\":\"too_large\"");
    static const char huge_noauth[] = "PUT /v1/jobs/seed/ranks/1/trace HTTP/1.1\r\nHost: x\r\n"
                                      "Content-Length: 17179869184\r\n\r\n";
    expect_raw(&c, "16 GiB without a token", huge_noauth, sizeof huge_noauth - 1, "HTTP/1.1 401",
               "\"code\":\"unauthorized\"");
    static const char big_query[] = "PUT /v1/jobs/seed/ranks/1/trace?bogus=1 HTTP/1.1\r\nHost: x\r\n"
                                    "Authorization: Bearer " SVC_ADMIN "\r\n"
                                    "Content-Length: 1000000000\r\n\r\n";
    expect_raw(&c, "1 GB with an unknown query parameter", big_query, sizeof big_query - 1,
               "HTTP/1.1 400", "\"code\":\"bad_request\"");
    /* a chunked JSON body past its limit closes the connection */
    char chunked[4096];
    int k = snprintf(chunked, sizeof chunked,
                     "PUT /v1/jobs/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n", SVC_ADMIN);
    char *stream = malloc((size_t)k + (3u << 20));
    memcpy(stream, chunked, (size_t)k);
    size_t sn = (size_t)k;
    for (int i = 0; i < 40; i++) { /* 40 x 64 KiB: past the 1 MiB limit */
        sn += (size_t)snprintf(stream + sn, 16, "10000\r\n");
        memset(stream + sn, ' ', 65536);
        sn += 65536;
        memcpy(stream + sn, "\r\n", 2);
        sn += 2;
    }
    char *got = svc_raw(&c.d, stream, sn, 5);
    CHECK(strncmp(got, "HTTP/1.1 2", 10) != 0);
    free(got);
    free(stream);
    untouched(&c, "chunked JSON over the limit");
    free(good);
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(c.d.data, NULL), 0);
}

TEST(svc_hostile_paths_and_protocol)
{
    struct ctx c;
    size_t n;
    char *good = svc_small_trace(-1, 3, 11, &n);
    char outside[512];
    const char *args[] = {"--request-timeout", "2", NULL};
    setup(&c, args);

    /* identifiers: traversal, separators, length */
    expect(&c, "PUT", "/v1/jobs/../ranks/0/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_id");
    expect(&c, "PUT", "/v1/jobs/../../ranks/0/trace", SVC_ADMIN, good, n, NULL, 404, "no_route");
    expect(&c, "PUT", "/v1/jobs/%2e%2e/ranks/0/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_id");
    expect(&c, "PUT", "/v1/jobs/..%2f..%2f..%2ftmp%2fx/ranks/0/trace", SVC_ADMIN, good, n, NULL, 404, "no_route");
    expect(&c, "PUT", "/v1/jobs/.hidden/ranks/0/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_id");
    expect(&c, "PUT", "/v1/jobs/a%00b/ranks/0/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_id");
    expect(&c, "PUT", "/v1/jobs/a%0ab", SVC_ADMIN, NULL, 0, NULL, 400, "invalid_id");
    expect(&c, "PUT", "/v1/jobs/a%20b", SVC_ADMIN, NULL, 0, NULL, 400, "invalid_id");
    expect(&c, "GET", "/v1/models/..%5c..%5cx", SVC_ADMIN, NULL, 0, NULL, 400, "invalid_id");
    expect(&c, "DELETE", "/v1/tokens/%2e", SVC_ADMIN, NULL, 0, NULL, 400, "invalid_id");
    expect(&c, "PUT", "/v1/jobs/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", SVC_ADMIN,
           NULL, 0, NULL, 400, "invalid_id");
    snprintf(outside, sizeof outside, "%s/tmp", th_tmpdir());
    CHECK(access(outside, F_OK) != 0);

    /* ranks */
    expect(&c, "PUT", "/v1/jobs/seed/ranks/-1/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_rank");
    expect(&c, "PUT", "/v1/jobs/seed/ranks/4096/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_rank");
    expect(&c, "PUT", "/v1/jobs/seed/ranks/18446744073709551617/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_rank");
    expect(&c, "PUT", "/v1/jobs/seed/ranks/1e3/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_rank");
    expect(&c, "PUT", "/v1/jobs/seed/ranks/+1/trace", SVC_ADMIN, good, n, NULL, 400, "invalid_rank");

    /* routes and methods */
    expect(&c, "GET", "/v2/jobs", SVC_ADMIN, NULL, 0, NULL, 404, "no_route");
    expect(&c, "GET", "/v1/jobs/seed/ranks", SVC_ADMIN, NULL, 0, NULL, 404, "no_route");
    expect(&c, "GET", "/ui", NULL, NULL, 0, NULL, 404, "no_route");
    expect(&c, "POST", "/v1/jobs", SVC_ADMIN, "{}", 2, NULL, 405, "method_not_allowed");
    expect(&c, "PATCH", "/v1/jobs/seed", SVC_ADMIN, "{}", 2, NULL, 405, "method_not_allowed");
    expect(&c, "DELETE", "/v1/jobs/seed/ranks/0/trace", SVC_ADMIN, NULL, 0, NULL, 405, "method_not_allowed");
    expect(&c, "GET", "/v1/jobs?x=1", SVC_ADMIN, NULL, 0, NULL, 400, "bad_request");

    /* 1 MB of headers: refused by the HTTP layer (431), nothing reaches the API */
    size_t hn = (1u << 20) + 200;
    char *hdr = malloc(hn);
    int k = snprintf(hdr, hn, "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(hdr + k, 'a', 1u << 20);
    memcpy(hdr + k + (1u << 20), "\r\n\r\n", 4);
    expect_raw(&c, "1 MB of headers", hdr, (size_t)k + (1u << 20) + 4, "HTTP/1.1 431", NULL);
    free(hdr);
    /* not HTTP at all (a TLS hello): closed, or a 400 from the HTTP layer */
    char *tls = svc_raw(&c.d, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15, 5);
    CHECK(tls[0] == '\0' || strncmp(tls, "HTTP/1.1 400", 12) == 0);
    free(tls);
    untouched(&c, "not HTTP");

    /* a client that sends nothing is closed after request-timeout (2 s),
     * and does not hold others up meanwhile */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        char *g = svc_raw(&c.d, "", 0, 20);
        _exit(g[0] == '\0' ? 0 : 1); /* closed without an answer */
    }
    usleep(100000);
    for (int i = 0; i < 20; i++)
        CHECK_EQ_INT(svc_call(&c.d, "GET", "/healthz", NULL, NULL), 200);
    int st = 0;
    waitpid(pid, &st, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(dt > 1.5 && dt < 10);
    /* and one that stops half-way through its headers */
    expect_raw(&c, "half a request", "GET /v1/jobs HTTP/1.1\r\nHost:", 29, "", NULL);
    untouched(&c, "slow clients");
    free(good);
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(c.d.data, NULL), 0);
}

TEST(svc_hostile_limits)
{
    struct ctx c;
    struct svc_resp r;
    size_t n;
    char *many = svc_small_trace(-1, 40, 13, &n); /* 121 events */
    const char *args[] = {"--max-events", "20", "--max-body", "4K", "--max-uploads", "1",
                          "--max-ranks", "8", NULL};
    setup(&c, args);
    expect(&c, "PUT", "/v1/jobs/seed/ranks/1/trace", SVC_ADMIN, many, n, NULL, 413, "too_large");
    expect(&c, "PUT", "/v1/jobs/seed/ranks/8/trace", SVC_ADMIN, many, n, NULL, 400, "invalid_rank");
    char *big = malloc(8192);
    memset(big, ' ', 8192);
    expect(&c, "PUT", "/v1/jobs/seed/ranks/1/trace", SVC_ADMIN, big, 8192, NULL, 413, "too_large");
    free(big);
    /* one upload at a time: a second one meanwhile is told to come back */
    pid_t pid = fork();
    if (pid == 0) {
        char head[512];
        int k = snprintf(head, sizeof head,
                         "PUT /v1/jobs/seed/ranks/2/trace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                         "Content-Length: 1000\r\n\r\n{\"traceEvents\":[", SVC_ADMIN);
        char *g = svc_raw(&c.d, head, (size_t)k, 1.5); /* holds the slot, then gives up */
        free(g);
        _exit(0);
    }
    usleep(300000);
    struct svc_opts up = {SVC_ADMIN, many, 100, NULL, NULL};
    CHECK_EQ_INT(svc_call(&c.d, "PUT", "/v1/jobs/seed/ranks/1/trace", &up, &r), 429);
    CHECK_STREQ(svc_error_code(&r), "busy");
    CHECK_CONTAINS(r.headers, "Retry-After: 1");
    svc_resp_release(&r);
    waitpid(pid, NULL, 0);
    untouched(&c, "limits");
    free(many);
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(c.d.data, NULL), 0);
}

/* A raw request: `head` up to the blank line, built with the admin token. */
static size_t raw_request(char *buf, size_t cap, const char *line, size_t line_len, const char *headers)
{
    size_t n = 0;
    memcpy(buf, line, line_len);
    n += line_len;
    n += (size_t)snprintf(buf + n, cap - n, "\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n", SVC_ADMIN,
                          headers);
    return n;
}

TEST(svc_hostile_http_parsing)
{
    struct ctx c;
    static char buf[1u << 17];
    size_t n;
    setup(&c, NULL);

    /* A: a NUL or another control byte in the request line or a header */
    static const char nul_target[] = "DELETE /v1/jobs/seed\0anything HTTP/1.1";
    n = raw_request(buf, sizeof buf, nul_target, sizeof nul_target - 1, "");
    expect_raw(&c, "NUL in the target", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    static const char nul_before_version[] = "DELETE /v1/jobs/seed\0 HTTP/1.1";
    n = raw_request(buf, sizeof buf, nul_before_version, sizeof nul_before_version - 1, "");
    expect_raw(&c, "NUL before the version", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    static const char nul_query[] = "DELETE /v1/jobs/seed\0?x=1 HTTP/1.1";
    n = raw_request(buf, sizeof buf, nul_query, sizeof nul_query - 1, "");
    expect_raw(&c, "NUL before a query", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    static const char ctl_target[] = "DELETE /v1/jobs/se\x01" "ed HTTP/1.1";
    n = raw_request(buf, sizeof buf, ctl_target, sizeof ctl_target - 1, "");
    expect_raw(&c, "a control byte in the target", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    static const char nul_method[] = "DELETE\0GET /v1/jobs/seed HTTP/1.1";
    n = raw_request(buf, sizeof buf, nul_method, sizeof nul_method - 1, "");
    expect_raw(&c, "NUL in the method", buf, n, "HTTP/1.1 400", NULL);
    static const char del[] = "DELETE /v1/jobs/seed HTTP/1.1";
    static const char nul_header[] = "X-Note: a\0b\r\n";
    n = raw_request(buf, sizeof buf, del, sizeof del - 1, "");
    n -= 2; /* before the blank line */
    memcpy(buf + n, nul_header, sizeof nul_header - 1);
    n += sizeof nul_header - 1;
    memcpy(buf + n, "\r\n", 2);
    n += 2;
    expect_raw(&c, "NUL in a header", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    n = raw_request(buf, sizeof buf, del, sizeof del - 1, "X-Note: a\x01" "b\r\n");
    expect_raw(&c, "a control byte in a header", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    /* the token itself followed by a NUL and more */
    n = (size_t)snprintf(buf, sizeof buf, "DELETE /v1/jobs/seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s", SVC_ADMIN);
    memcpy(buf + n, "\0junk\r\n\r\n", 9);
    n += 9;
    expect_raw(&c, "NUL after the token", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");

    /* D: request smuggling */
    size_t tn;
    char *t = svc_small_trace(1, 3, 21, &tn);
    char hdrs[256];
    snprintf(hdrs, sizeof hdrs, "Content-Length: %zu\r\nContent-Length: %zu\r\n", tn, tn + 5);
    static const char put[] = "PUT /v1/jobs/seed/ranks/1/trace HTTP/1.1";
    n = raw_request(buf, sizeof buf, put, sizeof put - 1, hdrs);
    memcpy(buf + n, t, tn);
    expect_raw(&c, "two Content-Length", buf, n + tn, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    snprintf(hdrs, sizeof hdrs, "Content-Length: %zu\r\nTransfer-Encoding: chunked\r\n", tn);
    n = raw_request(buf, sizeof buf, put, sizeof put - 1, hdrs);
    memcpy(buf + n, t, tn);
    expect_raw(&c, "Content-Length with Transfer-Encoding", buf, n + tn, "HTTP/1.1 400",
               "\"code\":\"bad_request\"");
    snprintf(hdrs, sizeof hdrs, "Content-Length: %zu\r\nContent-Length: %zu\r\n", tn, tn);
    n = raw_request(buf, sizeof buf, put, sizeof put - 1, hdrs);
    memcpy(buf + n, t, tn);
    char *got = svc_raw(&c.d, buf, n + tn, 5); /* the same length twice is one length */
    CHECK(strncmp(got, "HTTP/1.1 201", 12) == 0);
    free(got);
    free(t);
    free(c.before);
    c.before = svc_fingerprint(&c.d);

    /* B: an over-long target, query or header set gets a JSON answer */
    char *line = malloc(40000);
    int k = snprintf(line, 40000, "GET /v1/jobs?");
    for (int i = 0; i < 3000; i++)
        k += snprintf(line + k, 40000 - (size_t)k, "a=1&");
    k += snprintf(line + k, 40000 - (size_t)k, " HTTP/1.1");
    n = raw_request(buf, sizeof buf, line, (size_t)k, "");
    expect_raw(&c, "12 KB of query", buf, n, "HTTP/1.1 414", "\"code\":\"uri_too_long\"");
    k = snprintf(line, 40000, "GET /v1/jobs?");
    for (int i = 0; i < 600; i++)
        k += snprintf(line + k, 40000 - (size_t)k, "a&");
    k += snprintf(line + k, 40000 - (size_t)k, " HTTP/1.1");
    n = raw_request(buf, sizeof buf, line, (size_t)k, "");
    expect_raw(&c, "600 query parameters", buf, n, "HTTP/1.1 400", "\"code\":\"bad_request\"");
    k = snprintf(line, 40000, "GET /v1/jobs/");
    memset(line + k, 'a', 9000);
    k += 9000;
    k += snprintf(line + k, 40000 - (size_t)k, " HTTP/1.1");
    n = raw_request(buf, sizeof buf, line, (size_t)k, "");
    expect_raw(&c, "a 9 KB path", buf, n, "HTTP/1.1 414", "\"code\":\"uri_too_long\"");
    char *many = malloc(100000);
    k = 0;
    for (int i = 0; i < 80; i++) /* over max-header (64K), under what the HTTP layer holds */
        k += snprintf(many + k, 100000 - (size_t)k, "X-Pad-%d: %0900d\r\n", i, 0);
    n = raw_request(buf, sizeof buf, "GET /v1/jobs HTTP/1.1", 21, many);
    expect_raw(&c, "72 KB of headers", buf, n, "HTTP/1.1 431", "\"code\":\"headers_too_large\"");
    free(many);
    free(line);

    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(c.d.data, NULL), 0);
}

TEST(svc_hostile_api_edges)
{
    struct ctx c;
    struct svc_resp r;
    setup(&c, NULL);

    /* I: a job with no trace or model lists them as [] */
    CHECK_EQ_INT(svc_admin(&c.d, "PUT", "/v1/jobs/empty", "{\"description\":\"d\"}", NULL), 201);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/v1/jobs/empty", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"traces\":[]");
    CHECK_CONTAINS(r.body, "\"models\":[]");
    svc_resp_release(&r);
    free(c.before);
    c.before = svc_fingerprint(&c.d);

    /* I: a number out of range in a trace is an invalid trace (400) */
    static const char huge_ts[] = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\","
                                  "\"pid\":1,\"tid\":1,\"ts\":1e400,\"dur\":1}]}";
    expect(&c, "PUT", "/v1/jobs/seed/ranks/1/trace", SVC_ADMIN, huge_ts, sizeof huge_ts - 1, NULL, 400,
           "invalid_trace");

    /* I: blanks around the token are not part of it (RFC 9110 5.5) */
    char h[256];
    snprintf(h, sizeof h, "Authorization: Bearer %s \t", SVC_ADMIN);
    const char *hs[] = {h, NULL};
    expect(&c, "GET", "/v1/jobs", NULL, NULL, 0, hs, 200, NULL);
    snprintf(h, sizeof h, "Authorization: Bearer %s x", SVC_ADMIN);
    expect(&c, "GET", "/v1/jobs", NULL, NULL, 0, hs, 401, "unauthorized");

    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(c.d.data, NULL), 0);
}

/* The number of entries in a folder, . and .. aside. */
static int entries(const char *dir)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
    return system(cmd) == 0 ? 0 : 1;
}

TEST(svc_hostile_full_disk)
{
    struct ctx c;
    struct svc_resp r;
    char disk[PATH_MAX], data[PATH_MAX + 16], tmp[PATH_MAX + 32], fill[PATH_MAX + 16];
    size_t n;
    snprintf(disk, sizeof disk, "%s/disk", th_tmpdir());
    svc_small_disk(disk, 8u << 20);
    snprintf(data, sizeof data, "%s/data", disk);
    snprintf(tmp, sizeof tmp, "%s/blobs/.tmp", data);
    snprintf(fill, sizeof fill, "%s/fill", disk);
    setup_in(&c, data, NULL);
    char *t = svc_small_trace(1, 400, 31, &n); /* ~30 KB */
    struct svc_opts up = {SVC_ADMIN, t, n, NULL, NULL};

    /* H: an upload that fills the disk is 507 and leaves nothing behind */
    size_t bn;
    char *big = svc_small_trace(1, 40000, 32, &bn); /* ~3 MB */
    struct svc_opts up_big = {SVC_ADMIN, big, bn, NULL, NULL};
    svc_fill_disk(disk, "fill", 3u << 19);
    CHECK_EQ_INT(svc_call(&c.d, "PUT", "/v1/jobs/seed/ranks/1/trace", &up_big, &r), 507);
    CHECK_STREQ(svc_error_code(&r), "insufficient_storage");
    svc_resp_release(&r);
    untouched(&c, "an upload that fills the disk");
    CHECK_EQ_INT(entries(tmp), 0);
    free(big);
    /* on a full disk, uploads are refused before their body */
    svc_fill_disk(disk, "fill", 0);
    CHECK_EQ_INT(svc_call(&c.d, "PUT", "/v1/jobs/seed/ranks/1/trace", &up, &r), 507);
    CHECK_STREQ(svc_error_code(&r), "insufficient_storage");
    svc_resp_release(&r);
    untouched(&c, "an upload on a full disk");
    CHECK_EQ_INT(entries(tmp), 0);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/healthz", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"disk_full\":true");
    svc_resp_release(&r);
    /* a build on a full disk */
    CHECK_EQ_INT(svc_admin(&c.d, "POST", "/v1/jobs/seed/models", NULL, &r), 507);
    CHECK_STREQ(svc_error_code(&r), "insufficient_storage");
    svc_resp_release(&r);
    untouched(&c, "a build on a full disk");

    /* H: DELETE works on a full disk, and frees the space */
    CHECK_EQ_INT(svc_admin(&c.d, "DELETE", "/v1/jobs/seed", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/v1/jobs/seed", NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&c.d), 0);

    /* H: the daemon starts on a full disk: reads served, writes 507, and says so */
    svc_fill_disk(disk, "fill", 0);
    svc_start(&c.d, data, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/v1/jobs", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/healthz", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"disk_full\":true");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&c.d, "PUT", "/v1/jobs/seed/ranks/1/trace", &up, NULL), 507);
    CHECK_EQ_INT(entries(tmp), 0);
    char *log = th_read_file(c.d.log, NULL);
    CHECK_CONTAINS(log, "disk_full");
    free(log);

    /* space again: writes work again */
    CHECK_EQ_INT(unlink(fill), 0);
    CHECK_EQ_INT(svc_call(&c.d, "PUT", "/v1/jobs/seed/ranks/1/trace", &up, NULL), 201);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/healthz", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"disk_full\":false");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(data, NULL), 0);
    free(t);
    free(c.before);
    umount2(disk, MNT_DETACH);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Send `drip` every `every` seconds until the server closes fd: the
 * seconds that took, or -1 when it was still open after wait_s. */
static double closed_after(int fd, const char *drip, double every, double wait_s)
{
    struct timespec t0;
    double next = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (double t; (t = seconds_since(&t0)) < wait_s;) {
        if (t >= next) {
            if (send(fd, drip, strlen(drip), MSG_NOSIGNAL) < 0)
                return t;
            next = t + every;
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
            char b[4096];
            if (recv(fd, b, sizeof b, 0) <= 0)
                return seconds_since(&t0);
        }
    }
    return -1;
}

TEST_ALONE(svc_hostile_slow_head_and_body)
{
    struct ctx c;
    char head[512];
    const char *args[] = {"--head-timeout", "2", "--min-body-rate", "1K", "--max-uploads", "1", NULL};
    setup(&c, args);

    /* E: a head sent a line at a time is never idle, but has a deadline */
    int fd = svc_connect(&c.d);
    CHECK(fd >= 0);
    const char *line = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n";
    CHECK(send(fd, line, strlen(line), MSG_NOSIGNAL) > 0);
    double t = closed_after(fd, "X-Slow: 1\r\n", 0.5, 10);
    close(fd);
    if (t < 1.5 || t > 6)
        sc_check_fail(__FILE__, __LINE__, "a slow head was closed after %.2f s (head-timeout 2)", t);

    /* E: an upload that trickles loses its connection and its slot */
    fd = svc_connect(&c.d);
    CHECK(fd >= 0);
    int k = snprintf(head, sizeof head,
                     "PUT /v1/jobs/seed/ranks/1/trace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Length: 100000\r\n\r\n{\"traceEvents\":[", SVC_ADMIN);
    CHECK(send(fd, head, (size_t)k, MSG_NOSIGNAL) == k);
    t = closed_after(fd, "          ", 0.5, 12);
    close(fd);
    if (t < 1.5 || t > 8)
        sc_check_fail(__FILE__, __LINE__, "a 20 B/s upload was closed after %.2f s (min-body-rate 1K)", t);
    untouched(&c, "a trickling upload");
    size_t n;
    char *tr = svc_small_trace(1, 3, 41, &n);
    struct svc_opts up = {SVC_ADMIN, tr, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&c.d, "PUT", "/v1/jobs/seed/ranks/1/trace", &up, NULL), 201);
    free(tr);
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
    CHECK_EQ_INT(svc_run_check(c.d.data, NULL), 0);
}

enum { SLOW_CONNECTIONS = 600 };

struct dripper {
    int fds[SLOW_CONNECTIONS];
    volatile int stop;
};

/* Keep every slow connection busy: a header line each second. */
static void *drip_all(void *arg)
{
    struct dripper *dr = arg;
    while (!dr->stop) {
        for (int i = 0; i < SLOW_CONNECTIONS; i++)
            if (dr->fds[i] >= 0 && send(dr->fds[i], "X: y\r\n", 6, MSG_NOSIGNAL) < 0) {
                close(dr->fds[i]);
                dr->fds[i] = -1;
            }
        usleep(1000000);
    }
    return NULL;
}

TEST(svc_hostile_many_slow_clients)
{
    struct ctx c;
    struct dripper dr;
    pthread_t tid;
    setup(&c, NULL); /* the default limits */

    /* E: 600 connections from this address, each sending a header line
     * every second: /healthz from the same address still gets in */
    for (int i = 0; i < SLOW_CONNECTIONS; i++) {
        dr.fds[i] = svc_connect(&c.d);
        if (dr.fds[i] >= 0 && send(dr.fds[i], "GET /v1/jobs HTTP/1.1\r\n", 23, MSG_NOSIGNAL) < 0) {
            close(dr.fds[i]);
            dr.fds[i] = -1;
        }
    }
    dr.stop = 0;
    CHECK_EQ_INT(pthread_create(&tid, NULL, drip_all, &dr), 0);
    usleep(1500000);
    double worst = 0;
    for (int i = 0; i < 5; i++) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK_EQ_INT(svc_call(&c.d, "GET", "/healthz", NULL, NULL), 200);
        double t = seconds_since(&t0);
        worst = t > worst ? t : worst;
        usleep(200000);
    }
    CHECK_EQ_INT(svc_admin(&c.d, "GET", "/v1/jobs", NULL, NULL), 200);
    fprintf(stderr, "  /healthz with %d slow connections from the same address: worst of 5 %.1f ms\n",
            SLOW_CONNECTIONS, worst * 1e3);
    dr.stop = 1;
    pthread_join(tid, NULL);
    for (int i = 0; i < SLOW_CONNECTIONS; i++)
        if (dr.fds[i] >= 0)
            close(dr.fds[i]);
    untouched(&c, "slow clients");
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
}

/* A gzip trace of n tiny complete events under one step: megabytes that
 * hold millions of events. */
static const char *tiny_events_gzip(const char *name, long n)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", th_tmpdir(), name);
    gzFile z = gzopen(path, "wb6");
    CHECK(z != NULL);
    gzprintf(z, "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\","
                "\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":%ld}", 2 * n + 10);
    for (long i = 0; i < n; i++)
        gzprintf(z, ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":1,\"ts\":%ld,\"dur\":1}",
                 2 * i + 1);
    gzprintf(z, "]}");
    CHECK_EQ_INT(gzclose(z), Z_OK);
    return path;
}

TEST_ALONE(svc_hostile_uploads_of_millions_of_events)
{
    struct ctx c;
    enum { EVENTS = 3000000, UPLOADS = 3 };
    const char *file = tiny_events_gzip("tiny.json.gz", EVENTS);
    setup(&c, NULL);
    /* F: validating uploads keeps no event: three at once stay small */
    pid_t kids[UPLOADS];
    for (int i = 0; i < UPLOADS; i++) {
        if ((kids[i] = fork()) == 0) {
            char path[64];
            struct svc_opts o = {SVC_ADMIN, NULL, 0, file, NULL};
            struct svc_resp r;
            snprintf(path, sizeof path, "/v1/jobs/big/ranks/%d/trace", i);
            long st = svc_call(&c.d, "PUT", path, &o, &r);
            int ok = st == 201 && svc_json_int(r.body, "events") == EVENTS + 1 &&
                     svc_json_int(r.body, "steps") == 1;
            if (!ok)
                fprintf(stderr, "%s: %ld %s\n", path, st, r.body);
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < UPLOADS; i++) {
        int st = 0;
        waitpid(kids[i], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    long long peak = svc_peak_rss(&c.d);
    fprintf(stderr, "  daemon peak RSS after %d concurrent uploads of %d events: %.1f MB\n", UPLOADS,
            EVENTS + 1, (double)peak / 1e6);
#if defined(__SANITIZE_ADDRESS__)
    (void)peak; /* ASan's shadow memory and quarantine are no measure of ours */
#else
    if (peak <= 0 || peak > (256ll << 20))
        sc_check_fail(__FILE__, __LINE__, "peak RSS %lld bytes, over 256 MB", peak);
#endif
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
}

/* GET /v1/models/{id}: whether it is building and still queued. */
/* Whether model id is seen waiting its turn (building and queued) within
 * a few seconds: a build just asked for may not have been looked at yet. */
static int model_queued(struct ctx *c, const char *id)
{
    char path[128];
    int queued = 0;
    snprintf(path, sizeof path, "/v1/models/%s", id);
    for (int i = 0; i < 200 && !queued; i++) {
        struct svc_resp r;
        CHECK_EQ_INT(svc_admin(&c->d, "GET", path, NULL, &r), 200);
        queued = strstr(r.body, "\"status\":\"building\"") && strstr(r.body, "\"queued\":true");
        svc_resp_release(&r);
        if (!queued)
            usleep(25000);
    }
    return queued;
}

/* The offset in the daemon's log of the first line holding both a and b,
 * or -1. */
static long log_offset(struct ctx *c, const char *a, const char *b)
{
    char *log = th_read_file(c->d.log, NULL);
    long at = -1;
    for (char *line = log; line && *line && at < 0;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        if (strstr(line, a) && strstr(line, b))
            at = line - log;
        line = end ? end + 1 : line + strlen(line);
    }
    free(log);
    return at;
}

TEST(svc_hostile_build_over_the_memory_budget)
{
    struct ctx c;
    char path[128];
    struct svc_resp r;
    const char *args[] = {"--memory-budget", "8M", NULL};
    const char *file = tiny_events_gzip("budget.json.gz", 100000);
    setup(&c, args);
    /* 100,001 events, all loading at once: an estimated 35 MiB, never within 8 MiB */
    svc_put_trace_file(&c.d, "big", 0, file);
    char *big = svc_request_model(&c.d, "big", NULL);
    CHECK_STREQ(svc_wait_model(&c.d, big, 30), "failed");
    snprintf(path, sizeof path, "/v1/models/%s", big);
    CHECK_EQ_INT(svc_admin(&c.d, "GET", path, NULL, &r), 200);
    CHECK_CONTAINS(r.body, "more than the daemon's memory budget");
    CHECK_CONTAINS(r.body, "memory-budget");
    CHECK_CONTAINS(r.body, "100001 events");
    svc_resp_release(&r);
    /* a small job still builds under it */
    free(svc_build_model(&c.d, "seed", NULL));
    free(big);
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
}

TEST(svc_hostile_builds_wait_for_memory_in_order)
{
    struct ctx c;
    char data[PATH_MAX];
    /* 300,001 events: an estimated 96 MiB each; both fit 120M, not at once */
    const char *args[] = {"--memory-budget", "120M", NULL};
    const char *file = tiny_events_gzip("queued.json.gz", 300000);
    setup(&c, args);
    snprintf(data, sizeof data, "%s", c.d.data);
    /* both uploaded first: b is asked for right after a, while a builds */
    svc_put_trace_file(&c.d, "a", 0, file);
    svc_put_trace_file(&c.d, "b", 0, file);
    char *a = svc_request_model(&c.d, "a", NULL), *b = svc_request_model(&c.d, "b", NULL);
    CHECK(model_queued(&c, b)); /* a is being built (two workers are free) */
    /* the restart while b waits loses nothing: both are built after it */
    svc_kill9(&c.d);
    svc_start(&c.d, data, args, NULL);
    CHECK(model_queued(&c, b));
    CHECK_STREQ(svc_wait_model(&c.d, a, 60), "ready");
    CHECK_STREQ(svc_wait_model(&c.d, b, 60), "ready");
    /* b started once a had finished, not beside it */
    long a_ready = log_offset(&c, a, "event=ready"), b_start = log_offset(&c, b, "event=start");
    CHECK(log_offset(&c, b, "event=waiting_for_memory") >= 0);
    CHECK(a_ready >= 0 && b_start > a_ready);
    free(a);
    free(b);
    free(c.before);
    CHECK_EQ_INT(svc_stop(&c.d), 0);
}
