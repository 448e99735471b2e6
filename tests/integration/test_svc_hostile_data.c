/* tests/integration/test_svc_hostile_data.c: what a caller with a valid
 * token can store, and what a stored row can do to the routes that read
 * it. Numbers no job has are refused on the way in naming the field (422);
 * a row that cannot be rendered (written to the catalog by hand, or by an
 * older daemon) is left out of its list, counted and reported by
 * `stepcastd --check`, never a 503 for the whole list; every list is paged
 * by limit and cursor; a read token stores nothing and is refused by every
 * write route; a token stores at most max-stored-per-token rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "api/routes.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

static char *token(const struct svc_daemon *d, const char *scope)
{
    char body[64];
    struct svc_resp r;
    snprintf(body, sizeof body, "{\"scope\":\"%s\"}", scope);
    REQUIRE(svc_admin(d, "POST", "/v1/tokens", body, &r) == 201);
    char *t = strdup(svc_json_str(r.body, "token"));
    svc_resp_release(&r);
    return t;
}

static json_t *get_json(const struct svc_daemon *d, const char *path, long want)
{
    struct svc_resp r;
    long st = svc_admin(d, "GET", path, NULL, &r);
    if (st != want)
        sc_check_fail(__FILE__, __LINE__, "GET %s: want %ld, got %ld %s", path, want, st, r.body ? r.body : "");
    json_t *doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
    svc_resp_release(&r);
    return doc;
}

/* Run SQL on the catalog of a stopped (or running: WAL) daemon. */
static void catalog_exec(const struct svc_daemon *d, const char *sql)
{
    char db[PATH_MAX + 16];
    sqlite3 *s = NULL;
    snprintf(db, sizeof db, "%s/catalog.db", d->data);
    REQUIRE(sqlite3_open(db, &s) == SQLITE_OK);
    sqlite3_busy_timeout(s, 5000);
    char *msg = NULL;
    if (sqlite3_exec(s, sql, NULL, NULL, &msg) != SQLITE_OK)
        sc_check_fail(__FILE__, __LINE__, "%s: %s", sql, msg ? msg : "?");
    sqlite3_free(msg);
    sqlite3_close(s);
}

static long long catalog_count(const struct svc_daemon *d, const char *sql)
{
    char db[PATH_MAX + 16];
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    long long n = -1;
    snprintf(db, sizeof db, "%s/catalog.db", d->data);
    REQUIRE(sqlite3_open(db, &s) == SQLITE_OK);
    sqlite3_busy_timeout(s, 5000);
    if (sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(s);
    return n;
}

static void expect_422_naming(const struct svc_daemon *d, const char *method, const char *path, const char *body,
                              const char *field)
{
    struct svc_resp r;
    long st = svc_admin(d, method, path, body, &r);
    if (st != 422)
        sc_check_fail(__FILE__, __LINE__, "%s %s %s: want 422, got %ld %s", method, path, body, st,
                      r.body ? r.body : "");
    CHECK_CONTAINS(r.body ? r.body : "", field);
    svc_resp_release(&r);
}

/* Subnormal, zero, negative and absurd job metadata and config values: 422
 * naming the field, nothing stored (they were 201 and poisoned the fleet,
 * experiments and what-ifs that read them). */
TEST(svc_hostile_data_numbers_refused_naming_the_field)
{
    struct svc_daemon d;
    svc_start(&d, NULL, NULL, NULL);
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"steps_per_day\":1e-320}", "steps_per_day");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"steps_per_day\":1e300}", "steps_per_day");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"runtime_hours\":4.9e-324}", "runtime_hours");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"gpu_hour_usd\":-2}", "gpu_hour_usd");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"gpu_hour_usd\":0}", "gpu_hour_usd");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"config\":{\"tp\":1,\"pp\":1,\"dp\":1,\"layers\":1000000}}",
                      "config.layers");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"config\":{\"tp\":1,\"pp\":1,\"dp\":0}}", "config.dp");
    expect_422_naming(&d, "PUT", "/v1/jobs/j", "{\"config\":{\"moe\":{\"experts\":1000000}}}", "moe.experts");
    expect_422_naming(&d, "POST", "/v1/validations",
                      "{\"spec\":{\"model\":{\"layers\":2,\"hidden\":256,\"heads\":4,\"seq\":256}},"
                      "\"measured_step_ms\":1e-320,\"source\":\"t\"}",
                      "measured_step_ms");
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j", NULL, NULL), 404); /* nothing stored */
    /* the ranges' ends are taken */
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/j",
                           "{\"steps_per_day\":1e9,\"runtime_hours\":24,\"gpu_hour_usd\":0.0001,"
                           "\"config\":{\"tp\":8,\"pp\":4,\"dp\":2,\"layers\":32}}",
                           NULL),
                 201);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* One row of each list written as no daemon would write it (text that is
 * not UTF-8, a step time of 1e-320): each list answers 200 with the rest,
 * "skipped": 1 and a warning in the log; `stepcastd --check` names them.
 * Before, the first made GET /v1/jobs (and the others their lists) 503. */
