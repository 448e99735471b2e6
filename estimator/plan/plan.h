/* estimator/plan/plan.h: the planner: the best configurations of a model on a
 * number of GPUs (DESIGN.md §5, "Planner").
 *
 * The input is a spec whose parallel and options objects give only what is
 * fixed (spec_parse_template), a GPU count N and an objective. The
 * space is every combination of
 *   tp         dividing N and the NVLink domain (gpus_per_node): tensor
 *              parallelism stays within a node;
 *   cp         dividing N / tp, for sequences of 8,192 tokens and more (else 1);
 *   pp         dividing N / (tp x cp) and the layers (or layers + 2: the
 *              embedding and the loss counted as layers, as Megatron-LM's
 *              account-for-embedding and -loss options do);
 *   dp         N / (tp x cp x pp): exactly N GPUs are used;
 *   ep         (MoE) dividing the experts;
 *   micro_batch a power of two up to EST_PLAN_MAX_MICRO_BATCH;
 *   schedule   1f1b, or interleaved with vpp 2 to EST_PLAN_MAX_VPP virtual
 *              stages per rank where the layers (or layers + 2, the
 *              embedding and loss counting as layers) split evenly over
 *              pp x vpp, as Megatron-LM requires;
 *   recompute  none, selective, full (a spec's "auto": for each
 *              combination, the least of them that fits);
 *   sequence_parallel  off, and on when tp > 1;
 *   zero_stage 0 to 3 when there is more than one data-parallel rank
 *              (dp x cp > 1), else 0;
 * less what the spec fixes (a given value is the only one tried). With
 * up_to, also every smaller GPU count that is a power of two or a multiple
 * of gpus_per_node. A combination the spec's own checks refuse (heads,
 * kv_heads, ffn, the sequence, the batch or the experts not divisible, too
 * many virtual stages) counts as infeasible by divisibility; one whose
 * memory does not fit (estimator/spec/memory.h) as infeasible by memory.
 *
 * Every other combination is evaluated, or pruned. An evaluation is a full
 * estimate (estimate.h) at the default detail, made in this run. A pruned
 * combination is one that provably cannot enter the top K: its lower bound
 * (synth_bound, times GPUs for the cost objective) is above the K-th
 * best found so far; combinations are evaluated in order of their bounds,
 * so the first one past the K-th best ends the search. A combination that
 * comes up is first given the evaluator's tighter bound, if it has one
 * (synth_bound_z3 under ZeRO stage 3); when that is larger it goes
 * back in line with it, so it is evaluated only if nothing with a smaller
 * bound has pushed the K-th best below it. An evaluator without a bound (a
 * what-if of a traced model, say) prunes nothing.
 *
 * Objectives: `time` ranks by step time, `cost` by GPU-hours per million
 * tokens (the same order as dollars when a price is given); ties by step
 * time, then by the order of enumeration.
 *
 * At a risk P (0.5 to 1) with bands (bands.h), both take the step time at
 * risk, plan_band_at_risk: the estimate over 1 + the error quantile at
 * 1 - P of the candidate's region, so a region where the estimator has
 * been optimistic ranks lower; a candidate whose region has no band
 * ranks by its estimate and is marked extrapolated. The region's factor
 * is known before the estimate, so the bounds scale with it and pruning
 * stays exact. Each row carries what its band says (est_band_view); the
 * top row is estimated again at kernel detail when the evaluator can. */
#ifndef ESTIMATOR_PLAN_H
#define ESTIMATOR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/plan/bands.h"
#include "estimator/synth/estimate.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"

#define EST_PLAN_MAX_MICRO_BATCH 16
#define EST_PLAN_MAX_VPP 8
#define EST_PLAN_MAX_TOP 1000
/* The largest space planned (combinations before any check). */
#define EST_PLAN_MAX_SPACE 2000000

enum est_objective { EST_OBJECTIVE_TIME, EST_OBJECTIVE_COST };

const char *plan_objective_name(enum est_objective o);
/* "time" or "cost"; SC_EINVAL naming them otherwise. */
int plan_objective_parse(const char *s, enum est_objective *out, struct sc_error *err);

struct est_plan_request {
    struct est_spec spec;         /* the template (spec_parse_template) */
    struct est_spec_given given;  /* which of its keys are fixed */
    int64_t gpus;
    int up_to;
    size_t top;
    enum est_objective objective;
    /* the bands rows are ranked at and marked by (NULL: none: rows rank by
     * their estimates, with no band), and the risk, 0.5 to 1 (0: 0.5) */
    const struct est_bands *bands;
    double risk;
};

