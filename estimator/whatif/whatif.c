/* estimator/whatif/whatif.c: the transforms of a traced step and their replay
 * (whatif.h). Durations are kept in double nanoseconds per source task
 * while the transforms run, and rounded once for the copy. What they ask
 * of the cost models is whatif_price.h's, the traced host's accounting
 * whatif_host.h's, the answer's split into measured and modelled time
 * whatif_result.h's. */
#include "estimator/whatif/whatif.h"

#include <assert.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/whatif/coll_split.h"
#include "estimator/costs/collective_model.h"
#include "estimator/whatif/graph_copy.h"
#include "estimator/costs/hardware.h"
#include "estimator/whatif/job_check.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/spec/memory.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"
#include "estimator/whatif/coll_placement.h"
#include "estimator/whatif/whatif_host.h"
#include "estimator/whatif/whatif_pipeline.h"
#include "estimator/whatif/whatif_price.h"
#include "estimator/whatif/whatif_result.h"
#include "estimator/whatif/zero3_schedule.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "model/trace.h"
#include "model/replay.h"
#include "common/vec.h"
#include "common/banned.h"

struct wf {
    const struct model_graph *g;
    const struct job_structure *st;
    const struct job_config *b, *t; /* base, target */
    struct whatif_price pr; /* the traced GPU (hw0) and the target (hw1), with their costs */
    double *dur, *gap;    /* per source task, ns */
    double *model_ns;     /* the part of dur a model gave */
    uint8_t *model;       /* enum whatif_model of that part */
    double *transfer, *wait; /* communication tasks: the traced split, ns */
    double *bytes0;       /* their size in the traced configuration */
    int *coll_kind;       /* the kind the model times (-1: not modelled) */
    double *size_ratio;   /* their size in the target over the traced one */
    uint8_t *per_mb;      /* work done once per micro-batch */
    struct graph_insert *ins;
    size_t n_ins, cap_ins;
    struct coll_placement pl; /* where the traced step lacks collectives (placement(), once) */
    int has_pl;
    char pipeline_why[320]; /* what the pipeline transform did ("" when it did not run) */
    int lean;               /* whatif_run_with's */
    int profiled;           /* the target runs under the profiler: its cost stays on the host */
    double profiler_ns;     /* a step's host time the profiler took (whatif_host_unprofile) */
    int sizes_unknown;
    size_t retimed[WHATIF_MODEL_COUNT];
};

static int oom(struct sc_error *err)
{
    return sc_error_set(err, SC_ENOMEM, "out of memory");
}

/* ---- collectives ---- */

/* Whether collectives of role r reduce gradients (or gather parameters)
 * over data-parallel replicas: the dense weights' (dp) or the experts'
 * (edp), once a step, sized by the weights. */
static int grads_role(int r)
{
    return r == STRUCT_ROLE_DP || r == STRUCT_ROLE_EDP;
}

/* Transform 1: every communication task's transfer and wait
 * (coll_split.h), laid out as the traced configuration has its role. */
static void whatif_layout(void *ctx, uint32_t i, struct coll_split_in *in)
{
    const struct wf *w = ctx;
    int kind = w->g->tasks[i].sub;
    in->group = whatif_coll_layout(w->st->role[i], w->b, whatif_node_of(w->b, w->pr.hw0), &kind);
    in->kind = kind;
    in->bytes = w->st->coll_bytes[i];
    in->key = w->st->role[i];
}

static int split_collectives(struct wf *w, struct sc_error *err)
{
    struct coll_split s;
    int rc = whatif_coll_split_run(w->g, &w->pr.cp0, whatif_layout, w, &s, err);
    if (rc)
        return rc;
    w->transfer = s.transfer;
    w->wait = s.wait;
    w->bytes0 = s.bytes;
    w->coll_kind = s.kind;
    w->sizes_unknown = s.sizes_unknown;
    free(s.from);
    return SC_OK;
}

/* ---- kernels ---- */

static int name_has(const char *s, const char *sub)
{
    return s && strstr(s, sub) != NULL;
}

/* Whether kernel i is PyTorch's non-vectorised elementwise kernel (the
 * path of strided operands; cost_kernel_strided_us). */
static int strided_elementwise(const struct model_graph *g, uint32_t i)
{
    return g->tasks[i].cls == MODEL_TASK_KERNEL &&
           name_has(model_graph_str(g, g->src[i].name), "native::elementwise_kernel<");
}

/* The dtype a GEMM-like kernel computes in, from its name. */
static enum hw_dtype kernel_dtype(const char *name, const struct job_config *c)
{
    if (name_has(name, "tf32") || name_has(name, "s1688") || name_has(name, "s16816"))
        return HW_TF32;
    if (name_has(name, "bf16"))
        return HW_BF16;
    if (name_has(name, "f16") || name_has(name, "h884") || name_has(name, "h1688") || name_has(name, "h16816") ||
        name_has(name, "fp16") || name_has(name, "half"))
        return HW_FP16;
    if (name_has(name, "e4m3") || name_has(name, "e5m2") || name_has(name, "fp8"))
        return HW_FP8;
    return c->has_dtype ? c->dtype : HW_FP32;
}

static int compute_bound(const struct model_task *t)
{
    return t->cls == MODEL_TASK_KERNEL && (t->sub == MODEL_KF_GEMM || t->sub == MODEL_KF_CONVOLUTION ||
                                           t->sub == MODEL_KF_ATTENTION || t->sub == MODEL_KF_FP8);
}

/* The part of task i's duration that does not grow with its work. A
 * synthesised kernel's is the stack's fixed cost it was written with
 * (cost_set.c); a measured kernel's is none: on the eager steps of
 * data/calibration/torch-steps, GEMMs of 0.05 and 1 TFLOP run at the same
 * throughput and the loss's kernels scale with the tokens they read, and a
 * fixed cost of 3 or 8 us left the what-ifs between those steps 0.5 and
 * 1.3 points further from the measured steps (tests/whatif_steps.py). */
static double kernel_fixed_ns(const struct wf *w, uint32_t i)
{
    const struct model_trace *t = whatif_job_structure_trace(w->g, w->g->tasks[i].rank);
    return t && t->synthetic ? w->pr.kp0.kernel_fixed_us * 1e3 : 0.0;
}

/* Scale task i's measured duration but its fixed part by r, the change
 * credited to model m when r is not 1. */
static void retime(struct wf *w, uint32_t i, double r, enum whatif_model m)
{
    assert(i < w->g->n_tasks);
    double fixed = kernel_fixed_ns(w, i), d = w->dur[i];
    double keep = d < fixed ? d : fixed;
    w->dur[i] = keep + (d - keep) * r;
    if (r != 1.0) {
        w->model_ns[i] = w->dur[i];
        w->model[i] = (uint8_t)m;
        w->retimed[m]++;
    }
}

/* Transform 2: the GPU type. A kernel launched by a GEMM op with its
 * shape recorded (structure.h: gemm) is re-timed by the model's ratio for
 * that shape; another compute-bound kernel by the ratio for the square
 * GEMM the model gives its measured time; PyTorch's non-vectorised
 * elementwise kernels by the ratio of their kernel model (the SMs' element
 * rate where it bounds them); the rest by the achievable memory
 * bandwidth's. */
static void gpu_type(struct wf *w)
{
    const struct model_graph *g = w->g;
    double mem = w->pr.hw0->hbm_gbps / w->pr.hw1->hbm_gbps;
    /* a binary elementwise kernel over strided operands, per element */
    double binary = cost_kernel_mem_bytes(KERNEL_MEM_BINARY, 1, HW_BF16, HW_BF16);
    double strided = cost_kernel_strided_us(&w->pr.kp1, w->pr.hw1, 1, binary) /
                     cost_kernel_strided_us(&w->pr.kp0, w->pr.hw0, 1, binary);
    if (w->pr.hw0 == w->pr.hw1)
        return; /* the same GPU: every ratio is 1 */
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *tk = &g->tasks[i];
        if (!model_task_on_gpu(tk->cls) || tk->cls == MODEL_TASK_COMM)
            continue;
        double ratio = strided_elementwise(g, i) ? strided : mem;
        if (w->st->gemm[i] != UINT32_MAX) {
            ratio = whatif_gemm_ratio(&w->pr, w->st->gemms[w->st->gemm[i]]);
        } else if (compute_bound(tk)) {
            enum hw_dtype d = kernel_dtype(model_graph_str(g, g->src[i].name), w->b);
            ratio = whatif_square_gemm_ratio(&w->pr, (double)tk->dur / 1e3, d);
        }
        retime(w, i, ratio > 0 ? ratio : mem, WHATIF_KERNEL_MODEL);
    }
}

