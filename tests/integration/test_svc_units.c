/* tests/integration/test_svc_units.c: the service's modules in-process:
 * router, request decoders, model cache, config sources, blob store. */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/reply.h"
#include "api/request.h"
#include "api/routes.h"
#include "daemon/blobs.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/config.h"
#include "daemon/digest.h"
#include "daemon/model_blob.h"
#include "daemon/workers.h"
#include "estimator/model_open.h"
#include "estimator/whatif/trace_notes.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static int route(const char *method, const char *path, enum api_op *op, struct api_params *p,
                 unsigned *status)
{
    struct api_reply r = {0};
    int rc = api_route(method, path, 4096, op, p, &r);
    *status = rc ? r.status : 200;
    api_reply_release(&r);
    return rc;
}

TEST(svc_router_matches_and_validates)
{
    enum api_op op;
    struct api_params p;
    unsigned st;
    CHECK(route("PUT", "/v1/jobs/dlrm-1.a_b/ranks/7/trace", &op, &p, &st) == 0);
    CHECK_EQ_INT(op, API_OP_TRACE_PUT);
    CHECK_STREQ(p.job, "dlrm-1.a_b");
    CHECK_EQ_INT(p.rank, 7);
    CHECK(route("HEAD", "/v1/models/m-1/replay", &op, &p, &st) == 0);
    CHECK_EQ_INT(op, API_OP_REPLAY);
    CHECK_STREQ(p.id, "m-1");
    CHECK(route("GET", "/v1/jobs/..", &op, &p, &st) && st == 400);
    CHECK(route("GET", "/v1/jobs/.hidden", &op, &p, &st) && st == 400);
    CHECK(route("GET", "/v1/jobs/a\\b", &op, &p, &st) && st == 400);
    CHECK(route("GET", "/v1/jobs/../../etc/passwd", &op, &p, &st) && st == 404);
    CHECK(route("GET", "/v1/jobs//x", &op, &p, &st) && st == 404);
    CHECK(route("GET", "/v1/jobs/", &op, &p, &st) && st == 404);
    CHECK(route("PUT", "/v1/jobs/a/ranks/-1/trace", &op, &p, &st) && st == 400);
    CHECK(route("PUT", "/v1/jobs/a/ranks/4096/trace", &op, &p, &st) && st == 400);
    CHECK(route("PUT", "/v1/jobs/a/ranks/007/trace", &op, &p, &st) && st == 400);
    CHECK(route("PUT", "/v1/jobs/a/ranks/99999999999999999999/trace", &op, &p, &st) && st == 400);
    CHECK(route("PUT", "/v1/jobs/a/ranks/4095/trace", &op, &p, &st) == 0);
    char longid[100];
    memset(longid, 'a', 65);
    longid[65] = '\0';
    char path[200];
    snprintf(path, sizeof path, "/v1/jobs/%s", longid);
    CHECK(route("GET", path, &op, &p, &st) && st == 400);
    CHECK(route("POST", "/v1/jobs", &op, &p, &st) && st == 405);
    CHECK(route("GET", "/nope", &op, &p, &st) && st == 404);
    char methods[64];
    CHECK(api_route_methods("/v1/jobs/x", methods, sizeof methods) == 3);
    CHECK_STREQ(methods, "PUT, GET, DELETE");
}

static unsigned decode_job(const char *body, unsigned depth, char **canon)
{
    struct api_body_limits l = {1 << 20, depth};
    struct api_reply r = {0};
    unsigned st = api_decode_job(body, strlen(body), &l, canon, &r) ? r.status : 200;
    api_reply_release(&r);
    return st;
}

