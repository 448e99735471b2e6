/* estimator/interchange/chakra_export.c: a replayed graph as Chakra ET files
 * (chakra_export.h). Each rank's tasks become nodes, the host work before
 * them nodes of their own; dependencies are gathered per node, then the
 * nodes are numbered in a topological order (Kahn's) and written. */
#include "estimator/interchange/chakra_export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <et_def.pb-c.h> /* generated from model/et_def.proto into the build */
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/op_kernels.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

#define OOM(err) sc_error_set(err, SC_ENOMEM, "out of memory")

/* What the trace tells of a rank's tasks beyond the graph, when it is at
 * hand: by event, the launching op's Input Dims and types, a GEMM's FLOPs. */
struct trace_facts {
    const struct model_trace *t;
    uint32_t *op_of;  /* kernel event -> the CPU op that launched it, or MODEL_NONE */
    double *flops;    /* kernel event -> FLOPs, or 0 */
};

static void facts_release(struct trace_facts *f)
{
    free(f->op_of);
    free(f->flops);
}

static int facts_init(struct trace_facts *f, const struct model_trace *t, struct sc_error *err)
{
    struct op_kernels ok = {0};
    struct gemm_samples gs = {0};
    uint32_t *sample_of = NULL;
    int rc = SC_OK;
    memset(f, 0, sizeof *f);
    if (!t || t->shed || !t->n_events)
        return SC_OK;
    f->t = t;
    f->op_of = malloc(t->n_events * sizeof *f->op_of);
    f->flops = calloc(t->n_events, sizeof *f->flops);
    sample_of = malloc(t->n_events * sizeof *sample_of);
    if (!f->op_of || !f->flops || !sample_of) {
        rc = OOM(err);
        goto out;
    }
    memset(f->op_of, 0xff, t->n_events * sizeof *f->op_of);
    if ((rc = cost_op_kernels_join(t, &ok, err)) || (rc = calib_gemm_samples_of_ops(t, &ok, &gs, NULL, sample_of, err)))
        goto out;
    for (size_t i = 0; i < ok.n_ops; i++)
        for (uint32_t k = ok.ops[i].first; k < ok.ops[i].first + ok.ops[i].n; k++)
            f->op_of[ok.kernel[k]] = ok.ops[i].op;
    for (size_t ev = 0; ev < t->n_events; ev++)
        if (sample_of[ev] != MODEL_NONE) {
            const struct gemm_sample *s = &gs.v[sample_of[ev]];
            f->flops[ev] = 2.0 * s->m * s->n * s->k * s->batch / (s->kernels > 0 ? s->kernels : 1);
        }
out:
    cost_op_kernels_release(&ok);
    calib_gemm_samples_release(&gs);
    free(sample_of);
    return rc;
}

/* ---- one rank's nodes ---------------------------------------------------------- */

enum node_kind { NODE_TASK, NODE_HOST, NODE_RECV, NODE_DELAY };

struct xnode {
    uint32_t task;  /* the task (the host work before it; the receive side of it); a delay: its edge */
    uint8_t kind;   /* enum node_kind */
    uint32_t dep0, n_deps; /* into deps[] */
    uint32_t ctrl;  /* local node of the launching call, or MODEL_NONE */
    uint32_t id;    /* its number in the file */
    int64_t dur;    /* a delay's duration, ns */
};

struct rank_nodes {
    struct xnode *v;
    size_t n, cap;
    uint32_t *deps; /* local node indices */
    size_t n_deps, cap_deps;
    uint32_t *task_node, *host_node, *recv_node; /* by task: its nodes on this rank, or MODEL_NONE */
    uint32_t *delay_node;                        /* by edge: its delay node, or MODEL_NONE */
};

/* Latencies shorter than this are plain dependencies (they round to 0 us). */
#define MIN_DELAY_NS 500
/* How far start-to-x edges without latency are followed back. */
#define MAX_START_DEPTH 8

static int add_node(struct rank_nodes *rn, uint32_t task, enum node_kind kind, uint32_t *at)
{
    if (sc_vec_reserve((void **)&rn->v, &rn->cap, rn->n + 1, sizeof *rn->v))
        return -1;
    *at = (uint32_t)rn->n;
    rn->v[rn->n++] = (struct xnode){.task = task, .kind = (uint8_t)kind, .ctrl = MODEL_NONE};
    return 0;
}

/* Append dependency `on` to the deps being gathered from deps[from]
 * onwards, once. */
