/* daemon/metrics.c: atomic counters and the Prometheus text format (metrics.h). */
#include "daemon/metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/banned.h"

#define N_STATUS 500 /* HTTP 100..599 */
#define N_ROUTES (API_OP_COUNT + 1)

static const double latency_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                    0.1,    0.25,  0.5,    1,     2.5,  5,     10};
static const double build_le[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
#define N_LE (sizeof latency_le / sizeof latency_le[0])

struct histogram {
    atomic_uint_fast64_t buckets[N_LE]; /* not cumulative; summed when rendered */
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t sum_us;
};

struct metrics {
    atomic_uint_fast64_t requests[N_ROUTES][N_STATUS];
    struct histogram latency[N_ROUTES];
    atomic_uint_fast64_t upload_bytes;
    atomic_uint_fast64_t uploads[METRICS_UPLOAD_N];
    atomic_uint_fast64_t builds[2]; /* failed, ready */
    struct histogram build_time;
    atomic_uint_fast64_t memo[2]; /* miss, hit */
    char replica[METRICS_REPLICA_MAX + 1];
};

double metrics_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int metrics_new(const char *replica, struct metrics **out, struct sc_error *err)
{
    /* zeroed memory is a valid initial state for these atomics */
    if (!(*out = calloc(1, sizeof **out)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    snprintf((*out)->replica, sizeof (*out)->replica, "%s", replica);
    return SC_OK;
}

void metrics_free(struct metrics *m)
{
    free(m);
}

static void observe(struct histogram *h, const double *le, double v)
{
    size_t i = 0;
    while (i < N_LE && v > le[i])
        i++;
    if (i < N_LE)
        atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint64_t)(v * 1e6 + 0.5), memory_order_relaxed);
}

void metrics_request(struct metrics *m, enum api_op op, unsigned status, double seconds)
{
    unsigned r = (unsigned)op < API_OP_COUNT ? (unsigned)op : API_OP_COUNT;
    if (status >= 100 && status < 100 + N_STATUS)
        atomic_fetch_add_explicit(&m->requests[r][status - 100], 1, memory_order_relaxed);
    observe(&m->latency[r], latency_le, seconds);
}

void metrics_upload(struct metrics *m, uint64_t bytes, enum metrics_upload result)
{
    atomic_fetch_add_explicit(&m->upload_bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->uploads[result], 1, memory_order_relaxed);
}

void metrics_build(struct metrics *m, int ok, double seconds)
{
    atomic_fetch_add_explicit(&m->builds[ok != 0], 1, memory_order_relaxed);
    observe(&m->build_time, build_le, seconds);
}

void metrics_memo(struct metrics *m, int hit)
{
    atomic_fetch_add_explicit(&m->memo[hit != 0], 1, memory_order_relaxed);
}

/* A growing text buffer; `failed` sticks after the first allocation failure. */
struct text {
    char *p;
    size_t n, cap;
    int failed;
};

__attribute__((format(printf, 2, 3)))
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2 && !t->failed; tries++) {
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            t->failed = 1;
            return;
        }
        if (t->p && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = (t->cap ? t->cap : 4096) * 2 + (size_t)k;
        char *np = realloc(t->p, cap);
        if (!np) {
            t->failed = 1;
            return;
        }
        t->p = np;
        t->cap = cap;
    }
}

static void header(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *route_label(unsigned r)
{
    return r < API_OP_COUNT ? api_op_info((enum api_op)r)->id : "unrouted";
}

static void histogram(struct text *t, const char *name, const char *labels, const struct histogram *h,
                      const double *le)
{
    uint64_t cum = 0;
    const char *sep = *labels ? "," : "";
    for (size_t i = 0; i < N_LE; i++) {
        cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        put(t, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, le[i], cum);
    }
    uint64_t count = atomic_load_explicit(&h->count, memory_order_relaxed);
    put(t, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, count);
    put(t, "%s_sum%s%s%s %.6f\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
        (double)atomic_load_explicit(&h->sum_us, memory_order_relaxed) / 1e6);
    put(t, "%s_count%s%s%s %" PRIu64 "\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", count);
}

/* in with the label replica="name" first in every sample line, into out. */
static void label_samples(const struct text *in, const char *name, struct text *out)
{
    const char *p = in->p, *end = in->p + in->n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        int len = (int)(nl ? nl + 1 - p : end - p), k = (int)strcspn(p, "{ \n");
        if (*p == '#')
            put(out, "%.*s", len, p);
        else if (p[k] == '{')
            put(out, "%.*s{replica=\"%s\",%.*s", k, p, name, len - k - 1, p + k + 1);
        else
            put(out, "%.*s{replica=\"%s\"}%.*s", k, p, name, len - k, p + k);
        p += len;
    }
}

static void gauge(struct text *t, const char *name, const char *help, double v)
{
    header(t, name, "gauge", help);
    put(t, "%s %.17g\n", name, v);
}

static void counter(struct text *t, const char *name, const char *help, uint64_t v)
{
    header(t, name, "counter", help);
    put(t, "%s %" PRIu64 "\n", name, v);
}

int metrics_render(struct metrics *m, const struct metrics_gauges *g, char **out, size_t *len,
                   struct sc_error *err)
{
    static const char *const upload_results[] = {"created", "identical", "rejected"};
    struct text t = {0};

