/* profiler/cupti_api.h: every CUPTI entry point the profiler uses, as a
 * table of function pointers.
 *
 * CUPTI is never linked: it is dlopen'ed at run time, and a libcupti that is
 * already mapped in the process is reused (PyTorch wheels bring CUDA 12's),
 * so the process never ends up with two CUPTIs. Resolving everything into
 * one table also lets one build serve CUDA 12.4+ and 13.x, and lets tests
 * replace any call with a fake that scripts errors. Entry points that older
 * CUPTIs lack are NULL; callers check them. */
#ifndef PROFILER_CUPTI_API_H
#define PROFILER_CUPTI_API_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

struct prof_cupti {
    void *lib;        /* dlopen handle; NULL for a table filled by hand */
    char path[256];   /* the library used, for messages */
    int reused;       /* it was already loaded in the process */

    CUptiResult (*get_version)(uint32_t *version);
    CUptiResult (*get_timestamp)(uint64_t *ts);
    CUptiResult (*get_result_string)(CUptiResult r, const char **s);
    CUptiResult (*get_callback_name)(CUpti_CallbackDomain d, uint32_t cbid, const char **name);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user);
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user,
                                CUpti_SubscriberParams *p); /* optional */
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle h);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc req,
                                      CUpti_BuffersCallbackCompleteFunc done);
    CUptiResult (*enable)(CUpti_ActivityKind kind);
    CUptiResult (*disable)(CUpti_ActivityKind kind);
    CUptiResult (*enable_runtime_api)(CUpti_CallbackId cbid, uint8_t on); /* optional */
    CUptiResult (*enable_driver_api)(CUpti_CallbackId cbid, uint8_t on);  /* optional */
    CUptiResult (*enable_event_device_timestamps)(uint8_t on);            /* optional */
    CUptiResult (*get_next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
    CUptiResult (*get_num_dropped)(CUcontext ctx, uint32_t stream, size_t *dropped);
    CUptiResult (*flush_all)(uint32_t flag);
    CUptiResult (*push_external_id)(CUpti_ExternalCorrelationKind kind, uint64_t id);
    CUptiResult (*pop_external_id)(CUpti_ExternalCorrelationKind kind, uint64_t *id);
    int (*nvtx_init2)(void *get_export_table); /* InitializeInjectionNvtx2, optional */
};

/* Load CUPTI into *c: a libcupti already mapped in the process first
 * (libcupti.so.13, .so.12, .so), then `explicit_path` (STEPCAST_PROF_CUPTI)
 * if set, then the names on the library search path, then the toolkit the
 * profiler was built against. 0 on success; -1 with a reason in why[]. */
int prof_cupti_load(struct prof_cupti *c, const char *explicit_path, char *why, size_t why_n);

/* "CUPTI_ERROR_UNKNOWN (999)" style text for r, through the table when it
 * can, into buf. Returns buf. */
const char *prof_cupti_strerror(const struct prof_cupti *c, CUptiResult r, char *buf, size_t n);

#endif
