/* estimator/whatif/whatif_plan.h: the planner (plan.h) over a traced job: each
 * candidate is the what-if (whatif.h) of the job's graph on that
 * configuration, so the job's own kernels and overheads carry over
 * (`stepcast plan --from-model`, POST /v1/models/{id}/plan).
 *
 * The template is the job description's spec (spec_job_config_spec_text: its
 * model, layers, hidden, heads and seq required, with its global batch,
 * required: a plan keeps it) on the traced GPU. A what-if changes tp, pp,
 * dp and micro_batch (micro_batch only when the description gives it), so
 * those are searched and the rest is fixed at what the what-if keeps:
 * the description's cp, ep, recomputation, sequence parallelism and ZeRO
 * stage (the spec's defaults where it gives none), the 1F1B schedule.
 * A description its traces contradict (job_check.h: the world size, an
 * MFU above 1 in the traced step) is refused, naming the field after
 * "config.". Memory and divisibility are checked as for any plan. The
 * evaluator has no bound: nothing is pruned, every feasible candidate is
 * a what-if. */
#ifndef ESTIMATOR_WHATIF_PLAN_H
#define ESTIMATOR_WHATIF_PLAN_H

#include "common/error.h"
#include "estimator/spec/job_config.h"
#include "estimator/plan/plan.h"
#include "estimator/whatif/structure.h"

struct model_graph;

struct whatif_planner {
    const struct model_graph *g;     /* borrowed */
    struct job_config base;          /* its description */
    const struct hw_profile *hw;     /* the traced GPU */
    struct job_structure structure;  /* g's, recovered once for every candidate */
    double base_step_ms;             /* g's replayed step (whatif_base_step), once too */
};

/* The template and fixed keys of req (req->gpus, up_to, top and objective
 * are the caller's) and the planner w for graph g described by base, its
 * structure recovered from notes (whatif_job_structure_recover).
 * SC_EINVAL naming what the description lacks ("config.global_batch: ...")
 * or the trace's GPU without a profile. */
int whatif_plan_request(const struct model_graph *g, const struct trace_notes_set *notes, const struct job_config *base,
                        struct est_plan_request *req, struct whatif_planner *w, struct sc_error *err);

/* The what-if set of candidate s: its tp, pp, dp, micro-batch (when the
 * description gives one), global batch and schedule. */
void whatif_plan_set(const struct whatif_planner *w, const struct est_spec *s, struct job_config *set);

/* The evaluator: the what-if of w's graph on a candidate. ctx is w. */
void whatif_plan_evaluator(struct whatif_planner *w, struct est_plan_evaluator *out);
/* What whatif_plan_request made (a zeroed or released w is fine). */
void whatif_plan_release(struct whatif_planner *w);

#endif
