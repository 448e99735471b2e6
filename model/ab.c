/* model/ab.c: the A/B comparison of two runs' measured steps (ab.h). */
#include "model/ab.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "model/diff.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

static const char *const verdict_names[] = {"faster", "slower", "no_change", "inconclusive"};

const char *model_ab_verdict_name(enum model_ab_verdict v)
{
    return (unsigned)v < sizeof verdict_names / sizeof *verdict_names ? verdict_names[v] : "inconclusive";
}

void model_ab_opts_default(struct model_ab_opts *o)
{
    o->min_effect_pct = 1.0;
    o->refutations = -1;
    o->seed = 1;
}

/* ---- statistics ---- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Reorder v[0..n) (n >= 1) so that v[k] is what sorting would put there,
 * nothing larger before it and nothing smaller after (Hoare's selection:
 * the bootstrap takes two medians a resample, 8,000 a comparison, and a
 * sort of each was most of its time). */
static void select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            return; /* between j and i: every value there is the pivot */
    }
}

/* The median of v[0..n) (n >= 1), reordering tmp, a copy. */
static double median_of(const double *v, size_t n, double *tmp)
{
    memcpy(tmp, v, n * sizeof *v);
    select_kth(tmp, n, n / 2);
    if (n % 2)
        return tmp[n / 2];
    double below = tmp[0]; /* the largest of the lower half */
    for (size_t i = 1; i < n / 2; i++)
        below = tmp[i] > below ? tmp[i] : below;
    return (below + tmp[n / 2]) / 2;
}

/* The center of a run's steps v[0..n): the mean of those within
 * MODEL_AB_OUTLIER_MADS scaled median absolute deviations of the median.
 * A straggler step is left out as a median would leave it, and the rest
 * are averaged, which a bootstrap of 30 steps resolves far more finely
 * than a sample median (that jumps from one order statistic to the next).
 * tmp holds 2n. */
static double center_of(const double *v, size_t n, double *tmp)
{
    double *dev = tmp + n, med = median_of(v, n, tmp);
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(v[i] - med);
    double mad = median_of(dev, n, tmp) * 1.4826, sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(v[i] - med) <= MODEL_AB_OUTLIER_MADS * mad)
            sum += v[i], k++;
    return k ? sum / (double)k : med;
}

/* Two-sided p of the Mann-Whitney U test, normal approximation with the
 * ties corrected and a continuity correction. */
static double rank_sum_p(const double *a, size_t na, const double *b, size_t nb)
{
    size_t n = na + nb;
    struct obs {
        double v;
        int from_b;
    } *o = malloc(n * sizeof *o);
    if (!o)
        return NAN;
    for (size_t i = 0; i < na; i++)
        o[i] = (struct obs){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        o[na + i] = (struct obs){b[i], 1};
    qsort(o, n, sizeof *o, cmp_double); /* by v, its first member */
    double rank_b = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && o[j].v == o[i].v)
            j++;
        double t = (double)(j - i), mid = ((double)i + 1 + (double)j) / 2;
        for (size_t k = i; k < j; k++)
            rank_b += o[k].from_b ? mid : 0;
        ties += t * t * t - t;
        i = j;
    }
    free(o);
    double u = rank_b - (double)nb * ((double)nb + 1) / 2, mean = (double)na * (double)nb / 2;
    double var = (double)na * (double)nb / 12 * (((double)n + 1) - ties / ((double)n * ((double)n - 1)));
    if (!(var > 0))
        return 1;
    double z = (fabs(u - mean) - 0.5) / sqrt(var);
    return z <= 0 ? 1 : fmin(1, 2 * gsl_cdf_ugaussian_Q(z));
}

/* Cliff's delta: P(b > a) - P(b < a). */
static double cliffs_delta(const double *a, size_t na, const double *b, size_t nb)
{
    double more = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < na; j++)
            more += (b[i] > a[j]) - (b[i] < a[j]);
    return more / ((double)na * (double)nb);
}

