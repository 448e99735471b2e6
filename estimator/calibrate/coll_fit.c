/* estimator/calibrate/coll_fit.c: the collective model's alpha-beta lines
 * fitted to an nccl-tests run by robust regression (coll_fit.h). */
#include "estimator/calibrate/coll_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>

#include "estimator/calibrate/nccl_tests.h"
#include "common/banned.h"

struct sample {
    double x; /* bytes x factor */
    double t; /* us */
};

static void fit_quality(const struct sample *s, size_t n, double a, double c, struct coll_fit *f)
{
    double sum = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (a + c * s[i].x) / s[i].t - 1;
        sum += e * e;
        if (fabs(e) > mx)
            mx = fabs(e);
    }
    f->rms_err_pct = 100 * sqrt(sum / (double)n);
    f->max_err_pct = 100 * mx;
}

/* Robust fit of 1 = a/t + c x/t (relative residuals) over the columns
 * asked: both (a, c), a alone (c = 0), or c alone (a = 0). */
static int robust(const struct sample *s, size_t n, int use_a, int use_c, double *a, double *c,
                  double *se_a, double *se_c)
{
    size_t p = (size_t)(use_a + use_c);
    gsl_matrix *X = gsl_matrix_alloc(n, p);
    gsl_vector *y = gsl_vector_alloc(n), *b = gsl_vector_alloc(p);
    gsl_matrix *cov = gsl_matrix_alloc(p, p);
    gsl_multifit_robust_workspace *w = gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, n, p);
    int rc = -1;
    if (X && y && b && cov && w) {
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            if (use_a)
                gsl_matrix_set(X, i, j++, 1 / s[i].t);
            if (use_c)
                gsl_matrix_set(X, i, j, s[i].x / s[i].t);
            gsl_vector_set(y, i, 1);
        }
        gsl_set_error_handler_off(); /* GSL's default handler aborts; its status is checked */
        int st = gsl_multifit_robust(X, y, b, cov, w);
        if (st == GSL_SUCCESS || st == GSL_EMAXITER) {
            size_t j = 0;
            *a = *se_a = *c = *se_c = 0;
            if (use_a) {
                *a = gsl_vector_get(b, 0);
                *se_a = sqrt(gsl_matrix_get(cov, 0, 0));
                j++;
            }
            if (use_c) {
                *c = gsl_vector_get(b, j);
                *se_c = sqrt(gsl_matrix_get(cov, j, j));
            }
            rc = isfinite(*a) && isfinite(*c) ? 0 : -1;
        }
    }
    gsl_multifit_robust_free(w);
    gsl_matrix_free(cov);
    gsl_vector_free(b);
    gsl_vector_free(y);
    gsl_matrix_free(X);
    return rc;
}

static int fit_range(const struct sample *s, size_t n, struct coll_fit *f, struct sc_error *err)
{
    double a = 0, c = 0, se_a = 0, se_c = 0;
    memset(f, 0, sizeof *f);
    f->points = n;
    f->size_lo = INFINITY;
    f->size_hi = 0;
    if (robust(s, n, 1, 1, &a, &c, &se_a, &se_c))
        return sc_error_set(err, SC_ENUMERIC, "robust fit of %zu samples failed", n);
    if (c <= 0) { /* no growth with size: latency only */
        if (robust(s, n, 1, 0, &a, &c, &se_a, &se_c))
            return sc_error_set(err, SC_ENUMERIC, "robust fit of %zu samples failed", n);
        c = 0;
    } else if (a < 0) { /* unphysical: bandwidth only */
        if (robust(s, n, 0, 1, &a, &c, &se_a, &se_c))
            return sc_error_set(err, SC_ENUMERIC, "robust fit of %zu samples failed", n);
        a = 0;
    }
    f->alpha_fitted = a > 0;
    f->alpha_us = a;
    f->alpha_se_us = se_a;
    /* c in us per byte: busbw GB/s = 1e-3 / c */
    f->busbw_gbps = c > 0 ? 1e-3 / c : 0;
    f->busbw_se_gbps = c > 0 ? 1e-3 * se_c / (c * c) : 0;
    fit_quality(s, n, a, c, f);
    return SC_OK;
}

int calib_coll_fit_run(const struct nct_run *run, struct coll_fit *fits, size_t *n_out,
                 struct sc_error *err)
{
    *n_out = 0;
    if (!cost_coll_kind_modelled(run->kind))
        return sc_error_set(err, SC_EINVAL, "the collective is unknown: name it (--kind)");
    if (run->ranks < 2)
        return sc_error_set(err, SC_EINVAL, "the group size is unknown: give it (--ranks)");
    double factor = cost_coll_bus_factor(run->kind, run->ranks);
    struct sample *s = malloc((run->n_rows * 2 + 1) * sizeof *s);
    if (!s)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    int status = SC_OK;
    for (int r = 0; r < COLL_FIT_RANGES && !status; r++) {
        double hi = r + 1 < COLL_FIT_RANGES ? coll_fit_range_lo[r + 1] : INFINITY;
        size_t n = 0;
        double smin = INFINITY, smax = 0;
        for (size_t i = 0; i < run->n_rows; i++) {
            const struct nct_row *row = &run->rows[i];
            if (!(row->bytes >= coll_fit_range_lo[r] && row->bytes < hi))
                continue;
            for (int g = 0; g < 2; g++)
                if (row->time_us[g] > 0) {
                    s[n].x = row->bytes * factor;
                    s[n++].t = row->time_us[g];
                    smin = fmin(smin, row->bytes);
                    smax = fmax(smax, row->bytes);
                }
        }
        if (n < 3)
            continue;
        struct coll_fit *f = &fits[*n_out];
        status = fit_range(s, n, f, err);
        if (!status) {
            f->size_lo = smin;
            f->size_hi = smax;
            (*n_out)++;
        }
    }
    if (!status && *n_out == 0) {
        /* too few rows for any range (a single-size run): busbw alone */
        size_t n = 0;
        double smin = INFINITY, smax = 0, sum = 0;
        for (size_t i = 0; i < run->n_rows; i++)
            for (int g = 0; g < 2; g++)
                if (run->rows[i].time_us[g] > 0 && run->rows[i].bytes > 0) {
                    s[n].x = run->rows[i].bytes * factor;
                    s[n].t = run->rows[i].time_us[g];
                    sum += s[n].t / s[n].x;
                    smin = fmin(smin, run->rows[i].bytes);
                    smax = fmax(smax, run->rows[i].bytes);
                    n++;
                }
        if (n == 0) {
            status = sc_error_set(err, SC_EINVAL, "no result row with a size and a time to fit");
        } else {
            struct coll_fit *f = &fits[0];
            memset(f, 0, sizeof *f);
            double c = sum / (double)n;
            f->points = n;
            f->size_lo = smin;
            f->size_hi = smax;
            f->busbw_gbps = 1e-3 / c;
            fit_quality(s, n, 0, c, f);
            *n_out = 1;
        }
    }
    free(s);
    return status;
}
