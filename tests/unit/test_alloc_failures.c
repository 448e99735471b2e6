/* tests/unit/test_alloc_failures.c: every allocation of the main paths
 * made to fail in turn (tests/alloc_fail.h): loading a one-step trace,
 * building its graph and replaying it; a folded model opened with the
 * notes of its traces; estimating a small spec; a request's way from its
 * JSON body to the JSON reply. Each failure must
 * end in an error with a message (or, where the code can do without the
 * memory, in success), holding nothing it allocated. The same loops run
 * under ASan and UBSan in make check's second phase. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/estimate_json.h"
#include "api/replay_json.h"
#include "estimator/model_open.h"
#include "estimator/whatif/trace_notes.h"
#include "estimator/synth/estimate.h"
#include "estimator/spec/job_config.h"
#include "estimator/spec/spec.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/alloc_fail.h"
#include "tests/check.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

/* The linker's --wrap sees the library's calls only when it is built
 * without link-time optimisation (tests/module.mk sets this). */
#ifndef ALLOC_WRAPS_LIBRARY
#define ALLOC_WRAPS_LIBRARY 0
#endif

/* One path: SC_OK, or an error in *err. */
typedef int (*path_fn)(const void *ctx, struct sc_error *err);

/* Run path once to count its allocations, then once failing each of them;
 * each run must leave nothing it allocated behind. */
static void each_allocation_fails(const char *name, path_fn path, const void *ctx)
{
    if (!ALLOC_WRAPS_LIBRARY)
        SKIP("the library's allocations are wrapped only in builds without link-time optimisation: these loops "
             "run in make check's ASan phase");
    unsigned long total, n;
    size_t live, leaks = 0, errors = 0, survived = 0;
    int reached;
    struct sc_error err;
    (void)path(ctx, &err); /* static tables built once, before anything is counted */
    alloc_fail_arm(0);
    int rc = path(ctx, &err);
    alloc_fail_disarm(&total, &live, &reached);
    if (rc != SC_OK || live) {
        sc_check_fail(__FILE__, __LINE__, "%s without failures: rc %d (%s), %zu blocks held", name, rc, err.msg,
                      live);
        return;
    }
    for (n = 1; n <= total; n++) {
        memset(&err, 0, sizeof err);
        unsigned long made;
        alloc_fail_arm(n);
        rc = path(ctx, &err);
        alloc_fail_disarm(&made, &live, &reached);
        if (live && leaks++ < 5)
            sc_check_fail(__FILE__, __LINE__, "%s, allocation %lu failing: %zu blocks held after it (rc %d: %s)", name,
                          n, live, rc, err.msg);
        if (rc != SC_OK && !err.msg[0])
            sc_check_fail(__FILE__, __LINE__, "%s, allocation %lu failing: error %d without a message", name, n, rc);
        errors += rc != SC_OK;
        survived += rc == SC_OK;
    }
    printf("     %s: %lu allocations, each failed once: %zu errors, %zu done without it, %zu leaking\n", name, total,
           errors, survived, leaks);
    CHECK(total > 10 && errors > 0 && leaks == 0);
}

/* ---- the paths ---- */

static int load_build_replay(const void *ctx, struct sc_error *err)
{
    const char *path = ctx;
    struct model_load_opts lo;
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    struct model_replay_opts ro;
    model_load_opts_default(&lo);
    model_replay_opts_default(&ro);
    int rc = model_job_load(&path, 1, &lo, 0, &job, err);
    if (!rc)
        rc = model_graph_build(job, NULL, &g, err);
    if (!rc)
        rc = model_replay_run(g, &ro, &r, err);
    model_replay_free(r);
    model_graph_free(g);
    model_job_free(job);
    return rc;
}

static const char small_spec[] =
    "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"vocab\":32000},"
    "\"parallel\":{\"tp\":2,\"pp\":2,\"dp\":2,\"micro_batch\":1,\"global_batch\":8},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"}}";

static int estimate_spec(const void *ctx, struct sc_error *err)
{
    const char *text = ctx;
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    int rc = spec_load(text, strlen(text), &s, &hw, err);
    if (rc)
        return rc;
    calib_costs_default(hw, &s, &c);
    if ((rc = synth_estimate(&s, hw, &c, EST_DETAIL_KERNEL, &e, err)))
        return rc;
    synth_estimate_release(&e);
    return SC_OK;
}

/* A request body parsed, estimated and answered as the daemon does. */
static int estimate_request(const void *ctx, struct sc_error *err)
{
    const char *text = ctx;
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    struct job_config cfg;
    static const char desc[] = "{\"tp\":2,\"pp\":1,\"dp\":4,\"layers\":24,\"hidden\":2048,\"heads\":16,"
                               "\"seq\":2048,\"moe\":{\"experts\":8,\"top_k\":2}}";
    int rc = spec_job_config_parse(desc, sizeof desc - 1, &cfg, err);
    if (!rc)
        rc = spec_load(text, strlen(text), &s, &hw, err);
    if (rc)
        return rc;
    calib_costs_default(hw, &s, &c);
    if ((rc = synth_estimate(&s, hw, &c, EST_DETAIL_STAGE, &e, err)))
        return rc;
    json_t *doc = api_estimate_json(&e);
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (!body)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory answering the estimate");
    free(body);
    json_decref(doc);
    synth_estimate_release(&e);
    return rc;
}

