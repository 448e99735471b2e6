/* api/page.c: list pages (page.h). */
#include "api/page.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static int hex_val(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The key out of a cursor's hex; 0 when it is not one. */
static int cursor_key(const char *cursor, struct api_page *p)
{
    char text[API_PAGE_CURSOR_MAX / 2 + 1], *colon, *end;
    size_t n = strlen(cursor);
    if (n == 0 || n % 2 || n / 2 >= sizeof text)
        return 0;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_val(cursor[i]), lo = hex_val(cursor[i + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        text[i / 2] = (char)(hi * 16 + lo);
    }
    text[n / 2] = '\0';
    if (!(colon = strchr(text, ':')))
        return 0;
    *colon = '\0';
    errno = 0;
    long long num = strtoll(text, &end, 10);
    if (errno || end == text || *end || strlen(colon + 1) >= sizeof p->after_id)
        return 0;
    p->after_num = num;
    snprintf(p->after_id, sizeof p->after_id, "%s", colon + 1);
    return 1;
}

int api_page_parse(size_t limit, const char *cursor, struct api_page *out, struct api_reply *err)
{
    memset(out, 0, sizeof *out);
    out->limit = limit ? limit : API_PAGE_DEFAULT;
    if (cursor) {
        if (!cursor_key(cursor, out))
            return api_fail(err, API_E_BAD_REQUEST, "cursor is not one a page of this list gave");
        out->has_after = 1;
    }
    return SC_OK;
}

void api_page_cursor(int64_t num, const char *id, char out[API_PAGE_CURSOR_MAX])
{
    char text[API_PAGE_CURSOR_MAX / 2 + 1];
    int n = snprintf(text, sizeof text, "%" PRId64 ":%s", num, id);
    assert(n >= 0 && (size_t)n < sizeof text); /* an id (under API_ID_MAX) fits whole */
    size_t k = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    for (size_t i = 0; i < k; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)text[i]);
    out[2 * k] = '\0';
}

json_t *api_list_doc(const char *key, json_t *items, const struct api_list_meta *m)
{
    if (!items)
        return NULL;
    return json_pack("{s:o, s:o, s:I}", key, items, "next_cursor",
                     m->next_cursor ? json_string(m->next_cursor) : json_null(), "skipped", (json_int_t)m->skipped);
}

size_t api_page_first(const struct api_page *pg)
{
    return pg->has_after && pg->after_num > 0 ? (size_t)pg->after_num : 0;
}
