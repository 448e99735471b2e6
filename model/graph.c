/* model/graph.c: the graph's lifetime and names (graph.h); building is in
 * graph_builder.c (the public builder) and graph_build.c (from a trace). */
#include "model/graph.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "model/job.h"
#include "common/banned.h"

static const char *const edge_names[MODEL_EDGE_KIND_COUNT] = {
    [MODEL_EDGE_LAUNCH] = "launch",
    [MODEL_EDGE_EVENT_SYNC] = "event_sync",
    [MODEL_EDGE_HOST_SYNC] = "host_sync",
    [MODEL_EDGE_LAUNCH_QUEUE] = "launch_queue",
    [MODEL_EDGE_INTER_THREAD] = "inter_thread",
    [MODEL_EDGE_GPU_WAIT] = "gpu_wait",
    [MODEL_EDGE_STEP_END] = "step_end",
    [MODEL_EDGE_HOST_POLL] = "host_poll",
    [MODEL_EDGE_UNEXPLAINED] = "unexplained",
};

const char *model_edge_kind_name(enum model_edge_kind k)
{
    return (unsigned)k < MODEL_EDGE_KIND_COUNT ? edge_names[k] : "unknown";
}

int64_t model_graph_unexplained_wait(const struct model_graph *g, uint32_t i)
{
    int64_t w = 0;
    assert(i < g->n_tasks);
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
        if (g->edges[e].kind == MODEL_EDGE_UNEXPLAINED && g->edges[e].lat > w)
            w = g->edges[e].lat;
    return w;
}

static int by_rank_name(const void *a, const void *b)
{
    const struct model_host_wait *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

int model_graph_host_waits(const struct model_graph *g, struct model_host_wait **out, size_t *n)
{
    struct model_host_wait *v = NULL;
    size_t cap = 0, used = 0;
    *out = NULL;
    *n = 0;
    /* one entry per edge, then sorted and merged */
    for (uint32_t i = 0; i < g->n_tasks; i++)
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
            const struct model_edge *ed = &g->edges[e];
            if (ed->kind != MODEL_EDGE_HOST_POLL)
                continue;
            if (sc_vec_reserve((void **)&v, &cap, used + 1, sizeof *v)) {
                free(v);
                return SC_ENOMEM;
            }
            int loop = ed->type == MODEL_FF;
            assert(ed->from < g->n_tasks);
            v[used++] = (struct model_host_wait){g->tasks[i].rank, g->src[ed->from].name, !loop, (size_t)loop};
        }
    sc_sort(v, used, sizeof *v, by_rank_name);
    size_t k = 0;
    for (size_t i = 0; i < used; i++) {
        if (k && v[k - 1].rank == v[i].rank && v[k - 1].name == v[i].name) {
            v[k - 1].without_call += v[i].without_call;
            v[k - 1].polling_loops += v[i].polling_loops;
        } else {
            v[k++] = v[i];
        }
    }
    *out = v;
    *n = k;
    return SC_OK;
}

static const char *const class_names[MODEL_TASK_CLASS_COUNT] = {
    [MODEL_TASK_KERNEL] = "kernel", [MODEL_TASK_COPY] = "copy",     [MODEL_TASK_SET] = "set",
    [MODEL_TASK_COMM] = "communication", [MODEL_TASK_CALL] = "call", [MODEL_TASK_HOST] = "host",
    [MODEL_TASK_MARKER] = "marker",
};

static const char *const call_names[MODEL_CALL_KIND_COUNT] = {
    [MODEL_CALL_OTHER] = "other", [MODEL_CALL_LAUNCH] = "launch", [MODEL_CALL_SYNC] = "sync",
    [MODEL_CALL_MEMCPY] = "memcpy",
};

const char *model_task_class_name(enum model_task_class c)
{
    return (unsigned)c < MODEL_TASK_CLASS_COUNT ? class_names[c] : "unknown";
}

const char *model_call_kind_name(enum model_call_kind k)
{
    return (unsigned)k < MODEL_CALL_KIND_COUNT ? call_names[k] : "unknown";
}

int model_task_class_parse(const char *name)
{
    for (int c = 0; c < MODEL_TASK_CLASS_COUNT; c++)
        if (strcmp(class_names[c], name) == 0)
            return c;
    return -1;
}

void model_graph_opts_default(struct model_graph_opts *o)
{
    o->first_step = -1;
    o->last_step = -1;
    o->inter_thread_gap_ns = MODEL_INTER_THREAD_GAP_NS;
    o->use_cuda_sync = 1;
    o->fold_over = MODEL_FOLD_OVER;
    o->fold_reps_max = 0;
    o->inspect_only = 0;
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
    sc_strtab_release(&g->names);
    free((void *)g->tasks);
    free((void *)g->src);
    free((void *)g->prev); /* and next, pred_at, succ_at: one allocation (graph_builder.c) */
    free((void *)g->edges); /* and succs */
    free((void *)g->res);
    free((void *)g->steps);
    free((void *)g->ranks);
    free((void *)g->groups);
    free((void *)g->group_at);
    free((void *)g->group_tasks);
    free((void *)g->parts);
    free((void *)g->peers);
    free((void *)g->folding.folded);
    free((void *)g->folding.measured);
    free(g);
}

size_t model_graph_folded_into(const struct model_graph *g, uint16_t r, size_t *first)
{
    const struct model_graph_folding *f = &g->folding;
    size_t lo = 0, hi = f->n_folded;
    while (lo < hi) { /* the first folded into r or a later rank */
        size_t mid = lo + (hi - lo) / 2;
        if (f->folded[mid].rep < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    while (hi < f->n_folded && f->folded[hi].rep == r)
        hi++;
    return hi - lo;
}

const struct model_trace *model_graph_trace(const struct model_graph *g, uint16_t r)
{
    const struct model_job *job = g->job;
    for (size_t i = 0; job && i < job->n_ranks; i++)
        if (job->rank_ids[i] == g->ranks[r].id)
            return job->ranks[i];
    return NULL;
}

size_t model_graph_part_seek(const struct model_graph *g, uint32_t i)
{
    size_t lo = 0, hi = g->n_parts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->parts[mid].task < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert(lo == g->n_parts || g->parts[lo].task >= i);
    assert(lo == 0 || g->parts[lo - 1].task < i);
    return lo;
}

size_t model_graph_bytes(const struct model_graph *g)
{
    size_t names = g->names.arena.bytes + g->names.n * sizeof *g->names.strs + g->names.nslots * sizeof(uint32_t);
    return sizeof *g + names + g->n_tasks * (sizeof *g->tasks + sizeof *g->src + 4 * sizeof(uint32_t)) +
           g->n_edges * (sizeof *g->edges + sizeof(uint32_t)) + g->n_res * sizeof *g->res +
           g->n_steps * sizeof *g->steps + g->n_ranks * sizeof *g->ranks +
           g->n_groups * (sizeof *g->groups + sizeof(uint32_t)) + g->n_tasks * sizeof(uint32_t) +
           g->n_parts * sizeof *g->parts + g->n_peers * sizeof *g->peers +
           g->folding.n_folded * sizeof *g->folding.folded + g->folding.n_measured * sizeof(int64_t);
}
