/* model/graph_builder.c: the public way to build a graph (graph_builder.h):
 * collecting ranks, resources, tasks, edges, steps and groups, then laying
 * the tasks out and indexing the edges into the graph's arrays. */
#include "model/graph_builder.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hugepage.h"
#include "common/vec.h"
#include "model/collective.h"
#include "model/graph_check.h"
#include "model/kernel_family.h"
#include "common/banned.h"

/* Most tasks a graph may hold (ids, with the edge type, fit in 32 bits). */
#define MAX_TASKS (1u << 30)
#define NAME_CACHE 16 /* a power of two */

struct pending_edge {
    uint32_t to, from;
    int32_t lat;
    uint8_t type, kind, inferred, peer;
};

/* A task's edges in and out so far (counted as they are added, so that
 * finishing needs no pass over the edges to size each task's lists). */
struct degree {
    uint32_t preds, succs;
};

struct model_gb {
    struct sc_error *err;
    int failed; /* the first error's code; then every call fails */
    const struct model_job *job;
    struct sc_strtab names;
    struct model_graph_rank *ranks;
    size_t n_ranks, cap_ranks;
    struct model_resource *res;
    size_t n_res, cap_res;
    struct model_task *tasks;
    struct model_task_src *src;
    struct degree *deg;
    int64_t *order; /* layout keys; NULL while every key is 0 */
    size_t n_tasks, cap_tasks;
    /* the last strings interned, by the caller's pointer: a builder sees
     * the same few names over and over (checked by content, so a buffer
     * the caller rewrites is no problem) */
    struct { const char *s; uint32_t id; } recent[NAME_CACHE];
    struct pending_edge *edges;
    size_t n_edges, cap_edges;
    /* the edges of each kind, counted as they are added: finishing sets
     * stats.edges_by_kind from these (a caller may set stats before) */
    size_t edges_by_kind[MODEL_EDGE_KIND_COUNT];
    struct model_graph_step *steps;
    size_t n_steps, cap_steps;
    struct model_coll_group *groups;
    uint32_t *group_at; /* n_groups + 1 */
    size_t n_groups, cap_groups, cap_group_at;
    uint32_t *group_tasks;
    size_t n_members, cap_members;
    struct model_task_part *parts; /* model_gb_set_part */
    size_t n_parts, cap_parts;
    struct model_task_peer *peers; /* model_gb_pair, in the order paired */
    size_t n_peers, cap_peers;
    struct model_graph_stats stats;
    int unnamed; /* model_gb_skip_names */
    /* model_gb_folding_on, model_gb_add_folded (graph.h, model_graph_folding) */
    int fold_on;
    size_t fold_ranks;
    struct model_folded_rank *folded;
    size_t n_folded, cap_folded;
    int64_t *fold_measured;
    size_t n_measured, cap_measured;
};

static int fail(struct model_gb *gb, int code, const char *what)
{
    gb->failed = code;
    return sc_error_set(gb->err, code, "%s", what);
}

#define OOM(gb) fail((gb), SC_ENOMEM, "out of memory")

static int intern(struct model_gb *gb, const char *s, uint32_t *id)
{
    if (sc_strtab_intern(&gb->names, s ? s : "", s ? strlen(s) : 0, id))
        return OOM(gb);
    return SC_OK;
}

/* intern() for the names and tags of tasks and groups, through the cache
 * of recent strings. */
static int intern_recent(struct model_gb *gb, const char *s, uint32_t *id)
{
    if (!s) {
        *id = 0; /* the empty string */
        return SC_OK;
    }
    size_t slot = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) & (NAME_CACHE - 1);
    if (gb->recent[slot].s == s && strcmp(s, sc_strtab_str(&gb->names, gb->recent[slot].id)) == 0) {
        *id = gb->recent[slot].id;
        return SC_OK;
    }
    if (intern(gb, s, id))
        return gb->failed;
    gb->recent[slot].s = s;
    gb->recent[slot].id = *id;
    return SC_OK;
}

struct model_gb *model_gb_new(struct sc_error *err)
{
    struct model_gb *gb = calloc(1, sizeof *gb);
    if (!gb || sc_strtab_init(&gb->names)) {
        free(gb);
        sc_error_set(err, SC_ENOMEM, "out of memory");
        return NULL;
    }
    gb->err = err;
    return gb;
}

void model_gb_free(struct model_gb *gb)
{
    if (!gb)
        return;
    sc_strtab_release(&gb->names);
    free(gb->ranks);
    free(gb->res);
    free(gb->tasks);
    free(gb->src);
    free(gb->deg);
    free(gb->order);
    free(gb->edges);
    free(gb->steps);
    free(gb->groups);
    free(gb->group_at);
    free(gb->group_tasks);
    free(gb->parts);
    free(gb->peers);
    free(gb->folded);
    free(gb->fold_measured);
    free(gb);
}

