/* estimator/costs/estimate_check.h: how far a cost model's estimates are from
 * measured times, summed up the one way every report and test uses. */
#ifndef ESTIMATOR_ESTIMATE_CHECK_H
#define ESTIMATOR_ESTIMATE_CHECK_H

#include <stddef.h>

/* Over the samples: |predicted / measured - 1| in percent, its median and
 * mean, and the median of predicted / measured (below 1: the model is
 * fast). All 0 when n is 0. */
struct estimate_check {
    size_t n;
    double median_abs_pct, mean_abs_pct, median_ratio;
};

/* Sum up predicted / measured ratios; ratio[] is reordered. 0, or -1 when
 * out of memory. */
int cost_estimate_check_ratios(double *ratio, size_t n, struct estimate_check *out);

#endif
