/* profiler/kineto.c: the Kineto-format trace writer (kineto.h). */
#include "profiler/kineto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "profiler/join.h"
#include "profiler/map.h"
#include "common/banned.h"

#ifndef STEPCAST_VERSION
#define STEPCAST_VERSION "dev"
#endif

/* Kineto's base: the time floored to a 3-month boundary (7889238 s), so
 * ranks of one job share it. */
#define BASE_PERIOD_NS (7889238ull * 1000000000ull)
/* Kineto draws Stream Sync on a row of its own: tid = stream + this. */
#define STREAM_SYNC_TID_OFFSET 1000000

enum item_kind { IT_EVENT, IT_STEP, IT_NCCL };

struct item {
    uint64_t start, end;
    uint32_t index; /* event index, step index, or NCCL record number - first */
    uint8_t kind;
};

struct writer {
    struct prof_json *w;
    const struct prof_store *st;
    struct prof_nccl_log *nl;
    const struct prof_trace_info *info;
    struct prof_join j;
    struct prof_steps steps;
    struct prof_map marker_end; /* NVTX range id -> end time */
    uint32_t *launch;           /* per event: the index of its launch call, or PROF_INVALID */
    uint8_t *flow_started;      /* per event: its `s` flow is written (launch calls) */
    struct prof_map cpu_rows, gpu_rows; /* (pid << 32 | tid) seen */
    uint64_t last_row[2];       /* the last row added to each, to skip repeats ... */
    uint8_t have_last_row[2];   /* ... once there is one */
    uint64_t base;
    uint64_t events, incomplete;
    const struct prof_device *last_device;
};

/* ---- small helpers ------------------------------------------------------------------- */

static void row(struct writer *x, int gpu, uint32_t pid, int64_t tid)
{
    uint64_t key = (uint64_t)pid << 32 | (uint32_t)tid;
    if (x->have_last_row[gpu] && x->last_row[gpu] == key)
        return;
    x->last_row[gpu] = key;
    x->have_last_row[gpu] = 1;
    (void)prof_map_put_new(gpu ? &x->gpu_rows : &x->cpu_rows, key, 0);
}

/* The launch call of event i (looked up once, before collecting), or NULL. */
static const struct prof_event *launch_of(const struct writer *x, size_t i)
{
    return x->launch[i] == PROF_INVALID ? NULL : prof_store_at(x->st, x->launch[i]);
}

/* Open an event object; cat NULL for metadata ("M") events, which have none. */
static void begin_event(struct writer *x, char ph, const char *cat, const char *name, size_t name_n)
{
    struct prof_json *w = x->w;
    char p[2] = {ph, 0};
    prof_json_begin_object(w);
    prof_json_kstr(w, "ph", p);
    if (cat)
        prof_json_kstr(w, "cat", cat);
    prof_json_key(w, "name");
    prof_json_strn(w, name, name_n);
    x->events++;
}

static void place(struct writer *x, int64_t pid, int64_t tid, uint64_t start, uint64_t end)
{
    struct prof_json *w = x->w;
    prof_json_kint(w, "pid", pid);
    prof_json_kint(w, "tid", tid);
    prof_json_kus(w, "ts", (int64_t)(start - x->base));
    prof_json_kus(w, "dur", end > start ? (int64_t)(end - start) : 0);
}

static void name_event(struct writer *x, char ph, const char *cat, uint32_t name)
{
    begin_event(x, ph, cat, prof_store_str(x->st, name), prof_store_strlen(x->st, name));
}

static const struct prof_device *device_info(struct writer *x, uint32_t id)
{
    if (x->last_device && x->last_device->id == id)
        return x->last_device;
    for (size_t i = 0; i < x->st->n_devices; i++)
        if (x->st->devices[i].id == id)
            return x->last_device = &x->st->devices[i];
    return NULL;
}

static void external_id(struct writer *x, uint32_t corr)
{
    uint64_t id;
    if (corr && prof_map_get(&x->j.ext, corr, &id))
        prof_json_kuint(x->w, "External id", id);
}

/* The ac2g arrow from a launch call (event index `li`) to its GPU work. */
static void flow(struct writer *x, const struct prof_event *gpu, size_t li)
{
    struct prof_json *w = x->w;
    const struct prof_event *launch = prof_store_at(x->st, li);
    if (!x->flow_started[li]) {
        x->flow_started[li] = 1;
        begin_event(x, 's', "ac2g", "ac2g", 4);
        prof_json_kuint(w, "id", gpu->corr);
        prof_json_kint(w, "pid", launch->at.cpu.pid);
        prof_json_kint(w, "tid", launch->at.cpu.tid);
        prof_json_kus(w, "ts", (int64_t)(launch->start - x->base));
        prof_json_end_object(w);
    }
    begin_event(x, 'f', "ac2g", "ac2g", 4);
    prof_json_kuint(w, "id", gpu->corr);
    prof_json_kint(w, "pid", gpu->at.gpu.device);
    prof_json_kint(w, "tid", gpu->at.gpu.stream);
    prof_json_kus(w, "ts", (int64_t)(gpu->start - x->base));
    prof_json_kstr(w, "bp", "e");
    prof_json_end_object(w);
}

