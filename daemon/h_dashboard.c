/* daemon/h_dashboard.c: the web dashboard, served from the table built into
 * stepcastd (dashboard.h): `/` is its page, `/ui/{file}` the rest. The
 * name in the path is only compared with the table's names; the content
 * type comes from the table's name. Every reply of the server carries the
 * dashboard's Content-Security-Policy (server.c). */
#include "daemon/dispatch.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/dashboard.h"
#include "common/banned.h"

static const char *content_type(const char *name)
{
    static const struct {
        const char *suffix, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
    };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t k = strlen(types[i].suffix);
        if (n > k && strcmp(name + n - k, types[i].suffix) == 0)
            return types[i].type;
    }
    return "application/octet-stream";
}

void h_dashboard(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *want = q->op == API_OP_DASHBOARD ? "index.html" : q->params.id;
    (void)s;
    for (const struct sc_embedded *f = dashboard_files; f->name; f++) {
        if (strcmp(f->name, want) != 0)
            continue;
        char *copy = malloc(f->len ? f->len : 1);
        if (!copy) {
            api_fail(r, API_E_UNAVAILABLE, "out of memory");
            return;
        }
        memcpy(copy, f->data, f->len);
        api_reply_take(r, 200, content_type(f->name), copy, f->len);
        return;
    }
    api_fail(r, API_E_NOT_FOUND, "the dashboard has no file '%s'", want);
}
