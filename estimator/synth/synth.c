/* estimator/synth/synth.c: a training step synthesised from a spec (synth.h):
 * the schedule, and the entry points that run it.
 *
 * The schedule walks Megatron's pipeline schedule (1F1B or interleaved) on
 * every pipeline rank, asks the emitter (synth_emit.c) for each pass's
 * operations (synth_ops.c) and the data-parallel collectives
 * (synth_data_parallel.c), and wires the transfers between ranks. The
 * entry points build the graph, size it, or bound the step from the
 * passes' costs without one. The parts share synth_internal.h. */
#include "estimator/synth/synth.h"
#include "estimator/synth/synth_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cancel.h"
#include "common/vec.h"
#include "estimator/spec/memory.h"
#include "estimator/spec/placement.h"
#include "model/kernel_family.h"
#include "common/banned.h"

/* ---- the schedule ---- */

/* The streams of a rank as its trace names them. */
static const char *const stream_labels[ST_COUNT] = {"compute", "pipeline send", "pipeline receive",
                                                    "data-parallel", "context-parallel"};

struct p2p {
    uint32_t *v;
    size_t n, cap;
};

enum { P2P_FWD_SEND, P2P_FWD_RECV, P2P_BWD_SEND, P2P_BWD_RECV, P2P_KINDS };

/* A pass's compute as one run (pass_ops summed), per direction, made at
 * its first use: at stage detail it serves every micro-batch. */
struct pass_sum {
    struct run_sum sum[2]; /* forward, backward */
    uint8_t known[2];
};

struct pipeline {
    int64_t pp, vpp, m; /* ranks, chunks per rank, micro-batches */
    struct est_stage_layers *vstages;
    struct pass_sum *pass; /* per virtual stage; NULL when a pass is emitted op by op */
    struct p2p *p2p; /* [rank * P2P_KINDS + kind] */
    uint32_t *grad_norm; /* per rank: its member of the gradient-norm all-reduce */
    int64_t act_bytes;
    int64_t p2p_dur;
};

/* The bytes of one pipeline transfer: a micro-batch's activations (or
 * their gradients) at a stage boundary. */
static int64_t act_bytes(const struct synth *y)
{
    return sc_sat_trunc(y->sh.Tl * y->sh.h * y->sh.B);
}

/* How long one pipeline transfer takes, ns. */
static int64_t p2p_ns(struct synth *y)
{
    return synth_coll_ns(y, MODEL_COLL_SENDRECV, &y->sh.pp_pair, (double)act_bytes(y));
}

static struct p2p *p2p_list(struct pipeline *p, int64_t rank, int kind)
{
    return &p->p2p[rank * P2P_KINDS + kind];
}

static int virtual_stage(const struct pipeline *p, int64_t rank, int64_t chunk)
{
    return (int)(chunk * p->pp + rank);
}

