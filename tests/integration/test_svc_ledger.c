/* tests/integration/test_svc_ledger.c: estimation over HTTP and the
 * validation ledger, against the real daemon: POST /v1/estimate equals
 * `stepcast estimate --json`, calibrations are kept by name across
 * restarts and a new one never serves a stale estimate, the ledger's
 * migration keeps the entries of an old store, MAPE and bands are the
 * ones computed here by hand, entries outlive their model, scopes hold. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <sqlite3.h>

#include "daemon/digest.h"
#include "daemon/store.h"
#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/pg_server.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* A small dense model on one NVLink domain, and one across two nodes
 * (where a calibration of the inter-node fabric matters). */
static const char spec_one_node[] =
    "{\"model\":{\"layers\":8,\"hidden\":1024,\"heads\":16,\"seq\":1024},"
    "\"parallel\":{\"tp\":2,\"dp\":4,\"micro_batch\":2,\"global_batch\":32},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"}}";

static char *spec_two_nodes(const char *profile)
{
    char *s = malloc(512);
    snprintf(s, 512,
             "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":1024},"
             "\"parallel\":{\"dp\":16,\"micro_batch\":1,\"global_batch\":16},"
             "\"cluster\":{\"gpu\":\"h100-sxm\"%s%s%s},\"options\":{\"overlap_grad_reduce\":false}}",
             profile ? ",\"profile\":\"" : "", profile ? profile : "", profile ? "\"" : "");
    return s;
}

static json_t *body_json(const struct svc_resp *r)
{
    return json_loads(r->body ? r->body : "", 0, NULL);
}

/* A token of the scope, made with the admin token. */
static char *make_token(const struct svc_daemon *d, const char *scope)
{
    char body[64];
    struct svc_resp r;
    snprintf(body, sizeof body, "{\"scope\":\"%s\"}", scope);
    CHECK_EQ_INT(svc_admin(d, "POST", "/v1/tokens", body, &r), 201);
    char *t = strdup(svc_json_str(r.body, "token"));
    svc_resp_release(&r);
    return t;
}

static double estimate_ms(const struct svc_daemon *d, const char *spec)
{
    struct svc_resp r;
    CHECK_EQ_INT(svc_admin(d, "POST", "/v1/estimate", spec, &r), 200);
    json_t *doc = body_json(&r);
    double ms = json_number_value(json_object_get(doc, "step_ms"));
    json_decref(doc);
    svc_resp_release(&r);
    return ms;
}

/* POST a nccl-tests output file as calibration `name`; the status. */
static long calibrate(const struct svc_daemon *d, const char *token, const char *name, const char *query,
                      const char *file, struct svc_resp *out)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/calibrations/nccl-tests?name=%s%s", name, query);
    struct svc_opts o = {token, NULL, 0, file, NULL};
    return svc_call(d, "POST", path, &o, out);
}

