/* estimator/calibrate/robust_fit.h: the robust regression the kernel-model fits
 * share (gemm_samples.h, mem_samples.h).
 *
 * A measured time t less a known part o is modelled as sum_j b_j x_j (x:
 * kernels, a time at the model's ceiling). Short kernels outnumber long
 * ones by far, so the residuals are relative (sum_j b_j x_j / t against
 * 1 - o / t), and GSL's
 * bisquare weights keep the odd sample (a kernel that waited on another
 * stream, a record cut short) from pulling the fit. */
#ifndef ESTIMATOR_ROBUST_FIT_H
#define ESTIMATOR_ROBUST_FIT_H

#include <stddef.h>

#include "common/error.h"

/* Fit b[p] with standard errors se[p] on n rows of t (all
 * > 0), o (NULL: none) and x[0..p). SC_ENUMERIC naming `what` when GSL
 * fails or a coefficient is not finite; SC_ENOMEM. */
int calib_robust_fit_relative(const double *t, const double *o, const double *const *x, size_t p, size_t n,
                        const char *what, double *b, double *se, struct sc_error *err);

#endif
