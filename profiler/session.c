/* profiler/session.c: the tracing session (session.h). */
#include "profiler/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profiler/bufpool.h"
#include "profiler/convert.h"
#include "profiler/kineto.h"
#include "profiler/layout.h"
#include "profiler/log.h"
#include "profiler/nccl.h"
#include "profiler/steps.h"
#include "profiler/store.h"
#include "common/banned.h"

#define MB (1024ull * 1024ull)
/* what precedes a step window is dropped this long before the step began,
 * for records without a correlation id (kernel-boundary steps) */
#define WINDOW_MARGIN_NS (10ull * 1000000000ull)
/* after a window's last step: wait for its GPU work before writing */
#define WINDOW_GRACE_MS 2000
/* periodic flushes failing in a row, after records flowed, that mean CUPTI
 * was taken over */
#define FLUSH_FAILURES_LOST 3

enum { MAX_KINDS = 16 };

static struct {
    struct prof_config cfg;
    struct prof_cupti cupti;
    struct prof_layout layout;
    struct prof_pool pool;
    struct prof_store store;
    struct prof_convert conv;
    struct prof_step_tracker tracker;
    CUpti_SubscriberHandle sub;
    int subscribed;
    CUpti_ActivityKind enabled[MAX_KINDS];
    int n_enabled;
    char notes[512];
    pthread_t flusher;
    int flusher_running;
    pthread_mutex_t mu; /* guards stop, with cv */
    pthread_cond_t cv;  /* on CLOCK_MONOTONIC: a wall-clock step does not stall flushing */
    int stop;
    atomic_int state;
    pid_t pid;
    uint64_t clock_start[3];
    uint64_t cupti_dropped;
    uint64_t close_at; /* monotonic ns when a closed window is written, 0 = not closing */
    int lost;          /* another CUPTI client took over: touch CUPTI no more */
    int flush_failures; /* periodic flushes failed in a row */
    int hooks_registered; /* exit and fork hooks and cv, set up once per process */
    char output[4096];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void clock_sample(uint64_t c[3])
{
    c[0] = clock_ns(CLOCK_REALTIME);
    c[1] = clock_ns(CLOCK_MONOTONIC);
    c[2] = 0;
    if (S.cupti.get_timestamp)
        S.cupti.get_timestamp(&c[2]);
}

static const char *cupti_err(CUptiResult r)
{
    static char buf[128];
    return prof_cupti_strerror(&S.cupti, r, buf, sizeof buf);
}

/* ---- CUPTI's callbacks ------------------------------------------------------------------ */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    *buf = prof_pool_get(&S.pool, size);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    prof_pool_done(&S.pool, buf, valid);
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                 const void *data)
{
    /* the subscriber only claims CUPTI; no callback is enabled */
    (void)user;
    (void)domain;
    (void)id;
    (void)data;
}

/* ---- steps and the window -------------------------------------------------------------- */

struct cut {
    uint64_t t;     /* drop what started before this (ns) */
    uint32_t corr;  /* kernel-boundary steps: drop correlated records below this */
};

static int keep_after_cut(const struct prof_event *e, void *arg)
{
    const struct cut *c = arg;
    if (e->type == PROF_EV_CUDA_EVENT) /* small, and what waits after the cut may need them */
        return 1;
    if (c->corr)
        return e->corr ? e->corr >= c->corr : e->start == 0 || e->start + WINDOW_MARGIN_NS >= c->t;
    return e->start == 0 || e->start >= c->t;
}

static void close_window(void)
{
    if (!S.close_at)
        S.close_at = clock_ns(CLOCK_MONOTONIC) + WINDOW_GRACE_MS * 1000000ull +
                     2ull * S.cfg.flush_ms * 1000000ull;
}

/* Follow the steps in events [from, n) of the store. */
static void watch_steps(size_t from)
{
    struct cut cut = {0, 0};
    int have_cut = 0;
    for (size_t i = from; i < S.store.n; i++) {
        int r = prof_step_tracker_feed(&S.tracker, &S.store, prof_store_at(&S.store, i));
        if (r == 1 && S.cfg.window_first >= 0 && S.tracker.number < S.cfg.window_first) {
            cut.t = S.tracker.start;
            cut.corr = S.tracker.start_corr;
            have_cut = 1;
        }
        if (r == 1 && S.cfg.window_last >= 0 && S.tracker.number > S.cfg.window_last)
            close_window();
        if (r == 2 && S.cfg.window_last >= 0 && S.tracker.ended >= S.cfg.window_last)
            close_window();
    }
    if (have_cut) {
        prof_store_filter(&S.store, keep_after_cut, &cut);
        prof_nccl_drop_before(prof_nccl(), cut.t > WINDOW_MARGIN_NS ? cut.t - WINDOW_MARGIN_NS : 0);
    }
}

