/* api/resources.h: the resources of the REST API as C records.
 *
 * Jobs, traces, models and tokens as the API shows them. The catalog
 * (daemon/store.h) fills these records and the encoders (api/encode.h)
 * turn them into JSON, so both sides agree on one definition. Strings in
 * fixed arrays are bounded by the identifier rules (api/routes.h); the
 * char * members are from malloc and freed by the *_release functions. */
#ifndef API_RESOURCES_H
#define API_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#define API_ID_MAX 72 /* identifiers and hashes: up to 71 characters */

/* Token scopes, each including the ones before it. */
enum api_scope { API_SCOPE_NONE, API_SCOPE_READ, API_SCOPE_WRITE, API_SCOPE_ADMIN };
const char *api_scope_name(enum api_scope sc);
/* "read", "write", "admin" -> scope; -1 for anything else. */
int api_scope_parse(const char *s, enum api_scope *out);

struct api_job {
    char id[API_ID_MAX];
    char *description; /* canonical JSON object text (api_decode_job), or NULL */
    int64_t created_ns, updated_ns;
    int64_t n_traces, trace_bytes, n_models;
};
void api_job_release(struct api_job *j);
void api_jobs_free(struct api_job *v, size_t n);

struct api_trace {
    int64_t rank;
    char sha256[API_ID_MAX];
    int64_t bytes, events, steps, uploaded_ns;
};

/* interrupted: a build a shutdown cancelled (its progress kept), waiting for
 * POST /v1/models/{id}/resume */
enum api_model_status { API_MODEL_BUILDING, API_MODEL_READY, API_MODEL_FAILED, API_MODEL_INTERRUPTED };
const char *api_model_status_name(enum api_model_status st);

struct api_model {
    char id[API_ID_MAX];
    char job[API_ID_MAX];
    enum api_model_status status;
    char version[32];  /* of the stepcast that built it */
    char *error;       /* when failed */
    char *step_marker; /* build options, or NULL */
    char *steps;
    int fold;          /* rank folding (model/graph.h): -1 by the job's size, 0 never, 1 always */
    char *summary;     /* JSON text (api_model_summary) when ready */
    int64_t created_ns, finished_ns; /* finished_ns 0 while building */
    int64_t n_ranks;
    double progress;   /* 0..1; the catalog's when interrupted, else filled by
                        * the daemon for the reply */
    int queued;        /* building but not started (waits for a worker or
                        * memory); filled by the daemon for the reply */
};
void api_model_release(struct api_model *m);
void api_models_free(struct api_model *v, size_t n);

struct api_token {
    char id[API_ID_MAX];
    char name[160];
    enum api_scope scope;
    int64_t created_ns, revoked_ns; /* revoked_ns 0 while active */
};

#endif
