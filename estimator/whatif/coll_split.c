/* estimator/whatif/coll_split.c: kept collectives split into transfer and wait
 * (coll_split.h). */
#include "estimator/whatif/coll_split.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/costs/hardware.h"
#include "estimator/whatif/structure.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/trace.h"
#include "common/banned.h"

double whatif_coll_split_us(const struct coll_params *p, int kind, struct coll_group gr, double bytes)
{
    struct coll_estimate e;
    struct sc_error ignored;
    if (gr.ranks <= 1)
        return 0;
    if (cost_coll_estimate(p, (enum model_coll_op)kind, &gr, bytes, &e, &ignored))
        return -1;
    return e.time_us;
}

/* The size the model gives time_us for (bisection; the model grows with
 * the size). */
static double invert_bytes(const struct coll_params *p, int kind, struct coll_group gr, double time_us)
{
    double lo = 0, hi = 1e13;
    if (whatif_coll_split_us(p, kind, gr, lo) >= time_us)
        return 0;
    if (whatif_coll_split_us(p, kind, gr, hi) <= time_us)
        return hi;
    for (int i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (whatif_coll_split_us(p, kind, gr, mid) < time_us)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* A communication task and what orders it: (rank, name, key), for the
 * least-waiting instance of each collective. The sort reads no shared
 * state, so collectives of several graphs may be split at once. */
struct comm_ref {
    uint32_t rank, name;
    int key;
    uint32_t id;
    double dur;
};

static int comm_cmp(const void *a, const void *b)
{
    const struct comm_ref *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* least[i]: the shortest traced time of the instances of communication
 * task i's collective on its rank. */
static int least_waiting(const struct model_graph *g, const struct coll_split_in *in, double *least,
                         struct sc_error *err)
{
    size_t n = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        n += g->tasks[i].cls == MODEL_TASK_COMM;
    struct comm_ref *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    n = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].cls == MODEL_TASK_COMM)
            v[n++] = (struct comm_ref){g->tasks[i].rank, g->src[i].name, in[i].key, i, (double)g->tasks[i].dur};
    qsort(v, n, sizeof *v, comm_cmp);
    for (size_t a = 0; a < n;) {
        size_t b = a;
        double m = v[a].dur;
        while (b < n && v[b].rank == v[a].rank && v[b].name == v[a].name && v[b].key == v[a].key) {
            if (v[b].dur < m)
                m = v[b].dur;
            b++;
        }
        for (size_t k = a; k < b; k++)
            least[v[k].id] = m;
        a = b;
    }
    free(v);
    return SC_OK;
}

void whatif_coll_split_release(struct coll_split *s)
{
    free(s->transfer);
    free(s->wait);
    free(s->bytes);
    free(s->kind);
    free(s->from);
    memset(s, 0, sizeof *s);
}

int whatif_coll_split_run(const struct model_graph *g, const struct coll_params *p, coll_split_layout_fn layout,
                   void *ctx, struct coll_split *out, struct sc_error *err)
{
    size_t n = g->n_tasks ? g->n_tasks : 1;
    struct coll_split_in *in = calloc(n, sizeof *in);
    double *least = malloc(n * sizeof *least);
    memset(out, 0, sizeof *out);
    out->transfer = calloc(n, sizeof *out->transfer);
    out->wait = calloc(n, sizeof *out->wait);
    out->bytes = calloc(n, sizeof *out->bytes);
    out->kind = malloc(n * sizeof *out->kind);
    out->from = calloc(n, 1);
    int rc = SC_OK;
    if (!in || !least || !out->transfer || !out->wait || !out->bytes || !out->kind || !out->from) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        in[i].kind = -1;
        in[i].bytes = -1;
        if (g->tasks[i].cls == MODEL_TASK_COMM)
            layout(ctx, i, &in[i]);
    }
    if ((rc = least_waiting(g, in, least, err)))
        goto out;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        out->kind[i] = -1;
        if (t->cls != MODEL_TASK_COMM)
            continue;
        int kind = in[i].kind;
        struct coll_group gr = in[i].group;
        double d = (double)t->dur;
        int64_t size = in[i].bytes;
        out->kind[i] = kind >= 0 && cost_coll_kind_modelled((enum model_coll_op)kind) && gr.ranks > 1 ? kind : -1;
        out->transfer[i] = d;
        if (out->kind[i] < 0)
            continue;
        if (!t->kept) {
            /* all its ranks traced: the graph holds its transfer alone */
            out->bytes[i] = size > 0 ? (double)size : invert_bytes(p, kind, gr, d / 1e3);
            out->sizes_unknown |= size <= 0;
            continue;
        }
        if (size > 0) {
            double us = whatif_coll_split_us(p, kind, gr, (double)size);
            out->bytes[i] = (double)size;
            out->transfer[i] = us >= 0 && us * 1e3 < d ? us * 1e3 : d;
            out->from[i] = MODEL_WAIT_FROM_SIZE;
        } else {
            out->transfer[i] = least[i] < d ? least[i] : d;
            out->bytes[i] = invert_bytes(p, kind, gr, out->transfer[i] / 1e3);
            out->from[i] = MODEL_WAIT_FROM_LEAST;
            out->sizes_unknown = 1;
        }
        out->wait[i] = d - out->transfer[i];
    }
