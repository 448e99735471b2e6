/* profiler/cupti_api.c: loading CUPTI into the function table (cupti_api.h). */
#include "profiler/cupti_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

#ifndef PROF_CUPTI_LIBDIR
#define PROF_CUPTI_LIBDIR "/usr/local/cuda/lib64"
#endif

static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

/* Resolve one symbol into a function pointer slot without a cast between
 * object and function pointers (which ISO C leaves undefined). */
static int resolve(void *lib, const char *name, void *slot, size_t slot_size)
{
    void *p = dlsym(lib, name);
    if (!p)
        return -1;
    memcpy(slot, &p, slot_size);
    return 0;
}

#define REQUIRED(field, name)                                                          \
    do {                                                                               \
        if (resolve(lib, name, &c->field, sizeof c->field)) {                          \
            snprintf(why, why_n, "%s has no %s (too old a CUPTI?)", c->path, name);    \
            return -1;                                                                 \
        }                                                                              \
    } while (0)
#define OPTIONAL(field, name) ((void)resolve(lib, name, &c->field, sizeof c->field))

static int fill(struct prof_cupti *c, void *lib, char *why, size_t why_n)
{
    REQUIRED(get_version, "cuptiGetVersion");
    REQUIRED(get_timestamp, "cuptiGetTimestamp");
    REQUIRED(get_result_string, "cuptiGetResultString");
    REQUIRED(get_callback_name, "cuptiGetCallbackName");
    REQUIRED(subscribe, "cuptiSubscribe");
    REQUIRED(unsubscribe, "cuptiUnsubscribe");
    REQUIRED(register_callbacks, "cuptiActivityRegisterCallbacks");
    REQUIRED(enable, "cuptiActivityEnable");
    REQUIRED(disable, "cuptiActivityDisable");
    REQUIRED(get_next_record, "cuptiActivityGetNextRecord");
    REQUIRED(get_num_dropped, "cuptiActivityGetNumDroppedRecords");
    REQUIRED(flush_all, "cuptiActivityFlushAll");
    REQUIRED(push_external_id, "cuptiActivityPushExternalCorrelationId");
    REQUIRED(pop_external_id, "cuptiActivityPopExternalCorrelationId");
    OPTIONAL(subscribe_v2, "cuptiSubscribe_v2");
    OPTIONAL(enable_runtime_api, "cuptiActivityEnableRuntimeApi");
    OPTIONAL(enable_driver_api, "cuptiActivityEnableDriverApi");
    OPTIONAL(enable_event_device_timestamps, "cuptiActivityEnableCudaEventDeviceTimestamps");
    OPTIONAL(nvtx_init2, "InitializeInjectionNvtx2");
    c->lib = lib;
    return 0;
}

static void *try_open(struct prof_cupti *c, const char *name, int flags)
{
    void *lib = dlopen(name, flags);
    if (lib)
        snprintf(c->path, sizeof c->path, "%s", name);
    return lib;
}

int prof_cupti_load(struct prof_cupti *c, const char *explicit_path, char *why, size_t why_n)
{
    void *lib = NULL;
    memset(c, 0, sizeof *c);
    for (size_t i = 0; !lib && i < sizeof sonames / sizeof sonames[0]; i++)
        lib = try_open(c, sonames[i], RTLD_NOW | RTLD_NOLOAD);
    c->reused = lib != NULL;
    if (!lib && explicit_path && *explicit_path)
        lib = try_open(c, explicit_path, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !lib && i < sizeof sonames / sizeof sonames[0]; i++)
        lib = try_open(c, sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = try_open(c, PROF_CUPTI_LIBDIR "/libcupti.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_n, "no libcupti found (set STEPCAST_PROF_CUPTI to its path)");
        return -1;
    }
    if (fill(c, lib, why, why_n)) {
        dlclose(lib);
        c->lib = NULL;
        return -1;
    }
    return 0;
}

const char *prof_cupti_strerror(const struct prof_cupti *c, CUptiResult r, char *buf, size_t n)
{
    const char *s = NULL;
    if (!c || !c->get_result_string || c->get_result_string(r, &s) != CUPTI_SUCCESS || !s)
        s = "CUPTI error";
    snprintf(buf, n, "%s (%d)", s, (int)r);
    return buf;
}