static void gpu_common_args(struct writer *x, const struct prof_event *e)
{
    struct prof_json *w = x->w;
    external_id(x, e->corr);
    prof_json_kuint(w, "device", e->at.gpu.device);
    prof_json_kuint(w, "context", e->at.gpu.context);
    prof_json_kuint(w, "stream", e->at.gpu.stream);
    prof_json_kuint(w, "correlation", e->corr);
}

static void graph_args(struct prof_json *w, uint32_t graph, uint64_t node)
{
    if (!graph)
        return;
    prof_json_kuint(w, "graph id", graph);
    prof_json_kuint(w, "graph node id", node);
}

static void write_dim3(struct prof_json *w, const char *key, const uint32_t v[3])
{
    prof_json_key(w, key);
    prof_json_begin_array(w);
    for (int i = 0; i < 3; i++)
        prof_json_uint(w, v[i]);
    prof_json_end_array(w);
}

/* ---- GPU work --------------------------------------------------------------------------- */

static void coll_args(struct writer *x, const struct prof_nccl_unit *u)
{
    struct prof_json *w = x->w;
    struct prof_coll c;
    char hex[20];
    prof_join_coll(&x->j, u, &c);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)c.comm_id);
    prof_json_kstr(w, "Collective name", c.name);
    prof_json_kint(w, "In msg nelems", c.in_nelems);
    prof_json_kint(w, "Out msg nelems", c.out_nelems);
    prof_json_kint(w, "Group size", c.group_size);
    prof_json_kstr(w, "dtype", c.dtype);
    prof_json_kstr(w, "In split size", "[]");
    prof_json_kstr(w, "Out split size", "[]");
    prof_json_kstr(w, "Process Group Name", hex);
    if (*c.comm_name)
        prof_json_kstr(w, "Process Group Description", c.comm_name);
    prof_json_kint(w, "Rank", c.rank);
    if (c.peer >= 0)
        prof_json_kint(w, strcmp(c.func, "Recv") == 0 ? "Src Rank" : "Dst Rank", c.peer);
    if (c.root >= 0)
        prof_json_kint(w, "NCCL root", c.root);
    if (c.seq >= 0)
        prof_json_kint(w, "NCCL seq", c.seq);
    prof_json_kstr(w, "NCCL func", c.func);
    prof_json_kstr(w, "NCCL dtype", c.nccl_dtype);
    if (*c.algo)
        prof_json_kstr(w, "NCCL algo", c.algo);
    if (*c.proto)
        prof_json_kstr(w, "NCCL proto", c.proto);
    if (c.n_channels)
        prof_json_kint(w, "NCCL channels", c.n_channels);
    prof_json_kuint(w, "NCCL ops", c.n_ops);
}

static void kernel(struct writer *x, size_t index, const struct prof_event *e)
{
    struct prof_json *w = x->w;
    const struct prof_device *d = device_info(x, e->at.gpu.device);
    const struct prof_nccl_unit *u = prof_join_unit(&x->j, index);
    name_event(x, 'X', "kernel", e->name);
    place(x, e->at.gpu.device, e->at.gpu.stream, e->start, e->end);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    gpu_common_args(x, e);
    prof_json_kuint(w, "registers per thread", e->u.kernel.registers);
    prof_json_kuint(w, "shared memory", e->u.kernel.shared_mem);
    if (d && d->sms) {
        const uint32_t *g = e->u.kernel.grid, *b = e->u.kernel.block;
        double blocks = (double)g[0] * g[1] * g[2];
        double warps = blocks * (((double)b[0] * b[1] * b[2] + 31) / 32);
        prof_json_key(w, "blocks per SM");
        prof_json_double(w, blocks / d->sms, 6);
        prof_json_key(w, "warps per SM");
        prof_json_double(w, warps / d->sms, 6);
    }
    write_dim3(w, "grid", e->u.kernel.grid);
    write_dim3(w, "block", e->u.kernel.block);
    graph_args(w, e->u.kernel.graph_id, e->u.kernel.graph_node);
    if (e->flags & PROF_F_DEVICE_LAUNCHED)
        prof_json_kint(w, "device launched", 1);
    if (u)
        coll_args(x, u);
    prof_json_end_object(w);
    prof_json_end_object(w);
    row(x, 1, e->at.gpu.device, e->at.gpu.stream);
    if (x->launch[index] != PROF_INVALID)
        flow(x, e, x->launch[index]);
}

