/* estimator/plan/validation.c: measured runs, their specs, scores and fits
 * (validation.h). */
#include "estimator/plan/validation.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>

#include "common/csv.h"
#include "common/vec.h"
#include "estimator/synth/estimate.h"
#include "common/banned.h"

#define MAX_ROWS 1000000
#define COLUMNS 11

static const char *const column_names[COLUMNS] = {
    "GPUs", "global batch", "micro batch", "hidden size", "attention heads", "layers",
    "sequence length", "tensor parallelism", "data parallelism", "pipeline parallelism", "iteration time"};

int plan_measured_parse(const char *text, size_t len, struct est_measured **rows, size_t *n,
                       struct sc_error *err)
{
    struct est_measured *v = NULL;
    size_t cap = 0, count = 0, w;
    struct sc_lines l;
    const char *p;
    *rows = NULL;
    *n = 0;
    sc_lines_init(&l, text, len);
    while (sc_lines_next(&l, &p, &w)) {
        size_t line = l.line;
        if (w == 0 || p[0] == '#')
            continue;
        if (count == MAX_ROWS) {
            free(v);
            return sc_error_set(err, SC_ELIMIT, "more than %d rows", MAX_ROWS);
        }
        double f[COLUMNS];
        const char *q = p, *qe = p + w;
        for (int c = 0; c < COLUMNS; c++) {
            char buf[64];
            char *numend;
            if (sc_csv_field(&q, qe, c == COLUMNS - 1, buf, sizeof buf)) {
                free(v);
                return sc_error_set(err, SC_EPARSE, "line %zu: %s: expected %d comma-separated numbers",
                                    line, column_names[c], COLUMNS);
            }
            errno = 0;
            f[c] = strtod(buf, &numend);
            if (*numend || errno || !(f[c] > 0) || f[c] > 1e12 ||
                (c < COLUMNS - 1 && f[c] != floor(f[c]))) {
                free(v);
                return sc_error_set(err, SC_EPARSE, "line %zu: %s: '%s' is not a positive %s", line,
                                    column_names[c], buf, c < COLUMNS - 1 ? "whole number" : "number");
            }
        }
        if (sc_vec_reserve((void **)&v, &cap, count + 1, sizeof *v)) {
            free(v);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        struct est_measured *m = &v[count++];
        m->gpus = (int64_t)f[0];
        m->global_batch = (int64_t)f[1];
        m->micro_batch = (int64_t)f[2];
        m->hidden = (int64_t)f[3];
        m->heads = (int64_t)f[4];
        m->layers = (int64_t)f[5];
        m->seq = (int64_t)f[6];
        m->tp = (int64_t)f[7];
        m->dp = (int64_t)f[8];
        m->pp = (int64_t)f[9];
        m->step_ms = f[10];
        m->line = line;
        if (f[0] != f[7] * f[8] * f[9]) { /* in doubles: the product of three may overflow */
            long long gpus = (long long)m->gpus;
            free(v);
            return sc_error_set(err, SC_EPARSE, "line %zu: %lld GPUs are not tp x dp x pp = %.0f", line,
                                gpus, f[7] * f[8] * f[9]);
        }
    }
    *rows = v;
    *n = count;
    return SC_OK;
}

int plan_measured_spec(const struct est_measured *m, const char *gpu, const char *dtype,
                      const char *attention, struct est_spec *out, const struct hw_profile **hw,
                      struct sc_error *err)
{
    char text[1024];
    int len = snprintf(text, sizeof text,
                       "{\"model\":{\"layers\":%lld,\"hidden\":%lld,\"heads\":%lld,\"seq\":%lld,\"vocab\":50257},"
                       "\"parallel\":{\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"micro_batch\":%lld,"
                       "\"global_batch\":%lld},\"cluster\":{\"gpu\":\"%s\",\"gpus_per_node\":8},"
                       "\"options\":{\"dtype\":\"%s\",\"attention\":\"%s\",\"recompute\":\"full\",\"overlap_grad_reduce\":false}}",
                       (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->seq,
                       (long long)m->tp, (long long)m->pp, (long long)m->dp, (long long)m->micro_batch,
                       (long long)m->global_batch, gpu, dtype, attention);
    if (len < 0 || (size_t)len >= sizeof text)
        return sc_error_set(err, SC_EINVAL, "line %zu: names too long", m->line);
    if (spec_load(text, (size_t)len, out, hw, err))
        return sc_error_prefix(err, "line %zu", m->line);
    return SC_OK;
}

/* Host launches are asynchronous: with a kernel's fixed cost and the
 * memory-bound kernels' bandwidth free, the measured runs need no host
 * waiting on the GPU, and the hidden-size folds hold. The host time of a
 * collective (host_coll_us, charged in place of host_op_us) keeps its
 * cited value: one node's steps cannot tell it from host_op_us (fitted
 * with them, the folds put it anywhere from 1 to 361 us), though the c10d
 * collective calls of the shared A100 traces take 81 to 278 us (medians;
 * BENCHMARKS.md, "Estimator validation"). */
#define KERNEL_PARAM(f) (offsetof(struct est_costs, kernel) + offsetof(struct kernel_params, f))
const struct est_fit_param est_fit_params[] = {
    {cost_param_host_op_us, offsetof(struct est_costs, host_op_us)},
    {cost_param_gemm_ceiling_scale, KERNEL_PARAM(gemm_ceiling_scale)},
    {cost_param_hbm_fraction, KERNEL_PARAM(hbm_fraction)},
    {cost_param_kernel_fixed_us, KERNEL_PARAM(kernel_fixed_us)},
};
const size_t est_n_fit_params = sizeof est_fit_params / sizeof est_fit_params[0];

static double *param_at(struct est_costs *c, size_t i)
{
    return (double *)((char *)c + est_fit_params[i].offset);
}

double plan_fit_param(const struct est_costs *c, size_t i)
{
    return *(const double *)((const char *)c + est_fit_params[i].offset);
}

/* A fitted parameter's value at u in [0, 1] of the range searched, and back. */
static double from_unit(size_t i, double u)
{
    const struct cost_param_info *p = &cost_params[est_fit_params[i].param];
    return p->fit_lo + u * (p->fit_hi - p->fit_lo);
}

static double to_unit(size_t i, double v)
{
    const struct cost_param_info *p = &cost_params[est_fit_params[i].param];
    return (v - p->fit_lo) / (p->fit_hi - p->fit_lo);
}

void plan_score_of(const struct est_runs *r, const unsigned char *select, const double *pred,
                  struct est_score *out)
{
    double sum = 0, sum_signed = 0, worst = 0;
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (select && !select[i])
            continue;
        double ape = (pred[i] - r->step_ms[i]) / r->step_ms[i] * 100;
        sum += fabs(ape);
        sum_signed += ape;
        worst = fmax(worst, fabs(ape));
        k++;
    }
    out->n = k;
    out->mape = k ? sum / (double)k : 0;
    out->bias = k ? sum_signed / (double)k : 0;
    out->max_ape = worst;
}

/* One estimate of a run: its costs, detail and step, ms. */
struct memo_entry {
    struct est_costs costs;
    enum est_detail detail;
    double step_ms;
};

struct memo_run {
    struct memo_entry *v;
    size_t n, cap;
};

struct est_memo {
    pthread_mutex_t lock;
    size_t n, hits;
    struct memo_run *runs;
};

struct est_memo *plan_memo_new(size_t n)
{
    struct est_memo *m = calloc(1, sizeof *m);
    if (!m || !(m->runs = calloc(n ? n : 1, sizeof *m->runs)) || pthread_mutex_init(&m->lock, NULL)) {
        if (m)
            free(m->runs);
        free(m);
        return NULL;
    }
    m->n = n;
    return m;
}

void plan_memo_free(struct est_memo *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->runs[i].v);
    free(m->runs);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

size_t plan_memo_hits(struct est_memo *m)
{
    pthread_mutex_lock(&m->lock);
    size_t hits = m->hits;
    pthread_mutex_unlock(&m->lock);
    return hits;
}

/* Run i's estimate with costs c at detail d from memo m (NULL: none); 1
 * when found. Costs are compared byte for byte: copies of one start, as a
 * fit makes them, compare equal where their values do. */
static int memo_get(struct est_memo *m, size_t i, const struct est_costs *c, enum est_detail d, double *step_ms)
{
    int found = 0;
    if (!m || i >= m->n)
        return 0;
    pthread_mutex_lock(&m->lock);
    const struct memo_run *r = &m->runs[i];
    for (size_t k = r->n; k-- > 0 && !found;)
        if (r->v[k].detail == d && !memcmp(&r->v[k].costs, c, sizeof *c)) {
            *step_ms = r->v[k].step_ms;
            found = 1;
        }
    m->hits += (size_t)found;
    pthread_mutex_unlock(&m->lock);
    return found;
}

/* Keep run i's estimate with costs c at detail d in memo m (NULL: none);
 * out of memory, it is not kept. */
static void memo_put(struct est_memo *m, size_t i, const struct est_costs *c, enum est_detail d, double step_ms)
{
    if (!m || i >= m->n)
        return;
    pthread_mutex_lock(&m->lock);
    struct memo_run *r = &m->runs[i];
    if (sc_vec_reserve((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v) == 0) {
        struct memo_entry *e = &r->v[r->n++];
        memcpy(&e->costs, c, sizeof *c); /* every byte: memo_get compares them */
        e->detail = d;
        e->step_ms = step_ms;
    }
    pthread_mutex_unlock(&m->lock);
}

int plan_validate(const struct est_runs *r, const unsigned char *select, const struct est_costs *c,
                 enum est_detail detail, double *pred, struct est_score *out, struct sc_error *err)
{
    double *est = malloc((r->n ? r->n : 1) * sizeof *est);
    int rc = SC_OK;
    memset(out, 0, sizeof *out);
    if (!est)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n; i++)
        est[i] = NAN;
    for (size_t i = 0; i < r->n; i++) {
        size_t j = r->same ? r->same[i] : i; /* j <= i */
        struct est_estimate e;
        if ((select && !select[i]) || !isnan(est[j]) || memo_get(r->memo, j, c, detail, &est[j]))
            continue;
        if ((rc = synth_estimate(&r->specs[j], r->hws[j], c, detail, &e, err))) {
            sc_error_prefix(err, "line %zu", r->lines[j]);
            goto done;
        }
        est[j] = e.step_ms;
        memo_put(r->memo, j, c, detail, est[j]);
        synth_estimate_release(&e);
    }
    for (size_t i = 0; i < r->n; i++)
        est[i] = est[r->same ? r->same[i] : i];
    plan_score_of(r, select, est, out);
    if (pred)
        for (size_t i = 0; i < r->n; i++)
            if (!select || select[i])
                pred[i] = est[i];
done:
    free(est);
    return rc;
}

struct fit_ctx {
    const struct est_runs *runs;
    const unsigned char *select;
    struct est_costs costs;
    enum est_detail detail;
    struct sc_error *err;
    int failed;
    size_t evals;
    size_t dim[8], n_dims; /* the est_fit_params fitted, in order */
};

/* The simplex moves in [0, 1] per parameter, mapped onto its range. */
static double mape_at(const gsl_vector *x, void *arg)
{
    struct fit_ctx *f = arg;
    struct est_costs c = f->costs;
    struct est_score s;
    for (size_t d = 0; d < f->n_dims; d++) {
        size_t i = f->dim[d];
        double u = gsl_vector_get(x, d);
        if (!(u >= 0 && u <= 1))
            return 1e9;
        *param_at(&c, i) = from_unit(i, u);
    }
    f->evals++;
    if (plan_validate(f->runs, f->select, &c, f->detail, NULL, &s, f->err)) {
        f->failed = f->err->code;
        return 1e9;
    }
    return s.mape;
}

/* Nelder-Mead from x (in [0, 1] per parameter) for at most `iters`
 * iterations; x gets the best point, *best its MAPE. */
static int simplex(struct fit_ctx *f, gsl_vector *x, int iters, double *best, struct sc_error *err)
{
    gsl_multimin_function fn = {mape_at, f->n_dims, f};
    gsl_vector *step = gsl_vector_alloc(f->n_dims);
    gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, f->n_dims);
    int rc = SC_OK;
    if (!step || !m) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto done;
    }
    gsl_vector_set_all(step, 0.1);
    gsl_set_error_handler_off(); /* GSL's default handler aborts; its status is checked */
    gsl_multimin_fminimizer_set(m, &fn, x, step);
    for (int it = 0; it < iters && !f->failed; it++) {
        if (gsl_multimin_fminimizer_iterate(m))
            break;
        if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(m), 5e-3) == GSL_SUCCESS)
            break;
    }
    if (f->failed) {
        rc = f->failed;
        goto done;
    }
    gsl_vector_memcpy(x, m->x);
    *best = m->fval;
