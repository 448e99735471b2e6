/* profiler/tests/test_layout.c: the record offsets in layout.h, pinned
 * against the installed CUPTI headers' current and deprecated structs, and
 * the record sizes per version against the structs and the real iterator. */
#include <stddef.h>
#include <stdlib.h>

#include <cupti.h>

#include "profiler/layout.h"
#include "profiler/tests/synth.h"
#include "tests/check.h"
#include "common/banned.h"

#define PIN(off, T, f) _Static_assert((off) == offsetof(T, f), #T "." #f " moved")
#define PIN2(off, T1, T2, f) PIN(off, T1, f); PIN(off, T2, f)

/* kernels: Kernel9 (12.x) and Kernel10 (13.0) */
PIN2(OFF_K_REGS, CUpti_ActivityKernel9, CUpti_ActivityKernel10, registersPerThread);
PIN2(OFF_K_START, CUpti_ActivityKernel9, CUpti_ActivityKernel10, start);
PIN2(OFF_K_END, CUpti_ActivityKernel9, CUpti_ActivityKernel10, end);
PIN2(OFF_K_DEVICE, CUpti_ActivityKernel9, CUpti_ActivityKernel10, deviceId);
PIN2(OFF_K_CONTEXT, CUpti_ActivityKernel9, CUpti_ActivityKernel10, contextId);
PIN2(OFF_K_STREAM, CUpti_ActivityKernel9, CUpti_ActivityKernel10, streamId);
PIN2(OFF_K_GRID, CUpti_ActivityKernel9, CUpti_ActivityKernel10, gridX);
PIN2(OFF_K_GRID + 4, CUpti_ActivityKernel9, CUpti_ActivityKernel10, gridY);
PIN2(OFF_K_GRID + 8, CUpti_ActivityKernel9, CUpti_ActivityKernel10, gridZ);
PIN2(OFF_K_BLOCK, CUpti_ActivityKernel9, CUpti_ActivityKernel10, blockX);
PIN2(OFF_K_BLOCK + 8, CUpti_ActivityKernel9, CUpti_ActivityKernel10, blockZ);
PIN2(OFF_K_STATIC_SMEM, CUpti_ActivityKernel9, CUpti_ActivityKernel10, staticSharedMemory);
PIN2(OFF_K_DYNAMIC_SMEM, CUpti_ActivityKernel9, CUpti_ActivityKernel10, dynamicSharedMemory);
PIN2(OFF_K_CORR, CUpti_ActivityKernel9, CUpti_ActivityKernel10, correlationId);
PIN2(OFF_K_NAME, CUpti_ActivityKernel9, CUpti_ActivityKernel10, name);
PIN2(OFF_K_GRAPH_NODE, CUpti_ActivityKernel9, CUpti_ActivityKernel10, graphNodeId);
PIN2(OFF_K_GRAPH, CUpti_ActivityKernel9, CUpti_ActivityKernel10, graphId);
PIN(OFF_K_DEVICE_LAUNCHED, CUpti_ActivityKernel10, isDeviceLaunched);
/* copies: Memcpy5 (12.4-12.6), Memcpy6 (12.8+) */
PIN2(OFF_C_COPY_KIND, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, copyKind);
PIN2(OFF_C_SRC_KIND, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, srcKind);
PIN2(OFF_C_DST_KIND, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, dstKind);
PIN2(OFF_C_BYTES, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, bytes);
PIN2(OFF_C_START, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, start);
PIN2(OFF_C_END, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, end);
PIN2(OFF_C_DEVICE, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, deviceId);
PIN2(OFF_C_CONTEXT, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, contextId);
PIN2(OFF_C_STREAM, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, streamId);
PIN2(OFF_C_CORR, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, correlationId);
PIN2(OFF_C_GRAPH_NODE, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, graphNodeId);
PIN2(OFF_C_GRAPH, CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, graphId);
/* peer-to-peer copies: MemcpyPtoP3, MemcpyPtoP4, the same as copies up to the stream */
PIN2(OFF_C_COPY_KIND, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, copyKind);
PIN2(OFF_C_SRC_KIND, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, srcKind);
PIN2(OFF_C_DST_KIND, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, dstKind);
PIN2(OFF_C_BYTES, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, bytes);
PIN2(OFF_C_START, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, start);
PIN2(OFF_C_END, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, end);
PIN2(OFF_C_DEVICE, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, deviceId);
PIN2(OFF_C_CONTEXT, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, contextId);
PIN2(OFF_C_STREAM, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, streamId);
PIN2(OFF_P_SRC_DEVICE, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, srcDeviceId);
PIN2(OFF_P_SRC_CONTEXT, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, srcContextId);
PIN2(OFF_P_DST_DEVICE, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, dstDeviceId);
PIN2(OFF_P_DST_CONTEXT, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, dstContextId);
PIN2(OFF_P_CORR, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, correlationId);
PIN2(OFF_P_GRAPH_NODE, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, graphNodeId);
PIN2(OFF_P_GRAPH, CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4, graphId);
/* memsets: Memset3, Memset4 */
PIN2(OFF_S_BYTES, CUpti_ActivityMemset3, CUpti_ActivityMemset4, bytes);
PIN2(OFF_S_START, CUpti_ActivityMemset3, CUpti_ActivityMemset4, start);
PIN2(OFF_S_END, CUpti_ActivityMemset3, CUpti_ActivityMemset4, end);
PIN2(OFF_S_DEVICE, CUpti_ActivityMemset3, CUpti_ActivityMemset4, deviceId);
PIN2(OFF_S_CONTEXT, CUpti_ActivityMemset3, CUpti_ActivityMemset4, contextId);
PIN2(OFF_S_STREAM, CUpti_ActivityMemset3, CUpti_ActivityMemset4, streamId);
PIN2(OFF_S_CORR, CUpti_ActivityMemset3, CUpti_ActivityMemset4, correlationId);
PIN2(OFF_S_MEMORY_KIND, CUpti_ActivityMemset3, CUpti_ActivityMemset4, memoryKind);
PIN2(OFF_S_GRAPH_NODE, CUpti_ActivityMemset3, CUpti_ActivityMemset4, graphNodeId);
PIN2(OFF_S_GRAPH, CUpti_ActivityMemset3, CUpti_ActivityMemset4, graphId);
/* API calls */
PIN(OFF_A_CBID, CUpti_ActivityAPI, cbid);
PIN(OFF_A_START, CUpti_ActivityAPI, start);
PIN(OFF_A_END, CUpti_ActivityAPI, end);
PIN(OFF_A_PID, CUpti_ActivityAPI, processId);
PIN(OFF_A_TID, CUpti_ActivityAPI, threadId);
PIN(OFF_A_CORR, CUpti_ActivityAPI, correlationId);
PIN(OFF_A_RETURN, CUpti_ActivityAPI, returnValue);
/* synchronization: Synchronization (12.4-12.6), Synchronization2 (12.8+) */
PIN2(OFF_Y_TYPE, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, type);
PIN2(OFF_Y_START, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, start);
PIN2(OFF_Y_END, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, end);
PIN2(OFF_Y_CORR, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, correlationId);
PIN2(OFF_Y_CONTEXT, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, contextId);
PIN2(OFF_Y_STREAM, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, streamId);
PIN2(OFF_Y_EVENT, CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, cudaEventId);
PIN(OFF_Y_SYNC_ID, CUpti_ActivitySynchronization2, cudaEventSyncId);
/* CUDA events: CudaEvent (12.4-12.6), CudaEvent2 (12.8+) */
PIN2(OFF_E_CORR, CUpti_ActivityCudaEvent, CUpti_ActivityCudaEvent2, correlationId);
PIN2(OFF_E_CONTEXT, CUpti_ActivityCudaEvent, CUpti_ActivityCudaEvent2, contextId);
PIN2(OFF_E_STREAM, CUpti_ActivityCudaEvent, CUpti_ActivityCudaEvent2, streamId);
PIN2(OFF_E_EVENT, CUpti_ActivityCudaEvent, CUpti_ActivityCudaEvent2, eventId);
PIN(OFF_E_DEVICE, CUpti_ActivityCudaEvent2, deviceId);
PIN(OFF_E_DEVICE_TS, CUpti_ActivityCudaEvent2, deviceTimestamp);
PIN(OFF_E_SYNC_ID, CUpti_ActivityCudaEvent2, cudaEventSyncId);
/* external correlation, overhead, device, context, marker, name */
PIN(OFF_X_KIND, CUpti_ActivityExternalCorrelation, externalKind);
PIN(OFF_X_ID, CUpti_ActivityExternalCorrelation, externalId);
PIN(OFF_X_CORR, CUpti_ActivityExternalCorrelation, correlationId);
PIN2(OFF_O_KIND, CUpti_ActivityOverhead2, CUpti_ActivityOverhead3, overheadKind);
PIN2(OFF_O_OBJECT_KIND, CUpti_ActivityOverhead2, CUpti_ActivityOverhead3, objectKind);
PIN2(OFF_O_OBJECT, CUpti_ActivityOverhead2, CUpti_ActivityOverhead3, objectId);
PIN2(OFF_O_START, CUpti_ActivityOverhead2, CUpti_ActivityOverhead3, start);
PIN2(OFF_O_END, CUpti_ActivityOverhead2, CUpti_ActivityOverhead3, end);
PIN(OFF_O_DATA, CUpti_ActivityOverhead3, overheadData);
PIN2(OFF_D_GLOBAL_MEM, CUpti_ActivityDevice4, CUpti_ActivityDevice5, globalMemorySize);
PIN2(OFF_D_WARP, CUpti_ActivityDevice4, CUpti_ActivityDevice5, numThreadsPerWarp);
PIN2(OFF_D_SMS, CUpti_ActivityDevice4, CUpti_ActivityDevice5, numMultiprocessors);
PIN2(OFF_D_MAX_WARPS_SM, CUpti_ActivityDevice4, CUpti_ActivityDevice5, maxWarpsPerMultiprocessor);
PIN2(OFF_D_SMEM_SM, CUpti_ActivityDevice4, CUpti_ActivityDevice5, maxSharedMemoryPerMultiprocessor);
PIN2(OFF_D_REGS_SM, CUpti_ActivityDevice4, CUpti_ActivityDevice5, maxRegistersPerMultiprocessor);
PIN2(OFF_D_REGS_BLOCK, CUpti_ActivityDevice4, CUpti_ActivityDevice5, maxRegistersPerBlock);
PIN2(OFF_D_SMEM_BLOCK, CUpti_ActivityDevice4, CUpti_ActivityDevice5, maxSharedMemoryPerBlock);
PIN2(OFF_D_THREADS_BLOCK, CUpti_ActivityDevice4, CUpti_ActivityDevice5, maxThreadsPerBlock);
PIN2(OFF_D_MAJOR, CUpti_ActivityDevice4, CUpti_ActivityDevice5, computeCapabilityMajor);
PIN2(OFF_D_MINOR, CUpti_ActivityDevice4, CUpti_ActivityDevice5, computeCapabilityMinor);
PIN2(OFF_D_ID, CUpti_ActivityDevice4, CUpti_ActivityDevice5, id);
PIN2(OFF_D_NAME, CUpti_ActivityDevice4, CUpti_ActivityDevice5, name);
PIN2(OFF_T_CONTEXT, CUpti_ActivityContext2, CUpti_ActivityContext3, contextId);
PIN2(OFF_T_DEVICE, CUpti_ActivityContext2, CUpti_ActivityContext3, deviceId);
PIN(OFF_M_FLAGS, CUpti_ActivityMarker2, flags);
PIN(OFF_M_TIMESTAMP, CUpti_ActivityMarker2, timestamp);
PIN(OFF_M_ID, CUpti_ActivityMarker2, id);
PIN(OFF_M_OBJECT_KIND, CUpti_ActivityMarker2, objectKind);
PIN(OFF_M_OBJECT, CUpti_ActivityMarker2, objectId);
PIN(OFF_M_NAME, CUpti_ActivityMarker2, name);
PIN(OFF_M_DOMAIN, CUpti_ActivityMarker2, domain);
PIN(OFF_N_OBJECT_KIND, CUpti_ActivityName, objectKind);
PIN(OFF_N_OBJECT, CUpti_ActivityName, objectId);
PIN(OFF_N_NAME, CUpti_ActivityName, name);

