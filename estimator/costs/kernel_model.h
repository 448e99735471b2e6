/* estimator/costs/kernel_model.h: what a GPU kernel costs (DESIGN.md §5,
 * peers.md §4), from a GPU's hardware profile and a few named parameters.
 *
 * GEMMs, by (M, N, K, batch, dtype): the output is cut into tiles (as
 * CUTLASS and cuBLAS do), the tiles run in waves over the SMs, each SM at
 * its share of the GPU's achievable ceiling (the ceiling fitted to the
 * GPU's own GEMM table where its profile has one, else its measured MAMF,
 * else the dense peak x the MAMF table's typical efficiency),
 * scaled down for tiles too small to feed the tensor cores; K may be split
 * over more tiles when too few tiles fill the GPU. The best tiling is
 * taken, as the libraries' heuristics try to, and the kernel is bounded
 * below by the bytes it moves at the achievable HBM bandwidth. So small
 * and odd shapes reach less than the ceiling for the reasons they do on a
 * GPU: partial tiles, partial waves, small tiles, memory.
 *
 * Attention (flash, forward or backward, causal, grouped-query) by its
 * FLOPs over blocks of 128 queries in waves, at a fraction of the GEMM
 * ceiling (the backward at a fraction of the forward's), plus a fixed time
 * per block and wave (loading the queries, the softmax's last rescaling,
 * writing the output and log-sum-exp; the backward's dQ, dK and dV
 * bookkeeping), and its bytes;
 * unfused attention as its two batched GEMMs and softmax. Memory-bound kernels (elementwise, norms, softmax, dropout,
 * casts, the optimizer) by bytes moved at the achievable HBM bandwidth;
 * elementwise kernels over strided operands, which PyTorch runs without
 * vector loads, at least by the SMs' element rate.
 * Every kernel pays a fixed cost.
 *
 * All parameters are hardware-level and physically meaningful; defaults
 * come from cited sources (cost_kernel_params_default, README "Cost models"),
 * and a fit may override them. */
#ifndef ESTIMATOR_KERNEL_MODEL_H
#define ESTIMATOR_KERNEL_MODEL_H

#include "common/error.h"
#include "estimator/costs/hardware.h"

struct kernel_params {
    /* multiplier on the achievable GEMM ceiling (1: the profile's measured
     * gemm_tflops, else its cited MAMF figure) */
    double gemm_ceiling_scale;
    /* the ceiling as a fraction of dense peak where the profile has no MAMF
     * figure for the dtype: 0.80, the median efficiency of the NVIDIA rows
     * of the MAMF bf16 table (../shared/calibration/mamf.md) */
    double mamf_fallback_fraction;
    /* edge of the smallest square output tile that runs at the ceiling: 128
     * (the CUTLASS and cuBLAS tensor-op default tile, 128x128); a smaller
     * tile loads more operand bytes per FLOP and runs at
     * (tm tn / (tm + tn)) / (edge / 2) of it */
    double gemm_full_tile;
    /* achievable fraction of HBM bandwidth: 0.86, the STREAM triad of
     * te42kyfo/gpu-benches on an A100-SXM4-80GB, 1759 of 2039 GB/s
     * (cuda-stream/a100_80.txt; 0.92 on an H100 PCIe) */
    double hbm_fraction;
    /* fixed cost of every kernel on the GPU, microseconds: 3, the time of
     * a null kernel on recent GPUs and drivers (NVIDIA developer forums,
     * "too much time for kernel launch latency", 2022) */
    double kernel_fixed_us;
    /* flash attention's throughput between its fixed times, as a fraction
     * of the GEMM ceiling: 0.84, FlashAttention-2's forward 73% of A100
     * peak (Dao 2023) over the A100's MAMF efficiency of 86.9%; on
     * Blackwell 0.711 (cuDNN's fused attention on a B200, arXiv 2603.05451:
     * cost_kernel_params_for_gpu) */
    double attn_efficiency;
    /* its backward's throughput over its forward's: 0.865,
     * FlashAttention-3's kernels on an H100 SXM5 at head dimension 128
     * and 8K tokens, 559 TFLOP/s backward against 646 forward (Shah et
     * al., 2024, arXiv 2407.08608) */
    double attn_backward_fraction;
    /* the fixed time of each wave of blocks of 128 queries, forward and
     * backward, microseconds: 0 (the figures above are a share at long
     * sequences). A GPU whose profile carries its own measured attention
     * (hw_profile.attn_*: `calibrate traces` on its attention
     * microbenchmark) takes all four from it (cost_kernel_params_for_gpu). */
    double attn_block_us;
    double attn_backward_block_us;
    /* elements a streaming multiprocessor takes per microsecond through
     * PyTorch's non-vectorised elementwise kernels (the path of operands
     * that are strided views, as an eager SwiGLU's chunked halves are),
     * whose index arithmetic, not HBM, bounds them: 2,400, the eight such
     * kernels of the H100's traced Llama step
     * (data/calibration/torch-steps: silu, its gradient and the gate's
     * multiplies, 178 to 204 us for 58.7 M elements on 132 SMs), checked
     * on the H200's trace, where they take 0.95x the H100's time against
     * 0.70x for HBM-bound kernels */
    double strided_elements_per_sm_us;
    /* a dtype's own multiplier on its ceiling, over gemm_ceiling_scale:
     * 1, unless a GEMM table with several dtypes fits each
     * (calib_gemm_samples_fit_dtypes) */
    double dtype_scale[HW_DTYPE_COUNT];
};

