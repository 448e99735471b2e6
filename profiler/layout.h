/* profiler/layout.h: where the fields the profiler reads sit in CUPTI's
 * activity records, and which of them the CUPTI running in this process
 * writes.
 *
 * CUPTI writes each record in the newest struct version *it* knows (CUDA
 * 12.4 writes CUpti_ActivityKernel9, 13.0 writes CUpti_ActivityKernel10),
 * and every version bump so far only appended fields. So the offsets below
 * hold for every version we support (pinned against the installed headers'
 * current and deprecated structs in profiler/tests/test_layout.c), and what
 * changes with the version is how many bytes a record has: a field is read
 * only when it lies inside the record size of the running version
 * (prof_layout_has). Records are stepped with cuptiActivityGetNextRecord,
 * never with a compile-time sizeof.
 *
 * Sizes per version (bytes) come from the CUDA headers: 12.4-12.6 (CUPTI API
 * 22-24), 12.8-12.9 (26-28: Memcpy6, Synchronization2 and CudaEvent2 add
 * cudaEventSyncId, deviceId and deviceTimestamp), 13.x (130000+: Kernel10).
 * Where the exact 12.x version of a record is not pinned (memset, P2P copy,
 * device, context, overhead) the table holds the smaller candidate: only
 * the prefix all candidates share is read. */
#ifndef PROFILER_LAYOUT_H
#define PROFILER_LAYOUT_H

#include <stdint.h>
#include <string.h>

enum prof_rec {
    PROF_REC_KERNEL,      /* CONCURRENT_KERNEL */
    PROF_REC_MEMCPY,      /* MEMCPY */
    PROF_REC_P2P,         /* MEMCPY2 (peer to peer) */
    PROF_REC_MEMSET,      /* MEMSET */
    PROF_REC_API,         /* RUNTIME, DRIVER */
    PROF_REC_SYNC,        /* SYNCHRONIZATION */
    PROF_REC_CUDA_EVENT,  /* CUDA_EVENT */
    PROF_REC_EXT,         /* EXTERNAL_CORRELATION */
    PROF_REC_OVERHEAD,    /* OVERHEAD */
    PROF_REC_DEVICE,      /* DEVICE */
    PROF_REC_CONTEXT,     /* CONTEXT */
    PROF_REC_MARKER,      /* MARKER */
    PROF_REC_MARKER_DATA, /* MARKER_DATA */
    PROF_REC_NAME,        /* NAME */
    PROF_REC_COUNT,
    PROF_REC_NONE = -1
};

