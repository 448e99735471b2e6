/* estimator/costs/hardware.c: the hardware profiles compiled into the programs
 * (hardware.h), parsed once on first use. */
#include "estimator/costs/hardware.h"

#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/embedded.h"
#include "common/banned.h"

extern const struct sc_embedded sc_hardware_files[]; /* generated from data/hardware */

static const char *const dtype_names[HW_DTYPE_COUNT] = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"};
static const double dtype_bytes[HW_DTYPE_COUNT] = {4, 4, 2, 2, 1, 0.5};
static const char *const arch_names[HW_ARCH_COUNT] = {"unknown", "volta", "ampere", "hopper", "blackwell", "cdna3"};

const char *cost_hw_arch_name(enum hw_arch a)
{
    return (unsigned)a < HW_ARCH_COUNT ? arch_names[a] : "unknown";
}

const char *cost_hw_dtype_name(enum hw_dtype d)
{
    return (unsigned)d < HW_DTYPE_COUNT ? dtype_names[d] : "?";
}

double cost_hw_dtype_bytes(enum hw_dtype d)
{
    return (unsigned)d < HW_DTYPE_COUNT ? dtype_bytes[d] : 0;
}

int cost_hw_dtype_parse(const char *s, enum hw_dtype *out, struct sc_error *err)
{
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        if (s && strcmp(s, dtype_names[d]) == 0) {
            *out = (enum hw_dtype)d;
            return SC_OK;
        }
    return sc_error_set(err, SC_EINVAL, "unknown dtype '%s' (fp32, tf32, fp16, bf16, fp8 or fp4)",
                        s ? s : "");
}

/* ---- parsing one profile ---- */

static int get_number(json_t *o, const char *key, double min, double *out, struct sc_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return sc_error_set(err, SC_EPARSE, "%s: a number is required", key);
    *out = json_number_value(v);
    if (!(*out >= min) || *out > 1e9)
        return sc_error_set(err, SC_EPARSE, "%s: %g is out of range", key, *out);
    return SC_OK;
}

static int get_string(json_t *o, const char *key, char *buf, size_t size, struct sc_error *err)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || !*s)
        return sc_error_set(err, SC_EPARSE, "%s: a non-empty string is required", key);
    if (strlen(s) >= size)
        return sc_error_set(err, SC_EPARSE, "%s: longer than %zu bytes", key, size - 1);
    snprintf(buf, size, "%s", s);
    return SC_OK;
}

/* {"bf16": 312, ...}: each key a dtype, each value >= 0 */
static int get_dtype_table(json_t *o, const char *key, int required, double *out, struct sc_error *err)
{
    json_t *t = json_object_get(o, key);
    const char *k;
    json_t *v;
    if (!t && !required)
        return SC_OK;
    if (!json_is_object(t))
        return sc_error_set(err, SC_EPARSE, "%s: an object of dtype -> TFLOP/s is required", key);
    json_object_foreach(t, k, v) {
        enum hw_dtype d = HW_FP32; /* cost_hw_dtype_parse sets it */
        if (cost_hw_dtype_parse(k, &d, err)) {
            err->code = SC_EPARSE;
            return sc_error_prefix(err, "%s", key);
        }
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e6)
            return sc_error_set(err, SC_EPARSE, "%s.%s: a positive number is required", key, k);
        out[d] = json_number_value(v);
    }
    return SC_OK;
}

static const char *const known_keys[] = {
    "id", "name", "vendor", "architecture", "sm_count", "hbm_gb", "hbm_gbps", "peak_tflops", "mamf_tflops", "gemm_tflops",
    "attention", "nvlink_gbps", "network_gbps", "gpus_per_node", "board_power_w", "nvls", "ib_sharp",
    "collective_lines", "device_names", "device_names_note", "sources", NULL};

static int check_keys(json_t *o, struct sc_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int known = 0;
        for (const char *const *n = known_keys; *n && !known; n++)
            known = strcmp(*n, k) == 0;
        if (!known)
            return sc_error_set(err, SC_EPARSE, "unknown key '%s'", k);
    }
    return SC_OK;
}

/* {"efficiency": 1.0, "backward_fraction": 0.88, "block_us": 6.1,
 * "backward_block_us": 23}: all four, in the kernel parameters' ranges. */
static int parse_attention(json_t *a, struct hw_profile *p, struct sc_error *err)
{
    static const struct {
        const char *key;
        size_t off;
        double lo, hi;
    } f[] = {{"efficiency", offsetof(struct hw_profile, attn_efficiency), 0.01, 1.5},
             {"backward_fraction", offsetof(struct hw_profile, attn_backward_fraction), 0.01, 1.5},
             {"block_us", offsetof(struct hw_profile, attn_block_us), 0, 1000},
             {"backward_block_us", offsetof(struct hw_profile, attn_backward_block_us), 0, 1000}};
    if (!json_is_object(a) || json_object_size(a) != sizeof f / sizeof f[0])
        return sc_error_set(err, SC_EPARSE, "attention: an object of efficiency, backward_fraction, block_us and "
                            "backward_block_us is required");
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        json_t *v = json_object_get(a, f[i].key);
        double x = json_is_number(v) ? json_number_value(v) : -1;
        if (!(x >= f[i].lo && x <= f[i].hi))
            return sc_error_set(err, SC_EPARSE, "attention.%s: a number in [%g, %g] is required", f[i].key, f[i].lo,
                                f[i].hi);
        *(double *)((char *)p + f[i].off) = x;
    }
    return SC_OK;
}

