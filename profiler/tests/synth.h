/* profiler/tests/synth.h: synthetic CUPTI activity records, and a fake CUPTI,
 * for the profiler's tests (no GPU needed).
 *
 * Records are written through the installed headers' structs, in the
 * layout of a chosen CUPTI version: a CUDA 12.4 layout gets
 * CUpti_ActivityKernel9, CUpti_ActivitySynchronization (40 bytes) and so on;
 * a 13.0 layout the current structs. A buffer is packed for one of two
 * iterators:
 *
 *   real  libcupti 13's cuptiActivityGetNextRecord, which steps by 13.0
 *         sizes: a smaller (older) record sits in a 13.0-sized slot whose
 *         tail is filled with 0xA5, so a converter that read a field the
 *         older version lacks would see garbage;
 *   fake  synth_next_record, which steps by the layout's own sizes, as the
 *         libcupti of that version does.
 *
 * The fake CUPTI (synth_cupti) scripts results per call and keeps the
 * callbacks the session registers; synth_cupti_deliver hands it records
 * the way CUPTI would (request a buffer, fill it, complete it). */
#ifndef PROFILER_TESTS_SYNTH_H
#define PROFILER_TESTS_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "profiler/cupti_api.h"
#include "profiler/layout.h"
#include "profiler/store.h"

struct synth_buf {
    uint8_t *p;
    size_t len, cap;
    const struct prof_layout *l;
    int real; /* slots sized for libcupti 13's iterator */
};

void synth_init(struct synth_buf *b, const struct prof_layout *l, int real);
void synth_release(struct synth_buf *b);

void synth_api(struct synth_buf *b, int runtime, uint32_t cbid, uint64_t start, uint64_t end,
               uint32_t pid, uint32_t tid, uint32_t corr);
void synth_kernel(struct synth_buf *b, uint64_t start, uint64_t end, uint32_t corr,
                  uint32_t device, uint32_t context, uint32_t stream, const char *name);
void synth_memcpy(struct synth_buf *b, uint8_t copy_kind, uint64_t bytes, uint64_t start,
                  uint64_t end, uint32_t device, uint32_t context, uint32_t stream, uint32_t corr);
void synth_p2p(struct synth_buf *b, uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
               uint32_t stream, uint32_t corr, uint32_t src_device, uint32_t dst_device);
void synth_memset(struct synth_buf *b, uint64_t bytes, uint64_t start, uint64_t end,
                  uint32_t device, uint32_t context, uint32_t stream, uint32_t corr);
void synth_sync(struct synth_buf *b, uint32_t type, uint64_t start, uint64_t end, uint32_t corr,
                uint32_t context, uint32_t stream, uint32_t event, uint64_t sync_id);
void synth_cuda_event(struct synth_buf *b, uint32_t corr, uint32_t context, uint32_t stream,
                      uint32_t event, uint32_t device, uint64_t device_ts, uint64_t sync_id);
void synth_ext(struct synth_buf *b, uint32_t kind, uint64_t id, uint32_t corr);
/* name is copied with malloc on 13.x (the converter frees it, as CUPTI 13 asks) */
void synth_device(struct synth_buf *b, uint32_t id, const char *name, uint32_t sms,
                  uint64_t memory, uint32_t major, uint32_t minor);
void synth_context(struct synth_buf *b, uint32_t context, uint32_t device);
void synth_marker(struct synth_buf *b, uint32_t flags, uint64_t ts, uint32_t id, uint32_t pid,
                  uint32_t tid, const char *name);
void synth_overhead(struct synth_buf *b, uint32_t kind, uint64_t start, uint64_t end, uint32_t pid,
                    uint32_t tid);
/* a record of an unrelated kind (skipped by the converter) */
void synth_other(struct synth_buf *b);

/* An event put straight into a store, for tests of what follows conversion
 * (joins, steps): type, correlation id, start, and end 10 ns later. */
struct prof_event *synth_event(struct prof_store *s, int type, uint32_t corr, uint64_t start);

/* Step through a buffer as the libcupti of synth_set_layout's version does. */
void synth_set_layout(const struct prof_layout *l);
CUptiResult synth_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec);

/* The real CUPTI, loaded once; NULL (and the test SKIPs) when absent. */
const struct prof_cupti *synth_real_cupti(void);

/* ---- the fake CUPTI ---- */

struct synth_cupti_script {
    uint32_t version;
    CUptiResult subscribe;          /* result of cuptiSubscribe(_v2) */
    const char *holder;             /* reported as the old subscriber */
    CUpti_ActivityKind failing_kind; /* cuptiActivityEnable fails for it ... */
    CUptiResult enable_error;       /* ... with this, when non-zero */
    CUptiResult flush_error;        /* result of periodic (unforced) flushes */
};

struct synth_cupti_log {
    int subscribed, unsubscribed;
    int enabled[64], disabled[64]; /* by kind */
    int flushes, forced_flushes;
    int pushes, pops;
    uint64_t last_pushed;
    int runtime_filtered, driver_filtered;
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
};

/* A table whose calls follow the script and are counted in the log. */
void synth_cupti_make(struct prof_cupti *c, const struct synth_cupti_script *s);
struct synth_cupti_log *synth_cupti_log(void);
/* Hand b's records to the registered callbacks as one completed buffer. */
void synth_cupti_deliver(const struct synth_buf *b);

#endif
