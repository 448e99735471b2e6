/* daemon/h_models.c: models: build requests, status, deletion, and the
 * queries answered from a built model (api/ops.def). */
#include "daemon/h_models.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/ab_json.h"
#include "api/encode.h"
#include "api/fleet_json.h"
#include "api/job_cadence.h"
#include "api/json_reply.h"
#include "api/diff_json.h"
#include "api/opportunity_json.h"
#include "api/page.h"
#include "api/request.h"
#include "api/ledger.h"
#include "api/whatif_json.h"
#include "daemon/blobs.h"
#include "daemon/build_queue.h"
#include "daemon/builder.h"
#include "daemon/admission.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/digest.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/store.h"
#include "daemon/store_pool.h"
#include "model/ab.h"
#include "model/diff.h"
#include "estimator/spec/job_config.h"
#include "estimator/model_open.h"
#include "estimator/whatif/whatif.h"
#include "estimator/whatif/whatif_size.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/opportunity.h"
#include "model/replay.h"
#include "daemon/dispatch.h"
#include "daemon/h_jobs.h"
#include "daemon/h_shared.h"
#include "common/banned.h"

/* Progress for the reply: 1 when ready, the builder's figure while
 * building, and whether the build still waits for a worker or memory. */
static void fill_progress(struct svc *s, struct api_model *m)
{
    double f = 0;
    int queued = 0;
    if (m->status == API_MODEL_BUILDING)
        m->progress = builder_progress(s->builder, m->id, &f, &queued) ? f : 0;
    else if (m->status != API_MODEL_INTERRUPTED) /* which keeps the progress it had made */
        m->progress = m->status == API_MODEL_READY ? 1 : 0;
    m->queued = queued;
}

/* Delete a model: its row and pins, its cached copy, its build if one runs
 * here (another replica's stops when it finds its lease gone), then the
 * blob files nothing else names. blob_mu keeps uploads from reusing a blob
 * between the commit and the unlink; publish_mu keeps a finishing build
 * from caching the model after it is gone. */
static int delete_model(struct svc *s, const char *id, struct store_names *freed,
                        struct sc_error *err)
{
    int rc;
    pthread_mutex_lock(&s->blob_mu);
    pthread_mutex_lock(&s->publish_mu);
    rc = store_model_delete(s->store, id, freed, err);
    if (rc == SC_ENOSPC && blob_reserve_release(s->blobs)) { /* a full disk: what the reserve is for */
        store_names_release(freed);
        rc = store_model_delete(s->store, id, freed, err);
    }
    if (rc == SC_OK) {
        cache_remove(s->cache, id);
        builder_cancel(s->builder, id);
    }
    pthread_mutex_unlock(&s->publish_mu);
    if (rc == SC_OK) {
        h_remove_blobs(s, freed);
        blob_reserve_keep(s->blobs);
    }
    pthread_mutex_unlock(&s->blob_mu);
    return rc;
}