void prof_session_drain(void)
{
    uint8_t *buf;
    size_t valid;
    int i;
    while ((i = prof_pool_take(&S.pool, &buf, &valid)) >= 0) {
        size_t before = S.store.n;
        prof_convert_buffer(&S.conv, S.cupti.get_next_record, buf, valid);
        prof_pool_give_back(&S.pool, i);
        watch_steps(before);
    }
    size_t dropped = 0;
    if (S.cupti.get_num_dropped && S.cupti.get_num_dropped(NULL, 0, &dropped) == CUPTI_SUCCESS)
        S.cupti_dropped += dropped;
}

/* Add to the notes the trace carries (stepcast_profiler.notes). */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    size_t n = strlen(S.notes);
    va_list ap;
    if (n && n + 2 < sizeof S.notes) {
        memcpy(S.notes + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(S.notes + n, sizeof S.notes - n, fmt, ap);
    va_end(ap);
}

/* ---- the flush thread --------------------------------------------------------------------- */

static void *flusher(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&S.mu);
    while (!S.stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += S.cfg.flush_ms / 1000;
        until.tv_nsec += (long)(S.cfg.flush_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!S.stop && pthread_cond_timedwait(&S.cv, &S.mu, &until) != ETIMEDOUT)
            ;
        if (S.stop)
            break;
        pthread_mutex_unlock(&S.mu);
        CUptiResult r = S.cupti.flush_all(0);
        S.flush_failures = r == CUPTI_SUCCESS || r == CUPTI_ERROR_NOT_READY ? 0 : S.flush_failures + 1;
        if (S.flush_failures == 1 && !S.conv.records)
            note("periodic flush: %s", cupti_err(r)); /* before any record: CUDA not yet in use */
        if (S.flush_failures >= FLUSH_FAILURES_LOST && S.conv.records) {
            /* records flowed, then CUPTI stopped answering: it was finalized or
             * reconfigured by another client */
            S.lost = 1;
            note("periodic flush: %s", cupti_err(r));
            prof_log_fail("another CUPTI client took over CUPTI (flush: %s): tracing stopped, "
                          "the trace keeps what was recorded before", cupti_err(r));
            prof_session_finish();
            return NULL;
        }
        prof_session_drain();
        if (S.close_at && clock_ns(CLOCK_MONOTONIC) >= S.close_at) {
            prof_session_finish();
            return NULL;
        }
        pthread_mutex_lock(&S.mu);
    }
    pthread_mutex_unlock(&S.mu);
    return NULL;
}

static void stop_flusher(void)
{
    if (!S.flusher_running || pthread_equal(pthread_self(), S.flusher))
        return;
    pthread_mutex_lock(&S.mu);
    S.stop = 1;
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
    pthread_join(S.flusher, NULL);
    S.flusher_running = 0;
}

/* ---- process hooks -------------------------------------------------------------------- */

static void at_exit(void)
{
    if (getpid() != S.pid)
        return;
    stop_flusher();
    prof_session_finish();
}

static void in_child(void)
{
    /* CUPTI's state is not valid in a forked child: never touch it there */
    atomic_store(&S.state, PROF_DONE);
    S.flusher_running = 0;
    prof_nccl_forked(prof_nccl());
}

