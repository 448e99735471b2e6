/* estimator/calibrate/gemm_samples.h: GEMMs found in a trace with their shapes and
 * measured kernel time, to check and calibrate the kernel model.
 *
 * PyTorch records `Input Dims` and `Input type` on its CPU ops. A GEMM op
 * (aten::mm, addmm, bmm, baddbmm, and aten::linear or aten::matmul when no
 * narrower op is recorded under them) launches its kernels from inside its
 * time span on its thread: each kernel is joined to its launch call by
 * correlation id and the call to the innermost CPU op that contains it, so
 * a copy launched by an aten::contiguous under aten::matmul is not counted
 * as the GEMM's. A sample is one op: its (M, N, K, batch, dtype) and the
 * summed duration of the kernels it launched (a split-K GEMM runs two).
 *
 * fp32 inputs ran as TF32 when the library picked a TF32 tensor-core
 * kernel: its name says so ("tf32", "s1688", "s16816"). */
#ifndef ESTIMATOR_GEMM_SAMPLES_H
#define ESTIMATOR_GEMM_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/estimate_check.h"
#include "estimator/costs/hardware.h"
#include "model/trace.h"

struct gemm_sample {
    double m, n, k, batch;
    enum hw_dtype dtype;
    double measured_us; /* the kernels' summed durations */
    int kernels;
    int32_t device;     /* the kernels' args.device, or -1 */
    uint32_t op;        /* the CPU op's event index */
};

struct gemm_samples {
    struct gemm_sample *v; /* from malloc */
    size_t n, cap;
};

/* Append the GEMM samples of one trace (in the order of their first
 * kernels). Ops
 * whose dims or dtype cannot be read, and ops that launched no kernel, are
 * skipped and counted in *skipped (may be NULL). */
int calib_gemm_samples_from_trace(const struct model_trace *t, struct gemm_samples *out, size_t *skipped,
                            struct sc_error *err);

/* The same, and sample_of_event[i] (t->n_events entries) gets the index in
 * out->v of the sample kernel event i belongs to, or MODEL_NONE. */
int calib_gemm_samples_of_kernels(const struct model_trace *t, struct gemm_samples *out, size_t *skipped,
                            uint32_t *sample_of_event, struct sc_error *err);

/* The same from the trace's ops joined to their kernels already
 * (cost_op_kernels_join), for a caller that reads the join for more. */
struct op_kernels;
int calib_gemm_samples_of_ops(const struct model_trace *t, const struct op_kernels *ok, struct gemm_samples *out,
                        size_t *skipped, uint32_t *sample_of_event, struct sc_error *err);

void calib_gemm_samples_release(struct gemm_samples *s);

struct kernel_params;

/* The kernel model against measured samples (all of one GPU). */
int calib_gemm_samples_check(const struct kernel_params *p, const struct hw_profile *hw,
                       const struct gemm_sample *s, size_t n, struct estimate_check *out,
                       struct sc_error *err);

/* Fit the GEMM parameters a GPU's traces determine: kernel_fixed_us and
 * gemm_ceiling_scale, by robust regression (GSL, bisquare) of the measured
 * times on the model's kernel count and bound time (t = fixed x kernels +
 * bound / scale), on relative residuals. *out is *base with the two set;
 * `fit` says how well the model did before and after. SC_EINVAL with
 * fewer than 8 samples; SC_ENUMERIC when the fit fails or gives a value
 * outside its physical range (then *out is *base). */
struct gemm_fit {
    size_t samples;
    struct estimate_check before, after;
    double fixed_se_us, scale_se; /* standard errors */
};
int calib_gemm_samples_fit(const struct kernel_params *base, const struct hw_profile *hw,
                     const struct gemm_sample *s, size_t n, struct kernel_params *out,
                     struct gemm_fit *fit, struct sc_error *err);

/* After calib_gemm_samples_fit (*base its result), each dtype's ceiling fitted
 * alone where samples of more than one dtype are given: for every dtype
 * with at least 8 samples, the measured times less the fixed cost on the
 * model's bound time, by the same robust regression, repeated at the scale
 * found until it holds (the bound is linear in it only where compute
 * binds); out->dtype_scale[d] gets it and bit d of *fitted is set. A dtype whose fit
 * fails or leaves the physical range keeps base's. SC_ENOMEM, or SC_OK. */
int calib_gemm_samples_fit_dtypes(const struct kernel_params *base, const struct hw_profile *hw,
                            const struct gemm_sample *s, size_t n, struct kernel_params *out, unsigned *fitted,
                            struct sc_error *err);

/* The dtype of a PyTorch element type name ("c10::BFloat16", "float",
 * "c10::Float8_e4m3fn"): 0, or -1 for a type no GEMM runs in. */
int calib_gemm_torch_dtype(const char *type, enum hw_dtype *d);

/* The trace's name of a device id ("NVIDIA A100-SXM4-80GB"), or NULL. */
const char *calib_gemm_device_name(const struct model_trace *t, int32_t device);

#endif