static const char *copy_kind(unsigned k)
{
    static const char *const names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

static const char *memory_kind(unsigned k)
{
    static const char *const names[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                        "Array",   "Managed",  "Device Static", "Managed Static"};
    return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

static void copy(struct writer *x, size_t index, const struct prof_event *e)
{
    struct prof_json *w = x->w;
    char name[96];
    int n;
    if (e->type == PROF_EV_MEMSET)
        n = snprintf(name, sizeof name, "Memset (%s)", memory_kind(e->u.copy.dst_kind));
    else
        n = snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", copy_kind(e->sub),
                     memory_kind(e->u.copy.src_kind), memory_kind(e->u.copy.dst_kind));
    begin_event(x, 'X', e->type == PROF_EV_MEMSET ? "gpu_memset" : "gpu_memcpy", name, (size_t)n);
    place(x, e->at.gpu.device, e->at.gpu.stream, e->start, e->end);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    gpu_common_args(x, e);
    prof_json_kuint(w, "bytes", e->u.copy.bytes);
    if (e->end > e->start) {
        prof_json_key(w, "memory bandwidth (GB/s)");
        prof_json_double(w, (double)e->u.copy.bytes / (double)(e->end - e->start), 6);
    }
    if (e->flags & PROF_F_P2P) {
        prof_json_kuint(w, "fromDevice", e->u.copy.src_device);
        prof_json_kuint(w, "inDevice", e->at.gpu.device);
        prof_json_kuint(w, "toDevice", e->u.copy.dst_device);
        prof_json_kuint(w, "fromContext", e->u.copy.src_context);
        prof_json_kuint(w, "inContext", e->at.gpu.context);
        prof_json_kuint(w, "toContext", e->u.copy.dst_context);
    }
    graph_args(w, e->u.copy.graph_id, e->u.copy.graph_node);
    prof_json_end_object(w);
    prof_json_end_object(w);
    row(x, 1, e->at.gpu.device, e->at.gpu.stream);
    if (x->launch[index] != PROF_INVALID)
        flow(x, e, x->launch[index]);
}

/* ---- CPU side and synchronisation ------------------------------------------------------ */

static void api(struct writer *x, const struct prof_event *e)
{
    struct prof_json *w = x->w;
    name_event(x, 'X', e->type == PROF_EV_RUNTIME ? "cuda_runtime" : "cuda_driver", e->name);
    place(x, e->at.cpu.pid, e->at.cpu.tid, e->start, e->end);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    external_id(x, e->corr);
    prof_json_kuint(w, "cbid", e->at.cpu.cbid);
    prof_json_kuint(w, "correlation", e->corr);
    if (e->u.api.result)
        prof_json_kint(w, "return value", e->u.api.result);
    prof_json_end_object(w);
    prof_json_end_object(w);
    row(x, 0, e->at.cpu.pid, e->at.cpu.tid);
}

static int64_t signed_id(uint32_t v)
{
    return v == PROF_INVALID ? -1 : (int64_t)v;
}

static void sync_event(struct writer *x, const struct prof_event *e)
{
    static const char *const kinds[] = {"Unknown Sync", "Event Sync", "Stream Wait Event",
                                        "Stream Sync", "Context Sync"};
    struct prof_json *w = x->w;
    const char *kind = e->sub < sizeof kinds / sizeof kinds[0] ? kinds[e->sub] : kinds[0];
    uint32_t device = prof_join_device(&x->j, e->at.gpu.context);
    int64_t stream = signed_id(e->at.gpu.stream), tid = stream;
    if (e->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE && stream >= 0)
        tid = stream + STREAM_SYNC_TID_OFFSET;
    begin_event(x, 'X', "cuda_sync", kind, strlen(kind));
    place(x, signed_id(device), tid, e->start, e->end);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    external_id(x, e->corr);
    prof_json_kstr(w, "cuda_sync_kind", kind);
    prof_json_kint(w, "stream", stream);
    prof_json_kuint(w, "correlation", e->corr);
    prof_json_kint(w, "device", signed_id(device));
    prof_json_kuint(w, "context", e->at.gpu.context);
    if (e->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT ||
        e->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) {
        const struct prof_event *rec = prof_join_wait(&x->j, e);
        if (rec) {
            prof_json_kuint(w, "wait_on_stream", rec->at.gpu.stream);
            prof_json_kuint(w, "wait_on_cuda_event_record_corr_id", rec->corr);
        }
        if (e->u.sync.event_id != PROF_INVALID)
            prof_json_kuint(w, "wait_on_cuda_event_id", e->u.sync.event_id);
    }
    prof_json_end_object(w);
    prof_json_end_object(w);
    row(x, 1, device, tid);
}

static void cuda_event(struct writer *x, const struct prof_event *e, uint64_t at)
{
    struct prof_json *w = x->w;
    uint32_t device = prof_join_device(&x->j, e->at.gpu.context);
    begin_event(x, 'X', "cuda_event", "cudaEvent", 9);
    place(x, signed_id(device), e->at.gpu.stream, at, at + 1000);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    prof_json_kuint(w, "event_id", e->u.sync.event_id);
    prof_json_kuint(w, "stream", e->at.gpu.stream);
    prof_json_kuint(w, "correlation", e->corr);
    prof_json_kint(w, "device", signed_id(device));
    prof_json_kuint(w, "context", e->at.gpu.context);
    prof_json_kint(w, "device timestamp", e->u.sync.device_ts != 0);
    prof_json_end_object(w);
    prof_json_end_object(w);
    row(x, 1, device, e->at.gpu.stream);
}

static const char *overhead_name(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI Resource";
    default: return "CUPTI overhead";
    }
}

