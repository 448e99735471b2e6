/* estimator/synth/quant.c: the quantisation kernels of each low-precision
 * recipe and their bytes (quant.h). */
#include "estimator/synth/quant.h"

#include "common/banned.h"

/* bytes of the bf16 tensor each kernel reads */
#define SRC 2.0

int synth_quant_kernels(enum hw_dtype dtype, enum est_fp8_recipe recipe, enum hw_arch arch, enum quant_tensor t,
                  struct quant_kernel out[QUANT_MAX_KERNELS])
{
    int weight = t == QUANT_WEIGHT;
    if (dtype == HW_FP4) {
        out[0] = (struct quant_kernel){weight ? "nvfp4 amax" : "nvfp4 amax (with Hadamard)", SRC};
        if (weight) {
            out[1] = (struct quant_kernel){"nvfp4 quantize (16x16 blocks)", SRC + 0.5 + 0.5 + 2.0 / 256};
            return 2;
        }
        out[1] = (struct quant_kernel){"nvfp4 quantize", SRC + 0.5 + 1.0 / 16};
        out[2] = (struct quant_kernel){"nvfp4 Hadamard quantize (columnwise)", SRC + 0.5 + 1.0 / 16};
        return 3;
    }
    if (dtype != HW_FP8)
        return 0;
    switch (recipe) {
    case EST_FP8_RECIPE_TENSORWISE:
        out[0] = (struct quant_kernel){"fp8 amax", SRC};
        out[1] = arch == HW_ARCH_BLACKWELL ? (struct quant_kernel){"fp8 cast", SRC + 1}
                                           : (struct quant_kernel){"fp8 cast transpose", SRC + 1 + 1};
        return 2;
    case EST_FP8_RECIPE_BLOCKWISE:
        out[0] = (struct quant_kernel){"fp8 blockwise quantize", SRC + 1 + 1 + (weight ? 0 : 2 * 4.0 / 128)};
        return 1;
    case EST_FP8_RECIPE_MXFP8:
        out[0] = (struct quant_kernel){"mxfp8 quantize", SRC + 1 + 1 + 2 * 1.0 / 32};
        return 1;
    case EST_FP8_RECIPE_NONE:
        break;
    }
    return 0;
}
