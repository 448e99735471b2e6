/* estimator/costs/kernel_model.c: GEMM, attention and memory-bound kernel costs
 * (kernel_model.h). */
#include "estimator/costs/kernel_model.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "estimator/costs/cost_params.h"
#include "common/banned.h"

/* Output tiles the GEMM libraries choose among (CUTLASS's and cuBLAS's
 * threadblock shapes, down to the narrow ones of skinny products), and the
 * main loop's K step, 64 bytes of each operand: K is padded to it. */
static const int tiles[][2] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64},
                               {64, 32},   {32, 64},   {32, 32},   {16, 128}, {128, 16}, {16, 64},
                               {64, 16}};
#define K_STEP_BYTES 64
/* Splits of K tried when the tiles leave SMs idle, and the least K a split
 * keeps (cuBLAS's split-K). */
static const int splits[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
#define MIN_SPLIT_K 128
/* Queries per flash-attention thread block (FlashAttention-2's block). */
#define ATTN_BLOCK_Q 128
/* Flash attention's forward on Blackwell as a share of the GEMM ceiling
 * (MAMF): cuDNN 9.13's fused attention on a B200 in BF16, the
 * FlashAttention-4 paper's best, 1,613 TFLOP/s, over its "up to 1.3x"
 * speedup on cuDNN, 1,241 TFLOP/s, over the B200's MAMF of 1,745 (Zadouri
 * et al., 2026, arXiv 2603.05451). Its exponential and shared-memory
 * limits grow slower than the tensor cores (the paper's "asymmetric
 * scaling"), so the share sits below the A100's 0.84. The backward keeps
 * the cited fraction: no Blackwell backward figure is published beside it. */
#define ATTN_EFFICIENCY_BLACKWELL 0.711

/* The kernel parameters that are fields of struct kernel_params, by the
 * table's names (cost_params.def). */
#define COST_PARAM(group, name, ...) COST_FIELD_##group(name)
#define COST_FIELD_KERNEL(name) {cost_param_##name, offsetof(struct kernel_params, name)},
#define COST_FIELD_KERNEL_DTYPE(name)
#define COST_FIELD_COLL(name)
#define COST_FIELD_HOST(name)
static const struct {
    enum cost_param id;
    size_t off;
} kernel_fields[] = {
#include "estimator/costs/cost_params.def"
};
#undef COST_PARAM
#undef COST_FIELD_KERNEL
#undef COST_FIELD_KERNEL_DTYPE
#undef COST_FIELD_COLL
#undef COST_FIELD_HOST
#define KERNEL_FIELDS (sizeof kernel_fields / sizeof kernel_fields[0])

size_t cost_kernel_param_count(void)
{
    return KERNEL_FIELDS + HW_DTYPE_COUNT;
}

const char *cost_kernel_param_name(size_t i, char *buf, size_t cap)
{
    if (i < KERNEL_FIELDS)
        return cost_params[kernel_fields[i].id].name;
    snprintf(buf, cap, "gemm_ceiling_scale_%s", cost_hw_dtype_name((enum hw_dtype)(i - KERNEL_FIELDS)));
    return buf;
}

static size_t kernel_param_off(size_t i)
{
    if (i < KERNEL_FIELDS)
        return kernel_fields[i].off;
    return offsetof(struct kernel_params, dtype_scale) + (i - KERNEL_FIELDS) * sizeof(double);
}

double *cost_kernel_param_at(struct kernel_params *p, size_t i)
{
    return (double *)((char *)p + kernel_param_off(i));
}

double cost_kernel_param_get(const struct kernel_params *p, size_t i)
{
    return *(const double *)((const char *)p + kernel_param_off(i));
}

static enum cost_param kernel_param_id(size_t i)
{
    return i < KERNEL_FIELDS ? kernel_fields[i].id : cost_param_gemm_ceiling_scale_dtype;
}

void cost_kernel_params_default(struct kernel_params *p)
{
    for (size_t i = 0; i < cost_kernel_param_count(); i++)
        *cost_kernel_param_at(p, i) = cost_param_cited(kernel_param_id(i));
}

void cost_kernel_params_for_gpu(struct kernel_params *p, const struct hw_profile *hw)
{
    cost_kernel_params_default(p);
    if (hw && hw->arch == HW_ARCH_BLACKWELL)
        p->attn_efficiency = ATTN_EFFICIENCY_BLACKWELL;
    if (hw && hw->attn_efficiency > 0) {
        p->attn_efficiency = hw->attn_efficiency;
        p->attn_backward_fraction = hw->attn_backward_fraction;
        p->attn_block_us = hw->attn_block_us;
        p->attn_backward_block_us = hw->attn_backward_block_us;
    }
}

int cost_kernel_params_check(const struct kernel_params *p, struct sc_error *err)
{
    /* every kernel estimate checks its parameters: the name is made only
     * for the message */
    for (size_t i = 0; i < cost_kernel_param_count(); i++) {
        double v = cost_kernel_param_get(p, i);
        if (!cost_param_in_range(kernel_param_id(i), v)) {
            char name[64];
            return cost_param_check(kernel_param_id(i), cost_kernel_param_name(i, name, sizeof name), v, err);
        }
    }
    return SC_OK;
}

double cost_kernel_gemm_ceiling_tflops(const struct kernel_params *p, const struct hw_profile *hw,
                                  enum hw_dtype d)
{
    if ((unsigned)d >= HW_DTYPE_COUNT || !(hw->peak_tflops[d] > 0))
        return 0;
    if (hw->gemm_tflops[d] > 0) /* measured on the GPU itself */
        return hw->gemm_tflops[d] * p->gemm_ceiling_scale * p->dtype_scale[d];
    double eff = p->mamf_fallback_fraction;
    if (hw->mamf_tflops[d] > 0) {
        eff = hw->mamf_tflops[d] / hw->peak_tflops[d];
    } else if (d == HW_FP16 || d == HW_BF16 || d == HW_FP4) {
        /* fp16 and bf16 share the tensor cores: one's measurement is the
         * other's; nobody measured fp4 (NVFP4), which takes the fp8 figure's
         * share of its peak, the nearest format measured */
        enum hw_dtype twin = d == HW_FP16 ? HW_BF16 : d == HW_BF16 ? HW_FP16 : HW_FP8;
        if (hw->mamf_tflops[twin] > 0 && hw->peak_tflops[twin] > 0)
            eff = hw->mamf_tflops[twin] / hw->peak_tflops[twin];
    }
    return hw->peak_tflops[d] * eff * p->gemm_ceiling_scale * p->dtype_scale[d];
}

static double hbm_us(const struct kernel_params *p, const struct hw_profile *hw, double bytes)
{
    return bytes / (hw->hbm_gbps * p->hbm_fraction * 1e3); /* GB/s = 1e3 bytes per us */
}

double cost_kernel_memory_us(const struct kernel_params *p, const struct hw_profile *hw, double bytes)
{
    return p->kernel_fixed_us + hbm_us(p, hw, bytes > 0 ? bytes : 0);
}

double cost_kernel_strided_us(const struct kernel_params *p, const struct hw_profile *hw, double elements, double bytes)
{
    double sms = hw->sm_count > 0 ? (double)hw->sm_count : 1;
    return fmax(hbm_us(p, hw, bytes > 0 ? bytes : 0),
                (elements > 0 ? elements : 0) / (sms * p->strided_elements_per_sm_us));
}

double cost_kernel_mem_bytes(enum kernel_mem_kind kind, double n, enum hw_dtype dtype, enum hw_dtype from)
{
    double e = cost_hw_dtype_bytes(dtype);
    switch (kind) {
    case KERNEL_MEM_UNARY:
    case KERNEL_MEM_NORM_FWD:
    case KERNEL_MEM_SOFTMAX_FWD:
        return 2 * e * n;
    case KERNEL_MEM_BINARY:
    case KERNEL_MEM_NORM_BWD:
    case KERNEL_MEM_SOFTMAX_BWD:
        return 3 * e * n;
    case KERNEL_MEM_DROPOUT:
        return (2 * e + 1) * n;
    case KERNEL_MEM_CAST:
        return (cost_hw_dtype_bytes(from) + e) * n;
    }
    return 0;
}

/* Operand bytes per microsecond an SM's shared memory and L2 path feed to
 * its tensor cores: what a gemm_full_tile square tile needs at the GPU's
 * 16-bit tensor ceiling (2 F^2 FLOPs per K step for 2 F 2-byte operands:
 * 2 F^2 / r = 2 F x 2 / feed),
 * the same whatever the dtype. */
static double sm_feed_bytes_per_us(const struct kernel_params *p, const struct hw_profile *hw,
                                   enum hw_dtype d)
{
    double c16 = fmax(cost_kernel_gemm_ceiling_tflops(p, hw, HW_BF16), cost_kernel_gemm_ceiling_tflops(p, hw, HW_FP16));
    double el = 2;
    if (!(c16 > 0)) { /* no 16-bit tensor cores: the dtype's own path */
        c16 = cost_kernel_gemm_ceiling_tflops(p, hw, d);
        el = cost_hw_dtype_bytes(d);
    }
    double sm_flops = c16 * 1e6 / hw->sm_count;
    return el * sm_flops / p->gemm_full_tile;
}

static int check_gpu(const struct hw_profile *hw, enum hw_dtype d, struct sc_error *err)
{
    if (hw->sm_count < 1 || !(hw->hbm_gbps > 0))
        return sc_error_set(err, SC_EINVAL, "hardware profile '%s' lacks SMs or HBM bandwidth", hw->id);
    if ((unsigned)d >= HW_DTYPE_COUNT || !(hw->peak_tflops[d] > 0))
        return sc_error_set(err, SC_EINVAL, "%s has no %s", hw->name,
                            (unsigned)d < HW_DTYPE_COUNT ? cost_hw_dtype_name(d) : "such dtype");
    return SC_OK;
}

static int positive(double v)
{
    return v > 0 && isfinite(v);
}

int cost_kernel_gemm(const struct kernel_params *p, const struct hw_profile *hw, const struct gemm_shape *s,
                struct gemm_estimate *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    if (!positive(s->m) || !positive(s->n) || !positive(s->k) || !(s->batch >= 1 && isfinite(s->batch)))
        return sc_error_set(err, SC_EINVAL, "GEMM %g x %g x %g (batch %g): dimensions must be positive",
                            s->m, s->n, s->k, s->batch);
    if (check_gpu(hw, s->dtype, err) || cost_kernel_params_check(p, err))
        return err->code;
    double sm_flops = cost_kernel_gemm_ceiling_tflops(p, hw, s->dtype) * 1e6 / hw->sm_count; /* per us */
    double el = cost_hw_dtype_bytes(s->dtype), out_el = el < 2 ? 2 : el; /* fp8/fp4 GEMMs write bf16 */
    double bytes = s->batch * ((s->m * s->k + s->k * s->n) * el + s->m * s->n * out_el);
    double t_mem = hbm_us(p, hw, bytes);
    double feed = sm_feed_bytes_per_us(p, hw, s->dtype);
    double k_step = fmax(1, K_STEP_BYTES / el);
    int first = 1;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        double tm = tiles[i][0], tn = tiles[i][1];
        double n_tiles = ceil(s->m / tm) * ceil(s->n / tn) * s->batch;
        /* one K step of a tile: the padded tile's FLOPs on the SM, or the
         * operand rows and columns it really loads, whichever is slower */
        double step = fmax(2 * tm * tn / sm_flops, (fmin(tm, s->m) + fmin(tn, s->n)) * el / feed);
        for (size_t j = 0; j < sizeof splits / sizeof splits[0]; j++) {
            double sk = splits[j];
            if (sk > 1 && (n_tiles * sk / 2 >= hw->sm_count || s->k / sk < MIN_SPLIT_K))
                break;
            double ks = ceil(ceil(s->k / sk) / k_step) * k_step;
            /* the busiest SM runs its share of the tiles one after another */
            double waves = ceil(n_tiles * sk / hw->sm_count);
            double t_comp = waves * ks * step;
            /* split K: fp32 partial products written and read back, one
             * more kernel to reduce them */
            double t_bytes = t_mem + (sk > 1 ? hbm_us(p, hw, 2 * sk * s->m * s->n * s->batch * 4) : 0);
            double t = fmax(t_comp, t_bytes) + p->kernel_fixed_us * (sk > 1 ? 2 : 1);
            if (first || t < out->time_us) {
                first = 0;
                out->time_us = t;
                out->compute_us = t_comp;
                out->memory_us = t_bytes;
                out->tile_m = (int)tm;
                out->tile_n = (int)tn;
                out->split_k = (int)sk;
                out->waves = n_tiles * sk / hw->sm_count;
            }
        }
    }
    out->tflops = 2 * s->m * s->n * s->k * s->batch / out->time_us * 1e-6;
    return SC_OK;
}