TEST(svc_hostile_data_unrenderable_rows_skipped_and_checked)
{
    static const struct {
        const char *path, *key;
    } lists[] = {{"/v1/jobs", "jobs"},
                 {"/v1/models", "models"},
                 {"/v1/tokens", "tokens"},
                 {"/v1/calibrations", "calibrations"},
                 {"/v1/validations", "entries"},
                 {"/v1/experiments", "experiments"}};
    struct svc_daemon d;
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/good", "{\"steps_per_day\":100}", NULL), 201);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/experiments", "{\"baseline\":\"good\",\"variant\":\"good\"}", NULL), 201);
    CHECK_EQ_INT(svc_stop(&d), 0);
    catalog_exec(&d, "INSERT INTO jobs(id, description, created_ns, updated_ns) VALUES(CAST(X'ff41' AS TEXT), NULL, 1, 1);"
                     "INSERT INTO models(id, job, status, error, version, created_ns)"
                     " VALUES('m-bad', 'good', 'failed', CAST(X'c0af' AS TEXT), 'old', 1);"
                     "INSERT INTO tokens(id, name, scope, hash, created_ns)"
                     " VALUES('t-bad', CAST(X'fe' AS TEXT), 'read', 'nohash', 1);"
                     "INSERT INTO calibrations(name, gpu, source, sha256, document, created_ns)"
                     " VALUES('c-bad', CAST(X'ff' AS TEXT), 'traces', 'x', '{}', 1);"
                     "INSERT INTO validations(model, kind, measured_ms, predicted_ms, version, created_ns)"
                     " VALUES(NULL, 'estimate', 1e-320, 10.0, 'old', 1);"
                     "INSERT INTO experiments(id, baseline, variant, hypothesis, state, created_ns)"
                     " VALUES('e-bad', 'good', 'good', CAST(X'ff' AS TEXT), 'open', 1);");
    char *report = NULL;
    CHECK(svc_run_check(d.data, &report) != 0);
    CHECK_CONTAINS(report ? report : "", "job '");
    CHECK_CONTAINS(report ? report : "", "model 'm-bad'");
    CHECK_CONTAINS(report ? report : "", "token 't-bad'");
    CHECK_CONTAINS(report ? report : "", "calibration 'c-bad'");
    CHECK_CONTAINS(report ? report : "", "ledger entry '");
    CHECK_CONTAINS(report ? report : "", "experiment 'e-bad'");
    CHECK_CONTAINS(report ? report : "", "INCONSISTENT");
    free(report);
    svc_start(&d, d.data, NULL, NULL);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        json_t *doc = get_json(&d, lists[i].path, 200);
        CHECK(json_is_array(json_object_get(doc, lists[i].key))); /* with the good rows, if any */
        if (json_integer_value(json_object_get(doc, "skipped")) != 1)
            sc_check_fail(__FILE__, __LINE__, "GET %s: want \"skipped\":1", lists[i].path);
        json_decref(doc);
    }
    CHECK_EQ_INT(svc_stop(&d), 0);
    char *log = th_read_file(d.log, NULL);
    CHECK_CONTAINS(log ? log : "", "event=rows_skipped list=jobs rows=1");
    free(log);
}

/* ?limit and ?cursor on every list: the default page is 100, at most 1,000
 * (more is 422); following next_cursor reads each row once, also when
 * rows are inserted between pages (before the cursor: not seen; after
 * it: seen). Before, limit and cursor were unknown parameters (400) and a
 * list was every row. */