    header(&t, "stepcast_build_info", "gauge", "the running version");
    put(&t, "stepcast_build_info{version=\"%s\"} 1\n", STEPCAST_VERSION);
    gauge(&t, "stepcast_uptime_seconds", "seconds since the daemon started", g->uptime_s);

    header(&t, "stepcast_http_requests_total", "counter", "HTTP requests by route and status");
    for (unsigned r = 0; r < N_ROUTES; r++)
        for (unsigned s = 0; s < N_STATUS; s++) {
            uint64_t v = atomic_load_explicit(&m->requests[r][s], memory_order_relaxed);
            if (v)
                put(&t, "stepcast_http_requests_total{route=\"%s\",status=\"%u\"} %" PRIu64 "\n",
                    route_label(r), s + 100, v);
        }
    header(&t, "stepcast_http_request_duration_seconds", "histogram",
           "time from the first byte of a request to its answer, by route");
    for (unsigned r = 0; r < N_ROUTES; r++) {
        char labels[96];
        if (!atomic_load_explicit(&m->latency[r].count, memory_order_relaxed))
            continue;
        snprintf(labels, sizeof labels, "route=\"%s\"", route_label(r));
        histogram(&t, "stepcast_http_request_duration_seconds", labels, &m->latency[r], latency_le);
    }
    gauge(&t, "stepcast_http_requests_in_flight", "requests being handled", (double)g->requests_in_flight);

    counter(&t, "stepcast_upload_bytes_total", "bytes of trace uploads received",
            atomic_load_explicit(&m->upload_bytes, memory_order_relaxed));
    header(&t, "stepcast_uploads_total", "counter", "trace uploads by result");
    for (int i = 0; i < METRICS_UPLOAD_N; i++)
        put(&t, "stepcast_uploads_total{result=\"%s\"} %" PRIu64 "\n", upload_results[i],
            (uint64_t)atomic_load_explicit(&m->uploads[i], memory_order_relaxed));
    gauge(&t, "stepcast_uploads_in_progress", "trace uploads being received", (double)g->uploads_in_progress);

    header(&t, "stepcast_model_builds_total", "counter", "finished model builds by status");
    put(&t, "stepcast_model_builds_total{status=\"ready\"} %" PRIu64 "\n",
        (uint64_t)atomic_load_explicit(&m->builds[1], memory_order_relaxed));
    put(&t, "stepcast_model_builds_total{status=\"failed\"} %" PRIu64 "\n",
        (uint64_t)atomic_load_explicit(&m->builds[0], memory_order_relaxed));
    header(&t, "stepcast_model_build_duration_seconds", "histogram", "time to build a model");
    histogram(&t, "stepcast_model_build_duration_seconds", "", &m->build_time, build_le);
    gauge(&t, "stepcast_model_builds_running", "builds on worker threads now", (double)g->builds_running);
    gauge(&t, "stepcast_model_builds_queued", "builds waiting for a worker", (double)g->builds_queued);
    gauge(&t, "stepcast_heavy_requests_running", "requests computing on the request pool now",
          (double)g->heavy_running);
    gauge(&t, "stepcast_heavy_requests_queued", "requests waiting for a thread of the request pool",
          (double)g->heavy_queued);

    gauge(&t, "stepcast_store_blobs", "trace blobs in the store", (double)g->blobs);
    gauge(&t, "stepcast_store_blob_bytes", "bytes of trace blobs in the store", (double)g->blob_bytes);
    gauge(&t, "stepcast_store_jobs", "jobs in the catalog", (double)g->jobs);
    gauge(&t, "stepcast_store_models", "models in the catalog", (double)g->models);

    gauge(&t, "stepcast_model_cache_entries", "built models in memory", (double)g->cache_entries);
    gauge(&t, "stepcast_model_cache_bytes", "bytes of built models in memory", (double)g->cache_bytes);
    gauge(&t, "stepcast_model_cache_capacity_bytes", "the cache's budget (cache-bytes)",
          (double)g->cache_capacity);
    counter(&t, "stepcast_model_cache_hits_total", "model lookups served from memory", g->cache_hits);
    counter(&t, "stepcast_model_cache_misses_total", "model lookups that loaded the model",
            g->cache_misses);
    counter(&t, "stepcast_model_cache_evictions_total", "models evicted to stay in budget",
            g->cache_evictions);
    counter(&t, "stepcast_trace_reads_total",
            "trace files read from blobs: by builds, and once a model's for a calibration", g->trace_reads);
    header(&t, "stepcast_query_memo_total", "counter", "model queries by whether the answer was memoised");
    put(&t, "stepcast_query_memo_total{result=\"hit\"} %" PRIu64 "\n",
        (uint64_t)atomic_load_explicit(&m->memo[1], memory_order_relaxed));
    put(&t, "stepcast_query_memo_total{result=\"miss\"} %" PRIu64 "\n",
        (uint64_t)atomic_load_explicit(&m->memo[0], memory_order_relaxed));

    struct text labelled = {0};
    if (!t.failed)
        label_samples(&t, m->replica, &labelled);
    free(t.p);
    if (t.failed || labelled.failed) {
        free(labelled.p);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    *out = labelled.p;
    *len = labelled.n;
    return SC_OK;
}
