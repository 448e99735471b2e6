/* profiler/kineto.h: writing the trace in Kineto's format.
 *
 * One JSON document (gzip optional) per process, shaped like what
 * torch.profiler writes, so stepcast's ingest, Perfetto and HTA read it
 * unchanged: schemaVersion, deviceProperties, distributedInfo,
 * baseTimeNanoseconds (ts are microseconds relative to it, with 3 decimals),
 * and traceEvents with Kineto's categories and argument names:
 *
 *   kernel / gpu_memcpy / gpu_memset   pid = device, tid = stream, args
 *                                      correlation, device, stream, grid, ...
 *   cuda_runtime / cuda_driver         pid/tid of the calling thread, cbid
 *   ac2g flows                         s at the launch call, f at the GPU op
 *   cuda_sync                          Stream Wait Event / Event Sync with
 *                                      wait_on_stream,
 *                                      wait_on_cuda_event_record_corr_id,
 *                                      wait_on_cuda_event_id
 *   cuda_event                         each cudaEventRecord on its stream
 *   NCCL kernels                       + Collective name, In/Out msg nelems,
 *                                      Group size, dtype, Process Group Name
 *                                      (the communicator hash), NCCL seq, ...
 *   user_annotation                    NVTX ranges, ProfilerStep#N, nccl:* calls
 *   overhead                           CUPTI's own work
 *
 * Events are written in start-time order. A step window keeps the events
 * whose CPU-side time (a GPU op's launch call) lies inside it. */
#ifndef PROFILER_KINETO_H
#define PROFILER_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/json.h"
#include "profiler/nccl.h"
#include "profiler/steps.h"
#include "profiler/store.h"

struct prof_trace_info {
    uint32_t pid;
    const char *process_name;  /* /proc/self/comm */
    const char *host;
    int64_t rank, world_size;  /* from the environment, -1 = unknown (NCCL's win) */
    uint32_t cupti_version;    /* CUPTI API version at run time */
    const char *cupti_layout;  /* prof_layout.cuda */
    const char *cupti_library;
    const char *nccl_version;  /* "2.28.9", or NULL */
    uint64_t clock_start[3], clock_end[3]; /* realtime, monotonic, cupti ns */
    uint64_t cupti_dropped;    /* records CUPTI dropped */
    uint64_t buffers_refused;  /* buffer requests answered NULL */
    uint64_t bytes_lost;       /* record bytes discarded over the memory cap */
    uint64_t records;          /* records converted */
    struct prof_step_rule steps;
    int64_t window_first, window_last; /* -1 = no window */
    const char *notes;         /* anything else worth knowing, or NULL */
};

struct prof_write_stats {
    uint64_t events;   /* traceEvents entries written */
    uint64_t bytes;    /* JSON bytes (before compression) */
    int window_found;  /* the window's steps were in the trace (or no window) */
};

/* Write the trace to `path` (through a temporary file renamed into place).
 * 0, or -1 with a reason in why[]. */
int prof_kineto_write(const struct prof_store *st, struct prof_nccl_log *nl,
                      const struct prof_trace_info *info, const char *path, int gzip,
                      struct prof_write_stats *stats, char *why, size_t why_n);

/* The same into an open writer (the bench writes to a null sink). */
int prof_kineto_emit(struct prof_json *w, const struct prof_store *st, struct prof_nccl_log *nl,
                     const struct prof_trace_info *info, struct prof_write_stats *stats);

#endif