/* Task i done r times in place: its duration, host gap and the parts of
 * them (modelled, transfer, wait) scaled by r. */
static void repeat(struct wf *w, uint32_t i, double r)
{
    assert(i < w->g->n_tasks && r >= 0);
    w->dur[i] *= r;
    w->gap[i] *= r;
    w->model_ns[i] *= r;
    w->transfer[i] *= r;
    w->wait[i] *= r;
}

/* How many times the target repeats each traced layer's work. */
static double layers_ratio(const struct job_config *b, const struct job_config *t)
{
    return b->layers ? (double)t->layers / (double)b->layers : 1.0;
}

/* Transform 3: layers. */
static int layers(struct wf *w, struct sc_error *err)
{
    const struct job_config *b = w->b, *t = w->t;
    if (t->layers != b->layers) {
        if (!b->layers)
            return sc_error_set(err, SC_EINVAL, "set.layers: the job description must give layers to change them");
        if (!w->st->layers_per_rank)
            return sc_error_set(err, SC_EINVAL,
                                "set.layers: the trace shows no layer (no module annotation, no repeating kernel "
                                "sequence)");
    }
    double r = layers_ratio(b, t);
    for (uint32_t i = 0; i < w->g->n_tasks; i++) {
        if (w->st->layer[i] < 0)
            continue;
        if (w->g->tasks[i].cls == MODEL_TASK_COMM && grads_role(w->st->role[i]))
            continue; /* a gradient bucket: its size follows the parameters */
        repeat(w, i, r);
    }
    return SC_OK;
}

/* ---- shapes ---- */

/* Which tasks run once per micro-batch: all but the optimizer, the
 * data-parallel gradient collectives and the calls launching only those. */
static void mark_per_mb(struct wf *w)
{
    const struct model_graph *g = w->g;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (!model_task_on_gpu(t->cls))
            continue;
        int grads = t->cls == MODEL_TASK_COMM && grads_role(w->st->role[i]) &&
                    (t->sub == MODEL_COLL_ALLREDUCE || t->sub == MODEL_COLL_REDUCESCATTER ||
                     t->sub == MODEL_COLL_ALLGATHER);
        w->per_mb[i] = !grads && !whatif_struct_is_optimizer(g, w->st, i);
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
            if (g->edges[e].kind == MODEL_EDGE_LAUNCH && w->per_mb[i]) {
                assert(g->edges[e].from < i); /* a launch comes before the work it launches */
                w->per_mb[g->edges[e].from] = 1;
            }
    }
}

static int dims_needed(const struct job_config *b, const struct job_config *t, struct sc_error *err)
{
    static const char *const names[] = {"hidden", "ffn", "seq", "heads"};
    /* ffn defaults to 4 x hidden, as in a spec */
    const int64_t bv[] = {b->hidden, b->ffn ? b->ffn : 4 * b->hidden, b->seq, b->heads},
                  tv[] = {t->hidden, t->ffn ? t->ffn : 4 * t->hidden, t->seq, t->heads};
    for (size_t k = 0; k < 4; k++)
        if (tv[k] != bv[k] && (!bv[k] || !whatif_has_dims(b)))
            return sc_error_set(err, SC_EINVAL,
                                "set.%s: the job description must give %s (and hidden and seq) to change it",
                                names[k], names[k]);
    if (whatif_cp_of(t) != whatif_cp_of(b) && !(whatif_has_dims(b) && b->heads))
        return sc_error_set(err, SC_EINVAL,
                            "set.cp: the job description must give hidden, heads and seq to change cp");
    if (t->vocab != b->vocab && !b->vocab)
        return sc_error_set(err, SC_EINVAL, "set.vocab: the job description must give vocab to change it");
    return SC_OK;
}

/* What a memory-bound kernel's name says of its work: an MLP activation
 * (over the FFN's width: tensor parallelism splits it, the FFN's size and
 * gating scale it), or the attention's softmax, rotary embedding or the
 * helpers of cuDNN's flash attention backward (each query's dot(dO, O),
 * the fp32 dQ cast to 16 bits) (over the heads: split too); norms,
 * dropouts and residual adds work on the full hidden state of every rank
 * without sequence parallelism. */
enum name_class { NAME_PLAIN = 1, NAME_TP_SPLIT = 2, NAME_ACTIVATION = 4 };

static int name_class(const char *name)
{
    static const char *const act[] = {"gelu", "relu", "silu", "swiglu", "activation", NULL};
    static const char *const heads[] = {"softmax", "rotary", "dot_do_o", "convert_dq", NULL};
    if (model_kernel_name_has(name, act))
        return NAME_TP_SPLIT | NAME_ACTIVATION;
    return model_kernel_name_has(name, heads) ? NAME_TP_SPLIT : NAME_PLAIN;
}

/* Kernel i's name class (family first: a softmax or rotary kernel splits);
 * cls (one per string of g, 0 until known) keeps each name's answer: a
 * job has a few distinct names over many tasks. */
static int kernel_name_class(const struct model_graph *g, uint32_t i, uint8_t *cls)
{
    const struct model_task *t = &g->tasks[i];
    uint32_t name = g->src[i].name;
    if (!cls[name])
        cls[name] = (uint8_t)name_class(model_graph_str(g, name));
    return cls[name] | (t->sub == MODEL_KF_SOFTMAX || t->sub == MODEL_KF_ROTARY ? NAME_TP_SPLIT : 0);
}

/* Work outside the layers that Megatron splits over tp: the output layer's
 * GEMM, the vocabulary-parallel loss and embedding. */
static int tp_split_outside(const struct model_task *t)
{
    return t->cls == MODEL_TASK_KERNEL && (t->sub == MODEL_KF_GEMM || t->sub == MODEL_KF_LOSS ||
                                           t->sub == MODEL_KF_EMBEDDING || t->sub == MODEL_KF_SOFTMAX);
}

static int add_insert(struct wf *w, uint32_t after, int op, double dur_ns, const char *name)
{
    assert(after < w->g->n_tasks);
    if (sc_vec_reserve((void **)&w->ins, &w->cap_ins, w->n_ins + 1, sizeof *w->ins))
        return SC_ENOMEM;
    w->ins[w->n_ins++] = (struct graph_insert){after, MODEL_TASK_COMM, op, llround(dur_ns), name};
    return SC_OK;
}

/* The traced step's placement of the collectives it lacks
 * (coll_placement.h), found once a what-if, with the target's sequence
 * parallelism. */
static int placement(struct wf *w, struct sc_error *err)
{
    if (w->has_pl)
        return SC_OK;
    int rc = whatif_coll_placement_find(w->g, w->st, w->t->tp > 1 && spec_job_config_sequence_parallel(w->t), &w->pl, err);
    w->has_pl = !rc;
    return rc;
}

/* tp 1 -> more: the collectives Megatron runs, where it runs them
 * (coll_placement.h), each timed by the collective model for its size on
 * the target's tensor-parallel group. */
