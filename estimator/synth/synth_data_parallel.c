/* estimator/synth/synth_data_parallel.c: the data-parallel side of the step
 * synthesiser (synth_internal.h): the gradient buckets reduced as the last
 * backward produces them, ZeRO-3's per-layer parameter gathers and
 * gradient reduce-scatters, and ZeRO-3's two streams of one rank timed
 * without building a graph (synth_bound_z3).
 *
 * Apart from the schedule because these collectives follow the
 * parameters, not the pipeline: the schedule only says when a layer's
 * pass begins and ends. */
#include "estimator/synth/synth_data_parallel.h"
#include "estimator/synth/synth_internal.h"

#include "estimator/spec/flops.h"
#include "estimator/spec/memory.h"
#include "common/banned.h"

/* ---- gradient buckets ---- */

double synth_grad_bucket_params(const struct est_spec *s)
{
    double per_dp = 1e6 * (double)(s->parallel.dp * s->parallel.cp);
    return per_dp > 40e6 ? per_dp : 40e6;
}

void synth_layer_rank_params(const struct est_spec *s, int64_t i, double *dense, double *experts)
{
    struct est_layer_params p;
    spec_layer_params(&s->model, i, &p);
    *dense = spec_layer_dense_per_rank(&p, (double)s->parallel.tp);
    *experts = p.experts / (double)(s->parallel.ep * s->parallel.etp);
}

/* layer_rank_params of layer i of kind is_moe, derived once per kind
 * (they depend on nothing else). */
void synth_kind_rank_params(struct synth *y, int64_t i, int is_moe, double *dense, double *experts)
{
    if (!y->layer_known[is_moe]) {
        synth_layer_rank_params(y->s, i, &y->layer_dense[is_moe], &y->layer_experts[is_moe]);
        y->layer_known[is_moe] = 1;
    }
    *dense = y->layer_dense[is_moe];
    *experts = y->layer_experts[is_moe];
}

double synth_grad_bytes(const struct est_spec *s)
{
    struct est_state_bytes b;
    spec_state_bytes(&s->options, &b);
    return b.gradients;
}

/* A collective of the data-parallel stream. */
struct dp_coll {
    enum model_coll_op op;
    const struct coll_group *group;
    double bytes;
};

/* The collectives that run `op` over a set of parameters (dense and
 * expert; bytes_per per parameter), one after another: the dense ones over
 * dp x cp, the experts' over their own data-parallel ranks. ZeRO-3's
 * (`z3`) dense ones run over their shard group (parallel.fsdp_shard), and
 * a reduce-scatter's shard is then all-reduced over the replicas. Returns
 * how many (at most 3). */
static size_t dp_coll_list(const struct synth *y, enum model_coll_op op, int z3, double dense, double experts,
                           double bytes_per, struct dp_coll out[3])
{
    const struct shape *sh = &y->sh;
    double sizes[2] = {dense, experts};
    const struct coll_group *groups[2] = {z3 ? &sh->shard_group : &sh->dp_group, &sh->edp_group};
    size_t n = 0;
    for (int k = 0; k < 2; k++)
        if (sizes[k] > 0 && groups[k]->ranks > 1)
            out[n++] = (struct dp_coll){op, groups[k], sizes[k] * bytes_per};
    if (z3 && op == MODEL_COLL_REDUCESCATTER && dense > 0 && sh->replica_group.ranks > 1)
        out[n++] = (struct dp_coll){MODEL_COLL_ALLREDUCE, &sh->replica_group,
                                    dense * bytes_per / sh->shard_group.ranks};
    return n;
}

/* dp_coll_list's collectives on the data-parallel stream, after task
 * `after`. */
static void dp_colls(struct synth *y, struct rank *r, enum model_coll_op op, int z3, const char *name,
                     double dense, double experts, double bytes_per, uint32_t after)
{
    struct dp_coll c[3];
    size_t n = dp_coll_list(y, op, z3, dense, experts, bytes_per, c);
    for (size_t k = 0; k < n; k++) {
        struct op o = {c[k].op == op ? name : "gradient all-reduce across replicas", MODEL_TASK_COMM,
                       (uint8_t)c[k].op, OP_PLAIN, 1, synth_coll_ns(y, c[k].op, c[k].group, c[k].bytes),
                       sc_sat_trunc(c[k].bytes), (uint32_t)c[k].group->ranks};
        synth_wait_on(y, r, ST_DP, after);
        synth_emit(y, r, ST_DP, &o);
        synth_flush(y, r);
    }
}

