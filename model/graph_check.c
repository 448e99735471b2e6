/* model/graph_check.c: a built graph's structural invariants, checked in
 * one pass over its arrays (graph_check.h). */
#include "model/graph_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph.h"
#include "common/banned.h"

#define BROKEN(kind, ...) sc_error_set(err, SC_EINVAL, "graph check: " kind ": " __VA_ARGS__)

int model_graph_checks_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("STEPCAST_CHECK_GRAPHS");
        on = v && *v && strcmp(v, "0") != 0;
    }
    return on;
}

/* Offsets of a CSR list: from 0, never falling, to total. */
static int offsets(const uint32_t *at, size_t n, size_t total, const char *what, struct sc_error *err)
{
    if (at[0] != 0)
        return BROKEN("CSR offsets", "%s[0] is %u, not 0", what, at[0]);
    for (size_t i = 0; i < n; i++)
        if (at[i + 1] < at[i])
            return BROKEN("CSR offsets", "%s falls at task %zu (%u after %u)", what, i + 1, at[i + 1], at[i]);
    if (at[n] != total)
        return BROKEN("CSR offsets", "%s ends at %u, not at the %zu edges", what, at[n], total);
    return SC_OK;
}

static int tasks_ok(const struct model_graph *g, struct sc_error *err)
{
    for (size_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (t->res >= g->n_res)
            return BROKEN("ids", "task %zu is on resource %u of %zu", i, t->res, g->n_res);
        if (t->rank >= g->n_ranks)
            return BROKEN("ids", "task %zu is on rank %u of %zu", i, t->rank, g->n_ranks);
        if (t->group != MODEL_NONE && t->group >= g->n_groups)
            return BROKEN("ids", "task %zu is in group %u of %zu", i, t->group, g->n_groups);
        if (t->cls >= MODEL_TASK_CLASS_COUNT)
            return BROKEN("task classes", "task %zu has class %u", i, t->cls);
        if (g->src[i].name >= g->names.n)
            return BROKEN("ids", "task %zu is named by string %u of %zu", i, g->src[i].name, g->names.n);
        if (t->dur < 0 || t->gap < 0)
            return BROKEN("time order", "task %zu lasts %lld ns after a gap of %lld ns", i, (long long)t->dur,
                          (long long)t->gap);
    }
    return SC_OK;
}

/* A multiset fingerprint of (task, type) pairs, summed per task. */
static uint64_t mix(uint32_t task, unsigned type)
{
    uint64_t x = ((uint64_t)task << 2 | type) * 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

static int edges_ok(const struct model_graph *g, struct sc_error *err)
{
    int rc;
    if ((rc = offsets(g->pred_at, g->n_tasks, g->n_edges, "pred_at", err)) ||
        (rc = offsets(g->succ_at, g->n_tasks, g->n_edges, "succ_at", err)))
        return rc;
    uint64_t *fp = calloc(g->n_tasks ? g->n_tasks : 1, sizeof *fp);
    if (!fp)
        return sc_error_set(err, SC_ENOMEM, "out of memory checking the graph");
    for (uint32_t i = 0; i < g->n_tasks && !rc; i++)
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
            const struct model_edge *d = &g->edges[e];
            if (d->from >= g->n_tasks) {
                rc = BROKEN("ids", "edge %u into task %u comes from task %u of %zu", e, i, d->from, g->n_tasks);
                break;
            }
            if (d->kind >= MODEL_EDGE_KIND_COUNT || d->type > MODEL_SF) {
                rc = BROKEN("edge kinds", "edge %u (task %u to %u) has kind %u, type %u", e, d->from, i, d->kind,
                            d->type);
                break;
            }
            fp[d->from] += mix(i, d->type);
        }
    for (uint32_t i = 0; i < g->n_tasks && !rc; i++) {
        uint64_t sum = 0;
        for (uint32_t k = g->succ_at[i]; k < g->succ_at[i + 1]; k++) {
            if (g->succs[k] >> 2 >= g->n_tasks) {
                rc = BROKEN("ids", "task %u's successor %u is task %u of %zu", i, k, g->succs[k] >> 2, g->n_tasks);
                break;
            }
            sum += mix(g->succs[k] >> 2, g->succs[k] & 3);
        }
        if (!rc && sum != fp[i])
            rc = BROKEN("CSR offsets", "task %u's successors are not the edges from it", i);
    }
    free(fp);
    return rc;
}

