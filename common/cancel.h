/* common/cancel.h: cooperative cancellation of long computations.
 *
 * A thread running work that someone may call off (a daemon worker, a
 * background plan, a model build) attaches an atomic flag; the long loops
 * (the replay's event loop, synthesis per micro-batch, trace ingest) ask
 * sc_cancelled() every so often and stop with SC_ECANCELED once it is set.
 * A thread with no flag attached (the command line, most tests) is never
 * cancelled and pays one thread-local load per check. The threads a
 * computation starts for itself obey the flag of the thread that started
 * them. */
#ifndef COMMON_CANCEL_H
#define COMMON_CANCEL_H

#include <stdatomic.h>

/* The flag this thread's work obeys from now on; NULL: none. */
void sc_cancel_attach(atomic_int *flag);
/* Whether this thread's work has been called off. */
int sc_cancelled(void);
/* The flag this thread obeys (NULL: none): threads it starts for the same
 * work (common/pool.h, a split trace parse) attach it too. */
atomic_int *sc_cancel_flag(void);

#endif
