/* tests/fuzz/fuzz_spec_extreme.c: libFuzzer target for specs whose numbers
 * sit at and past the documented limits.
 *
 * A byte-level fuzzer rarely writes 2^31 or 1e-320 where a spec's layers
 * or global batch go; here each input byte picks, for one numeric field of
 * a valid spec, a value from a table of extremes (0, negatives, powers of
 * two up to 2^63, INT64_MAX, a subnormal, 1e308, fractions). The spec that
 * comes out is parsed as POST /v1/estimate parses it; one that parses on a
 * known GPU must predict its graph's size and bound finite, and when that
 * size and its micro-batches are few, be estimated: a finite positive step and an MFU in (0, 1],
 * or a clean refusal. Anything else (a crash, UBSan's overflow, a figure
 * out of range) is a bug. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/synth/estimate.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fields set, as "object.key", and their values in the base spec. */
static const struct {
    const char *obj, *key, *base;
} fields[] = {
    {"model", "layers", "4"},         {"model", "hidden", "512"},       {"model", "heads", "8"},
    {"model", "kv_heads", "8"},       {"model", "ffn", "2048"},         {"model", "seq", "1024"},
    {"model", "vocab", "32000"},      {"parallel", "tp", "1"},          {"parallel", "pp", "2"},
    {"parallel", "dp", "2"},          {"parallel", "cp", "1"},          {"parallel", "micro_batch", "1"},
    {"parallel", "global_batch", "8"}, {"cluster", "gpus_per_node", "8"},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static const char *const extremes[] = {
    "0",     "-1",         "1",          "2",          "3",           "7",          "1024",
    "4096",  "4097",       "65536",      "1048576",    "16777216",    "16777217",   "2147483647",
    "2147483648",          "4294967296", "9007199254740993",          "9223372036854775807",
    "-9223372036854775808", "1e-320",    "4.9e-324",   "1e308",       "1.5",        "0.5",
    "1e19",  "18446744073709551615",     "-0",         "1e3",         "2.0",         "\"8\"",     "null",
};
#define N_EXTREMES (sizeof extremes / sizeof extremes[0])

/* The spec with field i set to value v (or left at its base value). */
static void spec_text(const char *const value[N_FIELDS], char *out, size_t n)
{
    size_t k = 0;
    const char *obj = NULL;
    k += (size_t)snprintf(out + k, n - k, "{");
    for (size_t i = 0; i < N_FIELDS && k < n; i++) {
        if (!obj || strcmp(obj, fields[i].obj)) {
            k += (size_t)snprintf(out + k, n - k, "%s\"%s\":{", obj ? "}," : "", fields[i].obj);
            obj = fields[i].obj;
        } else {
            k += (size_t)snprintf(out + k, n - k, ",");
        }
        if (k < n)
            k += (size_t)snprintf(out + k, n - k, "\"%s\":%s", fields[i].key, value[i]);
    }
    if (k < n)
        snprintf(out + k, n - k, ",\"gpu\":\"h100-sxm\"}}");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *value[N_FIELDS];
    char text[2048];
    struct est_spec s;
    struct sc_error err;
    for (size_t i = 0; i < N_FIELDS; i++)
        value[i] = fields[i].base;
    /* pairs of bytes: which field, which extreme */
    for (size_t i = 0; i + 1 < size; i += 2)
        value[data[i] % N_FIELDS] = extremes[data[i + 1] % N_EXTREMES];
    spec_text(value, text, sizeof text);
    memset(&s, 0, sizeof s);
    if (spec_parse(text, strlen(text), &s, &err) != SC_OK)
        return 0;
    const struct hw_profile *hw;
    struct est_costs c;
    if (spec_check_gpu(&s, &hw, &err) != SC_OK)
        return 0;
    calib_costs_default(hw, &s, &c);
    struct est_synth_size predicted;
    int sized = synth_size(&s, hw, &c, EST_DETAIL_STAGE, &predicted, &err);
    if (sized == SC_OK && !(predicted.tasks > 0 && isfinite(predicted.bytes) && predicted.bytes > 0))
        abort();
    double bound;
    if (synth_bound(&s, hw, &c, &bound, &err) == SC_OK && !(bound >= 0 && isfinite(bound)))
        abort();
    /* what admission would refuse or weigh is not run here; nor a step of
     * millions of micro-batches, which stage detail merges into a few
     * tasks but still walks one by one (0.6 s at 2^23 in a release
     * build, past the timeout in this one) */
    int64_t micro = s.parallel.global_batch / (s.parallel.dp * s.parallel.micro_batch);
    if (sized != SC_OK || predicted.tasks > 20000 || predicted.bytes > 64e6 || micro > 65536)
        return 0;
    struct est_estimate e;
    memset(&e, 0, sizeof e);
    if (synth_estimate(&s, hw, &c, EST_DETAIL_STAGE, &e, &err) == SC_OK) {
        if (!(isfinite(e.step_ms) && e.step_ms > 0 && e.mfu > 0 && e.mfu <= 1 && isfinite(e.tokens_per_s)))
            abort();
        synth_estimate_release(&e);
    }
    return 0;
}
