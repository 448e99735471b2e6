/* daemon/dispatch.c: svc_handle() (service.h): a request to the handler of
 * its operation (the handler api/ops.def names). Apart from service.c so that the handlers,
 * which use the service, and the service do not include each other.
 *
 * Whether the thread may do heavy work, and whether a handler deferred
 * it, are the thread's own (one request at a time per thread): handlers
 * and the helpers they share ask svc_defer() where heavy work starts,
 * without a request to pass it through. */
#include <string.h>

#include "daemon/dispatch.h"
#include "daemon/service.h"
#include "common/banned.h"

static _Thread_local int on_worker, deferred;

int svc_defer(void)
{
    if (on_worker)
        return 0;
    deferred = 1;
    return 1;
}

static void dispatch(struct svc *s, struct svc_request *req, struct api_reply *r)
{
    static svc_handler *const handlers[API_OP_COUNT] = {
#define API_OP(NAME, METHOD, PATH, ID, SCOPE, BODY, SUCCESS, HANDLER, ...) [API_OP_##NAME] = HANDLER,
#define API_QUERY(...)
#include "api/ops.def"
    };
    handlers[req->op](s, req, r);
}

enum svc_handled svc_handle(struct svc *s, struct svc_request *req, struct api_reply *r)
{
    deferred = 0;
    dispatch(s, req, r);
    if (!deferred)
        return SVC_ANSWERED;
    api_reply_release(r); /* what a handler left before it deferred */
    memset(r, 0, sizeof *r);
    return SVC_DEFERRED;
}

void svc_handle_heavy(struct svc *s, struct svc_request *req, struct api_reply *r)
{
    on_worker = 1;
    dispatch(s, req, r);
    on_worker = 0;
}
