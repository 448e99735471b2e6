/* tests/fuzz/fuzz_kernel_samples.c: libFuzzer target for the readers of
 * an op's `Input Dims` and `Input type` in `stepcast calibrate traces`.
 *
 * An input starting with '{' or a gzip header is a trace: loaded with
 * small limits, its GEMM and memory-bound samples taken and fitted. Any
 * other input is "name\0dims\0types" for mem_op_bytes (the name's first
 * byte picks an op when it is not a known one). Anything but a clean
 * success or a clean error is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/gemm_samples.h"
#include "estimator/kernel_model.h"
#include "estimator/mem_samples.h"
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

    fuzz_load_opts(&o);
    if (model_trace_load_mem(data, size, "fuzz", &o, &t, &err) != SC_OK)
        return;
    if (gemm_samples_from_trace(t, &g, NULL, &err) == SC_OK && mem_samples_from_trace(t, &m, &sk, &err) == SC_OK) {
        struct kernel_params base, out;
        struct gemm_fit gf;
        struct mem_fit mf;
        const struct hw_profile *hw = hw_profile_find("a100-sxm4-40gb");
        kernel_params_default(&base);
        (void)gemm_samples_fit(&base, hw, g.v, g.n, &out, &gf, &err);
        (void)mem_samples_fit(&base, hw, m.v, m.n, &out, &mf, &err);
    }
    gemm_samples_release(&g);
    mem_samples_release(&m);
    model_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ops[] = {"aten::add", "aten::add_", "aten::copy_", "aten::fill_",
                                      "aten::le", "aten::native_dropout", "aten::where", "aten::mm"};
    if (size && (data[0] == '{' || data[0] == 0x1f)) {
        trace_samples(data, size);
        return 0;
    }
    char *text = malloc(size + 3), *name, *dims, *types;
    struct sc_error err;
    double bytes;
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = text[size + 1] = text[size + 2] = '\0';
    name = text;
    dims = name + strlen(name) + 1;
    types = dims + strlen(dims) + 1;
    if (strncmp(name, "aten::", 6) != 0)
        name = (char *)ops[size ? data[0] % (sizeof ops / sizeof ops[0]) : 0];
    (void)mem_op_bytes(name, dims, types, &bytes, &err);
    free(text);
    return 0;
}
