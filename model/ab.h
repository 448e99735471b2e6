/* model/ab.h: a controlled comparison of two runs of one program, A (the
 * baseline) and B (the variant): did B's change make the step faster or
 * slower, by how much, with what confidence, and does the answer survive
 * attempts to refute it (`stepcast ab`).
 *
 * Samples: one per step, the step's measured time on its slowest rank
 * (the ranks of a step wait on one another: they are not independent
 * samples). A rank's k-th step is step k of the job. Partial steps, and
 * leading warm-up steps (the first quarter of a run at most, each more
 * than MODEL_AB_WARMUP_MADS median absolute deviations from the median of
 * the rest), are left out and listed.
 *
 * Each run's center is a robust mean: the mean of its steps within
 * MODEL_AB_OUTLIER_MADS scaled median absolute deviations of its median,
 * so stragglers are left out as by a median, and the rest averaged (a
 * median of 30 steps jumps between order statistics: its bootstrap
 * interval is coarse, and found a 3% slowdown in 86 to 89 of 100 generated
 * pairs where the robust mean finds it in 94, and in 960 of 1,000: once
 * the stragglers are out the steps are close to normal, and their mean is
 * the efficient estimator; BENCHMARKS.md compares intervals). The difference is
 * center(B) - center(A), positive when B is slower, with a bootstrap 95%
 * interval over steps (MODEL_AB_BOOTSTRAP resamples of each side, GSL's
 * MT19937 seeded: reproducible), the rank-sum test's two-sided p-value
 * (Mann-Whitney U, normal approximation with ties corrected) and Cliff's
 * delta (P(b > a) - P(b < a)).
 *
 * The verdict, min the smallest effect that matters (min_effect_pct of
 * A's center, 1% by default):
 *   faster / slower  the interval excludes zero and |difference| >= min;
 *   no_change        the interval lies inside [-min, min], or it holds
 *                    zero and |difference| < min;
 *   inconclusive     otherwise.
 *
 * Refutations, each `agrees` or not, `not_applicable` when it cannot run:
 *   placebo          A's steps split in two (alternate steps): agrees when
 *                    that reads neither faster nor slower;
 *   random_half      a random half of each run's steps: agrees when it
 *                    gives the verdict again;
 *   permutation      the run labels shuffled (MODEL_AB_PERMUTATIONS
 *                    times): agrees when fewer than 5% of shuffles reach
 *                    the observed |difference| of centers (for a verdict of faster or
 *                    slower; when the verdict is neither, agrees when 5% or
 *                    more do);
 *   leave_rank_out   the slowest rank of either run left out (jobs of at
 *                    least two ranks): agrees when it gives the verdict
 *                    again;
 *   trim_slowest     the slowest 5% of each run's steps left out (at least
 *                    one; runs of at least 10 steps): agrees when it gives
 *                    the verdict again.
 * It survives when most of the applicable refutations agree.
 *
 * Attribution (model_ab_attribute): the parts of diff (model/diff.h), each
 * the change its category makes to the mean step, with a bootstrap 95%
 * interval over steps: the job's matched steps drawn again with
 * replacement, a step's ranks together (they are not independent), the
 * part's mean over the (rank, step) pairs drawn; MODEL_AB_BOOTSTRAP draws,
 * seeded. Diff matches every whole step, warm-up included. */
#ifndef MODEL_AB_H
#define MODEL_AB_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct model_job;

#define MODEL_AB_WARMUP_MADS 5.0
#define MODEL_AB_OUTLIER_MADS 5.0
#define MODEL_AB_BOOTSTRAP 2000
#define MODEL_AB_PERMUTATIONS 1000
#define MODEL_AB_MIN_STEPS 3 /* a side with fewer samples cannot be compared */

enum model_ab_verdict { MODEL_AB_FASTER, MODEL_AB_SLOWER, MODEL_AB_NO_CHANGE, MODEL_AB_INCONCLUSIVE };
const char *model_ab_verdict_name(enum model_ab_verdict v); /* "faster", "slower", "no_change", "inconclusive" */

struct model_ab_opts {
    double min_effect_pct; /* the smallest effect that matters, % of A's center (0: 1%) */
    int refutations;       /* how many of the five to run, in the order above (-1: all five) */
    unsigned long seed;    /* the bootstrap's and the refutations' generator */
};
void model_ab_opts_default(struct model_ab_opts *o);

/* The comparison of two sets of samples (ms). */
struct model_ab_stats {
    double a_center, b_center, difference_ms, difference_pct, ci_lo, ci_hi, p_value, effect_size, min_effect_ms;
    enum model_ab_verdict verdict;
};

/* Compare samples a[0..na) with b[0..nb) (each at least MODEL_AB_MIN_STEPS),
 * min_effect_ms the smallest effect that matters, seed the bootstrap's. */
int model_ab_compare(const double *a, size_t na, const double *b, size_t nb, double min_effect_ms,
                     unsigned long seed, struct model_ab_stats *out, struct sc_error *err);

/* A step left out of a run's samples. */
struct model_ab_dropped {
    char run;       /* 'A' or 'B' */
    size_t step;    /* its index among the run's steps */
    char why[16];   /* "partial" or "warm-up" */
};

enum { MODEL_AB_NOT_APPLICABLE = -1 };

struct model_ab_refutation {
    const char *name;
    enum model_ab_verdict verdict; /* what the refuted comparison read (placebo, halves, ...) */
    int agrees;                    /* 1, 0 or MODEL_AB_NOT_APPLICABLE */
    char detail[96];
};

/* A part of the difference (a diff category) with its interval, ms. */
struct model_ab_part {
    char category[40];
    double ms, ci_lo, ci_hi;
};

struct model_ab {
    struct model_ab_stats stats;
    struct model_ab_part *attribution; /* malloc'd; NULL until model_ab_attribute */
    size_t n_attribution;
    size_t steps_a, steps_b;
    double *samples_a, *samples_b;    /* malloc'd: the samples compared (ms), steps_a and steps_b of
                                         them, in step order */
    struct model_ab_dropped *dropped; /* malloc'd */
    size_t n_dropped;
    struct model_ab_refutation refutations[5];
    size_t n_refutations;
    int survives;
};

/* A/B of two jobs' measured steps. SC_EINVAL when a side has fewer than
 * MODEL_AB_MIN_STEPS steps to compare. Release with model_ab_release. */
int model_ab_run(const struct model_job *a, const struct model_job *b, const struct model_ab_opts *o,
                 struct model_ab *out, struct sc_error *err);
void model_ab_release(struct model_ab *r);

/* r's attribution from the diff of its two runs (model_diff_run on A's
 * graph and B's), the intervals drawn with seed. */
struct model_diff;
int model_ab_attribute(struct model_ab *r, const struct model_diff *d, unsigned long seed, struct sc_error *err);

#endif
