/* tests/unit/test_timeline.c: the replayed timeline as the trace replayed
 * (api/timeline_json.h): original names, categories and arguments at the
 * replayed times, flows and cuda_sync events kept, nesting kept, every
 * event a valid Chrome trace event, and distributedInfo's "rank" spelled
 * as the PyTorch profiler spells it, before any other. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/timeline_json.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/whatif.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

/* Whether o is a complete, metadata or flow event as the Chrome
 * trace-event format defines them (Perfetto reads these). */
static int chrome_event_ok(const json_t *o)
{
    const char *ph = json_string_value(json_object_get(o, "ph"));
    const json_t *pid = json_object_get(o, "pid"), *tid = json_object_get(o, "tid");
    if (!ph || !json_is_string(json_object_get(o, "name")) || !(json_is_integer(pid) || json_is_string(pid)) ||
        !(json_is_integer(tid) || json_is_string(tid)))
        return 0;
    if (!strcmp(ph, "M"))
        return json_is_string(json_object_get(json_object_get(o, "args"), "name"));
    if (!json_is_number(json_object_get(o, "ts")) || json_number_value(json_object_get(o, "ts")) < 0)
        return 0;
    if (!strcmp(ph, "X"))
        return json_is_number(json_object_get(o, "dur")) && json_number_value(json_object_get(o, "dur")) >= 0 &&
               json_is_string(json_object_get(o, "cat")) && json_is_object(json_object_get(o, "args"));
    if (!strcmp(ph, "s") || !strcmp(ph, "f"))
        return json_object_get(o, "id") && json_is_string(json_object_get(o, "cat")) &&
               (ph[0] == 's' || !strcmp(json_string_value(json_object_get(o, "bp")), "e"));
    return 0;
}

/* The first complete event named `name` (and of category `cat` if not
 * NULL), or NULL. */
static json_t *find_event(json_t *events, const char *name, const char *cat)
{
    size_t i;
    json_t *o;
    json_array_foreach(events, i, o) {
        if (!strcmp(json_string_value(json_object_get(o, "ph")), "X") &&
            !strcmp(json_string_value(json_object_get(o, "name")), name) &&
            (!cat || !strcmp(json_string_value(json_object_get(o, "cat")), cat)))
            return o;
    }
    return NULL;
}

static double num(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

static double arg(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(json_object_get(o, "args"), key));
}

/* One step: aten::mm (External id 7, Input Dims) launches a 400 us gemm
 * from inside it, with its ac2g flow; a stream sync waits for it (and has
 * its cuda_sync event); then host work. Replayed with GPU work twice as
 * long. */