TEST(svc_estimate_over_http_equals_cli)
{
    struct svc_daemon d;
    struct svc_resp r;
    const char *spec = th_write_file("spec.json", spec_one_node, strlen(spec_one_node));
    char *argv[] = {(char *)th_build_path("stepcast"), "estimate", "--json", "--spec", (char *)spec, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    json_t *cli = json_loads(out ? out : "", 0, NULL);
    free(out);
    svc_start(&d, NULL, NULL, NULL);
    char *reader = make_token(&d, "read");
    for (int i = 0; i < 2; i++) { /* computed, then from the memo */
        CHECK_EQ_INT(svc_call_as(&d, reader, "POST", "/v1/estimate", spec_one_node, &r), 200);
        json_t *http = body_json(&r);
        CHECK(json_is_object(json_object_get(http, "band"))); /* the ledger is empty: how many it needs */
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(http, "band"), "needed")), 10);
        json_object_del(http, "band");
        CHECK(cli && http && json_equal(cli, http));
        json_decref(http);
        svc_resp_release(&r);
    }
    CHECK_EQ_INT(svc_admin(&d, "GET", "/metrics", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "stepcast_query_memo_total{replica=\"" SVC_REPLICA "\",result=\"hit\"} "); /* the metric is there */
    CHECK(!strstr(r.body, "stepcast_query_memo_total{replica=\"" SVC_REPLICA "\",result=\"hit\"} 0\n"));
    svc_resp_release(&r);
    /* the same as `stepcast --server URL estimate` */
    char env[128];
    snprintf(env, sizeof env, "STEPCAST_TOKEN=%s", reader);
    putenv(env);
    char *rargv[] = {(char *)th_build_path("stepcast"), "--server", d.url, "estimate", "--json", "--spec",
                     (char *)spec, NULL};
    CHECK_EQ_INT(th_run(rargv, &out, NULL), 0);
    json_t *remote = json_loads(out ? out : "", 0, NULL);
    json_object_del(remote, "band");
    CHECK(cli && remote && json_equal(cli, remote));
    json_decref(remote);
    free(out);
    unsetenv("STEPCAST_TOKEN");

    /* an invalid spec: 400 invalid_spec naming the field */
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", "{\"model\":{\"layers\":8,\"hidden\":1024,\"heads\":16,"
                                                        "\"seq\":1024},\"parallel\":{\"tp\":3},"
                                                        "\"cluster\":{\"gpu\":\"h100-sxm\"}}", &r), 400);
    CHECK_STREQ(svc_error_code(&r), "invalid_spec");
    CHECK_CONTAINS(r.body, "tp");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", "{\"model\":{\"layerz\":1}}", &r), 400);
    CHECK_CONTAINS(r.body, "model.layerz");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate?detail=atoms", spec_one_node, &r), 400);
    svc_resp_release(&r);
    /* a spec naming a calibration the server does not have */
    char *named = spec_two_nodes("nope");
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", named, &r), 400);
    CHECK_CONTAINS(r.body, "cluster.profile");
    svc_resp_release(&r);
    free(named);
    /* bodies over 1 MiB: 413 */
    size_t big = (1u << 20) + 16;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[big] = '\0';
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", huge, &r), 413);
    svc_resp_release(&r);
    free(huge);
    /* no token: 401; hardware needs read */
    CHECK_EQ_INT(svc_call_as(&d, NULL, "POST", "/v1/estimate", spec_one_node, NULL), 401);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/hardware", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"a100-sxm4-80gb\"");
    CHECK_CONTAINS(r.body, "\"gb200\"");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/hardware/h100-sxm", NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "sm_count"), 132);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/hardware/tpu", NULL, &r), 404);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, NULL, "GET", "/v1/hardware", NULL, NULL), 401);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/openapi.json", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"/v1/estimate\"");
    CHECK_CONTAINS(r.body, "\"/v1/calibrations/nccl-tests\"");
    CHECK_CONTAINS(r.body, "\"/v1/validations/{id}\"");
    CHECK_CONTAINS(r.body, "invalid_spec");
    svc_resp_release(&r);
    free(reader);
    json_decref(cli);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_calibrations_named_kept_and_never_stale)
{
    struct svc_daemon d;
    struct svc_resp r;
    const char *fixture = "tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt";
    svc_start(&d, NULL, NULL, NULL);
    char *reader = make_token(&d, "read"), *writer = make_token(&d, "write");
    char *plain = spec_two_nodes(NULL), *named = spec_two_nodes("fabric");
    double defaults = estimate_ms(&d, plain);

    CHECK_EQ_INT(calibrate(&d, reader, "fabric", "&gpu=h100-sxm", fixture, NULL), 403);
    CHECK_EQ_INT(calibrate(&d, writer, "fabric", "", "tests/fuzz/corpus/nccl_tests/malformed.txt", &r), 422);
    CHECK_CONTAINS(r.body, "malformed result row");
    svc_resp_release(&r);
    CHECK_EQ_INT(calibrate(&d, writer, "bad%21", "&gpu=h100-sxm", fixture, NULL), 400);
    CHECK_EQ_INT(calibrate(&d, writer, "fabric", "&gpu=h100-sxm", fixture, &r), 201);
    CHECK_STREQ(svc_json_str(r.body, "gpu"), "h100-sxm");
    CHECK_CONTAINS(r.body, "inter busbw 23.");
    char sha1[80];
    snprintf(sha1, sizeof sha1, "%s", svc_json_str(r.body, "sha256"));
    svc_resp_release(&r);
    /* the calibrated fabric (24 GB/s across nodes, not the profile's 50) slows the gradient all-reduce */
    double first = estimate_ms(&d, named);
    CHECK(first > defaults * 1.01);

    /* the same name, measured on the fabric at half the speed (every time doubled): replaced, and the
     * estimate follows at once */
    size_t n;
    char *text = th_read_file(fixture, &n), *slow = malloc(n * 2 + 4096), *o = slow, *end = slow + n * 2 + 4096;
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        if ((nl = strchr(line, '\n')))
            *nl = '\0';
        double sz, cnt, t1, a1, b1, t2, a2, b2;
        char type[16], redop[16];
        int root, w1, w2;
        if (line[0] != '#' && sscanf(line, "%lf %lf %15s %15s %d %lf %lf %lf %d %lf %lf %lf %d", &sz, &cnt, type,
                                     redop, &root, &t1, &a1, &b1, &w1, &t2, &a2, &b2, &w2) == 13)
            o += snprintf(o, (size_t)(end - o), "%12.0f %12.0f %8s %6s %6d %8.2f %7.2f %7.2f %6d %8.2f %7.2f %7.2f %6d\n", sz, cnt, type,
                         redop, root, t1 * 2, a1 / 2, b1 / 2, w1, t2 * 2, a2 / 2, b2 / 2, w2);
        else
            o += snprintf(o, (size_t)(end - o), "%s\n", line);
    }
    free(text);
    const char *slow_file = th_write_file("slow.txt", slow, strlen(slow));
    free(slow);
    CHECK_EQ_INT(calibrate(&d, writer, "fabric", "&gpu=h100-sxm", slow_file, &r), 200);
    CHECK(strcmp(svc_json_str(r.body, "sha256"), sha1) != 0);
    CHECK_CONTAINS(r.body, "inter busbw 11.");
    svc_resp_release(&r);
    double second = estimate_ms(&d, named);
    CHECK(second > first * 1.01);

    /* kept across a restart, with the same answer */
    CHECK_EQ_INT(svc_stop(&d), 0);
    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/calibrations", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"name\":\"fabric\"");
    CHECK(!strstr(r.body, "\"report\"")); /* the list leaves documents out */
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/calibrations/fabric", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"format\":\"stepcast-cluster-profile\"");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/calibrations/other", NULL, NULL), 404);
    CHECK_NEAR(estimate_ms(&d, named), second, 1e-9);

    /* a built model's traces as a calibration */
    static const char *const ranks[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz"};
    char *model = svc_model_of_files(&d, "sample", 0, ranks, 2), path[256];
    snprintf(path, sizeof path, "/v1/models/%s/calibration?name=team&gpu=a100-sxm4-80gb", model);
    CHECK_EQ_INT(svc_call_as(&d, reader, "POST", path, NULL, NULL), 403);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", path, NULL, &r), 201);
    CHECK_STREQ(svc_json_str(r.body, "source"), "traces");
    CHECK_STREQ(svc_json_str(r.body, "model"), model);
    CHECK_CONTAINS(r.body, "GEMMs");
    CHECK_CONTAINS(r.body, "memory-bound ops: "); /* the same core as calibrate traces */
    /* the very document `stepcast calibrate traces` writes of the same
     * traces, from the samples the model read of them */
    char out[4096], want[DIGEST_HEX_LEN + 1];
    struct sc_error derr;
    size_t len = 0;
    snprintf(out, sizeof out, "%s/team-cli.json", th_tmpdir());
    char *cli[] = {(char *)th_build_path("stepcast"), "calibrate", "traces", "--gpu", "a100-sxm4-80gb", "--force",
                   "--out", out, (char *)ranks[0], (char *)ranks[1], NULL};
    free(th_run_expect(cli, 0, NULL, NULL));
    char *doc = th_read_file(out, &len);
    REQUIRE(doc && digest_hex(doc, len, want, &derr) == SC_OK);
    CHECK_STREQ(svc_json_str(r.body, "sha256"), want);
    free(doc);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/models/m-none/calibration?name=x", NULL, NULL), 404);

    free(model);
    free(plain);
    free(named);
    free(reader);
    free(writer);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
}

