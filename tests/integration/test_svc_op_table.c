/* tests/integration/test_svc_op_table.c: the operation list (api/ops.def)
 * against the real daemon, operation by operation: each one is routed to
 * a handler whose answer is one the OpenAPI document lists for it, its
 * success reply is documented, and each typed query parameter refuses a
 * bad value (and a value past its bounds, and its absence when required)
 * with an error that names it, before any handler runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/query.h"
#include "api/routes.h"
#include "tests/check.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* The op's path with its parameters filled in (ids that exist nowhere). */
static void instantiate(const char *tmpl, char *out, size_t n)
{
    static const char *const from[] = {"{job}", "{id}", "{rank}", "{file}"};
    static const char *const to[] = {"tj", "tid", "0", "nothing.js"};
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 16 < n;) {
        size_t i;
        for (i = 0; i < 4 && strncmp(p, from[i], strlen(from[i])); i++)
            ;
        if (i < 4) {
            k += (size_t)snprintf(out + k, n - k, "%s", to[i]);
            p += strlen(from[i]);
        } else {
            out[k++] = *p++;
        }
    }
    out[k] = '\0';
}

/* The operation's object in the document. */
static json_t *documented(json_t *doc, const struct api_op_info *op)
{
    char method[8];
    size_t k;
    for (k = 0; op->method[k] && k + 1 < sizeof method; k++)
        method[k] = (char)(op->method[k] | 0x20);
    method[k] = '\0';
    return json_object_get(json_object_get(json_object_get(doc, "paths"), op->path), method);
}

/* A value of p's type that it must refuse; NULL when any text is one. */
static const char *bad_value(const struct api_query_param *p)
{
    switch (p->type) {
    case API_Q_INT:
    case API_Q_NUMBER:
        return "12x";
    case API_Q_BOOL:
        return "maybe";
    case API_Q_ENUM:
        return "nope";
    case API_Q_ID:
        return "-bad";
    case API_Q_STRING:
        return p->form ? "!" : NULL;
    }
    return NULL;
}

/* A value p takes into out; 0 when its form does not say one. */
static int good_value(const struct api_query_param *p, char *out, size_t n)
{
    switch (p->type) {
    case API_Q_INT:
        snprintf(out, n, "%.0f", p->min);
        return 1;
    case API_Q_NUMBER:
        snprintf(out, n, "%g", p->min);
        return 1;
    case API_Q_BOOL:
        snprintf(out, n, "true");
        return 1;
    case API_Q_ENUM:
        snprintf(out, n, "%.*s", (int)strcspn(p->form, ","), p->form);
        return 1;
    case API_Q_ID:
        snprintf(out, n, "x1");
        return 1;
    case API_Q_STRING:
        snprintf(out, n, "x");
        return p->form == NULL;
    }
    return 0;
}

/* A request of op with query q: its status; the body must name `name`. */
static long expect_named(const struct svc_daemon *d, const struct api_op_info *op, const char *path, const char *q,
                         const char *name, long want)
{
    char url[512];
    struct svc_resp r;
    snprintf(url, sizeof url, "%s?%s", path, q);
    long got = svc_admin(d, op->method, url, op->body == API_BODY_NONE ? NULL : "{}", &r);
    if (got != want)
        fprintf(stderr, "%s %s: %ld, not %ld: %s\n", op->method, url, got, want, r.body ? r.body : "");
    CHECK_EQ_INT(got, want);
    CHECK_CONTAINS(r.body, name);
    svc_resp_release(&r);
    return got;
}

TEST(svc_every_operation_is_handled_documented_and_its_query_typed)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    REQUIRE(svc_admin(&d, "GET", "/v1/openapi.json", NULL, &r) == 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    REQUIRE(doc != NULL);
    size_t typed = 0;

    for (int i = 0; i < API_OP_COUNT; i++) {
        const struct api_op_info *op = api_op_info((enum api_op)i);
        char path[256], code[8];
        json_t *o = documented(doc, op), *responses = json_object_get(o, "responses");
        snprintf(code, sizeof code, "%u", op->success);
        /* documented, with a reply */
        CHECK(o != NULL);
        CHECK(json_object_get(json_object_get(responses, code), "content") != NULL);
        /* routed to a handler (its required parameters given), whose
         * answer is one the document lists */
        instantiate(op->path, path, sizeof path);
        char url[512];
        size_t n = (size_t)snprintf(url, sizeof url, "%s", path);
        const struct api_query_param *p;
        for (size_t k = 0; (p = api_query_param((enum api_op)i, k)); k++) {
            char good[64];
            if ((p->flags & API_QF_REQUIRED) && good_value(p, good, sizeof good))
                n += (size_t)snprintf(url + n, sizeof url - n, "%c%s=%s", strchr(url, '?') ? '&' : '?', p->name, good);
        }
        long got = svc_admin(&d, op->method, url, op->body == API_BODY_NONE ? NULL : "{}", &r);
        snprintf(code, sizeof code, "%ld", got);
        if (!json_object_get(responses, code))
            fprintf(stderr, "%s %s: %ld is not documented: %s\n", op->method, url, got, r.body ? r.body : "");
        CHECK(json_object_get(responses, code) != NULL);
        svc_resp_release(&r);

        for (size_t k = 0; (p = api_query_param((enum api_op)i, k)); k++) {
            char q[128];
            const char *bad = bad_value(p);
            if (bad) {
                snprintf(q, sizeof q, "%s=%s", p->name, bad);
                expect_named(&d, op, path, q, p->name, 400);
                typed++;
            }
            if (p->type == API_Q_INT) {
                snprintf(q, sizeof q, "%s=%.0f", p->name, p->max + 1);
                expect_named(&d, op, path, q, p->name, p->flags & API_QF_CAP ? 422 : 400);
                snprintf(q, sizeof q, "%s=%.0f", p->name, p->min - 1);
                expect_named(&d, op, path, q, p->name, 400);
            }
            if (p->flags & API_QF_REQUIRED)
                expect_named(&d, op, path, "", p->name, 400);
            char good[64];
            if (!(p->flags & API_QF_REPEAT) && good_value(p, good, sizeof good)) {
                snprintf(q, sizeof q, "%s=%s&%s=%s", p->name, good, p->name, good);
                expect_named(&d, op, path, q, p->name, 400);
            }
        }
        expect_named(&d, op, path, "no_such_parameter=1", "no_such_parameter", 400);
    }
    CHECK(typed >= 20); /* the list declares typed parameters (20 when written) */
    json_decref(doc);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