static int insert_tp_collectives(struct wf *w, const struct coll_placement *pl, struct sc_error *err)
{
    const struct job_config *t = w->t;
    int rc = SC_OK;
    /* the tokens a rank holds: its micro-batch's share of the sequence */
    double tokens = (double)(t->micro_batch ? t->micro_batch : 1) * (double)t->seq / (double)whatif_cp_of(t);
    double bytes[2] = {tokens * (double)t->hidden * cost_hw_dtype_bytes(t->has_dtype ? t->dtype : HW_BF16), tokens * 4};
    for (size_t i = 0; i < pl->n && !rc; i++) {
        int kind = pl->v[i].op;
        struct coll_group gr = whatif_coll_layout(STRUCT_ROLE_TP, t, whatif_node_of(t, w->pr.hw1), &kind);
        double us = whatif_coll_split_us(&w->pr.cp1, kind, gr, bytes[pl->v[i].tensor]);
        rc = add_insert(w, pl->v[i].after, kind, us * 1e3, pl->v[i].name);
    }
    return rc ? oom(err) : SC_OK;
}

/* Whether kernel i is a reduction of the gradients between the last
 * backward pass of its rank and the optimizer (the gradient norm for
 * clipping): work on the rank's parameters, done once a step, as the
 * optimizer's. */
static int after_backward(const struct wf *w, uint32_t i)
{
    const struct model_graph *g = w->g;
    const struct model_task *tk = &g->tasks[i];
    if (tk->sub != MODEL_KF_REDUCTION || w->st->layer[i] >= 0 || !w->pl.grads || tk->rank >= w->pl.n_ranks)
        return 0;
    const struct coll_grads *c = &w->pl.grads[tk->rank];
    if (!c->n || c->optimizer_begin == MODEL_NONE || g->tasks[c->optimizer_begin].res != tk->res)
        return 0;
    for (uint32_t k = g->next[c->ready[c->n - 1]]; k != MODEL_NONE && k != c->optimizer_begin; k = g->next[k])
        if (k == i)
            return 1;
    return 0;
}

/* Transform 4: tensor-parallel degree, model dimensions and micro-batch
 * size. */
static int shapes(struct wf *w, struct sc_error *err)
{
    const struct model_graph *g = w->g;
    const struct job_config *b = w->b, *t = w->t;
    int rc = dims_needed(b, t, err);
    if (rc)
        return rc;
    double mb = (double)(t->micro_batch ? t->micro_batch : 1) / (double)(b->micro_batch ? b->micro_batch : 1);
    if ((t->micro_batch != b->micro_batch) && !b->micro_batch)
        return sc_error_set(err, SC_EINVAL,
                            "set.micro_batch: the job description must give micro_batch to change it");
    double tokens = mb * (double)whatif_cp_of(b) / (double)whatif_cp_of(t), width = 1, r_gemm, r_attn;
    if (whatif_has_dims(b)) {
        tokens *= (double)t->seq / (double)b->seq;
        width = (double)t->hidden / (double)b->hidden;
        double g0 = whatif_layer_gemms_us(&w->pr, b), g1 = whatif_layer_gemms_us(&w->pr, t);
        if (g0 <= 0 || g1 < 0)
            return sc_error_set(err, SC_EINVAL, "set: the kernel model cannot time this layer's GEMMs");
        r_gemm = g1 / g0;
        if (b->heads && t->heads) {
            /* the ring's exchanges are tasks of their own: with cp kept,
             * each block is re-timed as a block */
            int ring = whatif_cp_of(b) != whatif_cp_of(t);
            double a0 = whatif_attention_us(&w->pr, b, ring, 0), a1 = whatif_attention_us(&w->pr, t, ring, 0);
            r_attn = a0 > 0 && a1 >= 0 ? a1 / a0 : r_gemm;
        } else {
            r_attn = mb * (double)t->seq * (double)t->seq * (double)t->hidden * (double)b->tp /
                     ((double)b->seq * (double)b->seq * (double)b->hidden * (double)t->tp);
        }
    } else {
        r_gemm = r_attn = mb * (double)b->tp / (double)t->tp;
    }
    double r_mem = tokens * width, r_tp = (double)b->tp / (double)t->tp,
           r_output = whatif_output_gemm_ratio(&w->pr, b, t);
    double r_vocab = b->vocab && t->vocab ? (double)t->vocab / (double)b->vocab : 1.0;
    if (t->tp != b->tp && b->tp == 1 && !whatif_has_dims(t))
        return sc_error_set(err, SC_EINVAL,
                            "set.tp: going from tp=1 to more needs hidden and seq in the job description (to size "
                            "the tensor-parallel all-reduces)");
    double r_act_f = tokens, r_act_b = tokens, r_act = tokens;
    if (whatif_has_dims(b)) { /* per token on the target GPU: the GPU type re-timed the kernels already */
        r_act_f *= whatif_activation_us(&w->pr, t, 0) / whatif_activation_us(&w->pr, b, 0);
        r_act_b *= whatif_activation_us(&w->pr, t, 1) / whatif_activation_us(&w->pr, b, 1);
        r_act *= (whatif_activation_us(&w->pr, t, 0) + whatif_activation_us(&w->pr, t, 1)) /
                 (whatif_activation_us(&w->pr, b, 0) + whatif_activation_us(&w->pr, b, 1));
    }
    int sp = t->tp > 1 && spec_job_config_sequence_parallel(t), from_tp1 = b->tp == 1 && t->tp > 1;
    if (((from_tp1 || whatif_has_dims(b)) && (rc = placement(w, err))) ||
        (from_tp1 && (rc = whatif_coll_placement_tp_check(&w->pl, w->st, err))))
        return rc;
    const struct coll_placement *pl = &w->pl; /* zeroed when not found */
    /* the weights a GPU holds under t over b's: the dp collectives',
     * the experts' and all of them (the optimizer, the gradients'
     * accumulation) */
    double r_dp = whatif_params_ratio(b, t, WHATIF_WEIGHTS_DP), r_edp = whatif_params_ratio(b, t, WHATIF_WEIGHTS_EXPERTS),
           r_all = whatif_params_ratio(b, t, WHATIF_WEIGHTS_ALL);
    uint8_t *cls = calloc(g->names.n ? g->names.n : 1, 1); /* per name (kernel_name_class) */
    if (!cls)
        return oom(err);
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *tk = &g->tasks[i];
        int in_layer = w->st->layer[i] >= 0;
        if (tk->cls == MODEL_TASK_COMM) {
            int role = w->st->role[i];
            if (role == STRUCT_ROLE_TP || role == STRUCT_ROLE_PP || role == STRUCT_ROLE_EP ||
                (grads_role(role) && w->per_mb[i]))
                w->size_ratio[i] *= tokens * width;
            else if (role == STRUCT_ROLE_CP) /* a rank's keys and values: its tokens x its key/value heads */
                w->size_ratio[i] *= tokens * whatif_kv_width(t) / whatif_kv_width(b);
            else if (role == STRUCT_ROLE_DP)
                w->size_ratio[i] *= r_dp;
            else if (role == STRUCT_ROLE_EDP)
                w->size_ratio[i] *= r_edp;
            continue;
        }
        if (!model_task_on_gpu(tk->cls))
            continue;
        /* work on the weights: the layers transform scaled one found
         * inside a layer already */
        double lr = in_layer && b->layers && t->layers ? (double)b->layers / (double)t->layers : 1.0;
        if (whatif_struct_is_optimizer(g, w->st, i) || (tk->cls == MODEL_TASK_KERNEL && after_backward(w, i))) {
            w->per_mb[i] = 0;
            retime(w, i, r_all * lr * whatif_optimizer_shards(b) / whatif_optimizer_shards(t), WHATIF_KERNEL_MODEL);
            continue;
        }
        if (w->st->param_work[i]) { /* a gradient accumulated, once a micro-batch */
            retime(w, i, r_all * lr, WHATIF_KERNEL_MODEL);
            continue;
        }
        if (!w->per_mb[i])
            continue;
        double r;
        if (!in_layer && tk->cls == MODEL_TASK_KERNEL && tk->sub == MODEL_KF_LOSS)
            r = tokens * r_vocab * r_tp; /* over the logits: tokens x vocabulary */
        else if (!in_layer && pl->vocab_parallel && pl->vocab_parallel[i]) {
            /* over the logits: the output layer's GEMMs (tokens x h x V) and
             * the loss's other kernels (tokens x V), split over the vocabulary */
            int gemm = tk->cls == MODEL_TASK_KERNEL && tk->sub == MODEL_KF_GEMM;
            r = gemm && r_output > 0 ? r_output
                                     : (gemm ? r_mem : tokens) * r_vocab * (from_tp1 || tp_split_outside(tk) ? r_tp : 1.0);
        } else if (!in_layer) /* the embedding and the final norm: tokens x h */
            r = r_mem * (tp_split_outside(tk) ? r_tp * r_vocab : 1.0);
        else if (tk->cls == MODEL_TASK_KERNEL && (tk->sub == MODEL_KF_GEMM || tk->sub == MODEL_KF_FP8))
            r = r_gemm;
        else if (tk->cls == MODEL_TASK_KERNEL && tk->sub == MODEL_KF_ATTENTION)
            r = r_attn;
        else { /* with sequence parallelism every memory-bound kernel of a layer runs on seq / tp tokens */
            int k = kernel_name_class(g, i, cls), act = pl->mlp_activation ? pl->mlp_activation[i] : 0;
            double by = act == COLL_MLP_FORWARD ? r_act_f
                        : act == COLL_MLP_BACKWARD ? r_act_b
                        : k & NAME_ACTIVATION     ? r_act
                                                  : r_mem;
            r = by * (sp || act || (k & NAME_TP_SPLIT) ? r_tp : 1.0);
        }
        retime(w, i, r, WHATIF_KERNEL_MODEL);
    }
    free(cls);
    return from_tp1 ? insert_tp_collectives(w, pl, err) : SC_OK;
}