/* A GEMM microbenchmark table over HTTP as a named calibration: refused
 * without the write scope, empty or malformed; kept with the GPU its device
 * line names; the same document as `stepcast calibrate gemms` writes
 * locally and as the remote command posts; and a spec naming it gets its
 * GEMM costs. */
TEST(svc_calibrate_gemms_over_http_equals_the_cli)
{
    struct svc_daemon d;
    struct svc_resp r;
    size_t n;
    const char *fixture = "tests/fixtures/gemm-bench/h100-synthetic.csv";
    svc_start(&d, NULL, NULL, NULL);
    char *reader = make_token(&d, "read"), *writer = make_token(&d, "write");
    struct svc_opts as_reader = {reader, NULL, 0, fixture, NULL}, as_writer = {writer, NULL, 0, fixture, NULL};
    CHECK_EQ_INT(svc_call(&d, "POST", "/v1/calibrations/gemms?name=lab", &as_reader, NULL), 403);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/calibrations/gemms?name=lab", NULL, &r), 400);
    CHECK_CONTAINS(r.body, "the body is empty");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/calibrations/gemms?name=lab", "dtype,batch,m,n,k,us\nbf16,1,2\n",
                             &r), 422);
    CHECK_CONTAINS(r.body, "line 2");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "POST", "/v1/calibrations/gemms?name=lab", &as_writer, &r), 201);
    CHECK_STREQ(svc_json_str(r.body, "gpu"), "h100-sxm");
    CHECK_STREQ(svc_json_str(r.body, "source"), "gemm-bench");
    CHECK_CONTAINS(r.body, "kernel_fixed_us");
    char sha[80];
    snprintf(sha, sizeof sha, "%s", svc_json_str(r.body, "sha256"));
    svc_resp_release(&r);

    /* the local command writes the same document */
    char out_path[4096];
    snprintf(out_path, sizeof out_path, "%s/lab.json", th_tmpdir());
    char *argv[] = {(char *)th_build_path("stepcast"), "calibrate", "gemms", "--out", out_path, (char *)fixture, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    CHECK_CONTAINS(out, "GEMMs: 14 with shapes and times");
    free(out);
    /* and, with an nccl-tests output beside it, one profile of both */
    char both_path[4096];
    snprintf(both_path, sizeof both_path, "%s/both.json", th_tmpdir());
    char *bargv[] = {(char *)th_build_path("stepcast"), "calibrate", "nccl-tests", "--gpu", "h100-sxm", "--gemms",
                     (char *)fixture, "--out", both_path, "tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt",
                     NULL};
    CHECK_EQ_INT(th_run(bargv, NULL, NULL), 0);
    char *both = th_read_file(both_path, &n);
    CHECK_CONTAINS(both, "\"source\": \"nccl-tests+gemm-bench\"");
    free(both);
    char *local = th_read_file(out_path, &n);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/calibrations/lab", NULL, &r), 200);
    json_t *got = body_json(&r), *mine = json_loads(local ? local : "", 0, NULL);
    CHECK(mine && json_equal(json_object_get(got, "profile"), mine));
    json_decref(got);
    json_decref(mine);
    free(local);
    svc_resp_release(&r);

    /* the remote command posts the table: the same profile, replaced */
    setenv("STEPCAST_SERVER", d.url, 1);
    setenv("STEPCAST_TOKEN", writer, 1);
    char *rargv[] = {(char *)th_build_path("stepcast"), "calibrate", "gemms", (char *)fixture, "--name", "lab", NULL};
    CHECK_EQ_INT(th_run(rargv, &out, NULL), 0);
    CHECK_CONTAINS(out, "calibration lab: h100-sxm, from gemm-bench");
    char sha12[16];
    snprintf(sha12, sizeof sha12, "sha256 %.6s", sha);
    CHECK_CONTAINS(out, sha12);
    free(out);
    char *kargv[] = {(char *)th_build_path("stepcast"), "calibrate", "gemms", (char *)fixture, "--name", "lab",
                     "--kind", "all_reduce", NULL};
    CHECK_EQ_INT(th_run(kargv, NULL, NULL), 2);
    unsetenv("STEPCAST_SERVER");
    unsetenv("STEPCAST_TOKEN");

    /* a GPU-bound spec naming it: its GEMMs at the table's 700 TFLOP/s against the default ceiling (the
     * estimator's defaults for that spec on the H100's own GEMM table), so the step moves the way the
     * table says */
    static const char plain[] = "{\"model\":{\"layers\":4,\"hidden\":4096,\"heads\":32,\"seq\":2048},"
                                "\"parallel\":{\"tp\":2,\"dp\":4,\"micro_batch\":4,\"global_batch\":32},"
                                "\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    static const char lab[] = "{\"model\":{\"layers\":4,\"hidden\":4096,\"heads\":32,\"seq\":2048},"
                              "\"parallel\":{\"tp\":2,\"dp\":4,\"micro_batch\":4,\"global_batch\":32},"
                              "\"cluster\":{\"gpu\":\"h100-sxm\",\"profile\":\"lab\"}}";
    struct est_costs def;
    struct est_spec plain_spec;
    struct sc_error spec_err;
    const struct hw_profile *h100;
    REQUIRE(spec_load(plain, strlen(plain), &plain_spec, &h100, &spec_err) == SC_OK);
    calib_costs_default(h100, &plain_spec, &def);
    double ceiling = cost_kernel_gemm_ceiling_tflops(&def.kernel, h100, HW_BF16);
    double with_table = estimate_ms(&d, lab), without = estimate_ms(&d, plain);
    CHECK(fabs(ceiling / 700 - 1) > 0.005); /* the table says something the defaults do not */
    CHECK(700 < ceiling ? with_table > without * 1.005 : with_table < without * 0.995);

    free(reader);
    free(writer);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The catalog of schema 1, as stepcastd wrote it before the ledger. */
static const char schema_1[] =
    "CREATE TABLE jobs(id TEXT PRIMARY KEY, description TEXT, created_ns INTEGER NOT NULL,"
    "  updated_ns INTEGER NOT NULL);"
    "CREATE TABLE blobs(sha256 TEXT PRIMARY KEY, bytes INTEGER NOT NULL, created_ns INTEGER NOT NULL);"
    "CREATE TABLE traces(job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, rank INTEGER NOT NULL,"
    "  sha256 TEXT NOT NULL REFERENCES blobs(sha256), bytes INTEGER NOT NULL, events INTEGER NOT NULL,"
    "  steps INTEGER NOT NULL, uploaded_ns INTEGER NOT NULL, PRIMARY KEY(job, rank));"
    "CREATE INDEX traces_sha256 ON traces(sha256);"
    "CREATE TABLE models(id TEXT PRIMARY KEY, job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    "  status TEXT NOT NULL CHECK(status IN ('building', 'ready', 'failed')), error TEXT, step_marker TEXT,"
    "  steps TEXT, version TEXT NOT NULL, summary TEXT, created_ns INTEGER NOT NULL, finished_ns INTEGER);"
    "CREATE INDEX models_job ON models(job);"
    "CREATE TABLE model_traces(model TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,"
    "  rank INTEGER NOT NULL, sha256 TEXT NOT NULL REFERENCES blobs(sha256), PRIMARY KEY(model, rank));"
    "CREATE INDEX model_traces_sha256 ON model_traces(sha256);"
    "CREATE TABLE validations(id INTEGER PRIMARY KEY,"
    "  model TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE, step INTEGER,"
    "  measured_ns INTEGER NOT NULL, predicted_ns INTEGER, created_ns INTEGER NOT NULL);"
    "CREATE TABLE tokens(id TEXT PRIMARY KEY, name TEXT NOT NULL,"
    "  scope TEXT NOT NULL CHECK(scope IN ('read', 'write', 'admin')), hash TEXT NOT NULL UNIQUE,"
    "  created_ns INTEGER NOT NULL, revoked_ns INTEGER);"
    "INSERT INTO jobs VALUES('old', NULL, 1, 1);"
    "INSERT INTO models VALUES('m-old', 'old', 'failed', 'gone', NULL, NULL, '0.0.9', NULL, 1, 2);"
    "INSERT INTO validations VALUES(1, 'm-old', 3, 120000000, 100000000, 1700000000000000000);"
    "INSERT INTO validations VALUES(2, 'm-old', 4, 80000000, 100000000, 1700000000000000000);"
    "PRAGMA user_version = 1;";

TEST(svc_ledger_migrates_an_old_store)
{
    char dir[4096], db[4200];
    snprintf(dir, sizeof dir, "%s/old", th_tmpdir());
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    CHECK_EQ_INT(mkdir(dir, 0755), 0);
    sqlite3 *s = NULL;
    CHECK_EQ_INT(sqlite3_open(db, &s), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(s, schema_1, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);

    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, dir, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations", NULL, &r), 200);
    json_t *doc = body_json(&r), *e = json_object_get(doc, "entries");
    CHECK_EQ_INT(json_array_size(e), 2);
    CHECK_STREQ(json_string_value(json_object_get(json_array_get(e, 0), "model")), "m-old");
    CHECK_STREQ(json_string_value(json_object_get(json_array_get(e, 0), "kind")), "replay");
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(e, 0), "measured_step_ms")), 120, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(e, 1), "predicted_step_ms")), 100, 1e-9);
    /* |100 - 120| / 120 and |100 - 80| / 80: 20.83% on average */
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(doc, "mape"), "mape_pct")),
               (20.0 / 120 + 20.0 / 80) / 2 * 100, 1e-6);
    json_decref(doc);
    svc_resp_release(&r);
    /* the old model goes; its entries stay */
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/models/m-old", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations?model=m-old", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"n\":2");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/healthz", NULL, &r), 200);
    CHECK_EQ_INT(svc_json_int(r.body, "schema"), STORE_SCHEMA_VERSION); /* migrated to this build's */
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(dir, NULL), 0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Post an estimate entry of the spec; its id. */
static long long post_estimate(const struct svc_daemon *d, const char *token, const char *spec, double measured,
                               int in_sample, long expect)
{
    char body[2048];
    struct svc_resp r;
    snprintf(body, sizeof body, "{\"spec\":%s,\"measured_step_ms\":%.6f,\"source\":\"test\",\"run_at\":"
                                "\"2026-10-02T10:00:00Z\",\"in_sample\":%s}",
             spec, measured, in_sample ? "true" : "false");
    CHECK_EQ_INT(svc_call_as(d, token, "POST", "/v1/validations", body, &r), expect);
    long long id = svc_json_int(r.body, "id");
    svc_resp_release(&r);
    return id;
}