static int add_dep(struct rank_nodes *rn, size_t from, uint32_t on)
{
    if (on == MODEL_NONE)
        return 0;
    for (size_t k = from; k < rn->n_deps; k++)
        if (rn->deps[k] == on)
            return 0;
    if (sc_vec_reserve((void **)&rn->deps, &rn->cap_deps, rn->n_deps + 1, sizeof *rn->deps))
        return -1;
    rn->deps[rn->n_deps++] = on;
    return 0;
}

static void rank_nodes_release(struct rank_nodes *rn)
{
    free(rn->v);
    free(rn->deps);
    free(rn->task_node);
    free(rn->host_node);
    free(rn->recv_node);
    free(rn->delay_node);
}

/* The node of rank ri that stands for task `from` as a predecessor: its
 * task node, or its receive side; MODEL_NONE when it is not on the rank. */
static uint32_t pred_node(const struct rank_nodes *rn, uint32_t from)
{
    return rn->task_node[from] != MODEL_NONE ? rn->task_node[from] : rn->recv_node[from];
}

static int starts_from_start(const struct model_edge *ed)
{
    return ed->type == MODEL_SS || ed->type == MODEL_SF;
}

/* Whether edge ed (into a task of duration dur) waits on a delay node: a
 * latency that a plain dependency would lose. Its duration in *delay. */
static int edge_delay(const struct model_edge *ed, int64_t dur, int64_t *delay)
{
    /* a finish (of the target) bound: the target's own time counts */
    *delay = ed->type == MODEL_FF || ed->type == MODEL_SF ? ed->lat - dur : ed->lat;
    return ed->lat >= MIN_DELAY_NS && *delay >= MIN_DELAY_NS;
}

static int start_deps(const struct model_graph *g, struct rank_nodes *rn, size_t from, uint32_t i, int side,
                      uint32_t *ctrl, int depth);

/* The edges into task i that the rank's side `side` of it waits for; at
 * depth > 0 (when another node waits for i to start), only those that
 * bound its start. */
static int edge_deps(const struct model_graph *g, struct rank_nodes *rn, size_t from, uint32_t i, int side,
                     uint32_t *ctrl, int depth)
{
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
        const struct model_edge *ed = &g->edges[e];
        if (ed->kind == MODEL_EDGE_UNEXPLAINED || ed->peer != side ||
            (depth > 0 && (ed->type == MODEL_FF || ed->type == MODEL_SF)))
            continue;
        uint32_t on = rn->delay_node[e] != MODEL_NONE ? rn->delay_node[e] : pred_node(rn, ed->from);
        if (ed->kind == MODEL_EDGE_LAUNCH && ctrl)
            *ctrl = pred_node(rn, ed->from);
        if (rn->delay_node[e] == MODEL_NONE && starts_from_start(ed)) {
            /* when its source starts: when what its source waits for ends */
            if (rn->task_node[ed->from] != MODEL_NONE && depth < MAX_START_DEPTH) {
                if (start_deps(g, rn, from, ed->from, 0, NULL, depth + 1))
                    return -1;
                continue;
            }
            on = g->prev[ed->from] == MODEL_NONE ? MODEL_NONE : pred_node(rn, g->prev[ed->from]);
        }
        if (add_dep(rn, from, on))
            return -1;
    }
    return 0;
}

/* What task i's node (side 0) or its receive side (side 1) waits for
 * before it starts: the work before it on its resource (through the host
 * work between them), and its edges. */
static int start_deps(const struct model_graph *g, struct rank_nodes *rn, size_t from, uint32_t i, int side,
                      uint32_t *ctrl, int depth)
{
    uint32_t prev = g->prev[i];
    if (side == 0 && add_dep(rn, from, rn->host_node[i] != MODEL_NONE ? rn->host_node[i]
                                       : prev == MODEL_NONE           ? MODEL_NONE
                                                                      : rn->task_node[prev]))
        return -1;
    return edge_deps(g, rn, from, i, side, ctrl, depth);
}

