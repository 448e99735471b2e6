/* profiler/config.h: the environment variables that control the profiler.
 *
 *   STEPCAST_PROF            1      0/off/false: do not trace at all
 *   STEPCAST_PROF_DIR        .      where the trace is written (created if missing)
 *   STEPCAST_PROF_GZIP       0      1: write .json.gz
 *   STEPCAST_PROF_STEPS      -      a window of steps: "A-B", "A-" (A to the end), "A"
 *   STEPCAST_PROF_STEP_NVTX  ProfilerStep#   NVTX ranges starting so are steps
 *   STEPCAST_PROF_STEP_KERNEL -     a step starts at each launch of a kernel whose
 *                                   name contains this (instead of NVTX)
 *   STEPCAST_PROF_MAX_MB     1024   memory for records (buffers + events); past it
 *                                   records are dropped and counted
 *   STEPCAST_PROF_BUFFER_KB  4096   size of each buffer lent to CUPTI, at most an
 *                                   eighth of STEPCAST_PROF_MAX_MB
 *   STEPCAST_PROF_FLUSH_MS   500    background flush period
 *   STEPCAST_PROF_DRIVER     1      record CUDA driver calls (noisy getters filtered)
 *   STEPCAST_PROF_NVTX       1      record NVTX ranges (needs NVTX_INJECTION64_PATH)
 *   STEPCAST_PROF_QUIET      0      1: no informational lines, failures only
 *   STEPCAST_PROF_CUPTI      -      path of the libcupti to load when none is loaded
 *
 * A value that does not parse is a failure (tracing off, one message), never
 * silently replaced by the default. */
#ifndef PROFILER_CONFIG_H
#define PROFILER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct prof_config {
    int enabled;
    char dir[1024];
    int gzip;
    int64_t window_first, window_last; /* -1: none / open-ended */
    char step_nvtx[128];
    char step_kernel[128];
    size_t max_mb;
    size_t buffer_kb;
    unsigned flush_ms;
    int driver;
    int nvtx;
    int quiet;
    char cupti[1024];
};

/* Fill c from the environment as read by get (getenv in production). 0, or
 * -1 with the offending variable and value in why[]. */
int prof_config_load(struct prof_config *c, char *(*get)(const char *name), char *why,
                     size_t why_n);

#endif
