/* daemon/server.h: the HTTP server (libmicrohttpd, a pool of threads).
 *
 * Everything HTTP lives here: per request it routes (api/routes.h), checks
 * the token, the query and the declared body size before reading any body,
 * streams a trace upload into a blob writer chunk by chunk (never holding it
 * whole), collects a JSON body up to its limit, hands the complete request
 * to svc_handle(), sends the reply with CORS headers, and writes one log
 * line and the metrics when the request ends, however it ends. */
#ifndef DAEMON_SERVER_H
#define DAEMON_SERVER_H

#include <stdint.h>

#include "common/error.h"

struct daemon_config;
struct svc;
struct server;

/* Bind cfg->listen and start serving; *port gets the bound port. */
int server_start(struct svc *s, const struct daemon_config *cfg, struct server **out,
                 uint16_t *port, struct sc_error *err);
/* Seconds that work cancelled at the end of a drain has to stop. */
#define SERVER_CANCEL_GRACE_S 5.0

/* Stop accepting connections, answer new requests on open connections with
 * 503, wait up to timeout_s for requests in flight; then cancel the heavy
 * work still running or queued for them (its requests are answered 503)
 * and stop. 1 when stopped; 0 when cancelled work did not stop within
 * SERVER_CANCEL_GRACE_S: the process must exit without server_free. */
int server_drain(struct server *srv, double timeout_s);
void server_free(struct server *srv); /* after server_drain returned 1; NULL-safe */

#endif
