/* tests/golden/test_golden_inspect.c: `inspect --json` pinned on every real
 * trace in ../shared/traces (tests/golden/inspect/<name>.json). A change in
 * what the reader extracts shows up here as a named difference; after an
 * intended change, UPDATE_GOLDEN=1 rewrites the files (review the diff). */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "api/inspect_json.h"
#include "model/graph.h"
#include "model/job.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/json_compare.h"
#include "common/banned.h"

static const char *const ignore[] = {"source", "stepcast_version", NULL};

static void golden(const char *name, const char *rel, const char *marker)
{
    const char *path = th_shared_path(rel);
    struct model_load_opts o;
    struct model_job *job = NULL;
    struct sc_error err;
    char golden_path[512];

    model_load_opts_default(&o);
    o.step_marker = marker;
    CHECK(model_job_load(&path, 1, &o, 0, &job, &err) == SC_OK);
    if (!job) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    struct model_graph *g = NULL;
    int rc = model_graph_build(job, NULL, &g, &err);
    CHECK(rc == SC_OK || rc == SC_EINVAL); /* a job with no step has no graph */
    json_t *doc = api_inspect_job_json(job, g, &err);
    model_graph_free(g);
    CHECK(doc != NULL);
    snprintf(golden_path, sizeof golden_path, "tests/golden/inspect/%s.json", name);
    if (doc)
        th_check_golden(golden_path, doc, 1e-9, ignore);
    json_decref(doc);
    model_job_free(job);
}

#define HTA "HolisticTraceAnalysis/tests/data/"
#define PARAM "param/et_replay/tests/inputs/"

TEST(golden_inspect_nccl_data) { golden("nccl_data", HTA "nccl_parser_config/nccl_data.json.gz", NULL); }
TEST(golden_inspect_negative_queue) { golden("negative_queue", HTA "negative_queue_length_values_check/rank0.json.gz", NULL); }
TEST(golden_inspect_control) { golden("control", HTA "trace_diff/control/control.json.gz", NULL); }
TEST(golden_inspect_test) { golden("test", HTA "trace_diff/test/test.json.gz", NULL); }
TEST(golden_inspect_sampled_rank0) { golden("sampled_rank-0", HTA "trace_filter/sampled_rank-0.json.gz", NULL); }
TEST(golden_inspect_sampled_rank1) { golden("sampled_rank-1", HTA "trace_filter/sampled_rank-1.json.gz", NULL); }
TEST(golden_inspect_ns_resolution) { golden("ns_resolution", HTA "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", NULL); }
TEST(golden_inspect_alexnet) { golden("alexnet", HTA "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", NULL); }
TEST(golden_inspect_simple_add) { golden("simple_add", HTA "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", NULL); }
TEST(golden_inspect_cuda_event_sync) { golden("cuda_event_sync", HTA "critical_path/cuda_event_sync/event_sync_trace.json.gz", NULL); }
TEST(golden_inspect_cuda_event_sync_multi_stream) { golden("cuda_event_sync_multi_stream", HTA "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", NULL); }
TEST(golden_inspect_execution_trace_kineto) { golden("benchmark_simple_add", HTA "execution_trace/benchmark_simple_add_trace.json.gz", NULL); }
TEST(golden_inspect_dlrm_8_ranks) { golden("dlrm", PARAM "dlrm_kineto.tar.gz", NULL); }
TEST(golden_inspect_linear) { golden("linear", PARAM "linear_kineto.json.gz", "Optimizer.step"); }
TEST(golden_inspect_resnet) { golden("resnet", PARAM "resnet_kineto.json.gz", "Optimizer.step"); }
