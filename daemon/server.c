/* daemon/server.c: libmicrohttpd glue (server.h).
 *
 * The access handler is called first when the headers are in, then once per
 * chunk of body, then with no data at the end. Everything that can refuse a
 * request without its body (route, token, query, declared size, upload
 * slots) is decided on the first call and answered at once, so a 16 GiB
 * upload with a bad token costs nothing. A body that grows past its limit
 * without having declared its size (chunked) closes the connection.
 *
 * A request whose handler needs heavy work (svc_handle says SVC_DEFERRED)
 * is handed to the request pool (workers.h) and its connection suspended
 * (MHD_suspend_connection), so the HTTP thread goes back to other
 * connections; the worker answers it and resumes the connection, and the
 * access handler, called again, sends the answer. With the pool full it is
 * 429 with Retry-After. */
#include "daemon/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api/query.h"
#include "api/routes.h"
#include "daemon/auth.h"
#include "daemon/blobs.h"
#include "daemon/config.h"
#include "daemon/dispatch.h"
#include "daemon/conn_guard.h"
#include "daemon/http_head.h"
#include "daemon/failpoint.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/service.h"
#include "daemon/workers.h"
#include "common/cancel.h"
#include "common/banned.h"

#define MAX_ORIGINS 32
/* On every reply; what the dashboard (h_dashboard.c) needs and no more:
 * its own scripts, styles, images and API, nothing inline, nothing from
 * elsewhere. */
#define DASHBOARD_CSP                                                                          \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "               \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
/* A request refused before its body is read still has that body on the
 * way: closing on it can reset the connection before the client reads the
 * answer. Bodies up to this size are read and dropped first; bigger ones
 * are answered at once and the connection closed. */
#define DISCARD_MAX (16u << 20)

struct server {
    struct MHD_Daemon *d;
    struct workers *pool; /* computes for deferred requests */
    struct conn_guard *guard;
    struct svc *svc;
    const struct daemon_config *cfg;
    atomic_uint_fast64_t next_id;
    char *origins[MAX_ORIGINS]; /* allowed CORS origins; "*" for any */
    size_t n_origins;
    MHD_socket quiesced; /* the listening socket, once drained: closed after MHD_stop_daemon */
};

struct conn {
    struct server *srv;
    struct MHD_Connection *mhd; /* while it is suspended for the pool */
    uint64_t id;
    double t0;
    struct http_head head;
    struct conn_guard_entry *guarded; /* the connection's, in srv->guard */
    int started;         /* the access handler has seen the request */
    int routed, upload_slot, aborted;
    struct svc_request req;
    struct api_reply reply;
    int have_reply;      /* an answer is ready (an error found early) */
    int discard;         /* drop the body, then send the answer */
    int deferred;        /* handed to the pool: answered when resumed */
    int close;           /* close the connection after the answer */
    int recorded;        /* counted in the metrics */
    enum api_body body;
    char *json;          /* JSON body being collected */
    size_t json_len, json_cap;
    uint64_t bytes_in;
    const char *origin;  /* the Origin header when it is allowed */
    char method[16];
    char path[512];
};

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* A header's value without the blanks after it, which are not part of it
 * (RFC 9110 5.5; libmicrohttpd strips only those before it). A value too
 * long for buf comes back as it is. */
static const char *trimmed_header(struct MHD_Connection *c, const char *name, char *buf, size_t cap)
{
    const char *v = header(c, name);
    size_t n = v ? strlen(v) : 0;
    if (!n || n >= cap || (v[n - 1] != ' ' && v[n - 1] != '\t'))
        return v;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    memcpy(buf, v, n);
    buf[n] = '\0';
    return buf;
}

static int origin_allowed(const struct server *srv, const char *origin)
{
    for (size_t i = 0; origin && i < srv->n_origins; i++)
        if (!strcmp(srv->origins[i], "*") || !strcmp(srv->origins[i], origin))
            return 1;
    return 0;
}

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct conn *cs = cls;
    (void)kind;
    if (cs->req.n_query < SVC_MAX_QUERY) {
        cs->req.qkey[cs->req.n_query] = key;
        cs->req.qval[cs->req.n_query] = value ? value : "";
    }
    cs->req.n_query++; /* counted past the bound, so the check can refuse */
    return MHD_YES;
}

