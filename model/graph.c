/* model/graph.c: the graph's lifetime and names (graph.h); building is in
 * graph_build.c. */
#include "model/graph.h"

#include <errno.h>
#include <stdlib.h>

#include "model/job.h"
#include "common/banned.h"

static const char *const edge_names[MODEL_EDGE_KIND_COUNT] = {
    [MODEL_EDGE_LAUNCH] = "launch",
    [MODEL_EDGE_EVENT_SYNC] = "event_sync",
    [MODEL_EDGE_HOST_SYNC] = "host_sync",
    [MODEL_EDGE_LAUNCH_QUEUE] = "launch_queue",
    [MODEL_EDGE_INTER_THREAD] = "inter_thread",
    [MODEL_EDGE_GPU_WAIT] = "gpu_wait",
};

const char *model_edge_kind_name(enum model_edge_kind k)
{
    return (unsigned)k < MODEL_EDGE_KIND_COUNT ? edge_names[k] : "unknown";
}

void model_graph_opts_default(struct model_graph_opts *o)
{
    o->first_step = -1;
    o->last_step = -1;
    o->inter_thread_gap_ns = MODEL_INTER_THREAD_GAP_NS;
    o->use_cuda_sync = 1;
}

int model_graph_parse_steps(const char *spec, struct model_graph_opts *o, struct sc_error *err)
{
    char *end;
    errno = 0;
    long long a = strtoll(spec, &end, 10), b = a;
    if (end == spec || errno || a < 0)
        goto bad;
    if (*end == '-') {
        const char *p = end + 1;
        b = strtoll(p, &end, 10);
        if (end == p || errno || b < a)
            goto bad;
    }
    if (*end)
        goto bad;
    o->first_step = a;
    o->last_step = b;
    return SC_OK;
bad:
    return sc_error_set(err, SC_EINVAL, "bad step range '%s': expected A-B or A (step numbers, A <= B)",
                        spec);
}

void model_graph_free(struct model_graph *g)
{
    if (!g)
        return;
    free(g->tasks);
    free(g->prev);
    free(g->next);
    free(g->edges);
    free(g->pred_at);
    free(g->res);
    free(g->steps);
    free(g->succ_at);
    free(g->succs);
    free(g->group_at);
    free(g->group_tasks);
    free(g->clock_offset_ns);
    free(g->launch_queue_depth);
    free(g);
}

size_t model_graph_bytes(const struct model_graph *g)
{
    size_t ranks = g->job ? g->job->n_ranks : 0;
    return sizeof *g + g->n_tasks * (sizeof *g->tasks + 4 * sizeof(uint32_t)) +
           g->n_edges * (sizeof *g->edges + sizeof(uint32_t)) + g->n_res * sizeof *g->res +
           g->n_steps * sizeof *g->steps + (g->n_groups + 1) * sizeof(uint32_t) +
           g->n_tasks * sizeof(uint32_t) + ranks * 2 * sizeof(int64_t);
}