/* ---- start ---------------------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    prof_log_fail("tracing disabled: %s; the job runs untraced", msg);
    return PROF_OFF;
}

static void undo(void)
{
    for (int i = S.n_enabled - 1; i >= 0; i--)
        S.cupti.disable(S.enabled[i]);
    S.n_enabled = 0;
    if (S.subscribed)
        S.cupti.unsubscribe(S.sub);
    S.subscribed = 0;
    prof_store_release(&S.store);
}

static int mkdirs(const char *dir)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) && errno != EEXIST)
            return -1;
        *s = '/';
    }
    if (mkdir(p, 0777) && errno != EEXIST)
        return -1;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode) && access(p, W_OK) == 0 ? 0 : -1;
}

static int subscribe(void)
{
    char old[128] = "";
    CUptiResult r;
    if (S.cupti.subscribe_v2) {
        CUpti_SubscriberParams p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        p.subscriberName = "stepcast-prof";
        p.oldSubscriberName = old;
        p.oldSubscriberSize = sizeof old;
        r = S.cupti.subscribe_v2(&S.sub, (CUpti_CallbackFunc)on_callback, NULL, &p);
    } else {
        r = S.cupti.subscribe(&S.sub, (CUpti_CallbackFunc)on_callback, NULL);
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        return fail("CUPTI is already in use by %s (torch.profiler, Nsight, a sanitizer?)",
                    *old ? old : "another tool");
    if (r != CUPTI_SUCCESS)
        return fail("cuptiSubscribe failed: %s (no GPU, or no CUDA driver?)", cupti_err(r));
    S.subscribed = 1;
    return PROF_RUNNING;
}

/* Enable the activity kinds. PROF_RUNNING, or PROF_OFF (reported) when a
 * kind the trace cannot do without fails. */
