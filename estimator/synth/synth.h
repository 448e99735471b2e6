/* estimator/synth/synth.h: one training step synthesised from a spec as a
 * dependency graph (DESIGN.md §5, road 2), for the replay to time.
 *
 * Each pipeline rank is one simulated rank: its data-parallel replicas and
 * its tensor- and context-parallel peers behave alike, so they are not
 * simulated; the collectives among them are one-member groups timed by the
 * collective model for the whole group. A rank has a CPU thread that
 * dispatches every GPU operation (each dispatch costs the host's per-op
 * time), a compute stream, and streams for the pipeline's sends and
 * receives, the data-parallel gradient and parameter collectives, and the
 * context-parallel key/value exchange. The schedule is Megatron-LM's: 1F1B
 * or interleaved, the combined pipeline transfers of its schedules each
 * followed by a device synchronisation, gradient buckets reduced as the
 * last micro-batch's backward produces them (overlap_grad_reduce), a
 * gradient-norm all-reduce across the model-parallel ranks before the
 * optimizer, and the distributed optimizer's parameter all-gather
 * overlapped with the next forward (overlap_param_gather). ZeRO stage 3
 * replaces the buckets and that gather as FSDP runs it: each layer's
 * parameters gathered before its forward and its backward in every
 * micro-batch, prefetched one layer ahead with overlap_param_gather, and
 * its gradients reduce-scattered after its backward.
 *
 * Three levels of detail time the same step: `kernel` keeps every kernel
 * and its dispatch as tasks; `layer` merges each run of consecutive GPU
 * operations on one stream that nothing else waits on within a layer, and
 * `stage` merges such runs across layers. A merged task keeps its dispatches
 * as one host task: it cannot start before its first dispatch, nor end
 * before its last dispatch plus its last operation.
 *
 * A GPU task's tag says where in the step it belongs: "forward mb M chunk
 * C" or "backward mb M chunk C" (a pass of micro-batch M on model chunk C;
 * at layer and kernel detail only its part before the first layer: the
 * embedding's forward, the loss's backward), "layer L forward mb M" and
 * "layer L backward mb M" (at layer and kernel detail), "output layer
 * forward mb M" and "embedding backward mb M" (likewise), "parameter
 * gather", "gradient reduction" or "optimizer"; gradient buckets reduced
 * during a backward pass, and pipeline transfers, carry the tag of the work
 * before them, ZeRO-3's gathers and reduce-scatters that of the work they
 * are issued with. Trace writers read them (synth_trace.h). */
#ifndef ESTIMATOR_SYNTH_H
#define ESTIMATOR_SYNTH_H

#include "common/error.h"
#include "estimator/calibrate/cost_set.h"
#include "estimator/synth/detail.h"
#include "estimator/synth/synth_data_parallel.h"
#include "estimator/spec/spec.h"

struct model_graph;

/* The graph of one step of spec s (which spec_load checked), with
 * options.recompute "auto" the recomputation it chooses on the GPU
 * (spec_memory_resolve_recompute; synth_pass_costs too). */
int synth_build(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
              enum est_detail detail, struct model_graph **out, struct sc_error *err);
/* The same graph with no task names or tags (model_gb_skip_names), for a
 * caller that only replays it (synth_estimate): the same tasks, edges,
 * durations and so the same replay, built faster. */
int synth_unnamed(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      enum est_detail detail, struct model_graph **out, struct sc_error *err);

/* How large synth_build's graph of spec s at a detail would be, known
 * before any of it is built: the tasks and edges it reserves room for (an
 * upper bound: passes x operations a pass, a summed pass counted as its
 * operations), and the memory building and replaying it takes at most,
 * EST_SYNTH_BYTES_PER_TASK a task (measured: 150 bytes a task at kernel
 * detail, 195 at layer detail, peak resident, build and replay). What
 * admission control weighs an estimate by before it starts. */
#define EST_SYNTH_BYTES_PER_TASK 256
struct est_synth_size {
    int64_t tasks, edges;
    double bytes;
};
int synth_size(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                   enum est_detail detail, struct est_synth_size *out, struct sc_error *err);