TEST(prof_layout_sizes_follow_the_version)
{
    struct prof_layout l;
    CHECK(prof_layout_for_version(21, &l) != 0); /* 12.3: not supported */
    CHECK_EQ_INT(prof_layout_for_version(22, &l), 0);
    CHECK_EQ_INT(l.size[PROF_REC_KERNEL], sizeof(CUpti_ActivityKernel9));
    CHECK_EQ_INT(l.size[PROF_REC_MEMCPY], sizeof(CUpti_ActivityMemcpy5));
    CHECK_EQ_INT(l.size[PROF_REC_SYNC], sizeof(CUpti_ActivitySynchronization));
    CHECK_EQ_INT(l.size[PROF_REC_CUDA_EVENT], sizeof(CUpti_ActivityCudaEvent));
    CHECK_EQ_INT(l.size[PROF_REC_DEVICE], sizeof(CUpti_ActivityDevice4));
    CHECK_EQ_INT(l.size[PROF_REC_CONTEXT], sizeof(CUpti_ActivityContext2));
    CHECK_EQ_INT(l.size[PROF_REC_OVERHEAD], sizeof(CUpti_ActivityOverhead2));
    CHECK_EQ_INT(l.size[PROF_REC_MEMSET], sizeof(CUpti_ActivityMemset3));
    CHECK_EQ_INT(l.size[PROF_REC_P2P], sizeof(CUpti_ActivityMemcpyPtoP3));
    CHECK(!prof_layout_has(&l, PROF_REC_SYNC, OFF_Y_SYNC_ID, 8));
    CHECK(!prof_layout_has(&l, PROF_REC_CUDA_EVENT, OFF_E_DEVICE_TS, 8));
    CHECK_EQ_INT(prof_layout_for_version(26, &l), 0); /* 12.8 */
    CHECK_EQ_INT(l.size[PROF_REC_KERNEL], sizeof(CUpti_ActivityKernel9));
    CHECK_EQ_INT(l.size[PROF_REC_MEMCPY], sizeof(CUpti_ActivityMemcpy6));
    CHECK_EQ_INT(l.size[PROF_REC_SYNC], sizeof(CUpti_ActivitySynchronization2));
    CHECK_EQ_INT(l.size[PROF_REC_CUDA_EVENT], sizeof(CUpti_ActivityCudaEvent2));
    CHECK(prof_layout_has(&l, PROF_REC_SYNC, OFF_Y_SYNC_ID, 8));
    CHECK(!prof_layout_has(&l, PROF_REC_KERNEL, OFF_K_DEVICE_LAUNCHED, 1));
    CHECK_EQ_INT(prof_layout_for_version(CUPTI_API_VERSION, &l), 0); /* the installed 13.x */
    CHECK_EQ_INT(l.size[PROF_REC_KERNEL], sizeof(CUpti_ActivityKernel10));
    CHECK_EQ_INT(l.size[PROF_REC_MEMCPY], sizeof(CUpti_ActivityMemcpy6));
    CHECK_EQ_INT(l.size[PROF_REC_P2P], sizeof(CUpti_ActivityMemcpyPtoP4));
    CHECK_EQ_INT(l.size[PROF_REC_MEMSET], sizeof(CUpti_ActivityMemset4));
    CHECK_EQ_INT(l.size[PROF_REC_API], sizeof(CUpti_ActivityAPI));
    CHECK_EQ_INT(l.size[PROF_REC_SYNC], sizeof(CUpti_ActivitySynchronization2));
    CHECK_EQ_INT(l.size[PROF_REC_CUDA_EVENT], sizeof(CUpti_ActivityCudaEvent2));
    CHECK_EQ_INT(l.size[PROF_REC_EXT], sizeof(CUpti_ActivityExternalCorrelation));
    CHECK_EQ_INT(l.size[PROF_REC_OVERHEAD], sizeof(CUpti_ActivityOverhead3));
    CHECK_EQ_INT(l.size[PROF_REC_DEVICE], sizeof(CUpti_ActivityDevice5));
    CHECK_EQ_INT(l.size[PROF_REC_CONTEXT], sizeof(CUpti_ActivityContext3));
    CHECK_EQ_INT(l.size[PROF_REC_MARKER], sizeof(CUpti_ActivityMarker2));
    CHECK_EQ_INT(l.size[PROF_REC_MARKER_DATA], sizeof(CUpti_ActivityMarkerData2));
    CHECK_EQ_INT(l.size[PROF_REC_NAME], sizeof(CUpti_ActivityName));
    CHECK(prof_layout_has(&l, PROF_REC_KERNEL, OFF_K_DEVICE_LAUNCHED, 1));
    CHECK_EQ_INT(prof_layout_rec_of_kind(CUPTI_ACTIVITY_KIND_KERNEL), PROF_REC_NONE);
}

