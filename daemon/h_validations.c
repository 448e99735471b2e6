/* daemon/h_validations.c: the validation ledger (api/ops.def, api/ledger.h).
 *
 * POST /v1/validations stores a measured step time with the prediction
 * stepcast makes for it now: the replay of a model (the mean over ranks of
 * its modelled steps), the what-if of a model (`set`, from its job's
 * config; estimator/whatif/whatif.h), or the estimate of a spec at the default
 * detail. The
 * entry keeps the stepcast version and the calibration that predicted, and
 * its model's id when the model is deleted later. Every write bumps
 * s->ledger_changes, which the estimate memo keys on (bands). */
#include "daemon/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/encode.h"
#include "api/json_reply.h"
#include "api/ledger.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/log.h"
#include "estimator/synth/estimate.h"
#include "estimator/model_open.h"
#include "model/replay.h"
#include "estimator/spec/job_config.h"
#include "daemon/h_estimate.h"
#include "daemon/h_experiments.h"
#include "daemon/h_models.h"
#include "daemon/h_shared.h"
#include "daemon/store.h"
#include "common/banned.h"

/* The replay's prediction: the mean over ranks of the modelled steps
 * (complete ones; each rank has as many), replayed as GET
 * /v1/models/{id}/replay replays them (the kept collectives split into
 * transfer and wait). */
static int predict_replay(struct svc *s, const char *id, double *ms, struct api_reply *r)
{
    struct model_replay_opts ro;
    struct model_replay *rp = NULL;
    struct cache_entry *e;
    struct sc_error err;
    int rc = h_ready_model(s, id, &e, r);
    if (rc)
        return rc;
    model_replay_opts_default(&ro);
    ro.step_unexplained = 0; /* the step times are all it reads */
    rc = est_model_replay(built_model_opened(cache_value(e)), &ro, &rp, &err);
    cache_release(s->cache, e);
    if (rc)
        return api_fail_status(r, &err, API_E_UNPROCESSABLE);
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < rp->n_steps; i++)
        if (!rp->steps[i].partial) {
            sum += (double)rp->steps[i].replayed_ns;
            n++;
        }
    model_replay_free(rp);
    if (!n)
        return api_fail(r, API_E_UNPROCESSABLE, "model '%s' has no complete step to replay", id);
    *ms = sum / (double)n / 1e6;
    return SC_OK;
}

/* The estimate's prediction, with the spec as estimated and its calibration. */
static int predict_estimate(struct svc *s, const char *spec, struct api_validation *v, struct api_reply *r)
{
    struct est_estimate e;
    struct sc_error err;
    struct h_spec h;
    int busy = 0;
    int rc = h_spec_load(s, spec, strlen(spec), NULL, &h, r);
    if (rc == SC_OK && (rc = h_estimate_admitted(s, &h, EST_DETAIL_STAGE, &e, &busy, &err)) == SC_OK) {
        v->predicted_ms = e.step_ms;
        synth_estimate_release(&e);
        snprintf(v->calibration, sizeof v->calibration, "%s", h.calibration);
        v->spec = h.canonical;
        h.canonical = NULL;
    } else if (rc && !r->status) {
        h_estimate_fail(busy, &err, r);
    }
    h_spec_release(&h);
    return rc;
}

