/* tests/fuzz/fuzz_published.c: libFuzzer target for the published
 * step-time table of `validate --published` (estimator/calibrate/published.h).
 *
 * Each row parsed must hold what the reader promises (a positive step
 * time, GPUs the product of its parallelism); each row the spec can
 * express becomes its spec with the recomputation chosen, or a clean
 * refusal. Anything but a clean success or a clean error is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "estimator/calibrate/published.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct est_published *rows = NULL;
    struct sc_error err;
    size_t n = 0;
    if (calib_published_parse((const char *)data, size, &rows, &n, &err) != SC_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const struct est_published *r = &rows[i];
        if (!(r->step_s > 0) || (double)r->gpus != (double)r->tp * (double)r->pp * (double)r->cp * (double)r->dp)
            abort();
        if (i >= 16 || r->skip[0])
            continue;
        struct est_spec spec;
        const struct hw_profile *hw;
        int fits;
        if (calib_published_spec(r, &spec, &hw, &fits, &err) == SC_OK &&
            (spec.options.recompute > EST_RECOMPUTE_FULL || (!fits && spec.options.recompute != EST_RECOMPUTE_FULL)))
            abort();
    }
    free(rows);
    return 0;
}
