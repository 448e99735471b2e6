/* api/openapi.h: the OpenAPI 3 document of the REST API.
 *
 * Written from the operation list (ops.def) and the error-code table
 * (reply.h), with the resource schemas beside them (openapi.c), so every
 * route the router serves is documented and nothing else is. */
#ifndef API_OPENAPI_H
#define API_OPENAPI_H

#include "common/error.h"

/* The document as compact JSON (from malloc). */
int api_openapi_text(char **out, struct sc_error *err);

#endif
