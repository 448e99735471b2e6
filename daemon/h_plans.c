/* daemon/h_plans.c: the planner over HTTP (api/ops.def).
 *
 * POST /v1/plans takes {"spec","gpus","up_to","top","objective"}; the spec
 * is a planning template whose cluster.profile names a calibration here.
 * A space of at most H_PLAN_INLINE_SPACE combinations is planned at once,
 * on a worker (200 with the plan); a larger one in the background (202
 * {"id"}), over EST_PLAN_MAX_SPACE it is 422 with its size. A background
 * plan is in the catalog, `running`, before the 202 is sent, its progress
 * saved as it goes; one a crash or a shutdown stopped reads `interrupted`
 * with that progress, and POST /v1/plans/{id}/resume runs it again from
 * its stored request under the same id, as does a POST of the same request. GET /v1/plans/{id} answers
 * {"id","state":"running","progress":{"done","total"}} while it runs, then
 * the plan document with "id" and "state":"done" (or "failed" with its
 * error, or "cancelled"); DELETE cancels a running plan, or forgets a
 * finished one.
 *
 * POST /v1/models/{id}/plan takes {"gpus","up_to","top","objective"} and
 * plans from the built model instead of a spec (estimator/whatif/whatif_plan.h):
 * the same document, states and store; 422 when the model's job has no
 * config or one that lacks what a plan needs. */
#include "daemon/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_reply.h"
#include "api/ledger.h"
#include "api/plan_json.h"
#include "daemon/admission.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/digest.h"
#include "daemon/log.h"
#include "daemon/plans.h"
#include "daemon/h_estimate.h"
#include "daemon/h_models.h"
#include "daemon/h_shared.h"
#include "estimator/model_open.h"
#include "daemon/store.h"
#include "common/banned.h"

/* Spaces this small are planned inside the request; from a model, whose
 * candidates are what-ifs (each a replay of the traced job), fewer. */
#define H_PLAN_INLINE_SPACE 1000
#define H_MODEL_PLAN_INLINE_SPACE 64

/* A plan as its answer: with its id when it is stored, and its progress
 * while it runs or since it was interrupted. */
static void reply_plan(const struct store_plan *p, int stored, unsigned status, struct api_reply *r)
{
    json_t *doc = p->document ? json_loads(p->document, 0, NULL) : json_object();
    if (doc) {
        if (stored)
            json_object_set_new(doc, "id", json_string(p->id));
        json_object_set_new(doc, "state", json_string(p->state));
        if (p->error)
            json_object_set_new(doc, "error", json_string(p->error));
        if (!p->document && (!strcmp(p->state, "running") || !strcmp(p->state, "interrupted")))
            json_object_set_new(doc, "progress", json_pack("{s:I, s:I}", "done", (json_int_t)p->done, "total",
                                                           (json_int_t)p->total));
        api_reply_json(r, status, doc);
    } else {
        api_fail(r, API_E_INTERNAL, "plan %s: its stored document is not JSON", p->id);
    }
}