void model_gb_set_job(struct model_gb *gb, const struct model_job *job)
{
    gb->job = job;
}

void model_gb_skip_names(struct model_gb *gb)
{
    gb->unnamed = 1;
}

void model_gb_folding_on(struct model_gb *gb, size_t ranks)
{
    gb->fold_on = 1;
    gb->fold_ranks = ranks;
}

int model_gb_add_folded(struct model_gb *gb, const struct model_folded_spec *s)
{
    uint16_t rep = s->rep;
    int id = s->id;
    size_t n = s->n;
    const struct model_folded_rank *last = gb->n_folded ? &gb->folded[gb->n_folded - 1] : NULL;
    if (gb->failed)
        return gb->failed;
    if (rep >= gb->n_ranks)
        return fail(gb, SC_EINVAL, "a rank folded into a rank not added");
    if (last && (rep < last->rep || (rep == last->rep && id <= last->id)))
        return fail(gb, SC_EINVAL, "folded ranks out of order");
    if (gb->n_measured + n >= UINT32_MAX)
        return fail(gb, SC_ELIMIT, "too many folded steps");
    if (sc_vec_reserve((void **)&gb->folded, &gb->cap_folded, gb->n_folded + 1, sizeof *gb->folded) ||
        sc_vec_reserve((void **)&gb->fold_measured, &gb->cap_measured, gb->n_measured + n + 1,
                       sizeof *gb->fold_measured))
        return OOM(gb);
    gb->folded[gb->n_folded++] = (struct model_folded_rank){id, rep, (uint32_t)gb->n_measured, s->origin_ns};
    if (n)
        memcpy(gb->fold_measured + gb->n_measured, s->measured, n * sizeof *s->measured);
    gb->n_measured += n;
    return SC_OK;
}

struct model_graph_stats *model_gb_stats(struct model_gb *gb)
{
    return &gb->stats;
}

size_t model_gb_n_tasks(const struct model_gb *gb)
{
    return gb->n_tasks;
}

int model_gb_add_rank(struct model_gb *gb, const struct model_rank_spec *s, uint16_t *rank)
{
    if (gb->failed)
        return gb->failed;
    if (gb->n_ranks >= UINT16_MAX)
        return fail(gb, SC_ELIMIT, "more than 65535 ranks");
    if (sc_vec_reserve((void **)&gb->ranks, &gb->cap_ranks, gb->n_ranks + 1, sizeof *gb->ranks))
        return OOM(gb);
    gb->ranks[gb->n_ranks] = (struct model_graph_rank){s->id, s->clock_offset_ns, s->launch_queue_depth};
    *rank = (uint16_t)gb->n_ranks++;
    assert(gb->n_ranks <= gb->cap_ranks);
    return SC_OK;
}

int model_gb_add_resource(struct model_gb *gb, const struct model_res_spec *s, uint32_t *res)
{
    uint32_t label;
    if (gb->failed)
        return gb->failed;
    if (s->rank >= gb->n_ranks)
        return fail(gb, SC_EINVAL, "a resource of a rank not added");
    if (gb->n_res >= MAX_TASKS)
        return fail(gb, SC_ELIMIT, "too many resources");
    if (intern(gb, s->label, &label))
        return gb->failed;
    if (sc_vec_reserve((void **)&gb->res, &gb->cap_res, gb->n_res + 1, sizeof *gb->res))
        return OOM(gb);
    gb->res[gb->n_res] = (struct model_resource){
        .rank = s->rank, .gpu = s->gpu != 0, .comm = s->comm != 0,
        .track = s->has_track ? s->track : MODEL_NONE, .label = label,
        .first = MODEL_NONE, .last = MODEL_NONE, .pid = s->pid, .tid = s->tid, .origin = s->origin};
    *res = (uint32_t)gb->n_res++;
    assert(gb->n_res <= gb->cap_res);
    return SC_OK;
}

/* Room for `need` elements of `size` bytes in *p (capacity *cap): a new
 * array on huge pages when large, else grown as sc_vec_reserve does. */
static int reserve_array(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    if (*p || need > SIZE_MAX / size)
        return sc_vec_reserve(p, cap, need, size);
    if (!(*p = sc_huge_alloc(need * size)))
        return -1;
    *cap = need;
    return 0;
}

