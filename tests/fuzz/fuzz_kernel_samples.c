/* tests/fuzz/fuzz_kernel_samples.c: libFuzzer target for the readers of
 * an op's `Input Dims`, `Input type` and `Concrete Inputs` in `stepcast
 * calibrate traces`.
 *
 * An input starting with '{' or a gzip header is a trace: loaded with
 * small limits, its GEMM, memory-bound and attention samples taken and
 * fitted. Any other input is "name\0dims\0types\0concrete" for
 * calib_mem_op_bytes and calib_attn_op_shape (the name's first byte picks an op when
 * it is not a known one). Anything but a clean success or a clean error
 * is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/attn_samples.h"
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/calibrate/mem_samples.h"
#include "model/trace.h"
#include "tests/fuzz/fuzz_limits.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void trace_samples(const uint8_t *data, size_t size)
{
    struct model_load_opts o;
    struct model_trace *t = NULL;
    struct sc_error err;
    struct gemm_samples g = {0};
    struct mem_samples m = {0};
    struct mem_skips sk = {0};
    struct attn_samples a = {0};

    fuzz_load_opts(&o);
    if (model_trace_load_mem(data, size, "fuzz", &o, &t, &err) != SC_OK)
        return;
    if (calib_gemm_samples_from_trace(t, &g, NULL, &err) == SC_OK && calib_mem_samples_from_trace(t, &m, &sk, &err) == SC_OK &&
        calib_attn_samples_from_trace(t, &a, NULL, &err) == SC_OK) {
        struct kernel_params base, out;
        struct gemm_fit gf;
        struct mem_fit mf;
        struct attn_fit af;
        const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-40gb");
        cost_kernel_params_default(&base);
        (void)calib_gemm_samples_fit(&base, hw, g.v, g.n, &out, &gf, &err);
        (void)calib_mem_samples_fit(&base, hw, m.v, m.n, &out, &mf, &err);
        (void)calib_attn_samples_fit(&base, hw, a.v, a.n, &out, &af, &err);
    }
    calib_gemm_samples_release(&g);
    calib_mem_samples_release(&m);
    calib_attn_samples_release(&a);
    model_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ops[] = {"aten::add", "aten::add_", "aten::copy_", "aten::fill_",
                                      "aten::le", "aten::native_dropout", "aten::where", "aten::mm",
                                      "aten::_flash_attention_forward", "aten::_efficient_attention_backward",
                                      "aten::_cudnn_attention_forward"};
    if (size && (data[0] == '{' || data[0] == 0x1f)) {
        trace_samples(data, size);
        return 0;
    }
    char *text = malloc(size + 4), *name, *dims, *types, *concrete;
    struct sc_error err;
    struct attn_shape shape;
    int backward;
    double bytes;
    if (!text)
        return 0;
    memcpy(text, data, size);
    memset(text + size, 0, 4);
    name = text;
    dims = name + strlen(name) + 1;
    types = dims + strlen(dims) + 1;
    concrete = types + strlen(types) + 1;
    if (strncmp(name, "aten::", 6) != 0)
        name = (char *)ops[size ? data[0] % (sizeof ops / sizeof ops[0]) : 0];
    (void)calib_mem_op_bytes(name, dims, types, &bytes, &err);
    (void)calib_attn_op_shape(name, dims, types, concrete, &shape, &backward, &err);
    free(text);
    return 0;
}
