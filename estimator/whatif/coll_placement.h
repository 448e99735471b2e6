/* estimator/whatif/coll_placement.h: where Megatron-LM and Transformer Engine
 * run the collectives a traced step lacks, found in that step, for the
 * what-ifs that add tensor or data parallelism to a job traced without it
 * (whatif.h: tp 1 -> more, dp 1 -> more).
 *
 * The traced step's layers (structure.h) are walked on each GPU stream
 * as passes: a layer's kernels back to back (memory sets and copies
 * between them aside). A pass is a forward one or a backward one by its
 * attention kernel's name (a backward kernel is "bprop", "bwd",
 * "backward" or cutlass's "cutlassB"), else by its GEMMs (a backward pass
 * runs two for each of the forward's). A layer pass that is a
 * transformer layer's has at least four GEMMs (QKV, output projection,
 * the MLP's two) and an attention or softmax kernel; a trace with none
 * (DLRM, ResNet, an attention benchmark) cannot take tensor parallelism
 * (whatif_coll_placement_tp_check says why).
 *
 * Tensor parallelism, per layer, as Megatron's ColumnParallelLinear and
 * RowParallelLinear run it (the forward's GEMMs in order: QKV, attention,
 * output projection, MLP in, MLP out; the backward's the reverse, each
 * linear's input gradient then its weight gradient):
 *  - without sequence parallelism: forward, an all-reduce after the
 *    output projection and one after the MLP's last GEMM; backward, one
 *    after the MLP's input gradient and one after QKV's;
 *  - with it: forward, an all-gather before QKV and before the MLP, a
 *    reduce-scatter after the output projection and after the MLP;
 *    backward, an all-gather of the output gradient before each block's
 *    backward, a reduce-scatter after each block's input gradient, and
 *    the two all-gathers that re-gather the sequence-sharded inputs for
 *    the weight gradients.
 * Outside the layers, per micro-batch: the vocabulary-parallel
 * embedding's all-reduce (reduce-scatter with sequence parallelism) after
 * the work before the first layer's forward; where a loss is computed
 * (a softmax or loss kernel between the last layer's forward and its
 * backward), the output layer's input all-gathered first with sequence
 * parallelism, the vocabulary-parallel cross entropy's three small
 * all-reduces (the logits' maximum, the target logit, the sum of
 * exponentials: micro-batch x seq fp32 values each) after its first
 * kernel, and the output layer's backward all-reduce (reduce-scatter)
 * after its first GEMM after that. A pass recomputed before its backward
 * (full recomputation) is a forward pass and gets the forward's.
 *
 * The MLP activation's kernels of each transformer pass (between the
 * MLP's two GEMMs forward; between the gradients of its second GEMM and
 * its first's input gradient backward) are marked, for a what-if that
 * changes the FFN or the gating to re-time them together.
 *
 * Data parallelism: where the gradients of the step's last micro-batch
 * become ready, for the buckets a DDP or distributed optimizer reduces
 * as backward runs: the end of each of its backward layer passes, the end
 * of the backward (the last kernel before the optimizer), and the
 * optimizer's first kernel, which waits for them.
 *
 * FSDP (ZeRO-3): the units whose parameters are gathered before they
 * compute, in every micro-batch, in the order they run: each layer's
 * forward pass; each backward pass (with the forward run again before it
 * under full recomputation: one unit); the embedding's forward, the work
 * before a micro-batch's first forward pass (after a backward, as many of
 * its last kernels as the step ran before its first pass, the rest being
 * the embedding's backward); the output layer's forward and backward, the
 * work between a micro-batch's last forward pass and its first backward
 * split after its first softmax or loss kernel (a stage without a loss
 * has neither); and the embedding's backward, the work after the last
 * backward pass up to the optimizer. */
#ifndef ESTIMATOR_COLL_PLACEMENT_H
#define ESTIMATOR_COLL_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct model_graph;
struct job_structure;

/* What a collective carries: a layer's activations (micro-batch x seq x
 * hidden, the full tensor: an all-gather's output, a reduce-scatter's
 * input) or one fp32 value a token (the cross entropy's statistics). */
enum tp_tensor { TP_TENSOR_ACTIVATION, TP_TENSOR_TOKEN_FP32 };

struct tp_collective {
    uint32_t after;   /* the source task it follows on its stream */
    uint8_t op;       /* enum model_coll_op */
    uint8_t tensor;   /* enum tp_tensor */
    uint8_t in_layer; /* a layer's (else the embedding's, the output layer's, the loss's) */
    const char *name; /* static */
};

/* Where a rank's gradients become ready, on its busiest stream: the last
 * kernel of each backward layer pass of the last micro-batch (at most
 * layers_per_rank of them, in order; malloc'd), the last kernel before
 * the optimizer, the optimizer's first; and the step's first kernel and
 * first layer's forward, which the distributed optimizer's parameter
 * all-gather comes between (MODEL_NONE for what the rank lacks). */
enum coll_unit_kind { COLL_UNIT_LAYER, COLL_UNIT_EMBEDDING, COLL_UNIT_OUTPUT };

/* An FSDP unit's kernels: it starts before `first` (the next unit's
 * first kernel when it has none) after `prev` (the kernel before it,
 * MODEL_NONE at the stream's start), and ends with `last` (prev when it
 * has none). */
struct coll_unit {
    uint32_t first, prev, last;
    uint8_t kind; /* enum coll_unit_kind */
    uint8_t backward;
};

struct coll_grads {
    uint32_t *ready;
    size_t n, kernels;
    uint32_t backward_end, optimizer_begin, first_kernel, first_forward;
    /* the FSDP units of every micro-batch in order (malloc'd), and what
     * the step's first gathers follow: the host's launch of the stream's
     * first kernel (else that kernel) */
    struct coll_unit *units;
    size_t n_units, cap_units;
    uint32_t start;
};

enum { COLL_MLP_FORWARD = 1, COLL_MLP_BACKWARD = 2 };

struct coll_placement {
    struct tp_collective *v; /* in the order of the walk; malloc'd */
    size_t n, cap;
    /* per rank of the graph (n_ranks of them; malloc'd) */
    struct coll_grads *grads;
    size_t n_ranks;
    /* per task of the graph: 1 for the kernels where a loss is computed
     * other than norms (the output layer, the cross entropy and their
     * backward, all over the logits), which Megatron splits over the
     * vocabulary; malloc'd */
    uint8_t *vocab_parallel;
    /* per task: the MLP activation's kernels of a transformer layer pass,
     * between the MLP's two GEMMs (COLL_MLP_FORWARD) or between the output
     * GEMM's gradients and the input GEMM's (COLL_MLP_BACKWARD); 0 for the
     * rest; malloc'd */
    uint8_t *mlp_activation;
    size_t forward_passes, backward_passes; /* transformer layer passes found */
};

/* The tensor-parallel collectives of g's step (structure st) with or
 * without sequence parallelism, and where its gradients become ready.
 * Release with whatif_coll_placement_release. */
int whatif_coll_placement_find(const struct model_graph *g, const struct job_structure *st, int sequence_parallel,
                        struct coll_placement *out, struct sc_error *err);
/* SC_EINVAL naming set.tp, saying why, when p found no transformer layer. */
int whatif_coll_placement_tp_check(const struct coll_placement *p, const struct job_structure *st, struct sc_error *err);
void whatif_coll_placement_release(struct coll_placement *p);

#endif
