/* daemon/workers.h: a pool of threads for heavy work, apart from the HTTP
 * threads.
 *
 * An estimate that is not memoised, a replay, a what-if, a plan or a
 * validation can take seconds of CPU; on a machine with two cores, done on
 * HTTP threads it would hold /healthz and catalog reads behind it. A pool
 * has a fixed number of threads and a bounded queue: a job is first given
 * a place (workers_reserve: refused when every thread is busy and the
 * queue is full, so the caller answers 429 with Retry-After), then handed
 * over (workers_submit, which cannot fail). Places come from two rooms:
 * heavy requests share threads + max_queued of them; trace uploads, whose
 * bodies are already received and whose number the server bounds
 * (max-uploads), have a room of their own that size, so a queue full of
 * heavy requests never refuses an upload's check nor sends it back to an
 * HTTP thread. Both rooms run on the same threads, first come first
 * served. The pool's threads, and the
 * other threads that do heavy work (builds, background plans), call
 * workers_background(): SCHED_BATCH and a higher nice value, per thread, so
 * that the scheduler runs the HTTP threads first whenever both are ready.
 *
 * Every thread of a pool attaches the pool's cancel flag (common/cancel.h):
 * workers_cancel() calls off what runs (its long loops stop) and what is
 * queued (it runs with the flag set, and ends at once), so a shutdown does
 * not wait for work nobody will read. */
#ifndef DAEMON_WORKERS_H
#define DAEMON_WORKERS_H

#include <stddef.h>
#include <time.h>

#include "common/error.h"

struct workers;

typedef void (*workers_fn)(void *ctx);

/* The room a job's place is taken from. */
enum workers_room {
    WORKERS_HEAVY,  /* threads + max_queued places */
    WORKERS_UPLOAD, /* max_uploads places */
    WORKERS_ROOMS
};

/* threads threads (at least 1), at most max_queued heavy jobs waiting for
 * one beside those running, and max_uploads upload jobs running or
 * waiting; nice_delta is what workers_background() adds. */
int workers_start(unsigned threads, size_t max_queued, size_t max_uploads, int nice_delta, struct workers **out,
                  struct sc_error *err);
/* A place for one job in room: SC_OK, SC_ELIMIT when the room is full
 * (heavy: every thread busy and the queue full), SC_ECANCELED after
 * workers_cancel (err says which). */
int workers_reserve(struct workers *w, enum workers_room room, struct sc_error *err);
/* Run fn(ctx) on a thread of the pool, in the place reserved in room;
 * then, when not NULL, then(ctx) once the place and the running count are
 * given back (what hands the answer to the client, so that its next
 * request, or a look at the pool's counts, never finds them still taken). */
void workers_submit(struct workers *w, enum workers_room room, workers_fn fn, workers_fn then, void *ctx);
/* Jobs running, and waiting for a thread. */
void workers_counts(struct workers *w, long *running, long *queued);
/* Call off every job, running or queued; no place is given any more. */
void workers_cancel(struct workers *w);
/* Wait up to timeout_s until no job runs, waits or is being answered (its
 * `then` still running): 1 when none is. */
int workers_wait_idle(struct workers *w, double timeout_s);
/* Stop the threads (after workers_wait_idle returned 1). NULL-safe. */
void workers_free(struct workers *w);

/* The CLOCK_REALTIME time timeout_s from now: the deadline of a
 * pthread_cond_timedwait (waits for heavy work to end). */
struct timespec workers_deadline(double timeout_s);

/* Lower the calling thread's priority for heavy work: SCHED_BATCH, and its
 * nice value raised by nice_delta (at most to 19). Failures are ignored:
 * the work still runs, at the priority it had. */
void workers_background(int nice_delta);

#endif
