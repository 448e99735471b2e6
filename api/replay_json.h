/* api/replay_json.h: replay results as JSON: the document of
 * `stepcast replay --json` (and of GET /v1/models/{id}/replay) and the
 * critical paths (the replayed timeline: timeline_json.h).
 *
 * replay: {"steps":[{"rank":R,"step":"ProfilerStep#N","measured_ms":M,
 *   "replayed_ms":P,"error_pct":E,"partial":false,"breakdown":{...},
 *   "collective_kept_ms":C}, ...],"mean_abs_error_pct":X,
 *   "max_abs_error_pct":Y,"graph":{...,"collectives":[...]}} — the surface
 *   tools rely on. */
#ifndef API_REPLAY_JSON_H
#define API_REPLAY_JSON_H

#include <jansson.h>

struct model_replay;

json_t *api_replay_json(const struct model_replay *r);
json_t *api_critical_path_json(const struct model_replay *r);

#endif