static void ledger_entries_mape_bands_scopes(void)
{
    struct svc_daemon d;
    struct svc_resp r;
    char path[256], body[512];
    svc_start(&d, NULL, NULL, NULL);
    char *reader = make_token(&d, "read"), *writer = make_token(&d, "write");
    double p = estimate_ms(&d, spec_one_node);

    /* scopes: read may list, not post; write may post, not delete */
    post_estimate(&d, reader, spec_one_node, p, 0, 403);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/validations", NULL, NULL), 200);
    /* a replay entry: the mean over ranks of the model's modelled steps */
    static const char *const ranks[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                        "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
    char *model = svc_model_of_files(&d, "sample", 0, ranks, 4);
    snprintf(path, sizeof path, "/v1/models/%s/replay", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    json_t *replay = body_json(&r), *st;
    svc_resp_release(&r);
    double sum = 0;
    size_t n = 0, i;
    json_array_foreach (json_object_get(replay, "steps"), i, st)
        if (!json_is_true(json_object_get(st, "partial"))) {
            sum += json_number_value(json_object_get(st, "replayed_ms"));
            n++;
        }
    json_decref(replay);
    CHECK(n > 0);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"measured_step_ms\":20,\"source\":\"cluster log\"}", model);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/validations", body, &r), 201);
    json_t *entry = body_json(&r);
    svc_resp_release(&r);
    double replay_ms = json_number_value(json_object_get(entry, "predicted_step_ms"));
    CHECK_NEAR(replay_ms, sum / (double)n, 1e-3);
    CHECK_NEAR(json_number_value(json_object_get(entry, "error_pct")), (replay_ms - 20) / 20 * 100, 1e-6);
    CHECK_STREQ(json_string_value(json_object_get(entry, "version")), STEPCAST_VERSION);
    json_decref(entry);
    /* a what-if: a set with a field a what-if does not have is 400 naming
     * it; a good one needs the job's config (tp, pp, dp), which this job
     * lacks: 422 saying so (test_svc_whatif.c records one that has it) */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"set\":{\"parallel\":{\"tp\":2}},\"measured_step_ms\":20}", model);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/validations", body, &r), 400);
    CHECK_CONTAINS(r.body, "set.parallel");
    svc_resp_release(&r);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"set\":{\"dp\":2},\"measured_step_ms\":20}", model);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/validations", body, &r), 422);
    CHECK_CONTAINS(r.body, "config");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/validations", "{\"model\":\"m-x\",\"measured_step_ms\":1}", NULL),
                 404);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/validations", "{\"measured_step_ms\":1}", NULL), 400);
    CHECK_EQ_INT(svc_call_as(&d, writer, "POST", "/v1/validations", "{\"spec\":{\"model\":{}},\"measured_step_ms\":1}", &r),
                 400);
    CHECK_STREQ(svc_error_code(&r), "invalid_spec");
    svc_resp_release(&r);

    /* estimate entries, measured at known ratios of the prediction; one in-sample */
    static const double ratio[10] = {1.10, 0.95, 1.30, 0.80, 1.02, 1.15, 0.90, 1.25, 1.05, 0.85};
    post_estimate(&d, writer, spec_one_node, p * 3, 1, 201); /* in-sample: not in MAPE or bands */
    for (int k = 0; k < 9; k++)
        post_estimate(&d, writer, spec_one_node, p * ratio[k], 0, 201);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", spec_one_node, &r), 200);
    CHECK_CONTAINS(r.body, "\"needed\":10"); /* 9 out-of-sample entries: no band yet */
    svc_resp_release(&r);
    long long last = post_estimate(&d, writer, spec_one_node, p * ratio[9], 0, 201);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/estimate", spec_one_node, &r), 200);
    json_t *est = body_json(&r), *band = json_object_get(est, "band");
    svc_resp_release(&r);
    double sorted[10];
    memcpy(sorted, ratio, sizeof sorted);
    qsort(sorted, 10, sizeof sorted[0], cmp_double);
    /* the 10th and 90th percentiles of 10 ratios: 0.9 of the way from the 1st to the 2nd, and from
     * the 9th to the 10th */
    double q10 = sorted[0] + 0.9 * (sorted[1] - sorted[0]), q90 = sorted[8] + 0.1 * (sorted[9] - sorted[8]);
    CHECK_EQ_INT(json_integer_value(json_object_get(band, "entries")), 10);
    CHECK_NEAR(json_number_value(json_object_get(band, "lo_ms")), p * q10, p * 1e-6);
    CHECK_NEAR(json_number_value(json_object_get(band, "hi_ms")), p * q90, p * 1e-6);
    json_decref(est);

    /* MAPE by hand: estimates |1 - 1 / ratio|, the replay's on its own */
    double ape = 0;
    for (int k = 0; k < 10; k++)
        ape += fabs(1 / ratio[k] - 1) * 100;
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/validations?kind=estimate", NULL, &r), 200);
    json_t *ledger = body_json(&r);
    svc_resp_release(&r);
    CHECK_EQ_INT(json_array_size(json_object_get(ledger, "entries")), 11);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(ledger, "mape"), "mape_pct")), ape / 10, 1e-4);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(ledger, "mape"), "n")), 10);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(json_object_get(ledger, "by_month"), "2026-10"),
                                                 "mape_pct")),
               ape / 10, 1e-4);
    json_decref(ledger);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/validations?kind=estimate&in_sample=true", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"n\":11");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call_as(&d, reader, "GET", "/v1/validations?kind=guess", NULL, NULL), 400);

    /* deletion is for admins */
    snprintf(path, sizeof path, "/v1/validations/%lld", last);
    CHECK_EQ_INT(svc_call_as(&d, writer, "DELETE", path, NULL, NULL), 403);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 404);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", "/v1/validations/x1", NULL, NULL), 400);

    /* restart keeps the entries; deleting the model keeps its entry and prediction */
    CHECK_EQ_INT(svc_stop(&d), 0);
    svc_start(&d, d.data, NULL, NULL);
    snprintf(path, sizeof path, "/v1/models/%s", model);
    CHECK_EQ_INT(svc_admin(&d, "DELETE", path, NULL, NULL), 200);
    snprintf(path, sizeof path, "/v1/validations?model=%s", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    ledger = body_json(&r);
    svc_resp_release(&r);
    CHECK_EQ_INT(json_array_size(json_object_get(ledger, "entries")), 1);
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(json_object_get(ledger, "entries"), 0),
                                                 "predicted_step_ms")),
               replay_ms, 1e-9);
    json_decref(ledger);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations", NULL, &r), 200);
    ledger = body_json(&r);
    svc_resp_release(&r);
    CHECK_EQ_INT(json_array_size(json_object_get(ledger, "entries")), 11); /* 1 replay + 10 estimates */
    json_decref(ledger);
    free(model);
    free(reader);
    free(writer);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
}