out:
    free(in);
    free(least);
    if (rc)
        whatif_coll_split_release(out);
    return rc;
}

/* ---- for the replay ---- */

struct replay_layout {
    const struct model_graph *g;
    int64_t *world;  /* per rank: its trace's world size, or -1 */
    int node;        /* GPUs per NVLink domain */
};

int64_t whatif_coll_split_kept_ranks(const struct model_graph *g, uint32_t i, int64_t world)
{
    uint32_t group = g->tasks[i].group;
    if (group != MODEL_NONE && g->groups[group].size > 1)
        return g->groups[group].size;
    return world > 0 ? world : -1;
}

/* A kept collective's group (whatif_coll_split_kept_ranks), packed into domains;
 * send/recv among more than two is NCCL's all-to-all. */
static void replay_layout(void *ctx, uint32_t i, struct coll_split_in *in)
{
    const struct replay_layout *l = ctx;
    const struct model_task *t = &l->g->tasks[i];
    if (!t->kept)
        return; /* its transfer alone already */
    if (t->group != MODEL_NONE)
        in->bytes = l->g->groups[t->group].bytes;
    int64_t ranks = whatif_coll_split_kept_ranks(l->g, i, l->world[t->rank]);
    if (ranks <= 1 || ranks > 1 << 24)
        return;
    in->kind = t->sub;
    if (whatif_struct_coll_is_p2p(in->kind) && ranks > 2)
        in->kind = MODEL_COLL_ALLTOALL;
    in->group.ranks = (int)ranks;
    in->group.ranks_per_domain = ranks < l->node ? (int)ranks : l->node;
}

int whatif_coll_split_waits(const struct model_graph *g, struct model_coll_wait **out, size_t *n, struct sc_error *err)
{
    const struct hw_profile *hw;
    struct sc_error ignored;
    struct coll_params p;
    struct coll_split s;
    size_t kept = 0;
    *out = NULL;
    *n = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        kept += g->tasks[i].kept;
    if (!kept || !g->job || whatif_job_structure_gpu(g, &hw, NULL, 0, &ignored))
        return SC_OK; /* no model for the traced GPU: kept whole */
    struct replay_layout l = {g, malloc((g->n_ranks ? g->n_ranks : 1) * sizeof(int64_t)),
                              hw->gpus_per_node > 0 ? hw->gpus_per_node : 1};
    if (!l.world)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        const struct model_trace *t = whatif_job_structure_trace(g, r);
        l.world[r] = t ? t->world_size : -1;
    }
    cost_coll_params_from_hw(hw, &p);
    int rc = whatif_coll_split_run(g, &p, replay_layout, &l, &s, err);
    free(l.world);
    if (rc)
        return rc;
    struct model_coll_wait *v = malloc(kept * sizeof *v);
    if (!v) {
        whatif_coll_split_release(&s);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        if (!g->tasks[i].kept || s.kind[i] < 0)
            continue;
        int64_t w = (int64_t)(s.wait[i] + 0.5);
        v[(*n)++] = (struct model_coll_wait){i, w < g->tasks[i].dur ? w : g->tasks[i].dur, s.from[i]};
    }
    whatif_coll_split_release(&s);
    if (!*n) {
        free(v);
        v = NULL;
    }
    *out = v;
    return SC_OK;
}
