/* estimator/synth/synth_compare.c: traced against synthesised time per kernel
 * family (synth_compare.h). */
#include "estimator/synth/synth_compare.h"

#include <string.h>

#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"
#include "model/graph.h"
#include "common/banned.h"

/* The family a GPU task counts under. */
static int family_of(const struct model_task *t)
{
    if (t->cls == MODEL_TASK_COMM)
        return MODEL_KF_COMMUNICATION;
    if (t->cls == MODEL_TASK_COPY || t->cls == MODEL_TASK_SET)
        return MODEL_KF_COPY;
    return t->sub < MODEL_KF_COUNT ? t->sub : MODEL_KF_OTHER;
}

/* Sums of g's GPU work per family, divided by `per`. */
static void sums(const struct model_graph *g, double per, double *ms, double *kernels)
{
    for (size_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (!model_task_on_gpu(t->cls))
            continue;
        int f = family_of(t);
        ms[f] += (double)t->dur / 1e6 / per;
        kernels[f] += 1.0 / per;
    }
}

int synth_compare(const struct model_graph *g, const struct job_config *cfg, const struct hw_profile *hw,
                  struct synth_compare *out, struct sc_error *err)
{
    struct est_spec spec;
    struct est_costs costs;
    struct model_graph *s = NULL;
    memset(out, 0, sizeof *out);
    int rc = spec_job_config_spec(cfg, hw->id, &spec, err);
    if (rc)
        return sc_error_prefix(err, "--compare-synth");
    calib_costs_default(hw, &spec, &costs);
    if ((rc = synth_build(&spec, hw, &costs, EST_DETAIL_KERNEL, &s, err)))
        return rc;
    sums(g, g->n_steps ? (double)g->n_steps : 1.0, out->traced_ms, out->traced_kernels);
    sums(s, s->n_ranks ? (double)s->n_ranks : 1.0, out->synth_ms, out->synth_kernels);
    model_graph_free(s);
    return SC_OK;
}
