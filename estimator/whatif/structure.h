/* estimator/whatif/structure.h: what a traced job's graph is made of, recovered
 * from the graph and the notes taken of its traces (trace_notes.h) and
 * checked against the job's description (job_config.h), for the what-ifs
 * (whatif.h) to transform and for `stepcast inspect` to show.
 *
 * Layers: from module annotations first (python_function spans named as
 * PyTorch names module calls, "nn.Module: TransformerLayer_3", a class
 * name ending in Layer or Block, as `stepcast synth` writes them), or from
 * FSDP2's units whose module path ends in a layer number ("blocks.3": a
 * unit's forward from its "FSDP::pre_forward (blocks.3)" hook to its
 * "FSDP::post_forward (blocks.3)" one, its backward from its pre_backward
 * hook through its post_backward ones, the hooks' own work, gathering and
 * reducing the unit's, with it); a runtime call inside such a span
 * belongs to that layer, and the GPU work it launched with it. Without
 * them, from the repeating kernel sequence of a layer: on each rank's
 * busiest compute stream, in each step, the longest run of a block of
 * kernels repeated back to back (at least STRUCT_MIN_BLOCK kernels, two of
 * them distinct, at least twice), and then the longest other run with as
 * many repeats (the backward of the same layers); block j of a run is
 * layer j. The layers at either end of a torch.compile'd stack, fused with
 * the embedding or the loss, are the kernels beside a run that hold the
 * block's anchors (the kernels it holds once: attention, GEMMs); where
 * the second run is not found exactly, it is searched again letting a
 * quarter of each block's kernels differ (the fused kernels a compiled
 * stack in mixed precision names differently from layer to layer). With
 * module annotations, which PyTorch records for forward module calls
 * only, the kernels they leave out are searched the same way for runs of
 * as many repeats as there are annotated layers (the backward); FSDP's
 * units place the backward's work themselves.
 *
 * Collectives: a communication task's size and group size come from its
 * collective group (a single traced rank's collective is a group of its
 * own, model/graph.h), else from its kernel's arguments in the trace.
 * Each is a data-parallel collective
 * (gradient reduction, or an all-to-all among the data-parallel replicas),
 * a tensor-parallel one, a pipeline send/recv or other, by its group size
 * where the trace gives it, else by the description: with tp = 1 every
 * collective but pipeline transfers is data-parallel, with dp = 1 tensor-
 * parallel, with both above 1 those inside a layer are tensor-parallel.
 * Point-to-point kernels are the context-parallel ring's key/value
 * exchanges when cp > 1 and they run inside a layer (or pp = 1), pipeline
 * transfers when pp > 1, else the all-to-all of the data-parallel group
 * (NCCL runs all-to-all as send/recv).
 *
 * What launched the work, from the CPU spans around each call (the
 * launching runtime call's enclosing cpu ops and annotations, as PyTorch
 * records them in eager and torch.compile'd runs alike):
 *  - a task is the backward's when its call ran inside the autograd
 *    engine ("autograd::engine::evaluate_function: ..."), the optimizer's
 *    inside its step ("Optimizer.step#AdamW.step"), else the forward's;
 *  - a data-parallel collective is a gradient reduction when launched by
 *    a gradient hook: DDP's and Megatron's buckets run in the hook of
 *    AccumulateGrad, FSDP's in its post-backward hook ("FSDP::post_backward",
 *    "FullyShardedDataParallel._post_backward_hook"); a parameter
 *    gather when launched by FSDP's unshard ("FSDP::all_gather",
 *    "FSDP::pre_forward", "FSDP::pre_backward", FullyShardedDataParallel's
 *    _pre_forward, _pre_backward_hook, _unshard); a buffer broadcast when
 *    a broadcast launched by "DistributedDataParallel.forward" (the model's
 *    forward runs inside it too); other data-parallel
 *    traffic (an embedding's all-to-all) else;
 *  - the gradient reduction is DDP's (all-reduced buckets), ZeRO's
 *    (reduced-scattered buckets with no per-unit gathers: a distributed
 *    optimizer) or FSDP's (gathers per unit, gradients reduce-scattered;
 *    also where FSDP2's units are traced without collectives, a process
 *    group of one rank);
 *  - the step is torch.compile'd when Inductor's kernels ("triton_...")
 *    or compiled regions ("CompiledFunction", "Torch-Compiled Region")
 *    are in it;
 *  - the operators the profiler instrumented in each runtime call's host
 *    gap (host_ops: what a what-if takes the profiler's cost off).
 *
 * Checks (a contradiction is SC_EINVAL naming both sides; job_check.h): tp x cp x pp x dp
 * against the trace's world size; every collective group size the trace
 * gives against the groups the description has (tp, dp, the pipeline's
 * pairs, tp x dp, the world); the gradient reduction against its
 * zero_stage (FSDP's is 3, a distributed optimizer's 1 or 2, DDP's 0); the
 * layers the module annotations or FSDP units show,
 * else those the repeating kernel sequence shows in a step's forward and
 * backward alike, against layers / pp (all of them with pp 1). */
