/* tests/shared_traces.c: the shared real traces with steps (shared_traces.h). */
#include "tests/shared_traces.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/job_config.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define HTA "HolisticTraceAnalysis/tests/data/"
#define PARAM "param/et_replay/tests/inputs/"

const struct shared_trace th_traces[] = {
    {"nccl_data", HTA "nccl_parser_config/nccl_data.json.gz", NULL},
    {"negative_queue", HTA "negative_queue_length_values_check/rank0.json.gz", NULL},
    {"control", HTA "trace_diff/control/control.json.gz", NULL},
    {"test", HTA "trace_diff/test/test.json.gz", NULL},
    {"ns_resolution", HTA "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", NULL},
    {"dlrm", PARAM "dlrm_kineto.tar.gz", NULL},
    {"linear", PARAM "linear_kineto.json.gz", "Optimizer.step"},
    {"resnet", PARAM "resnet_kineto.json.gz", "Optimizer.step"},
    {"cuda_event_sync", HTA "critical_path/cuda_event_sync/event_sync_trace.json.gz", NULL},
    {"sampled", HTA "trace_filter/sampled_rank-0.json.gz", NULL},
};
const size_t th_n_traces = sizeof th_traces / sizeof th_traces[0];

const struct shared_trace *th_find_trace(const char *name)
{
    for (size_t i = 0; i < th_n_traces; i++)
        if (strcmp(th_traces[i].name, name) == 0)
            return &th_traces[i];
    return NULL;
}

