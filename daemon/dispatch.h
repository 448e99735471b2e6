/* daemon/dispatch.h: the handler of every operation, declared from the
 * operation list (api/ops.def), for dispatch.c's table and for the h_*.c
 * files that define them; and svc_handle(), which the server calls.
 *
 * A handler takes the service, the request (routed, authenticated, its
 * query decoded: api/query.h) and the reply to fill; it may defer heavy
 * work to a worker (svc_defer). */
#ifndef DAEMON_DISPATCH_H
#define DAEMON_DISPATCH_H

#include "api/reply.h"
#include "daemon/service.h"

/* Answer a routed, authenticated request whose query the server checked
 * (api_query_decode), on an HTTP thread: SVC_ANSWERED with r filled, or
 * SVC_DEFERRED when it needs heavy work (a handler called svc_defer), r
 * untouched and nothing changed: svc_handle_heavy() answers it then, on a
 * worker (workers.h). Memoised answers and catalog reads are answered at
 * once. */
enum svc_handled { SVC_ANSWERED, SVC_DEFERRED };
enum svc_handled svc_handle(struct svc *s, struct svc_request *req, struct api_reply *r);
void svc_handle_heavy(struct svc *s, struct svc_request *req, struct api_reply *r);
/* For handlers, just before heavy work (a replay, a what-if, an estimate
 * or a model load that no memo answers): 1 on an HTTP thread, where the
 * handler returns at once with r untouched and nothing stored, and the
 * request is handled again on a worker; 0 on a worker: go on. */
int svc_defer(void);

typedef void svc_handler(struct svc *s, struct svc_request *q, struct api_reply *r);

#define API_OP(NAME, METHOD, PATH, ID, SCOPE, BODY, SUCCESS, HANDLER, ...) svc_handler HANDLER;
#define API_QUERY(...)
#include "api/ops.def"

#endif