static void overhead(struct writer *x, const struct prof_event *e)
{
    const char *name = overhead_name(e->u.overhead.kind);
    begin_event(x, 'X', "overhead", name, strlen(name));
    place(x, -1, 0, e->start, e->end);
    prof_json_key(x->w, "args");
    prof_json_begin_object(x->w);
    prof_json_kuint(x->w, "overhead kind", e->u.overhead.kind);
    prof_json_end_object(x->w);
    prof_json_end_object(x->w);
}

static void marker(struct writer *x, const struct prof_event *e, uint64_t end)
{
    int gpu = (e->flags & PROF_F_MARKER_GPU) != 0;
    struct prof_json *w = x->w;
    int64_t pid = gpu ? e->at.gpu.device : e->at.cpu.pid, tid = gpu ? e->at.gpu.stream : e->at.cpu.tid;
    if (e->sub == PROF_MARK_INSTANT) {
        name_event(x, 'i', "user_annotation", e->name);
        prof_json_kint(w, "pid", pid);
        prof_json_kint(w, "tid", tid);
        prof_json_kus(w, "ts", (int64_t)(e->start - x->base));
        prof_json_kstr(w, "s", "t");
    } else {
        name_event(x, 'X', gpu ? "gpu_user_annotation" : "user_annotation", e->name);
        place(x, pid, tid, e->start, end);
    }
    if (e->u.marker.domain) {
        prof_json_key(w, "args");
        prof_json_begin_object(w);
        prof_json_kstr(w, "domain", prof_store_str(x->st, e->u.marker.domain));
        prof_json_end_object(w);
    }
    prof_json_end_object(w);
    row(x, gpu, (uint32_t)pid, tid);
}

static void step(struct writer *x, const struct prof_step *s)
{
    char name[48];
    int n = snprintf(name, sizeof name, "ProfilerStep#%lld", (long long)s->number);
    begin_event(x, 'X', "user_annotation", name, (size_t)n);
    place(x, s->pid, s->tid, s->start, s->end);
    prof_json_end_object(x->w);
    row(x, 0, s->pid, s->tid);
}

static void nccl_call(struct writer *x, const struct prof_nccl_rec *r)
{
    struct prof_json *w = x->w;
    const char *c10d = prof_nccl_c10d_name(r->func);
    const struct prof_nccl_comm *comm = r->comm < x->nl->n_comms ? &x->nl->comms[r->comm] : NULL;
    char name[48], hex[20];
    int n = snprintf(name, sizeof name, "nccl:%s", c10d ? c10d : r->func);
    snprintf(hex, sizeof hex, "%016llx", comm ? (unsigned long long)comm->id : 0ull);
    begin_event(x, 'X', "user_annotation", name, (size_t)n);
    place(x, x->info->pid, r->tid, r->start, r->end ? r->end : r->start);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    prof_json_kstr(w, "NCCL func", r->func);
    prof_json_kstr(w, "NCCL dtype", r->datatype);
    prof_json_kuint(w, "NCCL count", r->count);
    prof_json_kstr(w, "NCCL comm", hex);
    if (r->graph_captured)
        prof_json_kint(w, "graph captured", 1);
    prof_json_end_object(w);
    prof_json_end_object(w);
    row(x, 0, x->info->pid, r->tid);
}

/* ---- items, time order, window ------------------------------------------------------- */

