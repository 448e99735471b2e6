/* profiler/inject.c: the library's entry points for the CUDA driver and NVTX.
 *
 *   CUDA_INJECTION64_PATH=libstepcast_prof.so   the driver calls
 *       InitializeInjection() once, during cuInit, which starts the session;
 *   NVTX_INJECTION64_PATH=libstepcast_prof.so   NVTX calls
 *       InitializeInjectionNvtx2(), which hands NVTX to the same libcupti so
 *       that ranges become CUPTI MARKER records (pointing NVTX_INJECTION64_PATH
 *       at that libcupti directly works too).
 *
 * Both load CUPTI once, whichever comes first. Neither ever fails the
 * process: InitializeInjection returns 1 in every case (the driver goes on
 * either way), and tracing is simply off after a failure. The NCCL plugin
 * tables are exported from nccl.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "profiler/config.h"
#include "profiler/cupti_api.h"
#include "profiler/exports.h"
#include "profiler/log.h"
#include "profiler/nccl.h"
#include "profiler/session.h"
#include "common/banned.h"

#define EXPORT __attribute__((visibility("default")))

/* CUPTI 13.0.0 crashes in nvtxNameOsThreadA when it handles NVTX (NVIDIA/NVTX#125). */
#define CUPTI_NVTX_BROKEN 130000u

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct prof_config cfg;
static struct prof_cupti cupti;
static int loaded; /* 1: cfg and cupti are usable */

static void load(void)
{
    char why[512];
    if (prof_config_load(&cfg, getenv, why, sizeof why)) {
        prof_log_fail("tracing disabled: %s; the job runs untraced", why);
        return;
    }
    prof_log_set_quiet(cfg.quiet);
    if (!cfg.enabled) {
        prof_log_info("disabled by STEPCAST_PROF=%s", getenv("STEPCAST_PROF"));
        return;
    }
    if (prof_cupti_load(&cupti, cfg.cupti, why, sizeof why)) {
        prof_log_fail("tracing disabled: %s; the job runs untraced", why);
        return;
    }
    loaded = 1;
}

EXPORT int InitializeInjection(void)
{
    /* whatever comes of it, the NCCL plugin must not report the injection missing */
    prof_nccl_mark_injected(prof_nccl());
    pthread_once(&load_once, load);
    if (loaded)
        prof_session_start(&cfg, &cupti);
    return 1;
}

EXPORT int InitializeInjectionNvtx2(void *get_export_table)
{
    uint32_t version = 0;
    pthread_once(&load_once, load);
    if (!loaded || !cfg.nvtx || !cupti.nvtx_init2)
        return 0; /* NVTX calls become no-ops */
    if (cupti.get_version(&version) == CUPTI_SUCCESS && version == CUPTI_NVTX_BROKEN) {
        prof_log_info("NVTX ranges not recorded: CUPTI 13.0.0 mishandles NVTX (use 13.0 Update 1 "
                      "or later)");
        return 0;
    }
    return cupti.nvtx_init2(get_export_table);
}
