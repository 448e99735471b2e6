/* estimator/calibrate/coll_fit.h: the collective model's lines fitted to
 * an nccl-tests run (or a trace's sized collectives, coll_samples.h).
 *
 * Calibration, kept apart from the model it fits: the cost model
 * (costs/collective_model.h) says what a struct coll_fit means, this
 * module makes one from measured rows. */
#ifndef ESTIMATOR_COLL_FIT_H
#define ESTIMATOR_COLL_FIT_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/collective_model.h"

struct nct_run;

/* Fit T = alpha + S x factor(n) / busbw on each size range of a run by
 * robust regression (GSL, bisquare) on relative residuals. Ranges with
 * fewer than 3 samples are fitted for busbw alone when no range has 3.
 * SC_EINVAL when the run's kind or group size is unknown; SC_ENUMERIC when
 * GSL fails. *n_out fits are written (at most COLL_FIT_RANGES). */
int calib_coll_fit_run(const struct nct_run *run, struct coll_fit *fits, size_t *n_out,
                 struct sc_error *err);

#endif
