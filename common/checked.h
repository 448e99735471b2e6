/* common/checked.h: 64-bit arithmetic that cannot overflow silently.
 *
 * Sums of durations and sizes taken from input (a synthesised step's
 * runs, a trace's messages) use these: a saturating sum stops at
 * SC_SAT_MAX, far enough below INT64_MAX that adding two saturated values
 * is still defined, and a later check against a named limit (the replay's
 * span, model/replay.h) refuses what saturated. */
#ifndef COMMON_CHECKED_H
#define COMMON_CHECKED_H

#include <math.h>
#include <stdint.h>

/* 2^61: three saturated values still sum below INT64_MAX. */
#define SC_SAT_MAX ((int64_t)1 << 61)

/* a + b for a, b >= 0, at most SC_SAT_MAX. */
static inline int64_t sc_sat_add(int64_t a, int64_t b)
{
    int64_t s;
    if (__builtin_add_overflow(a, b, &s) || s > SC_SAT_MAX)
        return SC_SAT_MAX;
    return s;
}

/* a x b for a, b >= 0, at most SC_SAT_MAX. */
static inline int64_t sc_sat_mul(int64_t a, int64_t b)
{
    int64_t p;
    if (__builtin_mul_overflow(a, b, &p) || p > SC_SAT_MAX)
        return SC_SAT_MAX;
    return p;
}

/* A non-negative double (nanoseconds, bytes) rounded to int64, at most
 * SC_SAT_MAX; NaN and negatives are 0. */
static inline int64_t sc_sat_round(double x)
{
    if (!(x > 0))
        return 0;
    if (x >= (double)SC_SAT_MAX)
        return SC_SAT_MAX;
    return (int64_t)llround(x);
}

/* The same, truncated toward zero (a size's whole bytes). */
static inline int64_t sc_sat_trunc(double x)
{
    if (!(x > 0))
        return 0;
    if (x >= (double)SC_SAT_MAX)
        return SC_SAT_MAX;
    return (int64_t)x;
}

#endif