/* Field offsets (bytes from the record start). */
enum {
    /* every record */
    OFF_KIND = 0,
    /* CONCURRENT_KERNEL: Kernel9 (12.x), Kernel10 (13.0) */
    OFF_K_REGS = 6, OFF_K_START = 16, OFF_K_END = 24, OFF_K_DEVICE = 40, OFF_K_CONTEXT = 44,
    OFF_K_STREAM = 48, OFF_K_GRID = 52, OFF_K_BLOCK = 64, OFF_K_STATIC_SMEM = 76,
    OFF_K_DYNAMIC_SMEM = 80, OFF_K_CORR = 92, OFF_K_NAME = 104, OFF_K_GRAPH_NODE = 144,
    OFF_K_GRAPH = 156, OFF_K_DEVICE_LAUNCHED = 208,
    /* MEMCPY: Memcpy5 (12.4-12.6), Memcpy6 (12.8+) */
    OFF_C_COPY_KIND = 4, OFF_C_SRC_KIND = 5, OFF_C_DST_KIND = 6, OFF_C_BYTES = 8,
    OFF_C_START = 16, OFF_C_END = 24, OFF_C_DEVICE = 32, OFF_C_CONTEXT = 36,
    OFF_C_STREAM = 40, OFF_C_CORR = 44, OFF_C_GRAPH_NODE = 64, OFF_C_GRAPH = 72,
    /* MEMCPY2: MemcpyPtoP3/4, the same as MEMCPY up to OFF_C_STREAM, then */
    OFF_P_SRC_DEVICE = 44, OFF_P_SRC_CONTEXT = 48, OFF_P_DST_DEVICE = 52, OFF_P_DST_CONTEXT = 56,
    OFF_P_CORR = 60, OFF_P_GRAPH_NODE = 72, OFF_P_GRAPH = 80,
    /* MEMSET: Memset3/4 */
    OFF_S_VALUE = 4, OFF_S_BYTES = 8, OFF_S_START = 16, OFF_S_END = 24, OFF_S_DEVICE = 32,
    OFF_S_CONTEXT = 36, OFF_S_STREAM = 40, OFF_S_CORR = 44, OFF_S_MEMORY_KIND = 50,
    OFF_S_GRAPH_NODE = 64, OFF_S_GRAPH = 72,
    /* RUNTIME / DRIVER: CUpti_ActivityAPI */
    OFF_A_CBID = 4, OFF_A_START = 8, OFF_A_END = 16, OFF_A_PID = 24, OFF_A_TID = 28,
    OFF_A_CORR = 32, OFF_A_RETURN = 36,
    /* SYNCHRONIZATION: Synchronization (12.4-12.6), Synchronization2 (12.8+) */
    OFF_Y_TYPE = 4, OFF_Y_START = 8, OFF_Y_END = 16, OFF_Y_CORR = 24, OFF_Y_CONTEXT = 28,
    OFF_Y_STREAM = 32, OFF_Y_EVENT = 36, OFF_Y_SYNC_ID = 40,
    /* CUDA_EVENT: CudaEvent (12.4-12.6), CudaEvent2 (12.8+) */
    OFF_E_CORR = 4, OFF_E_CONTEXT = 8, OFF_E_STREAM = 12, OFF_E_EVENT = 16,
    OFF_E_DEVICE = 24, OFF_E_DEVICE_TS = 40, OFF_E_SYNC_ID = 48,
    /* EXTERNAL_CORRELATION */
    OFF_X_KIND = 4, OFF_X_ID = 8, OFF_X_CORR = 16,
    /* OVERHEAD: Overhead2/3 */
    OFF_O_KIND = 4, OFF_O_OBJECT_KIND = 8, OFF_O_OBJECT = 12, OFF_O_START = 24, OFF_O_END = 32,
    OFF_O_DATA = 48,
    /* DEVICE: Device4/5 */
    OFF_D_GLOBAL_MEM = 16, OFF_D_WARP = 32, OFF_D_SMS = 44, OFF_D_MAX_WARPS_SM = 52,
    OFF_D_SMEM_SM = 60, OFF_D_REGS_SM = 64, OFF_D_REGS_BLOCK = 68, OFF_D_SMEM_BLOCK = 72,
    OFF_D_THREADS_BLOCK = 76, OFF_D_MAJOR = 104, OFF_D_MINOR = 108, OFF_D_ID = 112,
    OFF_D_NAME = 136,
    /* CONTEXT: Context2/3 */
    OFF_T_CONTEXT = 4, OFF_T_DEVICE = 8,
    /* MARKER: Marker2 */
    OFF_M_FLAGS = 4, OFF_M_TIMESTAMP = 8, OFF_M_ID = 16, OFF_M_OBJECT_KIND = 20,
    OFF_M_OBJECT = 24, OFF_M_NAME = 40, OFF_M_DOMAIN = 48,
    /* NAME */
    OFF_N_OBJECT_KIND = 4, OFF_N_OBJECT = 8, OFF_N_NAME = 24
};

struct prof_layout {
    uint32_t api_version;          /* cuptiGetVersion */
    const char *cuda;              /* "12.4-12.6", "12.8-12.9", "13.x" */
    uint16_t size[PROF_REC_COUNT]; /* record bytes in this version */
};

/* The layout CUPTI API version `v` writes. -1 when the version is older
 * than 22 (CUDA 12.4), which the profiler does not support. */
int prof_layout_for_version(uint32_t v, struct prof_layout *out);

/* The record class of a CUPTI activity kind, or PROF_REC_NONE. */
enum prof_rec prof_layout_rec_of_kind(uint32_t cupti_kind);

/* Whether a record of class r has `width` bytes at `off` in this version. */
static inline int prof_layout_has(const struct prof_layout *l, enum prof_rec r, unsigned off,
                                  unsigned width)
{
    return off + width <= l->size[r];
}

/* Unaligned little reads of record fields. */
static inline uint8_t prof_rd8(const void *rec, unsigned off)
{
    return ((const uint8_t *)rec)[off];
}
static inline uint16_t prof_rd16(const void *rec, unsigned off)
{
    uint16_t v;
    memcpy(&v, (const char *)rec + off, sizeof v);
    return v;
}
static inline uint32_t prof_rd32(const void *rec, unsigned off)
{
    uint32_t v;
    memcpy(&v, (const char *)rec + off, sizeof v);
    return v;
}
static inline uint64_t prof_rd64(const void *rec, unsigned off)
{
    uint64_t v;
    memcpy(&v, (const char *)rec + off, sizeof v);
    return v;
}
static inline const char *prof_rdstr(const void *rec, unsigned off)
{
    const char *p;
    memcpy(&p, (const char *)rec + off, sizeof p);
    return p;
}

#endif