static enum model_ab_verdict verdict_of(double diff, double lo, double hi, double min)
{
    if ((lo > 0 || hi < 0) && fabs(diff) >= min)
        return diff > 0 ? MODEL_AB_SLOWER : MODEL_AB_FASTER;
    if ((lo >= -min && hi <= min) || (lo <= 0 && hi >= 0 && fabs(diff) < min))
        return MODEL_AB_NO_CHANGE;
    return MODEL_AB_INCONCLUSIVE;
}

int model_ab_compare(const double *a, size_t na, const double *b, size_t nb, double min_effect_ms,
                     unsigned long seed, struct model_ab_stats *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    if (na < MODEL_AB_MIN_STEPS || nb < MODEL_AB_MIN_STEPS)
        return sc_error_set(err, SC_EINVAL, "A/B: %zu and %zu steps to compare; each run needs at least %d", na, nb,
                            MODEL_AB_MIN_STEPS);
    size_t n = na > nb ? na : nb;
    double *tmp = malloc(2 * n * sizeof *tmp), *ra = malloc(na * sizeof *ra), *rb = malloc(nb * sizeof *rb),
           *diffs = malloc(MODEL_AB_BOOTSTRAP * sizeof *diffs);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!tmp || !ra || !rb || !diffs || !rng) {
        free(tmp), free(ra), free(rb), free(diffs);
        if (rng)
            gsl_rng_free(rng);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    gsl_rng_set(rng, seed);
    out->a_center = center_of(a, na, tmp);
    out->b_center = center_of(b, nb, tmp);
    out->difference_ms = out->b_center - out->a_center;
    out->difference_pct = out->a_center > 0 ? 100 * out->difference_ms / out->a_center : 0;
    for (size_t k = 0; k < MODEL_AB_BOOTSTRAP; k++) {
        for (size_t i = 0; i < na; i++)
            ra[i] = a[gsl_rng_uniform_int(rng, na)];
        for (size_t i = 0; i < nb; i++)
            rb[i] = b[gsl_rng_uniform_int(rng, nb)];
        diffs[k] = center_of(rb, nb, tmp) - center_of(ra, na, tmp);
    }
    qsort(diffs, MODEL_AB_BOOTSTRAP, sizeof *diffs, cmp_double);
    out->ci_lo = diffs[(size_t)(0.025 * MODEL_AB_BOOTSTRAP)];
    out->ci_hi = diffs[(size_t)(0.975 * MODEL_AB_BOOTSTRAP) - 1];
    out->p_value = rank_sum_p(a, na, b, nb);
    out->effect_size = cliffs_delta(a, na, b, nb);
    out->min_effect_ms = min_effect_ms;
    out->verdict = verdict_of(out->difference_ms, out->ci_lo, out->ci_hi, min_effect_ms);
    free(tmp), free(ra), free(rb), free(diffs);
    gsl_rng_free(rng);
    return SC_OK;
}

/* ---- samples from a job ---- */

struct samples {
    double *v;
    size_t *step; /* each sample's step index */
    size_t n;
};

static void samples_release(struct samples *s)
{
    free(s->v);
    free(s->step);
}

/* Job j's samples: per step index, its slowest rank's measured time (ms),
 * without rank `skip` (or none: (size_t)-1); the partial and warm-up steps
 * dropped (listed in r, as run `run`, when r is not NULL). */
