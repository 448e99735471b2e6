/* daemon/http_head.c: the request head's checks (http_head.h).
 *
 * libmicrohttpd 0.9.75 finds the lines of a request by their CR and LF,
 * then reads the request line and the headers as C strings: a NUL inside a
 * line silently cuts it, so that `DELETE /v1/jobs/a<NUL>b` would reach the
 * handler as `DELETE /v1/jobs/a`. It leaves every string where it was read
 * and ends each with a NUL written over the separator that followed it, so
 * a head is one run of strings in the connection's buffer: method, target,
 * version, then each header's name and value, with nothing between them
 * but those NULs (one per byte of ' ', ':', CR, LF) and the blanks after a
 * ' ' or ':'. A string cut short by a NUL of the client's leaves its rest
 * between it and the next string, which is what follows() finds. */
#include "daemon/http_head.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "common/banned.h"

void http_head_note_target(struct http_head *h, const char *uri, size_t max_params)
{
    size_t n = strlen(uri), params = 0;
    const char *q = memchr(uri, '?', n);
    h->target = uri;
    h->target_len = n;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)uri[i] < 0x20 || uri[i] == 0x7f)
            h->bad_byte = 1;
    if (q)
        for (const char *p = q; *p; p++)
            params += *p == '?' || *p == '&';
    h->too_long = n > HTTP_HEAD_MAX_TARGET;
    h->too_many_params = params > max_params;
    /* the buffer is the connection's own; only the callback's type is const */
    if (q && (h->too_long || h->too_many_params))
        ((char *)q)[1] = '\0';
}

/* Whether `next` starts right after the string s and the separators that
 * libmicrohttpd wrote in place of ' ' or ':' (blanks: the blanks after it)
 * or of a line end (CRLF or LF). */
static int follows(const char *s, const char *next, int blanks)
{
    uintptr_t p = (uintptr_t)(s + strlen(s)) + 1, end = (uintptr_t)next;
    if (blanks)
        while (p < end && (*(const char *)p == ' ' || *(const char *)p == '\t'))
            p++;
    else if (p < end && *(const char *)p == '\0')
        p++;
    return p == end;
}

/* No control byte but a tab (in values). */
static int clean(const char *s, int tab_ok)
{
    for (; *s; s++)
        if (((unsigned char)*s < 0x20 && !(tab_ok && *s == '\t')) || *s == 0x7f)
            return 0;
    return 1;
}

struct walk {
    const char *prev;   /* the string before the next header's name */
    int broken;         /* a string cut short, or a control byte */
    size_t bytes;       /* the head's size */
    const char *length; /* the first Content-Length */
    int lengths_differ, chunked;
};

static enum MHD_Result walk_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                   const char *value, size_t value_size)
{
    struct walk *w = cls;
    (void)kind;
    if (!value || !follows(w->prev, key, 0) || !follows(key, value, 1) || !clean(key, 0) ||
        !clean(value, 1)) {
        w->broken = 1;
        return MHD_NO;
    }
    w->prev = value;
    w->bytes += key_size + value_size + 4;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (w->length && strcmp(w->length, value) != 0)
            w->lengths_differ = 1;
        w->length = value;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        w->chunked = 1;
    }
    return MHD_YES;
}

int http_head_check(struct MHD_Connection *c, const struct http_head *h, const char *method,
                    const char *version, size_t max_header, struct api_reply *r)
{
    struct walk w = {version, 0, 0, NULL, 0, 0};
    if (!h->target || h->bad_byte || !follows(method, h->target, 1) ||
        version != h->target + h->target_len + 1 || !clean(method, 0))
        return api_fail(r, API_E_BAD_REQUEST, "a NUL or control byte in the request line"), -1;
    if (h->too_long)
        return api_fail(r, API_E_URI_TOO_LONG, "the request target is %zu bytes, over %d", h->target_len,
                        HTTP_HEAD_MAX_TARGET), -1;
    if (h->too_many_params)
        return api_fail(r, API_E_BAD_REQUEST, "too many query parameters"), -1;
    w.bytes = strlen(method) + h->target_len + strlen(version) + 4;
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, walk_header, &w);
    /* the last header's line end is followed by the blank line's */
    if (w.broken || w.prev[strlen(w.prev) + 1] != '\0')
        return api_fail(r, API_E_BAD_REQUEST, "a NUL or control byte in a header, or a folded header"), -1;
    if (w.lengths_differ)
        return api_fail(r, API_E_BAD_REQUEST, "Content-Length headers that differ"), -1;
    if (w.length && w.chunked)
        return api_fail(r, API_E_BAD_REQUEST, "both Content-Length and Transfer-Encoding"), -1;
    if (w.bytes > max_header)
        return api_fail(r, API_E_HEADERS_TOO_LARGE, "the request line and headers are %zu bytes, over max-header (%zu)",
                        w.bytes, max_header), -1;
    return 0;
}
