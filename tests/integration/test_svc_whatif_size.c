/* tests/integration/test_svc_whatif_size.c: the memory a model what-if
 * takes, measured, against the size the daemon admits it by
 * (estimator/whatif/whatif_size.h).
 *
 * Each case builds a model as the daemon's builder does (built_model_build
 * from blobs), then does what the daemon's what-if does (run_whatif in
 * daemon/h_models.c): runs the what-if on the model's graph and the notes
 * of its traces (no trace is read again). The test binary's allocator
 * wrappers (tests/alloc_fail.h) count the heap bytes held at its peak. The
 * prediction (whatif_size_predict) must not fall below the growth
 * measured; the bytes per task predicted are printed, the figure
 * WHATIF_BYTES_PER_TASK was set from (docs/lab/what-if-memory.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/resources.h"
#include "daemon/blobs.h"
#include "daemon/built.h"
#include "estimator/spec/job_config.h"
#include "estimator/model_open.h"
#include "estimator/whatif/whatif.h"
#include "estimator/whatif/whatif_size.h"
#include "model/graph.h"
#include "model/trace.h"
#include "tests/alloc_fail.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define MAX_RANKS 8

/* A model of the trace files paths[0..n), stored as blobs in bs and built
 * from them as the daemon builds it. */
static struct built_model *model_of(struct blob_store *bs, const char *const *paths, size_t n)
{
    struct api_trace traces[MAX_RANKS];
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct built_model *m = NULL;
    struct sc_error err;
    REQUIRE(n <= MAX_RANKS);
    memset(traces, 0, sizeof traces);
    for (size_t i = 0; i < n; i++) {
        struct blob_writer *w = NULL;
        size_t len = 0;
        char *data = th_read_file(paths[i], &len);
        REQUIRE(data);
        REQUIRE(blob_writer_new(bs, &w, &err) == SC_OK);
        REQUIRE(blob_writer_write(w, data, len, &err) == SC_OK);
        REQUIRE(blob_writer_finish(w, traces[i].sha256, &err) == SC_OK);
        REQUIRE(blob_writer_commit(w, &err) == SC_OK);
        blob_writer_free(w);
        free(data);
        traces[i].rank = (int64_t)i;
        traces[i].events = -1;
    }
    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    if (built_model_build("m-size", traces, n, bs, &lo, &go, NULL, NULL, &m, &err))
        sc_check_fail(__FILE__, __LINE__, "build: %s", err.msg);
    REQUIRE(m);
    return m;
}

struct measured {
    double growth; /* peak heap bytes of the what-if */
    double result_tasks;
};

/* Run the what-if `set_list` of m, described by cfg_json, as the daemon
 * does, measuring its heap; 0, or -1 when the allocator is not wrapped
 * (a build with link-time optimisation) and nothing can be measured. */
static int measure(struct built_model *m, const char *cfg_json, const char *set_list, struct measured *out)
{
    struct job_config cfg, set;
    struct whatif_result res;
    struct sc_error err;
    size_t peak = 0, now = 0, live = 0;
    unsigned long allocations = 0;
    int complete = 0, failed = 0;
    REQUIRE(spec_job_config_parse(cfg_json, strlen(cfg_json), &cfg, &err) == SC_OK);
    REQUIRE(spec_job_config_parse_set_list(set_list, &set, &err) == SC_OK);
    alloc_fail_arm(0);
    int rc = est_model_whatif(built_model_opened(m), &cfg, &set, &res, &err);
    if (rc == SC_OK) {
        out->result_tasks = (double)res.graph->n_tasks;
        alloc_fail_bytes(&peak, &now, &complete);
        whatif_release(&res);
    }
    alloc_fail_disarm(&allocations, &live, &failed);
    if (rc)
        sc_check_fail(__FILE__, __LINE__, "what-if %s: %s", set_list, err.msg);
    CHECK(complete); /* every block was counted */
    if (allocations == 0)
        return -1;
    out->growth = (double)peak;
    return 0;
}

struct wcase {
    const char *name, *cfg, *set;
};

/* Each what-if of m measured against its prediction: the prediction is at
 * least the growth; one table line each. */
static void check_cases(struct built_model *m, const struct wcase *c, size_t n)
{
    const struct model_graph *g = est_model_graph(built_model_opened(m));
    for (size_t i = 0; i < n; i++) {
        struct job_config cfg, set;
        struct whatif_size size;
        struct measured got = {0};
        struct sc_error err;
        REQUIRE(spec_job_config_parse(c[i].cfg, strlen(c[i].cfg), &cfg, &err) == SC_OK);
        REQUIRE(spec_job_config_parse_set_list(c[i].set, &set, &err) == SC_OK);
        whatif_size_predict(g->n_tasks, &cfg, &set, &size);
        if (measure(m, c[i].cfg, c[i].set, &got))
            SKIP("the allocator is not wrapped (a link-time optimised build): nothing to measure");
        printf("  | %s | %s | %zu | %.0f (%.0f) | %.0f | %.1f | %.1f | %.2f |\n", c[i].name, c[i].set, g->n_tasks,
               size.tasks, got.result_tasks, got.growth / size.tasks, got.growth / 1048576.0, size.bytes / 1048576.0,
               size.bytes / got.growth);
        if (size.bytes < got.growth)
            sc_check_fail(__FILE__, __LINE__, "%s, set %s: predicted %.0f bytes, measured %.0f", c[i].name, c[i].set,
                          size.bytes, got.growth);
        CHECK(got.result_tasks <= size.tasks);
    }
}

