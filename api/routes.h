/* api/routes.h: the REST surface: every operation, its path, scope and body.
 *
 * One list (ops.def) names the operations; the router matches a request
 * against it and the OpenAPI document (openapi.h) is written from it, so
 * the two cannot drift apart. Query parameters are query.h's. Path parameters are checked here, before any
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
#define API_OP(NAME, ...) API_OP_##NAME,
#define API_QUERY(...)
#include "api/ops.def"
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

/* An operation, as api/ops.def describes it (see there). */
struct api_op_info {
    const char *method;
    const char *path;
    const char *id;
    enum api_scope scope; /* API_SCOPE_NONE: no token needed (healthz, metrics) */
    enum api_body body;
    unsigned success;
    const char *request;     /* the body's schema (JSON) or what it is (text, trace) */
    const char *reply_media; /* the success reply's content type */
    const char *reply;       /* its schema, or NULL */
    const char *also_200;    /* with a 201 success: what a 200 means instead, or NULL */
    const char *errors;      /* "400,401,404" */
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

/* Whether s is a valid identifier. */
int api_id_valid(const char *s);

#endif
