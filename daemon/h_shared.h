/* daemon/h_shared.h: what several handlers (dispatch.h) share, defined
 * in h_shared.c apart from any handler, so that no handler calls another
 * for it: the limits of request bodies, the page a list asks for, the
 * ledger's error band and the admission of a request's heavy work. */
#ifndef DAEMON_H_SHARED_H
#define DAEMON_H_SHARED_H

#include "api/page.h"
#include "api/reply.h"
#include "api/request.h"
#include "daemon/service.h"

/* The limits of JSON request bodies, from the config. */
struct api_body_limits h_body_limits(const struct svc *s);

/* What every list route shares: the page it asks for (?limit, ?cursor; on
 * failure the reply, 400 or 422, and its status), and the log line of the
 * rows a page left out because they cannot be rendered. */
int h_page(const struct svc_request *q, struct api_page *pg, struct api_reply *r);
void h_page_skipped(const char *list, const struct api_list_meta *m);

/* The ledger's error band for predictions of kind k (none when the ledger
 * cannot be read: the prediction still answers). Answers that carry it
 * are memoised under s->ledger_changes too. */
struct ledger_band;
void h_ledger_band(struct svc *s, int kind, struct ledger_band *b);

/* Admit `need` bytes of work named `what` (admission.h) now: SC_OK (give
 * them back with admission_release), else the reply in r, 413 when it can
 * never fit the memory budget, 429 while other work holds it, and its
 * status. */
int h_admit(struct svc *s, uint64_t need, const char *what, struct api_reply *r);

#endif