/* Reduce the open bucket's gradients (after the work emitted so far). */
void synth_bucket_reduce(struct synth *y, struct rank *r, struct bucket_state *b)
{
    enum model_coll_op op = y->s->options.zero_stage >= 1 ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLREDUCE;
    dp_colls(y, r, op, 0, op == MODEL_COLL_ALLREDUCE ? "gradient all-reduce" : "gradient reduce-scatter", b->dense,
             b->experts, synth_grad_bytes(y->s), synth_anchor(y, r, ST_COMPUTE));
    b->dense = b->experts = 0;
}

/* ---- ZeRO-3: parameters gathered and gradients reduce-scattered per layer ---- */

/* Stage 3 (DeepSpeed's ZeRO-3, PyTorch's FSDP) shards the parameters too:
 * each layer's (and the embedding's and output layer's) are all-gathered
 * before its forward and again before its backward, in every micro-batch,
 * and its gradients reduce-scattered after its backward, also in every
 * micro-batch, since only a shard of them is kept (memory.c). */
int synth_zero3(const struct synth *y)
{
    return y->s->options.zero_stage >= 3 && y->sh.dp_group.ranks > 1;
}

/* The embedding's and the output layer's parameters on one rank of virtual
 * stage st, as memory.c counts them: the output layer's own unless it is
 * the embedding, tied on the same stage, and the final norm with it. */
void synth_edge_params(const struct est_spec *s, const struct est_stage_layers *st, double *embedding,
                       double *head)
{
    double emb = (double)(s->model.vocab * s->model.hidden) / (double)s->parallel.tp;
    *embedding = st->embedding ? emb : 0;
    *head = st->loss ? (s->model.tied_embeddings && st->embedding ? 0 : emb) + (double)s->model.hidden : 0;
}

/* Reduce-scatter the gradients left by synth_z3_grads_done, if any. */
void synth_z3_reduce(struct synth *y, struct rank *r)
{
    if (r->z3_grads.dense + r->z3_grads.experts <= 0)
        return;
    dp_colls(y, r, MODEL_COLL_REDUCESCATTER, 1, "gradient reduce-scatter", r->z3_grads.dense, r->z3_grads.experts,
             synth_grad_bytes(y->s), r->z3_grads.after);
    r->z3_grads.dense = r->z3_grads.experts = 0;
}

/* Before a layer's compute: its parameters all-gathered on the
 * data-parallel stream, and the compute waits for them. With
 * overlap_param_gather the gather is prefetched (FSDP's forward and
 * backward prefetch): it waits only for the compute before the layer that
 * computes now, whose gathered parameters it may then replace, so that it
 * runs beside that layer and two layers are gathered at most (as memory.c
 * counts); without it, for all the compute before its own layer. The
 * previous layer's gradients are reduce-scattered after it on the stream:
 * the prefetch is issued before that layer's backward. */
void synth_z3_gather(struct synth *y, struct rank *r, double dense, double experts)
{
    if (!synth_zero3(y))
        return;
    uint32_t before = synth_anchor(y, r, ST_COMPUTE);
    uint32_t freed = y->s->options.overlap_param_gather ? r->z3_free : before;
    r->z3_free = before;
    if (dense + experts > 0) {
        dp_colls(y, r, MODEL_COLL_ALLGATHER, 1, "parameter all-gather", dense, experts, y->sh.B, freed);
        synth_wait_on(y, r, ST_COMPUTE, r->last[ST_DP]);
    }
    synth_z3_reduce(y, r);
}

/* After a layer's backward: its gradients, to reduce-scatter after the
 * next gather (or at the end of the pass). */
void synth_z3_grads_done(struct synth *y, struct rank *r, double dense, double experts)
{
    if (!synth_zero3(y))
        return;
    r->z3_grads.dense = dense;
    r->z3_grads.experts = experts;
    r->z3_grads.after = synth_anchor(y, r, ST_COMPUTE);
}

/* ---- ZeRO-3's streams of one rank, timed without a graph ---- */

