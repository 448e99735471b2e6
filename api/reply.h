/* api/reply.h: what a request is answered with, and the error codes.
 *
 * Handlers fill a struct api_reply: an HTTP status, a body (from malloc,
 * owned by the reply) and the few headers the API sets. Every 4xx/5xx body
 * is {"error":{"code":"...","message":"..."}} with a code from the table
 * below (README.md "API" lists them); this is the only place where statuses
 * of the library (common/error.h) become HTTP statuses. */
#ifndef API_REPLY_H
#define API_REPLY_H

#include <stddef.h>

#include "common/error.h"

enum api_code {
    API_E_NONE = 0,
    API_E_BAD_REQUEST,     /* 400 malformed request: query, headers */
    API_E_INVALID_JSON,    /* 400 body is not the JSON object the route takes */
    API_E_JSON_TOO_DEEP,   /* 400 body nested deeper than max-json-depth */
    API_E_INVALID_ID,      /* 400 an identifier in the path breaks the pattern */
    API_E_INVALID_RANK,    /* 400 rank is not an integer in [0, max-ranks) */
    API_E_INVALID_TRACE,   /* 400 the trace failed validation */
    API_E_UNAUTHORIZED,    /* 401 missing, unknown or revoked token */
    API_E_FORBIDDEN,       /* 403 the token's scope is not enough */
    API_E_NOT_FOUND,       /* 404 no such job, trace, model or token */
    API_E_NO_ROUTE,        /* 404 no such path */
    API_E_METHOD,          /* 405 the path exists, the method does not */
    API_E_CONFLICT,        /* 409 the rank has another trace; or state forbids it */
    API_E_NOT_READY,       /* 409 the model is building or failed */
    API_E_TOO_LARGE,       /* 413 body or trace over a limit */
    API_E_UNPROCESSABLE,   /* 422 well-formed but unusable (rank mismatch, numbers) */
    API_E_BUSY,            /* 429 too many uploads or builds in progress */
    API_E_INTERNAL,        /* 500 a failure on the server's side */
    API_E_UNAVAILABLE,     /* 503 shutting down, or out of memory */
    API_E_URI_TOO_LONG,    /* 414 the request target is over its limit */
    API_E_HEADERS_TOO_LARGE, /* 431 the request line and headers are over max-header */
    API_E_NO_SPACE,        /* 507 the data directory's disk is full */
    API_E_INVALID_SPEC,    /* 400 the spec is invalid (the message names the field) */
    API_E_COUNT
};

struct api_code_info {
    const char *name;    /* "invalid_json" */
    unsigned http;       /* 400 */
    const char *meaning; /* one line, for the documentation */
};

const struct api_code_info *api_code_info(enum api_code c);

struct api_reply {
    unsigned status;          /* HTTP status */
    char *body;               /* from malloc, owned; may be NULL (empty) */
    size_t len;
    const char *content_type; /* static */
    enum api_code code;       /* for errors, else API_E_NONE */
    unsigned retry_after;     /* seconds (429, 503), or 0 */
    char location[160];       /* Location header, or "" */
    char allow[64];           /* Allow header (405), or "" */
};

void api_reply_release(struct api_reply *r); /* frees the body; reusable after */

/* An error reply: status from the code's table row, JSON body with the
 * formatted message. Returns the status of the library matching the code
 * (SC_EINVAL, SC_ENOTFOUND, ...), so handlers can `return api_fail(...)`. */
__attribute__((format(printf, 3, 4)))
int api_fail(struct api_reply *r, enum api_code code, const char *fmt, ...);

/* An error reply for a library error: EPARSE/EINVAL -> `invalid` (the
 * caller says which 400 code fits), ELIMIT -> too_large, ENUMERIC ->
 * unprocessable, ENOTFOUND -> not_found, EEXIST -> conflict, ENOMEM and ECANCELED ->
 * unavailable, others -> internal, whose message does not repeat err's
 * (it may name server paths): the server error hook gets err for every
 * 5xx. Returns err->code. */
int api_fail_status(struct api_reply *r, const struct sc_error *err, enum api_code invalid);

/* Who hears of failures on the server's side (a 5xx from
 * api_fail_status), with the details the reply leaves out: the daemon's
 * log. Set it once, before requests are answered; NULL: nobody. */
typedef void (*api_server_error_fn)(const struct sc_error *err);
void api_set_server_error_hook(api_server_error_fn fn);

/* A body the caller built (taken over): status and content type. */
void api_reply_take(struct api_reply *r, unsigned status, const char *content_type, char *body,
                    size_t len);

#endif
