/* profiler/nccl.c: the NCCL profiler plugin and its log (nccl.h). */
#include "profiler/nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "profiler/exports.h"
#include "profiler/log.h"
#include "profiler/nccl_abi.h"
#include "common/banned.h"

#define EXPORT __attribute__((visibility("default")))

enum {
    MASK_V4 = PROF_NCCL_GROUP | PROF_NCCL_COLL | PROF_NCCL_P2P,
    MASK_V5 = MASK_V4 | PROF_NCCL_GROUP_API | PROF_NCCL_COLL_API | PROF_NCCL_P2P_API |
              PROF_NCCL_KERNEL_LAUNCH
};

static struct prof_nccl_log the_log = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct prof_nccl_log *prof_nccl(void)
{
    return &the_log;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t thread_id(void)
{
    static _Thread_local uint32_t tid;
    if (!tid)
        tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}

void prof_nccl_activate(struct prof_nccl_log *l, const struct prof_cupti *cupti, size_t max_bytes)
{
    pthread_mutex_lock(&l->mu);
    __atomic_store_n(&l->cupti, cupti, __ATOMIC_RELEASE);
    l->max_bytes = max_bytes;
    __atomic_store_n(&l->active, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&l->mu);
}

void prof_nccl_forked(struct prof_nccl_log *l)
{
    __atomic_store_n(&l->active, 0, __ATOMIC_RELEASE);
    pthread_mutex_init(&l->mu, NULL);
}

void prof_nccl_mark_injected(struct prof_nccl_log *l)
{
    pthread_mutex_lock(&l->mu);
    l->injected = 1;
    pthread_mutex_unlock(&l->mu);
}

void prof_nccl_deactivate(struct prof_nccl_log *l)
{
    pthread_mutex_lock(&l->mu);
    __atomic_store_n(&l->active, 0, __ATOMIC_RELEASE);
    if (l->mask)
        __atomic_store_n(l->mask, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&l->mu);
}

struct prof_nccl_rec *prof_nccl_get(struct prof_nccl_log *l, uint64_t number)
{
    size_t k = (size_t)(number / PROF_NCCL_CHUNK);
    if (number >= l->n || k < l->first_chunk || k - l->first_chunk >= l->n_chunk_slots)
        return NULL;
    struct prof_nccl_rec *c = l->chunks[k - l->first_chunk];
    return c ? &c[number % PROF_NCCL_CHUNK] : NULL;
}

/* A new zeroed record (mutex held), or NULL. */
static struct prof_nccl_rec *add(struct prof_nccl_log *l)
{
    size_t k = (size_t)(l->n / PROF_NCCL_CHUNK), slot = k - l->first_chunk;
    if (slot >= l->n_chunk_slots) {
        size_t n = l->n_chunk_slots ? l->n_chunk_slots * 2 : 16;
        struct prof_nccl_rec **c = realloc(l->chunks, n * sizeof *c);
        if (!c)
            goto drop;
        memset(c + l->n_chunk_slots, 0, (n - l->n_chunk_slots) * sizeof *c);
        l->chunks = c;
        l->n_chunk_slots = n;
    }
    if (!l->chunks[slot]) {
        size_t size = PROF_NCCL_CHUNK * sizeof(struct prof_nccl_rec);
        if ((l->max_bytes && l->bytes + size > l->max_bytes) ||
            !(l->chunks[slot] = calloc(PROF_NCCL_CHUNK, sizeof(struct prof_nccl_rec))))
            goto drop;
        l->bytes += size;
    }
    struct prof_nccl_rec *r = &l->chunks[slot][l->n % PROF_NCCL_CHUNK];
    memset(r, 0, sizeof *r);
    r->number = l->n++;
    r->root = -1;
    return r;
drop:
    l->dropped++;
    return NULL;
}

void prof_nccl_drop_before(struct prof_nccl_log *l, uint64_t t)
{
    pthread_mutex_lock(&l->mu);
    size_t last = l->n ? (size_t)((l->n - 1) / PROF_NCCL_CHUNK) : 0, dropped = 0;
    while (l->first_chunk + dropped < last && dropped < l->n_chunk_slots) {
        struct prof_nccl_rec *c = l->chunks[dropped];
        int old = 1;
        for (size_t i = 0; c && old && i < PROF_NCCL_CHUNK; i++)
            old = c[i].start < t;
        if (!old)
            break;
        l->bytes -= c ? PROF_NCCL_CHUNK * sizeof *c : 0;
        free(c);
        dropped++;
    }
    if (dropped) {
        memmove(l->chunks, l->chunks + dropped, (l->n_chunk_slots - dropped) * sizeof *l->chunks);
        memset(l->chunks + l->n_chunk_slots - dropped, 0, dropped * sizeof *l->chunks);
        l->first_chunk += dropped;
    }
    pthread_mutex_unlock(&l->mu);
}

void prof_nccl_reset(struct prof_nccl_log *l)
{
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n_chunk_slots; i++)
        free(l->chunks[i]);
    free(l->chunks);
    free(l->comms);
    l->chunks = NULL;
    l->comms = NULL;
    l->n_comms = l->cap_comms = l->first_chunk = l->n_chunk_slots = 0;
    l->n = l->dropped = l->push_failures = 0;
    l->bytes = l->max_bytes = 0;
    l->version = l->injected = 0;
    __atomic_store_n(&l->active, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&l->cupti, NULL, __ATOMIC_RELEASE);
    l->mask = NULL;
    pthread_mutex_unlock(&l->mu);
}