/* 202 with model id as it stands now, and its Location. */
static void reply_accepted(struct svc *s, const char *id, struct api_reply *r)
{
    struct api_model made;
    struct sc_error err;
    if (store_model_get(s->store, id, &made, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    fill_progress(s, &made);
    if (api_reply_model_accepted(r, &made) == SC_OK)
        snprintf(r->location, sizeof r->location, "/v1/models/%s", made.id);
    api_model_release(&made);
}

void h_model_create(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct api_build_req req;
    struct api_model m;
    struct model_graph_opts go;
    struct sc_error err;
    char rnd[24];
    int rc;

    if (api_decode_build(q->body, q->body_len, &lim, &req, r))
        return;
    model_graph_opts_default(&go);
    if (req.steps[0] && model_graph_parse_steps(req.steps, &go, &err)) {
        api_fail(r, API_E_INVALID_JSON, "steps: %s", err.msg);
        return;
    }
    memset(&m, 0, sizeof m);
    if (digest_random_hex(8, rnd, sizeof rnd, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    snprintf(m.id, sizeof m.id, "m-%s", rnd);
    snprintf(m.job, sizeof m.job, "%s", q->params.job);
    snprintf(m.version, sizeof m.version, "%s", STEPCAST_VERSION);
    m.step_marker = req.step_marker[0] ? req.step_marker : NULL;
    m.steps = req.steps[0] ? req.steps : NULL;
    m.fold = req.fold;
    if ((rc = store_model_create(s->store, &m, &err))) {
        api_fail_status(r, &err, rc == SC_EINVAL ? API_E_CONFLICT : API_E_INTERNAL);
        return;
    }
    if (builder_submit(s->builder, m.id, &err)) {
        /* its pins may hold the last reference to a blob a rank replaced since */
        struct store_names freed = {0};
        delete_model(s, m.id, &freed, NULL);
        store_names_release(&freed);
        api_fail(r, API_E_BUSY, "%s", err.msg);
        return;
    }
    log_info("build", "model=%s job=%s event=queued by=%s", m.id, m.job, q->caller.id);
    reply_accepted(s, m.id, r);
}

/* POST /v1/models/{id}/resume: an interrupted model back in the build
 * queue (202), built again from the start; 409 for a model in any other
 * state, 429 when max-queued-builds are queued (it stays interrupted). */
void h_model_resume(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_model m;
    struct sc_error err;
    int rc;
    if (store_model_get(s->store, q->params.id, &m, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (m.status != API_MODEL_INTERRUPTED)
        rc = api_fail(r, API_E_CONFLICT, "model '%s' is %s: only an interrupted model resumes", m.id,
                      api_model_status_name(m.status));
    else if ((rc = bq_resume(s->store, m.id, &err)) < 0 || rc == 0)
        rc = rc ? api_fail_status(r, &err, API_E_INTERNAL)
                : api_fail(r, API_E_CONFLICT, "model '%s' is no longer interrupted", m.id);
    else if ((rc = builder_submit(s->builder, m.id, &err))) {
        struct sc_error e;
        if (bq_unresume(s->store, &m, &e))
            log_warn("build", "model=%s event=not_interrupted_again msg=\"%s\"", m.id, e.msg);
        api_fail(r, API_E_BUSY, "%s", err.msg);
    } else {
        log_info("build", "model=%s job=%s event=resumed by=%s", m.id, m.job, q->caller.id);
        reply_accepted(s, m.id, r);
    }
    api_model_release(&m);
}

void h_models_list(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *job = api_query_str(&q->query, "job");
    struct api_list_meta m = {0};
    struct api_model *v;
    struct api_page pg;
    struct sc_error err;
    char next[API_PAGE_CURSOR_MAX];
    size_t n;
    int more;
    if (h_page(q, &pg, r))
        return;
    if (store_model_list(s->store, job, &pg, &v, &n, &more, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    for (size_t i = 0; i < n; i++)
        fill_progress(s, &v[i]);
    if (more) {
        api_page_cursor(v[n - 1].created_ns, v[n - 1].id, next);
        m.next_cursor = next;
    }
    api_reply_models(r, v, n, &m);
    h_page_skipped("models", &m);
    api_models_free(v, n);
}

void h_model_get(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_model m;
    struct sc_error err;
    if (store_model_get(s->store, q->params.id, &m, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    fill_progress(s, &m);
    api_reply_model(r, 200, &m);
    api_model_release(&m);
}

void h_model_delete(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct store_names freed = {0};
    struct sc_error err;
    if (delete_model(s, q->params.id, &freed, &err))
        api_fail_status(r, &err, API_E_INTERNAL);
    else
        api_reply_deleted(r, "model", q->params.id, 1, freed.n);
    store_names_release(&freed);
}

/* A replay, critical path, timeline or Chakra export of the model: the query's scales
 * and rank, the memo, the replay, the answer rendered. */
static void answer_replay(struct built_model *m, const struct svc_request *q, struct api_reply *r,
                          int *memo_hit)
{
    struct model_replay_opts ro;
    struct model_replay *rp = NULL;
    struct sc_error err;
    char key[BUILT_MEMO_KEY_MAX];
    long rank = q->op == API_OP_TIMELINE ? (long)api_query_int(&q->query, "rank") : -1;
    const char *prefix = q->op == API_OP_CHAKRA ? api_query_str(&q->query, "prefix") : NULL;
    size_t k = (size_t)snprintf(key, sizeof key, "%s", api_op_info(q->op)->id);

    model_replay_opts_default(&ro);
    ro.critical_path = q->op == API_OP_CRITICAL_PATH;
    ro.step_unexplained = q->op == API_OP_REPLAY; /* what only the replay's answer holds */
    ro.keep_unexplained = (int)api_query_int(&q->query, "keep_unexplained");
    for (size_t i = 0; i < q->n_query; i++) {
        if (k < sizeof key)
            k += (size_t)snprintf(key + k, sizeof key - k, "&%s=%s", q->qkey[i], q->qval[i]);
        if (!strcmp(q->qkey[i], "scale") && model_replay_parse_scale(q->qval[i], &ro, &err)) {
            api_fail(r, API_E_BAD_REQUEST, "scale: %s", err.msg);
            return;
        }
    }
    if (k >= sizeof key) {
        api_fail(r, API_E_BAD_REQUEST, "the query is too long");
        return;
    }
    if ((*memo_hit = built_memo_get(m, key, r)) || svc_defer())
        return;
    if (est_model_replay(built_model_opened(m), &ro, &rp, &err)) {
        api_fail_status(r, &err, API_E_BAD_REQUEST);
        return;
    }
    int rc = q->op == API_OP_CHAKRA ? api_reply_chakra(r, est_model_graph(built_model_opened(m)), rp, &ro, prefix)
                                    : api_reply_replay(r, q->op, rp, (int)rank);
    model_replay_free(rp);
    if (rc == SC_OK)
        built_memo_put(m, key, r);
}

int h_ready_model(struct svc *s, const char *id, struct cache_entry **e, struct api_reply *r)
{
    struct sc_error err;
    int hit = 0;
    int rc = cache_get(s->cache, id, NULL, NULL, e, &hit, &err);
    if (rc == SC_ENOTFOUND && svc_defer())
        return H_DEFERRED;
    if (rc == SC_ENOTFOUND)
        rc = cache_get(s->cache, id, builder_load_ready, s->builder, e, &hit, &err);
    if (rc == SC_EEXIST)
        return api_fail(r, API_E_NOT_READY, "%s", err.msg);
    if (rc)
        return api_fail_status(r, &err, API_E_INTERNAL);
    return SC_OK;
}

/* What kept opportunities are keyed by: the version that found them, and
 * the document's form (2: with actionable_saving_ms). */
#define OPPORTUNITIES_KEPT_AS STEPCAST_VERSION "/2"

/* Model id's opportunities as this version found them and kept in the
 * store, into r (200); 0 when none was kept. */
static int kept_opportunities(struct svc *s, const char *id, struct api_reply *r)
{
    char *doc;
    struct sc_error err;
    if (store_model_opportunities(s->store, id, OPPORTUNITIES_KEPT_AS, &doc, &err))
        return 0;
    api_reply_take(r, 200, "application/json", doc, strlen(doc));
    return 1;
}

/* The model's opportunities into r (from its memo when asked before); once
 * found they are kept in the store too, for ranking the fleet without
 * loading the model again (a failure to keep them only costs that). */
static void answer_opportunities(struct svc *s, const char *id, struct built_model *m, struct api_reply *r,
                                 int *memo_hit)
{
    const char *key = api_op_info(API_OP_OPPORTUNITIES)->id;
    struct model_opportunities ops;
    struct sc_error err;
    if ((*memo_hit = built_memo_get(m, key, r)) || svc_defer())
        return;
    if (est_model_opportunities(built_model_opened(m), &ops, &err)) {
        api_fail_status(r, &err, API_E_UNPROCESSABLE);
        return;
    }
    int rc = api_reply_json(r, 200, api_opportunities_json(&ops));
    model_opportunities_release(&ops);
    if (rc != SC_OK)
        return;
    built_memo_put(m, key, r);
    if (store_model_keep_opportunities(s->store, id, OPPORTUNITIES_KEPT_AS, r->body, &err))
        log_warn("opportunities", "model=%s event=not_kept msg=\"%s\"", id, err.msg);
}

void h_model_query(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct cache_entry *e;
    int memo_hit = 0;
    if (q->op == API_OP_OPPORTUNITIES && kept_opportunities(s, q->params.id, r)) {
        metrics_memo(s->metrics, 1);
        return;
    }
    if (h_ready_model(s, q->params.id, &e, r))
        return;
    if (q->op == API_OP_OPPORTUNITIES)
        answer_opportunities(s, q->params.id, cache_value(e), r, &memo_hit);
    else
        answer_replay(cache_value(e), q, r, &memo_hit);
    cache_release(s->cache, e);
    if (r->status) /* answered here, not deferred */
        metrics_memo(s->metrics, memo_hit);
}

/* This model (A) against {"other":ID} (B); memoised with A under B's id. */
void h_model_diff(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct cache_entry *ea = NULL, *eb = NULL;
    char other[API_ID_MAX], key[BUILT_MEMO_KEY_MAX];
    struct model_diff d;
    struct sc_error err;
    int memo_hit = 0;
    if (api_decode_diff(q->body, q->body_len, &lim, other, r) || h_ready_model(s, q->params.id, &ea, r))
        return;
    snprintf(key, sizeof key, "%s&other=%s", api_op_info(API_OP_DIFF)->id, other);
    if (h_ready_model(s, other, &eb, r) == SC_OK && (memo_hit = built_memo_get(cache_value(ea), key, r)) == 0 &&
        !svc_defer()) {
        const struct built_model *a = cache_value(ea), *b = cache_value(eb);
        if (est_model_diff(built_model_opened(a), built_model_opened(b), &d, &err)) {
            api_fail_status(r, &err, API_E_UNPROCESSABLE);
        } else {
            if (api_reply_json(r, 200, api_diff_json(&d)) == SC_OK)
                built_memo_put(cache_value(ea), key, r);
            model_diff_release(&d);
        }
    }
    if (eb)
        cache_release(s->cache, eb);
    cache_release(s->cache, ea);
    if (r->status)
        metrics_memo(s->metrics, memo_hit);
}

int h_ab_answer(struct svc *s, const char *a_id, const char *b_id, const struct model_ab_opts *o,
                struct api_reply *r)
{
    struct cache_entry *ea = NULL, *eb = NULL;
    char key[BUILT_MEMO_KEY_MAX];
    struct model_ab ab;
    struct sc_error err;
    int memo_hit = 0, rc;
    if ((rc = h_ready_model(s, a_id, &ea, r)))
        return rc;
    snprintf(key, sizeof key, "%s&b=%s&min=%.17g&refutations=%d&seed=%lu", api_op_info(API_OP_AB)->id, b_id,
             o->min_effect_pct, o->refutations < 0 || o->refutations > 5 ? 5 : o->refutations, o->seed);
    if ((rc = h_ready_model(s, b_id, &eb, r)) == SC_OK && (memo_hit = built_memo_get(cache_value(ea), key, r)) == 0 &&
        svc_defer()) {
        rc = H_DEFERRED;
    } else if (rc == SC_OK && !memo_hit) {
        const struct built_model *a = cache_value(ea), *b = cache_value(eb);
        if (est_model_ab(built_model_opened(a), built_model_opened(b), o, &ab, &err)) {
            rc = api_fail_status(r, &err, API_E_UNPROCESSABLE);
        } else if ((rc = api_reply_json(r, 200, api_ab_json(&ab))) == SC_OK) {
            built_memo_put(cache_value(ea), key, r);
        }
        model_ab_release(&ab);
    }
    if (eb)
        cache_release(s->cache, eb);
    cache_release(s->cache, ea);
    if (r->status)
        metrics_memo(s->metrics, memo_hit);
    return rc;
}

/* POST /v1/ab. */
void h_ab(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct api_ab_req req;
    if (api_decode_ab(q->body, q->body_len, &lim, &req, r) == SC_OK) {
        struct model_ab_opts o = {req.min_effect_pct, req.refutations, req.seed};
        h_ab_answer(s, req.a, req.b, &o, r);
    }
}

/* Ready model id's opportunities document (from the store where kept,
 * else from its memo or found now), or NULL. */
static json_t *ready_opportunities(struct svc *s, const char *id)
{
    struct cache_entry *e;
    struct api_reply one = {0};
    int memo_hit = 0;
    json_t *doc = NULL;
    if (kept_opportunities(s, id, &one)) { /* the model need not be loaded */
        memo_hit = 1;
    } else {
        if (h_ready_model(s, id, &e, &one)) {
            api_reply_release(&one);
            return NULL;
        }
        answer_opportunities(s, id, cache_value(e), &one, &memo_hit);
        cache_release(s->cache, e);
    }
    if (one.status)
        metrics_memo(s->metrics, memo_hit);
    if (one.status == 200)
        doc = json_loadb(one.body, one.len, 0, NULL);
    api_reply_release(&one);
    return doc;
}

/* The page of a ranked list (api/page.h): ?limit or ?top (its older
 * name), ?cursor; on failure the reply in r. */
static int ranked_page(struct svc_request *q, struct api_page *pg, struct api_reply *r)
{
    int top = api_query_given(&q->query, "top");
    if (top && api_query_given(&q->query, "limit"))
        return api_fail(r, API_E_BAD_REQUEST, "give limit or top (its older name), not both");
    return api_page_parse((size_t)api_query_int(&q->query, top ? "top" : "limit"), api_query_str(&q->query, "cursor"),
                          pg, r);
}

/* Every ready model's opportunities, ranked by the GPU time per step the
 * best one wins back. */
void h_fleet_opportunities(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_page pg;
    struct api_model *v = NULL;
    struct sc_error err;
    size_t n = 0, k = 0, skipped = 0;
    if (ranked_page(q, &pg, r))
        return;
    if (store_model_list(s->store, NULL, NULL, &v, &n, NULL, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    const char **ids = calloc(n ? n : 1, sizeof *ids), **jobs = calloc(n ? n : 1, sizeof *jobs);
    json_t **docs = calloc(n ? n : 1, sizeof *docs);
    if (!ids || !jobs || !docs) {
        api_fail(r, API_E_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].status != API_MODEL_READY)
            continue;
        if (!(docs[k] = ready_opportunities(s, v[i].id))) {
            skipped++; /* ready, and its opportunities cannot be read */
            continue;
        }
        ids[k] = v[i].id;
        jobs[k++] = v[i].job;
    }
    /* rows left out have no rank: counted on the first page */
    api_reply_json(r, 200, api_fleet_json(ids, jobs, docs, k, &pg, pg.has_after ? 0 : skipped));
    h_page_skipped("opportunities", &(struct api_list_meta){NULL, skipped});
out:
    for (size_t i = 0; docs && i < k; i++)
        json_decref(docs[i]);
    free(docs);
    free(ids);
    free(jobs);
    api_models_free(v, n);
}

/* "YYYY-MM-DD" as nanoseconds since the epoch at 00:00 UTC; -1 when it is
 * not one (days from the civil date, proleptic Gregorian). */
static int64_t day_ns(const char *s)
{
    long y, m, d;
    char *end;
    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return -1;
    y = strtol(s, &end, 10);
    if (end != s + 4 || (m = strtol(s + 5, &end, 10)) < 1 || m > 12 || end != s + 7 ||
        (d = strtol(s + 8, &end, 10)) < 1 || d > 31 || *end || y < 1970 || y > 9999)
        return -1;
    y -= m <= 2;
    long era = y / 400, yoe = y - era * 400, doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1,
         doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (int64_t)(era * 146097 + doe - 719468) * 86400 * 1000000000;
}

/* Whether description's tags hold key:value (tag "key:value"). */
static int has_tag(const char *description, const char *tag)
{
    const char *colon = strchr(tag, ':');
    json_t *doc = description ? json_loads(description, 0, NULL) : NULL;
    char key[80];
    int yes = 0;
    if (colon && (size_t)(colon - tag) < sizeof key) {
        snprintf(key, sizeof key, "%.*s", (int)(colon - tag), tag);
        const char *v = json_string_value(json_object_get(json_object_get(doc, "tags"), key));
        yes = v && !strcmp(v, colon + 1);
    }
    json_decref(doc);
    return yes;
}

/* GET /v1/fleet: each job's newest ready model (built in the window),
 * ranked by wasted GPU-hours a day (api/fleet_json.h). */
void h_fleet(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *tag = api_query_str(&q->query, "tag"), *since_s = api_query_str(&q->query, "since"),
               *until_s = api_query_str(&q->query, "until");
    int64_t since = since_s ? day_ns(since_s) : 0, until = until_s ? day_ns(until_s) : INT64_MAX;
    struct api_job *jobs = NULL;
    struct api_fleet_job *rows = NULL;
    struct api_model *models = NULL;
    struct sc_error err;
    size_t n_jobs = 0, k = 0, skipped = 0;
    struct api_page pg;
    if (ranked_page(q, &pg, r))
        return;
    if (since < 0 || until < 0 || (tag && !strchr(tag, ':')))
        return (void)api_fail(r, API_E_BAD_REQUEST,
                              "since and until are dates (YYYY-MM-DD, UTC; until excluded); tag is KEY:VALUE");
    if (store_job_list(s->store, NULL, &jobs, &n_jobs, NULL, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (!(rows = calloc(n_jobs ? n_jobs : 1, sizeof *rows)) ||
        !(models = calloc(n_jobs ? n_jobs : 1, sizeof *models))) {
        api_fail(r, API_E_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n_jobs; i++) {
        struct api_model *v = NULL;
        size_t n = 0, best = (size_t)-1;
        if ((tag && !has_tag(jobs[i].description, tag)) || store_model_list(s->store, jobs[i].id, NULL, &v, &n, NULL, &err))
            continue;
        for (size_t j = 0; j < n; j++)
            if (v[j].status == API_MODEL_READY && v[j].created_ns >= since && v[j].created_ns < until &&
                (best == (size_t)-1 || v[j].created_ns > v[best].created_ns))
                best = j;
        json_t *doc = best == (size_t)-1 ? NULL : ready_opportunities(s, v[best].id);
        if (doc && store_model_get(s->store, v[best].id, &models[k], &err) == SC_OK) {
            rows[k] = (struct api_fleet_job){jobs[i].id, models[k].id, doc, jobs[i].description, models[k].summary};
            k++;
        } else {
            skipped += best != (size_t)-1; /* its newest ready model cannot be read */
            json_decref(doc);
        }
        api_models_free(v, n);
    }
    api_reply_json(r, 200, api_fleet_waste_json(rows, k, &pg, pg.has_after ? 0 : skipped));
    h_page_skipped("fleet", &(struct api_list_meta){NULL, skipped});
out:
    for (size_t i = 0; rows && i < k; i++) {
        json_decref((json_t *)rows[i].opportunities);
        api_model_release(&models[i]);
    }
    free(rows);
    free(models);
    api_jobs_free(jobs, n_jobs);
}
/* The job description of model id's job (its stored config); on failure
 * the reply in r and its status. */
static int model_job_config(struct svc *s, const char *id, struct job_config *cfg, struct api_reply *r)
{
    struct api_model model;
    struct api_job job;
    struct sc_error err;
    int rc;
    memset(&model, 0, sizeof model);
    memset(&job, 0, sizeof job);
    if ((rc = store_model_get(s->store, id, &model, &err)))
        return api_fail_status(r, &err, API_E_INTERNAL);
    rc = store_job_get(s->store, model.job, &job, &err);
    api_model_release(&model);
    if (rc)
        return api_fail_status(r, &err, API_E_INTERNAL);
    rc = api_job_config_from_job(job.description, cfg, &err);
    api_job_release(&job);
    return rc ? api_fail_status(r, &err, API_E_UNPROCESSABLE) : SC_OK;
}

/* Run the what-if, on the model's graph and the notes taken of its traces
 * when it was built (no trace is read again); on failure the reply: 400
 * naming a change the set asks for, 422 for the job's config against its
 * traces. */
static int run_whatif(struct svc *s, struct cache_entry *e, const struct job_config *cfg,
                      const struct job_config *set, struct whatif_result *res, struct api_reply *r)
{
    const struct est_traced_model *m = built_model_opened(cache_value(e));
    struct sc_error err;
    struct whatif_size size;
    char what[160];
    int rc = SC_OK;
    /* admitted first by its predicted size (whatif_size.h): 413 when it
     * can never fit the memory budget, 429 while others hold it */
    whatif_size_predict(est_model_graph(m)->n_tasks, cfg, set, &size);
    uint64_t need = admission_bytes(size.bytes);
    snprintf(what, sizeof what, "the what-if (%.0f tasks, %.4g times the traced graph's)", size.tasks, size.growth);
    if ((rc = h_admit(s, need, what, r)))
        return rc;
    if (est_model_whatif(m, cfg, set, res, &err))
        rc = api_fail_status(r, &err, whatif_error_names_set(&err) ? API_E_INVALID_JSON : API_E_UNPROCESSABLE);
    admission_release(s->admission, need);
    return rc;
}

int h_model_whatif_ready(struct svc *s, const char *id, struct job_config *cfg, struct cache_entry **e,
                         struct api_reply *r)
{
    int rc = model_job_config(s, id, cfg, r);
    return rc ? rc : h_ready_model(s, id, e, r);
}

int h_whatif_step_ms(struct svc *s, const char *id, const struct job_config *set, double *ms, struct api_reply *r)
{
    struct job_config cfg;
    struct cache_entry *e;
    struct whatif_result res;
    int rc = h_model_whatif_ready(s, id, &cfg, &e, r);
    if (rc)
        return rc;
    if ((rc = run_whatif(s, e, &cfg, set, &res, r)) == SC_OK) {
        *ms = res.step_ms;
        whatif_release(&res);
    }
    cache_release(s->cache, e);
    return rc;
}

/* The price of a GPU-hour model id's job gives (its description's
 * gpu_hour_usd), or -1. */
static double job_price(struct svc *s, const char *id)
{
    struct api_model model;
    struct api_job job;
    struct api_job_cadence c;
    struct sc_error err;
    memset(&job, 0, sizeof job);
    if (store_model_get(s->store, id, &model, &err))
        return -1;
    store_job_get(s->store, model.job, &job, &err);
    api_job_cadence_of(job.description, NULL, 0, &c);
    api_model_release(&model);
    api_job_release(&job);
    return c.gpu_hour_usd;
}

/* The what-if of a built model: the set, the job's description, the
 * memo (keyed by both and the job's price), the transforms and their
 * replay. */
void h_model_whatif(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct job_config set, cfg;
    struct cache_entry *e;
    char key[BUILT_MEMO_KEY_MAX];
    int memo_hit = 0;
    if (api_decode_whatif(q->body, q->body_len, &set, r) || h_model_whatif_ready(s, q->params.id, &cfg, &e, r))
        return;
    char *set_text = spec_job_config_json(&set), *cfg_text = spec_job_config_json(&cfg);
    double price = job_price(s, q->params.id);
    int keyed = set_text && cfg_text &&
                (size_t)snprintf(key, sizeof key, "whatif?set=%s&config=%s&ledger=%ld&price=%.17g", set_text,
                                 cfg_text, (long)atomic_load(&s->ledger_changes), price) < sizeof key;
    free(set_text);
    free(cfg_text);
    struct built_model *m = cache_value(e);
    if ((!keyed || !(memo_hit = built_memo_get(m, key, r))) && !svc_defer()) {
        struct whatif_result res;
        if (run_whatif(s, e, &cfg, &set, &res, r) == SC_OK) {
            struct ledger_band band;
            h_ledger_band(s, API_LEDGER_WHATIF, &band);
            int rc = api_reply_whatif(r, &res, &band, price);
            whatif_release(&res);
            if (rc == SC_OK && keyed)
                built_memo_put(m, key, r);
        }
    }
    cache_release(s->cache, e);
    if (r->status)
        metrics_memo(s->metrics, memo_hit);
}
