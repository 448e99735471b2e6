/* model/kernel_family.h: the one table of kernel families.
 *
 * Everything that groups kernels (task classes in the graph, replay factors
 * by family, reports) asks here. A kernel name is matched, without regard
 * to case, against each family's patterns in the order below; the first
 * family with a pattern inside the name wins:
 *
 *   communication  nccl / rccl kernels (collective.h)
 *   attention      flash, fmha, attention, attn, sdpa
 *   normalization  layer_norm, layernorm, rms_norm, rmsnorm, batch_norm, batchnorm,
 *                  group_norm, bn_fw, bn_bw, ln_fwd, ln_bwd, gammabeta, rowwisemoments,
 *                  welford, cucomputegradinput
 *   rotary         rotary, rope_, _rope
 *   moe            moe_, _moe, unpermute, permute_row, topk_gating, expert
 *   convolution    conv, fprop, dgrad, wgrad, winograd, fft2d, implicit_gemm
 *   gemm           gemm, gemv, cutlass, xmma, cublas, nvjet, matmul, splitkreduce
 *   fp8            fp8, amax, cast_transpose, quantize, scale_update
 *   embedding      embedding, embs_, indexselect
 *   loss           loss, cross_entropy, crossentropy, xentropy
 *   softmax        softmax
 *   optimizer      adam, adagrad, sgd, multi_tensor_apply, optimizer (not "lamb":
 *                  it reads in every "lambda"; Apex LAMB runs in multi_tensor_apply)
 *   reduction      reduce, triton_red, triton_per, devicescan, reducebykey
 *   copy           copy, memcpy, memset, cat_array, transpose
 *   elementwise    elementwise, pointwise, triton_poi, dropout, fill
 *   other          anything else
 *
 * Order matters where names hold several patterns: attention before gemm
 * (fmha_cutlassF), convolution before gemm (implicit_convolve_sgemm,
 * fprop_implicit_gemm), gemm before fp8 (FP8 GEMMs), embedding before
 * optimizer (split_embedding_backward_codegen_adagrad), loss before softmax
 * (softmax_xentropy), copy before elementwise (direct_copy_kernel inside
 * an elementwise kernel). The library name fbgemm is not read as gemm
 * (fbgemm_gpu's FP8 quantize kernels are fp8). */
#ifndef MODEL_KERNEL_FAMILY_H
#define MODEL_KERNEL_FAMILY_H

enum model_kernel_family {
    MODEL_KF_OTHER,
    MODEL_KF_GEMM,
    MODEL_KF_ATTENTION,
    MODEL_KF_CONVOLUTION,
    MODEL_KF_ELEMENTWISE,
    MODEL_KF_NORMALIZATION,
    MODEL_KF_SOFTMAX,
    MODEL_KF_REDUCTION,
    MODEL_KF_EMBEDDING,
    MODEL_KF_LOSS,
    MODEL_KF_ROTARY,
    MODEL_KF_MOE,
    MODEL_KF_FP8,
    MODEL_KF_OPTIMIZER,
    MODEL_KF_COMMUNICATION,
    MODEL_KF_COPY,
    MODEL_KF_COUNT
};

/* The family of a kernel name. */
enum model_kernel_family model_kernel_family(const char *kernel_name);

/* "gemm", "attention", ...; "other" out of range. */
const char *model_kernel_family_name(enum model_kernel_family f);

/* The family named, or -1. */
int model_kernel_family_parse(const char *name);

/* Whether kernel name (its first 1023 bytes, case aside) holds any of
 * words (lowercase, NULL-terminated). */
int model_kernel_name_has(const char *name, const char *const *words);

#endif