TEST(svc_hostile_data_lists_paged_by_cursor)
{
    static const char *const lists[] = {"/v1/jobs",         "/v1/models",      "/v1/tokens",
                                        "/v1/calibrations", "/v1/validations", "/v1/experiments"};
    struct svc_daemon d;
    char path[600];
    svc_start(&d, NULL, NULL, NULL);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        snprintf(path, sizeof path, "%s?limit=1001", lists[i]);
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 422);
        snprintf(path, sizeof path, "%s?limit=0", lists[i]);
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 400);
        snprintf(path, sizeof path, "%s?cursor=zz", lists[i]);
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 400);
        snprintf(path, sizeof path, "%s?limit=1000", lists[i]);
        json_t *doc = get_json(&d, path, 200);
        CHECK(json_is_null(json_object_get(doc, "next_cursor")));
        json_decref(doc);
    }
    for (int i = 0; i < 105; i++) {
        snprintf(path, sizeof path, "/v1/jobs/j%03d", i + 10);
        CHECK_EQ_INT(svc_admin(&d, "PUT", path, NULL, NULL), 201);
    }
    json_t *doc = get_json(&d, "/v1/jobs", 200);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 100);
    CHECK(json_is_string(json_object_get(doc, "next_cursor")));
    json_decref(doc);

    /* pages of 40, with a job before the cursor and one after it put between pages */
    char seen[200] = {0};
    int pages = 0, rows = 0;
    snprintf(path, sizeof path, "/v1/jobs?limit=40");
    for (;;) {
        doc = get_json(&d, path, 200);
        json_t *row;
        size_t k;
        json_array_foreach (json_object_get(doc, "jobs"), k, row) {
            const char *id = json_string_value(json_object_get(row, "id"));
            int n = id && id[0] == 'j' ? (int)strtol(id + 1, NULL, 10) : -1;
            if (n < 0 || n >= 200 || seen[n]++)
                sc_check_fail(__FILE__, __LINE__, "job %s read twice or unknown", id ? id : "?");
            rows++;
        }
        const char *next = json_string_value(json_object_get(doc, "next_cursor"));
        if (pages++ == 0) {
            CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/j000", NULL, NULL), 201); /* before the cursor */
            CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/j199", NULL, NULL), 201); /* after it */
        }
        if (!next) {
            json_decref(doc);
            break;
        }
        snprintf(path, sizeof path, "/v1/jobs?limit=40&cursor=%s", next);
        json_decref(doc);
        REQUIRE(pages < 10);
    }
    CHECK_EQ_INT(pages, 3);
    CHECK_EQ_INT(rows, 106);
    CHECK(!seen[0] && seen[199]);

    /* lists by (created, id): tokens; the ledger's MAPE stays over every entry */
    for (int i = 0; i < 4; i++)
        free(token(&d, "read"));
    doc = get_json(&d, "/v1/tokens?limit=2", 200);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "tokens")), 2);
    snprintf(path, sizeof path, "/v1/tokens?limit=2&cursor=%s", json_string_value(json_object_get(doc, "next_cursor")));
    json_decref(doc);
    doc = get_json(&d, path, 200);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "tokens")), 2);
    json_decref(doc);
    CHECK_EQ_INT(svc_stop(&d), 0);
    catalog_exec(&d, "INSERT INTO validations(model, kind, measured_ms, predicted_ms, version, created_ns)"
                     " VALUES(NULL, 'estimate', 10, 11, 'v', 1), (NULL, 'estimate', 10, 12, 'v', 2),"
                     " (NULL, 'estimate', 10, 9, 'v', 3);");
    svc_start(&d, d.data, NULL, NULL);
    doc = get_json(&d, "/v1/validations?limit=2", 200);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "entries")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "mape"), "n")), 3);
    snprintf(path, sizeof path, "/v1/validations?limit=2&cursor=%s",
             json_string_value(json_object_get(doc, "next_cursor")));
    json_decref(doc);
    doc = get_json(&d, path, 200);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "entries")), 1);
    CHECK(json_is_null(json_object_get(doc, "next_cursor")));
    CHECK(!json_object_get(doc, "mape")); /* the first page has the summary */
    json_decref(doc);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* A plan of thousands of combinations: planned in the background, kept. */
static const char larger[] = "{\"spec\":{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                             "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"}},"
                             "\"gpus\":16,\"top\":5}";

/* The route table's path with its parameters filled. */
static void fill_path(const char *tmpl, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 8 < n;) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            k += (size_t)snprintf(out + k, n - k, "%s", strncmp(p, "{rank}", 6) ? "x1" : "0");
            p = e ? e + 1 : p + strlen(p);
        } else {
            out[k++] = *p++;
        }
    }
    out[k] = '\0';
}

