/* tests/unit/test_ab.c: the A/B comparison's statistics (model/ab.h) on
 * generated runs: lognormal steps with a 3% coefficient of variation and
 * 2% of steps x1.5 (stragglers), 30 steps a side. A 3% slower variant is
 * found in at least 95% of seeds, counted over 1,000 (960 here; 94 of the
 * first 100); a variant with no change reads faster or slower in at most
 * 65 of 1,000 (46 here). Power is counted over 1,000 seeds, not 100: in
 * 6 of the first 100 pairs the steps drawn hold the 3% shift at less than
 * 1.82 standard errors (Welch's, on the steps kept), which no 95%
 * interval of any efficient estimator excludes from zero; a count of 100
 * has a standard deviation of 1.7 seeds at 96%. BENCHMARKS.md "The A/B
 * verdict" has the estimators and intervals compared. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "model/ab.h"
#include "model/diff.h"
#include "tests/check.h"
#include "common/banned.h"

#define STEPS 30

/* A run of STEPS steps of median `ms` drawn from rng. */
static void run_of(gsl_rng *rng, double ms, double *out)
{
    double sigma = sqrt(log(1 + 0.03 * 0.03));
    for (int i = 0; i < STEPS; i++)
        out[i] = ms * gsl_ran_lognormal(rng, 0, sigma) * (gsl_rng_uniform(rng) < 0.02 ? 1.5 : 1.0);
}

/* How many of `seeds` pairs (A at 100 ms, B at 100 x (1 + change)) read
 * each verdict; first100 (when not NULL) counts the first 100 seeds. */
static void verdicts(double change, int seeds, int counts[4], int first100[4])
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    double a[STEPS], b[STEPS];
    struct model_ab_stats st;
    struct sc_error err;
    REQUIRE(rng != NULL);
    for (int k = 0; k < 4; k++)
        counts[k] = 0;
    for (int seed = 1; seed <= seeds; seed++) {
        gsl_rng_set(rng, (unsigned long)seed);
        run_of(rng, 100, a);
        run_of(rng, 100 * (1 + change), b);
        if (model_ab_compare(a, STEPS, b, STEPS, 1.0, (unsigned long)seed, &st, &err) != SC_OK)
            break;
        counts[st.verdict]++;
        if (first100 && seed == 100)
            memcpy(first100, counts, 4 * sizeof *counts);
    }
    gsl_rng_free(rng);
}

TEST(ab_finds_a_three_percent_slowdown)
{
    int c[4], f[4] = {0};
    verdicts(0.03, 1000, c, f);
    printf("     3%% slower, 1,000 seeds: slower %d, faster %d, no change %d, inconclusive %d "
           "(the first 100: slower %d)\n",
           c[MODEL_AB_SLOWER], c[MODEL_AB_FASTER], c[MODEL_AB_NO_CHANGE], c[MODEL_AB_INCONCLUSIVE], f[MODEL_AB_SLOWER]);
    CHECK(c[MODEL_AB_SLOWER] >= 950);
    CHECK_EQ_INT(c[MODEL_AB_FASTER], 0);
}

TEST(ab_rarely_reads_a_change_that_is_not_there)
{
    int c[4];
    verdicts(0, 1000, c, NULL);
    printf("     no change, 1,000 seeds: slower %d, faster %d, no change %d, inconclusive %d\n", c[MODEL_AB_SLOWER],
           c[MODEL_AB_FASTER], c[MODEL_AB_NO_CHANGE], c[MODEL_AB_INCONCLUSIVE]);
    CHECK(c[MODEL_AB_SLOWER] + c[MODEL_AB_FASTER] <= 65);
}

/* The statistics on samples whose answers are known. */
TEST(ab_statistics_of_known_samples)
{
    static const double a[] = {10, 11, 12, 13, 14}, b[] = {20, 21, 22, 23, 24}, c[] = {10, 11, 12, 13, 14};
    struct model_ab_stats st;
    struct sc_error err;
    REQUIRE(model_ab_compare(a, 5, b, 5, 0.12, 7, &st, &err) == SC_OK);
    CHECK_NEAR(st.difference_ms, 10, 1e-12);
    CHECK_NEAR(st.effect_size, 1, 1e-12); /* every b above every a */
    CHECK(st.ci_lo > 0 && st.ci_hi >= st.ci_lo);
    CHECK(st.p_value < 0.02);
    CHECK_EQ_INT(st.verdict, MODEL_AB_SLOWER);
    REQUIRE(model_ab_compare(b, 5, a, 5, 0.22, 7, &st, &err) == SC_OK);
    CHECK_EQ_INT(st.verdict, MODEL_AB_FASTER);
    CHECK_NEAR(st.effect_size, -1, 1e-12);
    REQUIRE(model_ab_compare(a, 5, c, 5, 0.12, 7, &st, &err) == SC_OK);
    CHECK_NEAR(st.difference_ms, 0, 1e-12);
    CHECK_NEAR(st.p_value, 1, 1e-12);
    CHECK_EQ_INT(st.verdict, MODEL_AB_NO_CHANGE);
    CHECK_EQ_INT(model_ab_compare(a, 2, b, 5, 0.1, 7, &st, &err), SC_EINVAL);
}

/* Attribution intervals over steps: a part that is the same on every step
 * has that as its interval; one that varies has an interval inside its
 * steps' range that holds its mean; a step's ranks are drawn together. */
TEST(ab_attribution_intervals_over_steps)
{
    int64_t steady[8] = {2000000, 2000000, 2000000, 2000000, 2000000, 2000000, 2000000, 2000000},
            varies[8] = {1000000, 5000000, 2000000, 4000000, 1000000, 5000000, 2000000, 4000000};
    uint32_t ordinal[8] = {0, 1, 2, 3, 0, 1, 2, 3}; /* two ranks, four steps */
    struct model_diff_part parts[2] = {{"compute:gemm", 2000000, steady}, {"host", 3000000, varies}};
    struct model_diff d = {.steps = 8, .step_ordinal = ordinal, .parts = parts, .n_parts = 2};
    struct model_ab r = {0};
    struct sc_error err;
    REQUIRE(model_ab_attribute(&r, &d, 3, &err) == SC_OK);
    REQUIRE(r.n_attribution == 2);
    CHECK_STREQ(r.attribution[0].category, "compute:gemm");
    CHECK_NEAR(r.attribution[0].ms, 2, 1e-12);
    CHECK_NEAR(r.attribution[0].ci_lo, 2, 1e-12);
    CHECK_NEAR(r.attribution[0].ci_hi, 2, 1e-12);
    CHECK_NEAR(r.attribution[1].ms, 3, 1e-12);
    CHECK(r.attribution[1].ci_lo >= 1.5 && r.attribution[1].ci_lo < 3); /* a step's mean is 1.5 to 4.5 */
    CHECK(r.attribution[1].ci_hi > 3 && r.attribution[1].ci_hi <= 4.5);
    model_ab_release(&r);
    CHECK(r.attribution == NULL);
    d.steps = 0;
    CHECK_EQ_INT(model_ab_attribute(&r, &d, 3, &err), SC_EINVAL);
}