/* Parse a planning spec document into req->spec and req->given: a spec
 * whose parallel and options values are fixed where given, searched where
 * not. parallel.global_batch is required (the batch is what a plan keeps);
 * a GPU with no profile is refused. SC_EINVAL / SC_EPARSE naming the field. */
int plan_parse_spec(const char *text, size_t len, struct est_plan_request *req,
                        struct sc_error *err);

/* What evaluates a candidate. The default (plan_evaluator_estimate)
 * estimates it from its spec; another evaluator (a what-if of a traced
 * model) plugs in here. bound may be NULL: nothing is pruned. refine (may
 * be NULL; used only with bound) is another lower bound that costs more:
 * it is asked once of each candidate when the candidate's bound first
 * comes up in the search, and the larger of the two orders it from then
 * on; it may stop at any lower bound of at least enough_ms (the step time
 * at which the candidate would be pruned now; INFINITY while the top rows
 * are not all found). */
struct est_plan_evaluator {
    int (*evaluate)(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err);
    int (*bound)(void *ctx, const struct est_spec *s, double *step_ms, struct sc_error *err);
    void *ctx;
    int (*refine)(void *ctx, const struct est_spec *s, double enough_ms, double *step_ms, struct sc_error *err);
    /* the top row estimated again at kernel detail; NULL: not done */
    int (*detail)(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err);
};

/* The estimator's evaluator: the spec's GPU profile hw and costs c (the
 * same calib_costs_default and cluster profile `stepcast estimate` applies),
 * at the default detail. ctx points at this struct. Its bound keeps the
 * pass costs (synth.h) of the layouts it has seen, which hold for one
 * plan's candidates (one model and cluster): plan_evaluator_estimate()
 * empties them. */
#define EST_PLAN_MEMO 256
struct est_plan_pass_key {
    int64_t tp, cp, ep, etp, micro_batch, sp, recompute, dtype, attention, tp_comm_overlap;
};
struct est_plan_estimator {
    const struct hw_profile *hw;
    struct est_costs costs;
    struct est_plan_pass_key memo_key[EST_PLAN_MEMO];
    struct est_pass_costs memo[EST_PLAN_MEMO];
    size_t n_memo, next_memo;
};
void plan_evaluator_estimate(struct est_plan_estimator *e, struct est_plan_evaluator *out);

struct est_plan_row {
    struct est_spec spec; /* the configuration, complete */
    struct est_estimate estimate;
    double objective;     /* step ms, or GPU-hours per million tokens (at the risk) */
    struct est_band_view band; /* with bands: its band, step time at risk, extrapolated */
    int has_kernel;            /* the top row: kernel holds its estimate at kernel detail */
    struct est_estimate kernel;
};

struct est_plan {
    int64_t space;       /* combinations enumerated */
    int64_t evaluated, pruned, infeasible_memory, infeasible_divisibility;
    int cancelled;       /* progress asked to stop: the counts are partial, no rows */
    int banded;          /* the request had bands: rows carry theirs */
    double risk;         /* the risk ranked at (0.5 to 1) */
    struct est_plan_row *rows; /* best first, malloc'd */
    size_t n_rows;
};

/* Progress: `done` of `total` combinations dealt with (checked, evaluated
 * or pruned), reported every 64 combinations checked, after each
 * evaluation (each takes milliseconds) and at the end. Returning nonzero
 * cancels the search, so a cancel is seen within one evaluation. */
typedef int (*est_plan_progress_fn)(void *ctx, int64_t done, int64_t total);

/* The number of combinations req spans (before checks); counting stops
 * soon after it passes EST_PLAN_MAX_SPACE, so a larger figure is a lower
 * bound of the size. */
int64_t plan_space(const struct est_plan_request *req);

/* Plan: SC_ELIMIT when the space is over EST_PLAN_MAX_SPACE; other errors
 * are the evaluator's. Release with plan_release(). */
int plan_run(const struct est_plan_request *req, const struct est_plan_evaluator *ev,
                 est_plan_progress_fn progress, void *progress_ctx, struct est_plan *out,
                 struct sc_error *err);
void plan_release(struct est_plan *p);

#endif
