/* api/plan_json.h: a plan (estimator/plan/plan.h) as the document `stepcast
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
 * "risk":P,"top":[{"parallel":{..},"options":{..},"estimate":{..}}]}: each
 * row's parallel and options objects with every value written out (a spec
 * made of the template's model and cluster and them is the configuration),
 * its estimate the estimate document. A plan with bands (estimator/plan/bands.h)
 * adds to each row "at_risk":{"risk","error","step_ms"}, "band" (its
 * region's, or null), "extrapolated" and, when true,
 * "extrapolated_because"; the top row, estimated again at kernel detail,
 * "kernel" (that estimate's document). NULL when out of memory. */
json_t *api_plan_json(const struct est_plan *p);

/* The body of POST /v1/plans: {"spec":{..},"gpus":N,"up_to":false,"top":K,
 * "objective":"time","risk":P}; spec and gpus required, up_to false, top
 * 10, objective "time" and risk 0.5 (0.5 to 1) by default; any other key is an error. The spec comes
 * back as compact JSON text (from malloc) in *spec for the planner's own
 * parser (plan_parse_spec), the rest in *req. SC_EINVAL naming the
 * field. With spec NULL, the body of POST /v1/models/{id}/plan: the same
 * without the spec and the risk (a plan of what-ifs has no bands: a "spec"
 * or "risk" key is unknown). */
#define API_PLAN_DEFAULT_TOP 10
int api_plan_request_decode(const char *body, size_t len, struct est_plan_request *req, char **spec,
                            struct sc_error *err);

#endif
