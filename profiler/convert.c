/* profiler/convert.c: record -> event conversion (convert.h). */
#include "profiler/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

enum { API_13_0 = 130000 };

void prof_convert_init(struct prof_convert *c, const struct prof_layout *l, struct prof_store *s,
                       prof_callback_name_fn callback_name)
{
    memset(c, 0, sizeof *c);
    c->layout = l;
    c->store = s;
    c->callback_name = callback_name;
}

/* CUPTI names calls "cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000";
 * traces name them without the version suffix, as Kineto does. */
static size_t strip_version(const char *name)
{
    size_t n = strlen(name);
    size_t i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i < n && i >= 2 && name[i - 1] == 'v' && name[i - 2] == '_')
        return i - 2;
    return n;
}

uint32_t prof_convert_api_name(struct prof_convert *c, int runtime, uint32_t cbid)
{
    uint32_t *cache = runtime ? c->runtime_names : c->driver_names;
    if (cbid < PROF_CBID_CACHE && cache[cbid])
        return cache[cbid] - 1;
    const char *name = NULL;
    char fallback[48];
    CUpti_CallbackDomain d = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    if (!c->callback_name || c->callback_name(d, cbid, &name) != CUPTI_SUCCESS || !name) {
        snprintf(fallback, sizeof fallback, "%s_cbid_%u", runtime ? "cuda_runtime" : "cuda_driver",
                 cbid);
        name = fallback;
    }
    uint32_t id = prof_store_intern(c->store, name, strip_version(name));
    if (cbid < PROF_CBID_CACHE && id)
        cache[cbid] = id + 1;
    return id;
}

static void kernel(struct prof_convert *c, const void *r, struct prof_event *e)
{
    const struct prof_layout *l = c->layout;
    e->type = PROF_EV_KERNEL;
    e->start = prof_rd64(r, OFF_K_START);
    e->end = prof_rd64(r, OFF_K_END);
    e->corr = prof_rd32(r, OFF_K_CORR);
    e->at.gpu.device = prof_rd32(r, OFF_K_DEVICE);
    e->at.gpu.context = prof_rd32(r, OFF_K_CONTEXT);
    e->at.gpu.stream = prof_rd32(r, OFF_K_STREAM);
    for (unsigned i = 0; i < 3; i++) {
        e->u.kernel.grid[i] = prof_rd32(r, OFF_K_GRID + 4 * i);
        e->u.kernel.block[i] = prof_rd32(r, OFF_K_BLOCK + 4 * i);
    }
    e->u.kernel.registers = prof_rd16(r, OFF_K_REGS);
    e->u.kernel.shared_mem = prof_rd32(r, OFF_K_STATIC_SMEM) + prof_rd32(r, OFF_K_DYNAMIC_SMEM);
    e->u.kernel.graph_node = prof_rd64(r, OFF_K_GRAPH_NODE);
    e->u.kernel.graph_id = prof_rd32(r, OFF_K_GRAPH);
    if (prof_layout_has(l, PROF_REC_KERNEL, OFF_K_DEVICE_LAUNCHED, 1) &&
        prof_rd8(r, OFF_K_DEVICE_LAUNCHED))
        e->flags |= PROF_F_DEVICE_LAUNCHED;
    e->name = prof_store_intern_shared(c->store, prof_rdstr(r, OFF_K_NAME));
}

/* A copy or a peer-to-peer copy: the two records agree up to the stream. */
static void copy_head(const void *r, struct prof_event *e)
{
    e->type = PROF_EV_MEMCPY;
    e->sub = prof_rd8(r, OFF_C_COPY_KIND);
    e->u.copy.src_kind = prof_rd8(r, OFF_C_SRC_KIND);
    e->u.copy.dst_kind = prof_rd8(r, OFF_C_DST_KIND);
    e->u.copy.bytes = prof_rd64(r, OFF_C_BYTES);
    e->start = prof_rd64(r, OFF_C_START);
    e->end = prof_rd64(r, OFF_C_END);
    e->at.gpu.device = prof_rd32(r, OFF_C_DEVICE);
    e->at.gpu.context = prof_rd32(r, OFF_C_CONTEXT);
    e->at.gpu.stream = prof_rd32(r, OFF_C_STREAM);
}