/* Transform 5: micro-batches per step. */
static void micro_batches(struct wf *w)
{
    int64_t m0 = spec_job_config_micro_batches(w->b), m1 = spec_job_config_micro_batches(w->t);
    double r = m0 > 0 && m1 > 0 ? (double)m1 / (double)m0 : 1.0;
    for (uint32_t i = 0; i < w->g->n_tasks; i++) {
        if (w->per_mb[i])
            repeat(w, i, r);
    }
}

/* Expert parallelism t can run: of an MoE job, ep dividing its experts
 * and ep x etp dividing tp x cp x dp (a change of either side refused
 * otherwise); none of a job without experts. */
static int expert_parallel_check(const struct job_config *b, const struct job_config *t, struct sc_error *err)
{
    int64_t ep0, ep, etp, edp, cp = whatif_cp_of(t);
    spec_job_config_expert_groups(b, &ep0, &etp, &edp);
    spec_job_config_expert_groups(t, &ep, &etp, &edp);
    if (ep != ep0 && !t->moe.experts)
        return sc_error_set(err, SC_EINVAL, "set.ep: the job description gives no moe (experts to spread over ep ranks)");
    if (ep != ep0 && t->moe.experts % ep)
        return sc_error_set(err, SC_EINVAL, "set.ep: %lld does not divide moe.experts %lld", (long long)ep,
                            (long long)t->moe.experts);
    if (t->moe.experts && !edp)
        return sc_error_set(err, SC_EINVAL, "set: ep x etp = %lld does not divide tp x cp x dp = %lld", (long long)(ep * etp),
                            (long long)(t->tp * cp * t->dp));
    return SC_OK;
}

/* What the transforms do not change yet: a set asking for it is refused,
 * naming the field, rather than answered as if it had not asked. Of a
 * latent-attention job, neither its layers' shapes: its latent
 * projections and tp gathers are not the GEMMs and collectives the
 * re-timing of a layer's shapes prices. */
static int unmodelled_changes(const struct job_config *b, const struct job_config *t, struct sc_error *err)
{
    int latent = b->mla.kv_lora_rank || t->mla.kv_lora_rank;
    const struct {
        const char *key;
        int changed, latent_only;
    } fields[] = {
        {"etp", t->etp != b->etp, 0},
        {"moe", memcmp(&t->moe, &b->moe, sizeof b->moe) != 0, 0},
        {"recompute", t->has_recompute != b->has_recompute || (t->has_recompute && t->recompute != b->recompute), 0},
        {"framework", t->has_framework != b->has_framework || (t->has_framework && t->framework != b->framework), 0},
        {"master_weights",
         t->has_master_weights != b->has_master_weights ||
             (t->has_master_weights && t->master_weights != b->master_weights),
         0},
        {"mla", memcmp(&t->mla, &b->mla, sizeof b->mla) != 0, 1},
        {"tp", t->tp != b->tp, 1},
        {"hidden", t->hidden != b->hidden, 1},
        {"heads", t->heads != b->heads, 1},
        {"kv_heads", t->kv_heads != b->kv_heads, 1},
        {"head_dim", t->head_dim != b->head_dim, 1},
    };
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
        if (fields[k].changed && (latent || !fields[k].latent_only))
            return sc_error_set(err, SC_EINVAL,
                                "set.%s: the what-if does not change a traced %sjob's %s yet (estimate the target's "
                                "spec instead)",
                                fields[k].key, fields[k].latent_only ? "latent-attention " : "", fields[k].key);
    return SC_OK;
}

static int add_side_insert(struct wf *w, uint32_t after, int op, double dur_ns, const char *name, uint32_t before)
{
    if (add_insert(w, after, op, dur_ns, name))
        return SC_ENOMEM;
    struct graph_insert *in = &w->ins[w->n_ins - 1];
    in->side = 1;
    in->has_before = before != MODEL_NONE;
    in->before = before;
    return SC_OK;
}

/* ZeRO-3's collectives (zero3_schedule.h) inserted on a rank's
 * data-parallel stream, each timed by the collective model over the dp
 * ranks placed as an estimate places them (parameters in the spec's
 * width, gradients in the gradients'), as long as the collectives it
 * stands for: its `times`, in each of the target's micro-batches a traced
 * one stands for (micro_batches). */
struct zero3_insert {
    struct wf *w;
    double param_bytes, grad_bytes, micro_batches;
};

static int zero3_insert(void *ctx, const struct zero3_coll *z)
{
    struct zero3_insert *x = ctx;
    int kind = z->op, gather = z->op == MODEL_COLL_ALLGATHER;
    struct coll_group gr = whatif_coll_layout(STRUCT_ROLE_DP, x->w->t, whatif_node_of(x->w->t, x->w->pr.hw1), &kind);
    double us = whatif_coll_split_us(&x->w->pr.cp1, kind, gr, z->params * (gather ? x->param_bytes : x->grad_bytes));
    return add_side_insert(x->w, z->after, kind, us * z->times * x->micro_batches * 1e3,
                           gather ? "parameter all-gather (what-if)" : "gradient reduce-scatter (what-if)", z->before);
}

/* dp 1 -> more under ZeRO-3 (FSDP): each unit's parameters gathered and
 * gradients reduce-scattered in every micro-batch, as the estimator's
 * step runs them; a layer holds `layer` parameters, and a traced layer
 * pass stands for stage_layers / layers_per_rank of the stage's layers. */
static int insert_zero3(struct wf *w, const struct est_spec *spec, double layer, int64_t stage_layers,
                        struct sc_error *err)
{
    int64_t m0 = spec_job_config_micro_batches(w->b), m1 = spec_job_config_micro_batches(w->t);
    struct zero3_insert x = {w, cost_hw_dtype_bytes(spec->options.dtype == HW_FP32 ? HW_FP32 : HW_BF16),
                             synth_grad_bytes(spec), m0 > 0 && m1 > 0 ? (double)m1 / (double)m0 : 1.0};
    int64_t per_stage = spec_job_config_world_size(w->b) / w->b->pp; /* tp x cp x dp */
    if (w->st->layers_per_rank < 1)
        return sc_error_set(err, SC_EINVAL, "set.zero_stage: the trace shows no layers, the units ZeRO-3 gathers "
                                            "parameters for");
    for (size_t r = 0; r < w->pl.n_ranks; r++) {
        int64_t stage = (int64_t)w->g->ranks[r].id / per_stage;
        struct est_stage_layers sl = {0, 0, stage == 0, stage == w->b->pp - 1};
        struct zero3_params zp = {layer, 0, 0, (double)stage_layers / w->st->layers_per_rank};
        synth_edge_params(spec, &sl, &zp.embedding, &zp.output);
        if (whatif_zero3_schedule(&w->pl.grads[r], &zp, spec->options.overlap_param_gather, zero3_insert, &x))
            return oom(err);
    }
    return SC_OK;
}