TEST(svc_request_decoders)
{
    char *c = NULL;
    CHECK_EQ_INT(decode_job("{\"hardware\":\"h100-sxm\",\"config\":{\"tp\":2,\"pp\":2,\"dp\":4,\"zero\":1}}", 32, &c), 200);
    CHECK_STREQ(c, "{\"config\":{\"dp\":4,\"pp\":2,\"tp\":2,\"zero\":1},\"hardware\":\"h100-sxm\"}");
    free(c);
    CHECK_EQ_INT(decode_job("", 32, &c), 200);
    CHECK_STREQ(c, "{}");
    free(c);
    c = NULL;
    CHECK_EQ_INT(decode_job("{\"config\":{\"tp\":0}}", 32, &c), 422);
    CHECK_EQ_INT(decode_job("{\"config\":{\"tp\":\"2\"}}", 32, &c), 400);
    CHECK_EQ_INT(decode_job("{\"config\":{\"x\":[1]}}", 32, &c), 400);
    CHECK_EQ_INT(decode_job("{\"hardware\":\"../x\"}", 32, &c), 400);
    CHECK_EQ_INT(decode_job("{\"other\":1}", 32, &c), 400);
    CHECK_EQ_INT(decode_job("[1,2]", 32, &c), 400);
    CHECK_EQ_INT(decode_job("{\"a\":1,\"a\":2}", 32, &c), 400);
    CHECK_EQ_INT(decode_job("{\"description\":\"\xff\"}", 32, &c), 400);
    CHECK_EQ_INT(decode_job("{\"config\":{}} trailing", 32, &c), 400);
    CHECK(c == NULL);

    /* depth: counted without recursion, strings ignored */
    struct api_body_limits l = {1 << 20, 3};
    struct api_reply r = {0};
    CHECK_EQ_INT(api_json_precheck("[[[1]]]", 7, &l, &r), SC_OK);
    CHECK(api_json_precheck("[[[[1]]]]", 9, &l, &r) != SC_OK);
    CHECK_STREQ(api_code_info(r.code)->name, "json_too_deep");
    api_reply_release(&r);
    CHECK_EQ_INT(api_json_precheck("[\"[[[[\\\"[[[[\"]", 14, &l, &r), SC_OK);
    size_t big = 100000;
    char *deep = malloc(big);
    memset(deep, '[', big);
    l.max_depth = 32;
    CHECK(api_json_precheck(deep, big, &l, &r) != SC_OK && r.status == 400);
    api_reply_release(&r);
    l.max_bytes = 1000;
    CHECK(api_json_precheck(deep, big, &l, &r) != SC_OK && r.status == 413);
    api_reply_release(&r);
    free(deep);

    struct api_build_req b;
    l.max_bytes = 1 << 20;
    CHECK_EQ_INT(api_decode_build("{\"step_marker\":\"Optimizer.step\",\"steps\":\"1-3\"}", 46, &l, &b, &r), SC_OK);
    CHECK_STREQ(b.step_marker, "Optimizer.step");
    CHECK_STREQ(b.steps, "1-3");
    CHECK(api_decode_build("{\"step_marker\":\"\"}", 18, &l, &b, &r) != SC_OK);
    api_reply_release(&r);
    struct api_token_req t;
    CHECK_EQ_INT(api_decode_token("{\"scope\":\"write\",\"name\":\"ci\"}", 29, &l, &t, &r), SC_OK);
    CHECK_EQ_INT(t.scope, API_SCOPE_WRITE);
    CHECK(api_decode_token("{\"scope\":\"root\"}", 16, &l, &t, &r) != SC_OK);
    api_reply_release(&r);
    CHECK(api_decode_token("", 0, &l, &t, &r) != SC_OK);
    api_reply_release(&r);
}

/* ---- the model cache ---- */

static atomic_int freed, loads;

static void free_val(void *v)
{
    atomic_fetch_add(&freed, 1);
    free(v);
}

static int load_val(void *ctx, const char *key, void **value, size_t *bytes, struct sc_error *err)
{
    (void)ctx;
    atomic_fetch_add(&loads, 1);
    usleep(50000); /* long enough for the other getters to pile up */
    if (!strcmp(key, "bad"))
        return sc_error_set(err, SC_EEXIST, "not ready");
    *value = strdup(key);
    *bytes = 100;
    return SC_OK;
}

static struct cache *shared_cache;
static atomic_int slow_loading, slow_go;

/* A load that holds until slow_go is set. */
static int slow_load(void *ctx, const char *key, void **value, size_t *bytes, struct sc_error *err)
{
    (void)ctx;
    (void)err;
    atomic_store(&slow_loading, 1);
    while (!atomic_load(&slow_go))
        usleep(1000);
    *value = strdup(key);
    *bytes = 100;
    return SC_OK;
}

static void *slow_getter(void *arg)
{
    struct cache_entry *e;
    struct sc_error err;
    int hit;
    (void)arg;
    if (cache_get(shared_cache, "slow", slow_load, NULL, &e, &hit, &err) == SC_OK)
        cache_release(shared_cache, e);
    else
        CHECK(0);
    return NULL;
}

static void *getter(void *arg)
{
    struct cache_entry *e;
    struct sc_error err;
    int hit;
    (void)arg;
    if (cache_get(shared_cache, "k", load_val, NULL, &e, &hit, &err) == SC_OK) {
        CHECK_STREQ(cache_value(e), "k");
        cache_release(shared_cache, e);
    } else {
        CHECK(0);
    }
    return NULL;
}