/* A read token is 403 on every route of the table that needs write or
 * admin, whatever the body; its inline plans store nothing, its plans in
 * the background are 403. Before, DELETE /v1/plans/{id} took a read token
 * and every inline plan was a catalog row holding its body as sent (1 MB
 * of padding each). */
TEST(svc_hostile_data_read_token_stores_nothing)
{
    static const char small[] = "{\"spec\":{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":4096},"
                                "\"parallel\":{\"global_batch\":64,\"micro_batch\":1},\"cluster\":{\"gpu\":"
                                "\"h100-sxm\"},\"options\":{\"zero_stage\":1}},\"gpus\":16,\"top\":3}";
    struct svc_daemon d;
    struct svc_resp r;
    char path[256];
    int routes = 0;
    svc_start(&d, NULL, NULL, NULL);
    char *reader = token(&d, "read"), *writer = token(&d, "write");
    for (int op = 0; op < API_OP_COUNT; op++) {
        const struct api_op_info *o = api_op_info((enum api_op)op);
        if (o->scope < API_SCOPE_WRITE)
            continue;
        fill_path(o->path, path, sizeof path);
        long st = svc_call_as(&d, reader, o->method, path, "{}", &r);
        if (st != 403 || strcmp(svc_error_code(&r), "forbidden"))
            sc_check_fail(__FILE__, __LINE__, "%s %s with a read token: want 403 forbidden, got %ld %s", o->method,
                          path, st, r.body ? r.body : "");
        svc_resp_release(&r);
        routes++;
    }
    CHECK(routes >= 15);

    /* an inline plan padded to 900 KB: answered, nothing kept */
    size_t pad = 900 * 1000, n = strlen(small);
    char *padded = malloc(n + pad + 1);
    REQUIRE(padded);
    memcpy(padded, small, n - 1);
    memset(padded + n - 1, ' ', pad);
    memcpy(padded + n - 1 + pad, "}", 2);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(svc_call_as(&d, reader, "POST", "/v1/plans", padded, &r), 200);
        CHECK(!svc_json_str(r.body, "id")[0]); /* no id: nothing to GET later */
        svc_resp_release(&r);
    }
    CHECK_EQ_INT(catalog_count(&d, "SELECT COUNT(*) FROM plans"), 0);
    /* in the background: a write token's, kept compact */
    CHECK_EQ_INT(svc_call_as(&d, reader, "POST", "/v1/plans", larger, &r), 403);
    CHECK_CONTAINS(r.body, "write token");
    svc_resp_release(&r);
    n = strlen(larger);
    memcpy(padded, larger, n - 1);
    memset(padded + n - 1, ' ', pad);
    memcpy(padded + n - 1 + pad, "}", 2);
    REQUIRE(svc_call_as(&d, writer, "POST", "/v1/plans", padded, &r) == 202);
    json_t *done = svc_wait_plan(&d, svc_json_str(r.body, "id"));
    svc_resp_release(&r);
    CHECK(done != NULL);
    json_decref(done);
    CHECK_EQ_INT(catalog_count(&d, "SELECT COUNT(*) FROM plans"), 1);
    CHECK(catalog_count(&d, "SELECT MAX(LENGTH(request)) FROM plans") < 1000);
    free(padded);
    free(reader);
    free(writer);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* --max-stored-per-token 3: a token's fourth job, upload to a new job,
 * ledger entry, experiment or background plan is 413 naming the limit, and nothing is
 * stored; replacing what it has is not growth; another token has its own
 * room; deleting makes room again. */