/* dp 1 -> more: the gradient reduction the target runs, as the
 * estimator's step runs it (synth.h): the last micro-batch's gradients in
 * Megatron-core's buckets, each reduced on a communication stream of its
 * own once the backward passes that fill it are done (overlap_grad_reduce;
 * else all after the backward), the last with the embedding's and output
 * layer's after the backward; all-reduced, or reduce-scattered under the
 * distributed optimizer (zero_stage 1-2, whose updated parameters are
 * all-gathered before the first forward), over the dp ranks placed as an
 * estimate places them; the optimizer waits for them. ZeRO-3:
 * insert_zero3. A traced pass
 * stands for layers' / layers of the target's layers. */
static int insert_grad_reduction(struct wf *w, struct sc_error *err)
{
    const struct job_config *t = w->t;
    struct est_spec spec;
    int rc;
    if (!whatif_has_dims(t) || !t->layers || !t->heads)
        return sc_error_set(err, SC_EINVAL, "set.dp: going from dp=1 to more needs layers, hidden, heads and seq in "
                                            "the job description (to size the gradient reduction)");
    if ((rc = spec_job_config_spec(t, w->pr.hw1->id, &spec, err)))
        return sc_error_prefix(err, "set");
    if (w->st->grad_sync == STRUCT_SYNC_FSDP && spec.options.zero_stage < 3)
        return sc_error_set(err, SC_EINVAL,
                            "set.zero_stage: the trace shows FSDP's units (zero_stage 3), the target has zero_stage "
                            "%d: give zero_stage 3 for its per-unit gathers and reduce-scatters",
                            (int)spec.options.zero_stage);
    if ((rc = placement(w, err)))
        return rc;
    const struct coll_placement *pl = &w->pl;
    int op = spec.options.zero_stage >= 1 ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLREDUCE, kind = op;
    const char *name = op == MODEL_COLL_ALLREDUCE ? "gradient all-reduce (what-if)" : "gradient reduce-scatter (what-if)";
    struct coll_group gr = whatif_coll_layout(STRUCT_ROLE_DP, t, whatif_node_of(t, w->pr.hw1), &kind);
    double bucket = synth_grad_bucket_params(&spec), bytes_per = synth_grad_bytes(&spec), open, layer = 0;
    int64_t stage_layers = spec.model.layers / spec.parallel.pp;
    for (int64_t i = 0; i < stage_layers; i++) {
        double dense, experts;
        synth_layer_rank_params(&spec, i, &dense, &experts);
        layer += (dense + experts) / (double)stage_layers;
    }
    if (spec.options.zero_stage >= 3)
        return insert_zero3(w, &spec, layer, stage_layers, err);
    /* a rank's stage (ranks are numbered with the pipeline outermost, as
     * Megatron does): the first holds the embedding, the last the output
     * layer (a single stage with tied embeddings holds one matrix) */
    int64_t per_stage = spec_job_config_world_size(w->b) / w->b->pp; /* tp x cp x dp */
    double emb = (double)(spec.model.vocab * spec.model.hidden) / (double)spec.parallel.tp;
    for (size_t r = 0; r < pl->n_ranks && !rc; r++) {
        const struct coll_grads *c = &pl->grads[r];
        int64_t stage = (int64_t)w->g->ranks[r].id / per_stage;
        double per_pass = c->n ? layer * (double)stage_layers / (double)c->n : 0;
        open = 0;
        for (size_t j = 0; j < c->n && !rc; j++) {
            open += per_pass;
            if (spec.options.overlap_grad_reduce && open >= bucket) {
                rc = add_side_insert(w, c->ready[j], kind,
                                     whatif_coll_split_us(&w->pr.cp1, kind, gr, open * bytes_per) * 1e3, name,
                                     c->optimizer_begin);
                open = 0;
            }
        }
        if (stage == 0)
            open += emb;
        if (stage == w->b->pp - 1 && (stage > 0 || !spec.model.tied_embeddings))
            open += emb;
        if (!rc && c->backward_end != MODEL_NONE)
            rc = add_side_insert(w, c->backward_end, kind,
                                 whatif_coll_split_us(&w->pr.cp1, kind, gr, open * bytes_per) * 1e3, name,
                                 c->optimizer_begin);
        /* the distributed optimizer's updated parameters all-gathered, as
         * the estimator's step has it: at the step's start, the first
         * layer's forward waiting for it */
        if (!rc && op == MODEL_COLL_REDUCESCATTER && c->first_kernel != MODEL_NONE) {
            int ag = MODEL_COLL_ALLGATHER;
            struct coll_group gg = whatif_coll_layout(STRUCT_ROLE_DP, t, whatif_node_of(t, w->pr.hw1), &ag);
            double params = layer * (double)stage_layers + (stage == 0 ? emb : 0) +
                            (stage == w->b->pp - 1 && (stage > 0 || !spec.model.tied_embeddings) ? emb : 0);
            rc = add_side_insert(w, c->first_kernel, ag,
                                 whatif_coll_split_us(&w->pr.cp1, ag, gg,
                                                      params * cost_hw_dtype_bytes(spec.options.dtype == HW_FP32
                                                                                       ? HW_FP32
                                                                                       : HW_BF16)) * 1e3,
                                 "parameter all-gather (what-if)", c->first_forward);
        }
    }
    return rc ? oom(err) : SC_OK;
}

/* Transforms 6 and the re-timing of every collective: transfer by the
 * collective model's ratio, wait by the rank's GPU work's. */
static int collectives(struct wf *w, struct sc_error *err)
{
    const struct model_graph *g = w->g;
    double *busy0 = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *busy0),
           *busy1 = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *busy1);
    if (!busy0 || !busy1) {
        free(busy0);
        free(busy1);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (model_task_on_gpu(t->cls) && t->cls != MODEL_TASK_COMM) {
            busy0[t->rank] += (double)t->dur;
            busy1[t->rank] += w->dur[i];
        }
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (t->cls != MODEL_TASK_COMM)
            continue;
        double scale = busy0[t->rank] > 0 ? busy1[t->rank] / busy0[t->rank] : 1.0;
        double tr = w->transfer[i], r = 1.0;
        if (w->coll_kind[i] >= 0) {
            int k0 = t->sub, k1 = t->sub;
            struct coll_group g0 = whatif_coll_layout(w->st->role[i], w->b, whatif_node_of(w->b, w->pr.hw0), &k0);
            struct coll_group g1 = whatif_coll_layout(w->st->role[i], w->t, whatif_node_of(w->t, w->pr.hw1), &k1);
            double t0 = whatif_coll_split_us(&w->pr.cp0, k0, g0, w->bytes0[i]);
            double t1 = whatif_coll_split_us(&w->pr.cp1, k1, g1, w->bytes0[i] * w->size_ratio[i]);
            if (t0 > 0 && t1 >= 0)
                r = t1 / t0;
        } else {
            r = w->size_ratio[i]; /* no size to time: a transfer as long as what it carries */
        }
        w->dur[i] = tr * r + w->wait[i] * scale;
        w->wait[i] *= scale;
        w->transfer[i] = tr * r;
        if (r != 1.0) {
            w->model_ns[i] = w->transfer[i];
            w->model[i] = WHATIF_COLLECTIVE_MODEL;
            w->retimed[WHATIF_COLLECTIVE_MODEL]++;
        }
    }
    free(busy0);
    free(busy1);
    return SC_OK;
}

/* ---- the answer ---- */