/* Write v in decimal at p; returns the end. */
static char *put_i64(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do
        tmp[n++] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* The region of a pass, "forward mb M chunk C" (or "backward ..."), written
 * without printf: it is formatted once per pass of every estimate. */
static void pass_region(struct rank *r, int backward, int64_t mb, int64_t chunk)
{
    static const char fwd[] = "forward mb ", bwd[] = "backward mb ", ch[] = " chunk ";
    char *p = r->region;
    _Static_assert(sizeof r->region >= sizeof bwd + sizeof ch + 2 * 21, "the region holds any pass");
    memcpy(p, backward ? bwd : fwd, backward ? sizeof bwd - 1 : sizeof fwd - 1);
    p = put_i64(p + (backward ? sizeof bwd - 1 : sizeof fwd - 1), mb);
    memcpy(p, ch, sizeof ch - 1);
    *put_i64(p + sizeof ch - 1, chunk) = '\0';
}

/* The operations of one pass (forward or backward) of virtual stage st on
 * rank r, in the order they run, with ZeRO-3's collectives and the last
 * micro-batch's gradient buckets between them. */
static void pass_ops(struct synth *y, struct rank *r, const struct est_stage_layers *st, int64_t mb, int backward,
                     int last_mb, struct bucket_state *bucket)
{
    const struct est_spec *s = y->s;
    double emb, head;
    synth_edge_params(s, st, &emb, &head);
    if (!backward) {
        if (st->embedding) {
            synth_z3_gather(y, r, emb, 0);
            synth_emit_ops(y, r, &y->embed_fwd, 0);
        }
        for (int i = 0; i < st->layers && !y->failed; i++) {
            int64_t layer = st->first_layer + i;
            int is_moe = spec_model_layer_is_moe(&s->model, layer);
            double dense, experts;
            if (y->names && y->detail != EST_DETAIL_STAGE)
                snprintf(r->region, sizeof r->region, "layer %lld forward mb %lld", (long long)layer, (long long)mb);
            synth_kind_rank_params(y, layer, is_moe, &dense, &experts);
            synth_z3_gather(y, r, dense, experts);
            synth_emit_ops(y, r, &y->fwd[is_moe], 0);
            synth_layer_boundary(y, r);
        }
        if (st->loss) {
            if (y->names && y->detail != EST_DETAIL_STAGE)
                snprintf(r->region, sizeof r->region, "output layer forward mb %lld", (long long)mb);
            synth_z3_gather(y, r, head, 0);
            synth_emit_ops(y, r, &y->head_fwd, 0);
        }
        return;
    }
    if (st->loss) {
        synth_z3_gather(y, r, head, 0);
        synth_emit_ops(y, r, &y->head_bwd, 1);
        synth_z3_grads_done(y, r, head, 0);
    }
    for (int i = st->layers - 1; i >= 0 && !y->failed; i--) {
        int64_t layer = st->first_layer + i;
        int is_moe = spec_model_layer_is_moe(&s->model, layer);
        double dense, experts;
        if (y->names && y->detail != EST_DETAIL_STAGE)
            snprintf(r->region, sizeof r->region, "layer %lld backward mb %lld", (long long)layer, (long long)mb);
        synth_kind_rank_params(y, layer, is_moe, &dense, &experts);
        synth_z3_gather(y, r, dense, experts);
        if (spec_layer_recomputed(s, i))
            synth_emit_ops(y, r, &y->recompute[is_moe], 0);
        synth_emit_ops(y, r, &y->bwd[is_moe], 1);
        synth_layer_boundary(y, r);
        synth_z3_grads_done(y, r, dense, experts);
        if (last_mb && !synth_zero3(y)) {
            bucket->dense += dense;
            bucket->experts += experts;
            if (s->options.overlap_grad_reduce && bucket->dense + bucket->experts >= synth_grad_bucket_params(s))
                synth_bucket_reduce(y, r, bucket);
        }
    }
    if (st->embedding) {
        if (y->names && y->detail != EST_DETAIL_STAGE)
            snprintf(r->region, sizeof r->region, "embedding backward mb %lld", (long long)mb);
        synth_z3_gather(y, r, emb, 0);
        synth_emit_ops(y, r, &y->embed_bwd, 1);
        synth_z3_grads_done(y, r, emb, 0);
    }
    synth_z3_reduce(y, r);
    if (last_mb && !synth_zero3(y)) {
        double e = (double)(s->model.vocab * s->model.hidden) / (double)s->parallel.tp;
        if (st->embedding || (st->loss && !s->model.tied_embeddings))
            bucket->dense += e * ((st->embedding ? 1 : 0) + (st->loss && !s->model.tied_embeddings ? 1 : 0));
        if (s->options.overlap_grad_reduce)
            synth_bucket_reduce(y, r, bucket);
    }
}

/* Virtual stage v's pass as one run: pass_ops on a rank of its own, where
 * (at stage detail, every operation list summed, no ZeRO-3 and not the
 * last micro-batch's backward) it only sums the lists in their order. */
static const struct run_sum *pass_sum(struct synth *y, struct pipeline *p, int v, int backward)
{
    struct pass_sum *ps = &p->pass[v];
    if (!ps->known[backward]) {
        struct rank scratch;
        memset(&scratch, 0, sizeof scratch);
        pass_ops(y, &scratch, &p->vstages[v], 0, backward, 0, NULL);
        ps->sum[backward] = scratch.run.sum;
        ps->known[backward] = 1;
    }
    return &ps->sum[backward];
}

/* Run forward or backward of one micro-batch on one model chunk. */
static void run_pass(struct synth *y, struct pipeline *p, struct rank *r, int64_t chunk, int64_t mb,
                     int backward, int last_mb, struct bucket_state *bucket)
{
    int v = virtual_stage(p, r->id, chunk);
    int sync_recv = backward ? v < p->pp * p->vpp - 1 : v > 0;
    if (!y->failed && sc_cancelled())
        y->failed = sc_error_set(y->err, SC_ECANCELED, "the synthesis was called off");
    if (y->failed)
        return;
    if (y->sim) {
        synth_z3_sim_pass(y, &p->vstages[v], backward);
        return;
    }
    /* the pass starts on what the pipeline received (a task of its own).
     * The batch of transfers before it synchronised on the receive, and
     * the pass is dispatched after, so the graph synth_estimate replays (no
     * `calls`) needs no edge for it; synth_build's shows the wait a trace
     * has */
    if (sync_recv && y->calls)
        synth_wait_on(y, r, ST_COMPUTE, r->last[ST_RECV]);
    else if (sync_recv)
        synth_anchor(y, r, ST_COMPUTE);
    if (y->names)
        pass_region(r, backward, mb, chunk);
    if (p->pass && !synth_zero3(y) && !(backward && last_mb)) {
        const struct run_sum *sum = pass_sum(y, p, v, backward);
        if (sum->n)
            synth_run_add(y, r, ST_COMPUTE, sum);
        return;
    }
    pass_ops(y, r, &p->vstages[v], mb, backward, last_mb, bucket);
}

static void p2p_remember(struct synth *y, struct pipeline *p, struct rank *r, int kind, uint32_t task)
{
    struct p2p *l = p2p_list(p, r->id, kind);
    if (!y->failed && sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
        y->failed = sc_error_set(y->err, SC_ENOMEM, "out of memory synthesising the step");
    if (!y->failed)
        l->v[l->n++] = task;
}

/* The transfers that pair with rank's of `kind`, the k-th with the k-th:
 * forward sends go to the next rank's forward receives, backward sends to
 * the rank before's backward receives (and receives the other way); the
 * ring's ends meet. */
static struct p2p *p2p_partners(struct pipeline *p, int64_t rank, int kind)
{
    static const int partner_kind[P2P_KINDS] = {P2P_FWD_RECV, P2P_FWD_SEND, P2P_BWD_RECV, P2P_BWD_SEND};
    int64_t partner = rank + (kind == P2P_FWD_SEND || kind == P2P_BWD_RECV ? 1 : -1);
    partner = partner < 0 ? p->pp - 1 : partner == p->pp ? 0 : partner;
    return p2p_list(p, partner, partner_kind[kind]);
}

/* The task of the transfer that pairs with rank r's next one of `kind`,
 * when its partner has been emitted; MODEL_NONE when not yet. */
static uint32_t p2p_partner(struct pipeline *p, const struct rank *r, int kind)
{
    const struct p2p *mine = p2p_list(p, r->id, kind), *theirs = p2p_partners(p, r->id, kind);
    return mine->n < theirs->n ? theirs->v[mine->n] : MODEL_NONE;
}

/* An edge into the transfer `to`: into its other side when `peer`. */
static void side_edge(struct synth *y, int peer, uint32_t from, uint32_t to, enum model_edge_kind kind,
                      enum model_edge_type type, int64_t lat)
{
    if (!peer) {
        synth_add_edge(y, from, to, kind, type, lat);
    } else if (!y->failed && from != MODEL_NONE &&
               model_gb_add_peer_edge(y->gb, from, to, kind, type, lat)) {
        y->failed = y->err->code;
    }
}

/* A batch of pipeline transfers (kinds < 0 are skipped) as Megatron posts
 * them: one host call issues them all (host_coll_us each) and then
 * synchronises the device, so it ends when they and all earlier work have.
 * A send carries what the compute stream has produced so far; the
 * transfers are paired across ranks by pair_transfers (collective groups
 * of two), or, in the graph synth_estimate replays, joined here as one task
 * on both sides. */
static void p2p_batch(struct synth *y, struct pipeline *p, struct rank *r, const int *kinds, int n)
{
    int posted = 0;
    for (int i = 0; i < n; i++)
        posted += kinds[i] >= 0;
    if (!posted || y->sim) /* the bound's timing counts no transfer */
        return;
    uint32_t produced = synth_anchor(y, r, ST_COMPUTE);
    synth_flush(y, r);
    int64_t issue = synth_ns(y->c->host_coll_us), at;
    uint32_t call = synth_host_call(y, r, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_CALL,
                                                              .sub = MODEL_CALL_SYNC, .dur = issue * posted,
                                                              .name = "pipeline transfers and synchronize"},
                              1, &at);
    int k = 0, sent = 0, in_batch[ST_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        if (kinds[i] < 0)
            continue;
        int send = kinds[i] == P2P_FWD_SEND || kinds[i] == P2P_BWD_SEND;
        int stream = send ? ST_SEND : ST_RECV;
        /* without `calls` (the graph synth_estimate replays) a transfer is
         * one task on both sides (model_gb_pair): the side emitted second
         * joins the first one's task */
        uint32_t task = y->calls ? MODEL_NONE : p2p_partner(p, r, kinds[i]);
        int joined = task != MODEL_NONE;
        if (joined) {
            if (!y->failed && model_gb_pair(y->gb, task, r->st[stream]))
                y->failed = y->err->code;
        } else {
            task = synth_add_task(y, &(struct model_task_spec){.res = r->st[stream], .cls = MODEL_TASK_COMM,
                                                         .sub = MODEL_COLL_SENDRECV, .dur = p->p2p_dur,
                                                         .name = send ? "pipeline send" : "pipeline receive",
                                                         .tag = r->region});
        }
        side_edge(y, joined, call, task, MODEL_EDGE_LAUNCH, MODEL_SS, at + issue * ++k);
        /* the first send waits for what it carries; a second one follows
         * it on the stream, so it does too */
        if (send && !sent++)
            side_edge(y, joined, produced, task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
        for (int w = 0; w < r->n_waits[stream]; w++)
            side_edge(y, joined, r->waits[stream][w], task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
        r->n_waits[stream] = 0;
        /* the stream runs its transfers in order: one on another rank's
         * stream is ordered here by an edge. A transfer of an earlier batch
         * needs none: that batch's call waited for it, and this one's
         * launch comes after */
        if (in_batch[stream] && (joined || r->last_paired[stream]))
            side_edge(y, joined, r->last[stream], task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
        in_batch[stream] = 1;
        r->last[stream] = task;
        r->last_paired[stream] = (uint8_t)joined;
        p2p_remember(y, p, r, kinds[i], task);
    }
    /* a send ends after the compute it carries: waiting for the send, the
     * call has waited for that compute */
    if (sent)
        r->synced[ST_COMPUTE] = produced;
    synth_sync_streams(y, r, call);
}

/* Megatron's 1F1B schedule (pipeline_parallel/schedules.py,
 * forward_backward_pipelining_without_interleaving). */
static void schedule_1f1b(struct synth *y, struct pipeline *p, struct rank *r, struct bucket_state *b)
{
    int64_t pp = p->pp, m = p->m, rank = r->id;
    int first = rank == 0, last = rank == pp - 1;
    int64_t warmup = pp - rank - 1 < m ? pp - rank - 1 : m, steady = m - warmup;
    int recv_f = first ? -1 : P2P_FWD_RECV, send_f = last ? -1 : P2P_FWD_SEND;
    int recv_b = last ? -1 : P2P_BWD_RECV, send_b = first ? -1 : P2P_BWD_SEND;
    int64_t fwd = 0, bwd = 0;
    for (int64_t i = 0; i < warmup; i++) {
        p2p_batch(y, p, r, (int[]){recv_f}, 1);
        run_pass(y, p, r, 0, fwd++, 0, 0, b);
        p2p_batch(y, p, r, (int[]){send_f}, 1);
    }
    if (steady > 0)
        p2p_batch(y, p, r, (int[]){recv_f}, 1);
    for (int64_t i = 0; i < steady; i++) {
        int last_iter = i == steady - 1;
        run_pass(y, p, r, 0, fwd++, 0, 0, b);
        p2p_batch(y, p, r, (int[]){send_f, recv_b}, 2);
        run_pass(y, p, r, 0, bwd, 1, bwd == m - 1, b);
        bwd++;
        if (last_iter)
            p2p_batch(y, p, r, (int[]){send_b}, 1);
        else
            p2p_batch(y, p, r, (int[]){send_b, recv_f}, 2);
    }
    for (int64_t i = 0; i < warmup; i++) {
        p2p_batch(y, p, r, (int[]){recv_b}, 1);
        run_pass(y, p, r, 0, bwd, 1, bwd == m - 1, b);
        bwd++;
        p2p_batch(y, p, r, (int[]){send_b}, 1);
    }
}

/* Megatron's interleaved schedule (forward_backward_pipelining_with_
 * interleaving), without p2p overlap: virtual micro-batch k runs chunk
 * (k / pp) % vpp forward, chunk vpp - 1 - (k / pp) % vpp backward. */
static int64_t chunk_of(const struct pipeline *p, int64_t k, int forward)
{
    int64_t c = (k / p->pp) % p->vpp;
    return forward ? c : p->vpp - 1 - c;
}

static int64_t mb_of(const struct pipeline *p, int64_t k)
{
    return (k / (p->pp * p->vpp)) * p->pp + k % p->pp;
}

static void schedule_interleaved(struct synth *y, struct pipeline *p, struct rank *r,
                                 struct bucket_state *b)
{
    int64_t pp = p->pp, vpp = p->vpp, total = p->m * vpp, rank = r->id;
    int first = rank == 0, last = rank == pp - 1;
    int64_t warmup = (pp - rank - 1) * 2 + (vpp - 1) * pp;
    if (warmup > total)
        warmup = total;
    int64_t steady = total - warmup;
    /* the stage that would receive or send is virtual: rank 0 chunk 0 has
     * no input, the last rank's last chunk no output */
#define NEEDS_RECV_F(k) (!(first && chunk_of(p, (k), 1) == 0))
#define HAS_SEND_F(k) (!(last && chunk_of(p, (k), 1) == vpp - 1))
#define NEEDS_RECV_B(k) (!(last && chunk_of(p, (k), 0) == vpp - 1))
#define HAS_SEND_B(k) (!(first && chunk_of(p, (k), 0) == 0))
    p2p_batch(y, p, r, (int[]){NEEDS_RECV_F(0) ? P2P_FWD_RECV : -1}, 1);
    for (int64_t k = 0; k < warmup; k++) {
        int64_t c = chunk_of(p, k, 1);
        run_pass(y, p, r, c, mb_of(p, k), 0, 0, b);
        int recv_f = k + 1 < total && NEEDS_RECV_F(k + 1) ? P2P_FWD_RECV : -1;
        int send_f = HAS_SEND_F(k) ? P2P_FWD_SEND : -1;
        int recv_b = k == warmup - 1 && steady > 0 && NEEDS_RECV_B(0) ? P2P_BWD_RECV : -1;
        p2p_batch(y, p, r, (int[]){send_f, recv_f, recv_b}, 3);
    }
    for (int64_t k = 0; k < steady; k++) {
        int64_t kf = k + warmup, kb = k;
        run_pass(y, p, r, chunk_of(p, kf, 1), mb_of(p, kf), 0, 0, b);
        int64_t cb = chunk_of(p, kb, 0), mbb = mb_of(p, kb);
        run_pass(y, p, r, cb, mbb, 1, mbb == p->m - 1, b);
        int send_f = HAS_SEND_F(kf) ? P2P_FWD_SEND : -1;
        int send_b = HAS_SEND_B(kb) ? P2P_BWD_SEND : -1;
        int recv_f = kf + 1 < total && NEEDS_RECV_F(kf + 1) ? P2P_FWD_RECV : -1;
        int recv_b = kb + 1 < total && NEEDS_RECV_B(kb + 1) ? P2P_BWD_RECV : -1;
        p2p_batch(y, p, r, (int[]){send_f, send_b, recv_f, recv_b}, 4);
    }
    if (steady == 0)
        p2p_batch(y, p, r, (int[]){NEEDS_RECV_B(0) ? P2P_BWD_RECV : -1}, 1);
    for (int64_t kb = steady; kb < total; kb++) {
        int64_t cb = chunk_of(p, kb, 0), mbb = mb_of(p, kb);
        run_pass(y, p, r, cb, mbb, 1, mbb == p->m - 1, b);
        int send_b = HAS_SEND_B(kb) ? P2P_BWD_SEND : -1;
        int recv_b = kb + 1 < total && NEEDS_RECV_B(kb + 1) ? P2P_BWD_RECV : -1;
        p2p_batch(y, p, r, (int[]){send_b, recv_b}, 2);
    }
#undef NEEDS_RECV_F
#undef HAS_SEND_F
#undef NEEDS_RECV_B
#undef HAS_SEND_B
}

/* Parameters of pipeline rank r (for the optimizer and parameter gather). */
static double rank_params(struct synth *y, const struct pipeline *p, int64_t rank)
{
    const struct est_spec *s = y->s;
    double total = 0;
    for (int64_t c = 0; c < p->vpp; c++) {
        const struct est_stage_layers *st = &p->vstages[c * p->pp + rank];
        for (int i = 0; i < st->layers; i++) {
            int64_t layer = st->first_layer + i;
            double dense, experts;
            synth_kind_rank_params(y, layer, spec_model_layer_is_moe(&s->model, layer), &dense, &experts);
            total += dense + experts;
        }
        double emb = (double)(s->model.vocab * s->model.hidden) / (double)s->parallel.tp;
        total += (st->embedding ? emb : 0) + (st->loss && !s->model.tied_embeddings ? emb : 0);
    }
    return total;
}

/* The distributed optimizer's parameter all-gather of the previous step
 * (ZeRO stages 1 and 2; stage 3 gathers per layer), overlapped with this
 * step's forward, that rank's step begins with: 1 and *o when there is
 * one. */
static int param_gather(struct synth *y, const struct pipeline *p, int64_t rank, struct op *o)
{
    const struct est_spec *s = y->s;
    if (s->options.zero_stage < 1 || synth_zero3(y) || !s->options.overlap_param_gather || y->sh.dp_group.ranks <= 1)
        return 0;
    double bytes = rank_params(y, p, rank) * y->sh.B;
    *o = (struct op){"parameter all-gather", MODEL_TASK_COMM, MODEL_COLL_ALLGATHER, OP_PLAIN, 1,
                     synth_coll_ns(y, MODEL_COLL_ALLGATHER, &y->sh.dp_group, bytes), sc_sat_trunc(bytes),
                     (uint32_t)y->sh.dp_group.ranks};
    return 1;
}

static void step_begin(struct synth *y, struct pipeline *p, struct rank *r, uint32_t *begin)
{
    *begin = synth_add_task(y, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_MARKER, .name = "step"});
    struct op o;
    if (param_gather(y, p, r->id, &o)) {
        snprintf(r->region, sizeof r->region, "parameter gather");
        synth_emit(y, r, ST_DP, &o);
        synth_flush(y, r);
        /* the first forward waits for it (layer-wise prefetch is finer) */
        synth_wait_on(y, r, ST_COMPUTE, r->last[ST_DP]);
    }
}

/* The gradient norm's and the optimizer's kernels of a rank holding
 * `params`, ns: over its shard of the gradients and the optimizer's state
 * (the distributed optimizer's dp x cp ranks), at the pace step_end_scale
 * gives. */
static void step_end_ns(const struct synth *y, double params, int64_t *norm, int64_t *adam)
{
    const struct est_spec *s = y->s;
    double shards = s->options.zero_stage >= 1 ? (double)(s->parallel.dp * s->parallel.cp) : 1;
    double k = y->step_end_scale > 0 ? y->step_end_scale : 1.0;
    struct est_state_bytes sb; /* the gradients and optimizer state the step reads */
    spec_state_bytes(&s->options, &sb);
    *norm = synth_ns(k * cost_kernel_memory_us(&y->c->kernel, y->hw, params / shards * sb.gradients));
    *adam = synth_ns(k * cost_kernel_memory_us(&y->c->kernel, y->hw, params / shards * spec_optimizer_step_bytes(&sb)));
}

/* The gradient norm's and the optimizer's kernels over p's pipeline
 * ranks, the mean, ns, before any step_end_scale is set: the kernel
 * model's. */
static double mean_step_end_ns(struct synth *y, const struct pipeline *p)
{
    double sum = 0;
    assert(!(y->step_end_scale > 0));
    for (int64_t rank = 0; rank < p->pp; rank++) {
        int64_t norm, adam;
        step_end_ns(y, rank_params(y, p, rank), &norm, &adam);
        sum += (double)norm + (double)adam;
    }
    return p->pp > 0 ? sum / (double)p->pp : 0;
}

static void step_end(struct synth *y, struct pipeline *p, struct rank *r, struct bucket_state *b,
                     uint32_t begin)
{
    const struct est_spec *s = y->s;
    double params = rank_params(y, p, r->id);
    if (!synth_zero3(y) && (!s->options.overlap_grad_reduce || b->dense + b->experts > 0)) {
        snprintf(r->region, sizeof r->region, "gradient reduction");
        if (!s->options.overlap_grad_reduce) {
            /* every bucket after the backward */
            b->dense = params;
            b->experts = 0;
        }
        synth_bucket_reduce(y, r, b);
    }
    snprintf(r->region, sizeof r->region, "optimizer");
    synth_wait_on(y, r, ST_COMPUTE, r->last[ST_DP]);
    int64_t norm_ns, adam_ns;
    step_end_ns(y, params, &norm_ns, &adam_ns);
    struct op norm = {"gradient norm", MODEL_TASK_KERNEL, MODEL_KF_REDUCTION, OP_PLAIN, 1, norm_ns, 0, 0};
    synth_emit(y, r, ST_COMPUTE, &norm);
    synth_flush(y, r); /* the all-reduce below is a group member of its own */
    struct op norm_ar = {"gradient norm all-reduce", MODEL_TASK_COMM, MODEL_COLL_ALLREDUCE, OP_PLAIN, 1,
                         synth_coll_ns(y, MODEL_COLL_ALLREDUCE, &y->sh.mp_group, 4), 4, 0};
    synth_emit(y, r, ST_COMPUTE, &norm_ar);
    synth_flush(y, r);
    p->grad_norm[r->id] = r->last[ST_COMPUTE];
    /* the step's loss and norm are read on the host: the optimizer runs
     * after that synchronisation */
    synth_host_sync(y, r, "gradient norm .item()", &p->grad_norm[r->id], 1);
    struct op adam = {"optimizer step", MODEL_TASK_KERNEL, MODEL_KF_OPTIMIZER, OP_PLAIN, 1, adam_ns, 0, 0};
    synth_emit(y, r, ST_COMPUTE, &adam);
    if (s->options.zero_stage >= 1 && !synth_zero3(y) && !s->options.overlap_param_gather && y->sh.dp_group.ranks > 1) {
        double bytes = params * y->sh.B;
        struct op o = {"parameter all-gather", MODEL_TASK_COMM, MODEL_COLL_ALLGATHER, OP_PLAIN, 1,
                       synth_coll_ns(y, MODEL_COLL_ALLGATHER, &y->sh.dp_group, bytes), sc_sat_trunc(bytes),
                       (uint32_t)y->sh.dp_group.ranks};
        synth_emit(y, r, ST_COMPUTE, &o);
    }
    synth_device_sync(y, r, "end of step synchronize");
    uint32_t end = synth_add_task(y, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_MARKER, .name = "step"});
    if (!y->failed && model_gb_add_step(y->gb, &(struct model_step_spec){.rank = r->id, .begin = begin,
                                                                         .end = end, .name = "step",
                                                                         .measured_ns = -1,
                                                                         .trace_step = MODEL_NONE}))
        y->failed = y->err->code;
}

static int add_rank(struct synth *y, int64_t id, struct rank *r)
{
    memset(r, 0, sizeof *r);
    if (model_gb_add_rank(y->gb, &(struct model_rank_spec){.id = (int)id}, &r->id))
        return y->failed = y->err->code;
    if (model_gb_add_resource(y->gb, &(struct model_res_spec){.rank = r->id, .label = "main thread",
                                                              .pid = id, .tid = 1}, &r->cpu))
        return y->failed = y->err->code;
    r->z3_free = r->call = MODEL_NONE;
    for (int k = 0; k < ST_COUNT; k++) {
        r->last[k] = r->synced[k] = MODEL_NONE;
        if (model_gb_add_resource(y->gb, &(struct model_res_spec){.rank = r->id, .gpu = 1, .comm = k != ST_COMPUTE,
                                                                  .label = stream_labels[k], .pid = id,
                                                                  .tid = 7 + k}, &r->st[k]))
            return y->failed = y->err->code;
    }
    return SC_OK;
}

/* Check that every transfer has its partner, and group the pairs (with
 * `calls`; without, p2p_batch joined them); then the gradient norm's
 * all-reduce across the pipeline. */
static void pair_transfers(struct synth *y, struct pipeline *p)
{
    for (int64_t r = 0; r < p->pp && !y->failed; r++) {
        struct p2p *fs = p2p_list(p, r, P2P_FWD_SEND), *fr = p2p_partners(p, r, P2P_FWD_SEND);
        struct p2p *bs = p2p_list(p, r, P2P_BWD_SEND), *br = p2p_partners(p, r, P2P_BWD_SEND);
        if (fs->n != fr->n || bs->n != br->n) {
            y->failed = sc_error_set(y->err, SC_EINTERNAL,
                                     "pipeline rank %lld: %zu forward sends but %zu receives next, %zu backward sends but %zu receives before",
                                     (long long)r, fs->n, fr->n, bs->n, br->n);
            return;
        }
        if (!y->calls) /* paired as they were emitted (p2p_batch) */
            continue;
        for (size_t i = 0; i < fs->n; i++)
            synth_add_group(y, MODEL_COLL_SENDRECV, p->act_bytes, 2, (uint32_t[]){fs->v[i], fr->v[i]}, 2);
        for (size_t i = 0; i < bs->n; i++)
            synth_add_group(y, MODEL_COLL_SENDRECV, p->act_bytes, 2, (uint32_t[]){bs->v[i], br->v[i]}, 2);
    }
    /* the gradient norm is reduced across every pipeline rank */
    synth_add_group(y, MODEL_COLL_ALLREDUCE, 4, (uint32_t)y->sh.mp_group.ranks, p->grad_norm, (size_t)p->pp);
}

/* About how many tasks and edges the step takes (more rather than fewer:
 * room not used costs address space only). */
static void room(const struct synth *y, const struct pipeline *p, struct est_synth_size *out, int64_t *groups)
{
    int64_t layers = 0, per_layer = 0;
    for (int64_t v = 0; v < p->pp * p->vpp; v++)
        layers = p->vstages[v].layers > layers ? p->vstages[v].layers : layers;
    for (int k = 0; k < 2; k++) {
        int64_t n = (int64_t)(y->fwd[k].n + y->recompute[k].n + y->bwd[k].n);
        per_layer = n > per_layer ? n : per_layer;
    }
    per_layer += 6 * y->s->parallel.cp; /* the context-parallel ring's blocks and exchanges */
    int64_t ops = 4; /* GPU runs of one micro-batch's forward and backward on one virtual stage */
    if (y->detail == EST_DETAIL_LAYER)
        ops += 2 * layers;
    else if (y->detail == EST_DETAIL_KERNEL)
        ops += layers * per_layer +
               (int64_t)(y->embed_fwd.n + y->embed_bwd.n + y->head_fwd.n + y->head_bwd.n);
    if (y->detail != EST_DETAIL_KERNEL && y->sh.cp > 1) /* the ring's blocks and exchanges cut the merged runs */
        ops += layers * 6 * y->s->parallel.cp;
    if (synth_zero3(y)) /* each unit's gathers and reduce-scatter, and the compute runs they cut */
        ops += 8 * (layers + 2);
    /* the spec's limits (EST_MAX_*) keep these far below 2^63 */
    int64_t passes = p->pp * p->vpp * p->m;
    /* at stage detail one pipeline rank's passes merge into the same few
     * runs, however many micro-batches there are (nothing waits on a pass
     * but the next) */
    if (y->detail == EST_DETAIL_STAGE && y->sh.cp <= 1 && p->pp == 1 && !synth_zero3(y))
        passes = 1;
    out->tasks = passes * (2 * ops + 10) + 64 * p->pp;
    out->edges = passes * (3 * ops + 24) + 64 * p->pp;
    out->bytes = (double)out->tasks * EST_SYNTH_BYTES_PER_TASK;
    *groups = passes * (ops / 2 + 4) + 64 * p->pp;
}

/* Room for room()'s tasks and edges, so that the builder's arrays are not
 * grown and copied as the step is emitted. */
static void reserve_room(struct synth *y, const struct pipeline *p)
{
    struct est_synth_size z;
    int64_t groups;
    room(y, p, &z, &groups);
    if (!y->failed && model_gb_reserve(y->gb, (size_t)z.tasks, (size_t)z.edges, (size_t)groups, (size_t)(2 * groups)))
        y->failed = y->err->code;
}

static void synth_release(struct synth *y, struct pipeline *p)
{
    for (int k = 0; k < 2; k++) {
        free(y->fwd[k].v);
        free(y->bwd[k].v);
        free(y->recompute[k].v);
    }
    free(y->embed_fwd.v);
    free(y->embed_bwd.v);
    free(y->head_fwd.v);
    free(y->head_bwd.v);
    if (p->p2p)
        for (int64_t i = 0; i < p->pp * P2P_KINDS; i++)
            free(p->p2p[i].v);
    free(p->p2p);
    free(p->vstages);
    free(p->pass);
    free(p->grad_norm);
}

/* The operations of every layer kind, the embedding and the loss, with
 * their costs (what both synth_build and synth_bound start from). */
static void make_ops(struct synth *y)
{
    synth_layer_ops(y, 0);
    if (y->s->model.moe.experts > 0)
        synth_layer_ops(y, 1);
    synth_embedding_and_loss_ops(y);
    synth_cp_pieces(y);
    for (int k = 0; k < 2; k++) {
        synth_summarise(y, &y->fwd[k]);
        synth_summarise(y, &y->bwd[k]);
        synth_summarise(y, &y->recompute[k]);
    }
    synth_summarise(y, &y->embed_fwd);
    synth_summarise(y, &y->embed_bwd);
    synth_summarise(y, &y->head_fwd);
    synth_summarise(y, &y->head_bwd);
}

/* The compute stream's time for list l (synth_emit_ops puts all of it there: a
 * context-parallel attention is cp blocks). */
static int64_t list_compute_ns(const struct synth *y, const struct oplist *l, int backward)
{
    int64_t t = 0;
    for (size_t i = 0; i < l->n; i++)
        t = sc_sat_add(t, l->v[i].special == OP_CP_ATTENTION ? sc_sat_mul(y->s->parallel.cp, y->cp_block[backward].dur)
                                                             : l->v[i].dur);
    return t;
}

int synth_pass_costs(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                         struct est_pass_costs *out, struct sc_error *err)
{
    struct est_spec chosen; /* recompute "auto" resolved */
    int rc = spec_memory_resolve_recompute(s, hw->hbm_gb, &chosen, err);
    if (rc)
        return rc;
    struct synth y = {.s = &chosen, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {0};
    synth_shape_init(&y);
    make_ops(&y);
    for (int k = 0; k < 2; k++) {
        out->layer_f[k] = list_compute_ns(&y, &y.fwd[k], 0);
        out->layer_r[k] = list_compute_ns(&y, &y.recompute[k], 0);
        out->layer_b[k] = sc_sat_add(out->layer_r[k], list_compute_ns(&y, &y.bwd[k], 1));
    }
    out->embed_f = list_compute_ns(&y, &y.embed_fwd, 0);
    out->embed_b = list_compute_ns(&y, &y.embed_bwd, 1);
    out->head_f = list_compute_ns(&y, &y.head_fwd, 0);
    out->head_b = list_compute_ns(&y, &y.head_bwd, 1);
    out->step_end = 0;
    synth_release(&y, &p);
    return y.failed;
}

int synth_step_end_ns(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      double *ns, struct sc_error *err)
{
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp};
    int rc;
    *ns = 0;
    synth_shape_init(&y);
    if (!(p.vstages = calloc((size_t)(p.pp * p.vpp), sizeof *p.vstages)))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    else if ((rc = spec_place_layers((int)s->model.layers, (int)p.pp, (int)p.vpp, p.vstages, err)) == SC_OK)
        *ns = mean_step_end_ns(&y, &p);
    synth_release(&y, &p);
    return rc;
}

/* One micro-batch's forward (*f) and backward with its recomputation (*b)
 * on virtual stage st. */
static void pass_ns(const struct est_spec *s, const struct est_pass_costs *pc, const struct est_stage_layers *st,
                    int64_t *f, int64_t *b)
{
    *f = st->embedding ? pc->embed_f : 0;
    *b = st->embedding ? pc->embed_b : 0;
    if (st->loss) {
        *f = sc_sat_add(*f, pc->head_f);
        *b = sc_sat_add(*b, pc->head_b);
    }
    for (int i = 0; i < st->layers; i++) {
        int moe = spec_model_layer_is_moe(&s->model, st->first_layer + i);
        *f = sc_sat_add(*f, pc->layer_f[moe]);
        *b = sc_sat_add(*b, synth_layer_b_ns(s, pc, moe, i));
    }
}

/* ZeRO-3's data-parallel stream of one unit (synth_z3_gather): its parameters
 * gathered twice and its gradients reduce-scattered once, per micro-batch,
 * ns. */
static int64_t z3_unit_ns(struct synth *y, double dense, double experts)
{
    double sizes[2] = {dense, experts};
    const struct coll_group *groups[2] = {&y->sh.dp_group, &y->sh.edp_group};
    int64_t t = 0;
    for (int k = 0; k < 2; k++)
        if (sizes[k] > 0)
            t = sc_sat_add(t, sc_sat_add(sc_sat_mul(2, synth_coll_ns(y, MODEL_COLL_ALLGATHER, groups[k], sizes[k] * y->sh.B)),
                                         synth_coll_ns(y, MODEL_COLL_REDUCESCATTER, groups[k],
                                                 sizes[k] * synth_grad_bytes(y->s))));
    return t;
}

/* What ZeRO-3's gathers and reduce-scatters keep pipeline rank `rank`'s
 * data-parallel stream busy for, one after another, ns: the step lasts at
 * least that too. 0 below stage 3. */
static int64_t z3_stream_ns(struct synth *y, const struct pipeline *p, int64_t rank, int64_t m)
{
    const struct est_spec *s = y->s;
    int64_t kind_ns[2] = {-1, -1}, t = 0;
    if (!synth_zero3(y))
        return 0;
    for (int64_t chunk = 0; chunk < p->vpp; chunk++) {
        const struct est_stage_layers *st = &p->vstages[virtual_stage(p, rank, chunk)];
        double emb, head;
        synth_edge_params(s, st, &emb, &head);
        t = sc_sat_add(t, sc_sat_add(z3_unit_ns(y, emb, 0), z3_unit_ns(y, head, 0)));
        for (int i = 0; i < st->layers; i++) {
            int64_t layer = st->first_layer + i;
            int moe = spec_model_layer_is_moe(&s->model, layer);
            if (kind_ns[moe] < 0) {
                double dense, experts;
                synth_layer_rank_params(s, layer, &dense, &experts);
                kind_ns[moe] = z3_unit_ns(y, dense, experts);
            }
            t = sc_sat_add(t, kind_ns[moe]);
        }
    }
    return sc_sat_mul(m, t);
}

/* A bound's virtual stages: p->vstages placed (malloc'd) for p's pp and vpp. */
static int bound_stages(const struct est_spec *s, struct pipeline *p, struct sc_error *err)
{
    if (!(p->vstages = calloc((size_t)(p->pp * p->vpp), sizeof *p->vstages)))
        return sc_error_set(err, SC_ENOMEM, "out of memory bounding the step");
    if (spec_place_layers((int)s->model.layers, (int)p->pp, (int)p->vpp, p->vstages, err)) {
        free(p->vstages);
        p->vstages = NULL;
        return err->code;
    }
    return SC_OK;
}

/* How many of pipeline rank `rank`'s sends come before one of its passes
 * in the schedule of schedule_1f1b and schedule_interleaved (m
 * micro-batches). A send carries the compute before it, the batch's call
 * waits for it, and the next pass is dispatched after that call; a
 * batch's sends follow one another on the send stream (p2p_batch), so the
 * compute stream is idle for each of them. Every forward pass sends but
 * the last rank's last chunk's; every backward pass but the first rank's
 * chunk 0's; the final backward's send comes after the last pass. */
static int64_t send_gaps(int64_t pp, int64_t vpp, int64_t m, int64_t rank)
{
    int first = rank == 0, last = rank == pp - 1;
    if (pp < 2 || m < 1)
        return 0;
    /* the interleaved schedule runs m passes of each chunk (m is a
     * multiple of pp), the last backward on chunk 0; 1F1B is vpp 1 */
    int64_t total = m * vpp;
    return (total - (last ? m : 0)) + (total - (first ? m : 1));
}

int synth_bound_of(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       const struct est_pass_costs *pc, double *ms, struct sc_error *err)
{
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp};
    int64_t m = spec_micro_batches(s), best = 0, head = 0, tail = 0, p2p = 0;
    int rc;
    *ms = 0;
    synth_shape_init(&y);
    if ((rc = bound_stages(s, &p, err)))
        return rc;
    if (p.pp > 1)
        p2p = p2p_ns(&y);
    /* head: when rank's first forward can start (its parameter gather
     * done, and chunk 0's forward of the first micro-batch on the ranks
     * before); tail: chunk 0's backward on the ranks before */
    for (int64_t rank = 0; rank < p.pp; rank++) {
        int64_t busy = 0, f, b, f0 = 0, b0 = 0;
        struct op gather;
        if (param_gather(&y, &p, rank, &gather) && gather.dur > head)
            head = gather.dur;
        for (int64_t chunk = 0; chunk < p.vpp; chunk++) {
            pass_ns(s, pc, &p.vstages[virtual_stage(&p, rank, chunk)], &f, &b);
            busy = sc_sat_add(busy, sc_sat_mul(m, sc_sat_add(f, b)));
            if (chunk == 0) {
                f0 = f;
                b0 = b;
            }
        }
        busy = sc_sat_add(busy, sc_sat_mul(send_gaps(p.pp, p.vpp, m, rank), p2p));
        best = max_i64(best, sc_sat_add(sc_sat_add(head, busy), tail));
        int64_t stream = z3_stream_ns(&y, &p, rank, m);
        best = stream > best ? stream : best;
        /* chunk 0's passes, which the later ranks wait for, each handed
         * on by a transfer */
        head = sc_sat_add(head, sc_sat_add(f0, p2p));
        tail = sc_sat_add(tail, sc_sat_add(b0, p2p));
    }
    free(p.vstages);
    *ms = (double)best / 1e6;
    return y.failed;
}

int synth_bound(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                    double *ms, struct sc_error *err)
{
    struct est_pass_costs pc;
    struct est_spec chosen; /* recompute "auto" resolved: which layers recompute */
    int rc = spec_memory_resolve_recompute(s, hw->hbm_gb, &chosen, err);
    *ms = 0;
    if (!rc)
        rc = synth_pass_costs(&chosen, hw, c, &pc, err);
    return rc ? rc : synth_bound_of(&chosen, hw, c, &pc, ms, err);
}

int synth_bound_z3(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       const struct est_pass_costs *pc, double enough_ms, double *ms, struct sc_error *err)
{
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = EST_DETAIL_STAGE, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp, .m = spec_micro_batches(s)};
    int64_t best = 0;
    int rc;
    *ms = 0;
    synth_shape_init(&y);
    if (!synth_zero3(&y))
        return SC_OK;
    if ((rc = bound_stages(s, &p, err)))
        return rc;
    for (int64_t rank = 0; rank < p.pp && (double)best / 1e6 < enough_ms; rank++) {
        struct z3_sim z = {.pc = pc};
        struct rank r;
        memset(&r, 0, sizeof r);
        r.id = (uint16_t)rank;
        y.sim = &z;
        if (p.vpp > 1)
            schedule_interleaved(&y, &p, &r, NULL);
        else
            schedule_1f1b(&y, &p, &r, NULL);
        best = max_i64(best, max_i64(z.compute, z.stream));
    }
    free(p.vstages);
    *ms = (double)best / 1e6;
    return y.failed;
}