/* Each resource's chain: its tasks in the order of their numbers, each on
 * it, prev mirroring next, as many as it says; every task on one chain. */
static int resources_ok(const struct model_graph *g, struct sc_error *err)
{
    size_t seen = 0;
    for (uint32_t r = 0; r < g->n_res; r++) {
        const struct model_resource *res = &g->res[r];
        uint32_t n = 0, last = MODEL_NONE;
        if (res->rank >= g->n_ranks)
            return BROKEN("ids", "resource %u is on rank %u of %zu", r, res->rank, g->n_ranks);
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            if (i >= g->n_tasks)
                return BROKEN("ids", "resource %u's chain reaches task %u of %zu", r, i, g->n_tasks);
            if (g->tasks[i].res != r)
                return BROKEN("ids", "task %u is in resource %u's chain but on resource %u", i, r, g->tasks[i].res);
            if (g->prev[i] != last)
                return BROKEN("time order", "task %u's prev is %u, not %u", i, g->prev[i], last);
            if (last != MODEL_NONE && i <= last)
                return BROKEN("time order", "resource %u runs task %u after task %u", r, i, last);
            if (++n > res->n)
                return BROKEN("ids", "resource %u holds more than its %u tasks", r, res->n);
            last = i;
        }
        if (n != res->n || last != res->last)
            return BROKEN("ids", "resource %u holds %u tasks ending at %u, not %u ending at %u", r, n, last, res->n,
                          res->last);
        seen += n;
    }
    if (seen != g->n_tasks)
        return BROKEN("ids", "the resources hold %zu of the %zu tasks", seen, g->n_tasks);
    return SC_OK;
}

static int groups_ok(const struct model_graph *g, struct sc_error *err)
{
    if (!g->n_groups)
        return SC_OK;
    if (g->group_at[0] != 0)
        return BROKEN("CSR offsets", "group_at[0] is %u, not 0", g->group_at[0]);
    for (uint32_t k = 0; k < g->n_groups; k++) {
        if (g->group_at[k + 1] < g->group_at[k])
            return BROKEN("CSR offsets", "group_at falls at group %u", k + 1);
        for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1]; m++) {
            uint32_t t = g->group_tasks[m];
            if (t >= g->n_tasks || g->tasks[t].group != k)
                return BROKEN("ids", "group %u lists task %u, which is not its member", k, t);
        }
    }
    return SC_OK;
}

static int steps_ok(const struct model_graph *g, struct sc_error *err)
{
    for (size_t s = 0; s < g->n_steps; s++) {
        const struct model_graph_step *st = &g->steps[s];
        if (st->rank >= g->n_ranks || st->begin >= g->n_tasks || st->end >= g->n_tasks)
            return BROKEN("ids", "step %zu: rank %u of %zu, markers %u and %u of %zu tasks", s, st->rank,
                          g->n_ranks, st->begin, st->end, g->n_tasks);
        if (st->begin > st->end)
            return BROKEN("time order", "step %zu ends (task %u) before it begins (task %u)", s, st->end, st->begin);
    }
    return SC_OK;
}

int model_graph_check(const struct model_graph *g, struct sc_error *err)
{
    int rc;
    if (!g->n_ranks && g->n_tasks)
        return BROKEN("ids", "%zu tasks and no rank", g->n_tasks);
    if ((rc = tasks_ok(g, err)) || (rc = edges_ok(g, err)) || (rc = resources_ok(g, err)) ||
        (rc = groups_ok(g, err)) || (rc = steps_ok(g, err)))
        return rc;
    return SC_OK;
}
