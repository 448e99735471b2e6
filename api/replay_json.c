/* api/replay_json.c: replay and critical path documents
 * (replay_json.h). They read the graph (names, classes, resources, steps),
 * never the trace, so a graph built without one reports like any other. */
#include "api/replay_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/inspect_json.h"
#include "model/graph.h"
#include "model/replay.h"
#include "common/banned.h"

static json_t *pct(double v)
{
    return json_real(round(v * 1e6) / 1e6);
}

static const char *step_name(const struct model_replay *r, const struct model_replay_step *s)
{
    return model_graph_str(r->g, r->g->steps[s - r->steps].name);
}

static int rank_id(const struct model_graph *g, uint16_t rank)
{
    return g->ranks[rank].id;
}

/* A duration in ms, or null when nothing was measured. */
static json_t *ms_or_null(int64_t ns)
{
    return ns < 0 ? json_null() : api_json_ms(ns);
}

static json_t *graph_json(const struct model_graph *g)
{
    json_t *kinds = json_object(), *offsets = json_array(), *depths = json_array();
    for (int k = 0; k < MODEL_EDGE_KIND_COUNT; k++)
        json_object_set_new(kinds, model_edge_kind_name((enum model_edge_kind)k),
                            json_integer((json_int_t)g->stats.edges_by_kind[k]));
    for (size_t i = 0; i < g->n_ranks; i++) {
        json_array_append_new(offsets, api_json_ms(g->ranks[i].clock_offset_ns));
        json_array_append_new(depths, json_integer(g->ranks[i].launch_queue_depth));
    }
    return json_pack("{s:I, s:I, s:o, s:I, s:I, s:{s:I, s:I}, s:I, s:I, s:o, s:o, s:o}", "tasks",
                     (json_int_t)g->n_tasks, "edges", (json_int_t)g->n_edges, "edges_by_kind", kinds,
                     "event_syncs_inferred", (json_int_t)g->stats.inferred_event_syncs,
                     "event_syncs_from_cuda_sync", (json_int_t)g->stats.cuda_sync_event_syncs, "host_waits",
                     "without_call", (json_int_t)g->stats.host_waits_gap, "polling_loops",
                     (json_int_t)g->stats.host_waits_loop, "collectives_matched",
                     (json_int_t)g->stats.collectives_matched, "collectives_kept",
                     (json_int_t)g->stats.collectives_kept, "clock_offsets_ms", offsets, "launch_queue_depth", depths,
                     "collectives", api_collectives_json(g));
}

/* What a model gave the replay: the split of the collectives kept for
 * untraced peers (model/replay.h), by where the transfer came from. */
