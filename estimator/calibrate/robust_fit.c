/* estimator/calibrate/robust_fit.c: relative robust regression with GSL
 * (robust_fit.h). */
#include "estimator/calibrate/robust_fit.h"

#include <math.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>

#include "common/banned.h"

int calib_robust_fit_relative(const double *t, const double *o, const double *const *x, size_t p, size_t n,
                        const char *what, double *b, double *se, struct sc_error *err)
{
    gsl_matrix *X = gsl_matrix_alloc(n, p), *cov = gsl_matrix_alloc(p, p);
    gsl_vector *y = gsl_vector_alloc(n), *coef = gsl_vector_alloc(p);
    gsl_multifit_robust_workspace *w = gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, n, p);
    int status = SC_OK;
    if (!X || !cov || !y || !coef || !w) {
        status = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < p; j++)
            gsl_matrix_set(X, i, j, x[j][i] / t[i]);
        gsl_vector_set(y, i, 1 - (o ? o[i] / t[i] : 0));
    }
    gsl_set_error_handler_off(); /* GSL's default handler aborts; its status is checked */
    int st = gsl_multifit_robust(X, y, coef, cov, w);
    int finite = 1;
    for (size_t j = 0; j < p; j++) {
        b[j] = gsl_vector_get(coef, j);
        se[j] = sqrt(gsl_matrix_get(cov, j, j));
        finite &= isfinite(b[j]);
    }
    if ((st != GSL_SUCCESS && st != GSL_EMAXITER) || !finite)
        status = sc_error_set(err, SC_ENUMERIC, "the %s fit failed (GSL: %s)", what, gsl_strerror(st));
out:
    gsl_multifit_robust_free(w);
    gsl_vector_free(coef);
    gsl_vector_free(y);
    gsl_matrix_free(cov);
    gsl_matrix_free(X);
    return status;
}