TEST(timeline_replays_the_trace_events)
{
    struct tb tb;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 700);
    tb_event(&tb, "cpu_op", "aten::mm", TB_PID, TB_MAIN, 5, 30,
             "\"External id\": 7, \"Input Dims\": [[4, 8], [8, 16]], \"Input type\": [\"float\", \"float\"]");
    int corr = tb_launch(&tb, 10, 5, 7, "gemm", 20, 400);
    tb_flow(&tb, 's', "ac2g", corr, TB_PID, TB_MAIN, 10);
    tb_flow(&tb, 'f', "ac2g", corr, 0, 7, 20);
    int sync = tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 40, 385);
    char sargs[128];
    snprintf(sargs, sizeof sargs, "\"correlation\": %d, \"cuda_sync_kind\": \"Stream Sync\", \"stream\": 7", sync);
    tb_event(&tb, "cuda_sync", "Stream Sync", 0, 7, 420, 0, sargs);
    tb_op(&tb, TB_MAIN, "aten::add", 450, 100);
    const char *path = tb_write(&tb, "timeline.json");
    tb_free(&tb);

    struct model_job *job = tb_job(&path, 1);
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    struct model_replay_opts ro;
    struct sc_error err;
    REQUIRE(job);
    model_replay_opts_default(&ro);
    REQUIRE(model_replay_parse_scale("gpu=2", &ro, &err) == SC_OK);
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(model_replay_run(g, &ro, &r, &err) == SC_OK);
    json_t *doc = api_timeline_json(r, 0);
    REQUIRE(doc);
    char *text = json_dumps(doc, API_TIMELINE_DUMP_FLAGS);
    REQUIRE(text);
    /* the file's first "rank" is distributedInfo's, with a space after the colon */
    const char *rank = strstr(text, "\"rank\"");
    REQUIRE(rank);
    CHECK(!strncmp(rank, "\"rank\": 0", 9));
    CHECK(strstr(text, "\"distributedInfo\": {") < rank && rank < strstr(text, "\"traceEvents\""));
    free(text);

    json_t *events = json_object_get(doc, "traceEvents"), *o;
    size_t i, flows = 0, steps = 0;
    json_array_foreach(events, i, o) {
        CHECK(chrome_event_ok(o));
        const char *ph = json_string_value(json_object_get(o, "ph"));
        flows += ph && (ph[0] == 's' || ph[0] == 'f');
        steps += ph && ph[0] == 'X' && !strcmp(json_string_value(json_object_get(o, "name")), "ProfilerStep#1");
    }
    CHECK_EQ_INT(flows, 2);
    CHECK_EQ_INT(steps, 1);

    json_t *mm = find_event(events, "aten::mm", "cpu_op"), *gemm = find_event(events, "gemm", "kernel");
    json_t *launch = find_event(events, "cudaLaunchKernel", "cuda_runtime");
    json_t *wait = find_event(events, "cudaStreamSynchronize", "cuda_runtime");
    json_t *cs = find_event(events, "Stream Sync", "cuda_sync"), *add = find_event(events, "aten::add", NULL);
    REQUIRE(mm && gemm && launch && wait && cs && add);
    CHECK_EQ_INT(arg(mm, "External id"), 7);
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(mm, "args"), "Input Dims")), 2);
    CHECK_NEAR(arg(mm, "measured_dur"), 30, 1e-9);
    /* the gemm replays at twice its measured 400 us, linked to its launch */
    CHECK_NEAR(num(gemm, "dur"), 800, 1e-6);
    CHECK_NEAR(arg(gemm, "measured_dur"), 400, 1e-9);
    CHECK_EQ_INT(arg(gemm, "correlation"), corr);
    CHECK_EQ_INT(arg(launch, "correlation"), corr);
    CHECK_EQ_INT(arg(gemm, "stream"), 7);
    /* what nested stays nested: the op holds its launch */
    CHECK(num(mm, "ts") <= num(launch, "ts"));
    CHECK(num(mm, "ts") + num(mm, "dur") >= num(launch, "ts") + num(launch, "dur"));
    /* the sync returns after the longer gemm; the host work follows it */
    CHECK(num(wait, "ts") + num(wait, "dur") >= num(gemm, "ts") + num(gemm, "dur"));
    CHECK(num(add, "ts") >= num(wait, "ts") + num(wait, "dur"));
    CHECK_NEAR(num(add, "dur"), 100, 1e-6);
    CHECK_EQ_INT(arg(cs, "correlation"), sync);
    CHECK_STREQ(json_string_value(json_object_get(json_object_get(cs, "args"), "cuda_sync_kind")), "Stream Sync");
    /* the flow's end lands on the replayed kernel */
    json_array_foreach(events, i, o) {
        if (!strcmp(json_string_value(json_object_get(o, "ph")), "f"))
            CHECK_NEAR(num(o, "ts"), num(gemm, "ts"), 1e-6);
    }
    json_decref(doc);
    model_replay_free(r);
    model_graph_free(g);
    model_job_free(job);
}

/* A what-if's timeline: the sample job at dp=16 (its collectives re-timed
 * in the transformed copy) written as the trace replayed: every event a
 * Chrome trace event, each GPU task of the copy once, the step as long as
 * the what-if's replay says. */
TEST(timeline_of_a_whatif)
{
    static const char cfg_text[] = "{\"tp\":1,\"pp\":1,\"dp\":4}";
    const char *paths[] = {"data/sample"};
    struct model_job *job = tb_job(paths, 1);
    struct model_graph *g = NULL;
    struct job_config cfg, set;
    struct whatif_result r;
    struct sc_error err;
    REQUIRE(job);
    spec_job_config_init(&set);
    REQUIRE(spec_job_config_parse(cfg_text, sizeof cfg_text - 1, &cfg, &err) == SC_OK);
    REQUIRE(spec_job_config_parse_set_list("dp=16", &set, &err) == SC_OK);
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(whatif_run(g, NULL, &cfg, &set, &r, &err) == SC_OK);
    const struct model_graph *w = r.graph;
    int rank = w->ranks[0].id;
    json_t *doc = api_timeline_json(r.replay, rank), *o;
    REQUIRE(doc);
    size_t i, gpu_events = 0, gpu_tasks = 0, bad = 0, steps = 0;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, o) {
        bad += !chrome_event_ok(o);
        const char *cat = json_string_value(json_object_get(o, "cat"));
        gpu_events += cat && (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset"));
        if (cat && !strcmp(cat, "user_annotation"))
            for (size_t k = 0; k < w->n_steps; k++)
                if (w->steps[k].rank == 0 &&
                    !strcmp(model_graph_str(w, w->steps[k].name), json_string_value(json_object_get(o, "name")))) {
                    CHECK_NEAR(num(o, "dur") * 1000.0, (double)r.replay->steps[k].replayed_ns, 1.0);
                    steps++;
                }
    }
    for (size_t t = 0; t < w->n_tasks; t++)
        gpu_tasks += w->tasks[t].rank == 0 && model_task_on_gpu(w->tasks[t].cls);
    CHECK_EQ_INT(bad, 0);
    CHECK(steps > 0);
    CHECK_EQ_INT(gpu_events, gpu_tasks);
    json_decref(doc);
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(job);
}
