/* api/reply.c: replies, error codes and the status -> HTTP mapping. */
#include "api/reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/json_reply.h"
#include "common/banned.h"

static const struct api_code_info codes[API_E_COUNT] = {
    [API_E_NONE] = {"none", 200, "no error"},
    [API_E_BAD_REQUEST] = {"bad_request", 400, "the request is malformed (query, headers)"},
    [API_E_INVALID_JSON] = {"invalid_json", 400, "the body is not the JSON object this route takes"},
    [API_E_JSON_TOO_DEEP] = {"json_too_deep", 400, "the JSON body is nested deeper than max-json-depth"},
    [API_E_INVALID_ID] = {"invalid_id", 400, "an identifier in the path does not match [A-Za-z0-9][A-Za-z0-9._-]{0,63}"},
    [API_E_INVALID_RANK] = {"invalid_rank", 400, "the rank is not an integer in [0, max-ranks)"},
    [API_E_INVALID_TRACE] = {"invalid_trace", 400, "the trace failed validation (the message names the byte or event)"},
    [API_E_UNAUTHORIZED] = {"unauthorized", 401, "no token, or an unknown or revoked one"},
    [API_E_FORBIDDEN] = {"forbidden", 403, "the token's scope does not allow this"},
    [API_E_NOT_FOUND] = {"not_found", 404, "no such job, trace, model or token"},
    [API_E_NO_ROUTE] = {"no_route", 404, "no such path"},
    [API_E_METHOD] = {"method_not_allowed", 405, "the path does not take this method (see Allow)"},
    [API_E_CONFLICT] = {"conflict", 409, "the rank already has a different trace (use ?replace=true), or the state forbids it"},
    [API_E_NOT_READY] = {"not_ready", 409, "the model is still building, its build failed, or it was interrupted"},
    [API_E_TOO_LARGE] = {"too_large", 413, "the body or the trace is over a limit"},
    [API_E_UNPROCESSABLE] = {"unprocessable", 422, "well-formed but unusable (e.g. the trace names another rank)"},
    [API_E_BUSY] = {"busy", 429, "too many uploads or builds in progress (see Retry-After)"},
    [API_E_INTERNAL] = {"internal", 500, "the server failed (the log has the details)"},
    [API_E_UNAVAILABLE] = {"unavailable", 503, "shutting down, out of memory, or the catalog does not answer (see Retry-After)"},
    [API_E_URI_TOO_LONG] = {"uri_too_long", 414, "the request target (path and query) is over 8 KiB"},
    [API_E_HEADERS_TOO_LARGE] = {"headers_too_large", 431, "the request line and headers are over max-header"},
    [API_E_NO_SPACE] = {"insufficient_storage", 507, "the data directory's disk is full: free space, or delete jobs or models"},
    [API_E_INVALID_SPEC] = {"invalid_spec", 400, "the spec is invalid: the message starts with the field's path"},
};

const struct api_code_info *api_code_info(enum api_code c)
{
    return &codes[(unsigned)c < API_E_COUNT ? c : API_E_INTERNAL];
}

void api_reply_release(struct api_reply *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

void api_reply_take(struct api_reply *r, unsigned status, const char *content_type, char *body,
                    size_t len)
{
    free(r->body);
    r->status = status;
    r->content_type = content_type;
    r->body = body;
    r->len = len;
}

/* A reply that needs no allocation, for when allocation failed. */
static int out_of_memory(struct api_reply *r)
{
    static const char oom[] = "{\"error\":{\"code\":\"unavailable\",\"message\":\"out of memory\"}}";
    char *b = malloc(sizeof oom);
    if (b)
        memcpy(b, oom, sizeof oom);
    api_reply_take(r, 503, "application/json", b, b ? sizeof oom - 1 : 0);
    r->code = API_E_UNAVAILABLE;
    r->retry_after = 1;
    return SC_ENOMEM;
}

int api_reply_json(struct api_reply *r, unsigned status, json_t *doc)
{
    char *body = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(doc);
    if (!body)
        return out_of_memory(r);
    api_reply_take(r, status, "application/json", body, strlen(body));
    return SC_OK;
}

json_t *api_json_time(int64_t ns)
{
    char buf[48];
    struct tm tm;
    time_t s = (time_t)(ns / 1000000000);
    if (ns <= 0)
        return json_null();
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)(ns / 1000000 % 1000));
    return json_string(buf);
}

static int code_status(enum api_code c)
{
    switch (codes[c].http / 100 == 5 ? API_E_INTERNAL : c) {
    case API_E_NOT_FOUND: case API_E_NO_ROUTE: return SC_ENOTFOUND;
    case API_E_CONFLICT: case API_E_NOT_READY: return SC_EEXIST;
    case API_E_TOO_LARGE: case API_E_BUSY: return SC_ELIMIT;
    case API_E_INVALID_JSON: case API_E_INVALID_TRACE: return SC_EPARSE;
    case API_E_INTERNAL: return SC_EINTERNAL;
    default: return SC_EINVAL;
    }
}

int api_fail(struct api_reply *r, enum api_code code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* messages quote request text: keep the body valid UTF-8 whatever it held */
    json_t *m = json_string(msg);
    if (!m) {
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        m = json_string(msg);
    }
    json_t *doc = json_pack("{s:{s:s, s:o*}}", "error", "code", codes[code].name, "message", m);
    if (api_reply_json(r, codes[code].http, doc))
        return SC_ENOMEM;
    r->code = code;
    if (code == API_E_BUSY || code == API_E_UNAVAILABLE)
        r->retry_after = 1;
    return code_status(code);
}

/* Set once at start, before requests are served; read by every handler. */
static api_server_error_fn server_error_hook;

void api_set_server_error_hook(api_server_error_fn fn)
{
    server_error_hook = fn;
}

int api_fail_status(struct api_reply *r, const struct sc_error *err, enum api_code invalid)
{
    enum api_code c;
    switch (err->code) {
    case SC_EPARSE: case SC_EINVAL: c = invalid; break;
    case SC_ELIMIT: c = API_E_TOO_LARGE; break;
    case SC_ENUMERIC: c = API_E_UNPROCESSABLE; break;
    case SC_ENOTFOUND: c = API_E_NOT_FOUND; break;
    case SC_EEXIST: c = API_E_CONFLICT; break;
    case SC_ENOMEM: case SC_ECANCELED: case SC_EUNAVAILABLE: c = API_E_UNAVAILABLE; break;
    case SC_ENOSPC: c = API_E_NO_SPACE; break;
    default: c = API_E_INTERNAL; break;
    }
    if (c == API_E_INTERNAL) /* details (paths, SQLite's words) stay in the server's log */
        api_fail(r, c, "the server failed (%s); its log has the details", sc_status_name(err->code));
    else
        api_fail(r, c, "%s", err->msg);
    if (r->status >= 500 && server_error_hook)
        server_error_hook(err);
    return err->code ? (int)err->code : SC_EINTERNAL;
}