/* The stored plan as its answer. */
static void reply_stored(struct svc *s, const char *id, unsigned status, struct api_reply *r)
{
    struct store_plan p;
    struct sc_error err;
    if (store_plan_get(s->store, id, &p, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    reply_plan(&p, 1, status, r);
    store_plan_release(&p);
}

/* A plan's request: its body (the POST's, or an interrupted plan's, kept)
 * and, for a plan from a built model, the model; q is the request asking. */
struct plan_source {
    const struct svc_request *q;
    const char *body;
    size_t len;
    const char *model; /* "" for a plan from a spec */
    const char *resume; /* the interrupted plan run again, or NULL */
};

/* A plan in the background is kept in the catalog: it needs a write token
 * and room under max-stored-per-token. SC_OK, or the reply (403, 413). */
static int may_keep(struct svc *s, const struct svc_request *q, int64_t space, int64_t inline_space,
                    struct api_reply *r)
{
    struct sc_error err;
    if (q->caller.scope < API_SCOPE_WRITE)
        return api_fail(r, API_E_FORBIDDEN,
                        "a plan of %lld configurations runs in the background and is kept, which needs a write "
                        "token; a read token plans up to %lld at once",
                        (long long)space, (long long)inline_space);
    return store_owner_room(s->store, q->caller.id, &err) ? api_fail_status(r, &err, API_E_INTERNAL) : SC_OK;
}

/* The request as kept with a background plan: compact, whatever padding
 * it was sent with (from malloc; NULL when out of memory or not JSON). */
static char *compact_request(const struct plan_source *src)
{
    json_t *doc = json_loadb(src->body, src->len, 0, NULL);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return text;
}

/* Plan req with pe: at once when its space is at most `inline_space`
 * (200, nothing stored), else in the background (202); 422 over
 * EST_PLAN_MAX_SPACE, the hint saying what to fix. A plan resumed runs in
 * the background under its id, and so does a new background request whose
 * body (and model) an interrupted plan has. 1 when a background plan took
 * pe's cache entry. */
static int start_plan(struct svc *s, const struct plan_source *src, const struct est_plan_request *req,
                      struct plans_eval *pe, int64_t inline_space, const char *hint, struct api_reply *r)
{
    struct sc_error err;
    char id[64], rnd[24], *request = NULL;
    int64_t space = plan_space(req);
    int taken = 0, at_once = space <= inline_space && !src->resume;
    if (space > EST_PLAN_MAX_SPACE) {
        api_fail(r, API_E_UNPROCESSABLE, "the plan spans at least %lld configurations, over the limit of %d: %s",
                 (long long)space, EST_PLAN_MAX_SPACE, hint);
        return 0;
    }
    if (!at_once && may_keep(s, src->q, space, inline_space, r))
        return 0;
    if (at_once && svc_defer())
        return 0; /* planned on a worker */
    if (!at_once && !(request = compact_request(src))) {
        api_fail(r, API_E_UNAVAILABLE, "out of memory");
        return 0;
    }
    if (src->resume) {
        snprintf(id, sizeof id, "%s", src->resume);
    } else if (!at_once && store_plan_interrupted(s->store, request, src->model, id, &err) == SC_OK) {
        log_info("plan", "plan=%s event=resumed msg=\"an identical request\"", id); /* runs it again */
    } else if (digest_random_hex(8, rnd, sizeof rnd, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        free(request);
        return 0;
    } else {
        snprintf(id, sizeof id, "p-%s", rnd);
    }
    snprintf(pe->owner, sizeof pe->owner, "%s", src->q->caller.id);
    pe->admission = s->admission;
    if (at_once) {
        struct store_plan done;
        memset(&done, 0, sizeof done);
        if (plans_run(NULL, id, NULL, req, pe, NULL, NULL, &done, &err))
            pe->refused == ADMISSION_BUSY ? api_fail(r, API_E_BUSY, "%s", err.msg)
            : pe->refused == ADMISSION_NEVER ? api_fail(r, API_E_TOO_LARGE, "%s", err.msg)
                                             : api_fail_status(r, &err, API_E_INTERNAL);
        else
            reply_plan(&done, 0, 200, r);
        store_plan_release(&done);
    } else if (plans_start(s->plans, id, request, src->model, req, space, pe, &err)) {
        api_fail(r, err.code == SC_ELIMIT ? API_E_BUSY : err.code == SC_EEXIST ? API_E_CONFLICT
                    : err.code == SC_ENOSPC ? API_E_NO_SPACE : API_E_UNAVAILABLE, "%s", err.msg);
    } else {
        taken = 1;
        snprintf(r->location, sizeof r->location, "/v1/plans/%s", id);
        api_reply_json(r, 202, json_pack("{s:s, s:s, s:I}", "id", id, "state", "running", "space",
                                         (json_int_t)space));
    }
    free(request);
    return taken;
}

/* The bands a plan by the estimator ranks at: the compiled-in ones with
 * the ledger's estimates merged in (api/ledger.h, ledger_bands_merge);
 * the compiled-in ones alone when the ledger cannot be read. */
static int plan_bands(struct svc *s, struct est_bands *out, struct api_reply *r)
{
    struct api_validation *v = NULL;
    struct sc_error err;
    size_t n = 0;
    int rc;
    if (store_validation_list(s->store, NULL, api_ledger_kind_name(API_LEDGER_ESTIMATE), NULL, &v, &n, NULL, &err)) {
        log_warn("plan", "event=ledger_unavailable msg=\"%s\"", err.msg);
        n = 0;
    }
    rc = ledger_bands_merge(v, n, plan_bands_builtin(), out, &err);
    api_validations_free(v, n);
    return rc ? api_fail(r, API_E_UNAVAILABLE, "%s", err.msg) : SC_OK;
}

/* The request's body into *req (and its spec's text into *spec, when
 * asked); on failure the reply in r. */
static int decode_request(struct svc *s, const struct plan_source *src, struct est_plan_request *req, char **spec,
                          struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct sc_error err;
    int rc;
    memset(req, 0, sizeof *req);
    if ((rc = api_json_precheck(src->body, src->len, &lim, r)))
        return rc;
    if (api_plan_request_decode(src->body, src->len, req, spec, &err))
        return api_fail(r, err.code == SC_EPARSE ? API_E_INVALID_JSON : API_E_BAD_REQUEST, "%s", err.msg);
    return SC_OK;
}

static void plan_from_spec(struct svc *s, const struct plan_source *src, struct api_reply *r)
{
    struct est_plan_request req;
    struct plans_eval pe;
    struct h_spec h;
    char *spec = NULL;
    memset(&h, 0, sizeof h);
    memset(&pe, 0, sizeof pe);
    if (decode_request(s, src, &req, &spec, r))
        return;
    if (!h_spec_load(s, spec, strlen(spec), &req.given, &h, r)) {
        req.spec = h.spec;
        pe.est.hw = h.hw;
        pe.est.costs = h.costs;
        if (plan_bands(s, &pe.bands, r) == SC_OK &&
            start_plan(s, src, &req, &pe, H_PLAN_INLINE_SPACE, "fix more of parallel and options in the spec", r))
            memset(&pe, 0, sizeof pe); /* the background plan gives the bands back */
    }
    plans_eval_release(&pe);
    free(spec);
    h_spec_release(&h);
}

static void plan_from_model(struct svc *s, const struct plan_source *src, struct api_reply *r)
{
    struct est_plan_request req;
    struct plans_eval pe;
    struct job_config cfg;
    struct sc_error err;
    memset(&pe, 0, sizeof pe);
    if (decode_request(s, src, &req, NULL, r))
        return;
    /* the planner recovers the job's structure from the model's graph and
     * the notes of its traces (no trace is read again) */
    if (svc_defer() || h_model_whatif_ready(s, src->model, &cfg, &pe.entry, r))
        return;
    pe.cache = s->cache;
    const struct est_traced_model *m = built_model_opened(cache_value(pe.entry));
    pe.graph = est_model_graph(m);
    if (whatif_plan_request(pe.graph, est_model_notes(m), &cfg, &req, &pe.whatif, &err))
        api_fail(r, API_E_UNPROCESSABLE, "%s", err.msg);
    else if (start_plan(s, src, &req, &pe, H_MODEL_PLAN_INLINE_SPACE, "give fewer GPUs", r))
        return; /* the background plan gives both back */
    plans_eval_release(&pe);
}

void h_plan_create(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct plan_source src = {q, q->body, q->body_len, "", NULL};
    plan_from_spec(s, &src, r);
}

void h_model_plan(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct plan_source src = {q, q->body, q->body_len, q->params.id, NULL};
    plan_from_model(s, &src, r);
}

/* POST /v1/plans/{id}/resume: an interrupted plan, run again from its
 * stored request (202); 409 for a plan in any other state. */
void h_plan_resume(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct store_plan p;
    struct sc_error err;
    if (store_plan_get(s->store, q->params.id, &p, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    struct plan_source src = {q, p.request, strlen(p.request), p.model, p.id};
    if (strcmp(p.state, "interrupted"))
        api_fail(r, API_E_CONFLICT, "plan '%s' is %s: only an interrupted plan resumes", p.id, p.state);
    else if (p.model[0])
        plan_from_model(s, &src, r);
    else
        plan_from_spec(s, &src, r);
    store_plan_release(&p);
}

void h_plan_get(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    int64_t done = 0, total = 0;
    if (plans_progress(s->plans, q->params.id, &done, &total))
        api_reply_json(r, 200, json_pack("{s:s, s:s, s:{s:I, s:I}}", "id", q->params.id, "state", "running",
                                         "progress", "done", (json_int_t)done, "total", (json_int_t)total));
    else
        reply_stored(s, q->params.id, 200, r);
}

void h_plan_delete(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct sc_error err;
    if (plans_cancel(s->plans, q->params.id)) {
        reply_stored(s, q->params.id, 200, r);
        return;
    }
    if (store_plan_delete(s->store, q->params.id, &err))
        api_fail_status(r, &err, API_E_INTERNAL);
    else
        api_reply_json(r, 200, json_pack("{s:s}", "deleted", q->params.id));
}