/* A lower bound of the step time, ms, that synth_build's graph of spec s
 * replays to at any detail, without building it. Each pipeline rank's
 * compute stream runs its passes one at a time, every one of them after
 * its first forward pass and before its last backward pass; its first
 * forward waits for model chunk 0's forward of that micro-batch on every
 * rank before it, and its last backward pass (of chunk 0, in both
 * schedules) is followed by that micro-batch's backward on every rank
 * before it, each handed on by a pipeline transfer. The distributed
 * optimizer's parameter all-gather, when the step starts with it, comes
 * before a rank's first forward. Between two of a rank's passes, each send
 * of a batch of transfers (the compute before it, sent) keeps the compute
 * stream idle for a transfer: a batch's sends follow one another on the
 * send stream, the batch's call waits for them, and the next pass is
 * dispatched after the call. So rank r's step is at least: the latest
 * over ranks q <= r of q's gather plus chunk 0's forward and a transfer on
 * each of ranks q..r-1, then the m micro-batches' passes of all its chunks
 * and a transfer per send between them, then chunk 0's backward and a
 * transfer on each of ranks 0..r-1; the
 * bound is the largest over ranks. Under ZeRO stage 3 a rank's step also
 * lasts at least its data-parallel stream's gathers and reduce-scatters,
 * which run one after another; the bound is the larger of the two. The
 * waits for the other side of a transfer, host work, other collectives
 * and the optimizer only add to it. */
int synth_bound(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                    double *ms, struct sc_error *err);

/* synth_bound in two parts: what one micro-batch's passes cost on the
 * compute stream (ns; [0] a dense layer, [1] an MoE layer, the backward
 * with its recomputation, layer_r of it the recomputation, which a layer
 * that options.recompute_layers leaves out does not run), which depends
 * on the model, the cluster, the costs, tp, cp, ep, etp, micro_batch and
 * the options, but not on pp, vpp, dp or the batch; and the bound from
 * them (s with its recomputation resolved, not "auto"). */
int synth_pass_costs(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                         struct est_pass_costs *out, struct sc_error *err);
int synth_bound_of(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       const struct est_pass_costs *pc, double *ms, struct sc_error *err);

/* A tighter lower bound under ZeRO stage 3 (0 otherwise), ms, from the
 * same pass costs, at a cost of its own: each pipeline rank's compute
 * stream and data-parallel stream followed through its passes in the
 * schedule's order, one unit (a layer, the embedding, the output layer) at
 * a time, with only the waits ZeRO-3 puts between them: a unit's
 * parameter gather runs on the stream after the work before it there and
 * after the compute up to the unit before the one computing (with
 * overlap_param_gather; else all compute so far), the unit's compute after
 * its gather and the compute before it (taking its pass cost), a backward
 * unit's gradients reduce-scattered on the stream after its compute and
 * the next gather. Transfers and other ranks, which synth_bound_of
 * counts, are left out: every other task and wait of the graph only
 * delays, so a rank's step is at least the later of its two streams'
 * ends. It follows the ranks one after another and stops once one reaches
 * enough_ms (INFINITY: never): the larger of the ranks followed is still a
 * lower bound, and one that large is all a caller that prunes there asks. */
int synth_bound_z3(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       const struct est_pass_costs *pc, double enough_ms, double *ms, struct sc_error *err);

/* The kernels once a step after the backward passes of spec s (the
 * gradient norm's and the optimizer's), ns, the mean over its pipeline
 * ranks: what synth_measured compares est_pass_costs.step_end with. */
int synth_step_end_ns(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                      double *ns, struct sc_error *err);

/* synth_build with the kernels of each pass scaled so that one micro-batch's
 * pass takes what `measured` gives (ns; the backward with its
 * recomputation; a field <= 0 keeps the model's): a traced job's measured
 * work in Megatron's schedule for another pipeline (whatif.h). Transfers,
 * collectives and the host's dispatches stay the models'; the gradient
 * norm and the optimizer too, at the pace measured->step_end gives where
 * it is above 0 (its mean over the pipeline ranks over the model's).
 * Without `names` the tasks keep no names or tags (model_gb_skip_names),
 * for a caller that reads only the figures: the same graph otherwise. */
int synth_measured(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       enum est_detail detail, const struct est_pass_costs *measured, int names,
                       struct model_graph **out, struct sc_error *err);

#endif