#ifndef ESTIMATOR_STRUCTURE_H
#define ESTIMATOR_STRUCTURE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/spec/job_config.h"

struct model_graph;
struct hw_profile;
struct trace_notes_set;

#define STRUCT_MIN_BLOCK 2

/* A collective's role: data-parallel (the dense weights' gradients, or
 * parameters), tensor-, pipeline- or context-parallel; of an MoE job, the
 * token exchange inside the expert-parallel group (ep) and the experts'
 * gradients reduced over the expert-data-parallel group (edp; classed dp
 * where that group is the data-parallel one). */
enum struct_role { STRUCT_ROLE_NONE, STRUCT_ROLE_DP, STRUCT_ROLE_TP, STRUCT_ROLE_PP, STRUCT_ROLE_CP,
                   STRUCT_ROLE_EP, STRUCT_ROLE_EDP, STRUCT_ROLE_OTHER, STRUCT_ROLE_COUNT };
/* "none", "dp", "tp", "pp", "cp", "ep", "edp", "other" */
const char *whatif_struct_role_name(enum struct_role r);
/* Whether c's experts reduce their gradients apart from the dense
 * weights', over a group told apart by its size: MoE, its
 * expert-data-parallel group neither the data-parallel one nor (with
 * tp > 1) the tensor-parallel one (of one rank, none at all). Their
 * collectives are then classed edp, and the dp ones carry the dense
 * weights alone. */
int whatif_struct_experts_apart(const struct job_config *c);

enum struct_layer_source { STRUCT_LAYERS_NONE, STRUCT_LAYERS_MODULES, STRUCT_LAYERS_REPEAT, STRUCT_LAYERS_UNITS };
/* "module annotations", "repeating kernel sequence", "FSDP units", "none" */
const char *whatif_struct_layer_source_name(enum struct_layer_source s);

enum struct_phase { STRUCT_PHASE_NONE, STRUCT_PHASE_FORWARD, STRUCT_PHASE_BACKWARD, STRUCT_PHASE_OPTIMIZER };

/* What a data-parallel collective is for (STRUCT_DP_NONE: not one). */
enum struct_dp_use { STRUCT_DP_NONE, STRUCT_DP_GRADS, STRUCT_DP_PARAMS, STRUCT_DP_BUFFERS, STRUCT_DP_OTHER,
                     STRUCT_DP_USE_COUNT };
const char *whatif_struct_dp_use_name(enum struct_dp_use u); /* "none", "gradients", "parameters", "buffers", "other" */

enum struct_grad_sync { STRUCT_SYNC_NONE, STRUCT_SYNC_DDP, STRUCT_SYNC_ZERO, STRUCT_SYNC_FSDP };
const char *whatif_struct_grad_sync_name(enum struct_grad_sync s); /* "none", "ddp", "zero", "fsdp" */

