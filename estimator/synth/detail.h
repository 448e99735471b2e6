/* estimator/synth/detail.h: the level of detail a synthesised step is built at
 * (synth.h): every kernel a task, or runs of work merged per layer or per
 * stage (detail.c). */
#ifndef ESTIMATOR_DETAIL_H
#define ESTIMATOR_DETAIL_H

#include "common/error.h"

enum est_detail { EST_DETAIL_STAGE, EST_DETAIL_LAYER, EST_DETAIL_KERNEL };

const char *synth_detail_name(enum est_detail d);
/* "stage", "layer" or "kernel"; SC_EINVAL naming them otherwise. */
int synth_detail_parse(const char *s, enum est_detail *out, struct sc_error *err);

#endif