static void describe(const struct wf *w, struct whatif_result *out)
{
    struct whatif_model_use *k = &out->models[WHATIF_KERNEL_MODEL], *c = &out->models[WHATIF_COLLECTIVE_MODEL];
    k->name = "kernel_model";
    c->name = "collective_model";
    k->tasks = w->retimed[WHATIF_KERNEL_MODEL];
    c->tasks = w->retimed[WHATIF_COLLECTIVE_MODEL] + w->n_ins;
    snprintf(k->why, sizeof k->why,
             "measured kernels re-timed by the ratio of the model's times (traced %s, target %s: GEMM ceiling, "
             "memory bandwidth, shapes)",
             w->pr.hw0->id, w->pr.hw1->id);
    snprintf(c->why, sizeof c->why, "collective transfers re-timed by the model's ratio (traced %s, target %s)%s%s",
             w->pr.hw0->id, w->pr.hw1->id,
             w->sizes_unknown ? "; the trace gives no collective sizes: each transfer is its least-waiting "
                                "instance's time, re-timed by the ratio"
                              : "",
             !w->n_ins ? ""
             : w->t->has_zero_stage && w->t->zero_stage >= 3
                 ? "; the collectives the traced step lacks inserted where Megatron runs them (ZeRO-3: each unit's "
                   "gathers and reduce-scatters, as FSDP runs them)"
                 : "; the collectives the traced step lacks inserted where Megatron runs them");
    if (w->st->grad_sync != STRUCT_SYNC_NONE && w->st->by_use[STRUCT_DP_GRADS] && w->b->dp != w->t->dp &&
        !w->pipeline_why[0]) {
        size_t len = strlen(c->why);
        snprintf(c->why + len, sizeof c->why - len,
                 "; the trace's gradient reduction (%s, %.1f collectives a step) re-timed among %lld data-parallel "
                 "ranks",
                 whatif_struct_grad_sync_name(w->st->grad_sync),
                 (double)w->st->by_use[STRUCT_DP_GRADS] / (double)(w->st->steps ? w->st->steps : 1),
                 (long long)w->t->dp);
    }
    if (w->pipeline_why[0]) {
        snprintf(k->why, sizeof k->why, "the host's dispatches of the rebuilt schedule, and the measured passes "
                                        "and optimizer re-timed by the model's ratios (traced %s, target %s)%s",
                 w->pr.hw0->id, w->pr.hw1->id, w->pipeline_why);
        snprintf(c->why, sizeof c->why,
                 "pipeline send/recv of each micro-batch's activations (micro_batch x seq x hidden), the tensor- "
                 "and data-parallel collectives of the rebuilt schedule (target %s)",
                 w->pr.hw1->id);
    }
}

/* How a what-if replays its graph: with critical paths, unless lean. */
static void replay_opts(const struct wf *w, struct model_replay_opts *ro)
{
    if (w->lean)
        model_replay_opts_steps(ro);
    else
        model_replay_opts_default(ro);
}

/* ---- the pipeline transform ---- */

/* The ring's attention at the pace the traced kernels ran: the kernel
 * model's attention efficiency k scaled by the model's time for the
 * target's layers over what the measured kernels took once re-timed to the
 * target's shapes (attention_ns a step, over the traced ranks' layers and
 * micro-batches). */
static void ring_attention_pace(const struct wf *w, const struct job_config *t, double attention_ns,
                                int micro_batches, struct kernel_params *k)
{
    assert(attention_ns > 0);
    double per_layer = whatif_attention_us(&w->pr, t, 1, 0) + whatif_attention_us(&w->pr, t, 1, 1);
    double layers = w->b->layers && w->b->pp ? (double)t->layers / (double)w->b->pp : 0;
    double model_ns = per_layer * 1e3 * layers * (double)(micro_batches > 0 ? micro_batches : 1) *
                      (double)w->g->n_ranks;
    if (per_layer > 0 && model_ns > 0)
        k->attn_efficiency *= model_ns / attention_ns;
}

/* The target's kernels once a step after the backward (the optimizer's,
 * and the gradients' reductions before it: the kernels per_mb leaves
 * out), ns, the mean over its pipeline ranks: the traced ones (a rank's
 * step, the mean over the graph's steps of every rank) at the ratio of the
 * kernel model's for the target (spec t on the target's GPU, costs c) over
 * the base's on the traced GPU. 0 (the model's) when the trace has none
 * or the model cannot time them. */
static int64_t step_end_ns(const struct wf *w, const struct est_spec *t, const struct est_costs *c)
{
    const struct model_graph *g = w->g;
    struct est_spec bs;
    struct est_costs bc;
    struct sc_error ignored;
    double traced = 0, m0 = 0, m1 = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].cls == MODEL_TASK_KERNEL && !w->per_mb[i])
            traced += (double)g->tasks[i].dur;
    if (!(traced > 0) || !g->n_steps || spec_job_config_spec(w->b, w->pr.hw0->id, &bs, &ignored))
        return 0;
    calib_costs_base(w->pr.hw0, &bs, &bc);
    if (synth_step_end_ns(&bs, w->pr.hw0, &bc, &m0, &ignored) || synth_step_end_ns(t, w->pr.hw1, c, &m1, &ignored) ||
        !(m0 > 0) || !(m1 > 0))
        return 0;
    return (int64_t)(traced / (double)g->n_steps * m1 / m0);
}

/* Transform 7: another pipeline-parallel degree or schedule (1F1B or
 * interleaved). The step is Megatron's schedule rebuilt for the target
 * (whatif_pipeline.h) with the passes' work as the transforms before left
 * it; its critical path is measured where it runs a pass (less the part
 * the kernel model re-timed) or the optimizer (step_end_ns), the
 * collective model's for transfers and collectives. */