struct job_structure {
    int32_t *layer;  /* per task: its layer on the rank (0-based), or -1 */
    uint8_t *role;   /* per task: enum struct_role (communication tasks; NONE for the rest) */
    int64_t *coll_bytes; /* per task: a communication task's size (nccl-tests convention), or -1 */
    int32_t *coll_size;  /* per task: its group's ranks, or 0 when unknown */
    /* per task: enum struct_phase (OPTIMIZER: launched inside the
     * optimizer's step; NONE: the trace records no autograd engine) */
    uint8_t *phase;
    uint8_t *dp_use;     /* per task: enum struct_dp_use */
    /* per task: 1 for GPU work (not a collective) launched while the
     * autograd engine accumulated a gradient (its AccumulateGrad node and
     * the hooks on it: .grad += , DDP's copy into its bucket, Megatron's
     * main_grad add): work on the weights, once a micro-batch, whatever
     * the tokens */
    uint8_t *param_work;
    /* per task: the operators the profiler recorded (Kineto's cpu_op
     * events) that began on a runtime call's thread in the host gap
     * before it; 0 for every other task */
    uint16_t *host_ops;
    /* per task: its GEMM's shape as the op that launched it records it
     * (gemms[gemm[i]]), or UINT32_MAX */
    uint32_t *gemm;
    struct gemm_shape *gemms;
    size_t n_gemms;
    enum struct_layer_source layer_source;
    int layers_per_rank;     /* the most layers found on one rank (0: none) */
    size_t layer_tasks;      /* tasks found inside a layer */
    size_t by_role[STRUCT_ROLE_COUNT];
    double role_ms[STRUCT_ROLE_COUNT]; /* their traced time in all, ms */
    const struct hw_profile *gpu;      /* the traced GPU's profile, or NULL */
    char device_name[96];              /* as the trace names it ("" when absent) */
    int64_t world_size;                /* the trace's, or -1 */
    /* what launched the work */
    size_t backward_tasks;      /* tasks the autograd engine launched */
    size_t param_work_tasks;    /* GPU tasks that accumulate gradients (param_work) */
    int layers_forward, layers_backward; /* the most layers with forward (backward) work in one step of a rank */
    size_t inductor_kernels;    /* kernels torch.compile generated */
    size_t compiled_regions;    /* CompiledFunction / Torch-Compiled Region spans */
    enum struct_grad_sync grad_sync;
    size_t steps;                          /* rank steps, over which the per-step figures are averaged */
    size_t by_use[STRUCT_DP_USE_COUNT];    /* data-parallel collectives by use */
    double use_bytes[STRUCT_DP_USE_COUNT]; /* their bytes in all */
    double use_ms[STRUCT_DP_USE_COUNT];    /* their traced time in all, ms */
    size_t host_ops_total;                 /* host_ops over all tasks */
    double host_ops_ns; /* the host's time inside them (their spans' union less its waits on the GPU) */
};

/* Recover g's structure (g built from a job: g->job must be set) from the
 * notes taken of its traces (trace_notes.h; NULL: taken here from g's
 * traces, which must be whole) and check it against cfg. Release with
 * whatif_job_structure_release(). */
int whatif_job_structure_recover(const struct model_graph *g, const struct trace_notes_set *notes,
                                 const struct job_config *cfg, struct job_structure *out, struct sc_error *err);
/* Structures whatif_job_structure_recover has recovered in this process (what a
 * search over one job, a plan, must do once: whatif_plan.h). */
unsigned long whatif_job_structure_recoveries(void);
void whatif_job_structure_release(struct job_structure *s);
/* A copy of src, recovered from a graph of n_tasks tasks, into *out
 * (released with whatif_job_structure_release). */
int whatif_job_structure_copy(const struct job_structure *src, size_t n_tasks, struct job_structure *out,
                       struct sc_error *err);

/* The traced GPU of a job's graph: the profile of the trace's device name;
 * SC_EINVAL naming the device when no profile lists it. */
int whatif_job_structure_gpu(const struct model_graph *g, const struct hw_profile **out, char *name, size_t n,
                      struct sc_error *err);

/* Whether task i of g is the optimizer's GPU work: a kernel of the
 * optimizer's family (a fused Adam), or one launched inside the
 * optimizer's step (a single-tensor AdamW's elementwise kernels). */
int whatif_struct_is_optimizer(const struct model_graph *g, const struct job_structure *st, uint32_t i);

/* Whether a collective kind (enum model_coll_op) is point-to-point:
 * send/recv, send or recv. */
int whatif_struct_coll_is_p2p(int op);

/* The trace of graph rank r (g->job's), or NULL. */
struct model_trace;
const struct model_trace *whatif_job_structure_trace(const struct model_graph *g, uint16_t r);

#endif