/* The nodes of rank ri and their dependencies (local indices). */
static int rank_nodes_build(const struct model_graph *g, const int64_t *dur, const int64_t *gap, uint16_t ri,
                            struct rank_nodes *rn)
{
    size_t n = g->n_tasks ? g->n_tasks : 1, ne = g->n_edges ? g->n_edges : 1;
    rn->task_node = malloc(n * sizeof *rn->task_node);
    rn->host_node = malloc(n * sizeof *rn->host_node);
    rn->recv_node = malloc(n * sizeof *rn->recv_node);
    rn->delay_node = malloc(ne * sizeof *rn->delay_node);
    if (!rn->task_node || !rn->host_node || !rn->recv_node || !rn->delay_node)
        return -1;
    memset(rn->task_node, 0xff, n * sizeof *rn->task_node);
    memset(rn->host_node, 0xff, n * sizeof *rn->host_node);
    memset(rn->recv_node, 0xff, n * sizeof *rn->recv_node);
    memset(rn->delay_node, 0xff, ne * sizeof *rn->delay_node);
    for (size_t k = 0; k < g->n_res; k++) {
        if (g->res[k].rank != ri)
            continue;
        for (uint32_t i = g->res[k].first; i != MODEL_NONE; i = g->next[i])
            if ((gap[i] > 0 && add_node(rn, i, NODE_HOST, &rn->host_node[i])) ||
                add_node(rn, i, NODE_TASK, &rn->task_node[i]))
                return -1;
    }
    for (size_t k = 0; k < g->n_peers; k++)
        if (g->res[g->peers[k].res].rank == ri && add_node(rn, g->peers[k].task, NODE_RECV,
                                                           &rn->recv_node[g->peers[k].task]))
            return -1;
    /* a delay node for each latency between two of the rank's nodes */
    size_t tasks_end = rn->n;
    for (size_t x = 0; x < tasks_end; x++) {
        if (rn->v[x].kind == NODE_HOST)
            continue;
        uint32_t i = rn->v[x].task;
        int side = rn->v[x].kind == NODE_RECV;
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
            const struct model_edge *ed = &g->edges[e];
            int64_t delay;
            if (ed->kind == MODEL_EDGE_UNEXPLAINED || ed->peer != side || pred_node(rn, ed->from) == MODEL_NONE ||
                !edge_delay(ed, dur[i], &delay))
                continue;
            if (add_node(rn, e, NODE_DELAY, &rn->delay_node[e]))
                return -1;
            rn->v[rn->n - 1].dur = delay;
        }
    }
    for (size_t x = 0; x < rn->n; x++) {
        size_t from = rn->n_deps;
        uint32_t i = rn->v[x].task, ctrl = MODEL_NONE;
        int rc;
        if (rn->v[x].kind == NODE_HOST) {
            rc = add_dep(rn, from, g->prev[i] == MODEL_NONE ? MODEL_NONE : rn->task_node[g->prev[i]]);
        } else if (rn->v[x].kind == NODE_DELAY) {
            const struct model_edge *ed = &g->edges[i];
            rc = starts_from_start(ed) && rn->task_node[ed->from] != MODEL_NONE
                     ? start_deps(g, rn, from, ed->from, 0, NULL, 1)
                     : add_dep(rn, from, pred_node(rn, ed->from));
        } else {
            int gpu = rn->v[x].kind == NODE_TASK && model_task_on_gpu(g->tasks[i].cls);
            rc = start_deps(g, rn, from, i, rn->v[x].kind == NODE_RECV, gpu ? &ctrl : NULL, 0);
        }
        if (rc)
            return -1;
        rn->v[x].dep0 = (uint32_t)from;
        rn->v[x].n_deps = (uint32_t)(rn->n_deps - from);
        rn->v[x].ctrl = ctrl;
    }
    return 0;
}

/* Number the nodes in a topological order (Kahn's, first come first
 * served), into v[].id. SC_EINVAL when the dependencies hold a cycle. */
