/* profiler/log.h: the library's only output besides the trace.
 *
 * The profiler lives inside someone else's training process, so it speaks
 * rarely: one line per fact, on stderr, prefixed "stepcast-prof: ", written
 * with a single write(2) so lines from many ranks do not interleave. A
 * failure that turns tracing off is reported exactly once; informational
 * lines (where the trace goes, where it was written) can be silenced with
 * STEPCAST_PROF_QUIET=1. */
#ifndef PROFILER_LOG_H
#define PROFILER_LOG_H

/* Silence informational lines (failures are always reported). */
void prof_log_set_quiet(int quiet);

/* An informational line. */
__attribute__((format(printf, 1, 2))) void prof_log_info(const char *fmt, ...);

/* A failure line, printed only the first time any failure is reported in
 * this process: later failures are consequences of the first. Returns 1 if
 * it printed. */
__attribute__((format(printf, 1, 2))) int prof_log_fail(const char *fmt, ...);

/* Forget that a failure was reported (tests, and a forked child). */
void prof_log_reset(void);

#endif