/* The kernels of list l (and of l2, may be NULL) scaled so that they take
 * `ns` in all; the other operations (collectives, a context-parallel ring)
 * are kept. */
static void scale_kernels(struct synth *y, int64_t ns, struct oplist *l, struct oplist *l2)
{
    struct oplist *ls[2] = {l, l2};
    double k = 0;
    if (ns <= 0)
        return;
    for (int j = 0; j < 2; j++)
        for (size_t i = 0; ls[j] && i < ls[j]->n; i++)
            if (ls[j]->v[i].cls == MODEL_TASK_KERNEL && ls[j]->v[i].special == OP_PLAIN)
                k += (double)ls[j]->v[i].dur;
    if (k <= 0)
        return;
    for (int j = 0; j < 2; j++) {
        for (size_t i = 0; ls[j] && i < ls[j]->n; i++)
            if (ls[j]->v[i].cls == MODEL_TASK_KERNEL && ls[j]->v[i].special == OP_PLAIN)
                ls[j]->v[i].dur = sc_sat_round((double)ls[j]->v[i].dur * (double)ns / k);
        if (ls[j])
            synth_summarise(y, ls[j]);
    }
}

/* Each pass's kernels taking what `m` gives. */
static void apply_measured(struct synth *y, const struct est_pass_costs *m)
{
    for (int k = 0; k < 2; k++) {
        scale_kernels(y, m->layer_f[k], &y->fwd[k], NULL);
        scale_kernels(y, m->layer_b[k], &y->recompute[k], &y->bwd[k]);
    }
    scale_kernels(y, m->embed_f, &y->embed_fwd, NULL);
    scale_kernels(y, m->embed_b, &y->embed_bwd, NULL);
    scale_kernels(y, m->head_f, &y->head_fwd, NULL);
    scale_kernels(y, m->head_b, &y->head_bwd, NULL);
}

