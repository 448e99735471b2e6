/* api/estimate_json.h: an estimate (estimator/synth/estimate.h) as the document
 * `stepcast estimate --json` prints and POST /v1/estimate answers. */
#ifndef API_ESTIMATE_JSON_H
#define API_ESTIMATE_JSON_H

#include <jansson.h>

struct est_estimate;
struct ledger_band;

/* A new object, or NULL when out of memory. */
json_t *api_estimate_json(const struct est_estimate *e);

/* The document with "band" (ledger.h: of the estimate kind) around its
 * step time, as compact JSON text (from malloc, *len its length), or NULL
 * when out of memory. */
char *api_estimate_text(const struct est_estimate *e, const struct ledger_band *band, size_t *len);

#endif