/* Room for `cap` tasks in each per-task array. */
static int reserve_tasks(struct model_gb *gb, size_t cap)
{
    size_t c_tasks = gb->cap_tasks, c_src = gb->cap_tasks, c_deg = gb->cap_tasks, c_order = gb->cap_tasks;
    if (reserve_array((void **)&gb->tasks, &c_tasks, cap, sizeof *gb->tasks) ||
        reserve_array((void **)&gb->src, &c_src, cap, sizeof *gb->src) ||
        reserve_array((void **)&gb->deg, &c_deg, cap, sizeof *gb->deg) ||
        (gb->order && reserve_array((void **)&gb->order, &c_order, cap, sizeof *gb->order)))
        return OOM(gb);
    gb->cap_tasks = cap;
    return SC_OK;
}

/* The first task with a layout key: the tasks before it had key 0. */
static int keep_order(struct model_gb *gb)
{
    gb->order = calloc(gb->cap_tasks, sizeof *gb->order);
    return gb->order ? SC_OK : OOM(gb);
}

int model_gb_add_task(struct model_gb *gb, const struct model_task_spec *s, uint32_t *task)
{
    struct model_task_src src = {0, MODEL_NONE, MODEL_NONE};
    if (gb->failed)
        return gb->failed;
    if (s->res >= gb->n_res)
        return fail(gb, SC_EINVAL, "a task on a resource not added");
    if (s->cls < 0 || s->cls >= MODEL_TASK_CLASS_COUNT || s->sub < 0 || s->sub > UINT8_MAX)
        return fail(gb, SC_EINVAL, "a task of no known class");
    if (model_task_on_gpu((unsigned)s->cls) != gb->res[s->res].gpu)
        return fail(gb, SC_EINVAL, "GPU work on a CPU thread, or CPU work on a GPU stream");
    if (s->dur < 0 || s->gap < 0)
        return fail(gb, SC_EINVAL, "a negative duration or gap");
    if (gb->n_tasks >= MAX_TASKS)
        return fail(gb, SC_ELIMIT, "more than 2^30 tasks");
    if (!gb->unnamed &&
        intern_recent(gb, s->name ? s->name : model_task_class_name((enum model_task_class)s->cls), &src.name))
        return gb->failed;
    if (!gb->unnamed && s->tag && intern_recent(gb, s->tag, &src.tag))
        return gb->failed;
    if (s->has_event)
        src.event = s->event;
    if (gb->n_tasks == gb->cap_tasks && reserve_tasks(gb, gb->cap_tasks ? 2 * gb->cap_tasks : 1024))
        return gb->failed;
    if (s->order && !gb->order && keep_order(gb))
        return gb->failed;
    struct model_resource *r = &gb->res[s->res];
    uint32_t id = (uint32_t)gb->n_tasks++;
    assert(id < gb->cap_tasks);
    gb->tasks[id] = (struct model_task){.dur = s->dur, .gap = s->gap, .res = s->res, .group = MODEL_NONE,
                                        .rank = r->rank, .cls = (uint8_t)s->cls, .sub = (uint8_t)s->sub,
                                        .kept = s->kept != 0};
    gb->src[id] = src;
    gb->deg[id] = (struct degree){0, 0};
    if (gb->order)
        gb->order[id] = s->order;
    if (s->cls == MODEL_TASK_COMM)
        r->comm = 1;
    if (r->first == MODEL_NONE)
        r->first = id;
    r->last = id;
    r->n++;
    assert(r->n <= gb->n_tasks && r->first <= r->last);
    *task = id;
    return SC_OK;
}

int model_gb_set_dur(struct model_gb *gb, uint32_t task, int64_t dur)
{
    if (gb->failed)
        return gb->failed;
    if (task >= gb->n_tasks || dur < 0)
        return fail(gb, SC_EINVAL, task >= gb->n_tasks ? "a duration of a task not added" : "a negative duration");
    gb->tasks[task].dur = dur;
    return SC_OK;
}

int model_gb_set_part(struct model_gb *gb, uint32_t task, int64_t comm_ns, double flops)
{
    if (gb->failed)
        return gb->failed;
    if (task >= gb->n_tasks)
        return fail(gb, SC_EINVAL, "the work of a task not added");
    if (gb->tasks[task].cls != MODEL_TASK_KERNEL)
        return fail(gb, SC_EINVAL, "work merged into a task that is no kernel");
    if (comm_ns < 0 || comm_ns > gb->tasks[task].dur)
        return fail(gb, SC_EINVAL, "communication outside a task's duration");
    if (!(flops >= 0 && flops < HUGE_VAL))
        return fail(gb, SC_EINVAL, "a task's FLOPs negative or not finite");
    if (comm_ns == 0 && flops == 0)
        return fail(gb, SC_EINVAL, "a task's work with neither communication nor FLOPs");
    if (sc_vec_reserve((void **)&gb->parts, &gb->cap_parts, gb->n_parts + 1, sizeof *gb->parts))
        return OOM(gb);
    gb->parts[gb->n_parts++] = (struct model_task_part){task, comm_ns, flops};
    return SC_OK;
}

