/* tests/unit/test_graph_check.c: model_graph_check() on a built graph,
 * then on copies of it corrupted once per invariant kind, each named. */
#include <stdlib.h>
#include <string.h>

#include "model/graph.h"
#include "model/graph_check.h"
#include "model/job.h"
#include "tests/check.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

/* Two launches on one stream, a sync and host work: every kind of task,
 * resource and edge the invariants cover. */
static struct model_graph *small_graph(struct model_job **job)
{
    struct tb tb;
    struct sc_error err;
    struct model_graph *g = NULL;
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    tb_launch(&tb, 10, 5, 7, "k1", 20, 300);
    tb_launch(&tb, 16, 4, 7, "k2", 320, 100);
    tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 26, 400);
    tb_op(&tb, TB_MAIN, "aten::add", 500, 50);
    const char *path = tb_write(&tb, "check.json");
    tb_free(&tb);
    if (!(*job = tb_job(&path, 1)))
        return NULL;
    if (model_graph_build(*job, NULL, &g, &err)) {
        sc_check_fail(__FILE__, __LINE__, "build: %s", err.msg);
        return NULL;
    }
    return g;
}

/* g fails the check with a message naming kind. */
static void broken(const struct model_graph *g, const char *kind, const char *what)
{
    struct sc_error err;
    memset(&err, 0, sizeof err);
    int rc = model_graph_check(g, &err);
    if (rc != SC_EINVAL || !strstr(err.msg, kind))
        sc_check_fail(__FILE__, __LINE__, "%s: check gave %d \"%s\", not a %s error", what, rc, err.msg, kind);
}

TEST(graph_check_passes_a_built_graph)
{
    struct model_job *job = NULL;
    struct model_graph *g = small_graph(&job);
    struct sc_error err;
    REQUIRE(g != NULL);
    CHECK(g->n_tasks >= 5 && g->n_edges >= 3);
    CHECK_EQ_INT(model_graph_check(g, &err), SC_OK);
    model_graph_free(g);
    model_job_free(job);
}

TEST(graph_check_names_each_corruption)
{
    struct model_job *job = NULL;
    struct model_graph *g = small_graph(&job);
    struct sc_error err;
    REQUIRE(g != NULL);
    struct model_task *tasks = (struct model_task *)g->tasks;
    struct model_edge *edges = (struct model_edge *)g->edges;
    uint32_t *pred_at = (uint32_t *)g->pred_at, *succ_at = (uint32_t *)g->succ_at, *next = (uint32_t *)g->next;
    uint32_t e = g->pred_at[g->n_tasks - 1] < g->n_edges ? g->pred_at[g->n_tasks - 1] : 0, keep32;
    struct model_task keep_task;
    struct model_edge keep_edge;

    /* CSR offsets: a start past the end, a list that falls */
    keep32 = pred_at[1];
    pred_at[1] = (uint32_t)g->n_edges + 1;
    broken(g, "CSR offsets", "pred_at past the end");
    pred_at[1] = keep32;
    keep32 = succ_at[g->n_tasks];
    succ_at[g->n_tasks] = keep32 - 1;
    broken(g, "CSR offsets", "succ_at short of the edges");
    succ_at[g->n_tasks] = keep32;
    /* a successor list that is not the mirror of the predecessors' */
    keep_edge = edges[e];
    edges[e].type = (uint8_t)(edges[e].type == MODEL_FS ? MODEL_SS : MODEL_FS);
    broken(g, "CSR offsets", "an edge's type changed on one side");
    edges[e] = keep_edge;

    /* ids: an edge from no task, a task on no resource, a name past the table */
    edges[e].from = (uint32_t)g->n_tasks + 7;
    broken(g, "ids", "an edge from task n + 7");
    edges[e] = keep_edge;
    keep_task = tasks[1];
    tasks[1].res = (uint32_t)g->n_res;
    broken(g, "ids", "a task on resource n_res");
    tasks[1] = keep_task;
    keep_task = tasks[0];
    tasks[0].rank = (uint16_t)g->n_ranks;
    broken(g, "ids", "a task on rank n_ranks");
    tasks[0] = keep_task;

    /* edge kinds */
    edges[e].kind = MODEL_EDGE_KIND_COUNT;
    broken(g, "edge kinds", "an edge of kind MODEL_EDGE_KIND_COUNT");
    edges[e] = keep_edge;
    edges[e].type = MODEL_SF + 1;
    broken(g, "edge kinds", "an edge of type 4");
    edges[e] = keep_edge;

    /* time order: a negative duration, a resource running a task twice */
    keep_task = tasks[2];
    tasks[2].dur = -5;
    broken(g, "time order", "a negative duration");
    tasks[2] = keep_task;
    uint32_t first = g->res[g->tasks[0].res].first;
    keep32 = next[first];
    REQUIRE(keep32 != MODEL_NONE);
    next[first] = first; /* the chain loops back on itself */
    broken(g, "time order", "a resource's chain going back");
    next[first] = keep32;

    CHECK_EQ_INT(model_graph_check(g, &err), SC_OK); /* restored */
    model_graph_free(g);
    model_job_free(job);
}
