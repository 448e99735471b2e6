/* tests/shared_traces.c: the shared real traces with steps (shared_traces.h). */
#include "tests/shared_traces.h"

#include <string.h>

#include "model/job.h"
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
