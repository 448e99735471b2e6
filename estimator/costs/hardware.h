/* estimator/costs/hardware.h: GPU hardware profiles (one JSON file per GPU in data/hardware).
 *
 * A profile holds a GPU's public spec-sheet figures: dense peak TFLOP/s per
 * dtype, HBM size and bandwidth, SM count, NVLink (or xGMI) and network
 * bandwidth per GPU and direction, board power, the size of its NVLink
 * domain, and the measured maximum achievable matmul throughput and NCCL
 * collective curves where a cited microbenchmark has them. The profiles are compiled into the programs
 * (build/gen/hardware_data.c is generated from data/hardware/ by the build),
 * so nothing has to be installed beside them. data/hardware/README.md
 * documents every field and every figure's source.
 *
 * Trace device names map to profiles through each profile's explicit
 * `device_names` list: a name no profile lists is unknown (NULL), never
 * guessed. */
#ifndef ESTIMATOR_HARDWARE_H
#define ESTIMATOR_HARDWARE_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/coll_lines.h"
#include "estimator/doc/json_doc.h"

#define HW_MAX_DEVICE_NAMES 4

enum hw_dtype { HW_FP32, HW_TF32, HW_FP16, HW_BF16, HW_FP8, HW_FP4, HW_DTYPE_COUNT };

const char *cost_hw_dtype_name(enum hw_dtype d); /* "fp32", "tf32", ... */
/* The dtypes by name, in the enum's order, ending in a NULL name (json_doc.h). */
extern const struct doc_name cost_hw_dtype_names[HW_DTYPE_COUNT + 1];
/* SC_EINVAL with a message naming the accepted names when s is none. */
int cost_hw_dtype_parse(const char *s, enum hw_dtype *out, struct sc_error *err);
/* Bytes per element as stored: fp32 and tf32 4, fp16 and bf16 2, fp8 1, fp4 0.5. */
double cost_hw_dtype_bytes(enum hw_dtype d);

/* The GPU's architecture (generation): what decides the low-precision
 * formats its tensor cores take (MXFP8 and NVFP4 on Blackwell only) and
 * the defaults that follow (the spec's options.fp8_recipe). A profile
 * without "architecture" is HW_ARCH_UNKNOWN. */
enum hw_arch { HW_ARCH_UNKNOWN, HW_ARCH_VOLTA, HW_ARCH_AMPERE, HW_ARCH_HOPPER, HW_ARCH_BLACKWELL, HW_ARCH_CDNA3,
               HW_ARCH_COUNT };

const char *cost_hw_arch_name(enum hw_arch a); /* "hopper", ...; "unknown" */

struct hw_profile {
    char id[48];   /* file name without .json, e.g. "h100-sxm" */
    char name[96]; /* marketing name */
    enum hw_arch arch;
    int sm_count;  /* streaming multiprocessors (compute units on AMD) */
    double hbm_gb, hbm_gbps;            /* memory: GB (1e9 bytes) and GB/s */
    double peak_tflops[HW_DTYPE_COUNT]; /* dense peak; 0 = the GPU lacks it */
    double mamf_tflops[HW_DTYPE_COUNT]; /* measured best-shape matmul; 0 = unknown */
    /* the kernel model's GEMM ceiling fitted to this GPU's own GEMM
     * microbenchmark table (data/calibration/gemm-bench), every dtype the
     * GPU has, or none (all 0): the kernel model then starts from
     * mamf_tflops and the estimator's fitted scale (kernel_model.h) */
    double gemm_tflops[HW_DTYPE_COUNT];
    /* flash attention fitted on the GPU's own attention microbenchmark
     * (data/calibration/torch-steps/ID/attention.pt.trace.json.gz, by
     * `calibrate traces`): the kernel model's attn_efficiency,
     * attn_backward_fraction, attn_block_us and attn_backward_block_us
     * (kernel_model.h); all 0 when nobody measured it here */
    double attn_efficiency, attn_backward_fraction, attn_block_us, attn_backward_block_us;
    double nvlink_gbps;  /* GB/s per GPU per direction inside its NVLink domain */
    double network_gbps; /* GB/s per GPU per direction across domains */
    int gpus_per_node;   /* NVLink domain size (72 on GB200 NVL72) */
    double board_power_w;
    int nvls;      /* NVLink SHARP (in-switch reduction) in the domain */
    int ib_sharp;  /* in-network reduction across domains */
    /* measured NCCL curves inside the GPU's NVLink domain, by kind, where
     * a cited nccl-tests run has them (cost_coll_params_from_hw sets them) */
    struct coll_lines coll_lines[MODEL_COLL_OP_COUNT];
    char device_names[HW_MAX_DEVICE_NAMES][64]; /* names traces carry for it */
    int n_device_names;
};

size_t cost_hw_profile_count(void);
const struct hw_profile *cost_hw_profile_at(size_t i); /* sorted by id */
/* The profile with that id, or NULL. */
const struct hw_profile *cost_hw_profile_find(const char *id);
/* The profile listing that trace device name (deviceProperties "name"), or
 * NULL: unknown names are reported by the caller, never guessed. */
const struct hw_profile *cost_hw_profile_for_device(const char *device_name);
/* Whether the profile carries GEMM ceilings measured on the GPU itself. */
int cost_hw_has_gemm_tflops(const struct hw_profile *p);
/* The GPU's measured matmul ceiling for dtype d, TFLOP/s: the larger of
 * its MAMF and its own GEMM table's (fp16 and bf16 share theirs, as they
 * share the tensor cores); the dense peak where nothing was measured, and
 * 0 for a dtype the GPU lacks. No kernel may run faster (invariants.h). */
double cost_hw_matmul_ceiling_tflops(const struct hw_profile *p, enum hw_dtype d);
/* The compiled-in file of profile p (data/hardware/ID.json, NUL-ended):
 * its sources and notes, which the struct leaves out. NULL when p is not
 * one of the compiled-in profiles. */
const char *cost_hw_profile_document(const struct hw_profile *p, size_t *len);
/* Parse one profile document (the data/hardware format). */
int cost_hw_profile_parse(const char *json, size_t len, struct hw_profile *out, struct sc_error *err);

#endif
