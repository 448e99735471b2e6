/* daemon/h_ops.h: what every route's handler shares (h_ops.c, beside the
 * handlers of tokens, health, metrics and the OpenAPI document): the page
 * a list asks for, the log line of the rows a page left out, and the
 * limits of JSON request bodies. */
#ifndef DAEMON_H_OPS_H
#define DAEMON_H_OPS_H

#include "api/page.h"
#include "api/reply.h"
#include "api/request.h"
#include "daemon/service.h"

/* The page a list route asks for (?limit, ?cursor, decoded); on failure
 * the reply (400) and its status. */
int h_page(const struct svc_request *q, struct api_page *pg, struct api_reply *r);
/* The log line of the rows a page left out because they cannot be
 * rendered. */
void h_page_skipped(const char *list, const struct api_list_meta *m);
/* The limits of JSON request bodies, from the config. */
struct api_body_limits h_body_limits(const struct svc *s);

#endif