static void memcpy_rec(const void *r, struct prof_event *e)
{
    copy_head(r, e);
    e->corr = prof_rd32(r, OFF_C_CORR);
    e->u.copy.graph_node = prof_rd64(r, OFF_C_GRAPH_NODE);
    e->u.copy.graph_id = prof_rd32(r, OFF_C_GRAPH);
    e->u.copy.src_device = e->u.copy.dst_device = e->at.gpu.device;
    e->u.copy.src_context = e->u.copy.dst_context = e->at.gpu.context;
}

static void p2p(const void *r, struct prof_event *e)
{
    copy_head(r, e);
    e->flags |= PROF_F_P2P;
    e->u.copy.src_device = prof_rd32(r, OFF_P_SRC_DEVICE);
    e->u.copy.src_context = prof_rd32(r, OFF_P_SRC_CONTEXT);
    e->u.copy.dst_device = prof_rd32(r, OFF_P_DST_DEVICE);
    e->u.copy.dst_context = prof_rd32(r, OFF_P_DST_CONTEXT);
    e->corr = prof_rd32(r, OFF_P_CORR);
    e->u.copy.graph_node = prof_rd64(r, OFF_P_GRAPH_NODE);
    e->u.copy.graph_id = prof_rd32(r, OFF_P_GRAPH);
}

static void memset_rec(const void *r, struct prof_event *e)
{
    e->type = PROF_EV_MEMSET;
    e->u.copy.bytes = prof_rd64(r, OFF_S_BYTES);
    e->start = prof_rd64(r, OFF_S_START);
    e->end = prof_rd64(r, OFF_S_END);
    e->at.gpu.device = prof_rd32(r, OFF_S_DEVICE);
    e->at.gpu.context = prof_rd32(r, OFF_S_CONTEXT);
    e->at.gpu.stream = prof_rd32(r, OFF_S_STREAM);
    e->corr = prof_rd32(r, OFF_S_CORR);
    e->u.copy.dst_kind = (uint8_t)prof_rd16(r, OFF_S_MEMORY_KIND);
    e->u.copy.graph_node = prof_rd64(r, OFF_S_GRAPH_NODE);
    e->u.copy.graph_id = prof_rd32(r, OFF_S_GRAPH);
}

static void api(struct prof_convert *c, const void *r, struct prof_event *e)
{
    int runtime = prof_rd32(r, OFF_KIND) == CUPTI_ACTIVITY_KIND_RUNTIME;
    e->type = runtime ? PROF_EV_RUNTIME : PROF_EV_DRIVER;
    e->at.cpu.cbid = prof_rd32(r, OFF_A_CBID);
    e->start = prof_rd64(r, OFF_A_START);
    e->end = prof_rd64(r, OFF_A_END);
    e->at.cpu.pid = prof_rd32(r, OFF_A_PID);
    e->at.cpu.tid = prof_rd32(r, OFF_A_TID);
    e->corr = prof_rd32(r, OFF_A_CORR);
    e->u.api.result = (int32_t)prof_rd32(r, OFF_A_RETURN);
    e->name = prof_convert_api_name(c, runtime, e->at.cpu.cbid);
}

/* cudaEventSyncId, where this CUPTI writes it and it is set. */
static void sync_id(const struct prof_layout *l, enum prof_rec rec, unsigned off, const void *r,
                    struct prof_event *e)
{
    if (!prof_layout_has(l, rec, off, 8))
        return;
    uint64_t id = prof_rd64(r, off);
    if (id != 0 && id != PROF_INVALID && id != UINT64_MAX) {
        e->u.sync.sync_id = id;
        e->flags |= PROF_F_HAS_SYNC_ID;
    }
}

static void sync_rec(struct prof_convert *c, const void *r, struct prof_event *e)
{
    e->type = PROF_EV_SYNC;
    e->sub = (uint8_t)prof_rd32(r, OFF_Y_TYPE);
    e->start = prof_rd64(r, OFF_Y_START);
    e->end = prof_rd64(r, OFF_Y_END);
    e->corr = prof_rd32(r, OFF_Y_CORR);
    e->at.gpu.context = prof_rd32(r, OFF_Y_CONTEXT);
    e->at.gpu.stream = prof_rd32(r, OFF_Y_STREAM);
    e->at.gpu.device = PROF_INVALID; /* from the context, when the trace is written */
    e->u.sync.event_id = prof_rd32(r, OFF_Y_EVENT);
    sync_id(c->layout, PROF_REC_SYNC, OFF_Y_SYNC_ID, r, e);
}

