/* tests/fuzz/fuzz_prof_json.c: libFuzzer target for the profiler's trace
 * writer: whatever bytes a kernel, an NVTX range or an NCCL communicator is
 * named, the trace written must load in stepcast's reader, with valid UTF-8
 * names kept byte for byte and anything else repaired (U+FFFD).
 *
 * The input, up to its first NUL (names are C strings), names a kernel, the
 * NVTX range around it and the communicator of an NCCL call joined to it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "model/trace.h"
#include "profiler/exports.h"
#include "profiler/json.h"
#include "profiler/kineto.h"
#include "profiler/nccl.h"
#include "profiler/store.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct prof_event *add(struct prof_store *s, int type, uint32_t corr, uint64_t start)
{
    struct prof_event *e = prof_store_add(s);
    e->type = (uint8_t)type;
    e->corr = corr;
    e->start = start;
    e->end = start + 1000;
    return e;
}

/* Whether s[0..n) is valid UTF-8 (the JSON writer's rule). */
static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                                  : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct prof_json w;
    char name[4096];
    size_t n = 0;
    while (n < size && n < sizeof name - 1 && data[n])
        n++;
    memcpy(name, data, n);
    name[n] = '\0';

    struct prof_store st;
    if (prof_store_init(&st, 0))
        return 0;
    uint32_t id = prof_store_intern(&st, name, n);
    struct prof_event *e = add(&st, PROF_EV_MARKER, 0, 1000);
    e->sub = PROF_MARK_START;
    e->name = id;
    e->u.marker.id = 1;
    e = add(&st, PROF_EV_MARKER, 0, 9000);
    e->sub = PROF_MARK_END;
    e->u.marker.id = 1;
    add(&st, PROF_EV_RUNTIME, 7, 2000)->name = prof_store_intern(&st, "cudaLaunchKernel", 16);
    e = add(&st, PROF_EV_KERNEL, 7, 3000);
    e->name = id;
    e->at.gpu.stream = 7;

    /* an NCCL communicator named by the input, with one v4 plan for the kernel */
    struct prof_nccl_log *l = prof_nccl();
    void *ctx = NULL, *plan = NULL, *coll = NULL;
    int mask;
    prof_nccl_reset(l);
    prof_nccl_mark_injected(l);
    prof_nccl_activate(l, NULL, 0);
    ncclProfiler_v4.init(&ctx, &mask, name, 42, 1, 2, 0, NULL);
    struct prof_nccl_descr_v4 d;
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_GROUP;
    ncclProfiler_v4.start_event(ctx, &plan, &d);
    d.type = PROF_NCCL_COLL;
    d.parent = plan;
    d.coll.func = name;
    d.coll.datatype = name;
    d.coll.count = 1;
    ncclProfiler_v4.start_event(ctx, &coll, &d);
    prof_nccl_deactivate(l);

    struct prof_trace_info info;
    memset(&info, 0, sizeof info);
    info.rank = info.world_size = info.window_first = info.window_last = -1;
    info.process_name = name;
    info.steps.nvtx_prefix = "";
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    if (f)
        prof_json_open_stream(&w, f);
    if (f && prof_kineto_emit(&w, &st, l, &info, NULL) == 0 && prof_json_close(&w) == 0) {
        struct model_trace *t = NULL;
        struct sc_error err;
        if (model_trace_load_mem(json, len, "fuzz", NULL, &t, &err) != SC_OK)
            __builtin_trap(); /* the writer wrote something the reader rejects */
        int found = 0;
        for (size_t i = 0; i < t->n_events; i++) {
            if (t->events[i].kind != MODEL_EV_KERNEL)
                continue;
            const char *got = model_str(t, t->events[i].name);
            if (valid_utf8((const unsigned char *)name, n) ? strcmp(got, name) != 0
                                                             : !strstr(got, "\xef\xbf\xbd"))
                __builtin_trap(); /* a name not kept, or not repaired */
            found = 1;
        }
        if (!found)
            __builtin_trap();
        model_trace_free(t);
    } else if (f) {
        prof_json_close(&w);
    }
    free(json);
    prof_nccl_reset(l);
    prof_store_release(&st);
    return 0;
}