static json_t *models_used(const struct model_replay *r)
{
    static const char *const why[MODEL_WAIT_FROM_COUNT] = {
        "collectives kept for untraced peers split into transfer (the collective model's time for their size "
        "on the traced GPU) and wait for the peers (the rest, in collective_kept_ms)",
        "the trace gives no collective sizes: each collective kept for untraced peers has for transfer the "
        "traced time of its least-waiting instance, re-timed by the collective model's ratio (1 on the traced "
        "configuration), and for wait the rest (in collective_kept_ms)"};
    json_t *a = json_array();
    for (int k = 0; a && k < MODEL_WAIT_FROM_COUNT; k++)
        if (r->split_from[k])
            json_array_append_new(a, json_pack("{s:s, s:I, s:s}", "model", "collective_model", "tasks",
                                               (json_int_t)r->split_from[k], "why", why[k]));
    return a;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The measured times of step s (of rank rep) and of the ranks folded into
 * it (k-th step of rep), into v: their least, median and greatest. */
static json_t *measured_spread(const struct model_graph *g, size_t s, size_t k, size_t first, size_t n, int64_t *v)
{
    const struct model_graph_folding *f = &g->folding;
    size_t m = 0;
    if (g->steps[s].measured_ns > 0)
        v[m++] = g->steps[s].measured_ns;
    for (size_t q = first; q < first + n; q++)
        if (f->measured[f->folded[q].measured + k] > 0)
            v[m++] = f->measured[f->folded[q].measured + k];
    if (!m)
        return json_null();
    qsort(v, m, sizeof *v, cmp_i64);
    return json_pack("{s:o, s:o, s:o}", "min", api_json_ms(v[0]), "median", api_json_ms(v[m / 2]), "max",
                     api_json_ms(v[m - 1]));
}

/* How the job's ranks were folded (graph.h, MODEL_FOLD_OVER): how many
 * into how many, and each rank standing for others: which (itself first),
 * how much later each entered the first step than it (its first replayed
 * step is that much shorter), and their measured steps' spread. */
static json_t *folding_json(const struct model_graph *g)
{
    const struct model_graph_folding *f = &g->folding;
    json_t *groups = json_array();
    int64_t *v = malloc((f->n_folded + 1) * sizeof *v);
    if (!groups || !v) {
        json_decref(groups);
        free(v);
        return NULL;
    }
    for (size_t q = 0; q < f->n_folded;) {
        uint16_t rep = f->folded[q].rep;
        size_t e = q;
        json_t *ranks = json_array(), *after = json_array(), *steps = json_array();
        json_array_append_new(ranks, json_integer(rank_id(g, rep)));
        json_array_append_new(after, api_json_ms(0));
        for (; e < f->n_folded && f->folded[e].rep == rep; e++) {
            json_array_append_new(ranks, json_integer(f->folded[e].id));
            json_array_append_new(after, api_json_ms(f->folded[e].origin_ns));
        }
        for (size_t s = 0, k = 0; s < g->n_steps; s++)
            if (g->steps[s].rank == rep) {
                json_array_append_new(steps, json_pack("{s:s, s:o}", "step", model_graph_str(g, g->steps[s].name),
                                                       "measured_ms", measured_spread(g, s, k, q, e - q, v)));
                k++;
            }
        json_array_append_new(groups, json_pack("{s:i, s:o, s:o, s:o}", "rank", rank_id(g, rep), "ranks", ranks,
                                                "first_step_after_ms", after, "steps", steps));
        q = e;
    }
    free(v);
    return json_pack("{s:I, s:I, s:I, s:o}", "ranks", (json_int_t)f->ranks, "representatives",
                     (json_int_t)g->n_ranks, "folded", (json_int_t)f->n_folded, "groups", groups);
}

json_t *api_replay_json(const struct model_replay *r)
{
    json_t *steps = json_array();
    if (!steps)
        return NULL;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        const struct model_breakdown *b = &s->breakdown;
        json_array_append_new(
            steps, json_pack("{s:i, s:s, s:o, s:o, s:o*, s:b, s:{s:o, s:o, s:o, s:o, s:o, s:o}, s:o, s:o}", "rank",
                             rank_id(r->g, s->rank), "step", step_name(r, s), "measured_ms",
                             ms_or_null(s->measured_ns), "replayed_ms", api_json_ms(s->replayed_ns),
                             "error_pct", s->measured_ns < 0 ? NULL : pct(s->error_pct), "partial", s->partial, "breakdown",
                             "compute_exposed", api_json_ms(b->compute_exposed), "overlap",
                             api_json_ms(b->overlap), "comm_exposed", api_json_ms(b->comm_exposed),
                             "unexplained", api_json_ms(b->unexplained), "host", api_json_ms(b->host),
                             "idle", api_json_ms(b->idle), "collective_kept_ms",
                             api_json_ms(s->collective_kept_ns), "unexplained_ms",
                             ms_or_null(s->measured_ns < 0 ? -1 : s->unexplained_ns)));
    }
    json_t *doc = json_pack("{s:o, s:o, s:o, s:I, s:o, s:o}", "steps", steps, "mean_abs_error_pct",
                            pct(r->mean_abs_error_pct), "max_abs_error_pct", pct(r->max_abs_error_pct),
                            "forced", (json_int_t)r->forced, "graph", graph_json(r->g), "models_used",
                            models_used(r));
    if (doc && r->g->folding.on && json_object_set_new(doc, "folding", folding_json(r->g))) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* "rank 0 stream 7", "rank 0 thread 1234" */
static json_t *resource_name(const struct model_graph *g, uint32_t task)
{
    const struct model_resource *res = &g->res[g->tasks[task].res];
    char buf[96];
    snprintf(buf, sizeof buf, "rank %d %s %lld", rank_id(g, res->rank), res->gpu ? "stream" : "thread",
             (long long)res->tid);
    return json_string(buf);
}

static const char *task_name(const struct model_graph *g, uint32_t task)
{
    return model_graph_str(g, g->src[task].name);
}

/* A string made once into *slot and shared from then on (jansson counts
 * references): the paths repeat a few hundred task and resource names
 * over their thousands of segments. */
static json_t *shared(json_t **slot, json_t *(*make)(const struct model_graph *, uint32_t),
                      const struct model_graph *g, uint32_t arg)
{
    if (!*slot)
        *slot = make(g, arg);
    return json_incref(*slot);
}

static json_t *task_name_json(const struct model_graph *g, uint32_t task)
{
    return json_string(task_name(g, task));
}

static json_t *bound_json(const struct model_graph *g, uint32_t bound)
{
    (void)g;
    return json_string(model_bound_name((enum model_bound)bound));
}

json_t *api_critical_path_json(const struct model_replay *r)
{
    const struct model_graph *g = r->g;
    json_t *steps = json_array();
    /* by task name's string id, by resource, by bound */
    json_t **names = calloc(g->names.n + g->n_res + MODEL_BOUND_COUNT, sizeof *names);
    json_t **res = names ? names + g->names.n : NULL, **bounds = names ? res + g->n_res : NULL;
    if (!steps || !names) {
        json_decref(steps);
        free(names);
        return NULL;
    }
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        json_t *path = json_array();
        int64_t by[MODEL_BOUND_COUNT] = {0};
        for (size_t k = s->path_first; k < s->path_first + s->path_n; k++) {
            const struct model_replay_segment *sg = &r->segments[k];
            uint32_t name = g->src[sg->task].name;
            by[sg->bound] += sg->end - sg->start;
            json_t *seg = json_pack("{s:o, s:o, s:o, s:o, s:o}", "task",
                                    name < g->names.n ? shared(&names[name], task_name_json, g, sg->task)
                                                      : task_name_json(g, sg->task),
                                    "resource", shared(&res[g->tasks[sg->task].res], resource_name, g, sg->task),
                                    "start_ms", api_json_ms(sg->start - s->start), "end_ms",
                                    api_json_ms(sg->end - s->start), "bound",
                                    shared(&bounds[sg->bound], bound_json, g, sg->bound));
            if (seg && sg->edge == MODEL_EDGE_HOST_POLL) { /* the host waiting on GPU work with no sync call */
                char wait[160];
                snprintf(wait, sizeof wait, "host waits on %s", task_name(r->g, sg->on));
                json_object_set_new(seg, "wait", json_string(wait));
            }
            json_array_append_new(path, seg);
        }
        json_t *totals = json_object();
        for (int b = 0; b < MODEL_BOUND_COUNT; b++)
            json_object_set_new(totals, model_bound_name((enum model_bound)b), api_json_ms(by[b]));
        json_array_append_new(steps, json_pack("{s:i, s:s, s:o, s:o, s:o}", "rank",
                                               rank_id(r->g, s->rank), "step", step_name(r, s),
                                               "replayed_ms", api_json_ms(s->replayed_ns), "by_bound",
                                               totals, "path", path));
    }
    for (size_t k = 0; k < g->names.n + g->n_res + MODEL_BOUND_COUNT; k++)
        json_decref(names[k]);
    free(names);
    return json_pack("{s:o}", "steps", steps);
}