/* The step of spec s, its passes' kernels scaled to `measured` (NULL: as
 * costed), with a host task per call or not, with the tasks' names and
 * tags or without them. */
static int synth_step(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      enum est_detail detail, const struct est_pass_costs *measured, int calls, int names,
                      struct est_synth_size *size_only, struct model_graph **out, struct sc_error *err)
{
    struct est_spec chosen; /* recompute "auto" resolved */
    int rc;
    if (out)
        *out = NULL;
    if ((rc = spec_memory_resolve_recompute(s, hw->hbm_gb, &chosen, err)))
        return rc;
    s = &chosen;
    struct synth y = {.s = s, .hw = hw, .c = c, .detail = detail, .calls = calls, .names = names, .err = err};
    struct pipeline p = {.pp = s->parallel.pp, .vpp = s->parallel.vpp, .m = spec_micro_batches(s)};
    synth_shape_init(&y);
    p.vstages = calloc((size_t)(p.pp * p.vpp), sizeof *p.vstages);
    p.p2p = calloc((size_t)(p.pp * P2P_KINDS), sizeof *p.p2p);
    p.grad_norm = calloc((size_t)p.pp, sizeof *p.grad_norm);
    /* a pass summed once (pass_sum) where pass_ops only sums: at stage
     * detail, and without the context-parallel ring's blocks and exchanges */
    int summed = detail == EST_DETAIL_STAGE && y.sh.cp <= 1;
    if (summed)
        p.pass = calloc((size_t)(p.pp * p.vpp), sizeof *p.pass);
    y.gb = size_only ? NULL : model_gb_new(err);
    if (!p.vstages || !p.p2p || !p.grad_norm || (summed && !p.pass) || (!size_only && !y.gb)) {
        synth_release(&y, &p);
        model_gb_free(y.gb);
        return sc_error_set(err, SC_ENOMEM, "out of memory synthesising the step");
    }
    if (spec_place_layers((int)s->model.layers, (int)p.pp, (int)p.vpp, p.vstages, err)) {
        synth_release(&y, &p);
        model_gb_free(y.gb);
        return err->code;
    }
    p.act_bytes = act_bytes(&y);
    p.p2p_dur = p2p_ns(&y);
    if (size_only) {
        int64_t groups;
        make_ops(&y);
        room(&y, &p, size_only, &groups);
        synth_release(&y, &p);
        return y.failed;
    }
    if (!names)
        model_gb_skip_names(y.gb);
    make_ops(&y);
    if (measured) {
        apply_measured(&y, measured);
        double model = measured->step_end > 0 ? mean_step_end_ns(&y, &p) : 0;
        if (model > 0) /* the traced job's pace for the step's end */
            y.step_end_scale = (double)measured->step_end / model;
    }
    reserve_room(&y, &p);
    for (int64_t rank = 0; rank < p.pp && !y.failed; rank++) {
        struct rank r;
        struct bucket_state b = {0, 0};
        uint32_t begin;
        if (add_rank(&y, rank, &r))
            break;
        step_begin(&y, &p, &r, &begin);
        if (p.vpp > 1)
            schedule_interleaved(&y, &p, &r, &b);
        else
            schedule_1f1b(&y, &p, &r, &b);
        step_end(&y, &p, &r, &b, begin);
    }
    if (!y.failed)
        pair_transfers(&y, &p);
    synth_release(&y, &p);
    if (y.failed) {
        model_gb_free(y.gb);
        return y.failed;
    }
    return model_gb_finish(y.gb, out, err);
}

int synth_build(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
              enum est_detail detail, struct model_graph **out, struct sc_error *err)
{
    return synth_step(s, hw, c, detail, NULL, 1, 1, NULL, out, err);
}

int synth_unnamed(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      enum est_detail detail, struct model_graph **out, struct sc_error *err)
{
    return synth_step(s, hw, c, detail, NULL, 0, 0, NULL, out, err);
}

int synth_size(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                   enum est_detail detail, struct est_synth_size *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    return synth_step(s, hw, c, detail, NULL, 0, 0, out, NULL, err);
}

int synth_measured(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       enum est_detail detail, const struct est_pass_costs *measured, int names,
                       struct model_graph **out, struct sc_error *err)
{
    return synth_step(s, hw, c, detail, measured, 1, names, NULL, out, err);
}
