/* daemon/admission.h: one memory budget for all the daemon's heavy work.
 *
 * Every piece of work whose memory grows with its request (a model build,
 * an estimate, a plan's evaluations, a what-if, a validation) predicts its
 * peak before it allocates (synth_size, built_model_estimate, ...)
 * and is admitted under the daemon-wide budget (memory-budget): its bytes
 * are reserved until it ends. Work that could never fit the whole budget
 * is refused (HTTP 413, the prediction and the budget named); work that
 * would fit once others end either waits (builds and background plans, in
 * their own threads) or, inside a request, is refused with 429 and
 * Retry-After, so a worker never blocks on memory. How many requests
 * compute at once is the request pool's size (workers.h, heavy-requests). */
#ifndef DAEMON_ADMISSION_H
#define DAEMON_ADMISSION_H

#include <stdint.h>

#include "common/error.h"

struct admission;

enum admission_verdict {
    ADMISSION_OK,    /* reserved: admission_release() it when done */
    ADMISSION_NEVER, /* over the whole budget; err says so */
    ADMISSION_BUSY   /* fits the budget, not beside what runs now; err says so */
};

int admission_new(uint64_t budget, struct admission **out, struct sc_error *err);
void admission_free(struct admission *a); /* NULL-safe */
/* A predicted peak (bytes, a double that may be huge) as the bytes to
 * reserve: UINT64_MAX past what 64 bits hold, which never fits. */
uint64_t admission_bytes(double predicted);
/* Reserve need bytes for `what` (e.g. "the estimate (kernel detail,
 * 290000000 tasks)") now, or say why not; give them back with
 * admission_release(). */
enum admission_verdict admission_try(struct admission *a, uint64_t need, const char *what, struct sc_error *err);
/* Reserve need bytes, waiting while others hold the budget: SC_OK
 * (reserved), SC_ELIMIT when it can never fit, SC_EEXIST when stop(ctx)
 * becomes true while it waits (checked at each admission_wake()). */
int admission_wait(struct admission *a, uint64_t need, const char *what, int (*stop)(void *ctx), void *ctx,
                   struct sc_error *err);
void admission_release(struct admission *a, uint64_t need);
/* Wake the waiters, so that they look at their stop condition again. */
void admission_wake(struct admission *a);
void admission_counts(struct admission *a, uint64_t *in_use, uint64_t *budget);

#endif
