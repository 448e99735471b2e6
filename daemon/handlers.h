/* daemon/handlers.h: the handlers of each resource (inside daemon/ only).
 *
 * Each takes the service, the request and the reply to fill; service.c
 * dispatches to them by operation. */
#ifndef DAEMON_HANDLERS_H
#define DAEMON_HANDLERS_H

#include <jansson.h>

#include "api/request.h"
#include "daemon/h_shared.h"
#include "daemon/service.h"
#include "daemon/store.h"
#include "estimator/estimate.h"
#include "estimator/spec.h"
#include "estimator/synth.h"

/* h_jobs.c: jobs and trace uploads */
void h_jobs_list(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_job_put(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_job_get(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_job_delete(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_trace_put(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_trace_get(struct svc *s, struct svc_request *q, struct api_reply *r);

/* h_models.c: models and the queries on them */
void h_model_create(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_models_list(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_model_get(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_model_delete(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_model_query(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_fleet_opportunities(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_model_diff(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_ab(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_fleet(struct svc *s, struct svc_request *q, struct api_reply *r);
/* Model b against model a (model/ab.h, with diff's attribution) into r: 200
 * and the document of `stepcast ab --json`, memoised with a; else r holds
 * the error (404, 409 while either builds, 422) and its status is returned. */
struct model_ab_opts;
void h_experiment_create(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_experiments_list(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_experiment_get(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_experiment_close(struct svc *s, struct svc_request *q, struct api_reply *r);
/* The ledger's bank: closed winning experiments' savings summed per team
 * and month ({"by_team_and_month":[{"team","month","experiments",
 * "gpu_hours_per_day","usd_per_day","per_step_only"}],"method"}). */
json_t *h_experiments_bank_json(struct svc *s);
int h_ab_answer(struct svc *s, const char *a, const char *b, const struct model_ab_opts *o, struct api_reply *r);
void h_model_whatif(struct svc *s, struct svc_request *q, struct api_reply *r);
/* What a helper returns when it deferred the request (svc_defer): r is
 * untouched, and the handler returns at once. */
#define H_DEFERRED (-1)
/* Model id, ready, from the cache into *e (released by the caller with
 * cache_release); on failure the reply in r (409 while it builds) and its
 * status. A model not in memory is loaded again from its traces, which is
 * heavy work: on an HTTP thread, H_DEFERRED. */
struct cache_entry;
int h_ready_model(struct svc *s, const char *id, struct cache_entry **e, struct api_reply *r);
/* The step time of a what-if (set) of model id, for the ledger; on
 * failure the reply in r and its status. */
struct job_config;
int h_whatif_step_ms(struct svc *s, const char *id, const struct job_config *set, double *ms, struct api_reply *r);
/* Model id's job description and its built model from the cache (released
 * by the caller with cache_release); on failure the reply (404, 409 while
 * building, 422 without a config). */
int h_model_whatif_ready(struct svc *s, const char *id, struct job_config *cfg, struct cache_entry **e,
                         struct api_reply *r);

/* h_ops.c: tokens, health, metrics and the OpenAPI document */
void h_token_create(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_tokens_list(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_token_delete(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_healthz(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_metrics(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_openapi(struct svc *s, struct svc_request *q, struct api_reply *r);

/* h_dashboard.c: the web dashboard's page and files */
void h_dashboard(struct svc *s, struct svc_request *q, struct api_reply *r);

/* h_estimate.c: estimates, hardware profiles, calibrations */
void h_estimate(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_hardware(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_spec_from_hf(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_calibration_nccl(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_calibration_gemms(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_model_calibration(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_calibrations(struct svc *s, struct svc_request *q, struct api_reply *r);

/* A posted spec: parsed and checked, its cluster.profile resolved to a
 * stored calibration and applied to the costs. */
struct h_spec {
    struct est_spec spec;
    const struct hw_profile *hw;
    struct est_costs costs;
    char calibration[API_ID_MAX + 16]; /* "NAME@SHA12", or "" for the defaults */
    char calib_sha[API_ID_MAX];        /* the calibration document's hash, or "" */
    char *canonical;                   /* the spec with every default, JSON */
};
/* SC_OK, or the status with r filled (400 invalid_spec naming the field).
 * With `given`, the spec is a planning template (est_plan_parse_spec):
 * its parallel and options values may be left open, *given says which
 * are fixed. */
int h_spec_load(struct svc *s, const char *text, size_t len, struct est_spec_given *given, struct h_spec *out,
                struct api_reply *r);
void h_spec_release(struct h_spec *h);
/* est_estimate of h's spec at detail d, admitted first under the daemon's
 * memory budget (admission.h) by its predicted size (est_synth_size): SC_OK
 * with *e, else err says why, *busy set when it only has to wait for the
 * work running now (h_estimate_fail answers 429, else 413 or 422). */
int h_estimate_admitted(struct svc *s, const struct h_spec *h, enum est_detail d, struct est_estimate *e, int *busy,
                        struct sc_error *err);
int h_estimate_fail(int busy, const struct sc_error *err, struct api_reply *r);

/* h_plans.c: plans (the planner over HTTP) */
void h_plan_create(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_plan_get(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_plan_delete(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_model_plan(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_plan_resume(struct svc *s, struct svc_request *q, struct api_reply *r);

/* h_validations.c: the validation ledger */
void h_validation_create(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_validations_list(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_validation_delete(struct svc *s, struct svc_request *q, struct api_reply *r);

/* Remove blob files the catalog no longer names (after the commit that
 * freed them); failures are logged, the next start sweeps what is left. */
void h_remove_blobs(struct svc *s, const struct store_names *freed);

#endif
