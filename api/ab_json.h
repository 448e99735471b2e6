/* api/ab_json.h: the A/B comparison (model/ab.h) as the document of
 * `stepcast ab --json`:
 *   {"verdict":"slower","difference_ms":..,"difference_pct":..,
 *    "ci95_ms":[lo,hi],"p_value":..,"effect_size":..,"min_effect_ms":..,
 *    "center_ms":{"a":..,"b":..},"steps":{"a":N,"b":N},
 *    "samples_ms":{"a":[..],"b":[..]} (the samples compared, step order),
 *    "dropped_steps":[{"run":"A","step":0,"why":"warm-up"}],
 *    "refutations":[{"name":"placebo","verdict":"no_change",
 *      "agrees":true|false|null,"detail":".."}],"survives":true,
 *    "attribution":[{"category":"compute:gemm","ms":..,"ci95_ms":[lo,hi]}]}
 *   attribution null where the runs' graphs were not compared. */
#ifndef API_AB_JSON_H
#define API_AB_JSON_H

#include <jansson.h>

struct model_ab;

json_t *api_ab_json(const struct model_ab *r);

#endif
