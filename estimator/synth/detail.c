/* estimator/synth/detail.c: the names of the levels of detail (detail.h), as
 * `--detail` and the API's `detail` take them. */
#include "estimator/synth/detail.h"

#include <string.h>

#include "common/banned.h"

static const char *const detail_names[] = {"stage", "layer", "kernel"};

const char *synth_detail_name(enum est_detail d)
{
    return (unsigned)d <= EST_DETAIL_KERNEL ? detail_names[d] : "?";
}

int synth_detail_parse(const char *s, enum est_detail *out, struct sc_error *err)
{
    for (int d = 0; d <= EST_DETAIL_KERNEL; d++)
        if (s && strcmp(s, detail_names[d]) == 0) {
            *out = (enum est_detail)d;
            return SC_OK;
        }
    return sc_error_set(err, SC_EINVAL, "--detail: '%s' is none of stage, layer, kernel", s ? s : "");
}
