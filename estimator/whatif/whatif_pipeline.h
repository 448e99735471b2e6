/* estimator/whatif/whatif_pipeline.h: a traced job's step on another pipeline-
 * parallel degree (the what-if's pipeline transform, whatif.h).
 *
 * Regrouping stages changes which rank waits for which, so the step is not
 * the source graph with other durations: it is Megatron-LM's schedule
 * rebuilt (synth_measured, synth.h: the target's layers placed on its
 * stages by placement.h, 1F1B, or interleaved when the description gives
 * virtual stages, for the target's micro-batches per step) with the traced
 * job's own work in every pass.
 *
 * The work of one micro-batch's passes is measured on the traced ranks'
 * GPU streams, after the what-if's other transforms (GPU type, layers,
 * shapes) have re-timed it: a layer's forward and backward (the mean over
 * every layer pass found; a run of one layer's kernels is split into
 * passes and classified by its kernel count, whatif_pipeline.c), the
 * embedding's (the work outside layers that does not follow a forward
 * pass) and the output layer's and loss's (between a forward pass and the
 * next backward one), each over the micro-batches seen (the forward passes
 * of a rank's first layer). The rest of the step (pipeline transfers timed
 * by the collective model for the activations of the description's
 * dimensions, the gradient collectives, the optimizer, the host's
 * dispatches) is the estimator's models', the host dispatching at the
 * traced job's pace (whatif_host.h: whatif_host_op_us). */
#ifndef ESTIMATOR_WHATIF_PIPELINE_H
#define ESTIMATOR_WHATIF_PIPELINE_H

#include "common/error.h"
#include "estimator/synth/synth.h"

struct model_graph;
struct job_structure;

struct whatif_passes {
    struct est_pass_costs ns; /* per micro-batch; the embedding's and the loss's forward and backward together
                                 in embed_f and head_f */
    double modelled_ns;       /* of the measured layer work: the part the kernel model re-timed */
    double measured_ns;       /* all of it */
    int micro_batches;        /* seen per step on the traced ranks (the first layer's forward passes) */
};

/* The passes of graph g with per-task durations dur (ns) of which model_ns
 * a model gave; per_mb marks the work done once per micro-batch.
 * SC_EINVAL naming set.pp when no layer pass is found. */
int whatif_measure_passes(const struct model_graph *g, const struct job_structure *st, const double *dur,
                          const double *model_ns, const uint8_t *per_mb, struct whatif_passes *out,
                          struct sc_error *err);

#endif
