/* profiler/exports.h: the symbols libstepcast_prof.so exports, and nothing
 * else (everything is built with hidden visibility).
 *
 *   InitializeInjection       CUDA_INJECTION64_PATH: the driver's entry point
 *   InitializeInjectionNvtx2  NVTX_INJECTION64_PATH: NVTX's entry point
 *   ncclProfiler_v5 / _v4     NCCL_PROFILER_PLUGIN: NCCL 2.28+ / 2.27 */
#ifndef PROFILER_EXPORTS_H
#define PROFILER_EXPORTS_H

#include "profiler/nccl_abi.h"

int InitializeInjection(void);
int InitializeInjectionNvtx2(void *get_export_table);
extern const struct prof_nccl_v5 ncclProfiler_v5;
extern const struct prof_nccl_v4 ncclProfiler_v4;

#endif