static int rank_nodes_number(struct rank_nodes *rn, struct sc_error *err)
{
    size_t n = rn->n, head = 0, tail = 0;
    uint32_t *indeg = calloc(n ? n : 1, sizeof *indeg), *succ_at = calloc(n + 1, sizeof *succ_at);
    uint32_t *succ = malloc((rn->n_deps ? rn->n_deps : 1) * sizeof *succ), *queue = malloc((n ? n : 1) * sizeof *queue);
    int rc = SC_OK;
    if (!indeg || !succ_at || !succ || !queue) {
        rc = OOM(err);
        goto out;
    }
    /* successors of each node: counted, summed, filled (indeg as a cursor) */
    for (size_t x = 0; x < n; x++)
        for (uint32_t d = rn->v[x].dep0; d < rn->v[x].dep0 + rn->v[x].n_deps; d++)
            succ_at[rn->deps[d] + 1]++;
    for (size_t x = 0; x < n; x++)
        succ_at[x + 1] += succ_at[x];
    for (size_t x = 0; x < n; x++)
        for (uint32_t d = rn->v[x].dep0; d < rn->v[x].dep0 + rn->v[x].n_deps; d++) {
            uint32_t on = rn->deps[d];
            succ[succ_at[on] + indeg[on]++] = (uint32_t)x;
        }
    for (size_t x = 0; x < n; x++) {
        indeg[x] = rn->v[x].n_deps;
        if (!indeg[x])
            queue[tail++] = (uint32_t)x;
    }
    while (head < tail) {
        uint32_t x = queue[head];
        rn->v[x].id = (uint32_t)head++;
        for (uint32_t k = succ_at[x]; k < succ_at[x + 1]; k++)
            if (--indeg[succ[k]] == 0)
                queue[tail++] = succ[k];
    }
    if (head != n)
        rc = sc_error_set(err, SC_EINVAL, "the graph's dependencies hold a cycle (%zu of %zu nodes ordered)", head, n);
out:
    free(indeg);
    free(succ_at);
    free(succ);
    free(queue);
    return rc;
}

/* ---- communicator groups ------------------------------------------------------- */

/* Chakra's CollectiveCommType of an operation, or -1 (not a collective:
 * unknown, or point-to-point). NCCL runs an all-to-all as sends and
 * receives (SendRecv kernels), and Chakra's converter types it so too. */
static int comm_type(unsigned op)
{
    switch (op) {
    case MODEL_COLL_ALLREDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
    case MODEL_COLL_REDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE;
    case MODEL_COLL_ALLGATHER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
    case MODEL_COLL_GATHER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__GATHER;
    case MODEL_COLL_SCATTER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__SCATTER;
    case MODEL_COLL_BROADCAST: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST;
    case MODEL_COLL_ALLTOALL:
    case MODEL_COLL_SENDRECV: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
    case MODEL_COLL_REDUCESCATTER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER;
    case MODEL_COLL_BARRIER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER;
    default: return -1;
    }
}

/* The communicator of each collective group: the groups with one process
 * group name and one set of member ranks share one, numbered from 1 in
 * the order first met; the table is comm_group.json. */
struct comm_groups {
    uint32_t *of_group; /* by graph group: its communicator id */
    json_t *table;      /* {"<id>": [ranks]} */
    char **keys;        /* by id - 1 */
    size_t n;
};

static void comm_groups_release(struct comm_groups *c)
{
    for (size_t k = 0; k < c->n; k++)
        free(c->keys[k]);
    free(c->keys);
    free(c->of_group);
    json_decref(c->table);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The id of the communicator `key` names, added to the table with its
 * ranks when new; 0 when out of memory. */
static uint32_t comm_group_id(struct comm_groups *c, const char *key, const int *ranks, size_t n)
{
    char name[24];
    for (size_t id = 0; id < c->n; id++)
        if (!strcmp(c->keys[id], key))
            return (uint32_t)id + 1;
    char **keys = realloc(c->keys, (c->n + 1) * sizeof *keys);
    json_t *list = json_array();
    if (keys)
        c->keys = keys;
    if (!keys || !list || !(c->keys[c->n] = strdup(key))) {
        json_decref(list);
        return 0;
    }
    c->n++;
    for (size_t k = 0; k < n; k++)
        json_array_append_new(list, json_integer(ranks[k]));
    snprintf(name, sizeof name, "%zu", c->n);
    return json_object_set_new(c->table, name, list) ? 0 : (uint32_t)c->n;
}

static int comm_groups_find(const struct model_graph *g, struct comm_groups *c, struct sc_error *err)
{
    int *ranks = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *ranks);
    char *key = NULL;
    size_t cap = 0;
    int rc = SC_OK;
    c->of_group = malloc((g->n_groups ? g->n_groups : 1) * sizeof *c->of_group);
    c->table = json_object();
    if (!ranks || !c->of_group || !c->table) {
        rc = OOM(err);
        goto out;
    }
    for (size_t gi = 0; gi < g->n_groups; gi++) {
        size_t n = 0;
        for (uint32_t m = g->group_at[gi]; m < g->group_at[gi + 1]; m++) {
            int id = g->ranks[g->tasks[g->group_tasks[m]].rank].id, seen = 0;
            for (size_t k = 0; k < n; k++)
                seen |= ranks[k] == id;
            if (!seen)
                ranks[n++] = id;
        }
        sc_sort(ranks, n, sizeof *ranks, cmp_int);
        const char *pg = model_graph_str(g, g->groups[gi].pg);
        if (sc_vec_reserve((void **)&key, &cap, strlen(pg) + 2 + n * 12, 1)) {
            rc = OOM(err);
            goto out;
        }
        size_t at = (size_t)snprintf(key, cap, "%s|", pg);
        for (size_t k = 0; k < n; k++)
            at += (size_t)snprintf(key + at, cap - at, "%d,", ranks[k]);
        if (!(c->of_group[gi] = comm_group_id(c, key, ranks, n))) {
            rc = OOM(err);
            goto out;
        }
    }
out:
    free(ranks);
    free(key);
    return rc;
}

