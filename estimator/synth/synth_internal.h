/* estimator/synth/synth_internal.h: the state the parts of the step synthesiser
 * share (synth.h), for those parts only.
 *
 * A step is synthesised in four parts, one file each: the operations of a
 * layer with their costs (synth_ops.c), the emitter that turns a rank's
 * operations into dispatches and tasks (synth_emit.c), the data-parallel
 * side, gradient buckets and ZeRO-3's gathers and reduce-scatters
 * (synth_data_parallel.c), and the pipeline schedule that drives them all
 * (synth.c). They share one `struct synth` per step and one `struct rank`
 * per pipeline rank being emitted. */
#ifndef ESTIMATOR_SYNTH_INTERNAL_H
#define ESTIMATOR_SYNTH_INTERNAL_H

#include <stdint.h>

#include "common/checked.h"
#include "estimator/costs/collective_model.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/placement.h"
#include "estimator/calibrate/cost_set.h"
#include "estimator/synth/detail.h"
#include "estimator/spec/spec.h"
#include "model/graph_builder.h"

enum op_special {
    OP_PLAIN,
    OP_CP_ATTENTION /* attention in a context-parallel ring: blocks and key/value exchanges */
};

struct op {
    const char *name;
    uint8_t cls;     /* MODEL_TASK_KERNEL or MODEL_TASK_COMM */
    uint8_t sub;     /* kernel family or collective kind */
    uint8_t special; /* enum op_special */
    uint8_t ndisp;   /* host dispatches it takes (a fused sequence may take several) */
    int64_t dur;     /* ns */
    int64_t bytes;   /* a collective's size (nccl-tests convention) */
    uint32_t group_size;
    double flops;    /* executed by a GEMM or attention kernel (est_executed_flops_per_token) */
    int64_t comm;    /* of a kernel's time, communication it runs beside (overlap_tp) */
};

/* What a run of operations on the compute stream adds to a pending run
 * (see struct run and synth_run_add): computed once per list, so that at layer
 * and stage detail a layer's operations are emitted in one step. */
struct run_sum {
    int64_t n;           /* operations */
    int64_t cpu;         /* host time: its dispatches */
    int64_t gpu;         /* GPU time */
    int64_t comm;        /* of which communication */
    double flops;        /* executed by its kernels */
    int64_t first_cpu;   /* the first dispatch */
    int64_t tail;        /* max over its ops of (host time before it + its dispatch + GPU work from there on) */
    uint8_t cls, sub;    /* the first operation's */
    uint8_t kernel;      /* any operation a kernel */
    uint8_t mixed;       /* any operation of another sub than the first */
    const struct op *first;
};

struct oplist {
    struct op *v;
    size_t n, cap;
    struct run_sum sum;
    int summed; /* sum holds the whole list (no operation that needs emitting alone) */
};

#define COLL_MEMO 8

/* What a spec makes of one rank's work, derived once. */
struct shape {
    enum hw_dtype dt;
    enum hw_dtype dt16; /* what runs outside the fp8 and fp4 recipes (attention, the output layer, activations): bf16 then, else dt */
    enum est_fp8_recipe recipe; /* with dt fp8 */
    double B;           /* bytes per element of activations */
    double T;           /* tokens of a micro-batch on one rank: micro_batch x seq / cp */
    double Tl;          /* tokens a norm or dropout sees: T / tp with sequence parallelism */
    double h, heads, kv, ffn, vocab;
    double hd;          /* the attention core's head width (spec_attention_head_dim) */
    double tp, cp;
    int sp;             /* sequence parallelism on (and tp > 1) */
    int flash;
    struct coll_group tp_group, cp_group, ep_group, etp_group, dp_group, edp_group, pp_pair, mp_group;
    /* ZeRO-3's shard group (parallel.fsdp_shard of the dp x cp ranks) and
     * the replicas of a shard (hybrid sharding) */
    struct coll_group shard_group, replica_group;
    struct coll_group tpep_group; /* the ep x etp ranks (the all-gather dispatcher's) */
};

struct synth {
    const struct est_spec *s;
    const struct hw_profile *hw;
    const struct est_costs *c;
    enum est_detail detail;
    int calls; /* a host task per call (else a thread's calls between two
                * synchronisations are one task: synth_host_call) */
    int names; /* the tasks get names and tags (else the builder keeps none) */
    struct shape sh;
    struct model_gb *gb;
    struct sc_error *err;
    int failed;
    /* per layer kind (0 dense, 1 MoE): forward, backward, recomputation */
    struct oplist fwd[2], bwd[2], recompute[2];
    struct oplist embed_fwd, embed_bwd, head_fwd, head_bwd;
    /* the context-parallel ring's pieces, [0] forward, [1] backward (a
     * pending run points at them until it is flushed) */
    struct op cp_block[2], cp_exchange[2];
    /* the collectives timed last (synth_coll_ns): a step times the same few
     * (ZeRO-3's gathers and reduce-scatters of each layer in every pass)
     * over and over */
    struct {
        int op, ranks, per_domain;
        double bytes;
        int64_t ns;
    } coll_memo[COLL_MEMO];
    unsigned n_coll_memo;
    /* a layer's parameters on one rank, dense and expert, per layer kind
     * (0 dense, 1 MoE), once known (layer_rank_params) */
    double layer_dense[2], layer_experts[2];
    uint8_t layer_known[2];
    /* set: the schedule only times ZeRO-3's streams of a rank
     * (synth_bound_z3), building nothing */
    struct z3_sim *sim;
    /* the gradient norm's and the optimizer's kernels at the end of the
     * step over the kernel model's (synth_measured: a traced job's pace;
     * 0 as 1) */
    double step_end_scale;
};

