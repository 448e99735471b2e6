/* daemon/metrics.h: counters and histograms for /metrics (Prometheus text).
 *
 * Recording is lock-free (C11 atomics), so every request can record its
 * route, status and latency without contention; rendering reads the
 * atomics and takes the gauges (store size, cache, work in progress) from
 * the caller at that moment. Metric names start with stepcast_, and every
 * sample has the label replica="NAME" (--replica-name): replicas behind a
 * load balancer each answer for themselves. */
#ifndef DAEMON_METRICS_H
#define DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "api/routes.h"
#include "common/error.h"

struct metrics;

/* the longest replica label value */
#define METRICS_REPLICA_MAX 64

enum metrics_upload { METRICS_UPLOAD_CREATED, METRICS_UPLOAD_IDENTICAL, METRICS_UPLOAD_REJECTED,
                      METRICS_UPLOAD_N };

/* Monotonic seconds: the clock of every duration recorded here, of the
 * uptime and of the drain deadline. */
double metrics_clock(void);

/* replica: the value of every sample's replica label (config.h checks it
 * needs no escaping). */
int metrics_new(const char *replica, struct metrics **out, struct sc_error *err);
void metrics_free(struct metrics *m);

/* One finished request: its operation (API_OP_COUNT when no route matched),
 * HTTP status and duration. */
void metrics_request(struct metrics *m, enum api_op op, unsigned status, double seconds);
/* Bytes received for trace uploads, and how each upload ended. */
void metrics_upload(struct metrics *m, uint64_t bytes, enum metrics_upload result);
/* One finished model build. */
void metrics_build(struct metrics *m, int ok, double seconds);
/* A query answered from a model's memo (hit) or computed (miss). */
void metrics_memo(struct metrics *m, int hit);

struct metrics_gauges {
    int64_t blobs, blob_bytes;      /* the blob store */
    int64_t jobs, models;           /* catalog rows */
    uint64_t cache_entries, cache_bytes, cache_capacity;
    uint64_t cache_hits, cache_misses, cache_evictions;
    uint64_t trace_reads; /* trace files read from blobs (built_trace_reads) */
    long builds_running, builds_queued;
    long heavy_running, heavy_queued; /* the request pool (workers.h) */
    long uploads_in_progress, requests_in_flight;
    double uptime_s;
};

/* The exposition text (from malloc) into *out, *len. */
int metrics_render(struct metrics *m, const struct metrics_gauges *g, char **out, size_t *len,
                   struct sc_error *err);

#endif
