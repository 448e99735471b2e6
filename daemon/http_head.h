/* daemon/http_head.h: what a request's line and headers must satisfy
 * before the API sees them: no NUL or other control byte, one length, a
 * target and a header set within their limits. */
#ifndef DAEMON_HTTP_HEAD_H
#define DAEMON_HTTP_HEAD_H

#include <stddef.h>

#include <microhttpd.h>

#include "api/reply.h"

/* The longest request target (path and query) taken: 414 above. */
#define HTTP_HEAD_MAX_TARGET 8192

struct http_head {
    const char *target;  /* where the target lies in the connection's buffer */
    size_t target_len;   /* its length as read, before anything cut it */
    int bad_byte;        /* a control byte in it */
    int too_long;        /* over HTTP_HEAD_MAX_TARGET */
    int too_many_params; /* more query parameters than max_params */
};

/* Note the raw target, from libmicrohttpd's URI log callback (before it
 * parses the query and unescapes the path). A query that is refused anyway
 * (too long, too many parameters) is cut here, so libmicrohttpd does not
 * spend the connection's memory on it. */
void http_head_note_target(struct http_head *h, const char *uri, size_t max_params);

/* Check the whole head on the first call of the access handler: returns 0,
 * or -1 with the error reply in r (400, 414 or 431). */
int http_head_check(struct MHD_Connection *c, const struct http_head *h, const char *method,
                    const char *version, size_t max_header, struct api_reply *r);

#endif
