/* estimator/synth/synth_compare.h: a traced job's GPU time per kernel family
 * beside the time `stepcast estimate` synthesises for the same
 * configuration (`stepcast whatif --compare-synth`), so users see which
 * cost model is wrong for their job before trusting a what-if that leans
 * on it.
 *
 * Traced: the summed durations of the graph's GPU tasks of each family
 * (communication kernels as communication, copies and sets as copy) per
 * rank and modelled step. Synthesised: the same sums over the step
 * synth_build() builds at kernel detail from the description's spec on the
 * traced GPU, per simulated rank (a pipeline stage). */
#ifndef ESTIMATOR_SYNTH_COMPARE_H
#define ESTIMATOR_SYNTH_COMPARE_H

#include "common/error.h"
#include "estimator/spec/job_config.h"
#include "model/kernel_family.h"

struct model_graph;
struct hw_profile;

struct synth_compare {
    double traced_ms[MODEL_KF_COUNT], synth_ms[MODEL_KF_COUNT]; /* per rank and step */
    double traced_kernels[MODEL_KF_COUNT], synth_kernels[MODEL_KF_COUNT];
};

/* Compare graph g (traced on hw) with the synthesised step of cfg.
 * SC_EINVAL when cfg lacks the model's dimensions. */
int synth_compare(const struct model_graph *g, const struct job_config *cfg, const struct hw_profile *hw,
                  struct synth_compare *out, struct sc_error *err);

#endif
