/* api/hardware_json.h: hardware profiles (estimator/costs/hardware.h) as JSON,
 * in the data/hardware file format less its notes: where each figure
 * comes from is its "sources", as the profile's file has them. */
#ifndef API_HARDWARE_JSON_H
#define API_HARDWARE_JSON_H

#include <jansson.h>

struct hw_profile;

/* A new object, or NULL when out of memory. */
json_t *api_hardware_json(const struct hw_profile *p);

struct api_reply;

/* GET /v1/hardware: {"hardware":[...]} sorted by id. */
int api_reply_hardware_list(struct api_reply *r);
/* GET /v1/hardware/{id}: the profile, or a 404 naming the known ids. */
int api_reply_hardware(struct api_reply *r, const char *id);

#endif
