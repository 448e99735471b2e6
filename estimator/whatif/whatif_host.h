/* estimator/whatif/whatif_host.h: the traced host's time as a what-if
 * (whatif.h) carries it over: without the profiler's cost, with the MLP
 * activation's operators in the target's form, and as the pace at which a
 * rebuilt schedule's host dispatches (whatif_pipeline.h).
 *
 * The what-if keeps the traced host's work at its measured durations; what
 * it changes there is accounted here, from the graph, its structure
 * (structure.h host_ops) and the two job descriptions alone, on the
 * caller's per-task durations and host gaps. */
#ifndef ESTIMATOR_WHATIF_HOST_H
#define ESTIMATOR_WHATIF_HOST_H

#include "estimator/spec/job_config.h"

struct coll_placement;
struct est_costs;
struct hw_profile;
struct job_structure;
struct model_graph;

/* The traced host gaps gap (per task of g, ns) less the profiler's cost
 * per operator it recorded in each (whatif_host.c PROFILER_SHARE; never
 * below nothing); the time taken off a step, ms (0 for a trace without
 * such records). */
double whatif_host_unprofile(const struct model_graph *g, const struct job_structure *st, double *gap);

/* The MLP activation's host work in the target's form: each runtime call
 * of g that launched a kernel of a layer's activation (pl's
 * mlp_activation) keeps the operators in its host gap in the ratio of t's
 * activation operators to b's, each at the traced host's time per
 * operator (the profiler's cost included when `profiled`), and its own
 * time (the launch) in the ratio of their kernels; r: the layers
 * transform's repetition of a layer's work. Edits dur and gap (per task
 * of g, ns). */
void whatif_host_activation(const struct model_graph *g, const struct job_structure *st,
                            const struct coll_placement *pl, const struct job_config *b, const struct job_config *t,
                            int profiled, double r, double *dur, double *gap);

/* The host time per synthesised operation (est_costs.host_op_us) that has
 * traced graph g's host dispatch what it did: c's, scaled by g's host work
 * per step (less profiler_ns, the profiler's cost taken off a step) over
 * that of b's step synthesised on hw0 with c. c's own when b cannot be
 * synthesised. */
double whatif_host_op_us(const struct model_graph *g, const struct job_config *b, const struct hw_profile *hw0,
                         double profiler_ns, const struct est_costs *c);

#endif
