/* api/routes.h: the REST surface: every operation, its path, scope and body.
 *
 * One table (routes.c) lists the operations; the router matches a request
 * against it and the OpenAPI document (openapi.h) is written from it, so
 * the two cannot drift apart. Path parameters are checked here, before any
 * handler runs: identifiers must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}
 * (nothing else, so no path is ever built from request text) and ranks
 * must be decimal integers in [0, max_ranks). The dashboard's page is `/`
 * and its files `/ui/{file}` (an identifier too). */
#ifndef API_ROUTES_H
#define API_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include "api/reply.h"
#include "api/resources.h"

enum api_op {
    API_OP_HEALTHZ,
    API_OP_METRICS,
    API_OP_OPENAPI,
    API_OP_JOBS_LIST,
    API_OP_JOB_PUT,
    API_OP_JOB_GET,
    API_OP_JOB_DELETE,
    API_OP_TRACE_PUT,
    API_OP_TRACE_GET,
    API_OP_MODEL_CREATE,
    API_OP_MODELS_LIST,
    API_OP_MODEL_GET,
    API_OP_MODEL_DELETE,
    API_OP_REPLAY,
    API_OP_CRITICAL_PATH,
    API_OP_TIMELINE,
    API_OP_TOKEN_CREATE,
    API_OP_TOKENS_LIST,
    API_OP_TOKEN_DELETE,
    API_OP_DASHBOARD,
    API_OP_DASHBOARD_FILE,
    API_OP_ESTIMATE,
    API_OP_HARDWARE_LIST,
    API_OP_HARDWARE_GET,
    API_OP_CALIBRATION_NCCL,
    API_OP_CALIBRATION_GEMMS,
    API_OP_CALIBRATIONS_LIST,
    API_OP_CALIBRATION_GET,
    API_OP_MODEL_CALIBRATION,
    API_OP_VALIDATION_CREATE,
    API_OP_VALIDATIONS_LIST,
    API_OP_VALIDATION_DELETE,
    API_OP_OPPORTUNITIES,
    API_OP_FLEET_OPPORTUNITIES,
    API_OP_DIFF,
    API_OP_PLAN_CREATE,
    API_OP_PLAN_GET,
    API_OP_PLAN_DELETE,
    API_OP_WHATIF,
    API_OP_MODEL_PLAN,
    API_OP_CHAKRA,
    API_OP_SPEC_FROM_HF,
    API_OP_AB,
    API_OP_EXPERIMENT_CREATE,
    API_OP_EXPERIMENTS_LIST,
    API_OP_EXPERIMENT_GET,
    API_OP_EXPERIMENT_CLOSE,
    API_OP_FLEET,
    API_OP_PLAN_RESUME,
    API_OP_COUNT
};

/* What a route reads from the request body. */
enum api_body {
    API_BODY_NONE,     /* ignored (and not read) */
    API_BODY_JSON,     /* a JSON object, required */
    API_BODY_JSON_OPT, /* a JSON object, or nothing */
    API_BODY_TRACE,    /* a trace, streamed to disk */
    API_BODY_TEXT      /* plain text (nccl-tests output), required; as JSON bodies: buffered, max-json-body */
};

struct api_op_info {
    const char *method;
    const char *path;    /* OpenAPI template: "/v1/jobs/{job}/ranks/{rank}/trace" */
    const char *id;      /* operationId, also the metrics label */
    enum api_scope scope; /* API_SCOPE_NONE: no token needed (healthz, metrics) */
    enum api_body body;
    unsigned success;    /* the usual 2xx */
    const char *query;   /* "name:type:description;..." or NULL */
    const char *errors;  /* HTTP error statuses it returns, "400,401,404" */
    const char *summary;
};

const struct api_op_info *api_op_info(enum api_op op);

/* Parameters taken from the path. */
struct api_params {
    char job[API_ID_MAX];
    char id[API_ID_MAX]; /* a model or token id */
    int64_t rank;
};

/* Match method + path (without the query). On success *op is set. Else the
 * reply holds the error: 404 no_route, 405 method_not_allowed (with Allow),
 * 400 invalid_id / invalid_rank. HEAD matches GET. */
int api_route(const char *method, const char *path, int64_t max_ranks, enum api_op *op,
              struct api_params *p, struct api_reply *err);

/* The methods a path takes ("GET, PUT, DELETE"), for CORS preflights.
 * 0 when the path is not served. */
int api_route_methods(const char *path, char *out, size_t n);

/* Check the query parameters of a request against the operation's list:
 * unknown names, repeats (only `scale` repeats) and more than 16 are a 400
 * bad_request in r. */
int api_check_query(enum api_op op, const char *const *keys, size_t n, struct api_reply *r);

/* Whether s is a valid identifier. */
int api_id_valid(const char *s);

#endif
