/* model/kernel_family.c: kernel families by name pattern (kernel_family.h). */
#include "model/kernel_family.h"

#include <ctype.h>
#include <string.h>

#include "model/collective.h"
#include "common/banned.h"

static const char *const family_names[MODEL_KF_COUNT] = {
    [MODEL_KF_OTHER] = "other",
    [MODEL_KF_GEMM] = "gemm",
    [MODEL_KF_ATTENTION] = "attention",
    [MODEL_KF_CONVOLUTION] = "convolution",
    [MODEL_KF_ELEMENTWISE] = "elementwise",
    [MODEL_KF_NORMALIZATION] = "normalization",
    [MODEL_KF_SOFTMAX] = "softmax",
    [MODEL_KF_REDUCTION] = "reduction",
    [MODEL_KF_EMBEDDING] = "embedding",
    [MODEL_KF_LOSS] = "loss",
    [MODEL_KF_ROTARY] = "rotary",
    [MODEL_KF_MOE] = "moe",
    [MODEL_KF_FP8] = "fp8",
    [MODEL_KF_OPTIMIZER] = "optimizer",
    [MODEL_KF_COMMUNICATION] = "communication",
    [MODEL_KF_COPY] = "copy",
};

/* In match order (see the header); patterns are lowercase. */
static const struct {
    enum model_kernel_family family;
    const char *patterns[18];
} table[] = {
    {MODEL_KF_ATTENTION, {"flash", "fmha", "attention", "attn", "sdpa"}},
    {MODEL_KF_NORMALIZATION,
     {"layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "group_norm", "bn_fw",
      "bn_bw", "ln_fwd", "ln_bwd", "gammabeta", "rowwisemoments", "welford", "cucomputegradinput"}},
    {MODEL_KF_ROTARY, {"rotary", "rope_", "_rope"}},
    {MODEL_KF_MOE, {"moe_", "_moe", "unpermute", "permute_row", "topk_gating", "expert"}},
    {MODEL_KF_CONVOLUTION, {"conv", "fprop", "dgrad", "wgrad", "winograd", "fft2d", "implicit_gemm"}},
    {MODEL_KF_GEMM, {"gemm", "gemv", "cutlass", "xmma", "cublas", "nvjet", "matmul", "splitkreduce"}},
    {MODEL_KF_FP8, {"fp8", "amax", "cast_transpose", "quantize", "scale_update"}},
    {MODEL_KF_EMBEDDING, {"embedding", "embs_", "indexselect"}},
    {MODEL_KF_LOSS, {"loss", "cross_entropy", "crossentropy", "xentropy"}},
    {MODEL_KF_SOFTMAX, {"softmax"}},
    {MODEL_KF_OPTIMIZER, {"adam", "adagrad", "sgd", "multi_tensor_apply", "optimizer"}},
    {MODEL_KF_REDUCTION, {"reduce", "triton_red", "triton_per", "devicescan", "reducebykey"}},
    {MODEL_KF_COPY, {"copy", "memcpy", "memset", "cat_array", "transpose"}},
    {MODEL_KF_ELEMENTWISE, {"elementwise", "pointwise", "triton_poi", "dropout", "fill"}},
};

/* Kernel name's first 1023 bytes lowercased into low. */
static void lowercase(const char *name, char low[1024])
{
    size_t n = 0;
    for (const char *p = name; p && *p && n + 1 < 1024; p++)
        low[n++] = (char)tolower((unsigned char)*p);
    low[n] = '\0';
}

int model_kernel_name_has(const char *name, const char *const *words)
{
    char low[1024];
    lowercase(name, low);
    for (size_t k = 0; words[k]; k++)
        if (strstr(low, words[k]))
            return 1;
    return 0;
}

enum model_kernel_family model_kernel_family(const char *name)
{
    char low[1024];
    if (!name)
        return MODEL_KF_OTHER;
    if (model_is_comm_kernel(name))
        return MODEL_KF_COMMUNICATION;
    /* the name lowercased, library names that read like a family blanked
     * out (fbgemm_gpu is no GEMM) */
    lowercase(name, low);
    for (char *fb = strstr(low, "fbgemm"); fb; fb = strstr(fb, "fbgemm"))
        memcpy(fb, "fb____", 6);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        for (size_t k = 0; k < sizeof table[i].patterns / sizeof table[i].patterns[0] && table[i].patterns[k]; k++)
            if (strstr(low, table[i].patterns[k]))
                return table[i].family;
    return MODEL_KF_OTHER;
}

const char *model_kernel_family_name(enum model_kernel_family f)
{
    return (unsigned)f < MODEL_KF_COUNT ? family_names[f] : "other";
}

int model_kernel_family_parse(const char *name)
{
    for (int f = 0; f < MODEL_KF_COUNT; f++)
        if (strcmp(family_names[f], name) == 0)
            return f;
    return -1;
}