/* The end of an NVTX range start, or its start when the end is missing. */
static uint64_t marker_end(const struct writer *x, const struct prof_event *e)
{
    uint64_t end;
    if (e->sub == PROF_MARK_START && prof_map_get(&x->marker_end, e->u.marker.id, &end) &&
        end >= e->start)
        return end;
    return e->start;
}

/* When an event happened from the CPU's point of view: its launch call for
 * GPU work, else its own start. 0 = not written. */
static int event_span(const struct writer *x, size_t i, const struct prof_event *e, uint64_t *start,
                      uint64_t *end, uint64_t *cpu)
{
    const struct prof_event *launch = launch_of(x, i);
    *start = e->start;
    *end = e->end;
    *cpu = e->start;
    switch (e->type) {
    case PROF_EV_KERNEL:
    case PROF_EV_MEMCPY:
    case PROF_EV_MEMSET:
        if (launch)
            *cpu = launch->start;
        break;
    case PROF_EV_CUDA_EVENT:
        *start = e->u.sync.device_ts ? e->u.sync.device_ts : launch ? launch->start : 0;
        *end = *start + 1000;
        *cpu = launch ? launch->start : *start;
        break;
    case PROF_EV_MARKER:
        if (e->sub == PROF_MARK_END)
            return 0;
        *end = marker_end(x, e);
        break;
    case PROF_EV_RUNTIME:
    case PROF_EV_DRIVER:
    case PROF_EV_SYNC:
    case PROF_EV_OVERHEAD:
        break;
    default:
        return 0;
    }
    return *start != 0;
}

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end) /* enclosing spans first */
        return x->end > y->end ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind > y->kind ? -1 : 1; /* steps and NCCL calls before what they contain */
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Whether a step needs a ProfilerStep#N event of its own (an NVTX range
 * named exactly so is already one). */
static int step_needs_event(const struct writer *x, const struct prof_step *s)
{
    char name[48];
    if (!s->marker_name)
        return 1;
    snprintf(name, sizeof name, "ProfilerStep#%lld", (long long)s->number);
    return strcmp(prof_store_str(x->st, s->marker_name), name) != 0;
}

static int collect(struct writer *x, struct item **out, size_t *n_out, uint64_t ws, uint64_t we,
                   int windowed)
{
    const struct prof_store *st = x->st;
    struct prof_nccl_log *l = x->nl;
    uint64_t first = l ? (uint64_t)l->first_chunk * PROF_NCCL_CHUNK : 0;
    size_t cap = st->n + x->steps.n + (l ? (size_t)(l->n - first) : 0), n = 0;
    struct item *v = malloc((cap + 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        uint64_t s, en, cpu;
        if (!event_span(x, i, e, &s, &en, &cpu)) {
            x->incomplete += e->type != PROF_EV_EXT_CORR && e->type != PROF_EV_MARKER;
            continue;
        }
        if (windowed && (cpu < ws || cpu > we))
            continue;
        v[n++] = (struct item){s, en, (uint32_t)i, IT_EVENT};
    }
    for (size_t i = 0; i < x->steps.n; i++) {
        const struct prof_step *s = &x->steps.v[i];
        if (!step_needs_event(x, s) || (windowed && (s->start < ws || s->start > we)))
            continue;
        v[n++] = (struct item){s->start, s->end, (uint32_t)i, IT_STEP};
    }
    for (uint64_t k = first; l && k < l->n; k++) {
        const struct prof_nccl_rec *r = prof_nccl_get(l, k);
        if (!r || (r->kind != PROF_NCCL_K_COLL_API && r->kind != PROF_NCCL_K_P2P_API) ||
            (windowed && (r->start < ws || r->start > we)))
            continue;
        v[n++] = (struct item){r->start, r->end, (uint32_t)(k - first), IT_NCCL};
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_item);
    *out = v;
    *n_out = n;
    return 0;
}

/* ---- top level ------------------------------------------------------------------------ */

static void device_properties(struct writer *x)
{
    struct prof_json *w = x->w;
    prof_json_key(w, "deviceProperties");
    prof_json_begin_array(w);
    for (size_t i = 0; i < x->st->n_devices; i++) {
        const struct prof_device *d = &x->st->devices[i];
        prof_json_begin_object(w);
        prof_json_kuint(w, "id", d->id);
        prof_json_kstr(w, "name", prof_store_str(x->st, d->name));
        prof_json_kuint(w, "totalGlobalMem", d->global_mem);
        prof_json_kuint(w, "computeMajor", d->major);
        prof_json_kuint(w, "computeMinor", d->minor);
        prof_json_kuint(w, "maxThreadsPerBlock", d->max_threads_block);
        prof_json_kuint(w, "maxThreadsPerMultiprocessor", (uint64_t)d->max_warps_sm * d->warp_size);
        prof_json_kuint(w, "regsPerBlock", d->regs_block);
        prof_json_kuint(w, "regsPerMultiprocessor", d->regs_sm);
        prof_json_kuint(w, "warpSize", d->warp_size);
        prof_json_kuint(w, "sharedMemPerBlock", d->smem_block);
        prof_json_kuint(w, "sharedMemPerMultiprocessor", d->smem_sm);
        prof_json_kuint(w, "numSms", d->sms);
        prof_json_end_object(w);
    }
    prof_json_end_array(w);
}

static void distributed_info(struct writer *x)
{
    struct prof_json *w = x->w;
    const struct prof_nccl_comm *world = prof_nccl_world(x->nl);
    int64_t rank = world ? world->rank : x->info->rank;
    int64_t size = world ? world->nranks : x->info->world_size;
    prof_json_key(w, "distributedInfo");
    prof_json_begin_object(w);
    prof_json_kstr(w, "backend", "nccl");
    if (rank >= 0)
        prof_json_kint(w, "rank", rank);
    if (size > 0)
        prof_json_kint(w, "world_size", size);
    prof_json_kstr(w, "rank_source", world ? "nccl" : rank >= 0 ? "environment" : "unknown");
    if (x->info->nccl_version)
        prof_json_kstr(w, "nccl_version", x->info->nccl_version);
    prof_json_kuint(w, "pg_count", x->nl ? x->nl->n_comms : 0);
    prof_json_key(w, "pg_config");
    prof_json_begin_array(w);
    for (size_t i = 0; x->nl && i < x->nl->n_comms; i++) {
        const struct prof_nccl_comm *c = &x->nl->comms[i];
        char hex[20];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)c->id);
        prof_json_begin_object(w);
        prof_json_kstr(w, "pg_name", hex);
        prof_json_kstr(w, "pg_desc", *c->name ? c->name : "nccl communicator");
        prof_json_kstr(w, "backend_config", "cuda:nccl");
        prof_json_kint(w, "pg_size", c->nranks);
        prof_json_kint(w, "rank", c->rank);
        prof_json_kint(w, "nodes", c->nnodes);
        prof_json_end_object(w);
    }
    prof_json_end_array(w);
    prof_json_end_object(w);
}

