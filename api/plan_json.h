/* api/plan_json.h: a plan (estimator/plan.h) as the document `stepcast
 * plan --json` prints and GET /v1/plans/{id} answers, and the body of
 * POST /v1/plans. */
#ifndef API_PLAN_JSON_H
#define API_PLAN_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

struct est_plan;
struct est_plan_request;

/* {"evaluated":..,"pruned":..,"infeasible":{"memory":..,"divisibility":..},
 * "top":[{"parallel":{..},"options":{..},"estimate":{..}}]}: each row's
 * parallel and options objects with every value written out (a spec made
 * of the template's model and cluster and them is the configuration), its
 * estimate the estimate document. NULL when out of memory. */
json_t *api_plan_json(const struct est_plan *p);

/* The body of POST /v1/plans: {"spec":{..},"gpus":N,"up_to":false,"top":K,
 * "objective":"time"}; spec and gpus required, up_to false, top 10 and
 * objective "time" by default; any other key is an error. The spec comes
 * back as compact JSON text (from malloc) in *spec for the planner's own
 * parser (est_plan_parse_spec), the rest in *req. SC_EINVAL naming the
 * field. With spec NULL, the body of POST /v1/models/{id}/plan: the same
 * without the spec (a "spec" key is unknown). */
#define API_PLAN_DEFAULT_TOP 10
int api_plan_request_decode(const char *body, size_t len, struct est_plan_request *req, char **spec,
                            struct sc_error *err);

#endif