static struct z3_colls z3_colls_of(struct synth *y, enum model_coll_op op, double dense, double experts,
                                   double bytes_per)
{
    struct dp_coll list[3];
    size_t n = dp_coll_list(y, op, 1, dense, experts, bytes_per, list);
    struct z3_colls c = {n > 0, 0};
    for (size_t k = 0; k < n; k++)
        c.ns = sc_sat_add(c.ns, synth_coll_ns(y, list[k].op, list[k].group, list[k].bytes));
    return c;
}

static struct z3_unit z3_unit_of(struct synth *y, double dense, double experts)
{
    return (struct z3_unit){dense + experts > 0, z3_colls_of(y, MODEL_COLL_ALLGATHER, dense, experts, y->sh.B),
                            z3_colls_of(y, MODEL_COLL_REDUCESCATTER, dense, experts, synth_grad_bytes(y->s))};
}

/* Collectives c on the stream after `after`. */
static void z3_sim_colls(struct z3_sim *z, const struct z3_colls *c, int64_t after)
{
    if (c->any)
        z->stream = sc_sat_add(max_i64(z->stream, after), c->ns);
}

/* synth_z3_reduce: the gradients left by the last backward unit reduce-scattered. */
static void z3_sim_reduce(struct z3_sim *z)
{
    z3_sim_colls(z, &z->grads, z->grads_after);
    z->grads = (struct z3_colls){0, 0};
}

/* synth_z3_gather, the unit's compute (ns) and, after a backward, synth_z3_grads_done. */
static void z3_sim_unit(struct synth *y, const struct z3_unit *u, int64_t compute, int backward)
{
    struct z3_sim *z = y->sim;
    int64_t before = z->compute, freed = y->s->options.overlap_param_gather ? z->free_at : before;
    z->free_at = before;
    if (u->params) {
        z3_sim_colls(z, &u->gather, freed);
        z->compute = max_i64(z->compute, z->stream);
    }
    z3_sim_reduce(z);
    z->compute = sc_sat_add(z->compute, compute);
    if (backward) {
        z->grads = u->reduce;
        z->grads_after = z->compute;
    }
}

/* The backward of a layer of kind moe at place in_chunk of its model
 * chunk, with its recomputation where it runs it. */
int64_t synth_layer_b_ns(const struct est_spec *s, const struct est_pass_costs *pc, int moe, int64_t in_chunk)
{
    return pc->layer_b[moe] - (spec_layer_recomputed(s, in_chunk) ? 0 : pc->layer_r[moe]);
}

/* run_pass's units of virtual stage st, in its order. */
void synth_z3_sim_pass(struct synth *y, const struct est_stage_layers *st, int backward)
{
    struct z3_sim *z = y->sim;
    const struct est_pass_costs *pc = z->pc;
    struct z3_unit *edge = z->edge[st->embedding != 0][st->loss != 0];
    if (!z->edge_known[st->embedding != 0][st->loss != 0]) {
        double emb, head;
        synth_edge_params(y->s, st, &emb, &head);
        edge[0] = z3_unit_of(y, emb, 0);
        edge[1] = z3_unit_of(y, head, 0);
        z->edge_known[st->embedding != 0][st->loss != 0] = 1;
    }
    const struct z3_unit *ue = &edge[0], *uh = &edge[1];
    if (!backward && st->embedding)
        z3_sim_unit(y, ue, pc->embed_f, 0);
    if (backward && st->loss)
        z3_sim_unit(y, uh, pc->head_b, 1);
    for (int i = 0; i < st->layers; i++) {
        int in_chunk = backward ? st->layers - 1 - i : i;
        int64_t layer = st->first_layer + in_chunk;
        int moe = spec_model_layer_is_moe(&y->s->model, layer);
        if (!z->layer_known[moe]) {
            double dense, experts;
            synth_kind_rank_params(y, layer, moe, &dense, &experts);
            z->layer[moe] = z3_unit_of(y, dense, experts);
            z->layer_known[moe] = 1;
        }
        z3_sim_unit(y, &z->layer[moe], backward ? synth_layer_b_ns(y->s, pc, moe, in_chunk) : pc->layer_f[moe], backward);
    }
    if (!backward && st->loss)
        z3_sim_unit(y, uh, pc->head_f, 0);
    if (backward && st->embedding)
        z3_sim_unit(y, ue, pc->embed_b, 1);
    if (backward) /* synth_z3_reduce at the pass's end */
        z3_sim_reduce(z);
}