done:
    gsl_multimin_fminimizer_free(m);
    gsl_vector_free(step);
    return rc;
}

/* Iterations of each start's exploration when there are several. */
#define FIT_EXPLORE_ITERS 40

int plan_fit(const struct est_runs *r, const unsigned char *select, struct est_costs *c, unsigned params,
            int starts, int iters, enum est_detail detail, struct est_score *out, size_t *evals, struct sc_error *err)
{
    struct fit_ctx f = {r, select, *c, detail, err, 0, 0, {0}, 0};
    for (size_t i = 0; i < est_n_fit_params && i < sizeof f.dim / sizeof f.dim[0]; i++)
        if (params & 1u << i)
            f.dim[f.n_dims++] = i;
    if (!f.n_dims)
        return sc_error_set(err, SC_EINVAL, "no parameter to fit");
    gsl_vector *x = gsl_vector_alloc(f.n_dims), *best = gsl_vector_alloc(f.n_dims);
    double best_mape = INFINITY;
    int rc = SC_OK;
    if (!x || !best) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto done;
    }
    for (int s = 0; s < starts; s++) {
        double mape = INFINITY;
        for (size_t d = 0; d < f.n_dims; d++) {
            size_t i = f.dim[d];
            double u = to_unit(i, *param_at(c, i));
            gsl_vector_set(x, d, s == 0 ? fmin(fmax(u, 0.05), 0.95) : (double)s / starts);
        }
        if (starts > 1 && (rc = simplex(&f, x, FIT_EXPLORE_ITERS, &mape, err)))
            goto done;
        if (s == 0 || mape < best_mape) {
            best_mape = mape;
            gsl_vector_memcpy(best, x);
        }
    }
    if ((rc = simplex(&f, best, iters, &best_mape, err)))
        goto done;
    for (size_t d = 0; d < f.n_dims; d++)
        *param_at(c, f.dim[d]) = from_unit(f.dim[d], gsl_vector_get(best, d));
    rc = plan_validate(r, select, c, detail, NULL, out, err);
    f.evals++;
done:
    if (evals)
        *evals = f.evals;
    gsl_vector_free(x);
    gsl_vector_free(best);
    return rc;
}