void h_validation_create(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct api_validation_req req;
    struct api_validation v;
    struct sc_error err;
    int rc;
    if (svc_defer()) /* each entry is stored with its prediction: a replay, a what-if or an estimate */
        return;
    if (api_decode_validation(q->body, q->body_len, &lim, &req, r))
        return;
    memset(&v, 0, sizeof v);
    snprintf(v.model, sizeof v.model, "%s", req.model);
    snprintf(v.source, sizeof v.source, "%s", req.source);
    snprintf(v.run_at, sizeof v.run_at, "%s", req.run_at);
    snprintf(v.version, sizeof v.version, "%s", STEPCAST_VERSION);
    v.measured_ms = req.measured_ms;
    v.in_sample = req.in_sample;
    if (req.set) {
        struct job_config set;
        v.kind = API_LEDGER_WHATIF;
        if (!(v.set = strdup(req.set))) /* kept with the entry, as an estimate's spec is */
            rc = api_fail(r, API_E_UNAVAILABLE, "out of memory");
        else if ((rc = spec_job_config_parse_set_json(req.set, strlen(req.set), &set, &err)))
            rc = api_fail(r, API_E_INVALID_JSON, "%s", err.msg);
        else
            rc = h_whatif_step_ms(s, req.model, &set, &v.predicted_ms, r);
    } else if (req.model[0]) {
        v.kind = API_LEDGER_REPLAY;
        rc = predict_replay(s, req.model, &v.predicted_ms, r);
    } else {
        v.kind = API_LEDGER_ESTIMATE;
        rc = predict_estimate(s, req.spec, &v, r);
    }
    if (rc == SC_OK && !ledger_step_ms_valid(v.predicted_ms)) /* kept only what the ledger can render */
        rc = api_fail(r, API_E_UNPROCESSABLE, "the prediction, %g ms, is outside the ledger's range (%g to %g ms)",
                      v.predicted_ms, LEDGER_STEP_MS_MIN, LEDGER_STEP_MS_MAX);
    if (rc == SC_OK) {
        if ((rc = store_validation_add(s->store, &v, 1, q->caller.id, &err))) {
            api_fail_status(r, &err, rc == SC_ENOSPC ? API_E_NO_SPACE : API_E_INTERNAL);
        } else {
            atomic_fetch_add(&s->ledger_changes, 1);
            log_info("ledger", "id=%lld kind=%s model=%s measured_ms=%.4f predicted_ms=%.4f by=%s event=added",
                     (long long)v.id, api_ledger_kind_name(v.kind), v.model[0] ? v.model : "-", v.measured_ms,
                     v.predicted_ms, q->caller.id);
            api_reply_validation(r, 201, &v);
        }
    }
    api_validation_release(&v);
    api_validation_req_release(&req);
}

void h_validations_list(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *model = api_query_str(&q->query, "model"), *kind = api_query_str(&q->query, "kind");
    int in_sample = (int)api_query_int(&q->query, "in_sample");
    struct api_validation *page = NULL, *v = NULL;
    struct api_list_meta m = {0};
    struct api_page pg;
    struct sc_error err;
    char next[API_PAGE_CURSOR_MAX];
    size_t n_page = 0, n = 0;
    int more;
    if (h_page(q, &pg, r))
        return;
    /* the MAPEs and bands read every entry: on the first page only */
    if (store_validation_list(s->store, model, kind, &pg, &page, &n_page, &more, &err) ||
        (!pg.has_after && store_validation_summary(s->store, model, kind, &v, &n, &err))) {
        api_fail_status(r, &err, API_E_INTERNAL);
        goto out;
    }
    if (more) {
        api_page_cursor(page[n_page - 1].id, "", next);
        m.next_cursor = next;
    }
    json_t *doc = api_ledger_page_json(page, n_page, pg.has_after ? NULL : v, n, in_sample, &m);
    if (doc && !pg.has_after)
        json_object_set_new(doc, "bank", h_experiments_bank_json(s));
    api_reply_json(r, 200, doc);
    h_page_skipped("validations", &m);
out:
    api_validations_free(page, n_page);
    api_validations_free(v, n);
}

void h_validation_delete(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct sc_error err;
    char *end;
    long long id = strtoll(q->params.id, &end, 10);
    if (*end || id < 1) {
        api_fail(r, API_E_INVALID_ID, "'%s' is not a ledger entry id (a positive integer)", q->params.id);
        return;
    }
    if (store_validation_delete(s->store, id, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    atomic_fetch_add(&s->ledger_changes, 1);
    log_info("ledger", "id=%lld by=%s event=deleted", id, q->caller.id);
    api_reply_deleted(r, "validation", q->params.id, 0, 0);
}