/* ---- writing ------------------------------------------------------------------- */

#define MAX_ATTRS 8

/* A node's attributes, on the stack. */
struct attrs {
    ChakraProtoMsg__AttributeProto v[MAX_ATTRS];
    ChakraProtoMsg__AttributeProto *p[MAX_ATTRS];
    size_t n;
    char comm_id[24]; /* pg_name's text */
};

static ChakraProtoMsg__AttributeProto *attr(struct attrs *a, const char *name)
{
    ChakraProtoMsg__AttributeProto *x = &a->v[a->n];
    chakra_proto_msg__attribute_proto__init(x);
    x->name = (char *)name;
    a->p[a->n++] = x;
    return x;
}

static void attr_bool(struct attrs *a, const char *name, int v)
{
    ChakraProtoMsg__AttributeProto *x = attr(a, name);
    x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    x->bool_val = v != 0;
}

static void attr_int64(struct attrs *a, const char *name, int64_t v)
{
    ChakraProtoMsg__AttributeProto *x = attr(a, name);
    x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    x->int64_val = v;
}

static void attr_int32(struct attrs *a, const char *name, int32_t v)
{
    ChakraProtoMsg__AttributeProto *x = attr(a, name);
    x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
    x->int32_val = v;
}

static void attr_uint64(struct attrs *a, const char *name, uint64_t v)
{
    ChakraProtoMsg__AttributeProto *x = attr(a, name);
    x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
    x->uint64_val = v;
}

static void attr_string(struct attrs *a, const char *name, const char *v)
{
    ChakraProtoMsg__AttributeProto *x = attr(a, name);
    x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    x->string_val = (char *)v;
}

/* What one export shares across its ranks. */
struct exporter {
    const struct model_graph *g;
    const struct model_replay *r;
    const int64_t *dur, *gap;
    const uint32_t *peer_res; /* by task: the other side of a paired task, or MODEL_NONE */
    struct comm_groups cg;
    struct est_chakra_out *out;
};

static uint64_t micros(int64_t ns)
{
    return ns > 0 ? (uint64_t)llround((double)ns / 1000.0) : 0;
}

/* A duration of `dur` ns starting at `start` (ns since the rank's origin)
 * in whole microseconds: its end's rounding less its start's, so that
 * rounding does not add up along a thread or a stream of short tasks. */
static uint64_t micros_at(int64_t start, int64_t dur)
{
    uint64_t a = micros(start), b = micros(start + (dur > 0 ? dur : 0));
    return b - a;
}

/* The step boundary task i is, or NULL: *end says which end. */
static const struct model_graph_step *step_of_marker(const struct model_graph *g, uint32_t i, int *end)
{
    for (size_t k = 0; k < g->n_steps; k++)
        if (g->steps[k].begin == i || g->steps[k].end == i) {
            *end = g->steps[k].end == i;
            return &g->steps[k];
        }
    return NULL;
}

/* Whether communication task i is one side of a transfer between two
 * ranks: a send, a receive or a send-receive whose group is it and one
 * task of another rank (an all-to-all runs as send-receives among all). */
static int point_to_point(const struct model_graph *g, uint32_t i)
{
    const struct model_task *t = &g->tasks[i];
    if (t->group == MODEL_NONE || g->group_at[t->group + 1] - g->group_at[t->group] != 2 ||
        (t->sub != MODEL_COLL_SEND && t->sub != MODEL_COLL_RECV && t->sub != MODEL_COLL_SENDRECV))
        return 0;
    for (uint32_t m = g->group_at[t->group]; m < g->group_at[t->group + 1]; m++)
        if (g->tasks[g->group_tasks[m]].rank != t->rank)
            return 1;
    return 0;
}

