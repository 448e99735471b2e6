/* model/runtime_api.h: what a CUDA (or HIP) runtime or driver call does to
 * the dependency graph, from its name.
 *
 * HIP names map to their CUDA twins (hipLaunchKernel -> cudaLaunchKernel),
 * driver names to runtime ones (cuLaunchKernel), and CUPTI's version and
 * per-thread suffixes (_v7000, _ptsz, _ptds) are ignored. */
#ifndef MODEL_RUNTIME_API_H
#define MODEL_RUNTIME_API_H

enum model_rt_class {
    MODEL_RT_OTHER,        /* no effect on ordering (attribute queries, allocs) */
    MODEL_RT_LAUNCH,       /* enqueues GPU work: kernels, async copies and sets, graphs */
    MODEL_RT_LAUNCH_SYNC,  /* enqueues GPU work and waits for it (cudaMemcpy, cudaMemset) */
    MODEL_RT_SYNC_STREAM,  /* cudaStreamSynchronize */
    MODEL_RT_SYNC_DEVICE,  /* cudaDeviceSynchronize, cuCtxSynchronize */
    MODEL_RT_SYNC_EVENT,   /* cudaEventSynchronize */
    MODEL_RT_EVENT_RECORD, /* cudaEventRecord */
    MODEL_RT_STREAM_WAIT,  /* cudaStreamWaitEvent */
    MODEL_RT_QUERY         /* cudaEventQuery, cudaStreamQuery: polling */
};

enum model_rt_class model_runtime_class(const char *name);

/* Whether a copy (its GPU event's name, "Memcpy DtoH (Device ->
 * Pageable)") moves device memory to pageable host memory: the async call
 * that launched it returns once the copy has run, a wait on the GPU. */
int model_copy_pageable_dtoh(const char *copy_name);
/* ... or pageable host memory to the device: the call returns once its
 * data is staged. */
int model_copy_pageable_htod(const char *copy_name);

#endif