int model_gb_reserve(struct model_gb *gb, size_t tasks, size_t edges, size_t groups, size_t members)
{
    if (gb->failed)
        return gb->failed;
    if (tasks > MAX_TASKS || edges > (size_t)MAX_TASKS * 8 || groups > MAX_TASKS || members > (size_t)MAX_TASKS * 8)
        return SC_OK; /* a hint too large to heed: the arrays grow as needed */
    if (tasks > gb->cap_tasks && reserve_tasks(gb, tasks))
        return gb->failed;
    if (reserve_array((void **)&gb->edges, &gb->cap_edges, edges, sizeof *gb->edges) ||
        reserve_array((void **)&gb->groups, &gb->cap_groups, groups, sizeof *gb->groups) ||
        reserve_array((void **)&gb->group_at, &gb->cap_group_at, groups + 1, sizeof *gb->group_at) ||
        reserve_array((void **)&gb->group_tasks, &gb->cap_members, members, sizeof *gb->group_tasks))
        return OOM(gb);
    return SC_OK;
}

static int push_edge(struct model_gb *gb, uint32_t from, uint32_t to, enum model_edge_kind kind,
                     enum model_edge_type type, int64_t lat, int inferred, int peer)
{
    if (gb->failed)
        return gb->failed;
    if (from == to || from == MODEL_NONE || to == MODEL_NONE)
        return SC_OK;
    if (from >= gb->n_tasks || to >= gb->n_tasks)
        return fail(gb, SC_EINVAL, "an edge between tasks not added");
    if ((unsigned)kind >= MODEL_EDGE_KIND_COUNT || (unsigned)type > MODEL_SF)
        return fail(gb, SC_EINVAL, "an edge of no known kind or type");
    if (peer && (!gb->tasks[to].paired || (type != MODEL_FS && type != MODEL_SS) || kind == MODEL_EDGE_UNEXPLAINED))
        return fail(gb, SC_EINVAL, "a peer edge into a task not paired, one that holds a finish, or an unexplained one");
    if (gb->n_edges == gb->cap_edges &&
        sc_vec_reserve((void **)&gb->edges, &gb->cap_edges, gb->n_edges + 1, sizeof *gb->edges))
        return OOM(gb);
    if (lat > INT32_MAX)
        lat = INT32_MAX;
    if (lat < INT32_MIN)
        lat = INT32_MIN;
    assert(from < gb->cap_tasks && to < gb->cap_tasks && gb->n_edges < gb->cap_edges);
    gb->edges[gb->n_edges++] = (struct pending_edge){to, from, (int32_t)lat, (uint8_t)type, (uint8_t)kind,
                                                     (uint8_t)(inferred != 0), (uint8_t)(peer != 0)};
    gb->deg[to].preds++;
    gb->deg[from].succs++;
    gb->edges_by_kind[kind]++;
    return SC_OK;
}

int model_gb_add_edge(struct model_gb *gb, uint32_t from, uint32_t to, enum model_edge_kind kind,
                      enum model_edge_type type, int64_t lat, int inferred)
{
    return push_edge(gb, from, to, kind, type, lat, inferred, 0);
}

int model_gb_add_peer_edge(struct model_gb *gb, uint32_t from, uint32_t to, enum model_edge_kind kind,
                           enum model_edge_type type, int64_t lat)
{
    return push_edge(gb, from, to, kind, type, lat, 0, 1);
}

int model_gb_pair(struct model_gb *gb, uint32_t task, uint32_t res)
{
    if (gb->failed)
        return gb->failed;
    if (task >= gb->n_tasks || res >= gb->n_res)
        return fail(gb, SC_EINVAL, "a pair of a task or resource not added");
    struct model_task *t = &gb->tasks[task];
    if (t->cls != MODEL_TASK_COMM || t->group != MODEL_NONE || t->paired)
        return fail(gb, SC_EINVAL, "a pair of no communication task, one in a group, or one paired already");
    if (!gb->res[res].gpu || gb->res[res].rank == t->rank)
        return fail(gb, SC_EINVAL, "a task paired with no other rank's GPU stream");
    if (sc_vec_reserve((void **)&gb->peers, &gb->cap_peers, gb->n_peers + 1, sizeof *gb->peers))
        return OOM(gb);
    assert(gb->n_peers < gb->cap_peers);
    gb->peers[gb->n_peers++] = (struct model_task_peer){task, res};
    gb->res[res].comm = 1;
    t->paired = 1;
    return SC_OK;
}