/* Whether the point-to-point task i sends: as its operation says, else
 * its name (as Chakra's converter reads "send" and "recv" in an op's
 * name), else the group's first member sends. */
static int sender(const struct model_graph *g, uint32_t i)
{
    const struct model_task *t = &g->tasks[i];
    const char *name = model_graph_str(g, g->src[i].name);
    if (t->sub != MODEL_COLL_SENDRECV)
        return t->sub == MODEL_COLL_SEND;
    if (strstr(name, "recv") || strstr(name, "receive"))
        return 0;
    if (strstr(name, "send"))
        return 1;
    return g->group_tasks[g->group_at[t->group]] == i;
}

/* Type and attributes of the node for task i (the receive side when
 * recv). */
static void node_body(const struct exporter *x, const struct trace_facts *f, uint32_t i, int recv,
                      ChakraProtoMsg__Node *nd, struct attrs *a, ChakraProtoMsg__IOInfo *in)
{
    const struct model_graph *g = x->g;
    const struct model_task *t = &g->tasks[i];
    const struct model_resource *res = &g->res[recv ? x->peer_res[i] : t->res];
    int ct = t->cls == MODEL_TASK_COMM ? comm_type(t->sub) : -1;
    const struct model_coll_group *grp = t->group != MODEL_NONE ? &g->groups[t->group] : NULL;
    int p2p = t->cls == MODEL_TASK_COMM && (x->peer_res[i] != MODEL_NONE || point_to_point(g, i));
    nd->type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
    if (p2p) {
        int sends = x->peer_res[i] != MODEL_NONE ? !recv : sender(g, i);
        int self = g->ranks[res->rank].id, other = self;
        if (x->peer_res[i] != MODEL_NONE)
            other = g->ranks[g->res[recv ? t->res : x->peer_res[i]].rank].id;
        else
            for (uint32_t m = g->group_at[t->group]; m < g->group_at[t->group + 1]; m++)
                if (g->tasks[g->group_tasks[m]].rank != t->rank)
                    other = g->ranks[g->tasks[g->group_tasks[m]].rank].id;
        nd->type = sends ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
        attr_int32(a, "comm_src", sends ? self : other);
        attr_int32(a, "comm_dst", sends ? other : self);
        attr_int32(a, "comm_tag", (int32_t)(grp ? t->group : i));
        if (grp && grp->bytes >= 0)
            attr_int64(a, "comm_size", grp->bytes);
    } else if (ct >= 0) {
        nd->type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
        attr_int64(a, "comm_type", ct);
        if (grp && grp->bytes >= 0)
            attr_int64(a, "comm_size", grp->bytes);
        if (grp) {
            snprintf(a->comm_id, sizeof a->comm_id, "%u", x->cg.of_group[t->group]);
            attr_string(a, "pg_name", a->comm_id);
            if (*model_graph_str(g, grp->pg))
                attr_string(a, "pg_desc", model_graph_str(g, grp->pg));
        }
    }
    attr_bool(a, "is_cpu_op", !res->gpu);
    /* what the trace or the synthesis tells of the work */
    double flops = 0;
    size_t pk = model_graph_part_seek(g, i);
    if (pk < g->n_parts && g->parts[pk].task == i)
        flops = g->parts[pk].flops;
    uint32_t ev = g->src[i].event;
    if (f->t && ev < f->t->n_events) {
        const struct model_trace *tr = f->t;
        const struct model_event *e = &tr->events[ev];
        if (!flops)
            flops = f->flops[ev];
        const struct model_info *ei = model_event_info(tr, e);
        if (ei && ei->bytes >= 0 && (t->cls == MODEL_TASK_COPY || t->cls == MODEL_TASK_SET))
            attr_uint64(a, "tensor_size", (uint64_t)ei->bytes);
        uint32_t op = f->op_of[ev];
        const struct model_op_args *oi = op == MODEL_NONE ? NULL : model_event_args(tr, &tr->events[op]);
        if (oi) {
            if (oi->input_dims != MODEL_NONE)
                in->shapes = (char *)model_str(tr, oi->input_dims);
            if (oi->input_types != MODEL_NONE)
                in->types = (char *)model_str(tr, oi->input_types);
            nd->inputs = in;
        }
    }
    if (flops > 0 && nd->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE)
        attr_int64(a, "num_ops", (int64_t)llround(flops));
}

