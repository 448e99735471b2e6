/* estimator/costs/hardware.c: the hardware profiles compiled into the programs
 * (hardware.h), parsed once on first use. */
#include "estimator/costs/hardware.h"

#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/embedded.h"
#include "estimator/doc/json_doc.h"
#include "common/banned.h"

extern const struct sc_embedded sc_hardware_files[]; /* generated from data/hardware */

const struct doc_name cost_hw_dtype_names[HW_DTYPE_COUNT + 1] = {
    {"fp32", HW_FP32}, {"tf32", HW_TF32}, {"fp16", HW_FP16}, {"bf16", HW_BF16}, {"fp8", HW_FP8}, {"fp4", HW_FP4},
    {NULL, 0}};
static const double dtype_bytes[HW_DTYPE_COUNT] = {4, 4, 2, 2, 1, 0.5};
static const char *const arch_names[HW_ARCH_COUNT] = {"unknown", "volta", "ampere", "hopper", "blackwell", "cdna3"};

const char *cost_hw_arch_name(enum hw_arch a)
{
    return (unsigned)a < HW_ARCH_COUNT ? arch_names[a] : "unknown";
}

const char *cost_hw_dtype_name(enum hw_dtype d)
{
    return (unsigned)d < HW_DTYPE_COUNT ? cost_hw_dtype_names[d].name : "?";
}

double cost_hw_dtype_bytes(enum hw_dtype d)
{
    return (unsigned)d < HW_DTYPE_COUNT ? dtype_bytes[d] : 0;
}

int cost_hw_dtype_parse(const char *s, enum hw_dtype *out, struct sc_error *err)
{
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        if (s && strcmp(s, cost_hw_dtype_names[d].name) == 0) {
            *out = (enum hw_dtype)d;
            return SC_OK;
        }
    return sc_error_set(err, SC_EINVAL, "unknown dtype '%s' (fp32, tf32, fp16, bf16, fp8 or fp4)",
                        s ? s : "");
}

/* ---- parsing one profile ---- */

static const struct doc_name arch_doc_names[] = {{"volta", HW_ARCH_VOLTA},   {"ampere", HW_ARCH_AMPERE},
                                                 {"hopper", HW_ARCH_HOPPER}, {"blackwell", HW_ARCH_BLACKWELL},
                                                 {"cdna3", HW_ARCH_CDNA3},   {NULL, 0}};

#define AT(member) offsetof(struct hw_profile, member), sizeof(((struct hw_profile *)0)->member)
#define FIELD(path, type, flags, member, lo, hi) {path, type, flags, AT(member), lo, hi, NULL, NULL, 0}
#define OBJECT(path, flags) {path, DOC_OBJECT, flags, 0, 0, 0, 0, NULL, NULL, 0}
/* a table of TFLOP/s by dtype: {"bf16": 312, ...}, each above 0 */
#define TFLOPS(table, d, name)                                                                             \
    {#table "." name, DOC_NUM, 0, offsetof(struct hw_profile, table) + (d) * sizeof(double), sizeof(double), 1e-9, \
     1e6, NULL, NULL, 0}