static void clock_sample(struct prof_json *w, const char *key, const uint64_t c[3])
{
    prof_json_key(w, key);
    prof_json_begin_object(w);
    prof_json_kuint(w, "realtime_ns", c[0]);
    prof_json_kuint(w, "monotonic_ns", c[1]);
    prof_json_kuint(w, "cupti_ns", c[2]);
    prof_json_end_object(w);
}

static void profiler_info(struct writer *x, int window_found)
{
    const struct prof_trace_info *in = x->info;
    struct prof_json *w = x->w;
    prof_json_key(w, "stepcast_profiler");
    prof_json_begin_object(w);
    prof_json_kstr(w, "version", STEPCAST_VERSION);
    prof_json_kuint(w, "cupti_api_version", in->cupti_version);
    prof_json_kstr(w, "cupti_layout", in->cupti_layout ? in->cupti_layout : "");
    prof_json_kstr(w, "cupti_library", in->cupti_library ? in->cupti_library : "");
    prof_json_kstr(w, "host", in->host ? in->host : "");
    prof_json_kuint(w, "pid", in->pid);
    prof_json_kuint(w, "records", in->records);
    prof_json_kuint(w, "events_stored", x->st->n);
    prof_json_kuint(w, "records_dropped_by_cupti", in->cupti_dropped);
    prof_json_kuint(w, "events_dropped_over_memory_cap", x->st->dropped);
    prof_json_kuint(w, "buffer_requests_refused", in->buffers_refused);
    prof_json_kuint(w, "record_bytes_lost", in->bytes_lost);
    prof_json_kuint(w, "incomplete_records", x->incomplete);
    prof_json_key(w, "nccl");
    prof_json_begin_object(w);
    prof_json_kint(w, "plugin_version", x->nl ? x->nl->version : 0);
    prof_json_kuint(w, "communicators", x->nl ? x->nl->n_comms : 0);
    prof_json_kuint(w, "launches", x->j.n_units);
    prof_json_kuint(w, "kernels_joined_exactly", x->j.nccl_exact);
    prof_json_kuint(w, "kernels_joined_by_order", x->j.nccl_by_order);
    prof_json_kuint(w, "kernels_unjoined", x->j.nccl_kernels_unmatched);
    prof_json_kuint(w, "records_dropped", x->nl ? x->nl->dropped : 0);
    prof_json_kuint(w, "external_id_push_failures", x->nl ? x->nl->push_failures : 0);
    prof_json_end_object(w);
    prof_json_key(w, "steps");
    prof_json_begin_object(w);
    if (in->steps.kernel_substr && *in->steps.kernel_substr)
        prof_json_kstr(w, "boundary_kernel", in->steps.kernel_substr);
    else if (in->steps.nvtx_prefix)
        prof_json_kstr(w, "nvtx_prefix", in->steps.nvtx_prefix);
    prof_json_kuint(w, "found", x->steps.n);
    if (in->window_first >= 0) {
        prof_json_kint(w, "window_first", in->window_first);
        prof_json_kint(w, "window_last", in->window_last);
        prof_json_key(w, "window_found");
        prof_json_bool(w, window_found);
    }
    prof_json_end_object(w);
    clock_sample(w, "clock_start", in->clock_start);
    clock_sample(w, "clock_end", in->clock_end);
    if (in->notes)
        prof_json_kstr(w, "notes", in->notes);
    prof_json_end_object(w);
}

