/* tests/fuzz/fuzz_bands.c: libFuzzer target for the bands file reader
 * (estimator/plan/bands.h). A file parsed is written again and must parse to
 * the same bands; every band's quantiles ascend and its figures are in
 * range, and a step time at any risk is finite and positive. Anything but
 * a clean success or a clean error is a bug. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/plan/bands.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct est_bands b, again;
    struct sc_error err;
    if (plan_bands_parse((const char *)data, size, &b, &err) != SC_OK)
        return 0;
    char *text = plan_bands_text(&b);
    if (!text || plan_bands_parse(text, strlen(text), &again, &err) != SC_OK || again.n != b.n)
        abort();
    for (size_t i = 0; i < b.n; i++) {
        const struct est_band *r = &b.regions[i], *w = &again.regions[i];
        if (strcmp(r->gpu, w->gpu) || r->model != w->model || r->sharding != w->sharding || r->rows != w->rows ||
            r->max_gpus != w->max_gpus || r->rows < 1 || r->max_gpus < 1)
            abort();
        for (int k = 0; k < EST_BAND_LEVELS; k++)
            if (!(r->error[k] >= -0.99) || (k && r->error[k] < r->error[k - 1]) ||
                fabs(r->error[k] - w->error[k]) > 1e-5 * (1 + fabs(r->error[k])))
                abort();
        for (double p = 0.5; p <= 1; p += 0.125) {
            double ms = plan_band_at_risk(r, p, 100);
            if (!(ms > 0) || !isfinite(ms))
                abort();
        }
        if (plan_bands_find(&b, r->gpu, r->model, r->sharding) != r)
            abort();
    }
    free(text);
    plan_bands_release(&b);
    plan_bands_release(&again);
    return 0;
}