TEST(svc_ledger_entries_mape_bands_scopes)
{
    ledger_entries_mape_bands_scopes();
}

TEST(svc_pg_ledger_entries_mape_bands_scopes)
{
    pg_server_use();
    ledger_entries_mape_bands_scopes();
}

TEST(ledger_cli_local_import_flags_the_fit_set)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/ledger.json", th_tmpdir());
    /* a CSV of the validation set's columns: not the fit set, so out-of-sample */
    static const char csv[] = "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence "
                              "length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n"
                              "2,16,8,1024,16,24,1024,1,1,2,372.160408\n"
                              "8,32,4,1024,16,24,1024,2,2,2,219.732754\n";
    const char *file = th_write_file("runs.csv", csv, strlen(csv));
    char *argv[] = {(char *)th_build_path("stepcast"), "ledger", "import", (char *)file, "--ledger", dir, NULL};
    free(th_run_expect(argv, 0, "2 rows, out-of-sample", NULL));
    char *list[] = {(char *)th_build_path("stepcast"), "ledger", "list", "--json", "--ledger", dir, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(list, &out, NULL), 0);
    json_t *doc = json_loads(out ? out : "", 0, NULL);
    free(out);
    json_t *e = json_object_get(doc, "entries");
    CHECK_EQ_INT(json_array_size(e), 2);
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(e, 1), "measured_step_ms")), 219.732754, 1e-9);
    CHECK(json_number_value(json_object_get(json_array_get(e, 1), "predicted_step_ms")) > 0);
    CHECK(!json_is_true(json_object_get(json_array_get(e, 0), "in_sample")));
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "mape"), "n")), 2);
    json_decref(doc);
    /* a bad row: the line named, nothing added */
    const char *bad = th_write_file("bad.csv", "2,16,8,1024\n", 12);
    char *badv[] = {(char *)th_build_path("stepcast"), "ledger", "import", (char *)bad, "--ledger", dir, NULL};
    free(th_run_expect(badv, 2, NULL, "line 1"));
    char *nodir[] = {(char *)th_build_path("stepcast"), "ledger", "list", NULL};
    free(th_run_expect(nodir, 2, NULL, "--ledger"));
    /* a local estimate entry, listed, then deleted */
    const char *spec = th_write_file("spec.json", spec_one_node, strlen(spec_one_node));
    char *add[] = {(char *)th_build_path("stepcast"), "ledger", "add", "--spec", (char *)spec, "--measured-ms", "10",
                   "--run-at", "2026-08-03", "--ledger", dir, NULL};
    free(th_run_expect(add, 0, "entry 3: estimate", NULL));
    char *kind[] = {(char *)th_build_path("stepcast"), "ledger", "list", "--kind", "estimate", "--ledger", dir, NULL};
    free(th_run_expect(kind, 0, "2026-08", NULL));
    char *del[] = {(char *)th_build_path("stepcast"), "ledger", "delete", "3", "--ledger", dir, NULL};
    free(th_run_expect(del, 0, "deleted entry 3", NULL));
    free(th_run_expect(del, 2, NULL, "no ledger entry 3"));
    /* a file that is not a ledger is refused, and kept */
    const char *other = th_write_file("other.json", "{\"entries\":[]}", 14);
    char *bad_ledger[] = {(char *)th_build_path("stepcast"), "ledger", "list", "--ledger", (char *)other, NULL};
    free(th_run_expect(bad_ledger, 2, NULL, "not a stepcast ledger"));
}

