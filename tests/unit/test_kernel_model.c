/* tests/unit/test_kernel_model.c: the kernel model on the compiled-in
 * hardware profiles, with figures computed by hand from the profiles and
 * the documented parameters: the ceiling per dtype, a large GEMM near it,
 * wave quantisation, a memory-bound GEMV, memory-bound kernels, flash and
 * unfused attention, and bad input. */
#include <math.h>

#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "tests/check.h"
#include "common/banned.h"

static const struct hw_profile *gpu(const char *id)
{
    const struct hw_profile *hw = cost_hw_profile_find(id);
    CHECK(hw != NULL);
    return hw;
}

static double gemm_us(const struct hw_profile *hw, double m, double n, double k, enum hw_dtype d,
                      struct gemm_estimate *e)
{
    struct kernel_params p;
    struct sc_error err;
    struct gemm_shape s = {.m = m, .n = n, .k = k, .batch = 1, .dtype = d};
    cost_kernel_params_default(&p);
    CHECK_EQ_INT(cost_kernel_gemm(&p, hw, &s, e, &err), SC_OK);
    return e->time_us;
}

TEST(kernel_model_ceiling_per_dtype)
{
    const struct hw_profile *a100 = gpu("a100-sxm4-80gb"), *v100 = gpu("v100-sxm2-32gb");
    struct kernel_params p;
    cost_kernel_params_default(&p);
    if (!a100 || !v100)
        return;
    /* bf16: the MAMF table's 271.2; fp16 shares its efficiency; tf32 has
     * no MAMF figure: peak x 0.80 */
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&p, a100, HW_BF16), 271.2, 1e-9);
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&p, a100, HW_FP16), 312 * 271.2 / 312, 1e-9);
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&p, a100, HW_TF32), 156 * 0.80, 1e-9);
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&p, a100, HW_FP8), 0, 0); /* no fp8 on an A100 */
    CHECK(cost_kernel_gemm_ceiling_tflops(&p, v100, HW_BF16) == 0);
    p.gemm_ceiling_scale = 0.5;
    CHECK_NEAR(cost_kernel_gemm_ceiling_tflops(&p, a100, HW_BF16), 135.6, 1e-9);
}

TEST(kernel_model_large_gemm_reaches_the_ceiling)
{
    const struct hw_profile *h100 = gpu("h100-sxm");
    if (!h100)
        return;
    struct kernel_params p;
    cost_kernel_params_default(&p);
    double ceiling = cost_kernel_gemm_ceiling_tflops(&p, h100, HW_BF16);
    struct gemm_estimate e;
    gemm_us(h100, 8192, 8192, 8192, HW_BF16, &e);
    /* whole tiles, many waves: within a few percent of the ceiling, never above */
    CHECK(e.tflops <= ceiling);
    CHECK(e.tflops > 0.93 * ceiling);
    CHECK(e.compute_us > e.memory_us);
}

TEST(kernel_model_wave_quantisation)
{
    /* 108 tiles of 128 x 128 fill the A100's 108 SMs once; one more tile
     * column needs a second wave of the same length */
    const struct hw_profile *a100 = gpu("a100-sxm4-80gb");
    if (!a100)
        return;
    struct gemm_estimate one, two;
    double t1 = gemm_us(a100, 128 * 9, 128 * 12, 16384, HW_BF16, &one);
    double t2 = gemm_us(a100, 128 * 9, 128 * 12 + 8, 16384, HW_BF16, &two);
    CHECK(t2 > 1.3 * t1);
    CHECK(one.waves <= 1.0);
    /* per FLOP the partial second wave is the worse deal */
    CHECK(two.tflops < one.tflops);
}

TEST(kernel_model_gemv_is_memory_bound)
{
    /* 1 x 8192 x 8192 in bf16 reads the 128 MiB matrix once: at 86% of the
     * A100 80GB's 2039 GB/s, 76.5 us, plus the 3 us kernel cost */
    const struct hw_profile *a100 = gpu("a100-sxm4-80gb");
    if (!a100)
        return;
    struct gemm_estimate e;
    double bytes = (8192.0 * 8192 + 8192 + 8192) * 2;
    double t = gemm_us(a100, 1, 8192, 8192, HW_BF16, &e);
    CHECK_NEAR(t, bytes / (2039 * 0.86 * 1e3) + 3, 0.05 * t);
}

TEST(kernel_model_memory_bound_kernels)
{
    const struct hw_profile *h100 = gpu("h100-sxm");
    if (!h100)
        return;
    struct kernel_params p;
    cost_kernel_params_default(&p);
    CHECK_NEAR(cost_kernel_memory_us(&p, h100, 1e9), 3 + 1e9 / (h100->hbm_gbps * 0.86 * 1e3), 1e-9);
    CHECK_NEAR(cost_kernel_memory_us(&p, h100, 0), 3, 0);
    CHECK_NEAR(cost_kernel_mem_bytes(KERNEL_MEM_BINARY, 1000, HW_BF16, HW_BF16), 6000, 0);
    CHECK_NEAR(cost_kernel_mem_bytes(KERNEL_MEM_DROPOUT, 1000, HW_BF16, HW_BF16), 5000, 0);
    CHECK_NEAR(cost_kernel_mem_bytes(KERNEL_MEM_CAST, 1000, HW_FP8, HW_BF16), 3000, 0);
}

