/* daemon/dispatch.c: svc_handle() (service.h): a request to the handler of
 * its operation (handlers.h). Apart from service.c so that the handlers,
 * which use the service, and the service do not include each other.
 *
 * Whether the thread may do heavy work, and whether a handler deferred
 * it, are the thread's own (one request at a time per thread): handlers
 * and the helpers they share ask svc_defer() where heavy work starts,
 * without a request to pass it through. */
#include <string.h>

#include "daemon/handlers.h"
#include "daemon/service.h"
#include "common/banned.h"

static _Thread_local int on_worker, deferred;

int svc_defer(void)
{
    if (on_worker)
        return 0;
    deferred = 1;
    return 1;
}

static void dispatch(struct svc *s, struct svc_request *req, struct api_reply *r)
{
    static void (*const handlers[API_OP_COUNT])(struct svc *, struct svc_request *, struct api_reply *) = {
        [API_OP_HEALTHZ] = h_healthz,         [API_OP_METRICS] = h_metrics,
        [API_OP_OPENAPI] = h_openapi,         [API_OP_JOBS_LIST] = h_jobs_list,
        [API_OP_JOB_PUT] = h_job_put,         [API_OP_JOB_GET] = h_job_get,
        [API_OP_JOB_DELETE] = h_job_delete,   [API_OP_TRACE_PUT] = h_trace_put,
        [API_OP_TRACE_GET] = h_trace_get,     [API_OP_MODEL_CREATE] = h_model_create,
        [API_OP_MODELS_LIST] = h_models_list, [API_OP_MODEL_GET] = h_model_get,
        [API_OP_MODEL_DELETE] = h_model_delete, [API_OP_REPLAY] = h_model_query,
        [API_OP_CRITICAL_PATH] = h_model_query, [API_OP_TIMELINE] = h_model_query,
        [API_OP_OPPORTUNITIES] = h_model_query, [API_OP_FLEET_OPPORTUNITIES] = h_fleet_opportunities,
        [API_OP_DIFF] = h_model_diff,
        [API_OP_TOKEN_CREATE] = h_token_create, [API_OP_TOKENS_LIST] = h_tokens_list,
        [API_OP_TOKEN_DELETE] = h_token_delete, [API_OP_DASHBOARD] = h_dashboard,
        [API_OP_DASHBOARD_FILE] = h_dashboard,
        [API_OP_ESTIMATE] = h_estimate,       [API_OP_HARDWARE_LIST] = h_hardware,
        [API_OP_HARDWARE_GET] = h_hardware,   [API_OP_CALIBRATION_NCCL] = h_calibration_nccl,
        [API_OP_CALIBRATION_GEMMS] = h_calibration_gemms,
        [API_OP_CALIBRATIONS_LIST] = h_calibrations, [API_OP_CALIBRATION_GET] = h_calibrations,
        [API_OP_MODEL_CALIBRATION] = h_model_calibration,
        [API_OP_VALIDATION_CREATE] = h_validation_create, [API_OP_VALIDATIONS_LIST] = h_validations_list,
        [API_OP_VALIDATION_DELETE] = h_validation_delete,
        [API_OP_PLAN_CREATE] = h_plan_create, [API_OP_PLAN_GET] = h_plan_get,
        [API_OP_PLAN_DELETE] = h_plan_delete, [API_OP_WHATIF] = h_model_whatif,
        [API_OP_MODEL_PLAN] = h_model_plan, [API_OP_CHAKRA] = h_model_query,
        [API_OP_SPEC_FROM_HF] = h_spec_from_hf,
        [API_OP_AB] = h_ab, [API_OP_FLEET] = h_fleet,
        [API_OP_EXPERIMENT_CREATE] = h_experiment_create, [API_OP_EXPERIMENTS_LIST] = h_experiments_list,
        [API_OP_EXPERIMENT_GET] = h_experiment_get, [API_OP_EXPERIMENT_CLOSE] = h_experiment_close,
        [API_OP_PLAN_RESUME] = h_plan_resume,
    };
    handlers[req->op](s, req, r);
}

enum svc_handled svc_handle(struct svc *s, struct svc_request *req, struct api_reply *r)
{
    deferred = 0;
    dispatch(s, req, r);
    if (!deferred)
        return SVC_ANSWERED;
    api_reply_release(r); /* what a handler left before it deferred */
    memset(r, 0, sizeof *r);
    return SVC_DEFERRED;
}

void svc_handle_heavy(struct svc *s, struct svc_request *req, struct api_reply *r)
{
    on_worker = 1;
    dispatch(s, req, r);
    on_worker = 0;
}
