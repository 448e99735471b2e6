/* estimator/synth/quant.h: the quantisation kernels that run before a
 * low-precision GEMM, as Transformer Engine runs them.
 *
 * An fp8 or fp4 GEMM takes its operands quantised: the input activation
 * and the weight in the forward, the output gradient in the backward (the
 * input and weight quantised in the forward serve the backward too). Each
 * recipe quantises a bf16 tensor with its own kernels, and each kernel is
 * memory-bound: its cost is the bytes it reads and writes per element of
 * the tensor (transformer_engine/common/recipe and the PyTorch quantizers,
 * NVIDIA/TransformerEngine):
 *
 *   tensorwise (Float8CurrentScaling): an amax kernel reads the tensor
 *     (2 B), then the cast reads it again and writes fp8 (2 + 1 B) and,
 *     where cuBLAS takes fp8 GEMMs only in the TN layout (before
 *     Blackwell: is_non_tn_fp8_gemm_supported), the transposed copy the
 *     backward's GEMMs read (+1 B);
 *   blockwise (Float8BlockScaling): one kernel reads the tensor and writes
 *     rowwise and columnwise fp8 copies, each with an fp32 scale per block
 *     of 128 (2 + 1 + 1 + 2 x 4/128 B; a weight's 128x128 blocks have
 *     almost no scales);
 *   mxfp8 (MXFP8BlockScaling): one kernel writes rowwise and columnwise
 *     copies, each with an E8M0 scale per 32 elements
 *     (2 + 1 + 1 + 2 x 1/32 B);
 *   NVFP4 (NVFP4BlockScaling, dtype fp4): an amax kernel (of the tensor
 *     and, for activations and gradients, of its random-Hadamard transform:
 *     2 B), the rowwise quantisation (2 + 0.5 + 1/16 B: an E4M3 scale per
 *     16 elements) and, for activations and gradients, a second kernel
 *     fusing the Hadamard transform with the columnwise quantisation that
 *     the weight gradient's GEMM reads (2 + 0.5 + 1/16 B); a weight's 16x16
 *     blocks give both copies from one kernel (2 + 0.5 + 0.5 + 2/256 B).
 *
 * A weight is quantised once a step (Transformer Engine caches it across
 * the micro-batches: is_first_microbatch); activations and gradients every
 * micro-batch. */
#ifndef ESTIMATOR_QUANT_H
#define ESTIMATOR_QUANT_H

#include "estimator/costs/hardware.h"
#include "estimator/spec/spec.h"

enum quant_tensor { QUANT_INPUT, QUANT_WEIGHT, QUANT_GRAD };

#define QUANT_MAX_KERNELS 3

struct quant_kernel {
    const char *name;
    double bytes; /* read and written per element of the tensor */
};

/* The kernels that quantise one bf16 tensor for a GEMM in dtype (fp8 by
 * recipe, fp4 as NVFP4) on a GPU of architecture arch, into out; how many
 * (0 for a dtype that is not quantised). */
int synth_quant_kernels(enum hw_dtype dtype, enum est_fp8_recipe recipe, enum hw_arch arch, enum quant_tensor t,
                  struct quant_kernel out[QUANT_MAX_KERNELS]);

#endif