TEST(ledger_cli_import_of_the_fit_set_is_in_sample)
{
    char dir[4096], *out = NULL;
    /* <shared>/validation, beside <shared>/calibration */
    const char *shared = th_shared_calibration("../validation/vtrain_single_node_a100.csv");
    snprintf(dir, sizeof dir, "%s/fitset.json", th_tmpdir());
    static const char row[] = "2,16,8,1024,16,24,1024,1,1,2,372.160408\n";
    const char *file = th_write_file("runs.csv", row, strlen(row));
    char *argv[] = {(char *)th_build_path("stepcast"), "ledger", "import", (char *)file, "--ledger", dir, NULL};
    free(th_run_expect(argv, 0, "1 rows, out-of-sample", NULL));
    char *list[] = {(char *)th_build_path("stepcast"), "ledger", "list", "--json", "--ledger", dir, NULL};
    json_t *doc;
    char *fit[] = {(char *)th_build_path("stepcast"), "ledger", "import", (char *)shared, "--ledger", dir, NULL};
    free(th_run_expect(fit, 0, "1440 rows, in-sample", NULL));
    CHECK_EQ_INT(th_run(list, &out, NULL), 0);
    doc = json_loads(out ? out : "", 0, NULL);
    free(out);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "entries")), 1441);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "mape"), "n")), 1); /* out-of-sample */
    json_t *last = json_array_get(json_object_get(doc, "entries"), 1440);
    CHECK(json_is_true(json_object_get(last, "in_sample")));
    json_decref(doc);
}