static void copy_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static void *handle_of(const struct prof_nccl_rec *r)
{
    return r ? (void *)(uintptr_t)(r->number + 1) : NULL;
}

static uint64_t number_of(const void *handle)
{
    return (uint64_t)(uintptr_t)handle; /* number + 1; 0 = none */
}

/* ---- the plugin entry points -------------------------------------------------------- */

static int init_comm(int version, void **context, int *mask, const char *name, uint64_t id,
                     int nnodes, int nranks, int rank)
{
    struct prof_nccl_log *l = &the_log;
    *context = NULL;
    pthread_mutex_lock(&l->mu);
    int active = __atomic_load_n(&l->active, __ATOMIC_ACQUIRE);
    if (active) {
        if (l->n_comms == l->cap_comms) {
            size_t n = l->cap_comms ? l->cap_comms * 2 : 8;
            struct prof_nccl_comm *c = realloc(l->comms, n * sizeof *c);
            if (c) {
                l->comms = c;
                l->cap_comms = n;
            }
        }
        if (l->n_comms < l->cap_comms) {
            struct prof_nccl_comm *c = &l->comms[l->n_comms++];
            c->id = id;
            copy_str(c->name, sizeof c->name, name);
            c->nnodes = nnodes;
            c->nranks = nranks;
            c->rank = rank;
            *context = (void *)(uintptr_t)l->n_comms; /* index + 1 */
        }
        l->version = version;
        l->mask = mask;
    }
    int injected = l->injected;
    pthread_mutex_unlock(&l->mu);
    *mask = active && *context ? (version >= 5 ? MASK_V5 : MASK_V4) : 0;
    if (!injected)
        prof_log_fail("NCCL loaded the profiler plugin but CUDA tracing is not running "
                      "(set CUDA_INJECTION64_PATH to this library too): collectives are not "
                      "recorded");
    return PROF_NCCL_SUCCESS;
}

static int v5_init(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                   int nranks, int rank, prof_nccl_logger logfn)
{
    (void)logfn;
    return init_comm(5, context, mask, name, comm_id, nnodes, nranks, rank);
}

static int v4_init(void **context, int *mask, const char *name, uint64_t comm_hash, int nnodes,
                   int nranks, int rank, prof_nccl_logger logfn)
{
    (void)logfn;
    return init_comm(4, context, mask, name, comm_hash, nnodes, nranks, rank);
}

/* A record for an event of `kind` from communicator `context` (mutex held). */
static struct prof_nccl_rec *begin(struct prof_nccl_log *l, void *context, int kind, void *parent)
{
    if (!__atomic_load_n(&l->active, __ATOMIC_ACQUIRE) || !context)
        return NULL;
    struct prof_nccl_rec *r = add(l);
    if (!r)
        return NULL;
    r->kind = (uint8_t)kind;
    r->comm = (uint32_t)((uintptr_t)context - 1);
    r->parent = number_of(parent);
    r->tid = thread_id();
    r->start = now_ns();
    return r;
}

/* The API-level call (v5): function, count, datatype, stream. */
static void api_fields(struct prof_nccl_rec *r, const char *func, size_t count,
                       const char *datatype, void *stream, bool graph_captured)
{
    copy_str(r->func, sizeof r->func, func);
    r->count = count;
    copy_str(r->datatype, sizeof r->datatype, datatype);
    r->stream = (uint64_t)(uintptr_t)stream;
    r->graph_captured = graph_captured;
}