/* The duration of collective member i: its group's transfer time (the
 * longest member's, as the replay runs it from the last arrival), or,
 * with peers untraced, its time from its rank's arrival to its end as
 * replayed (which holds the modelled wait for those peers). */
static int64_t coll_dur(const struct exporter *x, uint32_t i)
{
    const struct model_graph *g = x->g;
    uint32_t gi = g->tasks[i].group, n = g->group_at[gi + 1] - g->group_at[gi];
    int64_t d = 0;
    if (g->tasks[i].kept || g->groups[gi].size > n)
        return x->r->end[i] - x->r->start[i];
    for (uint32_t m = g->group_at[gi]; m < g->group_at[gi + 1]; m++)
        if (x->dur[g->group_tasks[m]] > d)
            d = x->dur[g->group_tasks[m]];
    return d;
}

/* Rank ri's file. */
static int write_rank(struct exporter *x, uint16_t ri, const char *prefix, struct est_chakra_file *file,
                      struct sc_error *err)
{
    const struct model_graph *g = x->g;
    const struct model_replay *r = x->r;
    struct rank_nodes rn = {0};
    struct trace_facts f = {0};
    uint32_t *order = NULL;
    uint64_t *deps = NULL;
    int rc = SC_OK;
    const struct model_trace *t = model_graph_trace(g, (uint16_t)ri);

    snprintf(file->name, sizeof file->name, "%s.%d.et", prefix, g->ranks[ri].id);
    if ((rc = facts_init(&f, t, err)))
        goto out;
    if (rank_nodes_build(g, x->dur, x->gap, ri, &rn)) {
        rc = OOM(err);
        goto out;
    }
    if ((rc = rank_nodes_number(&rn, err)))
        goto out;
    order = malloc((rn.n ? rn.n : 1) * sizeof *order);
    deps = malloc((rn.n_deps ? rn.n_deps : 1) * sizeof *deps);
    if (!order || !deps) {
        rc = OOM(err);
        goto out;
    }
    for (size_t k = 0; k < rn.n; k++)
        order[rn.v[k].id] = (uint32_t)k;
    int64_t origin = INT64_MAX;
    for (size_t k = 0; k < g->n_res; k++)
        if (g->res[k].rank == ri && g->res[k].origin < origin)
            origin = g->res[k].origin;

    ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    struct attrs ma = {0};
    meta.version = (char *)MODEL_ET_SCHEMA_VERSION;
    attr_string(&ma, "generator", "stepcast " STEPCAST_VERSION);
    attr_int64(&ma, "rank", g->ranks[ri].id);
    attr_int64(&ma, "world_size", (int64_t)g->n_ranks);
    meta.n_attr = ma.n;
    meta.attr = ma.p;
    if ((rc = model_et_append(&file->body, &meta, err)))
        goto out;
    for (size_t k = 0; k < rn.n; k++) {
        const struct xnode *v = &rn.v[order[k]];
        uint32_t i = v->task;
        ChakraProtoMsg__Node nd = CHAKRA_PROTO_MSG__NODE__INIT;
        ChakraProtoMsg__IOInfo in = CHAKRA_PROTO_MSG__IOINFO__INIT;
        struct attrs a = {0};
        uint64_t ctrl;
        char name[160];
        nd.id = k;
        for (uint32_t d = 0; d < v->n_deps; d++)
            deps[d] = rn.v[rn.deps[v->dep0 + d]].id;
        nd.n_data_deps = v->n_deps;
        nd.data_deps = deps;
        if (v->ctrl != MODEL_NONE) {
            ctrl = rn.v[v->ctrl].id;
            nd.n_ctrl_deps = 1;
            nd.ctrl_deps = &ctrl;
            x->out->ctrl_deps++;
        }
        x->out->data_deps += v->n_deps;
        x->out->nodes++;
        if (v->kind == NODE_DELAY) {
            const struct model_edge *ed = &g->edges[i];
            snprintf(name, sizeof name, "%s latency", model_edge_kind_name((enum model_edge_kind)ed->kind));
            nd.name = name;
            nd.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
            nd.duration_micros = micros(v->dur);
            attr_bool(&a, "is_cpu_op", !g->res[g->tasks[ed->from].res].gpu);
            x->out->delay_nodes++;
        } else if (v->kind == NODE_HOST) {
            uint32_t prev = g->prev[i];
            int64_t free_at = prev == MODEL_NONE ? g->res[g->tasks[i].res].origin : r->end[prev];
            nd.name = (char *)"host work";
            nd.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
            nd.duration_micros = micros_at(free_at - origin, x->gap[i]);
            nd.start_time_micros = micros(free_at - origin);
            attr_bool(&a, "is_cpu_op", !g->res[g->tasks[i].res].gpu);
            x->out->host_nodes++;
        } else {
            const struct model_task *tk = &g->tasks[i];
            int end = 0;
            const struct model_graph_step *st = tk->cls == MODEL_TASK_MARKER ? step_of_marker(g, i, &end) : NULL;
            nd.name = (char *)model_graph_str(g, g->src[i].name);
            if (st) {
                snprintf(name, sizeof name, "%s", model_graph_str(g, st->name));
                nd.name = name;
                attr_string(&a, "step", end ? "end" : "begin");
            }
            node_body(x, &f, i, v->kind == NODE_RECV, &nd, &a, &in);
            int64_t d = tk->group != MODEL_NONE ? coll_dur(x, i) : x->dur[i];
            nd.duration_micros = micros_at(r->start[i] - origin, d);
            nd.start_time_micros = micros(r->start[i] - origin);
        }
        nd.n_attr = a.n;
        nd.attr = a.p;
        if ((rc = model_et_append(&file->body, &nd, err)))
            goto out;
    }
out:
    facts_release(&f);
    rank_nodes_release(&rn);
    free(order);
    free(deps);
    return rc;
}