static int is_marker_of(const struct model_gb *gb, uint32_t t, uint16_t rank)
{
    return t < gb->n_tasks && gb->tasks[t].cls == MODEL_TASK_MARKER && gb->tasks[t].rank == rank;
}

int model_gb_add_step(struct model_gb *gb, const struct model_step_spec *s)
{
    uint32_t name;
    if (gb->failed)
        return gb->failed;
    if (s->rank >= gb->n_ranks || !is_marker_of(gb, s->begin, s->rank) ||
        (s->end != MODEL_NONE && !is_marker_of(gb, s->end, s->rank)))
        return fail(gb, SC_EINVAL, "a step whose begin or end is no marker task of its rank");
    if (intern(gb, s->name, &name))
        return gb->failed;
    if (sc_vec_reserve((void **)&gb->steps, &gb->cap_steps, gb->n_steps + 1, sizeof *gb->steps))
        return OOM(gb);
    assert(gb->n_steps < gb->cap_steps && s->begin < gb->n_tasks);
    gb->steps[gb->n_steps++] = (struct model_graph_step){
        .rank = s->rank, .step = s->trace_step, .begin = s->begin, .end = s->end, .name = name,
        .measured_ns = s->measured_ns < 0 ? -1 : s->measured_ns, .partial = (uint8_t)(s->partial != 0)};
    return SC_OK;
}

int model_gb_add_group(struct model_gb *gb, const struct model_group_spec *s, const uint32_t *tasks,
                       size_t n, uint32_t *group)
{
    struct model_coll_group cg;
    if (gb->failed)
        return gb->failed;
    if (!n)
        return fail(gb, SC_EINVAL, "a collective group without members");
    if (s->op < 0 || s->op >= MODEL_COLL_OP_COUNT)
        return fail(gb, SC_EINVAL, "a collective of no known kind");
    for (size_t i = 0; i < n; i++) {
        if (tasks[i] >= gb->n_tasks || gb->tasks[tasks[i]].cls != MODEL_TASK_COMM ||
            gb->tasks[tasks[i]].group != MODEL_NONE)
            return fail(gb, SC_EINVAL, "a collective member that is no communication task, or in a group already");
        if (gb->tasks[tasks[i]].paired)
            return fail(gb, SC_EINVAL, "a paired task as a collective member");
        for (size_t k = 0; k < i; k++)
            if (gb->tasks[tasks[k]].rank == gb->tasks[tasks[i]].rank)
                return fail(gb, SC_EINVAL, "a collective group with two members on one rank");
    }
    if (s->size && s->size < n)
        return fail(gb, SC_EINVAL, "a collective group smaller than its members");
    if (gb->unnamed)
        cg.dtype = cg.pg = 0; /* the empty string */
    else if (intern_recent(gb, s->dtype, &cg.dtype) || intern_recent(gb, s->pg, &cg.pg))
        return gb->failed;
    cg.op = (uint8_t)s->op;
    cg.bytes = s->bytes < 0 ? -1 : s->bytes;
    cg.seq = s->seq < 0 ? -1 : s->seq;
    cg.size = s->size ? s->size : (uint32_t)n;
    if ((gb->n_groups + 1 > gb->cap_groups || gb->n_groups + 2 > gb->cap_group_at ||
         gb->n_members + n > gb->cap_members) &&
        (sc_vec_reserve((void **)&gb->groups, &gb->cap_groups, gb->n_groups + 1, sizeof *gb->groups) ||
         sc_vec_reserve((void **)&gb->group_at, &gb->cap_group_at, gb->n_groups + 2, sizeof *gb->group_at) ||
         sc_vec_reserve((void **)&gb->group_tasks, &gb->cap_members, gb->n_members + n, sizeof *gb->group_tasks)))
        return OOM(gb);
    uint32_t gi = (uint32_t)gb->n_groups++;
    assert(gi < gb->cap_groups && gi + 1 < gb->cap_group_at);
    gb->groups[gi] = cg;
    gb->group_at[gi] = (uint32_t)gb->n_members;
    for (size_t i = 0; i < n; i++) {
        gb->group_tasks[gb->n_members++] = tasks[i];
        gb->tasks[tasks[i]].group = gi;
    }
    gb->group_at[gi + 1] = (uint32_t)gb->n_members;
    assert(gb->group_at[gi + 1] - gb->group_at[gi] == n && gb->n_members <= gb->cap_members);
    if (group)
        *group = gi;
    return SC_OK;
}

/* ---- finishing ---------------------------------------------------------------------- */

struct order_key {
    int64_t t;
    uint32_t i;
};

