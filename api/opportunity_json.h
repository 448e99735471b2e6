/* api/opportunity_json.h: opportunities as JSON: the document of
 * `stepcast opportunities --json` and GET /v1/models/{id}/opportunities,
 * and the fleet view of GET /v1/opportunities.
 *
 * one job: {"step_ms":S,"gpu_idle_ms":I,"ranks":N,"opportunities":[{"name":..,
 *   "resource":..,"change":"comm=0","saving_ms":..,"saving_pct":..,
 *   "amdahl_bound_ms":..[,"saving_at_zero_ms":..]}, ...]}, largest saving first.
 * fleet: {"jobs":[{"model":ID,"job":J,"ranks":N,"step_ms":S,"gpu_idle_ms":I,
 *   "gpu_ms_per_step":G,"opportunity":{...}}, ...]}, G = the best
 *   opportunity's saving x ranks, largest first. */
#ifndef API_OPPORTUNITY_JSON_H
#define API_OPPORTUNITY_JSON_H

#include <stddef.h>

#include <jansson.h>

struct model_opportunities;

json_t *api_opportunities_json(const struct model_opportunities *o);

struct api_page;

/* The fleet view of models[i] (ids), jobs[i] and their opportunity
 * documents docs[i] (as api_opportunities_json writes them; borrowed),
 * ranked, the page pg of it (api/page.h): {"jobs":[{"rank",...}],
 * "next_cursor","skipped"}, skipped counting the rows already left out
 * and those that cannot be rendered. */
json_t *api_fleet_json(const char *const *models, const char *const *jobs, json_t *const *docs, size_t n,
                       const struct api_page *pg, size_t skipped);

#endif