/* "architecture": one of arch_names past "unknown", or absent. */
static int parse_arch(json_t *o, struct hw_profile *p, struct sc_error *err)
{
    json_t *v = json_object_get(o, "architecture");
    if (!v)
        return SC_OK;
    for (int a = HW_ARCH_UNKNOWN + 1; a < HW_ARCH_COUNT; a++)
        if (json_is_string(v) && strcmp(json_string_value(v), arch_names[a]) == 0) {
            p->arch = (enum hw_arch)a;
            return SC_OK;
        }
    return sc_error_set(err, SC_EPARSE, "architecture: one of volta, ampere, hopper, blackwell, cdna3 is required");
}

static int parse_object(json_t *o, struct hw_profile *p, struct sc_error *err)
{
    double sm = 0, per_node = 0; /* get_number sets them */
    json_t *names = json_object_get(o, "device_names"), *name;
    size_t i;
    memset(p, 0, sizeof *p);
    if (!json_is_object(o))
        return sc_error_set(err, SC_EPARSE, "a profile is a JSON object");
    if (check_keys(o, err) || get_string(o, "id", p->id, sizeof p->id, err) ||
        get_string(o, "name", p->name, sizeof p->name, err) || parse_arch(o, p, err) ||
        get_number(o, "sm_count", 1, &sm, err) || get_number(o, "hbm_gb", 0.001, &p->hbm_gb, err) ||
        get_number(o, "hbm_gbps", 0.001, &p->hbm_gbps, err) ||
        get_dtype_table(o, "peak_tflops", 1, p->peak_tflops, err) ||
        get_dtype_table(o, "mamf_tflops", 0, p->mamf_tflops, err) ||
        get_dtype_table(o, "gemm_tflops", 0, p->gemm_tflops, err) ||
        get_number(o, "nvlink_gbps", 0.001, &p->nvlink_gbps, err) ||
        get_number(o, "network_gbps", 0.001, &p->network_gbps, err) ||
        get_number(o, "gpus_per_node", 1, &per_node, err) ||
        get_number(o, "board_power_w", 1, &p->board_power_w, err))
        return err->code;
    if (sm != (int)sm || per_node != (int)per_node || per_node > 65536)
        return sc_error_set(err, SC_EPARSE, "sm_count and gpus_per_node are whole numbers");
    p->sm_count = (int)sm;
    p->gpus_per_node = (int)per_node;
    p->nvls = json_is_true(json_object_get(o, "nvls"));
    p->ib_sharp = json_is_true(json_object_get(o, "ib_sharp"));
    int measured = cost_hw_has_gemm_tflops(p);
    for (int d = 0; d < HW_DTYPE_COUNT; d++) {
        if (p->mamf_tflops[d] > p->peak_tflops[d] || p->gemm_tflops[d] > p->peak_tflops[d])
            return sc_error_set(err, SC_EPARSE, "%s.%s exceeds peak_tflops.%s",
                                p->mamf_tflops[d] > p->peak_tflops[d] ? "mamf_tflops" : "gemm_tflops",
                                dtype_names[d], dtype_names[d]);
        if (measured && p->peak_tflops[d] > 0 && !(p->gemm_tflops[d] > 0))
            return sc_error_set(err, SC_EPARSE, "gemm_tflops.%s is missing: a measured table covers every dtype "
                                "the GPU has", dtype_names[d]);
    }
    json_t *attn = json_object_get(o, "attention");
    if (attn && parse_attention(attn, p, err))
        return err->code;
    json_t *lines = json_object_get(o, "collective_lines");
    if (lines) {
        char *text = json_dumps(lines, JSON_ENCODE_ANY); /* doubles at 17 digits: read back exactly */
        if (!text)
            return sc_error_set(err, SC_ENOMEM, "collective_lines: out of memory");
        int rc = cost_coll_lines_parse(text, strlen(text), "collective_lines", p->coll_lines, err);
        free(text);
        if (rc)
            return rc;
    }
    if (names && !json_is_array(names))
        return sc_error_set(err, SC_EPARSE, "device_names: an array of strings is required");
    json_array_foreach(names, i, name) {
        const char *s = json_string_value(name);
        if (i >= HW_MAX_DEVICE_NAMES)
            return sc_error_set(err, SC_EPARSE, "device_names: at most %d", HW_MAX_DEVICE_NAMES);
        if (!s || !*s || strlen(s) >= sizeof p->device_names[0])
            return sc_error_set(err, SC_EPARSE, "device_names[%zu]: a string of 1-63 bytes", i);
        snprintf(p->device_names[i], sizeof p->device_names[i], "%s", s);
        p->n_device_names = (int)i + 1;
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
    json_error_t jerr;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc;
    if (!o)
        return sc_error_set(err, SC_EPARSE, "line %d: %s", jerr.line, jerr.text);
    rc = parse_object(o, out, err);
    json_decref(o);
    return rc;
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