/* The events v4 and v5 describe alike (v5 appends to them): a kernel plan
 * (Group) and the collectives and point-to-point operations in it. Mutex
 * held; NULL for any other type. */
static struct prof_nccl_rec *plan_event(struct prof_nccl_log *l, void *context, uint64_t type,
                                        void *parent, const struct prof_nccl_coll_v4 *c,
                                        const struct prof_nccl_p2p_v4 *p)
{
    struct prof_nccl_rec *r = NULL;
    switch (type) {
    case PROF_NCCL_GROUP:
        r = begin(l, context, PROF_NCCL_K_GROUP, NULL);
        break;
    case PROF_NCCL_COLL:
        if ((r = begin(l, context, PROF_NCCL_K_COLL, parent))) {
            r->seq = c->seq;
            copy_str(r->func, sizeof r->func, c->func);
            r->count = c->count;
            r->root = c->root;
            copy_str(r->datatype, sizeof r->datatype, c->datatype);
            r->n_channels = c->n_channels;
            copy_str(r->algo, sizeof r->algo, c->algo);
            copy_str(r->proto, sizeof r->proto, c->proto);
        }
        break;
    case PROF_NCCL_P2P:
        if ((r = begin(l, context, PROF_NCCL_K_P2P, parent))) {
            copy_str(r->func, sizeof r->func, p->func);
            copy_str(r->datatype, sizeof r->datatype, p->datatype);
            r->count = p->count;
            r->root = p->peer;
            r->n_channels = p->n_channels;
        }
        break;
    default:
        break;
    }
    return r;
}

/* The launch whose external id this thread pushed (number + 1), 0 = none:
 * a launch's start and stop come on one thread and launches do not nest. */
static _Thread_local uint64_t pushed;

/* Bracket the launch that follows with an external correlation id. */
static void push_launch(struct prof_nccl_log *l, struct prof_nccl_rec *r)
{
    const struct prof_cupti *c = l->cupti;
    uint64_t id = r->number + 1;
    if (!c)
        return;
    if (c->push_external_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, id) == CUPTI_SUCCESS) {
        r->launch_id = id;
        pushed = id;
    } else {
        l->push_failures++;
    }
}

static int v5_start(void *context, void **handle, struct prof_nccl_descr_v5 *d)
{
    struct prof_nccl_log *l = &the_log;
    struct prof_nccl_rec *r = NULL;
    *handle = NULL;
    if (!__atomic_load_n(&l->active, __ATOMIC_ACQUIRE))
        return PROF_NCCL_SUCCESS;
    pthread_mutex_lock(&l->mu);
    switch (d->type) {
    case PROF_NCCL_GROUP_API:
        if ((r = begin(l, context, PROF_NCCL_K_GROUP_API, d->parent)))
            r->graph_captured = d->group_api.graph_captured;
        break;
    case PROF_NCCL_COLL_API:
        if ((r = begin(l, context, PROF_NCCL_K_COLL_API, d->parent))) {
            api_fields(r, d->coll_api.func, d->coll_api.count, d->coll_api.datatype,
                       d->coll_api.stream, d->coll_api.graph_captured);
            r->root = d->coll_api.root;
        }
        break;
    case PROF_NCCL_P2P_API:
        if ((r = begin(l, context, PROF_NCCL_K_P2P_API, d->parent)))
            api_fields(r, d->p2p_api.func, d->p2p_api.count, d->p2p_api.datatype,
                       d->p2p_api.stream, d->p2p_api.graph_captured);
        break;
    case PROF_NCCL_KERNEL_LAUNCH:
        if ((r = begin(l, context, PROF_NCCL_K_KERNEL_LAUNCH, d->parent))) {
            r->stream = (uint64_t)(uintptr_t)d->kernel_launch.stream;
            push_launch(l, r);
        }
        break;
    default:
        r = plan_event(l, context, d->type, d->parent, &d->coll.c, &d->p2p.p);
        break;
    }
    *handle = handle_of(r);
    pthread_mutex_unlock(&l->mu);
    return PROF_NCCL_SUCCESS;
}

static int v4_start(void *context, void **handle, struct prof_nccl_descr_v4 *d)
{
    struct prof_nccl_log *l = &the_log;
    *handle = NULL;
    if (!__atomic_load_n(&l->active, __ATOMIC_ACQUIRE))
        return PROF_NCCL_SUCCESS;
    pthread_mutex_lock(&l->mu);
    *handle = handle_of(plan_event(l, context, d->type, d->parent, &d->coll, &d->p2p));
    pthread_mutex_unlock(&l->mu);
    return PROF_NCCL_SUCCESS;
}

