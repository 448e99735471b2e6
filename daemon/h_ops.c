/* daemon/h_ops.c: tokens, /healthz, /metrics and the OpenAPI document
 * (api/ops.def). */
#include "daemon/h_shared.h"

#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "daemon/auth.h"
#include "daemon/blobs.h"
#include "daemon/builder.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/store.h"
#include "daemon/store_blob.h"
#include "daemon/store_pool.h"
#include "daemon/store_schema.h"
#include "daemon/workers.h"
#include "daemon/dispatch.h"
#include "common/banned.h"

static double uptime(const struct svc *s)
{
    return metrics_clock() - s->started;
}

void h_token_create(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct api_token_req req;
    struct api_token tok;
    struct sc_error err;
    char secret[AUTH_SECRET_MAX];
    if (api_decode_token(q->body, q->body_len, &lim, &req, r))
        return;
    if (auth_token_create(s->store, req.scope, req.name, &tok, secret, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    log_info("auth", "event=token_created id=%s scope=%s by=%s", tok.id, api_scope_name(tok.scope),
             q->caller.id);
    api_reply_token(r, 201, &tok, secret);
    memset(secret, 0, sizeof secret);
}

void h_tokens_list(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_list_meta m = {0};
    struct api_token *v;
    struct api_page pg;
    struct sc_error err;
    char next[API_PAGE_CURSOR_MAX];
    size_t n;
    int more;
    if (h_page(q, &pg, r))
        return;
    if (store_token_list(s->store, &pg, &v, &n, &more, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (more) {
        api_page_cursor(v[n - 1].created_ns, v[n - 1].id, next);
        m.next_cursor = next;
    }
    api_reply_tokens(r, v, n, &m);
    h_page_skipped("tokens", &m);
    free(v);
}

void h_token_delete(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_token tok;
    struct sc_error err;
    if (store_token_revoke(s->store, q->params.id, &tok, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    log_info("auth", "event=token_revoked id=%s by=%s", tok.id, q->caller.id);
    api_reply_token(r, 200, &tok, NULL);
}

void h_healthz(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_health h = {0};
    struct sc_error err;
    int draining = atomic_load(&s->draining);
    (void)q;
    h.store = store_is_postgresql(s->store) ? "postgresql" : "sqlite";
    h.store_reachable = store_ping(s->store, &err) == SC_OK;
    if (!h.store_reachable) {
        char qm[600];
        log_warn("store", "event=unreachable msg=\"%s\"", log_quote(err.msg, qm, sizeof qm));
    }
    h.status = draining ? "draining" : h.store_reachable ? "ok" : "store_unreachable";
    h.uptime_s = uptime(s);
    h.schema = STORE_SCHEMA_VERSION;
    builder_counts(s->builder, &h.builds_running, &h.builds_queued);
    h.disk_full = blob_store_disk_full(s->blobs, &h.disk_free_bytes) == 1;
    api_reply_health(r, draining || !h.store_reachable ? 503 : 200, &h);
}

void h_metrics(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct metrics_gauges g = {0};
    struct store_totals tot;
    struct cache_stats cs;
    struct sc_error err;
    size_t len = 0;
    char *text = NULL;
    (void)q;
    if (store_totals(s->store, &tot, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    g.jobs = tot.jobs;
    g.models = tot.models;
    g.blobs = tot.blobs;
    g.blob_bytes = tot.blob_bytes;
    cache_stats(s->cache, &cs);
    g.cache_entries = cs.entries;
    g.cache_bytes = cs.bytes;
    g.cache_capacity = cs.capacity;
    g.cache_hits = cs.hits;
    g.cache_misses = cs.misses;
    g.cache_evictions = cs.evictions;
    g.trace_reads = built_trace_reads();
    builder_counts(s->builder, &g.builds_running, &g.builds_queued);
    if (s->pool)
        workers_counts(s->pool, &g.heavy_running, &g.heavy_queued);
    g.uploads_in_progress = atomic_load(&s->uploads);
    g.requests_in_flight = atomic_load(&s->in_flight);
    g.uptime_s = uptime(s);
    if (metrics_render(s->metrics, &g, &text, &len, &err))
        api_fail_status(r, &err, API_E_INTERNAL);
    else
        api_reply_take(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

void h_openapi(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    char *copy = malloc(s->openapi_len + 1);
    (void)q;
    if (!copy) {
        api_fail(r, API_E_UNAVAILABLE, "out of memory");
        return;
    }
    memcpy(copy, s->openapi, s->openapi_len + 1);
    api_reply_take(r, 200, "application/json", copy, s->openapi_len);
}