/* g (of job) replayed and answered as JSON, when rc (its build's) is
 * SC_OK; both freed. */
static int answer_replay(struct model_job *job, struct model_graph *g, int rc, struct sc_error *err)
{
    struct model_replay *r = NULL;
    struct model_replay_opts ro;
    model_replay_opts_default(&ro);
    if (!rc)
        rc = model_replay_run(g, &ro, &r, err);
    if (!rc) {
        json_t *doc = api_replay_json(r);
        char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        if (!body)
            rc = sc_error_set(err, SC_ENOMEM, "out of memory answering the replay");
        free(body);
        json_decref(doc);
    }
    model_replay_free(r);
    model_graph_free(g);
    model_job_free(job);
    return rc;
}

/* A replay answered as JSON, from a built job. */
static int replay_reply(const void *ctx, struct sc_error *err)
{
    const char *path = ctx;
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    int rc = model_graph_build_paths(&path, 1, NULL, NULL, &job, &g, err);
    return answer_replay(job, g, rc, err);
}

/* Three alike ranks folded into one (model/graph.h, MODEL_FOLD_OVER),
 * built while loading, replayed and answered as JSON. */
static int folded_reply(const void *ctx, struct sc_error *err)
{
    const char *const *paths = ctx;
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_graph_opts go;
    model_graph_opts_default(&go);
    go.fold_over = 0;
    int rc = model_graph_build_paths(paths, 3, NULL, &go, &job, &g, err);
    return answer_replay(job, g, rc, err);
}

/* The model of alike ranks, folded as they load: each kept rank's notes
 * taken while its trace is whole, those of ranks folded later dropped. */
static int folded_model_notes(const void *ctx, struct sc_error *err)
{
    struct est_model_options mo;
    struct est_traced_model *m = NULL;
    est_model_options_default(&mo);
    mo.graph.fold_over = 0;
    mo.keep = EST_KEEP_NOTES;
    int rc = est_model_open(ctx, 3, &mo, NULL, NULL, &m, err);
    if (rc == SC_OK && est_model_notes(m)->n_ranks != est_model_graph(m)->n_ranks)
        rc = sc_error_set(err, SC_EINTERNAL, "notes of %zu ranks", est_model_notes(m)->n_ranks);
    est_model_close(m);
    return rc;
}

/* Three ranks of one job, alike: a GEMM, then an all-reduce among them. */
static const char *const *alike_ranks(void)
{
    static char path[3][4096];
    static const char *pv[3];
    for (int k = 0; k < 3; k++) {
        struct tb tb;
        char file[32];
        tb_init(&tb, k, 3);
        tb_step(&tb, 1, 0, 1000);
        tb_launch(&tb, 10, 5, 7, "ampere_sgemm_128x64_nn", 20, 300);
        int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", 330, 5);
        tb_kernel_args(&tb, corr, 13, "ncclKernel_AllReduce_RING_LL_Sum_float", 340, 200,
                       "\"Collective name\": \"allreduce\", \"In msg nelems\": 1024, \"Group size\": 3, "
                       "\"dtype\": \"Float\", \"Process Group Name\": \"0\", \"Seq\": 1");
        tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 340, 210);
        snprintf(file, sizeof file, "alike%d.json", k);
        snprintf(path[k], sizeof path[k], "%s", tb_write(&tb, file));
        pv[k] = path[k];
        tb_free(&tb);
    }
    return pv;
}

/* A one-step trace: launches on a stream, a sync, host work. */
static const char *one_step_trace(void)
{
    static char path[4096];
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    tb_launch(&tb, 10, 5, 7, "ampere_sgemm_128x64_nn", 20, 300);
    tb_launch(&tb, 16, 4, 7, "vectorized_elementwise_kernel", 320, 100);
    tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 26, 400);
    tb_op(&tb, TB_MAIN, "aten::add", 500, 50);
    snprintf(path, sizeof path, "%s", tb_write(&tb, "alloc.json"));
    tb_free(&tb);
    return path;
}

TEST(alloc_failures_load_build_replay_clean)
{
    each_allocation_fails("load, build, replay", load_build_replay, one_step_trace());
}

TEST(alloc_failures_replay_reply_clean)
{
    each_allocation_fails("streamed build, replay, JSON reply", replay_reply, one_step_trace());
}

TEST(alloc_failures_folded_replay_clean)
{
    each_allocation_fails("folded build, replay, JSON reply", folded_reply, alike_ranks());
}

TEST(alloc_failures_folded_model_notes_clean)
{
    each_allocation_fails("folded model with its notes", folded_model_notes, alike_ranks());
}

TEST(alloc_failures_estimate_clean)
{
    each_allocation_fails("estimate", estimate_spec, small_spec);
}

TEST(alloc_failures_estimate_request_clean)
{
    each_allocation_fails("estimate request", estimate_request, small_spec);
}
