/* estimator/calibrate/gemm_table.h: GEMM microbenchmark tables, the measured time of
 * each (dtype, batch, M, N, K) on one GPU, to check and calibrate the
 * kernel model (`stepcast calibrate gemms`, README "calibrate").
 *
 * profiler/gemm-bench.sh writes them on a GPU; any other benchmark can
 * too. The text is CSV: lines starting with '#' are comments, and
 * "# device: NAME" names the GPU as CUDA reports it; the first other line
 * is the header "dtype,batch,m,n,k,us"; each row is a dtype name (fp32,
 * tf32, fp16, bf16, fp8, fp4), four whole numbers from 1 to 2^31 and the
 * GEMM's time in microseconds, one call of C = A B (batch times), its
 * kernels' time. */
#ifndef ESTIMATOR_GEMM_TABLE_H
#define ESTIMATOR_GEMM_TABLE_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/calibrate/gemm_samples.h"

#define GEMM_TABLE_MAX_ROWS 1000000

/* Append the table's rows to *out (one sample each, kernels 1);
 * device (n bytes) gets the "# device:" name, or "" when the table names
 * none. SC_EPARSE naming the line and column of anything else; SC_ELIMIT
 * past GEMM_TABLE_MAX_ROWS rows. */
int calib_gemm_table_parse(const char *text, size_t len, struct gemm_samples *out, char *device, size_t n,
                     struct sc_error *err);

#endif