TEST(svc_hostile_data_stored_rows_limited_per_token)
{
    static const char *const args[] = {"--max-stored-per-token", "3", NULL};
    static const char entry[] = "{\"spec\":{\"model\":{\"layers\":2,\"hidden\":256,\"heads\":4,\"seq\":256},"
                                "\"cluster\":{\"gpu\":\"h100-sxm\"}},\"measured_step_ms\":5,\"source\":\"t\"}";
    struct svc_daemon d;
    struct svc_resp r;
    size_t n;
    svc_start(&d, NULL, args, NULL);
    char *w = token(&d, "write"), *w2 = token(&d, "write");
    CHECK_EQ_INT(svc_call_as(&d, w, "PUT", "/v1/jobs/a", "{}", NULL), 201);
    CHECK_EQ_INT(svc_call_as(&d, w, "PUT", "/v1/jobs/b", "{}", NULL), 201);
    CHECK_EQ_INT(svc_call_as(&d, w, "POST", "/v1/validations", entry, NULL), 201);
    CHECK_EQ_INT(svc_call_as(&d, w, "PUT", "/v1/jobs/c", "{}", &r), 413);
    CHECK_CONTAINS(r.body, "max-stored-per-token 3");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, w, "POST", "/v1/validations", entry, NULL), 413);
    CHECK_EQ_INT(svc_call_as(&d, w, "POST", "/v1/experiments", "{\"baseline\":\"a\",\"variant\":\"b\"}", NULL), 413);
    CHECK_EQ_INT(svc_call_as(&d, w, "POST", "/v1/plans", larger, &r), 413);
    CHECK_CONTAINS(r.body, "max-stored-per-token 3");
    svc_resp_release(&r);
    char *trace = svc_small_trace(0, 3, 7, &n);
    struct svc_opts up = {w, trace, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/d/ranks/0/trace", &up, NULL), 413);
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/a/ranks/0/trace", &up, NULL), 201); /* a job it has */
    CHECK_EQ_INT(svc_call_as(&d, w, "PUT", "/v1/jobs/a", "{\"steps_per_day\":5}", NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/c", NULL, NULL), 404);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/d", NULL, NULL), 404);
    CHECK_EQ_INT(catalog_count(&d, "SELECT COUNT(*) FROM experiments"), 0);
    CHECK_EQ_INT(svc_call_as(&d, w2, "PUT", "/v1/jobs/c", "{}", NULL), 201);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/b", NULL, NULL), 200);
    CHECK_EQ_INT(svc_call_as(&d, w, "POST", "/v1/experiments", "{\"baseline\":\"a\",\"variant\":\"c\"}", NULL), 201);
    free(trace);
    free(w);
    free(w2);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The command line reads every page: `stepcast jobs --json` of 1,205 jobs
 * (two pages of 1,000 at most) lists each once. */
TEST(svc_hostile_data_cli_follows_cursors)
{
    struct svc_daemon d;
    svc_start(&d, NULL, NULL, NULL);
    catalog_exec(&d, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1205)"
                     " INSERT INTO jobs(id, description, created_ns, updated_ns) SELECT printf('j%04d', i), NULL, i, i"
                     " FROM n;");
    setenv("STEPCAST_SERVER", d.url, 1);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *argv[] = {(char *)th_build_path("stepcast"), "jobs", "--json", NULL};
    char *out = th_run_expect(argv, 0, "j1205", NULL);
    unsetenv("STEPCAST_SERVER");
    unsetenv("STEPCAST_TOKEN");
    json_t *doc = json_loads(out ? out : "", 0, NULL), *row;
    size_t i;
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 1205);
    json_array_foreach (json_object_get(doc, "jobs"), i, row) {
        char want[16];
        snprintf(want, sizeof want, "j%04zu", i + 1);
        if (strcmp(json_string_value(json_object_get(row, "id")), want))
            sc_check_fail(__FILE__, __LINE__, "jobs[%zu] is %s, not %s", i, json_string_value(json_object_get(row, "id")),
                          want);
    }
    CHECK(!json_object_get(doc, "next_cursor"));
    json_decref(doc);
    free(out);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The rows of every page of a ranked list (path ends in its query),
 * following next_cursor: their `key` values into seen[], in order, with
 * their ranks checked to run 1, 2, ... without a gap, their "skipped"
 * summed; the pages' count. */
static int ranked_pages(const struct svc_daemon *d, const char *path, const char *key, char seen[][64], size_t *n,
                        size_t cap, long long *skipped)
{
    char url[1024], cursor[512] = "";
    int pages = 0;
    *n = 0;
    *skipped = 0;
    do {
        snprintf(url, sizeof url, "%s%s%s", path, cursor[0] ? "&cursor=" : "", cursor);
        json_t *doc = get_json(d, url, 200), *row;
        size_t i;
        REQUIRE(doc);
        json_array_foreach (json_object_get(doc, "jobs"), i, row) {
            CHECK_EQ_INT(json_integer_value(json_object_get(row, "rank")), (long long)*n + 1);
            if (*n < cap)
                snprintf(seen[(*n)++], 64, "%s", json_string_value(json_object_get(row, key)));
        }
        *skipped += json_integer_value(json_object_get(doc, "skipped"));
        const char *next = json_string_value(json_object_get(doc, "next_cursor"));
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        json_decref(doc);
        pages++;
    } while (cursor[0] && pages < 100);
    return pages;
}

