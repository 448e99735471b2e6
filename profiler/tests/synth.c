/* profiler/tests/synth.c: synthetic records and their iteration (synth.h). */
#include "profiler/tests/synth.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

enum { POISON = 0xA5 };

static struct prof_layout l13;

void synth_init(struct synth_buf *b, const struct prof_layout *l, int real)
{
    memset(b, 0, sizeof *b);
    b->l = l;
    b->real = real;
    prof_layout_for_version(130001, &l13);
}

void synth_release(struct synth_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* A zeroed record of class rec in the buffer's layout; its slot's tail (up
 * to the 13.0 size, for the real iterator) is poison. */
static void *add(struct synth_buf *b, uint32_t kind, enum prof_rec rec)
{
    size_t own = b->l->size[rec], slot = b->real ? l13.size[rec] : own;
    if (slot < own)
        slot = own;
    slot = (slot + 7) & ~(size_t)7;
    if (b->len + slot > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + slot)
            cap *= 2;
        uint8_t *p = NULL;
        if (posix_memalign((void **)&p, 8, cap))
            abort();
        if (b->p)
            memcpy(p, b->p, b->len);
        free(b->p);
        b->p = p;
        b->cap = cap;
    }
    uint8_t *r = b->p + b->len;
    memset(r, 0, own);
    memset(r + own, POISON, slot - own);
    memcpy(r, &kind, sizeof kind);
    b->len += slot;
    return r;
}

static int has(const struct synth_buf *b, enum prof_rec rec, size_t off, size_t width)
{
    return prof_layout_has(b->l, rec, (unsigned)off, (unsigned)width);
}

#define HAS(b, rec, T, f) has(b, rec, offsetof(T, f), sizeof(((T *)0)->f))

void synth_api(struct synth_buf *b, int runtime, uint32_t cbid, uint64_t start, uint64_t end,
               uint32_t pid, uint32_t tid, uint32_t corr)
{
    CUpti_ActivityAPI *a = add(b, runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER,
                               PROF_REC_API);
    a->cbid = cbid;
    a->start = start;
    a->end = end;
    a->processId = pid;
    a->threadId = tid;
    a->correlationId = corr;
}

void synth_kernel(struct synth_buf *b, uint64_t start, uint64_t end, uint32_t corr,
                  uint32_t device, uint32_t context, uint32_t stream, const char *name)
{
    CUpti_ActivityKernel9 *k = add(b, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, PROF_REC_KERNEL);
    k->start = start;
    k->end = end;
    k->correlationId = corr;
    k->deviceId = device;
    k->contextId = context;
    k->streamId = stream;
    k->name = name;
    k->gridX = 108, k->gridY = 1, k->gridZ = 1;
    k->blockX = 256, k->blockY = 1, k->blockZ = 1;
    k->registersPerThread = 32;
    k->staticSharedMemory = 1024;
    k->dynamicSharedMemory = 2048;
    if (HAS(b, PROF_REC_KERNEL, CUpti_ActivityKernel10, isDeviceLaunched))
        ((CUpti_ActivityKernel10 *)k)->isDeviceLaunched = 0;
}

void synth_memcpy(struct synth_buf *b, uint8_t copy_kind, uint64_t bytes, uint64_t start,
                  uint64_t end, uint32_t device, uint32_t context, uint32_t stream, uint32_t corr)
{
    CUpti_ActivityMemcpy5 *m = add(b, CUPTI_ACTIVITY_KIND_MEMCPY, PROF_REC_MEMCPY);
    m->copyKind = copy_kind;
    m->srcKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                                                              : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m->dstKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
                                                              : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->deviceId = device;
    m->contextId = context;
    m->streamId = stream;
    m->correlationId = corr;
    if (HAS(b, PROF_REC_MEMCPY, CUpti_ActivityMemcpy6, copyCount))
        ((CUpti_ActivityMemcpy6 *)m)->copyCount = 1;
}

void synth_p2p(struct synth_buf *b, uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
               uint32_t stream, uint32_t corr, uint32_t src_device, uint32_t dst_device)
{
    CUpti_ActivityMemcpyPtoP3 *m = add(b, CUPTI_ACTIVITY_KIND_MEMCPY2, PROF_REC_P2P);
    m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    m->srcKind = m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->deviceId = device;
    m->contextId = device + 1;
    m->streamId = stream;
    m->srcDeviceId = src_device;
    m->dstDeviceId = dst_device;
    m->srcContextId = src_device + 1;
    m->dstContextId = dst_device + 1;
    m->correlationId = corr;
}

void synth_memset(struct synth_buf *b, uint64_t bytes, uint64_t start, uint64_t end,
                  uint32_t device, uint32_t context, uint32_t stream, uint32_t corr)
{
    CUpti_ActivityMemset3 *m = add(b, CUPTI_ACTIVITY_KIND_MEMSET, PROF_REC_MEMSET);
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->deviceId = device;
    m->contextId = context;
    m->streamId = stream;
    m->correlationId = corr;
    m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
}

