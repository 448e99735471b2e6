/* estimator/whatif/graph_copy.c: a built graph copied through the builder with
 * new durations and inserted tasks (graph_copy.h). */
#include "estimator/whatif/graph_copy.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph.h"
#include "model/graph_builder.h"
#include "common/banned.h"

static const char *str_or_null(const struct model_graph *g, uint32_t id)
{
    return id == MODEL_NONE ? NULL : model_graph_str(g, id);
}

struct ins_ref {
    uint32_t after;
    size_t i;
};

static int ins_cmp(const void *a, const void *b)
{
    const struct ins_ref *x = a, *y = b;
    if (x->after != y->after)
        return x->after < y->after ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int whatif_graph_copy(const struct model_graph *g, const int64_t *dur, const int64_t *gap, const struct graph_insert *ins,
               size_t n_ins, struct model_graph **out, uint32_t **map_out, struct sc_error *err)
{
    struct model_gb *gb = model_gb_new(err);
    uint32_t *map = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *map);
    uint32_t *res_map = malloc((g->n_res ? g->n_res : 1) * sizeof *res_map);
    uint32_t *members = NULL;
    struct ins_ref *refs = n_ins ? malloc(n_ins * sizeof *refs) : NULL;
    uint32_t *gmap = NULL, *ins_id = n_ins ? malloc(n_ins * sizeof *ins_id) : NULL;
    uint32_t *side_res = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *side_res);
    int rc = SC_OK;
    *out = NULL;
    if (map_out)
        *map_out = NULL;
    if (!gb || !map || !res_map || (n_ins && (!refs || !ins_id)) || !side_res) {
        rc = gb ? sc_error_set(err, SC_ENOMEM, "out of memory") : SC_ENOMEM;
        goto fail;
    }
    for (size_t k = 0; k < n_ins; k++)
        refs[k] = (struct ins_ref){ins[k].after, k};
    if (n_ins)
        qsort(refs, n_ins, sizeof *refs, ins_cmp);
    for (size_t k = 0; k < n_ins; k++)
        assert(ins[k].after < g->n_tasks && (k == 0 || refs[k - 1].after <= refs[k].after));
    if (g->job)
        model_gb_set_job(gb, g->job);
    rc = model_gb_reserve(gb, g->n_tasks + n_ins, g->n_edges, g->n_groups, g->group_at ? g->group_at[g->n_groups] : 0);
    for (size_t r = 0; !rc && r < g->n_ranks; r++) {
        uint16_t id;
        rc = model_gb_add_rank(gb,
                               &(struct model_rank_spec){.id = g->ranks[r].id,
                                                         .clock_offset_ns = g->ranks[r].clock_offset_ns,
                                                         .launch_queue_depth = g->ranks[r].launch_queue_depth},
                               &id);
    }
    for (uint32_t k = 0; !rc && k < g->n_res; k++) {
        const struct model_resource *s = &g->res[k];
        const char *label = model_graph_str(g, s->label);
        rc = model_gb_add_resource(gb,
                                   &(struct model_res_spec){.rank = s->rank, .gpu = s->gpu, .comm = s->comm,
                                                            .label = label && *label ? label : NULL,
                                                            .pid = s->pid, .tid = s->tid,
                                                            .track = s->track == MODEL_NONE ? 0 : s->track,
                                                            .has_track = s->track != MODEL_NONE,
                                                            .origin = s->origin},
                                   &res_map[k]);
    }
    /* a side communication stream for each rank an insert asks one of */
    for (size_t r = 0; r < g->n_ranks; r++)
        side_res[r] = MODEL_NONE;
    for (size_t k = 0; !rc && k < n_ins; k++) {
        const struct model_resource *at = &g->res[g->tasks[ins[k].after].res];
        if (!ins[k].side || side_res[at->rank] != MODEL_NONE)
            continue;
        rc = model_gb_add_resource(gb,
                                   &(struct model_res_spec){.rank = at->rank, .gpu = 1, .comm = 1,
                                                            .label = "data-parallel (what-if)", .pid = at->pid,
                                                            .tid = -1 - (int64_t)at->rank, .origin = at->origin},
                                   &side_res[at->rank]);
    }
    /* tasks in the graph's order, which keeps each resource's (a built
     * graph numbers a resource's tasks in their order), so the copy needs
     * no layout; an inserted task right after the one it follows */
    for (uint32_t i = 0, m = 0; !rc && i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        const struct model_task_src *src = &g->src[i];
        assert(dur[i] >= 0 && gap[i] >= 0 && t->res < g->n_res);
        rc = model_gb_add_task(gb,
                               &(struct model_task_spec){.res = res_map[t->res], .cls = t->cls, .sub = t->sub,
                                                         .dur = dur[i], .gap = gap[i],
                                                         .name = model_graph_str(g, src->name), .event = src->event,
                                                         .has_event = src->event != MODEL_NONE,
                                                         .tag = str_or_null(g, src->tag), .kept = t->kept},
                               &map[i]);
        for (; !rc && m < n_ins && refs[m].after == i; m++) {
            const struct graph_insert *in = &ins[refs[m].i];
            uint32_t res = in->side ? side_res[g->res[t->res].rank] : res_map[t->res];
            assert(res != MODEL_NONE); /* a side insert's stream was added above */
            rc = model_gb_add_task(gb,
                                   &(struct model_task_spec){.res = res, .cls = in->cls, .sub = in->sub,
                                                             .dur = in->dur, .name = in->name},
                                   &ins_id[refs[m].i]);
        }
    }
    for (size_t k = 0; !rc && k < g->n_peers; k++)
        rc = model_gb_pair(gb, map[g->peers[k].task], res_map[g->peers[k].res]);
    for (uint32_t i = 0; !rc && i < g->n_tasks; i++)
        for (uint32_t e = g->pred_at[i]; !rc && e < g->pred_at[i + 1]; e++) {
            const struct model_edge *ed = &g->edges[e];
            assert(ed->from < g->n_tasks);
            rc = ed->peer ? model_gb_add_peer_edge(gb, map[ed->from], map[i], (enum model_edge_kind)ed->kind,
                                                   (enum model_edge_type)ed->type, ed->lat)
                          : model_gb_add_edge(gb, map[ed->from], map[i], (enum model_edge_kind)ed->kind,
                                              (enum model_edge_type)ed->type, ed->lat, ed->inferred);
        }
    /* a side task waits for the task it follows; a task waits for the
     * side tasks it is before */
    for (size_t k = 0; !rc && k < n_ins; k++) {
        if (ins[k].side)
            rc = model_gb_add_edge(gb, map[ins[k].after], ins_id[k], MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0, 0);
        if (!rc && ins[k].has_before)
            rc = model_gb_add_edge(gb, ins_id[k], map[ins[k].before], MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0, 0);
    }
    for (size_t s = 0; !rc && s < g->n_steps; s++) {
        const struct model_graph_step *st = &g->steps[s];
        rc = model_gb_add_step(gb,
                               &(struct model_step_spec){.rank = st->rank, .begin = map[st->begin],
                                                         .end = st->end == MODEL_NONE ? MODEL_NONE : map[st->end],
                                                         .name = model_graph_str(g, st->name),
                                                         .measured_ns = st->measured_ns, .partial = st->partial,
                                                         .trace_step = st->step});
    }
    /* a merged task's communication, at most its new duration, and its FLOPs */
    for (size_t c = 0; !rc && c < g->n_parts; c++) {
        uint32_t i = g->parts[c].task;
        int64_t comm = g->parts[c].comm_ns < dur[i] ? g->parts[c].comm_ns : dur[i];
        if (comm > 0 || g->parts[c].flops > 0)
            rc = model_gb_set_part(gb, map[i], comm, g->parts[c].flops);
    }
    size_t most = 0;
    for (size_t k = 0; k < g->n_groups; k++)
        if (g->group_at[k + 1] - g->group_at[k] > most)
            most = g->group_at[k + 1] - g->group_at[k];
    if (!rc && most && !(members = malloc(most * sizeof *members)))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < g->n_groups; k++) {
        const struct model_coll_group *gr = &g->groups[k];
        size_t n = 0;
        for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1]; m++)
            members[n++] = map[g->group_tasks[m]];
        const char *dtype = model_graph_str(g, gr->dtype), *pg = model_graph_str(g, gr->pg);
        rc = model_gb_add_group(gb,
                                &(struct model_group_spec){.op = gr->op, .bytes = gr->bytes,
                                                           .dtype = dtype && *dtype ? dtype : NULL,
                                                           .pg = pg && *pg ? pg : NULL, .seq = gr->seq,
                                                           .size = gr->size},
                                members, n, NULL);
    }
    if (!rc) {
        struct model_graph_stats *st = model_gb_stats(gb);
        *st = g->stats;
        rc = model_gb_finish_map(gb, out, &gmap, err);
        gb = NULL;
        if (!rc) {
            for (uint32_t i = 0; i < g->n_tasks; i++)
                map[i] = gmap[map[i]];
            free(gmap);
            if (map_out) {
                *map_out = map;
                map = NULL;
            }
        }
    }
fail:
    model_gb_free(gb);
    free(map);
    free(res_map);
    free(members);
    free(refs);
    free(ins_id);
    free(side_res);
    return rc;
}