TEST(svc_cache_lru_refcounts_single_flight)
{
    struct cache *c;
    struct cache_entry *a, *b;
    struct cache_stats st;
    struct sc_error err;
    int hit;
    CHECK(cache_new(250, free_val, &c, &err) == SC_OK);
    CHECK(cache_put(c, "a", strdup("a"), 100, &err) == SC_OK);
    CHECK(cache_put(c, "b", strdup("b"), 100, &err) == SC_OK);
    CHECK(cache_get(c, "a", NULL, NULL, &a, &hit, &err) == SC_OK && hit); /* a is now most recent */
    CHECK(cache_put(c, "c", strdup("c"), 100, &err) == SC_OK);          /* over: b goes */
    CHECK(cache_get(c, "b", NULL, NULL, &b, &hit, &err) == SC_ENOTFOUND);
    CHECK_EQ_INT(atomic_load(&freed), 1);
    cache_remove(c, "a"); /* referenced: detached, not freed */
    CHECK_EQ_INT(atomic_load(&freed), 1);
    CHECK_STREQ(cache_value(a), "a");
    cache_release(c, a);
    CHECK_EQ_INT(atomic_load(&freed), 2);
    /* a pinned entry is never evicted: the budget is kept with the others */
    CHECK(cache_get(c, "c", NULL, NULL, &a, &hit, &err) == SC_OK);
    CHECK(cache_put(c, "d", strdup("d"), 200, &err) == SC_OK);
    CHECK(cache_get(c, "c", NULL, NULL, &b, &hit, &err) == SC_OK && hit);
    cache_release(c, b);
    cache_stats(c, &st);
    CHECK(st.bytes <= 250);
    CHECK_STREQ(cache_value(a), "c");
    cache_release(c, a);
    /* eight getters, one load */
    shared_cache = c;
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, getter, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(atomic_load(&loads), 1);
    /* a failed load is not cached and reports its error */
    CHECK(cache_get(c, "bad", load_val, NULL, &a, &hit, &err) == SC_EEXIST);
    CHECK_STREQ(err.msg, "not ready");
    CHECK(cache_get(c, "bad", load_val, NULL, &a, &hit, &err) == SC_EEXIST);
    CHECK_EQ_INT(atomic_load(&loads), 3);
    /* a look without a loader never waits for one loading: an HTTP thread
     * asks it before it hands the work to a worker */
    pthread_t slow;
    pthread_create(&slow, NULL, slow_getter, NULL);
    while (!atomic_load(&slow_loading))
        usleep(1000);
    CHECK(cache_get(c, "slow", NULL, NULL, &a, &hit, &err) == SC_ENOTFOUND);
    atomic_store(&slow_go, 1);
    pthread_join(slow, NULL);
    CHECK(cache_get(c, "slow", NULL, NULL, &a, &hit, &err) == SC_OK && hit);
    cache_release(c, a);
    cache_free(c);
}

/* ---- config: defaults < file < environment < flags ---- */

TEST(svc_config_sources)
{
    struct daemon_config c;
    struct sc_error err;
    static const char text[] = "# settings\nhttp_threads = 3\nmax-ranks = 100\n"
                               "cache-bytes = \"64M\"\nlog-level = warn\n";
    const char *file = th_write_file("d.conf", text, sizeof text - 1);
    char *argv1[] = {"stepcastd", "--config", (char *)file, "--max-ranks", "300", NULL};
    setenv("STEPCAST_MAX_RANKS", "200", 1);
    setenv("STEPCAST_MAX_BODY", "2G", 1);
    CHECK(cfg_load(&c, 5, argv1, &err) == SC_OK);
    CHECK_EQ_INT(c.max_ranks, 300);
    CHECK_EQ_INT(c.http_threads, 3);
    CHECK_EQ_INT(c.cache_bytes, 64 << 20);
    CHECK_EQ_INT(c.max_body, 2ll << 30);
    CHECK_STREQ(c.log_level, "warn");
    CHECK_STREQ(c.data_dir, "./var");
    cfg_release(&c);
    char *argv2[] = {"stepcastd", "--config=" , NULL};
    argv2[1] = malloc(strlen(file) + 10);
    snprintf(argv2[1], strlen(file) + 10, "--config=%s", file);
    CHECK(cfg_load(&c, 2, argv2, &err) == SC_OK);
    CHECK_EQ_INT(c.max_ranks, 200);
    cfg_release(&c);
    unsetenv("STEPCAST_MAX_RANKS");
    CHECK(cfg_load(&c, 2, argv2, &err) == SC_OK);
    CHECK_EQ_INT(c.max_ranks, 100);
    cfg_release(&c);
    free(argv2[1]);
    char *bad1[] = {"stepcastd", "--http-threads", "0", NULL};
    CHECK(cfg_load(&c, 3, bad1, &err) == SC_EINVAL);
    CHECK_CONTAINS(err.msg, "out of range");
    cfg_release(&c);
    char *bad2[] = {"stepcastd", "--admin-token", "x", NULL};
    CHECK(cfg_load(&c, 3, bad2, &err) == SC_EINVAL);
    cfg_release(&c);
    char *bad3[] = {"stepcastd", "--no-such", "1", NULL};
    CHECK(cfg_load(&c, 3, bad3, &err) == SC_EINVAL);
    CHECK_CONTAINS(err.msg, "unknown option");
    cfg_release(&c);
    setenv("STEPCAST_LOG_LEVEL", "loud", 1);
    char *ok[] = {"stepcastd", NULL};
    CHECK(cfg_load(&c, 1, ok, &err) == SC_EINVAL);
    cfg_release(&c);
    unsetenv("STEPCAST_LOG_LEVEL");
    unsetenv("STEPCAST_MAX_BODY");
}