void synth_sync(struct synth_buf *b, uint32_t type, uint64_t start, uint64_t end, uint32_t corr,
                uint32_t context, uint32_t stream, uint32_t event, uint64_t sync_id)
{
    CUpti_ActivitySynchronization *s = add(b, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, PROF_REC_SYNC);
    s->type = type;
    s->start = start;
    s->end = end;
    s->correlationId = corr;
    s->contextId = context;
    s->streamId = stream;
    s->cudaEventId = event;
    if (HAS(b, PROF_REC_SYNC, CUpti_ActivitySynchronization2, cudaEventSyncId))
        ((CUpti_ActivitySynchronization2 *)s)->cudaEventSyncId = sync_id;
}

void synth_cuda_event(struct synth_buf *b, uint32_t corr, uint32_t context, uint32_t stream,
                      uint32_t event, uint32_t device, uint64_t device_ts, uint64_t sync_id)
{
    CUpti_ActivityCudaEvent *e = add(b, CUPTI_ACTIVITY_KIND_CUDA_EVENT, PROF_REC_CUDA_EVENT);
    e->correlationId = corr;
    e->contextId = context;
    e->streamId = stream;
    e->eventId = event;
    if (HAS(b, PROF_REC_CUDA_EVENT, CUpti_ActivityCudaEvent2, cudaEventSyncId)) {
        CUpti_ActivityCudaEvent2 *e2 = (CUpti_ActivityCudaEvent2 *)e;
        e2->deviceId = device;
        e2->deviceTimestamp = device_ts;
        e2->cudaEventSyncId = sync_id;
    }
}

void synth_ext(struct synth_buf *b, uint32_t kind, uint64_t id, uint32_t corr)
{
    CUpti_ActivityExternalCorrelation *x = add(b, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, PROF_REC_EXT);
    x->externalKind = kind;
    x->externalId = id;
    x->correlationId = corr;
}

void synth_device(struct synth_buf *b, uint32_t id, const char *name, uint32_t sms,
                  uint64_t memory, uint32_t major, uint32_t minor)
{
    CUpti_ActivityDevice4 *d = add(b, CUPTI_ACTIVITY_KIND_DEVICE, PROF_REC_DEVICE);
    d->id = id;
    d->name = b->l->api_version >= 130000 ? strdup(name) : name;
    d->numMultiprocessors = sms;
    d->globalMemorySize = memory;
    d->computeCapabilityMajor = major;
    d->computeCapabilityMinor = minor;
    d->numThreadsPerWarp = 32;
    d->maxWarpsPerMultiprocessor = 64;
    d->maxThreadsPerBlock = 1024;
    d->maxRegistersPerBlock = 65536;
    d->maxRegistersPerMultiprocessor = 65536;
    d->maxSharedMemoryPerBlock = 49152;
    d->maxSharedMemoryPerMultiprocessor = 233472;
}

void synth_context(struct synth_buf *b, uint32_t context, uint32_t device)
{
    CUpti_ActivityContext2 *c = add(b, CUPTI_ACTIVITY_KIND_CONTEXT, PROF_REC_CONTEXT);
    c->contextId = context;
    c->deviceId = device;
}

void synth_marker(struct synth_buf *b, uint32_t flags, uint64_t ts, uint32_t id, uint32_t pid,
                  uint32_t tid, const char *name)
{
    CUpti_ActivityMarker2 *m = add(b, CUPTI_ACTIVITY_KIND_MARKER, PROF_REC_MARKER);
    m->flags = flags;
    m->timestamp = ts;
    m->id = id;
    m->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m->objectId.pt.processId = pid;
    m->objectId.pt.threadId = tid;
    m->name = name;
}

void synth_overhead(struct synth_buf *b, uint32_t kind, uint64_t start, uint64_t end, uint32_t pid,
                    uint32_t tid)
{
    CUpti_ActivityOverhead2 *o = add(b, CUPTI_ACTIVITY_KIND_OVERHEAD, PROF_REC_OVERHEAD);
    o->overheadKind = kind;
    o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o->objectId.pt.processId = pid;
    o->objectId.pt.threadId = tid;
    o->start = start;
    o->end = end;
    if (HAS(b, PROF_REC_OVERHEAD, CUpti_ActivityOverhead3, overheadData))
        ((CUpti_ActivityOverhead3 *)o)->overheadData = malloc(16);
}

void synth_other(struct synth_buf *b)
{
    /* a NAME record: a kind the profiler does not convert */
    CUpti_ActivityName *n = add(b, CUPTI_ACTIVITY_KIND_NAME, PROF_REC_NAME);
    n->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    n->name = "worker";
}

struct prof_event *synth_event(struct prof_store *s, int type, uint32_t corr, uint64_t start)
{
    struct prof_event *e = prof_store_add(s);
    if (!e)
        abort();
    e->type = (uint8_t)type;
    e->corr = corr;
    e->start = start;
    e->end = start + 10;
    return e;
}

/* ---- iteration ---------------------------------------------------------------------- */

static const struct prof_layout *iter_layout;

void synth_set_layout(const struct prof_layout *l)
{
    iter_layout = l;
}

CUptiResult synth_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    uint8_t *p;
    if (!*rec) {
        p = buf;
    } else {
        uint32_t kind;
        memcpy(&kind, *rec, sizeof kind);
        enum prof_rec r = prof_layout_rec_of_kind(kind);
        if (r == PROF_REC_NONE)
            return CUPTI_ERROR_INVALID_KIND;
        p = (uint8_t *)*rec + ((iter_layout->size[r] + 7) & ~7u);
    }
    if (p >= buf + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)p;
    return CUPTI_SUCCESS;
}
