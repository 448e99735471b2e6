/* tests/shared_traces.c: the shared real traces with steps (shared_traces.h). */
#include "tests/shared_traces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/coll_split.h"
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

int th_load_trace(const struct shared_trace *st, struct model_job **job)
{
    const char *path = th_shared_path(st->path);
    struct model_load_opts lo;
    struct sc_error err;
    model_load_opts_default(&lo);
    lo.step_marker = st->marker;
    if (model_job_load(&path, 1, &lo, 0, job, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    return 0;
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

int th_split_waits(const struct model_graph *g, struct model_replay_opts *o, struct model_coll_wait **v)
{
    struct sc_error err;
    if (coll_split_waits(g, v, &o->waits.n, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    o->waits.v = *v;
    return 0;
}