static void meta_event(struct writer *x, const char *what, int64_t pid, int64_t tid, int has_tid,
                       const char *key, const char *sval, int64_t ival)
{
    struct prof_json *w = x->w;
    begin_event(x, 'M', NULL, what, strlen(what));
    prof_json_kint(w, "pid", pid);
    if (has_tid)
        prof_json_kint(w, "tid", tid);
    prof_json_kus(w, "ts", 0);
    prof_json_key(w, "args");
    prof_json_begin_object(w);
    if (sval)
        prof_json_kstr(w, key, sval);
    else
        prof_json_kint(w, key, ival);
    prof_json_end_object(w);
    prof_json_end_object(w);
}

static void row_labels(struct writer *x)
{
    char s[64];
    const struct prof_map *maps[2] = {&x->cpu_rows, &x->gpu_rows};
    struct prof_map pids = {0};
    for (int gpu = 0; gpu < 2; gpu++) {
        const struct prof_map *m = maps[gpu];
        for (size_t i = 0; i < m->cap; i++) {
            if (m->keys[i] == UINT64_MAX)
                continue;
            int64_t pid = (int32_t)(m->keys[i] >> 32), tid = (int32_t)(uint32_t)m->keys[i];
            uint64_t dummy;
            if (!prof_map_get(&pids, (uint64_t)pid << 1 | (uint64_t)gpu, &dummy)) {
                (void)prof_map_put(&pids, (uint64_t)pid << 1 | (uint64_t)gpu, 1);
                if (gpu)
                    snprintf(s, sizeof s, "GPU %lld", (long long)pid);
                else
                    snprintf(s, sizeof s, "%s", x->info->process_name ? x->info->process_name : "CPU");
                meta_event(x, "process_name", pid, 0, 0, "name", s, 0);
                meta_event(x, "process_labels", pid, 0, 0, "labels", gpu ? s : "CPU", 0);
                meta_event(x, "process_sort_index", pid, 0, 0, "sort_index", NULL,
                           gpu ? pid + 0x1000000 : pid);
            }
            if (gpu && tid >= STREAM_SYNC_TID_OFFSET)
                snprintf(s, sizeof s, "stream %lld (sync)", (long long)(tid - STREAM_SYNC_TID_OFFSET));
            else if (gpu)
                snprintf(s, sizeof s, "stream %lld", (long long)tid);
            else
                snprintf(s, sizeof s, "thread %lld", (long long)tid);
            meta_event(x, "thread_name", pid, tid, 1, "name", s, 0);
        }
    }
    prof_map_release(&pids);
}

static int window_bounds(const struct writer *x, uint64_t *ws, uint64_t *we)
{
    const struct prof_trace_info *in = x->info;
    int found = 0;
    *ws = UINT64_MAX;
    *we = 0;
    for (size_t i = 0; i < x->steps.n; i++) {
        const struct prof_step *s = &x->steps.v[i];
        if (s->number < in->window_first || (in->window_last >= 0 && s->number > in->window_last))
            continue;
        found = 1;
        if (s->start < *ws)
            *ws = s->start;
        if (s->end > *we)
            *we = s->end;
    }
    return found;
}