static int check_attn(const struct attn_shape *s, struct sc_error *err)
{
    if (!positive(s->batch) || !positive(s->heads) || !positive(s->kv_heads) || !positive(s->seq_q) ||
        !positive(s->seq_kv) || !positive(s->head_dim) || s->kv_heads > s->heads)
        return sc_error_set(err, SC_EINVAL, "attention shape: sizes must be positive and kv_heads <= heads");
    return SC_OK;
}

double cost_attn_visible_keys(const struct attn_shape *s)
{
    double sq = s->seq_q, skv = s->seq_kv, w = s->window;
    if (!s->causal)
        return skv;
    if (w > 0 && w < skv && sq == skv)
        return w - w * (w - 1) / (2 * sq);
    double off = skv - sq; /* keys every query sees beyond the diagonal */
    double keys = fmin(skv, off + (sq + 1) / 2);
    return keys > 0 ? keys : 1;
}

int cost_kernel_flash_attention(const struct kernel_params *p, const struct hw_profile *hw,
                           const struct attn_shape *s, int backward, double *time_us,
                           struct sc_error *err)
{
    *time_us = 0;
    if (check_attn(s, err) || check_gpu(hw, s->dtype, err) || cost_kernel_params_check(p, err))
        return err->code;
    double b = s->batch, h = s->heads, sq = s->seq_q, skv = s->seq_kv, d = s->head_dim;
    double flops = 4 * b * h * sq * cost_attn_visible_keys(s) * d * (backward ? 2.5 : 1);
    double blocks = b * h * ceil(sq / ATTN_BLOCK_Q);
    double sm_flops = cost_kernel_gemm_ceiling_tflops(p, hw, s->dtype) * p->attn_efficiency *
                      (backward ? p->attn_backward_fraction : 1) * 1e6 / hw->sm_count;
    double waves = ceil(blocks / hw->sm_count);
    double t_comp = waves * ((flops / blocks) / sm_flops + (backward ? p->attn_backward_block_us : p->attn_block_us));
    double el = cost_hw_dtype_bytes(s->dtype);
    double q = b * sq * h * d, kv = b * skv * s->kv_heads * d;
    double bytes = backward ? el * (4 * q + 4 * kv) + 4 * q /* dQ accumulated in fp32 */
                            : el * (2 * q + 2 * kv) + 4 * b * h * sq /* log-sum-exp */;
    *time_us = fmax(t_comp, hbm_us(p, hw, bytes)) + p->kernel_fixed_us;
    return SC_OK;
}

