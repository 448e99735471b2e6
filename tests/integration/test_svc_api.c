/* tests/integration/test_svc_api.c: the REST API of a real stepcastd:
 * health and metrics, tokens and scopes, jobs, uploads, OpenAPI, CORS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "api/routes.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* Create a token of a scope; its secret into out. */
static void make_token(const struct svc_daemon *d, const char *scope, char *out, size_t n, char *id,
                       size_t idn)
{
    char body[128];
    struct svc_resp r;
    snprintf(body, sizeof body, "{\"scope\":\"%s\",\"name\":\"t-%s\"}", scope, scope);
    CHECK_EQ_INT(svc_admin(d, "POST", "/v1/tokens", body, &r), 201);
    snprintf(out, n, "%s", svc_json_str(r.body, "token"));
    if (id)
        snprintf(id, idn, "%s", svc_json_str(r.body, "id"));
    svc_resp_release(&r);
}

TEST(svc_health_version_metrics)
{
    struct svc_daemon d;
    struct svc_resp r;
    char *out = NULL;
    char *argv[] = {(char *)th_build_path("stepcastd"), "--version", NULL};
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    CHECK_STREQ(out, "stepcastd " STEPCAST_VERSION "\n");
    free(out);

    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "version"), STEPCAST_VERSION);
    CHECK_STREQ(svc_json_str(r.body, "status"), "ok");
    CHECK_CONTAINS(r.headers, "X-Request-Id: ");
    svc_resp_release(&r);
    size_t n;
    char *trace = svc_small_trace(0, 3, 1, &n);
    struct svc_opts up = {SVC_ADMIN, trace, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/m/ranks/0/trace", &up, NULL), 201);
    free(trace);
    CHECK_EQ_INT(svc_call(&d, "GET", "/v1/jobs", NULL, NULL), 401);
    CHECK_EQ_INT(svc_call(&d, "GET", "/metrics", NULL, &r), 200);
    CHECK_CONTAINS(r.headers, "text/plain; version=0.0.4");
    CHECK_CONTAINS(r.body, "stepcast_http_requests_total{replica=\"" SVC_REPLICA "\",route=\"getHealth\",status=\"200\"} 1\n");
    CHECK_CONTAINS(r.body, "stepcast_http_requests_total{replica=\"" SVC_REPLICA "\",route=\"listJobs\",status=\"401\"} 1\n");
    CHECK_CONTAINS(r.body, "stepcast_http_request_duration_seconds_bucket{replica=\"" SVC_REPLICA "\",route=\"putTrace\",le=\"+Inf\"} 1\n");
    CHECK_CONTAINS(r.body, "stepcast_upload_bytes_total{replica=\"" SVC_REPLICA "\"} ");
    CHECK_CONTAINS(r.body, "stepcast_uploads_total{replica=\"" SVC_REPLICA "\",result=\"created\"} 1\n");
    CHECK_CONTAINS(r.body, "stepcast_store_blobs{replica=\"" SVC_REPLICA "\"} 1\n");
    CHECK_CONTAINS(r.body, "stepcast_model_cache_hits_total{replica=\"" SVC_REPLICA "\"} 0\n");
    CHECK_CONTAINS(r.body, "stepcast_model_build_duration_seconds_count{replica=\"" SVC_REPLICA "\"} 0\n");
    CHECK_CONTAINS(r.body, "stepcast_heavy_requests_running{replica=\"" SVC_REPLICA "\"} 0\n");
    CHECK_CONTAINS(r.body, "stepcast_heavy_requests_queued{replica=\"" SVC_REPLICA "\"} 0\n");
    CHECK_CONTAINS(r.body, "stepcast_build_info{replica=\"" SVC_REPLICA "\",version=\"" STEPCAST_VERSION "\"} 1\n");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);

    /* ops-need-token: /healthz and /metrics need a read token */
    const char *args[] = {"--ops-need-token", "true", NULL};
    svc_start(&d, NULL, args, NULL);
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", NULL, NULL), 401);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/metrics", NULL, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_tokens_and_scopes)
{
    struct svc_daemon d;
    struct svc_resp r;
    char rd[128], wr[128], ad2[128], rd_id[80], ad2_id[80];
    svc_start(&d, NULL, NULL, NULL);

    CHECK_EQ_INT(svc_call_as(&d, NULL, "GET", "/v1/jobs", NULL, &r), 401);
    CHECK_STREQ(svc_error_code(&r), "unauthorized");
    CHECK_CONTAINS(r.headers, "WWW-Authenticate: Bearer");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, "not-a-real-token-000000", "GET", "/v1/jobs", NULL, &r), 401);
    svc_resp_release(&r);
    struct svc_opts basic = {NULL, NULL, 0, NULL, (const char *const[]){"Authorization: Basic YTpi", NULL}};
    CHECK_EQ_INT(svc_call(&d, "GET", "/v1/jobs", &basic, NULL), 401);

    make_token(&d, "read", rd, sizeof rd, rd_id, sizeof rd_id);
    make_token(&d, "write", wr, sizeof wr, NULL, 0);
    CHECK(strncmp(rd, "sct_", 4) == 0 && strlen(rd) == 44);
    CHECK_EQ_INT(svc_call_as(&d, rd, "GET", "/v1/jobs", NULL, NULL), 200);
    CHECK_EQ_INT(svc_call_as(&d, rd, "PUT", "/v1/jobs/j", "{}", &r), 403);
    CHECK_STREQ(svc_error_code(&r), "forbidden");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, rd, "POST", "/v1/jobs/j/models", NULL, NULL), 403);
    CHECK_EQ_INT(svc_call_as(&d, wr, "PUT", "/v1/jobs/j", "{}", NULL), 201);
    CHECK_EQ_INT(svc_call_as(&d, wr, "DELETE", "/v1/jobs/j", NULL, NULL), 403);
    CHECK_EQ_INT(svc_call_as(&d, wr, "POST", "/v1/tokens", "{\"scope\":\"admin\"}", NULL), 403);
    CHECK_EQ_INT(svc_call_as(&d, wr, "GET", "/v1/tokens", NULL, NULL), 403);
    CHECK_EQ_INT(svc_call_as(&d, rd, "GET", "/v1/tokens", NULL, NULL), 403);

    /* the list never shows secrets */
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/tokens", NULL, &r), 200);
    CHECK(strstr(r.body, "sct_") == NULL && strstr(r.body, SVC_ADMIN) == NULL);
    CHECK_CONTAINS(r.body, "\"scope\":\"read\"");
    svc_resp_release(&r);

    /* revoked tokens stop working */
    char path[128];
    snprintf(path, sizeof path, "/v1/tokens/%s", rd_id);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, &r), 200);
    CHECK(svc_json_str(r.body, "revoked")[0] != '\0');
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, rd, "GET", "/v1/jobs", NULL, &r), 401);
    CHECK_CONTAINS(r.body, "revoked");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/tokens/t-nosuch", NULL, NULL), 404);

    /* the last admin token cannot be revoked; with a second one it can */
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/tokens", NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    const char *boot = json_string_value(json_object_get(json_array_get(json_object_get(doc, "tokens"), 0), "id"));
    snprintf(path, sizeof path, "/v1/tokens/%s", boot);
    json_decref(doc);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, &r), 409);
    CHECK_STREQ(svc_error_code(&r), "conflict");
    svc_resp_release(&r);
    make_token(&d, "admin", ad2, sizeof ad2, ad2_id, sizeof ad2_id);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs", NULL, NULL), 401);
    CHECK_EQ_INT(svc_call_as(&d, ad2, "GET", "/v1/tokens", NULL, NULL), 200);
    CHECK_EQ_INT(svc_call_as(&d, ad2, "POST", "/v1/tokens", "{\"scope\":\"owner\"}", &r), 400);
    CHECK_STREQ(svc_error_code(&r), "invalid_json");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);

    /* after a restart: tokens persist, STEPCAST_ADMIN_TOKEN is not re-added
     * while an admin token exists */
    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(svc_call_as(&d, ad2, "GET", "/v1/tokens", NULL, NULL), 200);
    CHECK_EQ_INT(svc_call_as(&d, wr, "GET", "/v1/jobs", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs", NULL, NULL), 401);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_admin_token_file)
{
    struct svc_daemon d;
    struct stat st;
    char file[PATH_MAX];
    const char *env[] = {"STEPCAST_ADMIN_TOKEN=", NULL};
    const char *args[] = {"--admin-token-file", file, NULL};
    snprintf(file, sizeof file, "%s/admin.token", th_tmpdir());

    /* no file yet: a fresh admin token is written there, readable by the owner only */
    svc_start(&d, NULL, args, env);
    char *secret = th_read_file(file, NULL);
    CHECK(secret && strncmp(secret, "sct_", 4) == 0 && strlen(secret) == 45);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
    if (secret)
        secret[strcspn(secret, "\n")] = '\0';
    CHECK_EQ_INT(svc_call_as(&d, secret, "GET", "/v1/tokens", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/tokens", NULL, NULL), 401);
    CHECK_EQ_INT(svc_stop(&d), 0);

    /* a restart keeps the token and leaves the file as it is */
    svc_start(&d, d.data, args, env);
    char *again = th_read_file(file, NULL);
    CHECK(again && secret && strncmp(again, secret, strlen(secret)) == 0);
    CHECK_EQ_INT(svc_call_as(&d, secret, "GET", "/v1/tokens", NULL, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
    free(again);
    free(secret);
}

TEST(svc_jobs_crud)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/llm-7b", "{\"config\":{\"tp\":2,\"pp\":2,\"dp\":4},\"hardware\":\"h100-sxm\"}", &r), 201);
    CHECK_CONTAINS(r.body, "\"config\":{\"dp\":4,\"pp\":2,\"tp\":2}");
    CHECK_CONTAINS(r.body, "\"hardware\":\"h100-sxm\"");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/llm-7b", "{\"config\":{\"tp\":8}}", &r), 200);
    CHECK(strstr(r.body, "hardware") == NULL);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/bare", NULL, NULL), 201);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/bad", "{\"config\":{\"tp\":-1}}", &r), 422);
    CHECK_STREQ(svc_error_code(&r), "unprocessable");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/bad", NULL, &r), 404);
    CHECK_STREQ(svc_error_code(&r), "not_found");
    svc_resp_release(&r);

    size_t n;
    char *t0 = svc_small_trace(0, 4, 1, &n);
    struct svc_opts up = {SVC_ADMIN, t0, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/llm-7b/ranks/0/trace", &up, NULL), 201);
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/other/ranks/0/trace", &up, NULL), 201); /* same bytes */
    free(t0);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs", NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 3);
    json_decref(doc);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/llm-7b", NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "n_ranks"), 1);
    CHECK_CONTAINS(r.body, "\"traces\":[{\"rank\":0,\"sha256\":\"");
    svc_resp_release(&r);
    /* the blob is shared: deleting one job frees nothing, the other frees it */
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/llm-7b", NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "blobs_freed"), 0);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/other", NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "blobs_freed"), 1);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/llm-7b", NULL, NULL), 404);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/jobs/llm-7b", NULL, NULL), 404);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
}