static struct blob_store *store(const char *name)
{
    char dir[4096];
    struct blob_store *bs = NULL;
    struct sc_error err;
    snprintf(dir, sizeof dir, "%s/%s", th_tmpdir(), name);
    REQUIRE(blob_store_open(dir, dir, 0, &bs, &err) == SC_OK);
    return bs;
}

static void run(const char *name, const char *const *paths, size_t n, const struct wcase *c, size_t nc)
{
    struct blob_store *bs = store(name);
    struct built_model *m = model_of(bs, paths, n);
    check_cases(m, c, nc);
    built_model_free(m);
    blob_store_free(bs);
}

static void header(void)
{
    printf("  | job | set | tasks | predicted tasks (result) | B/task | growth MiB | predicted MiB | "
           "predicted/growth |\n");
}

/* The sample (4 ranks, data parallel) and a shared HTA trace (one rank of
 * 8, data parallel): more data parallelism and another GPU. */
TEST(svc_whatif_size_bounds_the_sample_and_a_shared_trace)
{
    static const char *const sample[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                         "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
    static const struct wcase sc[] = {
        {"sample", "{\"tp\":1,\"pp\":1,\"dp\":4}", "dp=8"},
        {"sample", "{\"tp\":1,\"pp\":1,\"dp\":4}", "gpu=h100-sxm"},
    };
    header();
    run("whatif-size-sample", sample, 4, sc, sizeof sc / sizeof sc[0]);
    if (!th_shared_traces())
        SKIP("../shared/traces is absent");
    char hta[4096];
    snprintf(hta, sizeof hta, "%s",
             th_shared_path("HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz"));
    const char *const real[] = {hta};
    static const struct wcase hc[] = {
        {"HTA control", "{\"tp\":1,\"pp\":1,\"dp\":8}", "dp=16"},
        {"HTA control", "{\"tp\":1,\"pp\":1,\"dp\":8}", "dp=2,gpu=v100-sxm2-16gb"},
    };
    run("whatif-size-hta", real, 1, hc, sizeof hc / sizeof hc[0]);
}

/* Layer counts: a gentrace job (2 ranks, 8 annotated layers) to 16 and
 * 64 layers (the copy re-timed), and a `stepcast synth` job (4 layers, dp
 * 4) to 16 and 64 layers on 2 stages (the schedule rebuilt, the most
 * growth), the what-if the admission test refuses at 4,096 layers. */
TEST(svc_whatif_size_bounds_layer_and_stage_changes)
{
    char dir[4096], p0[4200], p1[4200];
    const char *args[] = {"--layers", "8", "--modules", "--seed", "3", NULL};
    th_gentrace_dir(2, args, dir, sizeof dir);
    snprintf(p0, sizeof p0, "%s/rank0.json", dir);
    snprintf(p1, sizeof p1, "%s/rank1.json", dir);
    const char *const gen[] = {p0, p1};
    static const struct wcase gc[] = {
        {"gentrace 2x8 layers", "{\"tp\":1,\"pp\":1,\"dp\":2,\"layers\":8}", "layers=16"},
        {"gentrace 2x8 layers", "{\"tp\":1,\"pp\":1,\"dp\":2,\"layers\":8}", "layers=64"},
    };
    header();
    run("whatif-size-gentrace", gen, 2, gc, sizeof gc / sizeof gc[0]);

    static const char spec[] =
        "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024},\"parallel\":{\"tp\":1,\"pp\":1,"
        "\"dp\":4,\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    char out[4096], trace[4200];
    snprintf(out, sizeof out, "%s/whatif-size-synth", th_tmpdir());
    char *spec_path = strdup(th_write_file("whatif-size-spec.json", spec, strlen(spec)));
    char *argv[] = {(char *)th_build_path("stepcast"), "synth", "--spec", spec_path, "--out", out, "--detail",
                    "kernel", NULL};
    free(th_run_expect(argv, 0, NULL, NULL));
    free(spec_path);
    snprintf(trace, sizeof trace, "%s/rank0.pt.trace.json", out);
    const char *const synth[] = {trace};
#define SYNTH_CFG                                                                                           \
    "{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8,\"layers\":4,\"hidden\":1024,\"heads\":16," \
    "\"seq\":1024}"
    static const struct wcase yc[] = {
        {"synth 4 layers", SYNTH_CFG, "layers=16,pp=2"},
        {"synth 4 layers", SYNTH_CFG, "layers=64,pp=2"},
        {"synth 4 layers", SYNTH_CFG, "layers=256,pp=4"},
    };
#undef SYNTH_CFG
    run("whatif-size-synth", synth, 1, yc, sizeof yc / sizeof yc[0]);
}
