/* estimator/calibrate/mem_samples.h: memory-bound ops found in a trace with the
 * bytes they moved and their measured kernel time, to fit the achievable
 * HBM bandwidth of the kernel model (hbm_fraction).
 *
 * Elementwise aten ops (add, mul, div, sub and their in-place forms,
 * activations and their backward, comparisons, clamp, where, copy_,
 * fill_, dropout) record `Input Dims` and `Input type`; their kernels are
 * joined to them as the GEMMs' are (op_kernels.h: the innermost op of each
 * launch). Bytes moved: every tensor input read once (elements x element
 * size) and the output written (the inputs' broadcast shape, in the
 * element type of the widest full-size input; bool for comparisons); an
 * in-place op writes its first input, copy_ writes its first input without
 * reading it, fill_ and zero_ only write; native_dropout also writes its
 * bool mask. An op counts only when every kernel it launched is an
 * elementwise one by its name ("elementwise", "vectorized", "kernel_vec"):
 * an op that ran a reduction, a GEMM or an indexing kernel moved bytes
 * this count does not describe. */
#ifndef ESTIMATOR_MEM_SAMPLES_H
#define ESTIMATOR_MEM_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/estimate_check.h"
#include "estimator/costs/hardware.h"
#include "model/trace.h"

struct mem_sample {
    double bytes;       /* read and written */
    double measured_us; /* the kernels' summed durations */
    int kernels;
    int32_t device;     /* the kernels' args.device, or -1 */
    uint32_t op;        /* the CPU op's event index */
};

struct mem_samples {
    struct mem_sample *v; /* from malloc */
    size_t n, cap;
};

/* The memory-bound ops left out, by reason. */
struct mem_skips {
    size_t unreadable;   /* Input Dims or Input type missing, not tensors of a known
                            element type, or shapes that do not broadcast */
    size_t other_kernel; /* launched a kernel that is not elementwise */
};

/* Bytes the op `name` moves with inputs `dims` and `types` (the raw JSON
 * texts of Input Dims and Input type). SC_EINVAL when the op is not a
 * memory-bound one this module knows; SC_EPARSE when its inputs cannot be
 * read. */
int calib_mem_op_bytes(const char *name, const char *dims, const char *types, double *bytes, struct sc_error *err);

/* Append the memory-bound samples of one trace (in the order of their first
 * kernels); *skips (may be NULL) adds the ops left out. */
int calib_mem_samples_from_trace(const struct model_trace *t, struct mem_samples *out, struct mem_skips *skips,
                           struct sc_error *err);
/* The same from the trace's ops joined to their kernels already. */
struct op_kernels;
int calib_mem_samples_of_ops(const struct model_trace *t, const struct op_kernels *ok, struct mem_samples *out,
                       struct mem_skips *skips, struct sc_error *err);

void calib_mem_samples_release(struct mem_samples *s);

struct kernel_params;

/* The kernel model (kernel_fixed_us x kernels + bytes at hbm_fraction of
 * the GPU's HBM bandwidth) against measured samples (all of one GPU). */
int calib_mem_samples_check(const struct kernel_params *p, const struct hw_profile *hw,
                      const struct mem_sample *s, size_t n, struct estimate_check *out,
                      struct sc_error *err);

/* Ops moving less than this may find their bytes in the L2 cache (6 MB on
 * a V100, 40 MB on an A100, 50 MB on an H100) and run faster than HBM:
 * many ops of 4 to 40 MB on the A100 trace move their bytes faster than
 * its HBM allows.
 * The fit takes only the ops above it. */
#define MEM_FIT_MIN_BYTES (64.0 * 1024 * 1024)

/* Fit hbm_fraction by robust regression (GSL, bisquare) of the measured
 * times of the ops moving at least MEM_FIT_MIN_BYTES, on relative
 * residuals: t = kernel_fixed_us x kernels + bytes / (GB/s x fraction),
 * with *base's kernel_fixed_us. *out is *base with hbm_fraction set; `fit`
 * says how well the model did on those ops before and after. SC_EINVAL
 * with fewer than 8 such ops; SC_ENUMERIC when the fit fails or gives a
 * fraction outside (0.01, 1] (then *out is *base). */
struct mem_fit {
    size_t samples;
    struct estimate_check before, after;
    double before_fraction; /* *base's hbm_fraction */
    double fraction_se;     /* standard error of hbm_fraction */
};
int calib_mem_samples_fit(const struct kernel_params *base, const struct hw_profile *hw,
                    const struct mem_sample *s, size_t n, struct kernel_params *out, struct mem_fit *fit,
                    struct sc_error *err);

#endif
