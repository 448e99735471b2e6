/* api/estimate_json.h: an estimate (estimator/estimate.h) as the document
 * `stepcast estimate --json` prints and POST /v1/estimate answers. */
#ifndef API_ESTIMATE_JSON_H
#define API_ESTIMATE_JSON_H

#include <jansson.h>

struct est_estimate;

/* A new object, or NULL when out of memory. */
json_t *api_estimate_json(const struct est_estimate *e);

#endif
