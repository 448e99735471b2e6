/* estimator/calibrate/attn_samples.h: fused attention kernels found in a trace with
 * their shapes and measured times, to check and fit the kernel model's
 * flash attention throughput (attn_efficiency, attn_backward_fraction) on
 * the GPU that ran them.
 *
 * PyTorch's scaled_dot_product_attention runs one of its fused backends:
 * aten::_flash_attention_forward / _backward (FlashAttention),
 * _efficient_attention_* (memory-efficient), _cudnn_attention_* (cuDNN),
 * or the _scaled_dot_product_*_attention ops that call them. The innermost
 * such op that launched kernels is a sample: query and key shapes from
 * `Input Dims` (batch, heads, kv_heads, sequence, head dimension; the
 * flash and efficient kernels take [batch, seq, heads, dim], the others
 * [batch, heads, seq, dim]), the dtype from `Input type`, causality from
 * `Concrete Inputs` (the scalar arguments, recorded by PyTorch 2.3 and
 * later; is_causal, or the efficient kernels' custom_mask_type), each
 * argument at its place in the op's schema; the time is the sum of the
 * kernels the op launched (the backward's preprocessing and reduction
 * kernels included). An op whose arguments do not read as its schema
 * says (another PyTorch version's) is left out and counted. */
#ifndef ESTIMATOR_ATTN_SAMPLES_H
#define ESTIMATOR_ATTN_SAMPLES_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/estimate_check.h"
#include "estimator/costs/kernel_model.h"
#include "model/trace.h"

struct attn_sample {
    struct attn_shape shape;
    int backward;
    double measured_us; /* the kernels' summed durations */
    int kernels;
};

struct attn_samples {
    struct attn_sample *v; /* from malloc */
    size_t n, cap;
};

/* The shape and pass of an attention op `name` from the raw JSON texts of
 * its Input Dims, Input type and Concrete Inputs. SC_EINVAL when `name` is
 * not a fused attention op; SC_EPARSE when its arguments cannot be read. */
int calib_attn_op_shape(const char *name, const char *dims, const char *types, const char *concrete,
                  struct attn_shape *shape, int *backward, struct sc_error *err);

/* Append the attention samples of one trace; *unreadable (may be NULL)
 * adds the attention ops whose arguments could not be read. */
int calib_attn_samples_from_trace(const struct model_trace *t, struct attn_samples *out, size_t *unreadable,
                            struct sc_error *err);
/* The same from the trace's ops joined to their kernels already. */
struct op_kernels;
int calib_attn_samples_of_ops(const struct model_trace *t, const struct op_kernels *ok, struct attn_samples *out,
                        size_t *unreadable, struct sc_error *err);

void calib_attn_samples_release(struct attn_samples *s);

/* The kernel model against the samples: flash attention's time plus the
 * fixed cost of each kernel beyond the first. */
int calib_attn_samples_check(const struct kernel_params *p, const struct hw_profile *hw, const struct attn_sample *s,
                       size_t n, struct estimate_check *out, struct sc_error *err);

/* Fit attn_efficiency and attn_block_us on the forward samples, then
 * attn_backward_fraction and attn_backward_block_us on the backward ones,
 * by the robust regression of the GEMM fit: the measured time less the
 * fixed cost of its kernels on the model's throughput-bound time and its
 * waves (of blocks of 128 queries) at the current values, repeated until
 * they hold (the bytes bound makes the time linear in them only where
 * compute binds); a pass whose block time comes out negative is fitted
 * without one. Each pass needs at least 4 samples; a pass with fewer keeps
 * *base's values and is not counted in `fitted` (bit 0 forward, bit 1
 * backward). SC_ENUMERIC when a fit fails or leaves the physical range
 * (then *out is *base). */
struct attn_fit {
    size_t forward, backward;             /* samples of each pass */
    unsigned fitted;                      /* bit 0: the forward's two, bit 1: the backward's */
    struct estimate_check before, after;  /* over all samples */
    double forward_se[2], backward_se[2]; /* standard errors: the throughput's, the block time's */
};
int calib_attn_samples_fit(const struct kernel_params *base, const struct hw_profile *hw, const struct attn_sample *s,
                     size_t n, struct kernel_params *out, struct attn_fit *fit, struct sc_error *err);

#endif