static void cuda_event(struct prof_convert *c, const void *r, struct prof_event *e)
{
    const struct prof_layout *l = c->layout;
    e->type = PROF_EV_CUDA_EVENT;
    e->corr = prof_rd32(r, OFF_E_CORR);
    e->at.gpu.context = prof_rd32(r, OFF_E_CONTEXT);
    e->at.gpu.stream = prof_rd32(r, OFF_E_STREAM);
    e->at.gpu.device = PROF_INVALID;
    e->u.sync.event_id = prof_rd32(r, OFF_E_EVENT);
    if (prof_layout_has(l, PROF_REC_CUDA_EVENT, OFF_E_DEVICE, 4)) {
        e->at.gpu.device = prof_rd32(r, OFF_E_DEVICE);
        e->flags |= PROF_F_HAS_DEVICE;
    }
    if (prof_layout_has(l, PROF_REC_CUDA_EVENT, OFF_E_DEVICE_TS, 8))
        e->u.sync.device_ts = prof_rd64(r, OFF_E_DEVICE_TS);
    sync_id(l, PROF_REC_CUDA_EVENT, OFF_E_SYNC_ID, r, e);
}

static void ext(const void *r, struct prof_event *e)
{
    e->type = PROF_EV_EXT_CORR;
    e->u.ext.kind = prof_rd32(r, OFF_X_KIND);
    e->u.ext.id = prof_rd64(r, OFF_X_ID);
    e->corr = prof_rd32(r, OFF_X_CORR);
}

static void overhead(const void *r, struct prof_event *e)
{
    e->type = PROF_EV_OVERHEAD;
    e->u.overhead.kind = prof_rd32(r, OFF_O_KIND);
    e->u.overhead.object_kind = prof_rd32(r, OFF_O_OBJECT_KIND);
    e->start = prof_rd64(r, OFF_O_START);
    e->end = prof_rd64(r, OFF_O_END);
    if (e->u.overhead.object_kind == CUPTI_ACTIVITY_OBJECT_THREAD ||
        e->u.overhead.object_kind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
        e->at.cpu.pid = prof_rd32(r, OFF_O_OBJECT);
        e->at.cpu.tid = prof_rd32(r, OFF_O_OBJECT + 4);
    } else {
        e->at.gpu.device = prof_rd32(r, OFF_O_OBJECT);
        e->at.gpu.context = prof_rd32(r, OFF_O_OBJECT + 4);
        e->at.gpu.stream = prof_rd32(r, OFF_O_OBJECT + 8);
    }
}

static void marker(struct prof_convert *c, const void *r, struct prof_event *e)
{
    uint32_t flags = prof_rd32(r, OFF_M_FLAGS);
    const char *name = prof_rdstr(r, OFF_M_NAME), *domain = prof_rdstr(r, OFF_M_DOMAIN);
    e->type = PROF_EV_MARKER;
    e->sub = flags & CUPTI_ACTIVITY_FLAG_MARKER_END     ? PROF_MARK_END
             : flags & CUPTI_ACTIVITY_FLAG_MARKER_START ? PROF_MARK_START
                                                        : PROF_MARK_INSTANT;
    e->start = e->end = prof_rd64(r, OFF_M_TIMESTAMP);
    e->u.marker.id = prof_rd32(r, OFF_M_ID);
    if (prof_rd32(r, OFF_M_OBJECT_KIND) == CUPTI_ACTIVITY_OBJECT_STREAM) {
        e->flags |= PROF_F_MARKER_GPU;
        e->at.gpu.device = prof_rd32(r, OFF_M_OBJECT);
        e->at.gpu.context = prof_rd32(r, OFF_M_OBJECT + 4);
        e->at.gpu.stream = prof_rd32(r, OFF_M_OBJECT + 8);
    } else {
        e->at.cpu.pid = prof_rd32(r, OFF_M_OBJECT);
        e->at.cpu.tid = prof_rd32(r, OFF_M_OBJECT + 4);
    }
    if (name)
        e->name = prof_store_intern(c->store, name, strlen(name));
    if (domain)
        e->u.marker.domain = prof_store_intern(c->store, domain, strlen(domain));
}

