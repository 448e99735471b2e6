/* daemon/builder.h: model builds on worker threads.
 *
 * POST /v1/jobs/{job}/models records a model as `building`: queued in the
 * catalog (build_queue.h), where a worker of any replica takes it, builds
 * it (built_model_build), stores its summary and status in the catalog,
 * and puts the built model in its cache. builder_submit wakes this
 * replica's workers; idle workers also look at the queue every BQ_POLL_S
 * (builds queued through other replicas, leases run out), and a thread
 * renews the leases of the builds running here. HTTP threads never build,
 * so queries stay fast while builds run. The queue is bounded
 * (max-queued-builds: models building in the catalog). Models still
 * `building` after a stop or a crash stay queued, so an accepted build is
 * never lost.
 *
 * Builds are admitted under the daemon's memory budget (admission.h,
 * shared with estimates, plans and what-ifs): each one's peak is estimated
 * from its event count (built_model_estimate); a build starts when its
 * estimate fits beside the work running, in the order builds were queued
 * (the head waits, and the rest behind it, until memory is released); a
 * build whose estimate exceeds the whole budget fails with that reason. Reloads of ready models (builder_load_ready) serve queries
 * and are not held back by it.
 *
 * The same build serves cache misses of ready models (builder_load_ready,
 * a cache_load_fn): after a restart or an eviction, a model is rebuilt from
 * the traces it was made from. */
#ifndef DAEMON_BUILDER_H
#define DAEMON_BUILDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct admission;
struct blob_store;
struct cache;
struct metrics;
struct model_load_opts;
struct store;

struct builder_env {
    struct store *store;
    struct blob_store *blobs;
    struct cache *cache;
    struct metrics *metrics;
    const struct model_load_opts *load; /* limits; the marker is per model */
    pthread_mutex_t *publish_mu;        /* held while a result is published or a model deleted */
    struct admission *admission;        /* the memory budget builds are admitted under */
    int nice_delta;                     /* build threads run at the priority of heavy work (workers.h) */
    const char *owner;                  /* this replica's name, on its leases (build_queue.h) */
};

struct builder;

int builder_start(const struct builder_env *env, unsigned workers, size_t max_queued,
                  struct builder **out, struct sc_error *err);
/* Wake a worker for model id, building in the catalog; SC_ELIMIT when
 * more than max-queued-builds models are building. */
int builder_submit(struct builder *b, const char *id, struct sc_error *err);
/* 1, the fraction done and whether it is still queued (waiting for a
 * worker or for memory) when id is queued or building, here or on another
 * replica (as its last lease renewal wrote it), else 0. */
int builder_progress(struct builder *b, const char *id, double *fraction, int *queued);
/* Builds running here, and queued here or in the catalog (its count is
 * reused for up to a second: health probes and scrapes cost no query). */
void builder_counts(struct builder *b, long *running, long *queued);
/* Stop taking builds and wait up to timeout_s for those running to finish;
 * queued ones stay `building` in the catalog for the next claim. Returns 1
 * when every worker has stopped (builder_free may run), else 0. */
int builder_stop(struct builder *b, double timeout_s);
void builder_free(struct builder *b); /* after builder_stop returned 1 */

/* cache_load_fn for ready models; ctx is the builder. SC_ENOTFOUND when the
 * model does not exist, SC_EEXIST when it is not ready. */
int builder_load_ready(void *ctx, const char *id, void **value, size_t *bytes,
                       struct sc_error *err);

#endif
