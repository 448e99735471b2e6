/* api/diff_json.h: the comparison of two runs (model/diff.h) as JSON: the
 * document of `stepcast diff --json A B` and POST /v1/models/{a}/diff.
 *
 * {"a_ms":..,"b_ms":..,"difference_ms":..,"steps":N,"method":"sequential: ...",
 *  "attribution":{"compute:gemm":ms,...,"unmatched":ms},
 *  "kernels":{"added":[{"name","count","a_ms","b_ms"}],"removed":[..],"retimed":[..]}}
 * The attribution sums to difference_ms (to the rounding of each figure to
 * the microsecond). */
#ifndef API_DIFF_JSON_H
#define API_DIFF_JSON_H

#include <jansson.h>

struct model_diff;

json_t *api_diff_json(const struct model_diff *d);

#endif