static int device(struct prof_convert *c, const void *r)
{
    struct prof_device d;
    const char *name = prof_rdstr(r, OFF_D_NAME);
    memset(&d, 0, sizeof d);
    d.id = prof_rd32(r, OFF_D_ID);
    d.global_mem = prof_rd64(r, OFF_D_GLOBAL_MEM);
    d.warp_size = prof_rd32(r, OFF_D_WARP);
    d.sms = prof_rd32(r, OFF_D_SMS);
    d.max_warps_sm = prof_rd32(r, OFF_D_MAX_WARPS_SM);
    d.smem_sm = prof_rd32(r, OFF_D_SMEM_SM);
    d.regs_sm = prof_rd32(r, OFF_D_REGS_SM);
    d.regs_block = prof_rd32(r, OFF_D_REGS_BLOCK);
    d.smem_block = prof_rd32(r, OFF_D_SMEM_BLOCK);
    d.max_threads_block = prof_rd32(r, OFF_D_THREADS_BLOCK);
    d.major = prof_rd32(r, OFF_D_MAJOR);
    d.minor = prof_rd32(r, OFF_D_MINOR);
    if (name)
        d.name = prof_store_intern(c->store, name, strlen(name));
    return prof_store_put_device(c->store, &d) ? -1 : 1;
}

static int context(struct prof_convert *c, const void *r)
{
    struct prof_context x = {prof_rd32(r, OFF_T_CONTEXT), prof_rd32(r, OFF_T_DEVICE)};
    return prof_store_put_context(c->store, &x) ? -1 : 1;
}

/* CUPTI 13 hands a device's name and an overhead record's details to the
 * client ("Client is responsible for freeing this memory"): freed once the
 * record is read, whether it was kept or not. The details are not kept. */
static void free_handed_over(const struct prof_convert *c, enum prof_rec rec, const void *r)
{
    if (c->layout->api_version < API_13_0)
        return;
    if (rec == PROF_REC_DEVICE)
        free((void *)prof_rdstr(r, OFF_D_NAME));
    else if (rec == PROF_REC_OVERHEAD && prof_layout_has(c->layout, rec, OFF_O_DATA, 8))
        free((void *)prof_rdstr(r, OFF_O_DATA));
}

int prof_convert_record(struct prof_convert *c, const void *r)
{
    enum prof_rec rec = prof_layout_rec_of_kind(prof_rd32(r, OFF_KIND));
    struct prof_event *e;
    int rc;

    c->records++;
    switch (rec) {
    case PROF_REC_DEVICE:
        rc = device(c, r);
        break;
    case PROF_REC_CONTEXT:
        rc = context(c, r);
        break;
    case PROF_REC_KERNEL:
    case PROF_REC_MEMCPY:
    case PROF_REC_P2P:
    case PROF_REC_MEMSET:
    case PROF_REC_API:
    case PROF_REC_SYNC:
    case PROF_REC_CUDA_EVENT:
    case PROF_REC_EXT:
    case PROF_REC_OVERHEAD:
    case PROF_REC_MARKER:
        if (!(e = prof_store_add(c->store))) {
            rc = -1;
            break;
        }
        switch (rec) {
        case PROF_REC_KERNEL: kernel(c, r, e); break;
        case PROF_REC_MEMCPY: memcpy_rec(r, e); break;
        case PROF_REC_P2P: p2p(r, e); break;
        case PROF_REC_MEMSET: memset_rec(r, e); break;
        case PROF_REC_API: api(c, r, e); break;
        case PROF_REC_SYNC: sync_rec(c, r, e); break;
        case PROF_REC_CUDA_EVENT: cuda_event(c, r, e); break;
        case PROF_REC_EXT: ext(r, e); break;
        case PROF_REC_OVERHEAD: overhead(r, e); break;
        default: marker(c, r, e); break;
        }
        rc = 1;
        break;
    default:
        c->skipped++;
        return 0;
    }
    free_handed_over(c, rec, r);
    if (rc < 0)
        c->dropped++;
    return rc;
}

size_t prof_convert_buffer(struct prof_convert *c, prof_next_record_fn next, uint8_t *buf,
                           size_t valid)
{
    CUpti_Activity *rec = NULL;
    size_t n = 0;
    if (!buf || !valid)
        return 0;
    while (next(buf, valid, &rec) == CUPTI_SUCCESS && rec) {
        prof_convert_record(c, rec);
        n++;
    }
    return n;
}