static enum MHD_Result send_reply(struct server *srv, struct MHD_Connection *c, struct conn *cs)
{
    struct api_reply *r = &cs->reply;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->len, r->body ? r->body : (void *)"", 
                                        r->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    char id[32];
    if (!resp)
        return MHD_NO;
    r->body = NULL; /* the response owns it now */
    snprintf(id, sizeof id, "%" PRIu64, cs->id);
    MHD_add_response_header(resp, "X-Request-Id", id);
    if (r->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "Content-Security-Policy", DASHBOARD_CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (r->location[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
    if (r->allow[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (r->status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->retry_after) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u", r->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (cs->origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", cs->origin);
        MHD_add_response_header(resp, "Vary", "Origin");
        MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                "Location, Retry-After, X-Request-Id");
        if (!strcmp(cs->method, "OPTIONS")) {
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", r->allow);
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, Content-Encoding");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
        }
    }
    if (cs->close || atomic_load(&srv->svc->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    /* counted before the client can see the answer, so a client reading
     * /metrics next finds its request there */
    metrics_request(srv->svc->metrics, cs->routed ? cs->req.op : API_OP_COUNT, r->status,
                    metrics_clock() - cs->t0);
    cs->recorded = 1;
    enum MHD_Result ok = MHD_queue_response(c, r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* A CORS preflight: the methods of the path, no token needed. */
static void preflight(struct conn *cs, const char *path)
{
    char methods[64];
    if (!api_route_methods(path, methods, sizeof methods)) {
        api_fail(&cs->reply, API_E_NO_ROUTE, "no route for this path");
        return;
    }
    api_reply_take(&cs->reply, 204, NULL, NULL, 0);
    snprintf(cs->reply.allow, sizeof cs->reply.allow, "%s, OPTIONS", methods);
}

static int64_t declared_length(struct MHD_Connection *c)
{
    const char *v = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end;
    if (!v)
        return -1;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    return errno || end == v || n < 0 ? INT64_MAX : (int64_t)n;
}

/* Whether an early answer can go now, or the body must be dropped first. */
static int answer_now(struct MHD_Connection *c, int64_t len)
{
    const char *expect = header(c, MHD_HTTP_HEADER_EXPECT);
    const char *te = header(c, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (expect && !strcasecmp(expect, "100-continue"))
        return 1; /* the client waits for a go-ahead before its body */
    if (len < 0) { /* no length: a body only when chunked ("gzip, chunked" too) */
        size_t n = te ? strlen(te) : 0;
        return !(n >= 7 && !strcasecmp(te + n - 7, "chunked"));
    }
    return len == 0 || len > (int64_t)DISCARD_MAX;
}

/* The first call: decide what can be decided before the body. Sets
 * cs->have_reply when the request is answered early (cs->discard when its
 * body must be dropped first). */
static void begin(struct server *srv, struct MHD_Connection *c, struct conn *cs, const char *url,
                  const char *method, const char *version)
{
    struct svc *s = srv->svc;
    const struct api_op_info *op;
    int64_t len = declared_length(c);
    enum api_scope need;
    char authorization[512];

    if (http_head_check(c, &cs->head, method, version, (size_t)s->cfg->max_header, &cs->reply)) {
        cs->have_reply = cs->close = 1; /* its body, if any, cannot be trusted to end where it says */
        return;
    }
    cs->origin = origin_allowed(srv, header(c, "Origin")) ? header(c, "Origin") : NULL;
    if (atomic_load(&s->draining)) {
        api_fail(&cs->reply, API_E_UNAVAILABLE, "the server is shutting down");
        goto answer;
    }
    if (!strcmp(cs->method, "OPTIONS")) {
        preflight(cs, url);
        goto answer;
    }
    if (api_route(cs->method, url, s->cfg->max_ranks, &cs->req.op, &cs->req.params, &cs->reply))
        goto answer;
    cs->routed = 1;
    op = api_op_info(cs->req.op);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query, cs);
    need = op->scope;
    if (need == API_SCOPE_NONE && s->cfg->ops_need_token &&
        (cs->req.op == API_OP_HEALTHZ || cs->req.op == API_OP_METRICS))
        need = API_SCOPE_READ; /* the dashboard's files stay open: it asks for a token */
    if (need != API_SCOPE_NONE &&
        auth_check(s->store, trimmed_header(c, MHD_HTTP_HEADER_AUTHORIZATION, authorization, sizeof authorization),
                   need, &cs->req.caller, &cs->reply))
        goto answer;
    /* unknown, repeated, missing or bad parameters, or too many (past SVC_MAX_QUERY) */
    if (api_query_decode(cs->req.op, cs->req.qkey, cs->req.qval, cs->req.n_query, &cs->req.query, &cs->reply))
        goto answer;
    cs->body = op->body;
    if (op->body == API_BODY_TRACE) {
        struct sc_error err;
        uint64_t free_bytes;
        if (blob_store_disk_full(s->blobs, &free_bytes) == 1) { /* the rest is kept for deletes */
            api_fail(&cs->reply, API_E_NO_SPACE, "the data directory's disk is full (%llu bytes free)",
                     (unsigned long long)free_bytes);
            goto answer;
        }
        if (len > s->cfg->max_body) {
            api_fail(&cs->reply, API_E_TOO_LARGE, "a trace of %lld bytes is over max-body (%lld)",
                     (long long)len, (long long)s->cfg->max_body);
            goto answer;
        }
        if (atomic_fetch_add(&s->uploads, 1) >= s->cfg->max_uploads) {
            atomic_fetch_sub(&s->uploads, 1);
            api_fail(&cs->reply, API_E_BUSY, "%lld uploads are in progress (max-uploads)",
                     (long long)s->cfg->max_uploads);
            goto answer;
        }
        cs->upload_slot = 1;
        if (blob_writer_new(s->blobs, &cs->req.upload, &err)) {
            api_fail_status(&cs->reply, &err, API_E_INTERNAL);
            goto answer;
        }
    } else if (len > s->cfg->max_json_body) {
        api_fail(&cs->reply, API_E_TOO_LARGE, "a body of %lld bytes is over max-json-body (%lld)",
                 (long long)len, (long long)s->cfg->max_json_body);
        goto answer;
    }
    return;
answer:
    cs->have_reply = 1;
    cs->discard = !answer_now(c, len);
}

/* A chunk of body. Returns 0 to go on, -1 to close the connection. */
static int consume(struct server *srv, struct conn *cs, const char *data, size_t n)
{
    const struct daemon_config *cfg = srv->cfg;
    cs->bytes_in += n;
    if (cs->discard)
        return cs->bytes_in > DISCARD_MAX ? -1 : 0;
    if (cs->body == API_BODY_TRACE) {
        struct sc_error err;
        if (cs->bytes_in > (uint64_t)cfg->max_body)
            return -1;
        if (!cs->have_reply && blob_writer_write(cs->req.upload, data, n, &err)) {
            api_fail_status(&cs->reply, &err, API_E_INTERNAL);
            cs->have_reply = 1; /* answered at the end of the body */
        }
        return 0;
    }
    if (cs->bytes_in > (uint64_t)cfg->max_json_body)
        return -1;
    if (cs->body == API_BODY_NONE)
        return 0; /* read and dropped */
    if (cs->json_len + n + 1 > cs->json_cap) {
        size_t cap = (cs->json_len + n + 1) * 2;
        char *p = realloc(cs->json, cap);
        if (!p)
            return -1;
        cs->json = p;
        cs->json_cap = cap;
    }
    memcpy(cs->json + cs->json_len, data, n);
    cs->json_len += n;
    cs->json[cs->json_len] = '\0';
    return 0;
}

/* On a worker: the request's heavy work and its answer, then the
 * connection back to libmicrohttpd, which calls on_request again. */
static void run_deferred(void *ctx)
{
    struct conn *cs = ctx;
    if (sc_cancelled()) /* queued when the drain timed out */
        api_fail(&cs->reply, API_E_UNAVAILABLE, "the server is shutting down");
    else
        svc_handle_heavy(cs->srv->svc, &cs->req, &cs->reply);
    cs->have_reply = 1;
}

/* After run_deferred, its pool place given back: the answer goes out. */
static void answer_deferred(void *ctx)
{
    struct conn *cs = ctx;
    MHD_resume_connection(cs->mhd);
    fp_hold("http.answered", 1000);
}

/* Hand a deferred request to the pool: 1 when it took it (the connection
 * is suspended until it is answered), 0 with the refusal in cs->reply. A
 * trace upload (its body already stored) takes a place in the pool's room
 * for uploads, which holds max-uploads, as many as the server lets in at
 * once: it is never refused while the server runs, however full the heavy
 * requests' queue. */
static int offload(struct server *srv, struct MHD_Connection *c, struct conn *cs)
{
    struct sc_error err;
    enum workers_room room = cs->req.op == API_OP_TRACE_PUT ? WORKERS_UPLOAD : WORKERS_HEAVY;
    if (workers_reserve(srv->pool, room, &err)) {
        api_fail(&cs->reply, err.code == SC_ELIMIT ? API_E_BUSY : API_E_UNAVAILABLE, "%s", err.msg);
        return 0;
    }
    cs->mhd = c;
    cs->deferred = 1;
    MHD_suspend_connection(c); /* before the worker can resume it */
    workers_submit(srv->pool, room, run_deferred, answer_deferred, cs);
    return 1;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct server *srv = cls;
    struct conn *cs = *con_cls;
    if (!cs) /* on_target() ran out of memory */
        return MHD_NO;
    if (!cs->started) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        cs->started = 1;
        cs->guarded = ci ? ci->socket_context : NULL;
        conn_guard_head_done(srv->guard, cs->guarded);
        snprintf(cs->method, sizeof cs->method, "%s", method);
        snprintf(cs->path, sizeof cs->path, "%s", url);
        begin(srv, c, cs, url, method, version);
        return cs->have_reply && !cs->discard ? send_reply(srv, c, cs) : MHD_YES;
    }
    if (*upload_data_size) {
        conn_guard_body(srv->guard, cs->guarded, *upload_data_size);
        if (consume(srv, cs, upload_data, *upload_data_size)) {
            cs->aborted = 1;
            return MHD_NO;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    conn_guard_body_done(srv->guard, cs->guarded);
    if (!cs->have_reply && !cs->deferred) {
        cs->req.body = cs->json ? cs->json : "";
        cs->req.body_len = cs->json_len;
        if (svc_handle(srv->svc, &cs->req, &cs->reply) == SVC_DEFERRED && offload(srv, c, cs))
            return MHD_YES; /* answered when the pool resumes the connection */
    }
    return send_reply(srv, c, cs);
}

/* The request line is in: a request starts here, before libmicrohttpd
 * parses its query and unescapes its path (see http_head.h). */
static void *on_target(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct server *srv = cls;
    struct conn *cs = calloc(1, sizeof *cs);
    (void)c;
    if (!cs)
        return NULL;
    cs->srv = srv;
    cs->id = atomic_fetch_add(&srv->next_id, 1) + 1;
    cs->t0 = metrics_clock();
    atomic_fetch_add(&srv->svc->in_flight, 1);
    http_head_note_target(&cs->head, uri, SVC_MAX_QUERY);
    return cs;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct server *srv = cls;
    struct conn *cs = *con_cls;
    char path[600];
    (void)c;
    if (!cs)
        return;
    double dt = metrics_clock() - cs->t0;
    unsigned status = cs->reply.status;
    int ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    if (!cs->recorded) /* ended without an answer */
        metrics_request(srv->svc->metrics, cs->routed ? cs->req.op : API_OP_COUNT, 499, dt);
    log_info("http", "req=%" PRIu64 " method=%s path=\"%s\" route=%s status=%u code=%s bytes_in=%" PRIu64
             " ms=%.2f token=%s%s",
             cs->id, cs->method, log_quote(cs->path, path, sizeof path),
             cs->routed ? api_op_info(cs->req.op)->id : "-", ok ? status : 499,
             cs->reply.code ? api_code_info(cs->reply.code)->name : "-", cs->bytes_in, dt * 1e3,
             cs->req.caller.id[0] ? cs->req.caller.id : "-",
             ok ? "" : cs->aborted ? " end=closed_over_limit" : " end=client_gone_or_timeout");
    conn_guard_request_done(srv->guard, cs->guarded);
    blob_writer_free(cs->req.upload);
    if (cs->upload_slot)
        atomic_fetch_sub(&srv->svc->uploads, 1);
    atomic_fetch_sub(&srv->svc->in_flight, 1);
    api_reply_release(&cs->reply);
    free(cs->json);
    free(cs);
    *con_cls = NULL;
}

/* Every connection, from accept to close, is followed by the guard. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = fd ? conn_guard_opened(srv->guard, fd->connect_fd, addr ? addr->client_addr : NULL)
                             : NULL;
    } else {
        conn_guard_closed(srv->guard, *socket_context);
        *socket_context = NULL;
    }
}

__attribute__((format(printf, 2, 0)))
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512], q[600];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    log_warn("mhd", "msg=\"%s\"", log_quote(msg, q, sizeof q));
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decoding of paths and query values, except that an escape for a
 * control byte (%00, %0a, ...) stays as written: decoded, a NUL would end
 * the string early and turn /v1/jobs/a%00b/... into /v1/jobs/a. Left as
 * text it fails identifier checks like any other bad character. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    char *w = s;
    (void)cls;
    (void)c;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 &&
            hi * 16 + lo >= 0x20 && hi * 16 + lo != 0x7f) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* "HOST:PORT", "[V6]:PORT", "localhost:PORT" -> a socket address. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, int *v6, struct sc_error *err)
{
    char host[128];
    const char *colon = strrchr(listen, ':');
    char *end;
    long port;
    if (!colon || (size_t)(colon - listen) >= sizeof host)
        return sc_error_set(err, SC_EINVAL, "listen: '%s' is not HOST:PORT", listen);
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
        return sc_error_set(err, SC_EINVAL, "listen: bad port in '%s'", listen);
    memset(ss, 0, sizeof *ss);
    *v6 = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        host[strlen(host) - 1] = '\0';
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
            return sc_error_set(err, SC_EINVAL, "listen: bad IPv6 address in '%s'", listen);
        *v6 = 1;
        return SC_OK;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return sc_error_set(err, SC_EINVAL, "listen: '%s' is not an IPv4 address (or [IPv6])", host);
    return SC_OK;
}

static int parse_origins(struct server *srv, const char *list, struct sc_error *err)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        while (n && *p == ' ')
            p++, n--;
        size_t k = n;
        while (k && p[k - 1] == ' ')
            k--;
        if (k) {
            if (srv->n_origins == MAX_ORIGINS)
                return sc_error_set(err, SC_EINVAL, "cors-origins: more than %d origins", MAX_ORIGINS);
            if (!(srv->origins[srv->n_origins] = strndup(p, k)))
                return sc_error_set(err, SC_ENOMEM, "out of memory");
            srv->n_origins++;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return SC_OK;
}

/* libmicrohttpd's memory per connection: room for a head of max-header
 * and the target, so that the handler refuses them with a JSON answer;
 * past it libmicrohttpd answers 431 itself, with a plain body. */
static size_t mhd_memory(const struct daemon_config *cfg)
{
    return 2 * (size_t)cfg->max_header + 4 * HTTP_HEAD_MAX_TARGET;
}

int server_start(struct svc *s, const struct daemon_config *cfg, struct server **out,
                 uint16_t *port, struct sc_error *err)
{
    struct server *srv = calloc(1, sizeof *srv);
    struct sockaddr_storage ss;
    int v6 = 0, rc;
    *out = NULL;
    if (!srv)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    srv->svc = s;
    srv->cfg = cfg;
    srv->quiesced = MHD_INVALID_SOCKET;
    if ((rc = parse_listen(cfg->listen, &ss, &v6, err)) || (rc = parse_origins(srv, cfg->cors_origins, err))) {
        server_free(srv);
        return rc;
    }
    struct conn_guard_limits lim = {(double)cfg->head_timeout, (double)cfg->min_body_rate,
                                    (double)cfg->head_timeout, (size_t)cfg->max_connections,
                                    (size_t)cfg->max_connections_per_client};
    if ((rc = conn_guard_new(&lim, &srv->guard, err)) ||
        (rc = workers_start((unsigned)cfg->heavy_requests, (size_t)cfg->heavy_queue, (size_t)cfg->max_uploads,
                            (int)cfg->heavy_nice, &srv->pool, err))) {
        server_free(srv);
        return rc;
    }
    s->pool = srv->pool; /* its counts, for /metrics */
    /* poll(), not epoll: libmicrohttpd 0.9.75's MHD_quiesce_daemon() races
     * with its epoll workers over the listening socket and can abort */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (v6)
        flags |= MHD_USE_IPv6;
    srv->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
        /* the guard keeps max-connections by closing slow ones: room above
         * it for the connections that do that */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections + 64u,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->request_timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, mhd_memory(cfg),
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 512u,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, srv,
        MHD_OPTION_URI_LOG_CALLBACK, on_target, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_END);
    if (!srv->d) {
        rc = sc_error_set(err, SC_EIO, "cannot listen on %s (in use? see the log)", cfg->listen);
        server_free(srv);
        return rc;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : 0;
    *out = srv;
    return SC_OK;
}

/* Wait until no request is in flight or the monotonic deadline passes. */
static long wait_requests(struct server *srv, double deadline)
{
    while (atomic_load(&srv->svc->in_flight) > 0 && metrics_clock() < deadline) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&srv->svc->in_flight);
}

int server_drain(struct server *srv, double timeout_s)
{
    atomic_store(&srv->svc->draining, 1);
    /* shut down, not closed: a worker thread may still poll it until
     * MHD_stop_daemon (microhttpd.h), and its number must not be reused
     * under it; shut down, new connections are refused */
    srv->quiesced = MHD_quiesce_daemon(srv->d);
    if (srv->quiesced != MHD_INVALID_SOCKET)
        shutdown(srv->quiesced, SHUT_RDWR);
    long left = wait_requests(srv, metrics_clock() + timeout_s);
    if (left) {
        long running, queued;
        workers_counts(srv->pool, &running, &queued);
        log_warn("http", "event=drain_timeout requests_left=%ld computing=%ld queued=%ld msg=\"cancelled\"", left,
                 running, queued);
        /* their loops stop at their next check; each is answered 503 */
        workers_cancel(srv->pool);
    }
    /* Neither a suspended connection nor a worker still inside
     * MHD_resume_connection (its answer may be out already) may meet
     * MHD_stop_daemon, which frees what they use: the exit takes them. */
    if (!workers_wait_idle(srv->pool, SERVER_CANCEL_GRACE_S)) {
        log_error("http", "event=cancel_timeout msg=\"work still runs %.0f s after it was cancelled\"",
                  SERVER_CANCEL_GRACE_S);
        return 0;
    }
    if (left)
        wait_requests(srv, metrics_clock() + SERVER_CANCEL_GRACE_S); /* their answers go out */
    MHD_stop_daemon(srv->d);
    srv->d = NULL;
    log_info("http", "event=stopped");
    return 1;
}

void server_free(struct server *srv)
{
    if (!srv)
        return;
    if (srv->d)
        MHD_stop_daemon(srv->d);
    if (srv->quiesced != MHD_INVALID_SOCKET)
        close(srv->quiesced);
    if (srv->pool)
        srv->svc->pool = NULL;
    workers_free(srv->pool);
    conn_guard_free(srv->guard);
    for (size_t i = 0; i < srv->n_origins; i++)
        free(srv->origins[i]);
    free(srv);
}