static int by_part_task(const void *x, const void *y)
{
    const struct model_task_part *a = x, *b = y;
    return (a->task > b->task) - (a->task < b->task);
}

/* The parts by task, each task once. */
static int sort_parts(struct model_gb *gb)
{
    int sorted = 1;
    for (size_t c = 1; c < gb->n_parts && sorted; c++)
        sorted = gb->parts[c - 1].task < gb->parts[c].task;
    if (sorted)
        return SC_OK;
    sc_sort(gb->parts, gb->n_parts, sizeof *gb->parts, by_part_task);
    for (size_t c = 1; c < gb->n_parts; c++)
        if (gb->parts[c - 1].task == gb->parts[c].task)
            return fail(gb, SC_EINVAL, "the work of a task set twice");
    return SC_OK;
}

/* The pairs by resource, each resource's in the order paired (the order
 * its stream runs them): a counting sort. */
static int sort_peers(struct model_gb *gb)
{
    if (!gb->n_peers)
        return SC_OK;
    size_t *at = calloc(gb->n_res + 1, sizeof *at);
    struct model_task_peer *v = malloc(gb->n_peers * sizeof *v);
    if (!at || !v) {
        free(at);
        free(v);
        return OOM(gb);
    }
    for (size_t k = 0; k < gb->n_peers; k++)
        at[gb->peers[k].res + 1]++;
    for (size_t r = 0; r < gb->n_res; r++)
        at[r + 1] += at[r];
    for (size_t k = 0; k < gb->n_peers; k++) {
        struct model_task_peer p = gb->peers[k];
        v[at[p.res]++] = p;
    }
    free(at);
    free(gb->peers);
    gb->peers = v;
    return SC_OK;
}

static int by_order_key(const void *x, const void *y)
{
    const struct order_key *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Whether the layout keys already come in the order the tasks were
 * added (no key at all, as in a synthesised graph): then the layout is
 * that order. Keys are raised to their resource predecessor's as in
 * layout(). */
static int keys_in_order(const struct model_gb *gb, int64_t *last_key)
{
    int64_t before = INT64_MIN;
    if (!gb->order)
        return 1;
    for (size_t r = 0; r < gb->n_res; r++)
        last_key[r] = INT64_MIN;
    for (uint32_t i = 0; i < gb->n_tasks; i++) {
        uint32_t r = gb->tasks[i].res;
        int64_t t = gb->order[i] > last_key[r] ? gb->order[i] : last_key[r];
        last_key[r] = t;
        if (t < before)
            return 0;
        before = t;
    }
    return 1;
}

/* Link each resource's tasks in the order they were added; to[] gives
 * each added task's place in the layout (NULL: the order added). */
static void link_resources(const struct model_gb *gb, const uint32_t *to, uint32_t *last, uint32_t *prev,
                           uint32_t *next)
{
    for (size_t r = 0; r < gb->n_res; r++)
        last[r] = MODEL_NONE;
    for (uint32_t i = 0; i < gb->n_tasks; i++) {
        uint32_t r = gb->tasks[i].res, j = to ? to[i] : i;
        assert(r < gb->n_res && j < gb->n_tasks);
        prev[j] = last[r];
        next[j] = MODEL_NONE;
        if (last[r] != MODEL_NONE)
            next[last[r]] = j;
        last[r] = j;
    }
}

/* Move every task i to its place to[i], in place (a large graph's tasks
 * are not copied whole): each cycle of the permutation is followed once,
 * a bit per task marking those placed. */
static int permute(struct model_gb *gb, const uint32_t *to)
{
    size_t n = gb->n_tasks;
    uint64_t *done = calloc(n / 64 + 1, sizeof *done);
    if (!done)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (done[i / 64] >> (i % 64) & 1)
            continue;
        struct model_task task = gb->tasks[i];
        struct model_task_src src = gb->src[i];
        struct degree deg = gb->deg[i];
        for (uint32_t j = to[i]; j != i; j = to[j]) { /* carry the task i's chain displaces */
            assert(j < n && !(done[j / 64] >> (j % 64) & 1)); /* a permutation: each place taken once */
            struct model_task t2 = gb->tasks[j];
            struct model_task_src s2 = gb->src[j];
            struct degree d2 = gb->deg[j];
            gb->tasks[j] = task;
            gb->src[j] = src;
            gb->deg[j] = deg;
            done[j / 64] |= 1ull << (j % 64);
            task = t2;
            src = s2;
            deg = d2;
        }
        gb->tasks[i] = task;
        gb->src[i] = src;
        gb->deg[i] = deg;
        done[i / 64] |= 1ull << (i % 64);
    }
    free(done);
    return 0;
}