static int samples_of(const struct model_job *j, size_t skip, char run, struct model_ab *r, struct samples *out,
                      struct sc_error *err)
{
    size_t steps = SIZE_MAX;
    memset(out, 0, sizeof *out);
    for (size_t k = 0; k < j->n_ranks; k++)
        if (k != skip && j->ranks[k]->n_steps < steps)
            steps = j->ranks[k]->n_steps;
    if (steps == SIZE_MAX)
        steps = 0;
    out->v = malloc((steps ? steps : 1) * sizeof *out->v);
    out->step = malloc((steps ? steps : 1) * sizeof *out->step);
    struct model_ab_dropped *grown = r ? realloc(r->dropped, (r->n_dropped + steps + 1) * sizeof *r->dropped) : NULL;
    if (grown)
        r->dropped = grown;
    if (!out->v || !out->step || (r && !grown)) {
        samples_release(out);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t s = 0; s < steps; s++) {
        double slowest = 0;
        int partial = 0;
        for (size_t k = 0; k < j->n_ranks; k++) {
            if (k == skip)
                continue;
            const struct model_step *st = &j->ranks[k]->steps[s];
            partial |= st->partial;
            slowest = fmax(slowest, (double)(st->end - st->start) / 1e6);
        }
        if (partial) {
            if (r)
                r->dropped[r->n_dropped++] = (struct model_ab_dropped){run, s, "partial"};
            continue;
        }
        out->step[out->n] = s;
        out->v[out->n++] = slowest;
    }
    /* leading warm-up steps, measured against the rest of the run */
    size_t rest = out->n / 4, warm = 0;
    if (out->n >= 2 * MODEL_AB_MIN_STEPS) {
        double *tmp = malloc(out->n * sizeof *tmp), *dev = malloc(out->n * sizeof *dev);
        if (!tmp || !dev) {
            free(tmp), free(dev);
            samples_release(out);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        double m = median_of(out->v + rest, out->n - rest, tmp);
        for (size_t i = rest; i < out->n; i++)
            dev[i - rest] = fabs(out->v[i] - m);
        double mad = median_of(dev, out->n - rest, tmp);
        while (mad > 0 && warm < rest && fabs(out->v[warm] - m) > MODEL_AB_WARMUP_MADS * mad)
            warm++;
        free(tmp), free(dev);
    }
    for (size_t i = 0; r && i < warm; i++)
        r->dropped[r->n_dropped++] = (struct model_ab_dropped){run, out->step[i], "warm-up"};
    memmove(out->v, out->v + warm, (out->n - warm) * sizeof *out->v);
    memmove(out->step, out->step + warm, (out->n - warm) * sizeof *out->step);
    out->n -= warm;
    return SC_OK;
}

/* The rank of j whose steps took longest in all, or (size_t)-1 with one rank. */
static size_t slowest_rank(const struct model_job *j)
{
    size_t best = (size_t)-1;
    int64_t most = -1;
    for (size_t k = 0; j->n_ranks > 1 && k < j->n_ranks; k++) {
        int64_t t = 0;
        for (size_t s = 0; s < j->ranks[k]->n_steps; s++)
            t += j->ranks[k]->steps[s].end - j->ranks[k]->steps[s].start;
        if (t > most)
            most = t, best = k;
    }
    return best;
}

/* ---- refutations ---- */

static void refute(struct model_ab *r, const char *name, enum model_ab_verdict v, int agrees, const char *detail)
{
    struct model_ab_refutation *f = &r->refutations[r->n_refutations++];
    f->name = name;
    f->verdict = v;
    f->agrees = agrees;
    snprintf(f->detail, sizeof f->detail, "%s", detail);
}

static int decisive(enum model_ab_verdict v)
{
    return v == MODEL_AB_FASTER || v == MODEL_AB_SLOWER;
}

/* The verdict of a[] against b[], or -1 when either is too short. */
static int verdict_again(const double *a, size_t na, const double *b, size_t nb, double min, unsigned long seed,
                         struct sc_error *err)
{
    struct model_ab_stats st;
    if (na < MODEL_AB_MIN_STEPS || nb < MODEL_AB_MIN_STEPS)
        return -1;
    return model_ab_compare(a, na, b, nb, min, seed, &st, err) ? -2 : (int)st.verdict;
}

/* The share of label shuffles whose |difference of medians| reaches
 * |observed| (NAN when out of memory). */
static double permutation_share(const double *a, size_t na, const double *b, size_t nb, double observed,
                                gsl_rng *rng)
{
    size_t n = na + nb, reach = 0;
    double *all = malloc(n * sizeof *all), *tmp = malloc(2 * n * sizeof *tmp);
    if (!all || !tmp) {
        free(all), free(tmp);
        return NAN;
    }
    memcpy(all, a, na * sizeof *a);
    memcpy(all + na, b, nb * sizeof *b);
    for (size_t k = 0; k < MODEL_AB_PERMUTATIONS; k++) {
        gsl_ran_shuffle(rng, all, n, sizeof *all);
        double d = center_of(all + na, nb, tmp) - center_of(all, na, tmp);
        reach += fabs(d) >= fabs(observed) - 1e-12;
    }
    free(all), free(tmp);
    return (double)reach / MODEL_AB_PERMUTATIONS;
}

int model_ab_run(const struct model_job *a, const struct model_job *b, const struct model_ab_opts *o,
                 struct model_ab *out, struct sc_error *err)
{
    struct samples sa = {0}, sb = {0}, x = {0}, y = {0};
    gsl_rng *rng = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = samples_of(a, (size_t)-1, 'A', out, &sa, err)) || (rc = samples_of(b, (size_t)-1, 'B', out, &sb, err)))
        goto done;
    if (sa.n < MODEL_AB_MIN_STEPS || sb.n < MODEL_AB_MIN_STEPS) {
        rc = sc_error_set(err, SC_EINVAL,
                          "A/B: A has %zu steps to compare and B %zu (partial and warm-up steps left out); each run "
                          "needs at least %d",
                          sa.n, sb.n, MODEL_AB_MIN_STEPS);
        goto done;
    }
    out->steps_a = sa.n;
    out->steps_b = sb.n;
    double pct = o->min_effect_pct > 0 ? o->min_effect_pct : 1.0;
    struct model_ab_stats *st = &out->stats;
    double *scratch = malloc(2 * sa.n * sizeof *scratch);
    if (!scratch) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto done;
    }
    double min = pct / 100 * center_of(sa.v, sa.n, scratch);
    free(scratch);
    if ((rc = model_ab_compare(sa.v, sa.n, sb.v, sb.n, min, o->seed, st, err)))
        goto done;

    int want = o->refutations < 0 || o->refutations > 5 ? 5 : o->refutations;
    size_t big = sa.n > sb.n ? sa.n : sb.n;
    double *h1 = malloc(big * sizeof *h1), *h2 = malloc(big * sizeof *h2);
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!h1 || !h2 || !rng) {
        free(h1), free(h2);
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto done;
    }
    gsl_rng_set(rng, o->seed + 1);
    char detail[96];
    int v;
    /* placebo: A against itself, alternate steps */
    if (want >= 1) {
        size_t n1 = 0, n2 = 0;
        for (size_t i = 0; i < sa.n; i++) {
            if (i % 2)
                h2[n2++] = sa.v[i];
            else
                h1[n1++] = sa.v[i];
        }
        v = verdict_again(h1, n1, h2, n2, min, o->seed, err);
        snprintf(detail, sizeof detail, "A's alternate steps, %zu against %zu", n1, n2);
        if (v == -2) {
            rc = err->code;
            goto refuted;
        }
        refute(out, "placebo", v < 0 ? MODEL_AB_INCONCLUSIVE : (enum model_ab_verdict)v,
               v < 0 ? MODEL_AB_NOT_APPLICABLE : !decisive((enum model_ab_verdict)v), detail);
    }
    /* a random half of each run's steps */
    if (want >= 2) {
        memcpy(h1, sa.v, sa.n * sizeof *h1);
        memcpy(h2, sb.v, sb.n * sizeof *h2);
        gsl_ran_shuffle(rng, h1, sa.n, sizeof *h1);
        gsl_ran_shuffle(rng, h2, sb.n, sizeof *h2);
        v = verdict_again(h1, sa.n / 2, h2, sb.n / 2, min, o->seed, err);
        snprintf(detail, sizeof detail, "%zu and %zu steps drawn", sa.n / 2, sb.n / 2);
        if (v == -2) {
            rc = err->code;
            goto refuted;
        }
        refute(out, "random_half", v < 0 ? MODEL_AB_INCONCLUSIVE : (enum model_ab_verdict)v,
               v < 0 ? MODEL_AB_NOT_APPLICABLE : v == (int)st->verdict, detail);
    }
    /* the labels shuffled */
    if (want >= 3) {
        double share = permutation_share(sa.v, sa.n, sb.v, sb.n, st->difference_ms, rng);
        snprintf(detail, sizeof detail, "%.1f%% of %d shuffles reach |%.3f| ms", 100 * share, MODEL_AB_PERMUTATIONS,
                 st->difference_ms);
        int reached = share >= 0.05;
        refute(out, "permutation", reached ? MODEL_AB_INCONCLUSIVE : st->verdict,
               isnan(share) ? MODEL_AB_NOT_APPLICABLE : decisive(st->verdict) ? !reached : reached, detail);
    }
    /* the slowest rank left out */
    if (want >= 4) {
        size_t ka = slowest_rank(a), kb = slowest_rank(b);
        if (ka == (size_t)-1 && kb == (size_t)-1) {
            refute(out, "leave_rank_out", MODEL_AB_INCONCLUSIVE, MODEL_AB_NOT_APPLICABLE, "one rank a run");
        } else {
            if ((rc = samples_of(a, ka, 'A', NULL, &x, err)) || (rc = samples_of(b, kb, 'B', NULL, &y, err)))
                goto refuted;
            v = verdict_again(x.v, x.n, y.v, y.n, min, o->seed, err);
            snprintf(detail, sizeof detail, "without A's rank %d and B's rank %d",
                     ka == (size_t)-1 ? -1 : a->rank_ids[ka], kb == (size_t)-1 ? -1 : b->rank_ids[kb]);
            if (v == -2) {
                rc = err->code;
                goto refuted;
            }
            refute(out, "leave_rank_out", v < 0 ? MODEL_AB_INCONCLUSIVE : (enum model_ab_verdict)v,
                   v < 0 ? MODEL_AB_NOT_APPLICABLE : v == (int)st->verdict, detail);
        }
    }
    /* the slowest 5% of each run's steps left out */
    if (want >= 5) {
        if (sa.n < 10 || sb.n < 10) {
            refute(out, "trim_slowest", MODEL_AB_INCONCLUSIVE, MODEL_AB_NOT_APPLICABLE, "fewer than 10 steps a run");
        } else {
            size_t ta = sa.n - (sa.n / 20 ? sa.n / 20 : 1), tb = sb.n - (sb.n / 20 ? sb.n / 20 : 1);
            memcpy(h1, sa.v, sa.n * sizeof *h1);
            memcpy(h2, sb.v, sb.n * sizeof *h2);
            qsort(h1, sa.n, sizeof *h1, cmp_double);
            qsort(h2, sb.n, sizeof *h2, cmp_double);
            v = verdict_again(h1, ta, h2, tb, min, o->seed, err);
            snprintf(detail, sizeof detail, "%zu of A's and %zu of B's steps left out", sa.n - ta, sb.n - tb);
            if (v == -2) {
                rc = err->code;
                goto refuted;
            }
            refute(out, "trim_slowest", v < 0 ? MODEL_AB_INCONCLUSIVE : (enum model_ab_verdict)v,
                   v < 0 ? MODEL_AB_NOT_APPLICABLE : v == (int)st->verdict, detail);
        }
    }
    size_t applicable = 0, agree = 0;
    for (size_t i = 0; i < out->n_refutations; i++) {
        applicable += out->refutations[i].agrees != MODEL_AB_NOT_APPLICABLE;
        agree += out->refutations[i].agrees == 1;
    }
    out->survives = applicable > 0 && 2 * agree > applicable;
