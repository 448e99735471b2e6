/* estimator/costs/estimate_check.c: error summaries of estimates against
 * measurements (estimate_check.h). */
#include "estimator/costs/estimate_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cost_estimate_check_ratios(double *ratio, size_t n, struct estimate_check *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return 0;
    double *abs_pct = malloc(n * sizeof *abs_pct), sum = 0;
    if (!abs_pct)
        return -1;
    for (size_t i = 0; i < n; i++) {
        abs_pct[i] = fabs(ratio[i] - 1) * 100;
        sum += abs_pct[i];
    }
    out->n = n;
    out->mean_abs_pct = sum / (double)n;
    out->median_abs_pct = median(abs_pct, n);
    out->median_ratio = median(ratio, n);
    free(abs_pct);
    return 0;
}
