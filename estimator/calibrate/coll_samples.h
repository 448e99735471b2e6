/* estimator/calibrate/coll_samples.h: collectives with known sizes in a trace, as
 * runs the collective model can be fitted to and checked against.
 *
 * An NCCL kernel that carries the collective's metadata (PyTorch 2.x puts
 * `Collective name`, `In msg nelems`, `Out msg nelems`, `dtype` and `Group
 * size` on it) is one sample: its size in the nccl-tests convention (the
 * whole buffer: the output of an all-gather, the input of the others) and
 * its duration. Samples are grouped by kind and group size into runs (one
 * row per sample, out-of-place time only). A kernel's duration includes
 * waiting for the slowest peer, which the robust fits treat as outliers. */
#ifndef ESTIMATOR_COLL_SAMPLES_H
#define ESTIMATOR_COLL_SAMPLES_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/estimate_check.h"
#include "estimator/calibrate/nccl_tests.h"
#include "model/trace.h"

struct coll_runs {
    struct nct_run *v; /* each owns its rows */
    size_t n, cap;
};

/* Add a trace's sized collectives to the runs (a new run per kind and
 * group size not seen before). Kernels without a size, a known dtype, a
 * group size of 2 or more or a modelled kind are left out. */
int calib_coll_runs_from_trace(const struct model_trace *t, struct coll_runs *runs, struct sc_error *err);

void calib_coll_runs_release(struct coll_runs *r);

/* The collective model against a run's samples of at least `min_bytes`,
 * the group laid out with `ranks_per_domain` members in each NVLink
 * domain. */
struct coll_params;
int calib_coll_run_check(const struct coll_params *p, const struct nct_run *run, int ranks_per_domain,
                   double min_bytes, struct estimate_check *out, struct sc_error *err);

#endif