static int prefix_ok(const char *p)
{
    size_t n = strlen(p);
    if (!n || n > 64)
        return 0;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '.' || *p == '-'))
            return 0;
    return 1;
}

int chakra_export(const struct model_graph *g, const struct model_replay *r, const struct model_replay_opts *o,
                      const char *prefix, struct est_chakra_out *out, struct sc_error *err)
{
    struct exporter x = {.g = g, .r = r, .out = out};
    int64_t *dur = NULL, *gap = NULL;
    uint32_t *peer_res = NULL;
    char *table = NULL;
    int rc = SC_OK;
    memset(out, 0, sizeof *out);
    if (!prefix_ok(prefix))
        return sc_error_set(err, SC_EINVAL, "bad file prefix '%s': 1 to 64 of A-Z a-z 0-9 _ . -", prefix);
    size_t n = g->n_tasks ? g->n_tasks : 1;
    dur = malloc(n * sizeof *dur);
    gap = malloc(n * sizeof *gap);
    peer_res = malloc(n * sizeof *peer_res);
    out->files = calloc(g->n_ranks + 1, sizeof *out->files);
    if (!dur || !gap || !peer_res || !out->files) {
        rc = OOM(err);
        goto out;
    }
    struct model_replay_opts def;
    if (!o) {
        model_replay_opts_default(&def);
        o = &def;
    }
    if ((rc = model_replay_durations(g, o, dur, gap, err)) || (rc = comm_groups_find(g, &x.cg, err)))
        goto out;
    /* the replay's host gaps are what it ran */
    memcpy(gap, r->gap, g->n_tasks * sizeof *gap);
    memset(peer_res, 0xff, n * sizeof *peer_res);
    for (size_t k = 0; k < g->n_peers; k++)
        peer_res[g->peers[k].task] = g->peers[k].res;
    x.dur = dur;
    x.gap = gap;
    x.peer_res = peer_res;
    for (size_t ri = 0; ri < g->n_ranks; ri++)
        if (out->n_files++, (rc = write_rank(&x, (uint16_t)ri, prefix, &out->files[ri], err)))
            goto out;
    struct est_chakra_file *cg = &out->files[out->n_files];
    snprintf(cg->name, sizeof cg->name, "comm_group.json");
    if (!(table = json_dumps(x.cg.table, 0))) {
        rc = OOM(err);
        goto out;
    }
    cg->body.data = (unsigned char *)table;
    cg->body.n = cg->body.cap = strlen(table);
    table = NULL;
    out->n_files++;
out:
    comm_groups_release(&x.cg);
    free(dur);
    free(gap);
    free(peer_res);
    free(table);
    return rc;
}

void chakra_out_release(struct est_chakra_out *out)
{
    for (size_t k = 0; out->files && k < out->n_files; k++)
        model_et_buf_release(&out->files[k].body);
    free(out->files);
    memset(out, 0, sizeof *out);
}
