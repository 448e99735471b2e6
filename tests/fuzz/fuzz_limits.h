/* tests/fuzz/fuzz_limits.h: the trace reader's options for fuzz targets:
 * the defaults with small limits, so an input cannot make a run slow or
 * large by asking for what the limits would allow. */
#ifndef TESTS_FUZZ_FUZZ_LIMITS_H
#define TESTS_FUZZ_FUZZ_LIMITS_H

#include "model/trace.h"

static inline void fuzz_load_opts(struct model_load_opts *o)
{
    model_load_opts_default(o);
    o->limits.max_events = 10000;
    o->limits.max_item_bytes = 1 << 20;
    o->limits.max_string = 64 << 10;
    o->limits.max_depth = 32;
}

#endif