TEST(svc_upload_rules)
{
    struct svc_daemon d;
    struct svc_resp r;
    size_t na, nb, nc;
    char *a = svc_small_trace(2, 3, 1, &na), *b = svc_small_trace(2, 5, 2, &nb);
    char *other_rank = svc_small_trace(5, 3, 3, &nc);
    char sha_a[80], path[256], model[80];
    svc_start(&d, NULL, NULL, NULL);

    struct svc_opts up = {SVC_ADMIN, a, na, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/2/trace", &up, &r), 201);
    CHECK_EQ_INT(svc_json_int(r.body, "bytes"), (long long)na);
    CHECK_EQ_INT(svc_json_int(r.body, "events"), 10);
    CHECK_EQ_INT(svc_json_int(r.body, "steps"), 1);
    snprintf(sha_a, sizeof sha_a, "%s", svc_json_str(r.body, "sha256"));
    CHECK_EQ_INT(strlen(sha_a), 64);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/2/trace", &up, &r), 200); /* identical */
    CHECK_STREQ(svc_json_str(r.body, "sha256"), sha_a);
    svc_resp_release(&r);

    /* a model pins the traces it was built from */
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/j/models", NULL, &r), 202);
    snprintf(model, sizeof model, "%s", svc_json_str(r.body, "model"));
    CHECK_CONTAINS(r.headers, "Location: /v1/models/");
    svc_resp_release(&r);
    CHECK_STREQ(svc_wait_model(&d, model, 30), "ready");

    struct svc_opts upb = {SVC_ADMIN, b, nb, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/2/trace", &upb, &r), 409);
    CHECK_STREQ(svc_error_code(&r), "conflict");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/2/trace?replace=maybe", &upb, NULL), 400);
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/2/trace?replace=true", &upb, &r), 201);
    CHECK(strcmp(svc_json_str(r.body, "sha256"), sha_a) != 0);
    svc_resp_release(&r);
    snprintf(path, sizeof path, "%s/blobs/%.2s/%s", d.data, sha_a, sha_a);
    CHECK(access(path, R_OK) == 0); /* still pinned by the model */
    snprintf(path, sizeof path, "/v1/models/%s", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "status"), "ready");
    CHECK_CONTAINS(r.body, "\"summary\":{\"stepcast_version\":\"" STEPCAST_VERSION "\"");
    CHECK_CONTAINS(r.body, "\"version\":\"" STEPCAST_VERSION "\"");
    svc_resp_release(&r);
    /* deleting the model frees the old trace's blob and its built model's */
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "blobs_freed"), 2);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 404);

    /* a trace that names another rank */
    struct svc_opts upc = {SVC_ADMIN, other_rank, nc, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/3/trace", &upc, &r), 422);
    CHECK_STREQ(svc_error_code(&r), "unprocessable");
    svc_resp_release(&r);
    /* gzip, detected by content */
    const char *gz = th_write_gzip("t.json.gz", other_rank, nc);
    struct svc_opts upg = {SVC_ADMIN, NULL, 0, gz, (const char *const[]){"Content-Type: text/plain", NULL}};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/5/trace", &upg, &r), 201);
    CHECK_EQ_INT(svc_json_int(r.body, "events"), 10);
    svc_resp_release(&r);
    /* building needs traces */
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/empty", NULL, NULL), 201);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/empty/models", NULL, &r), 409);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/nosuch/models", NULL, NULL), 404);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/j/models", "{\"steps\":1}", NULL), 400);
    /* a model with a step marker that matches nothing still builds */
    free(svc_build_model(&d, "j", "{\"step_marker\":\"aten::mm\"}"));
    snprintf(path, sizeof path, "/v1/models?job=j");
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"step_marker\":\"aten::mm\"");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/models?job=../x", NULL, NULL), 400);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j/ranks/5/trace", NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "rank"), 5);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    free(a);
    free(b);
    free(other_rank);
}

