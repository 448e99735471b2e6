/* profiler/session.h: one process's tracing session, from InitializeInjection
 * to the trace file.
 *
 *   start    with the configuration and the CUPTI table inject.c loaded:
 *            claim CUPTI with a named subscriber (another client holding it
 *            = step aside), lend buffers (bufpool.h), enable the activity
 *            kinds, start the flush thread, register the exit handler and
 *            the fork guard;
 *   record   CUPTI fills buffers; the flush thread asks for completed ones
 *            every STEPCAST_PROF_FLUSH_MS, converts them (convert.h) and
 *            watches for steps, dropping what precedes a step window;
 *   finish   at exit (or when the window closes): forced flush, kinds off,
 *            NCCL told to stop, the trace written (kineto.h), CUPTI released.
 *
 * Any failure turns tracing off with one message (log.h) and leaves the
 * process as it was. The calls to CUPTI go through a function table, so
 * tests drive the whole session with a fake CUPTI. */
#ifndef PROFILER_SESSION_H
#define PROFILER_SESSION_H

#include "profiler/config.h"
#include "profiler/cupti_api.h"

enum prof_state { PROF_OFF, PROF_RUNNING, PROF_FINISHING, PROF_DONE };

/* Start tracing with the given configuration and CUPTI table (copied).
 * Returns PROF_RUNNING, or PROF_OFF after reporting why. */
int prof_session_start(const struct prof_config *cfg, const struct prof_cupti *cupti);

/* Stop and write the trace now (the exit handler does this). 0, or -1 when
 * no trace was written. Idempotent. */
int prof_session_finish(void);

/* The current state (enum prof_state). */
int prof_session_state(void);

/* The file of the trace written, or "" if none yet. */
const char *prof_session_output(void);

/* Drain completed buffers now, as the flush thread does (tests). */
void prof_session_drain(void);

/* Forget the session and the NCCL log (tests, after finish): the next
 * start begins afresh. */
void prof_session_reset(void);

#endif