static int enable_kinds(void)
{
    static const struct {
        CUpti_ActivityKind kind;
        const char *name;
        int required;
    } kinds[] = {
        {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", 0},
        {CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT", 0},
        {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", 0},
        {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", 1},
        {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", 0},
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", 1},
        {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", 0},
        {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", 0},
        {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", 0},
        {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", 0},
        {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA_EVENT", 0},
        {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", 0},
        {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", 0},
    };
    /* getters called constantly that no dependency needs (Kineto drops the
     * first three of each list too) */
#define RT(name) CUPTI_RUNTIME_TRACE_CBID_##name
#define DRV(name) CUPTI_DRIVER_TRACE_CBID_##name
    static const CUpti_CallbackId quiet_runtime[] = {
        RT(cudaGetDevice_v3020), RT(cudaGetLastError_v3020), RT(cudaPeekAtLastError_v3020),
        RT(cudaGetDeviceCount_v3020), RT(cudaFuncGetAttributes_v3020),
        RT(cudaPointerGetAttributes_v4000), RT(cudaDeviceGetAttribute_v5000),
        RT(cudaStreamIsCapturing_v10000), RT(cudaStreamGetCaptureInfo_v10010),
        RT(cudaStreamGetCaptureInfo_v12030)};
    static const CUpti_CallbackId quiet_driver[] = {
        DRV(cuKernelGetAttribute), DRV(cuDevicePrimaryCtxGetState), DRV(cuCtxGetCurrent),
        DRV(cuCtxSetCurrent), DRV(cuCtxGetDevice), DRV(cuCtxGetId), DRV(cuDriverGetVersion),
        DRV(cuDeviceGetAttribute), DRV(cuFuncGetAttribute), DRV(cuPointerGetAttribute),
        DRV(cuPointerGetAttributes), DRV(cuStreamIsCapturing), DRV(cuStreamGetCaptureInfo),
        DRV(cuStreamGetCaptureInfo_v2), DRV(cuStreamGetCaptureInfo_v3), DRV(cuGetProcAddress),
        DRV(cuGetProcAddress_v2), DRV(cuGetExportTable), DRV(cuModuleGetFunction),
        DRV(cuLibraryGetKernel), DRV(cuKernelGetFunction)};
#undef RT
#undef DRV
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        CUpti_ActivityKind k = kinds[i].kind;
        if ((k == CUPTI_ACTIVITY_KIND_DRIVER && !S.cfg.driver) ||
            (k == CUPTI_ACTIVITY_KIND_MARKER && !S.cfg.nvtx))
            continue;
        CUptiResult r = S.cupti.enable(k);
        if (r == CUPTI_SUCCESS) {
            S.enabled[S.n_enabled++] = k;
            continue;
        }
        if (kinds[i].required) {
            char what[200];
            snprintf(what, sizeof what, "cuptiActivityEnable(%s) failed: %s", kinds[i].name, cupti_err(r));
            return fail("%s (no GPU, or no CUDA driver?)", what);
        }
        note("%s: %s", kinds[i].name, cupti_err(r));
    }
    if (S.cupti.enable_runtime_api)
        for (size_t i = 0; i < sizeof quiet_runtime / sizeof quiet_runtime[0]; i++)
            S.cupti.enable_runtime_api(quiet_runtime[i], 0);
    if (S.cupti.enable_driver_api && S.cfg.driver)
        for (size_t i = 0; i < sizeof quiet_driver / sizeof quiet_driver[0]; i++)
            S.cupti.enable_driver_api(quiet_driver[i], 0);
    if (S.cupti.enable_event_device_timestamps)
        S.cupti.enable_event_device_timestamps(1);
    return PROF_RUNNING;
}

int prof_session_start(const struct prof_config *cfg, const struct prof_cupti *cupti)
{
    uint32_t version = 0;
    CUptiResult r;
    int expected = PROF_OFF;

    if (atomic_load(&S.state) != PROF_OFF)
        return atomic_load(&S.state);
    S.cfg = *cfg;
    S.cupti = *cupti;
    S.notes[0] = '\0';
    S.output[0] = '\0';
    S.close_at = 0;
    S.cupti_dropped = 0;
    S.lost = 0;
    S.flush_failures = 0;
    S.stop = 0;
    S.pid = getpid();
    prof_log_set_quiet(cfg->quiet);

    if ((r = S.cupti.get_version(&version)) != CUPTI_SUCCESS)
        return fail("cuptiGetVersion failed: %s", cupti_err(r));
    if (prof_layout_for_version(version, &S.layout)) {
        return fail("CUPTI API version %u is older than CUDA 12.4's (22), the oldest supported",
                    version);
    }
    if (subscribe() != PROF_RUNNING)
        return PROF_OFF;
    if (mkdirs(cfg->dir)) {
        undo();
        return fail("cannot create or write the output directory '%s'", cfg->dir);
    }

    size_t total = cfg->max_mb * MB, buf = cfg->buffer_kb * 1024;
    size_t n_bufs = total / 4 / buf;
    prof_pool_init(&S.pool, buf, n_bufs < 2 ? 2 : n_bufs, version >= 27);
    size_t left = total - S.pool.max_buffers * buf;
    if (prof_store_init(&S.store, left - left / 8)) {
        undo();
        return fail("out of memory");
    }
    prof_convert_init(&S.conv, &S.layout, &S.store, S.cupti.get_callback_name);
    struct prof_step_rule rule = {cfg->step_nvtx, cfg->step_kernel};
    prof_step_tracker_init(&S.tracker, &rule);

    if ((r = S.cupti.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        undo();
        return fail("cuptiActivityRegisterCallbacks failed: %s", cupti_err(r));
    }
    if (enable_kinds() != PROF_RUNNING) {
        undo();
        return PROF_OFF;
    }
    clock_sample(S.clock_start);
    prof_nccl_activate(prof_nccl(), &S.cupti, left / 8);
    if (!S.hooks_registered) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&S.cv, &ca);
        pthread_condattr_destroy(&ca);
        S.hooks_registered = 1;
        atexit(at_exit);
        pthread_atfork(NULL, NULL, in_child);
    }
    if (pthread_create(&S.flusher, NULL, flusher, NULL)) {
        prof_nccl_deactivate(prof_nccl());
        undo();
        return fail("cannot start the flush thread");
    }
    S.flusher_running = 1;
    atomic_compare_exchange_strong(&S.state, &expected, PROF_RUNNING);
    prof_log_info("tracing with %s (CUPTI API %u, CUDA %s records) to %s", S.cupti.path, version,
                  S.layout.cuda, cfg->dir);
    return PROF_RUNNING;
}

/* ---- finish --------------------------------------------------------------------------- */

static int64_t env_int(const char *const names[], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        char *end;
        if (!v || !*v)
            continue;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!errno && !*end && x >= 0)
            return x;
    }
    return -1;
}

static void read_comm(char *buf, size_t n)
{
    FILE *f = fopen("/proc/self/comm", "r");
    buf[0] = '\0';
    if (f) {
        if (fgets(buf, (int)n, f))
            buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
}

/* Whether the store holds GPU work: a kernel, copy or memset. */
static int gpu_work(const struct prof_store *st)
{
    for (size_t i = 0; i < st->n; i++) {
        uint8_t type = prof_store_at(st, i)->type;
        if (type == PROF_EV_KERNEL || type == PROF_EV_MEMCPY || type == PROF_EV_MEMSET)
            return 1;
    }
    return 0;
}

static int write_trace(void)
{
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                            "SLURM_NTASKS"};
    struct prof_trace_info info;
    struct prof_write_stats stats;
    char host[256] = "", comm[64], nccl_version[32], why[512], rank_part[32] = "";
    /* a process that only set CUDA up (torch.compile's compile workers
     * load the injection too) leaves no trace, unless something went
     * wrong that its trace would say */
    if (!gpu_work(&S.store) && !S.notes[0] && !S.cupti_dropped && !S.store.dropped &&
        !atomic_load(&S.pool.refused) && !atomic_load(&S.pool.lost_bytes)) {
        prof_log_info("no GPU work was recorded (a process that only set CUDA up): no trace written");
        S.output[0] = '\0';
        return 0;
    }
    memset(&info, 0, sizeof info);
    gethostname(host, sizeof host - 1);
    read_comm(comm, sizeof comm);
    info.pid = (uint32_t)S.pid;
    info.process_name = comm;
    info.host = host;
    info.rank = env_int(rank_vars, 4);
    info.world_size = env_int(size_vars, 4);
    info.cupti_version = S.layout.api_version;
    info.cupti_layout = S.layout.cuda;
    info.cupti_library = S.cupti.path;
    info.nccl_version = prof_nccl_library_version(nccl_version, sizeof nccl_version);
    memcpy(info.clock_start, S.clock_start, sizeof info.clock_start);
    clock_sample(info.clock_end);
    info.cupti_dropped = S.cupti_dropped;
    info.buffers_refused = atomic_load(&S.pool.refused);
    info.bytes_lost = atomic_load(&S.pool.lost_bytes);
    info.records = S.conv.records;
    info.steps.nvtx_prefix = S.cfg.step_nvtx;
    info.steps.kernel_substr = S.cfg.step_kernel;
    info.window_first = S.cfg.window_first;
    info.window_last = S.cfg.window_last;
    info.notes = S.notes[0] ? S.notes : NULL;

    const struct prof_nccl_comm *world = prof_nccl_world(prof_nccl());
    int64_t rank = world ? world->rank : info.rank;
    if (rank >= 0)
        snprintf(rank_part, sizeof rank_part, "_rank%lld", (long long)rank);
    snprintf(S.output, sizeof S.output, "%s/stepcast_%s_%u%s.pt.trace.json%s", S.cfg.dir, host,
             (unsigned)S.pid, rank_part, S.cfg.gzip ? ".gz" : "");
    if (prof_kineto_write(&S.store, prof_nccl(), &info, S.output, S.cfg.gzip, &stats, why, sizeof why)) {
        prof_log_fail("could not write the trace: %s", why);
        S.output[0] = '\0';
        return -1;
    }
    if (!stats.window_found)
        prof_log_info("no step of the window %lld-%lld was seen: the trace holds no events "
                      "(are NVTX ranges injected, or STEPCAST_PROF_STEP_KERNEL set?)",
                      (long long)S.cfg.window_first, (long long)S.cfg.window_last);
    prof_log_info("wrote %s (%llu events, %.1f MB of JSON)", S.output, (unsigned long long)stats.events,
                  (double)stats.bytes / MB);
    return 0;
}

int prof_session_finish(void)
{
    int expected = PROF_RUNNING;
    if (!atomic_compare_exchange_strong(&S.state, &expected, PROF_FINISHING))
        return -1;
    stop_flusher();
    if (!S.lost) {
        CUptiResult r = S.cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS)
            note("final flush: %s", cupti_err(r));
    }
    prof_session_drain(); /* what was completed is kept in any case */
    if (!S.lost) {
        for (int i = S.n_enabled - 1; i >= 0; i--)
            S.cupti.disable(S.enabled[i]);
        S.cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        prof_session_drain();
        /* a forced flush returns every buffer: one still out went to another
         * client's callbacks */
        size_t out = prof_pool_outstanding(&S.pool);
        if (out) {
            note("%zu activity buffers never came back", out);
            prof_log_fail("another CUPTI client (torch.profiler?) took CUPTI's activity buffers "
                          "during the run: the trace misses their records");
        }
    }
    S.n_enabled = 0;
    prof_nccl_deactivate(prof_nccl());
    int rc = write_trace();
    if (S.subscribed)
        S.cupti.unsubscribe(S.sub);
    S.subscribed = 0;
    prof_store_release(&S.store);
    atomic_store(&S.state, PROF_DONE);
    return rc;
}

int prof_session_state(void)
{
    return atomic_load(&S.state);
}

const char *prof_session_output(void)
{
    return S.output;
}

void prof_session_reset(void)
{
    stop_flusher();
    if (atomic_load(&S.state) == PROF_RUNNING)
        undo();
    prof_pool_release(&S.pool);
    prof_nccl_reset(prof_nccl());
    atomic_store(&S.state, PROF_OFF);
    S.output[0] = '\0';
}