static int distinct(char seen[][64], size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (!strcmp(seen[i], seen[j]))
                return 0;
    return 1;
}

/* GET /v1/fleet and /v1/opportunities, the ranked lists, are paged like
 * every list: 151 jobs with a ready model are two pages of the default
 * 100, ranks 1 to 151 with nothing repeated or lost; `top` is limit's
 * older name; a job whose newest ready model's opportunities cannot be
 * read is left out and counted ("skipped": 1), not a 5xx. Before, both
 * answered at most `top` (1,000) rows, with no cursor and no count. */
TEST(svc_hostile_data_fleet_lists_paged_and_skipped)
{
    enum { JOBS = 150 };
    static char seen[JOBS + 8][64];
    struct svc_daemon d;
    char dir[4096], file[4200], sql[2048];
    size_t n;
    long long skipped;
    const char *args[] = {"--ranks", "2", "--steps", "4", "--seed", "9", NULL};
    svc_gentrace("fleet-pages", args, dir);
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/j0", "{\"steps_per_day\":1000}", NULL), 201);
    for (int r = 0; r < 2; r++) {
        snprintf(file, sizeof file, "%s/rank%d.json.gz", dir, r);
        svc_put_trace_file(&d, "j0", r, file);
    }
    char *model = svc_build_model(&d, "j0", NULL);
    json_decref(get_json(&d, "/v1/fleet", 200)); /* its opportunities are kept */
    CHECK_EQ_INT(svc_stop(&d), 0);
    /* 150 more jobs whose ready models are j0's (as a restore would leave
     * them), and one whose kept opportunities are not JSON */
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)"
             " INSERT INTO jobs(id, description, created_ns, updated_ns)"
             " SELECT printf('f%%03d', i), '{\"steps_per_day\":1000}', 1, 1 FROM n;"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)"
             " INSERT INTO models(id, job, status, step_marker, steps, version, summary, created_ns, finished_ns,"
             " opportunities, opportunities_version, fold)"
             " SELECT printf('m-f%%03d', i), printf('f%%03d', i), 'ready', m.step_marker, m.steps, m.version,"
             " m.summary, m.created_ns, m.finished_ns, m.opportunities, m.opportunities_version, m.fold"
             " FROM n, models m WHERE m.id = '%s';"
             "INSERT INTO jobs(id, description, created_ns, updated_ns) VALUES('jbad', NULL, 1, 1);"
             "INSERT INTO models(id, job, status, version, created_ns, opportunities, opportunities_version)"
             " SELECT 'm-bad', 'jbad', 'ready', version, created_ns, '{not json', opportunities_version"
             " FROM models WHERE id = '%s';",
             JOBS, JOBS, model, model);
    catalog_exec(&d, sql);
    svc_start(&d, d.data, NULL, NULL);
    static const struct {
        const char *path, *key;
    } lists[] = {{"/v1/fleet?since=2000-01-01", "job"}, {"/v1/opportunities?limit=100", "model"}};
    for (size_t l = 0; l < 2; l++) {
        int pages = ranked_pages(&d, lists[l].path, lists[l].key, seen, &n, JOBS + 8, &skipped);
        fprintf(stderr, "  %s: %d pages, %zu rows, %lld skipped\n", lists[l].path, pages, n, skipped);
        CHECK_EQ_INT(pages, 2);
        CHECK_EQ_INT((long long)n, JOBS + 1);
        CHECK(distinct(seen, n));
        CHECK_EQ_INT(skipped, 1);
    }
    /* top: the page's size under its older name */
    json_t *doc = get_json(&d, "/v1/fleet?top=5", 200);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 5);
    CHECK(json_is_string(json_object_get(doc, "next_cursor")));
    json_decref(doc);
    json_decref(get_json(&d, "/v1/opportunities?top=5&limit=5", 400));
    json_decref(get_json(&d, "/v1/fleet?limit=1001", 422));
    json_decref(get_json(&d, "/v1/fleet?cursor=zz", 400));
    CHECK_EQ_INT(svc_stop(&d), 0);
    char *log = th_read_file(d.log, NULL);
    CHECK_CONTAINS(log ? log : "", "event=rows_skipped list=fleet rows=1");
    free(log);
    free(model);
}
