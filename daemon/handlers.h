/* daemon/handlers.h: the handlers of each resource (inside daemon/ only).
 *
 * Each takes the service, the request and the reply to fill; service.c
 * dispatches to them by operation. */
#ifndef DAEMON_HANDLERS_H
#define DAEMON_HANDLERS_H

#include "api/request.h"
#include "daemon/service.h"
#include "daemon/store.h"

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

/* h_ops.c: tokens, health, metrics, the OpenAPI document */
void h_token_create(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_tokens_list(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_token_delete(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_healthz(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_metrics(struct svc *s, struct svc_request *q, struct api_reply *r);
void h_openapi(struct svc *s, struct svc_request *q, struct api_reply *r);

/* h_dashboard.c: the web dashboard's page and files */
void h_dashboard(struct svc *s, struct svc_request *q, struct api_reply *r);

/* Remove blob files the catalog no longer names (after the commit that
 * freed them); failures are logged, the next start sweeps what is left. */
void h_remove_blobs(struct svc *s, const struct store_names *freed);

/* The limits of JSON request bodies, from the config. */
struct api_body_limits h_body_limits(const struct svc *s);

#endif