void cost_kernel_params_default(struct kernel_params *p);
/* The defaults, with the GPU generation's cited attention share
 * (Blackwell's) and what was measured on the GPU itself (its attention). */
void cost_kernel_params_for_gpu(struct kernel_params *p, const struct hw_profile *hw);

/* SC_EINVAL naming the field when a parameter is out of its range. */
int cost_kernel_params_check(const struct kernel_params *p, struct sc_error *err);

/* The achievable GEMM throughput of the GPU in a dtype, TFLOP/s (0 when
 * the GPU has no such dtype). */
double cost_kernel_gemm_ceiling_tflops(const struct kernel_params *p, const struct hw_profile *hw,
                                  enum hw_dtype dtype);

struct gemm_shape {
    double m, n, k; /* C[m x n] = A[m x k] B[k x n] */
    double batch;   /* independent GEMMs of that shape (bmm), >= 1 */
    enum hw_dtype dtype;
};

struct gemm_estimate {
    double time_us;
    double compute_us, memory_us; /* the two bounds (without the fixed cost) */
    int tile_m, tile_n, split_k;  /* the tiling taken */
    double waves;                 /* tile waves over the SMs */
    double tflops;                /* achieved: 2 m n k batch / time */
};

/* The time of one GEMM kernel. SC_EINVAL for a non-positive or
 * non-finite dimension, or a dtype the GPU lacks. */
int cost_kernel_gemm(const struct kernel_params *p, const struct hw_profile *hw, const struct gemm_shape *s,
                struct gemm_estimate *out, struct sc_error *err);

/* The time of a kernel moving `bytes` between HBM and the SMs. */
double cost_kernel_memory_us(const struct kernel_params *p, const struct hw_profile *hw, double bytes);

/* A non-vectorised elementwise kernel over `elements` moving `bytes`:
 * bounded by the SMs' element rate (strided_elements_per_sm_us) or by
 * HBM, whichever is slower, without the fixed cost. */
double cost_kernel_strided_us(const struct kernel_params *p, const struct hw_profile *hw, double elements, double bytes);

/* Bytes a memory-bound kernel moves per element of its tensor, each
 * element read and written once:
 *   elementwise unary (activation, scale)   2 x dtype
 *   elementwise binary (add, mul, residual) 3 x dtype
 *   norm forward (layer / RMS norm)         2 x dtype (+ the weights, small)
 *   norm backward                           3 x dtype (x, dy -> dx)
 *   softmax forward                         2 x dtype
 *   softmax backward                        3 x dtype (y, dy -> dx)
 *   dropout                                 2 x dtype + 1 (the mask)
 *   cast to dtype (from the other dtype `from`) from + dtype
 * (an Adam step's bytes depend on where its state lives:
 * spec_optimizer_step_bytes, estimator/spec/memory.h) */
enum kernel_mem_kind {
    KERNEL_MEM_UNARY,
    KERNEL_MEM_BINARY,
    KERNEL_MEM_NORM_FWD,
    KERNEL_MEM_NORM_BWD,
    KERNEL_MEM_SOFTMAX_FWD,
    KERNEL_MEM_SOFTMAX_BWD,
    KERNEL_MEM_DROPOUT,
    KERNEL_MEM_CAST
};
double cost_kernel_mem_bytes(enum kernel_mem_kind kind, double elements, enum hw_dtype dtype,
                        enum hw_dtype from);

struct attn_shape {
    double batch, heads, kv_heads; /* kv_heads < heads: grouped-query */
    double seq_q, seq_kv, head_dim;
    int causal;
    enum hw_dtype dtype;
    double window; /* causal within a sliding window of this many keys; 0 = none */
};

/* Keys a query of s sees on average: all of them; causal, the lower
 * triangle (query i of sq sees skv - sq + i + 1); within a window of w
 * keys (sq == skv), min(i + 1, w): w - w (w - 1) / (2 sq). */
double cost_attn_visible_keys(const struct attn_shape *s);

/* Flash attention, one kernel: forward (4 b h sq skv d FLOPs, halved when
 * causal) or backward (2.5 x forward: the recomputed scores and the four
 * gradient products). */
int cost_kernel_flash_attention(const struct kernel_params *p, const struct hw_profile *hw,
                           const struct attn_shape *s, int backward, double *time_us,
                           struct sc_error *err);

/* Unfused attention: Q K^T and P V as batched GEMMs (b x heads of them)
 * and the softmax over the b h sq skv scores in memory (forward); the
 * backward's four batched GEMMs and softmax backward. Causal masking saves
 * nothing here. The sum of its kernels' times. */
int cost_kernel_unfused_attention(const struct kernel_params *p, const struct hw_profile *hw,
                             const struct attn_shape *s, int backward, double *time_us,
                             struct sc_error *err);

#endif