#define TFLOPS_TABLE(table, flags)                                                                          \
    OBJECT(#table, flags), TFLOPS(table, HW_FP32, "fp32"), TFLOPS(table, HW_TF32, "tf32"),                 \
        TFLOPS(table, HW_FP16, "fp16"), TFLOPS(table, HW_BF16, "bf16"), TFLOPS(table, HW_FP8, "fp8"),      \
        TFLOPS(table, HW_FP4, "fp4")

static const struct doc_field profile_fields[] = {
    FIELD("id", DOC_STR, DOC_REQUIRED, id, 0, 0),
    FIELD("name", DOC_STR, DOC_REQUIRED, name, 0, 0),
    {"vendor", DOC_IGNORED, 0, 0, 0, 0, 0, NULL, NULL, 0},
    {"architecture", DOC_ENUM, 0, AT(arch), 0, 0, arch_doc_names, NULL, 0},
    FIELD("sm_count", DOC_INT, DOC_REQUIRED, sm_count, 1, 1e6),
    FIELD("hbm_gb", DOC_NUM, DOC_REQUIRED, hbm_gb, 0.001, 1e9),
    FIELD("hbm_gbps", DOC_NUM, DOC_REQUIRED, hbm_gbps, 0.001, 1e9),
    TFLOPS_TABLE(peak_tflops, DOC_REQUIRED),
    TFLOPS_TABLE(mamf_tflops, 0),
    TFLOPS_TABLE(gemm_tflops, 0),
    /* the kernel model's flash attention fit: all four, in its ranges */
    OBJECT("attention", 0),
    FIELD("attention.efficiency", DOC_NUM, DOC_REQUIRED, attn_efficiency, 0.01, 1.5),
    FIELD("attention.backward_fraction", DOC_NUM, DOC_REQUIRED, attn_backward_fraction, 0.01, 1.5),
    FIELD("attention.block_us", DOC_NUM, DOC_REQUIRED, attn_block_us, 0, 1000),
    FIELD("attention.backward_block_us", DOC_NUM, DOC_REQUIRED, attn_backward_block_us, 0, 1000),
    FIELD("nvlink_gbps", DOC_NUM, DOC_REQUIRED, nvlink_gbps, 0.001, 1e9),
    FIELD("network_gbps", DOC_NUM, DOC_REQUIRED, network_gbps, 0.001, 1e9),
    FIELD("gpus_per_node", DOC_INT, DOC_REQUIRED, gpus_per_node, 1, 65536),
    FIELD("board_power_w", DOC_NUM, DOC_REQUIRED, board_power_w, 1, 1e9),
    FIELD("nvls", DOC_BOOL, 0, nvls, 0, 1),
    FIELD("ib_sharp", DOC_BOOL, 0, ib_sharp, 0, 1),
    {"collective_lines", DOC_OBJECT, 0, AT(coll_lines), 0, 0, NULL, &cost_coll_lines_doc, 0},
    {"device_names", DOC_STRS, 0, offsetof(struct hw_profile, device_names), sizeof(((struct hw_profile *)0)->device_names[0]),
     0, HW_MAX_DEVICE_NAMES, NULL, NULL, offsetof(struct hw_profile, n_device_names)},
    {"device_names_note", DOC_IGNORED, 0, 0, 0, 0, 0, NULL, NULL, 0},
    {"sources", DOC_IGNORED, 0, 0, 0, 0, 0, NULL, NULL, 0},
};
static const struct doc_table profile_doc = {profile_fields, sizeof profile_fields / sizeof profile_fields[0],
                                             "a hardware profile", SC_EPARSE, 0};

/* What the document says beyond one value at a time. */
static int check_profile(const struct hw_profile *p, struct sc_error *err)
{
    int measured = cost_hw_has_gemm_tflops(p);
    for (int d = 0; d < HW_DTYPE_COUNT; d++) {
        if (p->mamf_tflops[d] > p->peak_tflops[d] || p->gemm_tflops[d] > p->peak_tflops[d])
            return sc_error_set(err, SC_EPARSE, "%s.%s exceeds peak_tflops.%s",
                                p->mamf_tflops[d] > p->peak_tflops[d] ? "mamf_tflops" : "gemm_tflops",
                                cost_hw_dtype_names[d].name, cost_hw_dtype_names[d].name);
        if (measured && p->peak_tflops[d] > 0 && !(p->gemm_tflops[d] > 0))
            return sc_error_set(err, SC_EPARSE, "gemm_tflops.%s is missing: a measured table covers every dtype "
                                "the GPU has", cost_hw_dtype_names[d].name);
    }
    if (cost_coll_lines_valid(p->coll_lines, err)) {
        err->code = SC_EPARSE;
        return sc_error_prefix(err, "collective_lines");
    }
    return SC_OK;
}

int cost_hw_has_gemm_tflops(const struct hw_profile *p)
{
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        if (p->gemm_tflops[d] > 0)
            return 1;
    return 0;
}

double cost_hw_matmul_ceiling_tflops(const struct hw_profile *p, enum hw_dtype d)
{
    if ((unsigned)d >= HW_DTYPE_COUNT || !(p->peak_tflops[d] > 0))
        return 0;
    double best = fmax(p->mamf_tflops[d], p->gemm_tflops[d]);
    if (d == HW_FP16 || d == HW_BF16) {
        enum hw_dtype twin = d == HW_FP16 ? HW_BF16 : HW_FP16;
        best = fmax(best, fmax(p->mamf_tflops[twin], p->gemm_tflops[twin]));
    }
    return best > 0 ? best : p->peak_tflops[d];
}

int cost_hw_profile_parse(const char *json, size_t len, struct hw_profile *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = doc_read(json, len, &profile_doc, NULL, out, NULL, err);
    return rc ? rc : check_profile(out, err);
}

/* ---- the compiled-in table ---- */

static struct hw_profile *profiles;
static size_t n_profiles;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct hw_profile *)a)->id, ((const struct hw_profile *)b)->id);
}

/* A profile file that does not parse is a build defect: tests check every
 * one, so here it is reported and left out. */
static void load(void)
{
    size_t n = 0;
    while (sc_hardware_files[n].name)
        n++;
    profiles = calloc(n ? n : 1, sizeof *profiles);
    if (!profiles)
        return;
    for (size_t i = 0; i < n; i++) {
        struct sc_error err;
        const struct sc_embedded *f = &sc_hardware_files[i];
        if (cost_hw_profile_parse((const char *)f->data, f->len, &profiles[n_profiles], &err))
            fprintf(stderr, "stepcast: hardware profile %s: %s\n", f->name, err.msg);
        else
            n_profiles++;
    }
    qsort(profiles, n_profiles, sizeof *profiles, by_id);
}

size_t cost_hw_profile_count(void)
{
    pthread_once(&load_once, load);
    return n_profiles;
}

const struct hw_profile *cost_hw_profile_at(size_t i)
{
    return i < cost_hw_profile_count() ? &profiles[i] : NULL;
}

const struct hw_profile *cost_hw_profile_find(const char *id)
{
    for (size_t i = 0; id && i < cost_hw_profile_count(); i++)
        if (strcmp(profiles[i].id, id) == 0)
            return &profiles[i];
    return NULL;
}

const char *cost_hw_profile_document(const struct hw_profile *p, size_t *len)
{
    size_t n = strlen(p->id);
    for (size_t i = 0; sc_hardware_files[i].name; i++) {
        const char *name = sc_hardware_files[i].name;
        if (strncmp(name, p->id, n) == 0 && strcmp(name + n, ".json") == 0) {
            *len = sc_hardware_files[i].len;
            return (const char *)sc_hardware_files[i].data;
        }
    }
    return NULL;
}

const struct hw_profile *cost_hw_profile_for_device(const char *device_name)
{
    for (size_t i = 0; device_name && i < cost_hw_profile_count(); i++)
        for (int k = 0; k < profiles[i].n_device_names; k++)
            if (strcmp(profiles[i].device_names[k], device_name) == 0)
                return &profiles[i];
    return NULL;
}
