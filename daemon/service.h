/* daemon/service.h: stepcastd's state and the handling of one request.
 *
 * struct svc ties the parts together: the catalog, the blob store, the
 * model cache and builders, the metrics. svc_open() brings the data
 * directory to a consistent state first (migrations, then a sweep of temp
 * files and blobs no row names), then starts the builders and resubmits
 * the builds a stop interrupted. The HTTP layer (server.h) parses,
 * routes and authenticates, then calls svc_handle() (dispatch.h) with a
 * complete request; svc_handle() never sees libmicrohttpd. */
#ifndef DAEMON_SERVICE_H
#define DAEMON_SERVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "api/query.h"
#include "api/reply.h"
#include "api/resources.h"
#include "api/routes.h"
#include "model/trace.h"
#include "common/error.h"

struct admission;
struct blob_store;
struct blob_writer;
struct builder;
struct cache;
struct daemon_config;
struct metrics;
struct plans;
struct workers;
struct store;

struct svc {
    const struct daemon_config *cfg;
    struct store *store;
    struct blob_store *blobs;
    struct cache *cache;
    struct builder *builder;
    char replica[96]; /* this replica's name (build_queue.h, BQ_OWNER_MAX) */
    struct metrics *metrics;
    struct model_load_opts load; /* trace limits from the config */
    char *openapi;               /* the document, rendered once */
    size_t openapi_len;
    pthread_mutex_t blob_mu;     /* blob renames + commits vs. frees of blobs */
    pthread_mutex_t publish_mu;  /* build results vs. model deletes */
    atomic_long uploads;         /* uploads in progress */
    atomic_long in_flight;       /* requests being handled */
    atomic_int draining;
    double started;              /* metrics_clock() at start */
    struct cache *answers;       /* memoised estimates (h_estimate.c) */
    atomic_long ledger_changes;  /* ledger writes since start: part of the memo's key */
    struct plans *plans;         /* plans running in the background (h_plans.c) */
    struct admission *admission; /* the memory budget all heavy work is admitted under */
    struct workers *pool;        /* the request pool, while the server runs (server.h) */
};

/* Bytes of memoised estimate documents kept (least recently used go). */
#define SVC_ANSWERS_BYTES (32u << 20)

#define SVC_MAX_QUERY API_QUERY_MAX /* the most api_query_decode takes */

struct svc_request {
    enum api_op op;
    struct api_params params;
    struct api_token caller;       /* filled when the route needs a token */
    const char *body;              /* JSON routes: the body (may be empty) */
    size_t body_len;
    struct blob_writer *upload;    /* trace uploads: the received body; the
                                    * handler frees it (and NULLs this) */
    size_t n_query;
    const char *qkey[SVC_MAX_QUERY], *qval[SVC_MAX_QUERY];
    struct api_query query;        /* the query, decoded (api/query.h) */
};

/* Open the data directory (creating it), check and sweep it, start the
 * builders. */
int svc_open(struct svc *s, const struct daemon_config *cfg, struct sc_error *err);
/* Wait up to timeout_s for the background plans: 1 when none runs. Those
 * still running are interrupted then, and stored so by svc_close
 * (plans.h). */
int svc_drain_plans(struct svc *s, double timeout_s);
/* Stop the builders (see builder_stop: builds still running after
 * timeout_s are cancelled, their models interrupted); 1 when they all
 * stopped. */
int svc_stop_builds(struct svc *s, double timeout_s);
/* Release everything; after svc_stop_builds returned 1. */
void svc_close(struct svc *s);

/* The catalog's URL: cfg_store when set, else sqlite:<data_dir>/catalog.db. */
void svc_store_url(const char *cfg_store, const char *data_dir, char *out, size_t n);

/* The blob directory (blobs.h): cfg_blobs when set, else <data_dir>/blobs.
 * Returns 1 when it was named (replicas may share it), else 0. */
int svc_blobs_dir(const char *cfg_blobs, const char *data_dir, char *out, size_t n);

/* stepcastd --check: is the store consistent? (the catalog's own checks
 * (store_check), every blob row's file present and hashing to its name,
 * no temp file or blob that no row names, every row one its list can
 * render: check_rows.h; every built model's blob loading and passing
 * model_graph_check: model_blob.h). store and blobs: as --store and
 * --blobs ("" for the default). Writes
 * a report; SC_OK when consistent, SC_EINTERNAL when not. Run it with the
 * daemon stopped. */
int svc_check(const char *data_dir, const char *store, const char *blobs, FILE *report,
              struct sc_error *err);

#endif