static int pipeline(struct wf *w, struct whatif_result *out, struct sc_error *err)
{
    const struct job_config *b = w->b;
    struct job_config tc = *w->t;
    struct whatif_passes wp;
    struct est_spec spec;
    struct est_costs costs;
    struct est_pass_costs model;
    struct model_replay_opts ro;
    int rc;
    if (!b->layers || !b->hidden || !b->heads || !b->seq)
        return sc_error_set(err, SC_EINVAL,
                            "set.pp: changing the pipeline-parallel degree needs layers, hidden, heads and seq in "
                            "the job description (to place the layers and size the transfers)");
    int64_t vpp = spec_job_config_vpp(&tc), stages = tc.pp * vpp;
    if (tc.layers % stages && (tc.layers + 2) % stages)
        return sc_error_set(err, SC_EINVAL,
                            vpp > 1 ? "set.vpp: %lld virtual pipeline stages (pp x vpp) do not split %lld layers "
                                      "evenly (nor layers + 2, the embedding and the loss counted as layers), as "
                                      "Megatron-LM requires"
                                    : "set.pp: %lld pipeline stages do not split %lld layers evenly (nor layers + 2, "
                                      "the embedding and the loss counted as layers), as Megatron-LM requires",
                            (long long)stages, (long long)tc.layers);
    /* with a context-parallel target the synthesised ring times each
     * layer's attention (its blocks and key/value exchanges, synth_ops.c): the
     * passes are measured without the attention kernels the ring replaces,
     * whose measured pace the ring keeps (ring_attention_pace) */
    double *pass_dur = NULL, attention_ns = 0;
    if (whatif_cp_of(&tc) > 1) {
        if (!(pass_dur = malloc((w->g->n_tasks ? w->g->n_tasks : 1) * sizeof *pass_dur)))
            return oom(err);
        for (uint32_t i = 0; i < w->g->n_tasks; i++) {
            const struct model_task *t = &w->g->tasks[i];
            int ring = t->cls == MODEL_TASK_KERNEL && t->sub == MODEL_KF_ATTENTION && w->st->layer[i] >= 0;
            pass_dur[i] = ring ? 0 : w->dur[i];
            attention_ns += ring && w->per_mb[i] ? w->dur[i] : 0;
        }
    }
    rc = whatif_measure_passes(w->g, w->st, pass_dur ? pass_dur : w->dur, w->model_ns, w->per_mb, &wp, err);
    free(pass_dur);
    if (rc)
        return rc;
    if (!tc.global_batch) /* weak scaling: the micro-batches per step are kept */
        tc.global_batch = (tc.micro_batch ? tc.micro_batch : 1) * tc.dp * (wp.micro_batches ? wp.micro_batches : 1);
    if ((rc = spec_job_config_spec(&tc, w->pr.hw1->id, &spec, err)))
        return sc_error_prefix(err, "set");
    calib_costs_base(w->pr.hw1, &spec, &costs);
    costs.host_op_us = whatif_host_op_us(w->g, w->b, w->pr.hw0, w->profiler_ns, &costs);
    if (attention_ns > 0)
        ring_attention_pace(w, &tc, attention_ns, wp.micro_batches, &costs.kernel);
    if ((rc = synth_pass_costs(&spec, w->pr.hw1, &costs, &model, err)))
        return rc;
    /* the layers transform repeated each layer's work in place: one
     * layer's pass is the measured one */
    double per_layer = b->layers && tc.layers ? (double)b->layers / (double)tc.layers : 1.0, e = (double)wp.ns.embed_f,
           h = (double)wp.ns.head_f;
    struct est_pass_costs m = wp.ns;
    for (int k = 0; k < 2; k++) {
        m.layer_f[k] = (int64_t)((double)m.layer_f[k] * per_layer);
        m.layer_b[k] = (int64_t)((double)m.layer_b[k] * per_layer);
    }
    /* the embedding's and the loss's forward and backward, split as the
     * kernel model splits them */
    m.embed_f = model.embed_f + model.embed_b > 0 ? (int64_t)(e * (double)model.embed_f /
                                                               (double)(model.embed_f + model.embed_b))
                                                  : 0;
    m.embed_b = (int64_t)e - m.embed_f;
    m.head_f = model.head_f + model.head_b > 0 ? (int64_t)(h * (double)model.head_f /
                                                            (double)(model.head_f + model.head_b))
                                               : 0;
    m.head_b = (int64_t)h - m.head_f;
    m.step_end = step_end_ns(w, &spec, &costs);
    if ((rc = synth_measured(&spec, w->pr.hw1, &costs, EST_DETAIL_KERNEL, &m, !w->lean, &out->graph, err)))
        return rc;
    replay_opts(w, &ro);
    if ((rc = model_replay_run(out->graph, &ro, &out->replay, err)))
        return rc;

    const struct model_graph *c = out->graph;
    const struct model_replay_step *slow = model_replay_slowest(out->replay);
    out->step_ms = slow ? (double)slow->replayed_ns / 1e6 : 0;
    out->host_exposed_ms = slow ? (double)slow->breakdown.host / 1e6 : 0;
    double share = wp.measured_ns > 0 ? wp.modelled_ns / wp.measured_ns : 0, models[WHATIF_MODEL_COUNT] = {0},
           transfer = 0;
    struct whatif_provenance pv = {0};
    for (uint32_t i = 0; i < c->n_tasks; i++) {
        const struct model_task *t = &c->tasks[i];
        int optimizer = t->cls == MODEL_TASK_KERNEL && t->sub == MODEL_KF_OPTIMIZER;
        if (t->cls == MODEL_TASK_COMM) {
            w->retimed[WHATIF_COLLECTIVE_MODEL]++;
            if (slow && t->rank == slow->rank)
                transfer += (double)t->dur;
        } else if (optimizer) {
            w->retimed[WHATIF_KERNEL_MODEL]++;
        }
        /* the schedule's transfers, collectives, optimizer and host
         * dispatches are the models'; the passes' kernels measured but
         * for the share the kernel model re-timed */
        whatif_provenance_add(&pv, t,
                       t->cls == MODEL_TASK_COMM || optimizer || !model_task_on_gpu(t->cls) ? 1 : fmin(share, 1));
    }
    whatif_provenance_set(&pv, out);
    if (slow) {
        for (size_t k = slow->path_first; k < slow->path_first + slow->path_n; k++) {
            const struct model_replay_segment *seg = &out->replay->segments[k];
            const struct model_task *t = &c->tasks[seg->task];
            double len = (double)(seg->end - seg->start);
            if (seg->bound == MODEL_BOUND_HOST || !model_task_on_gpu(t->cls))
                continue;
            if (t->cls == MODEL_TASK_COMM)
                models[WHATIF_COLLECTIVE_MODEL] += len;
            else if (t->cls == MODEL_TASK_KERNEL && t->sub == MODEL_KF_OPTIMIZER)
                models[WHATIF_KERNEL_MODEL] += len;
            else
                models[WHATIF_KERNEL_MODEL] += len * share;
        }
    }
    out->from_models_ms = 0;
    for (int k = 0; k < WHATIF_MODEL_COUNT; k++) {
        out->models[k].ms = models[k] / 1e6;
        out->from_models_ms += out->models[k].ms;
    }
    out->from_measured_ms = out->step_ms - out->from_models_ms;
    out->collective_transfer_ms = transfer / 1e6;
    out->collective_wait_ms = 0;
    char sched[64];
    if (vpp > 1)
        snprintf(sched, sizeof sched, "interleaved schedule (%lld virtual stages per rank)", (long long)vpp);
    else
        snprintf(sched, sizeof sched, "1F1B schedule");
    snprintf(w->pipeline_why, sizeof w->pipeline_why,
             "; pipeline pp %lld -> %lld: Megatron's %s rebuilt for %lld layers and %lld micro-batches with the "
             "traced passes' work (layer forward %.3f ms, backward %.3f ms per micro-batch)",
             (long long)b->pp, (long long)tc.pp, sched, (long long)tc.layers, (long long)spec_micro_batches(&spec),
             (double)m.layer_f[0] / 1e6, (double)m.layer_b[0] / 1e6);
    return SC_OK;
}

static int memory(const struct job_config *t, const struct hw_profile *hw1, struct whatif_result *out,
                  struct sc_error *err)
{
    struct est_spec spec;
    struct est_memory m;
    if (!t->layers || !t->hidden || !t->heads || !t->seq)
        return SC_OK;
    int rc = spec_job_config_spec(t, hw1->id, &spec, err);
    if (!rc)
        rc = spec_memory_estimate(&spec, hw1->hbm_gb, &m, err);
    if (rc)
        return sc_error_prefix(err, "set: the target configuration");
    out->has_memory = 1;
    out->memory_gb_per_gpu = m.gb_per_gpu;
    out->fits = m.fits;
    spec_memory_release(&m);
    return SC_OK;
}

int whatif_error_names_set(const struct sc_error *err)
{
    return err->code == SC_EINVAL && strncmp(err->msg, "set", 3) == 0 && (err->msg[3] == '.' || err->msg[3] == ':');
}

static atomic_ulong base_steps;

unsigned long whatif_base_steps(void)
{
    return atomic_load(&base_steps);
}

int whatif_base_step(const struct model_graph *g, double *ms, struct sc_error *err)
{
    atomic_fetch_add(&base_steps, 1);
    struct model_replay_opts ro;
    struct model_replay *r;
    model_replay_opts_steps(&ro); /* the step times are all it reads */
    int rc = model_replay_run(g, &ro, &r, err);
    if (rc)
        return rc;
    *ms = whatif_mean_step_ms(r, NULL, NULL);
    model_replay_free(r);
    return SC_OK;
}

/* whatif_run once out->structure holds g's structure; base_step_ms is g's
 * whatif_base_step, or negative to have it replayed. */