/* Lay the tasks out by their keys, renumbering everything that names a
 * task, and link each resource's tasks in the order they were added (a
 * key smaller than its resource predecessor's is raised to it, so the sort
 * keeps each resource's order) into prev[] and next[] (n_tasks each). `to`
 * (n_tasks) gets each added task's place; NULL when the caller needs no
 * map. */
static int layout(struct model_gb *gb, struct model_graph *g, uint32_t *to, uint32_t *prev, uint32_t *next)
{
    size_t n = gb->n_tasks;
    int64_t *last_key = malloc((gb->n_res ? gb->n_res : 1) * sizeof *last_key);
    uint32_t *last = malloc((gb->n_res ? gb->n_res : 1) * sizeof *last);
    struct order_key *k = NULL;
    uint32_t *own_to = NULL;
    if (!last_key || !last)
        goto oom;
    if (keys_in_order(gb, last_key)) {
        /* the arrays as they are: nothing moves, nothing is renumbered */
        for (uint32_t i = 0; to && i < n; i++)
            to[i] = i;
        link_resources(gb, NULL, last, prev, next);
        g->tasks = gb->tasks;
        g->src = gb->src;
        gb->tasks = NULL;
        gb->src = NULL;
        free(last_key);
        free(last);
        return SC_OK;
    }
    k = malloc((n ? n : 1) * sizeof *k);
    if (!to)
        to = own_to = malloc((n ? n : 1) * sizeof *to);
    if (!k || !to)
        goto oom;
    for (size_t r = 0; r < gb->n_res; r++)
        last_key[r] = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = gb->tasks[i].res;
        int64_t t = gb->order[i] > last_key[r] ? gb->order[i] : last_key[r];
        last_key[r] = t;
        k[i] = (struct order_key){t, i};
    }
    free(gb->order); /* the keys are all that is needed of it */
    gb->order = NULL;
    /* each resource's keys rise: a few long runs */
    struct order_key *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        goto oom;
    sc_sort_runs(k, sorted, n, sizeof *k, by_order_key);
    free(sorted);
    for (uint32_t j = 0; j < n; j++) {
        assert(j == 0 || by_order_key(&k[j - 1], &k[j]) < 0);
        to[k[j].i] = j;
    }
    free(k);
    k = NULL;
    link_resources(gb, to, last, prev, next); /* reads the tasks in the order added */
    if (permute(gb, to))
        goto oom;
    for (size_t r = 0; r < gb->n_res; r++) {
        struct model_resource *res = &gb->res[r];
        res->first = res->n ? to[res->first] : MODEL_NONE;
        res->last = res->n ? to[res->last] : MODEL_NONE;
        assert(!res->n || (res->first < n && res->last < n && res->first <= res->last));
    }
    for (size_t e = 0; e < gb->n_edges; e++) {
        gb->edges[e].from = to[gb->edges[e].from];
        gb->edges[e].to = to[gb->edges[e].to];
    }
    for (size_t s = 0; s < gb->n_steps; s++) {
        gb->steps[s].begin = to[gb->steps[s].begin];
        if (gb->steps[s].end != MODEL_NONE)
            gb->steps[s].end = to[gb->steps[s].end];
    }
    for (size_t m = 0; m < gb->n_members; m++)
        gb->group_tasks[m] = to[gb->group_tasks[m]];
    for (size_t c = 0; c < gb->n_parts; c++)
        gb->parts[c].task = to[gb->parts[c].task];
    for (size_t c = 0; c < gb->n_peers; c++)
        gb->peers[c].task = to[gb->peers[c].task];
    g->tasks = gb->tasks;
    g->src = gb->src;
    gb->tasks = NULL;
    gb->src = NULL;
    free(last_key);
    free(last);
    free(own_to);
    return SC_OK;
oom:
    free(k);
    free(last_key);
    free(last);
    free(own_to);
    return OOM(gb);
}

/* Predecessor and successor lists from the pending edges, with their
 * starts in pred_at[] and succ_at[] (n_tasks + 1 each), sized by the
 * degrees counted as the edges were added. The edges and the successors
 * share one allocation, freed with g->edges. */
