/* profiler/event.h: one recorded activity, in the profiler's own compact
 * form.
 *
 * CUPTI records are converted into these as soon as a buffer completes
 * (convert.c), so CUPTI's buffers go back to it quickly and what is kept is
 * 88 bytes per activity whatever the CUPTI version. Strings (kernel names,
 * API names, NVTX names) are interned in the store and referred to by id.
 * Times are CUPTI's: CLOCK_REALTIME nanoseconds on Linux, 0 when unknown
 * (a record flushed before it completed). */
#ifndef PROFILER_EVENT_H
#define PROFILER_EVENT_H

#include <stdint.h>

enum prof_ev_type {
    PROF_EV_NONE,
    PROF_EV_KERNEL,
    PROF_EV_MEMCPY,     /* also peer-to-peer copies (flag PROF_F_P2P) */
    PROF_EV_MEMSET,
    PROF_EV_RUNTIME,    /* a CUDA runtime call */
    PROF_EV_DRIVER,     /* a CUDA driver call */
    PROF_EV_SYNC,       /* a synchronization record (sub: CUPTI sync type) */
    PROF_EV_CUDA_EVENT, /* a cudaEventRecord seen by CUPTI */
    PROF_EV_EXT_CORR,   /* external correlation: corr -> (kind, id) */
    PROF_EV_OVERHEAD,   /* CUPTI's own overhead (sub: CUPTI overhead kind) */
    PROF_EV_MARKER,     /* an NVTX range start or end, or a mark (sub: PROF_MARK_*) */
    PROF_EV_TYPE_COUNT
};

enum prof_mark { PROF_MARK_START = 1, PROF_MARK_END = 2, PROF_MARK_INSTANT = 3 };

enum {
    PROF_F_P2P = 1u << 0,             /* a peer-to-peer copy */
    PROF_F_DEVICE_LAUNCHED = 1u << 1, /* a kernel launched from the device */
    PROF_F_HAS_SYNC_ID = 1u << 2,     /* sync/cuda event: u.sync.sync_id is valid */
    PROF_F_HAS_DEVICE = 1u << 3,      /* cuda event: gpu.device is valid */
    PROF_F_MARKER_GPU = 1u << 4       /* marker object is a stream, not a thread */
};

#define PROF_INVALID UINT32_MAX /* CUPTI_SYNCHRONIZATION_INVALID_VALUE and friends */

struct prof_event {
    uint64_t start, end; /* ns, 0 = unknown */
    uint32_t corr;       /* CUPTI correlation id, 0 = none */
    uint32_t name;       /* string id in the store, 0 = none */
    union {
        struct {
            uint32_t device, stream, context;
        } gpu; /* kernels, copies, sets, syncs, CUDA events */
        struct {
            uint32_t pid, tid, cbid;
        } cpu; /* runtime and driver calls, markers on threads */
    } at;
    uint8_t type;   /* enum prof_ev_type */
    uint8_t sub;    /* type-specific kind (copy kind, sync type, ...) */
    uint16_t flags; /* PROF_F_* */
    union {
        struct {
            uint32_t grid[3], block[3];
            uint32_t shared_mem; /* static + dynamic bytes */
            uint32_t graph_id;
            uint64_t graph_node;
            uint16_t registers;
        } kernel;
        struct {
            uint64_t bytes;
            uint64_t graph_node;
            uint32_t graph_id;
            uint32_t src_device, dst_device, src_context, dst_context;
            uint8_t src_kind, dst_kind; /* CUPTI memory kinds */
        } copy; /* memcpy and memset (memset: dst_kind is the memory kind) */
        struct {
            int32_t result;
        } api;
        struct {
            uint32_t event_id;  /* CUDA event id, or PROF_INVALID */
            uint64_t sync_id;   /* cudaEventSyncId (12.8+), see PROF_F_HAS_SYNC_ID */
            uint64_t device_ts; /* cuda event: device-side timestamp, 0 = none */
        } sync;
        struct {
            uint64_t id;
            uint32_t kind; /* CUPTI external correlation kind */
        } ext;
        struct {
            uint32_t id;     /* pairs a range's start and end */
            uint32_t domain; /* string id of the NVTX domain, 0 = default */
        } marker;
        struct {
            uint32_t kind;        /* CUPTI overhead kind */
            uint32_t object_kind; /* CUPTI object kind: thread or device */
        } overhead;
    } u;
};

#endif