static int stop(void *handle)
{
    struct prof_nccl_log *l = &the_log;
    uint64_t n = number_of(handle), popped = 0;
    if (!n)
        return PROF_NCCL_SUCCESS;
    if (pushed == n) {
        /* the table outlives the session: CUPTI is never unloaded */
        const struct prof_cupti *c = __atomic_load_n(&l->cupti, __ATOMIC_ACQUIRE);
        if (c)
            c->pop_external_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &popped);
        pushed = 0;
    }
    if (!__atomic_load_n(&l->active, __ATOMIC_ACQUIRE))
        return PROF_NCCL_SUCCESS;
    pthread_mutex_lock(&l->mu);
    /* once deactivated the log is read without the lock: write nothing */
    struct prof_nccl_rec *r =
        __atomic_load_n(&l->active, __ATOMIC_ACQUIRE) ? prof_nccl_get(l, n - 1) : NULL;
    if (r)
        r->end = now_ns();
    pthread_mutex_unlock(&l->mu);
    return PROF_NCCL_SUCCESS;
}

static int record_state(void *handle, int state, void *args)
{
    (void)handle;
    (void)state;
    (void)args;
    return PROF_NCCL_SUCCESS;
}

static int finalize(void *context)
{
    (void)context;
    return PROF_NCCL_SUCCESS;
}

EXPORT const struct prof_nccl_v5 ncclProfiler_v5 = {"stepcast-prof", v5_init, v5_start, stop,
                                                    record_state, finalize};
EXPORT const struct prof_nccl_v4 ncclProfiler_v4 = {"stepcast-prof", v4_init, v4_start, stop,
                                                    record_state, finalize};

const struct prof_nccl_comm *prof_nccl_world(const struct prof_nccl_log *l)
{
    const struct prof_nccl_comm *best = NULL;
    for (size_t i = 0; l && i < l->n_comms; i++)
        if (!best || l->comms[i].nranks > best->nranks)
            best = &l->comms[i];
    return best;
}

/* ---- NCCL's own version --------------------------------------------------------------- */

const char *prof_nccl_library_version(char *buf, size_t n)
{
    /* NCCL may be linked statically, or not at all: look where it would be */
    void *lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
    void *sym;
    int (*get_version)(int *version);
    int v = 0;
    if (!lib)
        lib = dlopen(NULL, RTLD_LAZY); /* the program and its global libraries */
    sym = lib ? dlsym(lib, "ncclGetVersion") : NULL;
    if (lib)
        dlclose(lib);
    memcpy(&get_version, &sym, sizeof sym);
    if (!sym || get_version(&v) != PROF_NCCL_SUCCESS || v <= 0)
        return NULL;
    if (v >= 10000) /* 2.9 and later: major * 10000 + minor * 100 + patch */
        snprintf(buf, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(buf, n, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
    return buf;
}

/* ---- names -------------------------------------------------------------------------- */

const char *prof_nccl_c10d_name(const char *func)
{
    static const char *const map[][2] = {
        {"AllReduce", "allreduce"}, {"AllGather", "allgather"},
        {"ReduceScatter", "reduce_scatter"}, {"Broadcast", "broadcast"},
        {"Reduce", "reduce"}, {"AlltoAll", "all_to_all"},
        {"Gather", "gather"}, {"Scatter", "scatter"},
        {"Send", "send"}, {"Recv", "recv"}, {"SendRecv", "sendrecv"},
    };
    for (size_t i = 0; func && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(func, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}

const char *prof_nccl_c10d_dtype(const char *datatype)
{
    static const char *const map[][2] = {
        {"ncclInt8", "Char"},          {"ncclUint8", "Byte"},
        {"ncclInt32", "Int"},          {"ncclUint32", "UInt32"},
        {"ncclInt64", "Long"},         {"ncclUint64", "UInt64"},
        {"ncclFloat16", "Half"},       {"ncclFloat32", "Float"},
        {"ncclFloat64", "Double"},     {"ncclBfloat16", "BFloat16"},
        {"ncclFloat8e4m3", "Float8_e4m3fn"}, {"ncclFloat8e5m2", "Float8_e5m2"},
    };
    for (size_t i = 0; datatype && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(datatype, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}