static int index_edges(struct model_gb *gb, struct model_graph *g, uint32_t *pred_at, uint32_t *succ_at)
{
    size_t n = gb->n_tasks, m = gb->n_edges;
    struct model_edge *edges = sc_huge_alloc((m ? m : 1) * (sizeof *edges + sizeof(uint32_t)));
    uint32_t *succs = (uint32_t *)(edges + (m ? m : 1)), *fill = malloc((n + 1) * sizeof *fill);
    if (!edges || !fill) {
        free(edges);
        free(fill);
        return OOM(gb);
    }
    pred_at[0] = succ_at[0] = 0;
    for (size_t i = 0; i < n; i++) {
        pred_at[i + 1] = pred_at[i] + gb->deg[i].preds;
        succ_at[i + 1] = succ_at[i] + gb->deg[i].succs;
    }
    memcpy(gb->stats.edges_by_kind, gb->edges_by_kind, sizeof gb->edges_by_kind);
    memcpy(fill, pred_at, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < m; i++) {
        const struct pending_edge *p = &gb->edges[i];
        edges[fill[p->to]++] = (struct model_edge){p->from, p->lat, p->type, p->kind, p->inferred, p->peer};
    }
    for (size_t i = 0; i < n; i++)
        assert(fill[i] == pred_at[i + 1]); /* each task's predecessors filled to their count */
    memcpy(fill, succ_at, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < m; i++)
        succs[fill[gb->edges[i].from]++] = gb->edges[i].to << 2 | gb->edges[i].type;
    for (size_t i = 0; i < n; i++)
        assert(fill[i] == succ_at[i + 1]); /* and its successors */
    assert(pred_at[n] == m && succ_at[n] == m);
    free(fill);
    g->edges = edges;
    g->succs = succs;
    g->n_edges = m;
    return SC_OK;
}

int model_gb_finish_map(struct model_gb *gb, struct model_graph **out, uint32_t **map, struct sc_error *err)
{
    struct model_graph *g = NULL;
    uint32_t *to = NULL;
    int rc = gb->failed;

    *out = NULL;
    if (map)
        *map = NULL;
    gb->err = err;
    if (rc) {
        model_gb_free(gb);
        return sc_error_set(err, rc, "the graph was not built: an earlier step failed");
    }
    g = calloc(1, sizeof *g);
    if (map)
        to = malloc((gb->n_tasks ? gb->n_tasks : 1) * sizeof *to);
    if (!g || (map && !to)) {
        rc = OOM(gb);
        goto out;
    }
    if (!gb->group_at && sc_vec_reserve((void **)&gb->group_at, &gb->cap_group_at, 1, sizeof *gb->group_at)) {
        rc = OOM(gb);
        goto out;
    }
    gb->group_at[gb->n_groups] = (uint32_t)gb->n_members;
    assert(gb->n_groups == 0 || gb->group_at[0] == 0);
    /* per task: prev, next, pred_at, succ_at in one allocation (freed with
     * g->prev), large enough for huge pages where one array alone is not */
    size_t n = gb->n_tasks;
    uint32_t *links = sc_huge_alloc((4 * n + 2) * sizeof *links);
    if (!links) {
        rc = OOM(gb);
        goto out;
    }
    g->prev = links;
    g->next = links + n;
    g->pred_at = links + 2 * n;
    g->succ_at = links + 3 * n + 1;
    if ((rc = layout(gb, g, to, links, links + n)) || (rc = index_edges(gb, g, links + 2 * n, links + 3 * n + 1)) ||
        (rc = sort_parts(gb)) || (rc = sort_peers(gb)))
        goto out;
    g->job = gb->job;
    g->names = gb->names;
    memset(&gb->names, 0, sizeof gb->names);
    g->n_tasks = gb->n_tasks;
    g->res = gb->res;
    g->n_res = gb->n_res;
    g->steps = gb->steps;
    g->n_steps = gb->n_steps;
    g->ranks = gb->ranks;
    g->n_ranks = gb->n_ranks;
    g->groups = gb->groups;
    g->group_at = gb->group_at;
    g->group_tasks = gb->group_tasks;
    g->n_groups = gb->n_groups;
    g->parts = gb->parts;
    g->n_parts = gb->n_parts;
    g->peers = gb->peers;
    g->n_peers = gb->n_peers;
    g->stats = gb->stats;
    g->folding = (struct model_graph_folding){gb->fold_on, gb->fold_ranks, gb->folded, gb->n_folded,
                                              gb->fold_measured, gb->n_measured};
    gb->folded = NULL;
    gb->fold_measured = NULL;
    gb->res = NULL;
    gb->steps = NULL;
    gb->ranks = NULL;
    gb->groups = NULL;
    gb->group_at = NULL;
    gb->group_tasks = NULL;
    gb->parts = NULL;
    gb->peers = NULL;
    if (model_graph_checks_on() && (rc = model_graph_check(g, err)))
        goto out;
    *out = g;
    g = NULL;
    if (map) {
        *map = to;
        to = NULL;
    }
out:
    model_graph_free(g);
    free(to);
    model_gb_free(gb);
    return rc;
}

int model_gb_finish(struct model_gb *gb, struct model_graph **out, struct sc_error *err)
{
    return model_gb_finish_map(gb, out, NULL, err);
}
