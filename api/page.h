/* api/page.h: pages of the list routes: `limit` and an opaque `cursor`.
 *
 * Every list route takes ?limit=N (1 to API_PAGE_MAX, API_PAGE_DEFAULT
 * when absent; more is 422) and ?cursor=C, the `next_cursor` of the page
 * before (null on the last page). A cursor names the last row of its page
 * by the list's order key, a number and an identifier (created_ns and id,
 * or an id alone), and the next page is the rows after that key: keyset
 * paging, so rows inserted or deleted between two pages neither repeat
 * nor hide the rows that were already there. Clients treat the cursor as
 * opaque; it is the key "NUM:ID" in hex. */
#ifndef API_PAGE_H
#define API_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/reply.h"
#include "api/resources.h"

#define API_PAGE_DEFAULT 100
#define API_PAGE_MAX 1000
/* A cursor's text: "NUM:ID" in hex, with its NUL. */
#define API_PAGE_CURSOR_MAX (2 * (20 + 1 + API_ID_MAX) + 1)

struct api_page {
    size_t limit;
    int has_after;          /* a cursor was given: rows after (after_num, after_id) */
    int64_t after_num;
    char after_id[API_ID_MAX];
};

/* The query values `limit` (decoded: 1 to API_PAGE_MAX, api/ops.def) and
 * `cursor` (NULL when absent) into *out. Else the reply: 400 bad_request
 * for a cursor that no page gave. */
int api_page_parse(size_t limit, const char *cursor, struct api_page *out, struct api_reply *err);

/* The cursor naming the row of key (num, id). */
void api_page_cursor(int64_t num, const char *id, char out[API_PAGE_CURSOR_MAX]);

/* The end of a list answer: the next page's cursor (NULL on the last
 * page), and the stored rows left out because they cannot be rendered
 * (set by the encoder). */
struct api_list_meta {
    const char *next_cursor;
    size_t skipped;
};

/* {key: items, "next_cursor": C or null, "skipped": N}: items stolen;
 * NULL (out of memory) when items is. */
json_t *api_list_doc(const char *key, json_t *items, const struct api_list_meta *m);

/* The index of the first row of page pg of a ranked list: the rank its
 * cursor names (0 without a cursor). */
size_t api_page_first(const struct api_page *pg);

/* The ranked lists (GET /v1/fleet, /v1/opportunities) are paged alike, by
 * rank: a cursor names the last row's rank and id, the next page starts at
 * the rank after it; `top` is the page's size under its older name (limit
 * and top together are 400: api/ops.def). */

#endif
