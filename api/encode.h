/* api/encode.h: API resources as JSON reply bodies.
 *
 * The shapes are documented in README.md ("API") and in the OpenAPI
 * document; fields may be added, never renamed. Times are RFC 3339 UTC
 * strings, sizes bytes, durations milliseconds. Each function fills the
 * reply (status and body) and returns SC_OK, or SC_ENOMEM with a 503. */
#ifndef API_ENCODE_H
#define API_ENCODE_H

#include <stddef.h>

#include "api/page.h"
#include "api/reply.h"
#include "api/resources.h"
#include "api/routes.h"
#include "common/error.h"

struct model_job;

/* A job; with traces/models (GET /v1/jobs/{job}) when given. */
int api_reply_job(struct api_reply *r, unsigned status, const struct api_job *j,
                  const struct api_trace *traces, size_t n_traces, const struct api_model *models,
                  size_t n_models);
/* The lists: one page (api/page.h), its rows that cannot be rendered
 * left out and counted in m->skipped. */
int api_reply_jobs(struct api_reply *r, const struct api_job *v, size_t n, struct api_list_meta *m);

int api_reply_trace(struct api_reply *r, unsigned status, const char *job, const struct api_trace *t);

int api_reply_model(struct api_reply *r, unsigned status, const struct api_model *m);
/* The 202 of a build request: the model with "model": its id. */
int api_reply_model_accepted(struct api_reply *r, const struct api_model *m);
int api_reply_models(struct api_reply *r, const struct api_model *v, size_t n, struct api_list_meta *m);

/* With the secret when just created (shown once), else without. */
int api_reply_token(struct api_reply *r, unsigned status, const struct api_token *t,
                    const char *secret);
int api_reply_tokens(struct api_reply *r, const struct api_token *v, size_t n, struct api_list_meta *m);

/* {"deleted":"<kind>","id":..,"models":n,"blobs_freed":n} */
int api_reply_deleted(struct api_reply *r, const char *kind, const char *id, size_t models,
                      size_t blobs);

struct api_health {
    const char *status; /* "ok", "draining" or "store_unreachable" */
    double uptime_s;
    int schema;
    long builds_running, builds_queued;
    int disk_full;            /* the data directory's disk has no room left */
    uint64_t disk_free_bytes;
    const char *store;        /* the catalog's engine: "sqlite" or "postgresql" */
    int store_reachable;      /* it answered just now */
};
int api_reply_health(struct api_reply *r, unsigned status, const struct api_health *h);

/* A replay as the reply of a model query: the replay document, the
 * critical paths, or the timeline of `rank` (404 when the job has no such
 * rank). */
struct model_replay;
int api_reply_replay(struct api_reply *r, enum api_op op, const struct model_replay *rp, int rank);

/* The replay rp of graph g (run with options ro) as Chakra execution
 * traces (estimator/interchange/chakra_export.h): a tar of the files named with
 * `prefix` (400 for a bad prefix). */
struct model_graph;
struct model_replay_opts;
int api_reply_chakra(struct api_reply *r, const struct model_graph *g, const struct model_replay *rp,
                     const struct model_replay_opts *ro, const char *prefix);

/* The summary stored with a ready model: per rank its events and measured
 * steps. *text is compact JSON from malloc. */
int api_model_summary(const struct model_job *job, char **text, struct sc_error *err);

#endif
