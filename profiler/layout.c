/* profiler/layout.c: record sizes by CUPTI version (layout.h). */
#include "profiler/layout.h"

#include <cupti.h>

#include "common/banned.h"

/* CUPTI API versions: 22 = CUDA 12.4, 26 = 12.8, 130000 = 13.0. */
enum { API_12_4 = 22, API_12_8 = 26, API_13_0 = 130000 };

int prof_layout_for_version(uint32_t v, struct prof_layout *out)
{
    static const uint16_t common[PROF_REC_COUNT] = {
        [PROF_REC_KERNEL] = 208,     /* Kernel9 */
        [PROF_REC_MEMCPY] = 88,      /* Memcpy5 */
        [PROF_REC_P2P] = 88,         /* MemcpyPtoP3 (or 4: 96) */
        [PROF_REC_MEMSET] = 80,      /* Memset3 (or 4: 88) */
        [PROF_REC_API] = 40,         /* ActivityAPI */
        [PROF_REC_SYNC] = 40,        /* Synchronization */
        [PROF_REC_CUDA_EVENT] = 24,  /* CudaEvent */
        [PROF_REC_EXT] = 24,         /* ExternalCorrelation */
        [PROF_REC_OVERHEAD] = 48,    /* Overhead2 (or 3: 56) */
        [PROF_REC_DEVICE] = 176,     /* Device4 (or 5: 184) */
        [PROF_REC_CONTEXT] = 24,     /* Context2 (or 3: 32) */
        [PROF_REC_MARKER] = 56,      /* Marker2 */
        [PROF_REC_MARKER_DATA] = 32, /* MarkerData */
        [PROF_REC_NAME] = 32,        /* Name */
    };
    if (v < API_12_4)
        return -1;
    memcpy(out->size, common, sizeof common);
    out->api_version = v;
    out->cuda = "12.4-12.6";
    if (v >= API_12_8) {
        out->cuda = "12.8-12.9";
        out->size[PROF_REC_MEMCPY] = 96;     /* Memcpy6 */
        out->size[PROF_REC_SYNC] = 56;       /* Synchronization2 */
        out->size[PROF_REC_CUDA_EVENT] = 56; /* CudaEvent2 */
    }
    if (v >= API_13_0) {
        out->cuda = "13.x";
        out->size[PROF_REC_KERNEL] = 216;     /* Kernel10 (13.1's Kernel11 appends) */
        out->size[PROF_REC_P2P] = 96;         /* MemcpyPtoP4 */
        out->size[PROF_REC_MEMSET] = 88;      /* Memset4 */
        out->size[PROF_REC_OVERHEAD] = 56;    /* Overhead3 */
        out->size[PROF_REC_DEVICE] = 184;     /* Device5 */
        out->size[PROF_REC_CONTEXT] = 32;     /* Context3 */
        out->size[PROF_REC_MARKER_DATA] = 40; /* MarkerData2 */
    }
    return 0;
}

enum prof_rec prof_layout_rec_of_kind(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return PROF_REC_KERNEL;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return PROF_REC_MEMCPY;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return PROF_REC_P2P;
    case CUPTI_ACTIVITY_KIND_MEMSET: return PROF_REC_MEMSET;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return PROF_REC_API;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return PROF_REC_SYNC;
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return PROF_REC_CUDA_EVENT;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return PROF_REC_EXT;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return PROF_REC_OVERHEAD;
    case CUPTI_ACTIVITY_KIND_DEVICE: return PROF_REC_DEVICE;
    case CUPTI_ACTIVITY_KIND_CONTEXT: return PROF_REC_CONTEXT;
    case CUPTI_ACTIVITY_KIND_MARKER: return PROF_REC_MARKER;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return PROF_REC_MARKER_DATA;
    case CUPTI_ACTIVITY_KIND_NAME: return PROF_REC_NAME;
    default: return PROF_REC_NONE;
    }
}
