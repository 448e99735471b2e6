/* model/runtime_api.c: runtime and driver call names -> graph roles. */
#include "model/runtime_api.h"

#include <stdio.h>
#include <string.h>

#include "common/banned.h"

static const struct {
    const char *name; /* canonical CUDA runtime spelling */
    enum model_rt_class cls;
} calls[] = {
    {"cudaLaunchKernel", MODEL_RT_LAUNCH},
    {"cudaLaunchKernelExC", MODEL_RT_LAUNCH},
    {"cudaLaunchCooperativeKernel", MODEL_RT_LAUNCH},
    {"cudaLaunchCooperativeKernelMultiDevice", MODEL_RT_LAUNCH},
    {"cudaExtLaunchKernel", MODEL_RT_LAUNCH},
    {"cudaModuleLaunchKernel", MODEL_RT_LAUNCH},
    {"cudaExtModuleLaunchKernel", MODEL_RT_LAUNCH},
    {"cudaGraphLaunch", MODEL_RT_LAUNCH},
    {"cudaMemcpyAsync", MODEL_RT_LAUNCH},
    {"cudaMemcpy2DAsync", MODEL_RT_LAUNCH},
    {"cudaMemcpy3DAsync", MODEL_RT_LAUNCH},
    {"cudaMemcpyPeerAsync", MODEL_RT_LAUNCH},
    {"cudaMemcpyToSymbolAsync", MODEL_RT_LAUNCH},
    {"cudaMemcpyFromSymbolAsync", MODEL_RT_LAUNCH},
    {"cudaMemcpyWithStream", MODEL_RT_LAUNCH},
    {"cudaMemsetAsync", MODEL_RT_LAUNCH},
    {"cudaMemset2DAsync", MODEL_RT_LAUNCH},
    {"cudaMemset3DAsync", MODEL_RT_LAUNCH},
    {"cudaMemPrefetchAsync", MODEL_RT_LAUNCH},
    {"cuLaunchKernel", MODEL_RT_LAUNCH},
    {"cuLaunchKernelEx", MODEL_RT_LAUNCH},
    {"cuLaunchCooperativeKernel", MODEL_RT_LAUNCH},
    {"cuGraphLaunch", MODEL_RT_LAUNCH},
    {"cuMemcpyAsync", MODEL_RT_LAUNCH},
    {"cuMemcpyHtoDAsync", MODEL_RT_LAUNCH},
    {"cuMemcpyDtoHAsync", MODEL_RT_LAUNCH},
    {"cuMemcpyDtoDAsync", MODEL_RT_LAUNCH},
    {"cuMemsetD8Async", MODEL_RT_LAUNCH},
    {"cuMemsetD16Async", MODEL_RT_LAUNCH},
    {"cuMemsetD32Async", MODEL_RT_LAUNCH},
    {"cudaMemcpy", MODEL_RT_LAUNCH_SYNC},
    {"cudaMemcpy2D", MODEL_RT_LAUNCH_SYNC},
    {"cudaMemcpy3D", MODEL_RT_LAUNCH_SYNC},
    {"cudaMemcpyPeer", MODEL_RT_LAUNCH_SYNC},
    {"cudaMemcpyToSymbol", MODEL_RT_LAUNCH_SYNC},
    {"cudaMemcpyFromSymbol", MODEL_RT_LAUNCH_SYNC},
    {"cudaMemset", MODEL_RT_LAUNCH_SYNC},
    {"cuMemcpy", MODEL_RT_LAUNCH_SYNC},
    {"cuMemcpyHtoD", MODEL_RT_LAUNCH_SYNC},
    {"cuMemcpyDtoH", MODEL_RT_LAUNCH_SYNC},
    {"cuMemcpyDtoD", MODEL_RT_LAUNCH_SYNC},
    {"cudaStreamSynchronize", MODEL_RT_SYNC_STREAM},
    {"cuStreamSynchronize", MODEL_RT_SYNC_STREAM},
    {"cudaDeviceSynchronize", MODEL_RT_SYNC_DEVICE},
    {"cudaThreadSynchronize", MODEL_RT_SYNC_DEVICE},
    {"cuCtxSynchronize", MODEL_RT_SYNC_DEVICE},
    {"cudaEventSynchronize", MODEL_RT_SYNC_EVENT},
    {"cuEventSynchronize", MODEL_RT_SYNC_EVENT},
    {"cudaEventRecord", MODEL_RT_EVENT_RECORD},
    {"cudaEventRecordWithFlags", MODEL_RT_EVENT_RECORD},
    {"cuEventRecord", MODEL_RT_EVENT_RECORD},
    {"cuEventRecordWithFlags", MODEL_RT_EVENT_RECORD},
    {"cudaStreamWaitEvent", MODEL_RT_STREAM_WAIT},
    {"cuStreamWaitEvent", MODEL_RT_STREAM_WAIT},
    {"cudaEventQuery", MODEL_RT_QUERY},
    {"cudaStreamQuery", MODEL_RT_QUERY},
    {"cuEventQuery", MODEL_RT_QUERY},
    {"cuStreamQuery", MODEL_RT_QUERY},
};

enum model_rt_class model_runtime_class(const char *name)
{
    char buf[64];
    size_t n;

    if (strncmp(name, "hip", 3) == 0) {
        snprintf(buf, sizeof buf, "cuda%s", name + 3);
    } else if (strncmp(name, "cu", 2) == 0) {
        snprintf(buf, sizeof buf, "%s", name);
    } else {
        return MODEL_RT_OTHER;
    }
    /* drop CUPTI suffixes: _v7000, _ptsz, _ptds, _v2 */
    for (;;) {
        char *u = strrchr(buf, '_');
        if (!u)
            break;
        if (strcmp(u, "_ptsz") == 0 || strcmp(u, "_ptds") == 0 ||
            (u[1] == 'v' && u[2] >= '0' && u[2] <= '9'))
            *u = '\0';
        else
            break;
    }
    n = strlen(buf);
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (strlen(calls[i].name) == n && memcmp(calls[i].name, buf, n) == 0)
            return calls[i].cls;
    return MODEL_RT_OTHER;
}

int model_copy_pageable_dtoh(const char *copy_name)
{
    return strstr(copy_name, "Pageable") && (strstr(copy_name, "DtoH") || strstr(copy_name, "-> Pageable"));
}

int model_copy_pageable_htod(const char *copy_name)
{
    return strstr(copy_name, "Pageable") && (strstr(copy_name, "HtoD") || strstr(copy_name, "Pageable ->"));
}