/* PyTorch's non-vectorised elementwise kernels: on an H100 or H200 (132
 * SMs) a binary bf16 kernel over 58.7 M elements (the Llama step's
 * multiplies on its chunked halves) is bound by the SMs' element rate, the
 * same on both GPUs; over few elements per byte, by HBM as any other. */
TEST(kernel_model_strided_elementwise)
{
    const struct hw_profile *h100 = gpu("h100-sxm"), *h200 = gpu("h200");
    if (!h100 || !h200)
        return;
    struct kernel_params p;
    struct sc_error err;
    cost_kernel_params_default(&p);
    double n = 2.0 * 2048 * 14336, bytes = cost_kernel_mem_bytes(KERNEL_MEM_BINARY, n, HW_BF16, HW_BF16);
    double t100 = cost_kernel_strided_us(&p, h100, n, bytes), t200 = cost_kernel_strided_us(&p, h200, n, bytes);
    CHECK_NEAR(t100, n / (132 * 2400.0), 1e-9);
    CHECK_NEAR(t200, t100, 1e-9);
    CHECK(t100 > cost_kernel_memory_us(&p, h100, bytes) - p.kernel_fixed_us);
    CHECK_NEAR(cost_kernel_strided_us(&p, h100, 0, bytes), cost_kernel_memory_us(&p, h100, bytes) - p.kernel_fixed_us, 1e-9);
    p.strided_elements_per_sm_us = 0;
    CHECK_EQ_INT(cost_kernel_params_check(&p, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "strided_elements_per_sm_us");
}

TEST(kernel_model_attention)
{
    const struct hw_profile *h100 = gpu("h100-sxm");
    if (!h100)
        return;
    struct kernel_params p;
    struct sc_error err;
    cost_kernel_params_default(&p);
    struct attn_shape s = {.batch = 4, .heads = 32, .kv_heads = 32, .seq_q = 8192, .seq_kv = 8192,
                           .head_dim = 128, .causal = 0, .dtype = HW_BF16};
    double full, causal, bwd, unfused, gqa;
    p.attn_efficiency = 0.84;
    p.attn_backward_fraction = 0.865;
    p.attn_block_us = 6;
    p.attn_backward_block_us = 24;
    CHECK_EQ_INT(cost_kernel_flash_attention(&p, h100, &s, 0, &full, &err), SC_OK);
    /* compute-bound: 4 b h s^2 d FLOPs at 0.84 of the ceiling, 4 x 32 x 64
     * = 8192 blocks of 128 queries in ceil(8192 / 132) = 63 waves of 62.06,
     * each wave 6 us more */
    double flops = 4.0 * 4 * 32 * 8192 * 8192 * 128;
    double rate = cost_kernel_gemm_ceiling_tflops(&p, h100, HW_BF16) * 0.84 * 1e6;
    CHECK_NEAR(full, flops / rate * 63 / (8192.0 / 132) + 63 * 6 + 3, 1e-6 * full);
    s.causal = 1;
    CHECK_EQ_INT(cost_kernel_flash_attention(&p, h100, &s, 0, &causal, &err), SC_OK);
    /* (s + 1) / 2s of the scores visible; the blocks' time stays */
    CHECK_NEAR((causal - 3 - 63 * 6) / (full - 3 - 63 * 6), 8193.0 / 2 / 8192, 1e-9);
    CHECK_EQ_INT(cost_kernel_flash_attention(&p, h100, &s, 1, &bwd, &err), SC_OK);
    /* 2.5 times the FLOPs at 0.865 of the forward's throughput, 24 us a wave */
    CHECK_NEAR((bwd - 3 - 63 * 24) / (causal - 3 - 63 * 6), 2.5 / 0.865, 1e-6);
    s.kv_heads = 8; /* grouped-query: the same FLOPs, fewer bytes */
    CHECK_EQ_INT(cost_kernel_flash_attention(&p, h100, &s, 0, &gqa, &err), SC_OK);
    CHECK_NEAR(gqa, causal, 1e-9);
    s.causal = 0;
    CHECK_EQ_INT(cost_kernel_unfused_attention(&p, h100, &s, 0, &unfused, &err), SC_OK);
    CHECK(unfused > full); /* the 8192^2 score matrix goes through HBM */
    s.kv_heads = 64;
    CHECK_EQ_INT(cost_kernel_flash_attention(&p, h100, &s, 0, &full, &err), SC_EINVAL);
}

TEST(kernel_model_bad_input)
{
    const struct hw_profile *a100 = gpu("a100-sxm4-80gb");
    if (!a100)
        return;
    struct kernel_params p;
    struct sc_error err;
    struct gemm_estimate e;
    cost_kernel_params_default(&p);
    struct gemm_shape s = {.m = 128, .n = 128, .k = 128, .batch = 1, .dtype = HW_FP8};
    CHECK_EQ_INT(cost_kernel_gemm(&p, a100, &s, &e, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "fp8");
    s.dtype = HW_BF16;
    s.k = 0;
    CHECK_EQ_INT(cost_kernel_gemm(&p, a100, &s, &e, &err), SC_EINVAL);
    s.k = NAN;
    CHECK_EQ_INT(cost_kernel_gemm(&p, a100, &s, &e, &err), SC_EINVAL);
    s.k = 128;
    p.hbm_fraction = 1.5;
    CHECK_EQ_INT(cost_kernel_gemm(&p, a100, &s, &e, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "hbm_fraction");
}