/* "/v1/jobs/{job}/ranks/{rank}/trace" -> "/v1/jobs/j/ranks/0/trace" */
static void concrete(const char *tmpl, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 8 < n;) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            const char *v = !strncmp(p, "{rank}", 6) ? "0" : !strncmp(p, "{job}", 5) ? "j"
                            : !strncmp(p, "{file}", 6) ? "app.js" : "x-1";
            o += (size_t)snprintf(out + o, n - o, "%s", v);
            p = e + 1;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

TEST(svc_openapi_matches_router)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/openapi.json", NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL), *paths = json_object_get(doc, "paths"), *item;
    const char *path;
    size_t ops = 0;
    CHECK(doc != NULL);
    CHECK_STREQ(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
    CHECK_STREQ(json_string_value(json_object_get(json_object_get(doc, "info"), "version")), STEPCAST_VERSION);
    /* every documented operation is served: without a token it is refused
     * as unauthorized (or answered), never "no route" or "wrong method" */
    json_object_foreach (paths, path, item) {
        const char *method;
        json_t *op;
        json_object_foreach (item, method, op) {
            char url[256], up[16];
            struct svc_resp o;
            size_t k;
            for (k = 0; method[k] && k < sizeof up - 1; k++)
                up[k] = (char)(method[k] & ~0x20);
            up[k] = '\0';
            concrete(path, url, sizeof url);
            svc_call(&d, up, url, NULL, &o);
            CHECK(o.status != 404 && o.status != 405);
            if (json_object_get(op, "security"))
                CHECK_EQ_INT(o.status, 401);
            svc_resp_release(&o);
            ops++;
        }
    }
    /* and every route of the router is documented */
    CHECK_EQ_INT(ops, API_OP_COUNT);
    for (int i = 0; i < API_OP_COUNT; i++) {
        const struct api_op_info *op = api_op_info((enum api_op)i);
        char m[16];
        size_t k;
        for (k = 0; op->method[k] && k < sizeof m - 1; k++)
            m[k] = (char)(op->method[k] | 0x20);
        m[k] = '\0';
        json_t *o = json_object_get(json_object_get(paths, op->path), m);
        CHECK(o != NULL);
        CHECK_STREQ(json_string_value(json_object_get(o, "operationId")), op->id);
    }
    /* the error codes are listed */
    CHECK(json_array_size(json_object_get(json_object_get(doc, "info"), "x-error-codes")) >= 15);
    /* stepcastd --print-openapi (docs/api.md's source) prints what is served */
    char *print[] = {(char *)th_build_path("stepcastd"), "--print-openapi", NULL};
    char *printed = th_run_expect(print, 0, "\"paths\"", NULL);
    json_t *pdoc = json_loads(printed ? printed : "", 0, NULL);
    CHECK(pdoc && json_equal(pdoc, doc));
    json_decref(pdoc);
    free(printed);
    json_decref(doc);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* stepcastd --print-settings (docs/configuration.md's source): every
 * setting --print-config prints, in its order, with its flag taking the
 * default it names as the value --print-config then shows. */
TEST(svc_print_settings_is_the_settings_table)
{
    char *daemon = (char *)th_build_path("stepcastd");
    char *print[] = {daemon, "--print-settings", NULL};
    char *text = th_run_expect(print, 0, NULL, NULL);
    json_t *table = json_loads(text ? text : "", 0, NULL), *s;
    free(text);
    REQUIRE(json_array_size(table) >= 20);
    char *config[] = {daemon, "--print-config", NULL};
    char *effective = th_run_expect(config, 0, NULL, NULL);
    REQUIRE(effective != NULL);
    const char *line = effective;
    size_t i;
    json_array_foreach (table, i, s) {
        const char *name = json_string_value(json_object_get(s, "name"));
        const char *flag = json_string_value(json_object_get(s, "flag"));
        REQUIRE(name != NULL && line != NULL);
        CHECK(strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ' ');
        CHECK(json_is_string(json_object_get(s, "env")) && json_is_string(json_object_get(s, "help")));
        if (flag && strcmp(json_string_value(json_object_get(s, "type")), "string") == 0) {
            char *def = (char *)json_string_value(json_object_get(s, "default")), want[512];
            char *one[] = {daemon, "--print-config", (char *)flag, def, NULL};
            snprintf(want, sizeof want, "%s = %s\n", name, def);
            free(th_run_expect(one, 0, want, NULL));
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    CHECK(line && *line == '\0');
    free(effective);
    json_decref(table);
}

TEST(svc_cors)
{
    struct svc_daemon d;
    struct svc_resp r;
    const char *args[] = {"--cors-origins", "https://dash.example, https://grafana.example", NULL};
    struct svc_opts ok = {NULL, NULL, 0, NULL, (const char *const[]){"Origin: https://dash.example", NULL}};
    struct svc_opts bad = {NULL, NULL, 0, NULL, (const char *const[]){"Origin: https://evil.example", NULL}};
    svc_start(&d, NULL, args, NULL);
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", &ok, &r), 200);
    CHECK_CONTAINS(r.headers, "Access-Control-Allow-Origin: https://dash.example");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/v1/jobs", &ok, &r), 401); /* errors carry it too */
    CHECK_CONTAINS(r.headers, "Access-Control-Allow-Origin: https://dash.example");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "OPTIONS", "/v1/jobs/x", &ok, &r), 204);
    CHECK_CONTAINS(r.headers, "Access-Control-Allow-Methods: PUT, GET, DELETE, OPTIONS");
    CHECK_CONTAINS(r.headers, "Access-Control-Allow-Headers: Authorization");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", &bad, &r), 200);
    CHECK(strstr(r.headers, "Access-Control-Allow-Origin") == NULL);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    /* none by default */
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", &ok, &r), 200);
    CHECK(strstr(r.headers, "Access-Control-Allow-Origin") == NULL);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