/* Our 13.x sizes agree with how the real libcupti steps through records:
 * each kind, followed by an API record, comes back at our offsets. */
TEST(prof_layout_matches_the_real_iterator)
{
    const struct prof_cupti *c = synth_real_cupti();
    uint32_t v = 0;
    struct prof_layout l;
    CHECK_EQ_INT(c->get_version(&v), CUPTI_SUCCESS);
    if (v < 130000)
        SKIP("the loaded CUPTI (API %u) is not 13.x", v);
    CHECK_EQ_INT(prof_layout_for_version(v, &l), 0);
    static const uint32_t kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CUDA_EVENT,
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
        CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA, CUPTI_ACTIVITY_KIND_NAME};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t size = l.size[prof_layout_rec_of_kind(kinds[i])];
        uint64_t storage[64] = {0};
        uint8_t *buf = (uint8_t *)storage;
        uint32_t api = CUPTI_ACTIVITY_KIND_RUNTIME;
        memcpy(buf, &kinds[i], 4);
        memcpy(buf + size, &api, 4);
        CUpti_Activity *rec = NULL;
        int n = 0;
        size_t second = 0;
        CUptiResult r;
        while ((r = c->get_next_record(buf, size + sizeof(CUpti_ActivityAPI), &rec)) == CUPTI_SUCCESS) {
            if (n++ == 1)
                second = (size_t)((uint8_t *)rec - buf);
        }
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_INT(second, size);
        CHECK_EQ_INT(r, CUPTI_ERROR_MAX_LIMIT_REACHED);
    }
}