int th_load_files(const char *const *rel, size_t n, const char *marker, struct model_job **job)
{
    char buf[TH_MAX_FILES][4096];
    const char *paths[TH_MAX_FILES];
    struct model_load_opts lo;
    struct sc_error err;
    *job = NULL;
    REQUIRE(n <= TH_MAX_FILES);
    for (size_t i = 0; i < n; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", th_shared_path(rel[i])); /* skips when absent */
        paths[i] = buf[i];
    }
    model_load_opts_default(&lo);
    lo.step_marker = marker;
    if (model_job_load(paths, n, &lo, 0, job, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    return 0;
}

int th_load_trace(const struct shared_trace *st, struct model_job **job)
{
    return th_load_files(&st->path, 1, st->marker, job);
}

int th_load_ranks(const struct shared_trace *st, const int *keep, size_t n, struct model_job **job)
{
    struct model_job *all;
    struct sc_error err;
    *job = NULL;
    if (th_load_trace(st, &all))
        return -1;
    struct model_trace **kept = calloc(n ? n : 1, sizeof *kept);
    if (!kept) {
        model_job_free(all);
        sc_check_fail(__FILE__, __LINE__, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < all->n_ranks; k++)
            if (all->rank_ids[k] == keep[i] && all->ranks[k]) {
                kept[i] = all->ranks[k];
                all->ranks[k] = NULL; /* taken */
            }
    model_job_free(all);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (!kept[i]) {
            sc_check_fail(__FILE__, __LINE__, "%s has no rank %d", st->name, keep[i]);
            rc = -1;
        }
    if (rc == 0 && model_job_from_traces(kept, n, job, &err)) { /* takes them, also on failure */
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        rc = -1;
    } else if (rc) {
        for (size_t i = 0; i < n; i++)
            model_trace_free(kept[i]);
    }
    free(kept);
    return rc;
}

void th_gentrace_dir(int ranks, const char *const *args, char *dir, size_t size)
{
    char a_ranks[16], bin[4096];
    char *argv[40];
    size_t n = 0;
    static int serial;
    snprintf(dir, size, "%s/gen%d", th_tmpdir(), serial++);
    snprintf(bin, sizeof bin, "%s", th_build_path("gentrace"));
    snprintf(a_ranks, sizeof a_ranks, "%d", ranks);
    argv[n++] = bin;
    argv[n++] = "--ranks";
    argv[n++] = a_ranks;
    for (; args && *args && n + 2 < sizeof argv / sizeof argv[0]; args++)
        argv[n++] = (char *)*args;
    argv[n++] = dir;
    argv[n] = NULL;
    free(th_run_expect(argv, 0, NULL, NULL));
}

void th_gentrace_paths(int ranks, const char *const *args, char (*paths)[TH_PATH_MAX], const char **pv)
{
    char dir[4096];
    th_gentrace_dir(ranks, args, dir, sizeof dir);
    for (int r = 0; r < ranks; r++) {
        snprintf(paths[r], TH_PATH_MAX, "%s/rank%d.json", dir, r);
        pv[r] = paths[r];
    }
}

struct model_job *th_gentrace_job(int ranks, const char *const *args)
{
    char dir[4096];
    th_gentrace_dir(ranks, args, dir, sizeof dir);
    char **paths = calloc((size_t)ranks, sizeof *paths);
    struct model_job *job = NULL;
    CHECK(paths != NULL);
    for (int r = 0; paths && r < ranks; r++) {
        paths[r] = malloc(4200);
        CHECK(paths[r] != NULL);
        if (paths[r])
            snprintf(paths[r], 4200, "%s/rank%d.json", dir, r);
    }
    struct model_load_opts lo;
    struct sc_error err;
    model_load_opts_default(&lo);
    if (paths && model_job_load((const char *const *)paths, (size_t)ranks, &lo, 0, &job, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    for (int r = 0; paths && r < ranks; r++)
        free(paths[r]);
    free(paths);
    return job;
}

/* The replayed time of the k-th step of rank number id, ns (a folded
 * rank's through its representative); -1 when none. */
static int64_t kth_step(const struct model_replay *r, int id, size_t k)
{
    const struct model_graph *g = r->g;
    const struct model_folded_rank *f = NULL;
    int rk = -1;
    for (size_t i = 0; i < g->n_ranks && rk < 0; i++)
        if (g->ranks[i].id == id)
            rk = (int)i;
    for (size_t q = 0; q < g->folding.n_folded && rk < 0; q++)
        if (g->folding.folded[q].id == id) {
            f = &g->folding.folded[q];
            rk = f->rep;
        }
    for (size_t s = 0, j = 0; s < r->n_steps; s++)
        if (r->steps[s].rank == rk && j++ == k)
            return f ? model_replay_folded_ns(r, s, k, f) : r->steps[s].replayed_ns;
    return -1;
}

void th_check_folded_replay(const struct model_replay *whole, const struct model_replay *folded, double tol_pct)
{
    const struct model_graph *gw = whole->g, *gf = folded->g;
    REQUIRE(gf->folding.on && gf->folding.ranks == gw->n_ranks && !gw->folding.n_folded);
    CHECK_EQ_INT(gf->n_ranks + gf->folding.n_folded, gw->n_ranks);
    CHECK_EQ_INT(folded->n_scored, whole->n_scored);
    CHECK_NEAR(folded->mean_abs_error_pct, whole->mean_abs_error_pct, tol_pct);
    for (size_t k = 0;; k++) {
        double sum_w = 0, sum_f = 0, max_w = 0, max_f = 0;
        size_t n = 0;
        for (size_t i = 0; i < gw->n_ranks; i++) {
            int64_t w = kth_step(whole, gw->ranks[i].id, k), f = kth_step(folded, gw->ranks[i].id, k);
            CHECK((w < 0) == (f < 0));
            if (w < 0 || f < 0)
                continue;
            if (fabs((double)(f - w)) > tol_pct / 100 * (double)w)
                sc_check_fail(__FILE__, __LINE__, "rank %d step %zu: folded %lld ns, whole %lld ns", gw->ranks[i].id,
                              k, (long long)f, (long long)w);
            sum_w += (double)w;
            sum_f += (double)f;
            max_w = w > max_w ? (double)w : max_w;
            max_f = f > max_f ? (double)f : max_f;
            n++;
        }
        if (!n)
            break;
        CHECK_NEAR(sum_f / sum_w, 1.0, tol_pct / 100);
        CHECK_NEAR(max_f / max_w, 1.0, tol_pct / 100);
    }
}

int th_structure_recover(struct model_job *job, const char *cfg_text, struct th_structure *out)
{
    struct job_config cfg;
    struct sc_error err;
    memset(out, 0, sizeof *out);
    if (!(out->job = job))
        return -1;
    if (spec_job_config_parse(cfg_text, strlen(cfg_text), &cfg, &err) || model_graph_build(job, NULL, &out->g, &err) ||
        whatif_job_structure_recover(out->g, NULL, &cfg, &out->st, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    return 0;
}

void th_structure_release(struct th_structure *s)
{
    whatif_job_structure_release(&s->st);
    model_graph_free(s->g);
    model_job_free(s->job);
    memset(s, 0, sizeof *s);
}
