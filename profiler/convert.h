/* profiler/convert.h: CUPTI activity records -> profiler events.
 *
 * Pure conversion: a record's bytes, read through the layout of the CUPTI
 * version that wrote them (layout.h), become one prof_event or one side
 * table entry in the store; nothing else is touched, no I/O, no globals.
 * Buffers are walked with the real cuptiActivityGetNextRecord (passed in, so
 * a test can also walk a buffer laid out for another CUPTI version).
 *
 * Ownership: kernel and NVTX names stay CUPTI's and are copied into the
 * store. Device names and overhead data, which CUPTI 13 hands to the client
 * to free, are freed here (only on 13.x, where the headers say so). */
#ifndef PROFILER_CONVERT_H
#define PROFILER_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "profiler/layout.h"
#include "profiler/store.h"

#define PROF_CBID_CACHE 1024

typedef CUptiResult (*prof_next_record_fn)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
typedef CUptiResult (*prof_callback_name_fn)(CUpti_CallbackDomain d, uint32_t cbid,
                                             const char **name);

struct prof_convert {
    const struct prof_layout *layout;
    struct prof_store *store;
    prof_callback_name_fn callback_name; /* cuptiGetCallbackName, or NULL */
    uint32_t runtime_names[PROF_CBID_CACHE]; /* string id + 1, 0 = not looked up */
    uint32_t driver_names[PROF_CBID_CACHE];
    uint64_t records;       /* records seen */
    uint64_t skipped;       /* records of kinds not converted */
    uint64_t dropped;       /* records not stored (store full) */
};

void prof_convert_init(struct prof_convert *c, const struct prof_layout *l, struct prof_store *s,
                       prof_callback_name_fn callback_name);

/* Convert one record. 1 stored, 0 skipped (a kind not kept), -1 not stored
 * because the store is full or out of memory. */
int prof_convert_record(struct prof_convert *c, const void *rec);

/* Convert every record of buf[0..valid), stepping with next(). Returns the
 * number of records seen. */
size_t prof_convert_buffer(struct prof_convert *c, prof_next_record_fn next, uint8_t *buf,
                           size_t valid);

/* The string id of a runtime (runtime != 0) or driver API name: CUPTI's
 * callback name without its version suffix ("cudaLaunchKernel"). */
uint32_t prof_convert_api_name(struct prof_convert *c, int runtime, uint32_t cbid);

#endif
