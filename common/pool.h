/* common/pool.h: running one function over n items on several threads.
 *
 * Loading and building a job's ranks are independent per rank; this runs
 * them on all cores. Items are handed out in index order, one at a time;
 * after item f fails, no item after f starts, and every item before it
 * still runs: the error reported is the one a serial run would report.
 * The threads obey the calling thread's cancel flag (common/cancel.h):
 * once it is set, no item starts (SC_ECANCELED) and the items running stop
 * at their own checks. */
#ifndef COMMON_POOL_H
#define COMMON_POOL_H

#include <stddef.h>

#include "common/error.h"

/* fn(ctx, i, err) for i in [0, n) on up to `threads` threads (0: one per
 * online CPU), the calling thread among them. SC_OK, or the failure of the
 * lowest failing index (its error in *err). */
int sc_parallel_for(size_t n, unsigned threads, int (*fn)(void *ctx, size_t i, struct sc_error *err),
                    void *ctx, struct sc_error *err);

/* The threads `threads` asks for: itself, or one per online CPU when 0. */
unsigned sc_pool_threads(unsigned threads);

#endif
