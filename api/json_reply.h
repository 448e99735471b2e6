/* api/json_reply.h: JSON documents into replies (inside api/ only).
 *
 * Jansson stays in api/: the encoders build a json_t and hand it here. */
#ifndef API_JSON_REPLY_H
#define API_JSON_REPLY_H

#include <stdint.h>

#include <jansson.h>

struct api_reply;

/* Serialise doc (stolen, also on failure) as the body with `status`.
 * SC_ENOMEM (and a 503 reply) when it cannot. */
int api_reply_json(struct api_reply *r, unsigned status, json_t *doc);

/* RFC 3339 UTC time with milliseconds, or JSON null for 0. */
json_t *api_json_time(int64_t ns);

#endif
