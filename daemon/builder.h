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
 * `building` after a crash, or queued at a stop, stay queued, so an
 * accepted build is never lost.
 *
 * A build is cancelled cooperatively: its worker's cancel flag
 * (common/cancel.h) reaches the threads that load and build its ranks,
 * whose loops look at it every few thousand events and between passes,
 * and the build looks again before it writes its blob; it then frees what
 * it made and publishes nothing. Deleting a model cancels its build here at
 * once (builder_cancel), and on another replica within BQ_POLL_S, when that
 * replica's lease keeper finds the lease gone. A build still running when
 * a stop's drain times out is cancelled and its model marked `interrupted`
 * with its progress (build_queue.h), for POST /v1/models/{id}/resume.
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
/* Cancel the build of model id (deleted) if it runs here: 1 when it did. */
int builder_cancel(struct builder *b, const char *id);
/* Stop taking builds and wait up to timeout_s for those running to finish;
 * queued ones stay `building` in the catalog for the next claim. Builds
 * still running then are cancelled, their models `interrupted` with their
 * progress, and waited for up to BUILDER_CANCEL_GRACE_S more. Returns 1
 * when every worker has stopped (builder_free may run), else 0. */
#define BUILDER_CANCEL_GRACE_S 5.0
int builder_stop(struct builder *b, double timeout_s);
void builder_free(struct builder *b); /* after builder_stop returned 1 */

/* cache_load_fn for ready models; ctx is the builder. SC_ENOTFOUND when the
 * model does not exist, SC_EEXIST when it is not ready. */
int builder_load_ready(void *ctx, const char *id, void **value, size_t *bytes,
                       struct sc_error *err);

#endif