TEST(cli_remote_calibrate_estimate_and_ledger)
{
    struct svc_daemon d;
    char env[128];
    svc_start(&d, NULL, NULL, NULL);
    char *writer = make_token(&d, "write");
    snprintf(env, sizeof env, "STEPCAST_TOKEN=%s", writer);
    putenv(env);
    char *sc = (char *)th_build_path("stepcast");
    char *cal[] = {sc, "--server", d.url, "calibrate", "nccl-tests",
                   "tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt", "--name", "ib", "--gpu", "h100-sxm", NULL};
    free(th_run_expect(cal, 0, "calibration ib: h100-sxm, from nccl-tests", NULL));
    char *list[] = {sc, "--server", d.url, "calibrate", "list", NULL};
    free(th_run_expect(list, 0, "ib ", NULL));
    char *named = spec_two_nodes("ib");
    const char *spec = th_write_file("remote-spec.json", named, strlen(named));
    free(named);
    char *est[] = {sc, "--server", d.url, "estimate", "--spec", (char *)spec, NULL};
    free(th_run_expect(est, 0, "on 16 x h100-sxm", NULL));
    char *add[] = {sc, "--server", d.url, "ledger", "add", "--spec", (char *)spec, "--measured-ms", "25", NULL};
    free(th_run_expect(add, 0, "entry 1: estimate", NULL));
    char *ls[] = {sc, "--server", d.url, "ledger", "list", "--json", NULL};
    char *out = th_run_expect(ls, 0, "\"calibration\": \"ib@", NULL);
    free(out);
    char *del[] = {sc, "--server", d.url, "ledger", "delete", "1", NULL};
    free(th_run_expect(del, 2, NULL, "forbidden")); /* a write token: deletion is for admins */
    /* a local ledger named: the server is not asked, its entry not listed */
    char local_ledger[4096];
    snprintf(local_ledger, sizeof local_ledger, "%s/local-ledger.json", th_tmpdir());
    char *local_only[] = {sc, "--server", d.url, "ledger", "list", "--json", "--ledger", local_ledger, NULL};
    out = th_run_expect(local_only, 0, NULL, NULL);
    CHECK(out && !strstr(out, "ib@"));
    free(out);
    unsetenv("STEPCAST_TOKEN");
    free(writer);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(cli_estimate_resolves_profiles_in_calibrations_dir)
{
    char dir[4096], prof[4200];
    snprintf(dir, sizeof dir, "%s/cals", th_tmpdir());
    CHECK_EQ_INT(mkdir(dir, 0755), 0);
    snprintf(prof, sizeof prof, "%s/ib.json", dir);
    char *sc = (char *)th_build_path("stepcast");
    char *cal[] = {sc, "calibrate", "nccl-tests", "--gpu", "h100-sxm", "--out", prof,
                   "tests/fixtures/nccl-tests/sendrecv-2node-synthetic.txt", NULL};
    free(th_run_expect(cal, 0, "wrote", NULL));
    char *named = spec_two_nodes("ib"), *plain = spec_two_nodes(NULL);
    char *spec = strdup(th_write_file("named.json", named, strlen(named))); /* a static buffer */
    char *spec0 = strdup(th_write_file("plain.json", plain, strlen(plain)));
    free(named);
    free(plain);
    char *by_dir[] = {sc, "estimate", "--json", "--spec", (char *)spec, "--calibrations", dir, NULL};
    char *none[] = {sc, "estimate", "--json", "--spec", (char *)spec0, NULL};
    char *a = th_run_expect(by_dir, 0, "step_ms", NULL), *b = th_run_expect(none, 0, "step_ms", NULL);
    json_t *ja = json_loads(a ? a : "", 0, NULL), *jb = json_loads(b ? b : "", 0, NULL);
    /* the calibrated fabric is slower than the profile's: the named profile was applied */
    CHECK(json_number_value(json_object_get(ja, "step_ms")) > json_number_value(json_object_get(jb, "step_ms")) * 1.01);
    json_decref(ja);
    json_decref(jb);
    free(a);
    free(b);
    char *missing[] = {sc, "estimate", "--spec", (char *)spec, NULL};
    free(th_run_expect(missing, 2, NULL, "cluster.profile"));
    free(spec);
    free(spec0);
}

/* No poison: a measured time no step takes (1e-320 ms, a subnormal whose
 * error is not finite) is refused naming the field; a row holding one,
 * written before times were checked, is skipped in the list and counted,
 * and the list answers 200 with the rest, across a restart. */
TEST(svc_ledger_a_poisoned_row_is_skipped_not_fatal)
{
    struct svc_daemon d;
    struct svc_resp r;
    char db[4200];
    svc_start(&d, NULL, NULL, NULL);
    double p = estimate_ms(&d, spec_one_node);
    post_estimate(&d, SVC_ADMIN, spec_one_node, p * 1.1, 0, 201);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/validations", "{\"spec\":{\"model\":{}},\"measured_step_ms\":1e-320}", &r),
                 422);
    CHECK_CONTAINS(r.body, "measured_step_ms");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    /* the row as an older daemon stored it */
    snprintf(db, sizeof db, "%s/catalog.db", d.data);
    sqlite3 *s = NULL;
    CHECK_EQ_INT(sqlite3_open(db, &s), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(s,
                              "INSERT INTO validations(model, kind, measured_ms, predicted_ms, version, created_ns) "
                              "VALUES(NULL, 'estimate', 1e-320, 10.0, 'old', 1);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(s);
    svc_start(&d, d.data, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations", NULL, &r), 200);
    json_t *doc = body_json(&r);
    svc_resp_release(&r);
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "entries")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(doc, "skipped")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "mape"), "n")), 1);
    json_decref(doc);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
