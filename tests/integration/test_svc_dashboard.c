/* tests/integration/test_svc_dashboard.c: the dashboard's files as a real
 * stepcastd serves them: only what its built-in table holds, with the
 * content type of each and the Content-Security-Policy; the pages themselves
 * are tested in a browser (tests/browser/dashboard.mjs). */
#include <string.h>

#include "tests/check.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

TEST(svc_dashboard_files)
{
    struct svc_daemon d;
    struct svc_resp r;
    /* no token needed, even where /healthz and /metrics need one */
    const char *args[] = {"--ops-need-token", "true", NULL};
    svc_start(&d, NULL, args, NULL);

    CHECK_EQ_INT(svc_call(&d, "GET", "/", NULL, &r), 200);
    CHECK_CONTAINS(r.headers, "Content-Type: text/html; charset=utf-8");
    CHECK_CONTAINS(r.headers, "Content-Security-Policy: default-src 'none'; script-src 'self';");
    CHECK_CONTAINS(r.headers, "X-Content-Type-Options: nosniff");
    CHECK_CONTAINS(r.body, "<script src=\"/ui/app.js\" type=\"module\"></script>");
    CHECK(!strstr(r.body, "<script>")); /* nothing inline */
    svc_resp_release(&r);

    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/app.js", NULL, &r), 200);
    CHECK_CONTAINS(r.headers, "Content-Type: text/javascript");
    CHECK(!strstr(r.body, "innerHTML"));
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/chart.umd.min.js", NULL, &r), 200);
    CHECK(r.len > 100000);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/style.css", NULL, &r), 200);
    CHECK_CONTAINS(r.headers, "Content-Type: text/css");
    svc_resp_release(&r);

    /* a name the table lacks, or a path that is no name of it */
    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/nothing.js", NULL, &r), 404);
    CHECK_STREQ(svc_error_code(&r), "not_found");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/..%2fcatalog.db", NULL, &r), 404);
    CHECK_STREQ(svc_error_code(&r), "no_route");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/.catalog.db", NULL, &r), 400);
    CHECK_STREQ(svc_error_code(&r), "invalid_id");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "GET", "/ui/js/app.js", NULL, &r), 404);
    CHECK_STREQ(svc_error_code(&r), "no_route");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_call(&d, "POST", "/", NULL, &r), 405);
    CHECK_STREQ(svc_error_code(&r), "method_not_allowed");
    svc_resp_release(&r);
    /* the API stays behind its token */
    CHECK_EQ_INT(svc_call(&d, "GET", "/healthz", NULL, &r), 401);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