int prof_kineto_emit(struct prof_json *w, const struct prof_store *st, struct prof_nccl_log *nl,
                     const struct prof_trace_info *info, struct prof_write_stats *stats)
{
    struct writer x;
    struct item *items = NULL;
    size_t n_items = 0;
    uint64_t ws = 0, we = UINT64_MAX;
    int rc = -1, windowed = info->window_first >= 0, found = 1;

    memset(&x, 0, sizeof x);
    x.w = w;
    x.st = st;
    x.nl = nl;
    x.info = info;
    if (prof_join_build(&x.j, st, nl) || prof_steps_find(st, &x.j, &info->steps, &x.steps))
        goto out;
    x.launch = malloc((st->n + 1) * sizeof *x.launch);
    x.flow_started = calloc(st->n + 1, 1);
    if (!x.launch || !x.flow_started)
        goto out;
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        int gpu = e->type == PROF_EV_KERNEL || e->type == PROF_EV_MEMCPY ||
                  e->type == PROF_EV_MEMSET || e->type == PROF_EV_CUDA_EVENT;
        x.launch[i] = gpu ? prof_join_launch_index(&x.j, e->corr) : PROF_INVALID;
    }
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        if (e->type == PROF_EV_MARKER && e->sub == PROF_MARK_END &&
            prof_map_put(&x.marker_end, e->u.marker.id, e->start))
            goto out;
    }
    if (windowed)
        found = window_bounds(&x, &ws, &we);
    if (collect(&x, &items, &n_items, ws, we, windowed))
        goto out;
    x.base = info->clock_start[0];
    if (n_items && items[0].start < x.base)
        x.base = items[0].start;
    x.base -= x.base % BASE_PERIOD_NS;

    prof_json_begin_object(w);
    prof_json_kint(w, "schemaVersion", 1);
    device_properties(&x);
    distributed_info(&x);
    prof_json_kuint(w, "cupti_version", info->cupti_version);
    profiler_info(&x, found);
    prof_json_kstr(w, "displayTimeUnit", "ms");
    prof_json_kuint(w, "baseTimeNanoseconds", x.base);
    prof_json_key(w, "traceEvents");
    prof_json_begin_array(w);
    uint64_t first_nccl = nl ? (uint64_t)nl->first_chunk * PROF_NCCL_CHUNK : 0;
    for (size_t i = 0; i < n_items; i++) {
        const struct item *it = &items[i];
        if (it->kind == IT_STEP) {
            step(&x, &x.steps.v[it->index]);
            continue;
        }
        if (it->kind == IT_NCCL) {
            nccl_call(&x, prof_nccl_get(nl, first_nccl + it->index));
            continue;
        }
        const struct prof_event *e = prof_store_at(st, it->index);
        switch (e->type) {
        case PROF_EV_KERNEL: kernel(&x, it->index, e); break;
        case PROF_EV_MEMCPY:
        case PROF_EV_MEMSET: copy(&x, it->index, e); break;
        case PROF_EV_RUNTIME:
        case PROF_EV_DRIVER: api(&x, e); break;
        case PROF_EV_SYNC: sync_event(&x, e); break;
        case PROF_EV_CUDA_EVENT: cuda_event(&x, e, it->start); break;
        case PROF_EV_OVERHEAD: overhead(&x, e); break;
        case PROF_EV_MARKER: marker(&x, e, it->end); break;
        default: break;
        }
    }
    row_labels(&x);
    prof_json_end_array(w);
    prof_json_end_object(w);
    if (stats) {
        stats->events = x.events;
        stats->bytes = w->written + w->len;
        stats->window_found = found;
    }
    rc = w->error ? -1 : 0;
out:
    free(items);
    prof_join_release(&x.j);
    prof_steps_release(&x.steps);
    prof_map_release(&x.marker_end);
    free(x.launch);
    free(x.flow_started);
    prof_map_release(&x.cpu_rows);
    prof_map_release(&x.gpu_rows);
    return rc;
}

int prof_kineto_write(const struct prof_store *st, struct prof_nccl_log *nl,
                      const struct prof_trace_info *info, const char *path, int gzip,
                      struct prof_write_stats *stats, char *why, size_t why_n)
{
    struct prof_json *w = malloc(sizeof *w);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%u", path, (unsigned)getpid());
    if (!w) {
        snprintf(why, why_n, "out of memory");
        return -1;
    }
    if (prof_json_open(w, tmp, gzip)) {
        snprintf(why, why_n, "cannot create '%s'", tmp);
        free(w);
        return -1;
    }
    int rc = prof_kineto_emit(w, st, nl, info, stats);
    if (prof_json_close(w) || rc) {
        snprintf(why, why_n, rc && !w->error ? "out of memory writing '%s'" : "cannot write '%s'",
                 tmp);
        unlink(tmp);
        free(w);
        return -1;
    }
    free(w);
    if (rename(tmp, path)) {
        snprintf(why, why_n, "cannot rename '%s' to '%s'", tmp, path);
        unlink(tmp);
        return -1;
    }
    return 0;
}
