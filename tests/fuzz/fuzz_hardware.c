/* tests/fuzz/fuzz_hardware.c: libFuzzer target for the hardware profile
 * reader (estimator/costs/hardware.h), which `stepcast --server URL hardware`
 * runs on the server's documents.
 *
 * Arbitrary bytes go to cost_hw_profile_parse; a profile that parses must give
 * the kernel model finite, positive times: a GEMM and a flash attention
 * pass in each dtype it has, with the estimator's parameters for it
 * (its measured GEMM ceilings and attention taken). Anything but a clean
 * success or a clean error is a bug. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hw_profile p;
    struct sc_error err;
    if (cost_hw_profile_parse((const char *)data, size, &p, &err) != SC_OK)
        return 0;
    struct kernel_params k;
    cost_kernel_params_for_gpu(&k, &p);
    for (int d = 0; d < HW_DTYPE_COUNT; d++) {
        if (!(p.peak_tflops[d] > 0))
            continue;
        struct gemm_shape g = {.m = 4096, .n = 1024, .k = 777, .batch = 2, .dtype = (enum hw_dtype)d};
        struct gemm_estimate e;
        struct attn_shape a = {.batch = 2, .heads = 8, .kv_heads = 2, .seq_q = 1000, .seq_kv = 1000,
                               .head_dim = 128, .causal = 1, .dtype = (enum hw_dtype)d};
        double us;
        if (cost_kernel_gemm(&k, &p, &g, &e, &err) == SC_OK && !(e.time_us > 0 && isfinite(e.time_us)))
            abort();
        for (int bwd = 0; bwd < 2; bwd++)
            if (cost_kernel_flash_attention(&k, &p, &a, bwd, &us, &err) == SC_OK && !(us > 0 && isfinite(us)))
                abort();
    }
    return 0;
}