refuted:
    free(h1), free(h2);
done:
    if (rc == SC_OK) { /* the samples compared move to out */
        out->samples_a = sa.v;
        out->samples_b = sb.v;
        sa.v = sb.v = NULL;
    }
    samples_release(&sa);
    samples_release(&sb);
    samples_release(&x);
    samples_release(&y);
    if (rng)
        gsl_rng_free(rng);
    if (rc)
        model_ab_release(out);
    return rc;
}

void model_ab_release(struct model_ab *r)
{
    free(r->dropped);
    free(r->attribution);
    free(r->samples_a);
    free(r->samples_b);
    r->dropped = NULL;
    r->attribution = NULL;
    r->samples_a = r->samples_b = NULL;
    r->n_dropped = r->n_attribution = 0;
}

/* ---- attribution ---- */

int model_ab_attribute(struct model_ab *r, const struct model_diff *d, unsigned long seed, struct sc_error *err)
{
    size_t steps = 0, np = d->n_parts;
    for (size_t k = 0; k < d->steps; k++)
        if (d->step_ordinal[k] + (size_t)1 > steps)
            steps = d->step_ordinal[k] + (size_t)1;
    /* per step: its pairs, and each part's sum over them (ns) */
    double *count = calloc(steps ? steps : 1, sizeof *count), *sum = calloc((steps ? steps : 1) * (np ? np : 1), sizeof *sum),
           *draws = malloc(MODEL_AB_BOOTSTRAP * (np ? np : 1) * sizeof *draws), *total = malloc((np ? np : 1) * sizeof *total);
    struct model_ab_part *parts = calloc(np ? np : 1, sizeof *parts);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = SC_OK;
    if (!count || !sum || !draws || !total || !parts || !rng) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    if (!steps) {
        rc = sc_error_set(err, SC_EINVAL, "the diff has no matched step");
        goto out;
    }
    for (size_t k = 0; k < d->steps; k++) {
        size_t s = d->step_ordinal[k];
        count[s]++;
        for (size_t p = 0; p < np; p++)
            sum[s * np + p] += (double)d->parts[p].each[k];
    }
    gsl_rng_set(rng, seed);
    for (size_t b = 0; b < MODEL_AB_BOOTSTRAP; b++) {
        double n = 0;
        memset(total, 0, np * sizeof *total);
        for (size_t i = 0; i < steps; i++) {
            size_t s = gsl_rng_uniform_int(rng, steps);
            n += count[s];
            for (size_t p = 0; p < np; p++)
                total[p] += sum[s * np + p];
        }
        for (size_t p = 0; p < np; p++)
            draws[p * MODEL_AB_BOOTSTRAP + b] = total[p] / n / 1e6;
    }
    for (size_t p = 0; p < np; p++) {
        double *v = draws + p * MODEL_AB_BOOTSTRAP;
        qsort(v, MODEL_AB_BOOTSTRAP, sizeof *v, cmp_double);
        snprintf(parts[p].category, sizeof parts[p].category, "%s", d->parts[p].category);
        parts[p].ms = (double)d->parts[p].ns / 1e6;
        parts[p].ci_lo = v[(size_t)(0.025 * MODEL_AB_BOOTSTRAP)];
        parts[p].ci_hi = v[(size_t)(0.975 * MODEL_AB_BOOTSTRAP) - 1];
    }
    free(r->attribution);
    r->attribution = parts;
    r->n_attribution = np;
    parts = NULL;
out:
    free(count), free(sum), free(draws), free(total), free(parts);
    if (rng)
        gsl_rng_free(rng);
    return rc;
}