static int run(const struct model_graph *g, const struct job_config *base, double base_step_ms,
               const struct job_config *set, int lean, int profiled, struct whatif_result *out, struct sc_error *err)
{
    struct wf w;
    struct model_replay_opts ro;
    uint32_t *map = NULL;
    int64_t *idur = NULL, *igap = NULL;
    int rc;
    memset(&w, 0, sizeof w);
    w.lean = lean;
    w.profiled = profiled;
    replay_opts(&w, &ro);
    if ((rc = whatif_job_structure_gpu(g, &w.pr.hw0, NULL, 0, err)))
        goto done;
    out->base = *base;
    snprintf(out->base.gpu, sizeof out->base.gpu, "%s", w.pr.hw0->id);
    /* a description whose batch the traced step could not have run (an
     * MFU above 1) is the job's error */
    if ((base_step_ms < 0 && (rc = whatif_base_step(g, &base_step_ms, err))) ||
        (rc = whatif_job_check_mfu(&out->base, w.pr.hw0, base_step_ms, "", err)))
        goto done;
    spec_job_config_apply(&out->base, set, &out->target);
    if ((rc = unmodelled_changes(&out->base, &out->target, err)) ||
        (rc = expert_parallel_check(&out->base, &out->target, err)))
        goto done;
    /* dp N keeps each rank's work: the global batch follows dp unless the
     * set gives one */
    if (set->dp && !set->global_batch && out->base.global_batch && out->target.dp != out->base.dp)
        out->target.global_batch = out->base.global_batch / out->base.dp * out->target.dp;
    if (out->target.global_batch && out->target.micro_batch &&
        out->target.global_batch % (out->target.micro_batch * out->target.dp)) {
        rc = sc_error_set(err, SC_EINVAL, "set.global_batch: %lld is not divisible by micro_batch x dp = %lld",
                          (long long)out->target.global_batch,
                          (long long)(out->target.micro_batch * out->target.dp));
        goto done;
    }
    if ((rc = spec_job_config_check_schedule(&out->target, "set.", err)))
        goto done;
    /* without global_batch in the description, a dp change keeps the
     * per-rank batch; with it, the micro-batches per step follow */
    w.g = g;
    w.st = &out->structure;
    w.b = &out->base;
    w.t = &out->target;
    whatif_price_init(&w.pr, w.pr.hw0, cost_hw_profile_find(out->target.gpu));
    size_t n = g->n_tasks ? g->n_tasks : 1;
    w.dur = malloc(n * sizeof *w.dur);
    w.gap = malloc(n * sizeof *w.gap);
    w.model_ns = calloc(n, sizeof *w.model_ns);
    w.model = calloc(n, 1);
    w.size_ratio = malloc(n * sizeof *w.size_ratio);
    w.per_mb = calloc(n, 1);
    idur = malloc(n * sizeof *idur);
    igap = malloc(n * sizeof *igap);
    if (!w.dur || !w.gap || !w.model_ns || !w.model || !w.size_ratio || !w.per_mb || !idur || !igap) {
        rc = oom(err);
        goto done;
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        w.dur[i] = (double)g->tasks[i].dur;
        w.gap[i] = (double)g->tasks[i].gap;
        w.size_ratio[i] = 1.0;
    }
    out->profiler_ms = profiled ? 0 : whatif_host_unprofile(g, w.st, w.gap);
    w.profiler_ns = out->profiler_ms * 1e6;
    mark_per_mb(&w);
    if ((rc = split_collectives(&w, err)))
        goto done;
    gpu_type(&w);
    if ((rc = layers(&w, err)) || (rc = shapes(&w, err)))
        goto done;
    whatif_host_activation(g, w.st, &w.pl, w.b, w.t, w.profiled, layers_ratio(w.b, w.t), w.dur, w.gap);
    /* the schedule rebuilt: for another pipeline; for another context-
     * parallel degree (the ring's blocks and exchanges in every layer);
     * and for another tp or dp of a pipelined job, whose stages' waits on
     * one another the traced step's waits cannot carry over */
    if (out->target.pp != out->base.pp || spec_job_config_schedule(&out->target) != spec_job_config_schedule(&out->base) ||
        spec_job_config_vpp(&out->target) != spec_job_config_vpp(&out->base) ||
        whatif_cp_of(&out->target) != whatif_cp_of(&out->base) ||
        (out->base.pp > 1 && (out->target.tp != out->base.tp || out->target.dp != out->base.dp))) {
        if ((rc = pipeline(&w, out, err)) || (rc = memory(&out->target, w.pr.hw1, out, err)))
            goto done;
        out->base_step_ms = base_step_ms;
        out->sizes_unknown = w.sizes_unknown;
        describe(&w, out);
        goto done;
    }
    micro_batches(&w);
    if ((rc = collectives(&w, err)) || (rc = memory(&out->target, w.pr.hw1, out, err)))
        goto done;
    /* a step traced at dp 1 reduces no gradients across replicas (what a
     * trace may class as data-parallel there is a group of one) */
    if (out->base.dp * whatif_cp_of(&out->base) == 1 && out->target.dp * whatif_cp_of(&out->target) > 1 &&
        (rc = insert_grad_reduction(&w, err)))
        goto done;

    for (uint32_t i = 0; i < g->n_tasks; i++) {
        idur[i] = w.dur[i] > 0 ? llround(w.dur[i]) : 0;
        igap[i] = w.gap[i] > 0 ? llround(w.gap[i]) : 0;
        if (g->tasks[i].cls == MODEL_TASK_COMM) {
            out->collective_transfer_ms += w.transfer[i] / 1e6;
            out->collective_wait_ms += w.wait[i] / 1e6;
        }
    }
    if ((rc = whatif_graph_copy(g, idur, igap, w.ins, w.n_ins, &out->graph, &map, err)) ||
        (rc = model_replay_run(out->graph, &ro, &out->replay, err)))
        goto done;
    size_t steps;
    out->step_ms = whatif_mean_step_ms(out->replay, &steps, &out->host_exposed_ms);
    out->base_step_ms = base_step_ms;
    if (!steps)
        steps = 1;
    out->collective_transfer_ms /= (double)steps;
    out->collective_wait_ms /= (double)steps;
    out->sizes_unknown = w.sizes_unknown;
    describe(&w, out);
    rc = whatif_result_attribute(out, g, map, w.dur, w.model_ns, w.model, err);

done:
    free(map);
    free(idur);
    free(igap);
    free(w.dur);
    free(w.gap);
    free(w.model_ns);
    free(w.model);
    free(w.transfer);
    free(w.wait);
    free(w.bytes0);
    free(w.coll_kind);
    free(w.size_ratio);
    free(w.per_mb);
    free(w.ins);
    whatif_coll_placement_release(&w.pl);
    if (rc)
        whatif_release(out);
    return rc;
}

/* out->profiled_step_ms: the same what-if with the profiler's cost kept
 * on the host, for a step that took off some (out released on failure). */
static int profiled_step(const struct model_graph *g, const struct job_config *base, const struct job_config *set,
                         struct whatif_result *out, struct sc_error *err)
{
    struct whatif_result p;
    memset(&p, 0, sizeof p);
    if (!(out->profiler_ms > 0))
        return SC_OK;
    int rc = whatif_job_structure_copy(&out->structure, g->n_tasks, &p.structure, err);
    if (rc == SC_OK && (rc = run(g, base, out->base_step_ms, set, 0, 1, &p, err)) == SC_OK)
        out->profiled_step_ms = p.step_ms;
    whatif_release(&p);
    if (rc)
        whatif_release(out);
    return rc;
}

int whatif_run(const struct model_graph *g, const struct trace_notes_set *notes, const struct job_config *base,
               const struct job_config *set, struct whatif_result *out, struct sc_error *err)
{
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = whatif_job_structure_recover(g, notes, base, &out->structure, err)) || (rc = run(g, base, -1, set, 0, 0, out, err)))
        return rc;
    return profiled_step(g, base, set, out, err);
}

int whatif_run_with(const struct model_graph *g, const struct job_config *base, const struct job_structure *st,
                    double base_step_ms, const struct job_config *set, int lean, struct whatif_result *out,
                    struct sc_error *err)
{
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = whatif_job_structure_copy(st, g->n_tasks, &out->structure, err)) ||
        (rc = run(g, base, base_step_ms, set, lean, 0, out, err)))
        return rc;
    return lean ? SC_OK : profiled_step(g, base, set, out, err);
}
