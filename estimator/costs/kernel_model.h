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
 * come from cited sources (cost_params.def, docs/cost-models.md), and a
 * fit may override them. */
#ifndef ESTIMATOR_KERNEL_MODEL_H
#define ESTIMATOR_KERNEL_MODEL_H

#include "common/error.h"
#include "estimator/costs/hardware.h"

/* The kernel model's parameters: each field's cited value, range, unit,
 * meaning and source are its row of cost_params.def. */
struct kernel_params {
    double gemm_ceiling_scale;     /* multiplier on the achievable GEMM ceiling */
    double mamf_fallback_fraction; /* the ceiling over dense peak without a MAMF figure */
    double gemm_full_tile;         /* edge of the smallest tile at the ceiling */
    double hbm_fraction;           /* achievable share of HBM bandwidth */
    double kernel_fixed_us;        /* fixed cost of every kernel */
    /* flash attention: forward throughput over the GEMM ceiling, backward
     * over forward, and the fixed time per wave of 128-query blocks of
     * each. A GPU whose profile carries its own measured attention
     * (hw_profile.attn_*) takes all four from it (cost_kernel_params_for_gpu). */
    double attn_efficiency;
    double attn_backward_fraction;
    double attn_block_us;
    double attn_backward_block_us;
    double strided_elements_per_sm_us; /* non-vectorised elementwise kernels' pace */
    double dtype_scale[HW_DTYPE_COUNT]; /* a dtype's own multiplier, over gemm_ceiling_scale */
};

/* The parameters one by one, as cluster profiles and checks name them:
 * the fields in cost_params.def's order, then gemm_ceiling_scale_<dtype>
 * for each dtype. `buf` holds a per-dtype name. */
size_t cost_kernel_param_count(void);
const char *cost_kernel_param_name(size_t i, char *buf, size_t cap);
double *cost_kernel_param_at(struct kernel_params *p, size_t i);
double cost_kernel_param_get(const struct kernel_params *p, size_t i);

/* The cited values (cost_params.def). */
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