static int add_gemm(const struct kernel_params *p, const struct hw_profile *hw, double batch, double m,
                    double n, double k, enum hw_dtype d, double *sum, struct sc_error *err)
{
    struct gemm_shape g = {.m = m, .n = n, .k = k, .batch = batch, .dtype = d};
    struct gemm_estimate e;
    int rc = cost_kernel_gemm(p, hw, &g, &e, err);
    *sum += e.time_us;
    return rc;
}

int cost_kernel_unfused_attention(const struct kernel_params *p, const struct hw_profile *hw,
                             const struct attn_shape *s, int backward, double *time_us,
                             struct sc_error *err)
{
    *time_us = 0;
    if (check_attn(s, err) || check_gpu(hw, s->dtype, err))
        return err->code;
    double bh = s->batch * s->heads, sq = s->seq_q, skv = s->seq_kv, d = s->head_dim;
    double scores = bh * sq * skv, t = 0;
    enum hw_dtype dt = s->dtype;
    int rc;
    if (!backward) {
        if ((rc = add_gemm(p, hw, bh, sq, skv, d, dt, &t, err)) || /* S = Q K^T */
            (rc = add_gemm(p, hw, bh, sq, d, skv, dt, &t, err)))   /* O = P V */
            return rc;
        t += cost_kernel_memory_us(p, hw, cost_kernel_mem_bytes(KERNEL_MEM_SOFTMAX_FWD, scores, dt, dt));
    } else {
        if ((rc = add_gemm(p, hw, bh, skv, d, sq, dt, &t, err)) || /* dV = P^T dO */
            (rc = add_gemm(p, hw, bh, sq, skv, d, dt, &t, err)) || /* dP = dO V^T */
            (rc = add_gemm(p, hw, bh, sq, d, skv, dt, &t, err)) || /* dQ = dS K */
            (rc = add_gemm(p, hw, bh, skv, d, sq, dt, &t, err)))   /* dK = dS^T Q */
            return rc;
        t += cost_kernel_memory_us(p, hw, cost_kernel_mem_bytes(KERNEL_MEM_SOFTMAX_BWD, scores, dt, dt));
    }
    *time_us = t;
    return SC_OK;
}
