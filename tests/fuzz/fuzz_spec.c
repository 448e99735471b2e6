/* tests/fuzz/fuzz_spec.c: libFuzzer target for the spec parser and the
 * Hugging Face config mapping.
 *
 * An input starting with 'H' is the rest fed to spec_model_from_hf; any
 * other is a spec. A spec that parses must be written out and read back to
 * the same spec, and its parameter, FLOP and memory figures must come out
 * without failing; on a GPU with a profile, the size of its graph at each
 * detail (synth_size, what admission weighs it by) and the planner's
 * lower bound come out without building it, finite or a clean refusal
 * (the spec's limits keep every count from overflowing, which UBSan would
 * catch); a model mapped from a config must read back the same.
 * Anything but a clean success or a clean error is a bug. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/hf_config.h"
#include "estimator/spec/memory.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void model_reads_back(const struct est_model *m)
{
    struct est_model back;
    struct sc_error err;
    char *text = spec_model_json(m);
    memset(&back, 0, sizeof back);
    if (!text || spec_model_parse(text, strlen(text), &back, &err) ||
        memcmp(&back, m, sizeof back) != 0)
        abort();
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sc_error err;
    if (size && data[0] == 'H') {
        struct est_model m;
        memset(&m, 0, sizeof m);
        if (spec_model_from_hf((const char *)data + 1, size - 1, 0, &m, NULL, &err) == SC_OK)
            model_reads_back(&m);
        return 0;
    }
    struct est_spec s, back;
    memset(&s, 0, sizeof s);
    if (spec_parse((const char *)data, size, &s, &err) != SC_OK)
        return 0;
    char *text = spec_json(&s);
    memset(&back, 0, sizeof back);
    if (!text || spec_parse(text, strlen(text), &back, &err) ||
        memcmp(&back, &s, sizeof s) != 0)
        abort();
    free(text);
    model_reads_back(&s.model);

    struct est_params p;
    struct est_memory mem;
    spec_model_params(&s.model, &p);
    double hw_flops = spec_hardware_flops_per_token(&s);
    if (!(p.total > 0) || !(hw_flops > 0 && hw_flops < HUGE_VAL))
        abort();
    if (spec_memory_estimate(&s, 80, &mem, &err) != SC_OK || mem.n_stages != s.parallel.pp ||
        !(mem.gb_per_gpu > 0))
        abort();
    spec_memory_release(&mem);

    const struct hw_profile *hw;
    struct est_costs c;
    if (spec_check_gpu(&s, &hw, &err) != SC_OK)
        return 0;
    calib_costs_default(hw, &s, &c);
    for (int d = EST_DETAIL_STAGE; d <= EST_DETAIL_KERNEL; d++) {
        struct est_synth_size predicted;
        int rc = synth_size(&s, hw, &c, (enum est_detail)d, &predicted, &err);
        if (rc == SC_OK && !(predicted.tasks > 0 && predicted.edges > 0 && isfinite(predicted.bytes)))
            abort();
    }
    double bound;
    if (synth_bound(&s, hw, &c, &bound, &err) == SC_OK && !(bound >= 0 && isfinite(bound)))
        abort();
    return 0;
}
