/* estimator/whatif/whatif.h: a traced job's step transformed to another
 * configuration and replayed (DESIGN.md §5, road 1), saying how much of
 * the answer was measured and how much modelled.
 *
 * The source graph is never modified: the transforms compute a new
 * duration and host gap for every task (and tasks to insert), a copy is
 * built through the graph-building API (graph_copy.h) and replayed as
 * usual. Every transform runs on every what-if, a no-op included, so a
 * no-op checks the whole path. In order:
 *
 *  0. the host without the profiler: each runtime call's host gap less
 *     the profiler's share of the host's time for the operators
 *     torch.profiler recorded in it (whatif_host.c PROFILER_SHARE), so the step
 *     is the job's as it runs unprofiled; a trace without such records
 *     (stepcast's own profiler, nsys, synth) keeps its gaps;
 *  1. collectives split (coll_split.h, shared with the plain replay):
 *     each communication task's traced time is a
 *     transfer and a wait for peers. With the collective's size (the
 *     trace's arguments), the transfer is the collective model's time for
 *     it, at most the traced time; without, it is the time of the
 *     least-waiting instance of that collective on the rank (its shortest),
 *     and the size is the one the model gives that time. The wait is the
 *     rest; untraced peers are taken to run like the traced rank, so the
 *     wait scales with the rank's GPU work.
 *  2. GPU type: each kernel, copy and set re-timed by the kernel model's
 *     ratio between the traced GPU (the trace's device name) and the
 *     target, applied to its measured duration less the fixed cost of a
 *     kernel: the GEMM ceiling's ratio for GEMMs, convolutions and
 *     attention (in the dtype the kernel name shows, else the
 *     description's, else fp32), the strided elementwise model's for
 *     PyTorch's non-vectorised elementwise kernels, the achievable memory
 *     bandwidth's for the rest; collectives get the target's collective parameters.
 *  3. layers: each task of a layer (structure.h) repeated L'/L times in
 *     place: its duration and host gap scaled by L'/L (the layer's measured
 *     time added or removed); the gradients grow with the parameters.
 *  4. shapes: tensor-parallel degree, hidden, FFN, sequence and micro-batch
 *     size. With the model's dimensions in the description, a layer's
 *     GEMMs are re-timed by the kernel model's ratio of the layer's GEMMs
 *     (QKV, output projection, the two MLP matrices) on the target GPU,
 *     attention by flash attention's, memory-bound kernels by the bytes
 *     (tokens x hidden); without them, by FLOPs (tp divides a layer's GEMM
 *     and attention time, micro-batch size multiplies per-token work).
 *     Work outside layers per micro-batch scales with tokens x hidden.
 *     Tensor-parallel collectives are resized (to nothing at tp = 1);
 *     going from tp = 1 to more inserts the collectives Megatron runs, where
 *     it runs them (coll_placement.h: per layer, the embedding, the output
 *     layer and the cross entropy; with or without sequence parallelism),
 *     each timed by the collective model; a trace without transformer
 *     layers is refused.
 *  5. micro-batches per step (global_batch / (micro_batch x dp)): the work
 *     of every micro-batch (all but the optimizer and the data-parallel
 *     gradient collectives) scaled by m'/m.
 *  6. data-parallel degree: data-parallel collectives re-timed for the new
 *     group size and its placement in NVLink domains (the description's
 *     gpus_per_node, else the GPU profile's); from dp = 1, the gradient
 *     reduction the target runs inserted on a communication stream of its
 *     own (buckets overlapped with the backward, all-reduced or, under the
 *     distributed optimizer, reduce-scattered; coll_placement.h finds
 *     where the gradients become ready); without global_batch in the set,
 *     each rank's batch is kept (the global batch follows dp).
 * Then every collective is its transfer re-timed by the collective model's
 * ratio (target over traced configuration) plus its wait.
 *  7. pipeline-parallel degree, and context-parallel degree (each layer's
 *     attention becomes the ring of blocks and key/value exchanges the
 *     estimator's step runs; the layers' per-token work runs on seq / cp
 *     tokens), and tp or dp of a job traced with pp > 1 (whose stages'
 *     traced waits cannot carry over to other stage times):
 *     instead of 5 and 6 and of the copy, the
 *     step is Megatron's schedule rebuilt for the target with the passes'
 *     work as 1-4 left it (whatif_pipeline.h): the stages regrouped, the
 *     micro-batches per step the target's, pipeline transfers, gradient
 *     collectives, the optimizer and the host's dispatches the estimator's
 *     models' (the traced collectives' waits and host gaps are not carried
 *     over). It needs layers, hidden, heads and seq in the description, and
 *     a stage count that splits the layers (or layers + 2) evenly. When the
 * description gives the model's dimensions, the target's memory per GPU
 * and whether it fits come from the memory model (memory.h). */
#ifndef ESTIMATOR_WHATIF_H
#define ESTIMATOR_WHATIF_H

#include "common/error.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/whatif_result.h"

struct model_graph;

/* The what-if `set` (job_config_parse_set_*) of graph g (built from a job)
 * described by `base`, from the notes taken of its traces (trace_notes.h;
 * NULL: taken here from g's traces, which must be whole). SC_EINVAL naming the field (set.X) for what the
 * set asks and cannot be done; any other error is the job's (its
 * description against its traces) or the machine's.
 * whatif_error_names_set tells the two apart. Release with
 * whatif_release() (whatif_result.h). */
int whatif_run(const struct model_graph *g, const struct trace_notes_set *notes, const struct job_config *base,
               const struct job_config *set, struct whatif_result *out, struct sc_error *err);
/* g's mean replayed step, ms: whatif_result.base_step_ms. */
int whatif_base_step(const struct model_graph *g, double *ms, struct sc_error *err);
/* Replays whatif_base_step has run in this process (a plan runs one). */
unsigned long whatif_base_steps(void);
/* whatif_run on what depends on the job alone, found already: g's
 * structure (whatif_job_structure_recover of g and base) and base_step_ms
 * (whatif_base_step of g): a search trying many sets on one job finds them
 * once. `lean` is for a caller that reads only the step, the slowest
 * step's breakdown and the graph's size (a plan): the replay follows no
 * critical path, so nothing is attributed to the models (from_models_ms
 * 0), other steps get no breakdown, and a graph the pipeline transform
 * synthesises keeps no task names (synth_measured); those figures are
 * the same. */
int whatif_run_with(const struct model_graph *g, const struct job_config *base, const struct job_structure *st,
                    double base_step_ms, const struct job_config *set, int lean, struct whatif_result *out,
                    struct sc_error *err);
int whatif_error_names_set(const struct sc_error *err);

#endif