static inline int64_t synth_ns(double us)
{
    return sc_sat_round(us * 1000.0);
}

static inline int64_t max_i64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

enum stream { ST_COMPUTE, ST_SEND, ST_RECV, ST_DP, ST_CP, ST_COUNT };

#define MAX_WAITS 8

/* Operations not yet turned into tasks: a run on one stream that the level
 * of detail lets merge. */
struct run {
    int stream;
    struct run_sum sum;
    struct op first; /* a copy: operations may live on the caller's stack */
};

struct rank {
    uint16_t id;
    uint32_t cpu, st[ST_COUNT];
    uint32_t last[ST_COUNT]; /* the last task on each stream, or MODEL_NONE */
    uint8_t last_paired[ST_COUNT]; /* that task sits on the other side's stream (p2p_batch) */
    uint32_t synced[ST_COUNT]; /* the last task on each stream a host synchronisation waited for */
    /* the host calls since the thread last synchronised, as one task
     * (synth_host_call, without `calls`), and how long they take so far */
    uint32_t call;
    int64_t call_ns;
    struct run run;
    /* what the next task on each stream waits for */
    uint32_t waits[ST_COUNT][MAX_WAITS];
    int n_waits[ST_COUNT];
    char region[96];         /* what a merged task is named after */
    /* ZeRO-3 (see synth_z3_gather): the compute stream's last task before the
     * layer computing now, and the gradients of the layer before waiting
     * to be reduce-scattered after the next gather */
    uint32_t z3_free;
    struct {
        double dense, experts;
        uint32_t after;
    } z3_grads;
};

struct bucket_state {
    double dense, experts; /* parameters gathered into the open bucket */
};

/* The data-parallel stream's time for one collective of a unit's
 * parameters per shard group (as dp_colls runs them, one after another):
 * `any` when one runs at all. */
struct z3_colls {
    int any;
    int64_t ns;
};

/* What a unit (a layer, the embedding, the output layer) puts on the
 * stream: its parameters gathered, its gradients reduce-scattered; and
 * whether it has parameters at all. */
struct z3_unit {
    int params;
    struct z3_colls gather, reduce;
};

/* synth_bound_z3 follows a rank's passes in the schedule's order with
 * only what synth_z3_gather, synth_z3_reduce and synth_z3_grads_done make the two streams
 * wait for, and each unit's compute at its cost in est_pass_costs (the
 * compute stream's time of its operations); times in ns from the step's
 * start. */
struct z3_sim {
    const struct est_pass_costs *pc;
    int64_t compute; /* the end of the compute so far */
    int64_t stream;  /* the end of the data-parallel stream's work so far */
    int64_t free_at; /* z3_free: the compute's end at the unit before */
    struct z3_colls grads; /* the reduce-scatter of the last backward unit's gradients, pending */
    int64_t grads_after;
    struct z3_unit layer[2]; /* per layer kind (0 dense, 1 MoE), once known */
    uint8_t layer_known[2];
    /* a virtual stage's embedding and output layer, per [embedding][loss] */
    struct z3_unit edge[2][2][2];
    uint8_t edge_known[2][2];
};

/* synth_ops.c: the operations and their costs */
int64_t synth_coll_ns(struct synth *y, enum model_coll_op op, const struct coll_group *g, double bytes);
void synth_cp_pieces(struct synth *y);
void synth_layer_ops(struct synth *y, int is_moe);
void synth_embedding_and_loss_ops(struct synth *y);
void synth_shape_init(struct synth *y);

/* synth_emit.c: operations as dispatches on a rank's thread and tasks on
 * its streams */
uint32_t synth_add_task(struct synth *y, const struct model_task_spec *t);
void synth_add_edge(struct synth *y, uint32_t from, uint32_t to, enum model_edge_kind kind,
                    enum model_edge_type type, int64_t lat);
uint32_t synth_add_group(struct synth *y, enum model_coll_op op, int64_t bytes, uint32_t size,
                         const uint32_t *tasks, size_t n);
uint32_t synth_host_call(struct synth *y, struct rank *r, const struct model_task_spec *t, int sync,
                         int64_t *at);
void synth_flush(struct synth *y, struct rank *r);
void synth_wait_on(struct synth *y, struct rank *r, int stream, uint32_t task);
void synth_summarise(const struct synth *y, struct oplist *l);
void synth_run_add(struct synth *y, struct rank *r, int stream, const struct run_sum *a);
void synth_emit(struct synth *y, struct rank *r, int stream, const struct op *o);
uint32_t synth_anchor(struct synth *y, struct rank *r, int stream);
uint32_t synth_host_sync(struct synth *y, struct rank *r, const char *name, const uint32_t *on, size_t n);
void synth_sync_streams(struct synth *y, struct rank *r, uint32_t call);
void synth_device_sync(struct synth *y, struct rank *r, const char *name);
void synth_layer_boundary(struct synth *y, struct rank *r);
void synth_emit_ops(struct synth *y, struct rank *r, const struct oplist *l, int backward);

/* synth_data_parallel.c: gradient buckets and ZeRO-3 */
void synth_kind_rank_params(struct synth *y, int64_t i, int is_moe, double *dense, double *experts);
void synth_bucket_reduce(struct synth *y, struct rank *r, struct bucket_state *b);
int synth_zero3(const struct synth *y);
void synth_z3_reduce(struct synth *y, struct rank *r);
void synth_z3_gather(struct synth *y, struct rank *r, double dense, double experts);
void synth_z3_grads_done(struct synth *y, struct rank *r, double dense, double experts);
int64_t synth_layer_b_ns(const struct est_spec *s, const struct est_pass_costs *pc, int moe, int64_t in_chunk);
void synth_z3_sim_pass(struct synth *y, const struct est_stage_layers *st, int backward);

#endif
