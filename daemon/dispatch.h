/* daemon/dispatch.h: the handler of every operation, declared from the
 * operation list (api/ops.def), for dispatch.c's table and for the h_*.c
 * files that define them.
 *
 * A handler takes the service, the request (routed, authenticated, its
 * query decoded: api/query.h) and the reply to fill; it may defer heavy
 * work to a worker (svc_defer, service.h). */
#ifndef DAEMON_DISPATCH_H
#define DAEMON_DISPATCH_H

#include "api/reply.h"
#include "daemon/service.h"

typedef void svc_handler(struct svc *s, struct svc_request *q, struct api_reply *r);

#define API_OP(NAME, METHOD, PATH, ID, SCOPE, BODY, SUCCESS, HANDLER, ...) svc_handler HANDLER;
#define API_QUERY(...)
#include "api/ops.def"

#endif