static int keep_none(void *ctx, const char *sha)
{
    (void)ctx;
    (void)sha;
    return 0;
}

static int keep_all(void *ctx, const char *sha)
{
    (void)ctx;
    (void)sha;
    return 1;
}

TEST(svc_blob_store_write_commit_sweep)
{
    struct blob_store *bs;
    struct blob_writer *w;
    struct blob_sweep_stats st;
    struct sc_error err;
    char sha[DIGEST_HEX_LEN + 1], path[4096];
    uint64_t n;
    char data[256];
    snprintf(data, sizeof data, "%s/blobdata", th_tmpdir());
    CHECK(blob_store_open(data, data, 0, &bs, &err) == SC_OK);
    CHECK(blob_writer_new(bs, &w, &err) == SC_OK);
    CHECK(blob_writer_write(w, "hello ", 6, &err) == SC_OK);
    CHECK(blob_writer_write(w, "world", 5, &err) == SC_OK);
    CHECK(blob_writer_finish(w, sha, &err) == SC_OK);
    CHECK_STREQ(sha, "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    CHECK(blob_writer_commit(w, &err) == SC_OK);
    blob_writer_free(w);
    blob_path(bs, sha, path, sizeof path);
    CHECK(access(path, R_OK) == 0);
    CHECK(blob_verify(bs, sha, &n, &err) == SC_OK && n == 11);
    /* an abandoned writer leaves nothing */
    CHECK(blob_writer_new(bs, &w, &err) == SC_OK);
    CHECK(blob_writer_write(w, "x", 1, &err) == SC_OK);
    blob_writer_free(w);
    CHECK(blob_sweep(bs, keep_all, NULL, 1, NULL, &st, &err) == SC_OK);
    CHECK_EQ_INT(st.temp_files, 0);
    CHECK_EQ_INT(st.kept, 1);
    /* corruption is found */
    FILE *f = fopen(path, "ab");
    fputs("!", f);
    fclose(f);
    CHECK(blob_verify(bs, sha, &n, &err) == SC_EINVAL);
    CHECK(blob_sweep(bs, keep_none, NULL, 0, NULL, &st, &err) == SC_OK);
    CHECK_EQ_INT(st.orphans, 1);
    CHECK(access(path, F_OK) != 0);
    blob_store_free(bs);
}

/* Put, get, exists and remove by digest: the whole of what callers need
 * of a blob besides streaming, so an object store could stand behind it. */
TEST(svc_blob_put_get_exists_remove)
{
    struct blob_store *bs;
    struct sc_error err;
    char dir[4096], sha[DIGEST_HEX_LEN + 1], again[DIGEST_HEX_LEN + 1];
    void *got = NULL;
    size_t n = 0;
    snprintf(dir, sizeof dir, "%s/blobput", th_tmpdir());
    REQUIRE(blob_store_open(dir, dir, 1, &bs, &err) == SC_OK);
    CHECK(blob_put(bs, "hello world", 11, sha, &err) == SC_OK);
    CHECK_STREQ(sha, "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    CHECK(blob_put(bs, "hello world", 11, again, &err) == SC_OK); /* the same content again */
    CHECK_STREQ(again, sha);
    CHECK(blob_exists(bs, sha) == 1);
    CHECK(blob_get(bs, sha, 1 << 20, &got, &n, &err) == SC_OK);
    CHECK(n == 11 && got && memcmp(got, "hello world", 11) == 0);
    free(got);
    CHECK_EQ_INT(blob_get(bs, sha, 10, &got, &n, &err), SC_ELIMIT);
    CHECK(blob_remove(bs, sha, &err) == SC_OK);
    CHECK(blob_exists(bs, sha) == 0);
    CHECK_EQ_INT(blob_get(bs, sha, 1 << 20, &got, &n, &err), SC_ENOTFOUND);
    blob_store_free(bs);
}

/* Touch a file into path, last modified age_s ago. */
static void make_file(const char *path, long age_s)
{
    struct timespec ts[2];
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("x", f);
    fclose(f);
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_s;
    ts[1] = ts[0];
    REQUIRE(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

/* A shared blob directory: the start-up sweep removes what a dead writer of
 * this host left and what is older than BLOB_STALE_S, never a live
 * replica's temp file nor a fresh blob whose row may be about to commit. */
TEST(svc_blob_sweep_leaves_live_replicas_files)
{
    struct blob_store *bs;
    struct blob_sweep_stats st;
    struct sc_error err;
    char dir[4096], host[64], p[4200], live[4200], dead[4200], far_new[4200], far_old[4200];
    char fresh[4200], old[4200];
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(0);
    REQUIRE(waitpid(child, NULL, 0) == child); /* a pid of this host no process has */
    snprintf(dir, sizeof dir, "%s/blobshared", th_tmpdir());
    REQUIRE(blob_store_open(dir, dir, 1, &bs, &err) == SC_OK);
    REQUIRE(gethostname(host, sizeof host - 1) == 0);
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
              *c == '.'))
            *c = '-';
    snprintf(live, sizeof live, "%s/.tmp/%ld.%s.aaaaaa", dir, (long)getppid(), host);
    snprintf(dead, sizeof dead, "%s/.tmp/%ld.%s.bbbbbb", dir, (long)child, host);
    snprintf(far_new, sizeof far_new, "%s/.tmp/%ld.elsewhere.example.cccccc", dir, (long)child);
    snprintf(far_old, sizeof far_old, "%s/.tmp/%ld.elsewhere.example.dddddd", dir, (long)child);
    make_file(live, 2 * BLOB_STALE_S);
    make_file(dead, 0);
    make_file(far_new, 10);
    make_file(far_old, BLOB_STALE_S + 10);
    snprintf(p, sizeof p, "%s/ab", dir);
    REQUIRE(mkdir(p, 0755) == 0);
    snprintf(fresh, sizeof fresh, "%s/ab/ab%062d", dir, 1);
    snprintf(old, sizeof old, "%s/ab/ab%062d", dir, 2);
    make_file(fresh, 5);
    make_file(old, BLOB_STALE_S + 10);
    CHECK(blob_sweep(bs, keep_none, NULL, 0, NULL, &st, &err) == SC_OK);
    CHECK_EQ_INT(st.temp_files, 2);
    CHECK_EQ_INT(st.orphans, 1);
    CHECK(access(live, F_OK) == 0);
    CHECK(access(dead, F_OK) != 0);
    CHECK(access(far_new, F_OK) == 0);
    CHECK(access(far_old, F_OK) != 0);
    CHECK(access(fresh, F_OK) == 0);
    CHECK(access(old, F_OK) != 0);
    blob_store_free(bs);
}

/* A model built from paths[0..n), as a daemon builds it; its trace
 * records filled with the byte `fill` before their fields are set. */
static struct built_model *model_of_filled(const char *const *paths, size_t n, int fill)
{
    struct model_load_opts lo;
    struct est_traced_model *om = NULL;
    struct api_trace traces[8];
    struct built_model *m = NULL;
    struct sc_error err;
    model_load_opts_default(&lo);
    memset(traces, fill, sizeof traces);
    for (size_t i = 0; i < n && i < 8; i++) {
        traces[i].rank = (int64_t)i;
        memset(traces[i].sha256, 'a' + (int)i, DIGEST_HEX_LEN);
        traces[i].sha256[DIGEST_HEX_LEN] = '\0';
        traces[i].bytes = traces[i].events = traces[i].steps = traces[i].uploaded_ns = 0;
    }
    struct est_model_options mo;
    est_model_options_default(&mo);
    mo.keep = EST_KEEP_NOTES; /* as a build opens it */
    REQUIRE(est_model_open(paths, n, &mo, NULL, NULL, &om, &err) == SC_OK);
    REQUIRE(built_model_assemble("m-blob", traces, n, &lo, om, &m, &err) == SC_OK);
    return m;
}

static struct built_model *model_of(const char *const *paths, size_t n)
{
    return model_of_filled(paths, n, 0);
}

/* Each step's replayed time, with the model's collective waits. */
static void replay_steps(const struct built_model *m, int64_t *each)
{
    struct model_replay_opts o;
    struct sc_error err;
    int64_t mean;
    const struct model_graph *g = est_model_graph(built_model_opened(m));
    uint8_t *use = calloc(g->n_steps + 1, 1);
    memset(use, 1, g->n_steps);
    model_replay_opts_kept(&o, *est_model_waits(built_model_opened(m)));
    CHECK(model_replay_mean_step(g, &o, use, &mean, NULL, each, &err) == SC_OK);
    free(use);
}

/* A model written as a blob and read back is the same model: its blob
 * again byte for byte, and its replay step for step; on the sample and
 * on a real trace of the shared ones. Streamed into the blob store a
 * chunk at a time (as a build stores it), the blob is the same bytes,
 * named by their digest. */
TEST(svc_model_blob_round_trip)
{
    struct blob_store *bs;
    struct sc_error e;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/modelblobs", th_tmpdir());
    REQUIRE(blob_store_open(dir, dir, 0, &bs, &e) == SC_OK);
    static const char *const sample[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                         "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
    char hta[2][4096];
    snprintf(hta[0], sizeof hta[0], "%s",
             th_shared_path("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"));
    snprintf(hta[1], sizeof hta[1], "%s",
             th_shared_path("HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz"));
    for (int k = 0; k < 3; k++) {
        const char *const real[] = {hta[k ? k - 1 : 0]};
        struct built_model *m = k ? model_of(real, 1) : model_of(sample, 4), *back = NULL;
        struct model_load_opts lo;
        struct sc_error err;
        void *p = NULL, *q = NULL;
        size_t n = 0, nq = 0;
        model_load_opts_default(&lo);
        REQUIRE(model_blob_write(m, &p, &n, &err) == SC_OK);
        REQUIRE(model_blob_read(p, n, "m-blob", &lo, &back, &err) == SC_OK);
        REQUIRE(model_blob_write(back, &q, &nq, &err) == SC_OK);
        CHECK(n == nq && memcmp(p, q, n) == 0);
        char sha[DIGEST_HEX_LEN + 1], want[DIGEST_HEX_LEN + 1];
        void *put = NULL;
        size_t np = 0, ng = 0;
        REQUIRE(model_blob_put(m, bs, sha, &np, &err) == SC_OK);
        REQUIRE(digest_hex(p, n, want, &err) == SC_OK);
        CHECK_STREQ(sha, want);
        CHECK(np == n && blob_get(bs, sha, n, &put, &ng, &err) == SC_OK && ng == n && memcmp(put, p, n) == 0);
        if (k == 2) /* control's: many chunks, and arrays larger than one (256 KiB) */
            CHECK(n > (size_t)2 << 20);
        free(put);
        const struct model_graph *g = est_model_graph(built_model_opened(m));
        CHECK(g->n_steps > 0);
        int64_t *a = calloc(g->n_steps, sizeof *a), *b = calloc(g->n_steps, sizeof *b);
        replay_steps(m, a);
        replay_steps(back, b);
        CHECK(memcmp(a, b, g->n_steps * sizeof *a) == 0);
        CHECK(a[0] > 0);
        free(a);
        free(b);
        free(p);
        free(q);
        built_model_free(m);
        built_model_free(back);
    }
    blob_store_free(bs);
}

/* Notes nb read back as ns were written. */
static void check_same_notes(const struct trace_notes_set *ns, const struct trace_notes_set *nb)
{
    CHECK_EQ_INT(nb->n_ranks, ns->n_ranks);
    CHECK_EQ_INT(trace_notes_set_bytes(nb), trace_notes_set_bytes(ns));
    for (size_t r = 0; r < ns->n_ranks && r < nb->n_ranks; r++) {
        const struct trace_notes *a = &ns->rank[r], *b = &nb->rank[r];
        CHECK(a->n_calls == b->n_calls && a->n_colls == b->n_colls && a->n_gemms == b->n_gemms &&
              a->n_op_keys == b->n_op_keys && a->ops_busy_ns == b->ops_busy_ns &&
              a->module_layers == b->module_layers && a->unit_layers == b->unit_layers &&
              a->has_autograd == b->has_autograd);
        for (size_t i = 0; i < a->n_calls && i < b->n_calls; i++)
            CHECK(a->calls[i].event == b->calls[i].event && a->calls[i].at == b->calls[i].at &&
                  a->calls[i].hook == b->calls[i].hook && a->calls[i].layer == b->calls[i].layer);
        for (size_t i = 0; i < a->n_gemms && i < b->n_gemms; i++)
            CHECK(a->gemms[i].shape.m == b->gemms[i].shape.m && a->gemms[i].shape.k == b->gemms[i].shape.k);
    }
}

/* A blob's notes (the what-if's, estimator/whatif/trace_notes.h) come
 * back as they were written, those of FSDP2's units and optimizer step
 * too, and notes no trace could have given are refused, naming what is
 * wrong: out of event order, an event past the trace's, a hook or layer
 * out of range, a GEMM of no shape. */
TEST(svc_model_blob_keeps_notes_and_refuses_bad_ones)
{
    static const char *const sample[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz"};
    struct built_model *m = model_of(sample, 2), *back = NULL;
    struct trace_notes_set *ns = (struct trace_notes_set *)est_model_notes(built_model_opened(m));
    struct model_load_opts lo;
    struct sc_error err;
    void *p = NULL;
    size_t n = 0;
    model_load_opts_default(&lo);
    REQUIRE(ns->n_ranks == 2 && ns->rank[1].n_calls > 1 && ns->rank[1].n_gemms > 0 && ns->rank[1].n_colls > 0);
    REQUIRE(model_blob_write(m, &p, &n, &err) == SC_OK);
    REQUIRE(model_blob_read(p, n, "m-blob", &lo, &back, &err) == SC_OK);
    const struct trace_notes_set *nb = est_model_notes(built_model_opened(back));
    check_same_notes(ns, nb);
    /* the cache counts them */
    CHECK(built_model_bytes(back) >
          trace_notes_set_bytes(nb) + model_graph_bytes(est_model_graph(built_model_opened(back))));
    built_model_free(back);
    free(p);

    struct trace_notes *t = &ns->rank[1];
    const struct model_trace *tr = model_graph_trace(est_model_graph(built_model_opened(m)), 1);
    struct trace_call_note c0 = t->calls[0], c1 = t->calls[1];
    struct trace_gemm_note g0 = t->gemms[0];
    for (int k = 0; k < 5; k++) {
        const char *want = NULL;
        switch (k) {
        case 0: t->calls[0] = c1, t->calls[1] = c0, want = "notes go by event"; break;
        case 1: t->calls[0].event = (uint32_t)tr->n_complete, t->calls[1].event = UINT32_MAX, want = "its trace had";
            break;
        case 2: t->calls[1].hook = 9, want = "layer or hook out of range"; break;
        case 3: t->calls[1].layer = t->module_layers, want = "layer or hook out of range"; break;
        case 4: t->gemms[0].shape.k = -1, want = "is of no shape"; break;
        }
        REQUIRE(model_blob_write(m, &p, &n, &err) == SC_OK);
        CHECK_EQ_INT(model_blob_read(p, n, "x", &lo, &back, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, want);
        CHECK(back == NULL);
        free(p);
        t->calls[0] = c0;
        t->calls[1] = c1;
        t->gemms[0] = g0;
    }
    built_model_free(m);

    /* a real FSDP2 step (data/calibration/torch-steps/stacks): its units'
     * layers and its optimizer's step come back */
    static const char *const fsdp[] = {"data/calibration/torch-steps/stacks/h200-fsdp/gpt-h1024-s1024-b8.pt.trace.json.gz"};
    m = model_of(fsdp, 1);
    ns = (struct trace_notes_set *)est_model_notes(built_model_opened(m));
    size_t layered = 0, optimizer = 0;
    for (size_t i = 0; i < ns->rank[0].n_calls; i++) {
        layered += ns->rank[0].calls[i].layer >= 0;
        optimizer += ns->rank[0].calls[i].hook == TRACE_HOOK_OPTIMIZER;
    }
    CHECK(ns->rank[0].unit_layers == 1 && ns->rank[0].module_layers == 8 && layered > 0 && optimizer > 0);
    REQUIRE(model_blob_write(m, &p, &n, &err) == SC_OK);
    REQUIRE(model_blob_read(p, n, "m-blob", &lo, &back, &err) == SC_OK);
    check_same_notes(ns, est_model_notes(built_model_opened(back)));
    built_model_free(back);
    built_model_free(m);
    free(p);
}

/* The same job built twice is the same blob, byte for byte, and so the
 * same digest: whatever bytes the records' padding and their text fields'
 * tails held. The two builds differ in those only: the trace records are
 * filled with another byte before their fields are set, and the heap
 * hands out memory filled with another byte (glibc's M_PERTURB; under
 * ASan the heap is its own, and only the first difference is made). */
TEST(svc_model_blob_same_job_same_bytes)
{
    static const char *const sample[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                         "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
    static const int fill[2] = {0xa5, 0x5a};
    char sum[2][DIGEST_HEX_LEN + 1];
    void *p[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    struct sc_error err;
    for (int k = 0; k < 2; k++) {
        mallopt(M_PERTURB, fill[k]);
        struct built_model *m = model_of_filled(sample, 4, fill[k]);
        REQUIRE(model_blob_write(m, &p[k], &n[k], &err) == SC_OK);
        built_model_free(m);
        mallopt(M_PERTURB, 0);
        REQUIRE(digest_hex(p[k], n[k], sum[k], &err) == SC_OK);
    }
    /* the first byte of the payload that differs, if any */
    size_t at = MODEL_BLOB_HEADER;
    while (at < n[0] && at < n[1] && ((const uint8_t *)p[0])[at] == ((const uint8_t *)p[1])[at])
        at++;
    CHECK_EQ_INT(n[0], n[1]);
    CHECK_EQ_INT(at, n[0]);
    CHECK_STREQ(sum[0], sum[1]);
    free(p[0]);
    free(p[1]);
}

/* A corrupt, truncated or other-version blob is refused, saying so. */
TEST(svc_model_blob_refuses_bad_blobs)
{
    static const char *const sample[] = {"data/sample/rank0.json.gz"};
    struct built_model *m = model_of(sample, 1), *back = NULL;
    struct model_load_opts lo;
    struct sc_error err;
    uint8_t *p = NULL;
    void *sealed = NULL;
    size_t n = 0, ns = 0;
    model_load_opts_default(&lo);
    REQUIRE(model_blob_write(m, (void **)&p, &n, &err) == SC_OK);
    CHECK_EQ_INT(model_blob_read(p, n - 1, "x", &lo, &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "truncated");
    CHECK_EQ_INT(model_blob_read(p, 40, "x", &lo, &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "shorter than its header");
    p[n / 2] ^= 1;
    CHECK_EQ_INT(model_blob_read(p, n, "x", &lo, &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "checksum mismatch");
    p[n / 2] ^= 1;
    p[8] = MODEL_BLOB_VERSION + 1;
    CHECK_EQ_INT(model_blob_read(p, n, "x", &lo, &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "format version");
    p[8] = MODEL_BLOB_VERSION;
    p[0] = 'X';
    CHECK_EQ_INT(model_blob_read(p, n, "x", &lo, &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "not a built model");
    p[0] = 'S';
    /* a payload whose checksum holds but whose content does not: its
     * first record (the traces' count) claims more than there is */
    uint64_t many = 1000000;
    memcpy(p + MODEL_BLOB_HEADER, &many, sizeof many);
    REQUIRE(model_blob_seal(p + MODEL_BLOB_HEADER, n - MODEL_BLOB_HEADER, &sealed, &ns, &err) == SC_OK);
    CHECK_EQ_INT(model_blob_read(sealed, ns, "x", &lo, &back, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "traces: 1000000 records");
    CHECK(back == NULL);
    free(sealed);
    free(p);
    built_model_free(m);
}

/* A build whose job was deleted while it waited in the queue finds no
 * trace: a clean "not found" naming the model, never a copy from nowhere. */
TEST(svc_build_of_a_job_deleted_while_queued)
{
    char dir[4096];
    struct blob_store *bs = NULL;
    struct built_model *m = NULL;
    struct model_load_opts lo;
    struct sc_error err;
    snprintf(dir, sizeof dir, "%s/deleted-job", th_tmpdir());
    REQUIRE(blob_store_open(dir, dir, 0, &bs, &err) == SC_OK);
    model_load_opts_default(&lo);
    CHECK_EQ_INT(built_model_build("m-gone", NULL, 0, bs, &lo, NULL, NULL, NULL, &m, &err), SC_ENOTFOUND);
    CHECK(m == NULL);
    CHECK_CONTAINS(err.msg, "m-gone has no traces left");
    blob_store_free(bs);
}

struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    atomic_int ran;
};

static void wait_gate(void *ctx)
{
    struct gate *g = ctx;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    atomic_fetch_add(&g->ran, 1);
}

/* The request pool's rooms (workers.h): with its one thread busy and no
 * queue, a heavy request is refused, yet uploads still get their places,
 * as many as max-uploads and no more; every job taken runs. */
TEST(svc_workers_keep_room_for_uploads)
{
    struct workers *w = NULL;
    struct sc_error err;
    struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    REQUIRE(workers_start(1, 0, 2, 0, &w, &err) == SC_OK);
    CHECK_EQ_INT(workers_reserve(w, WORKERS_HEAVY, &err), SC_OK);
    workers_submit(w, WORKERS_HEAVY, wait_gate, NULL, &g);
    CHECK_EQ_INT(workers_reserve(w, WORKERS_HEAVY, &err), SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "heavy-queue");
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(workers_reserve(w, WORKERS_UPLOAD, &err), SC_OK);
        workers_submit(w, WORKERS_UPLOAD, wait_gate, NULL, &g);
    }
    CHECK_EQ_INT(workers_reserve(w, WORKERS_UPLOAD, &err), SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "max-uploads");
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    CHECK(workers_wait_idle(w, 10));
    CHECK_EQ_INT(atomic_load(&g.ran), 3);
    /* the places are given back */
    CHECK_EQ_INT(workers_reserve(w, WORKERS_UPLOAD, &err), SC_OK);
    workers_submit(w, WORKERS_UPLOAD, wait_gate, NULL, &g);
    CHECK(workers_wait_idle(w, 10));
    workers_free(w);
}
