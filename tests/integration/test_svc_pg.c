/* tests/integration/test_svc_pg.c: stepcastd on a real PostgreSQL
 * (--store postgresql://...), a server of the test's own
 * (tests/pg_server.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "daemon/store.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/pg_server.h"

/* The harness's server answers on its socket and listens on no TCP port. */
TEST(pg_server_runs_on_a_unix_socket_only)
{
    struct pg_server pg;
    pg_server_start(&pg);
    PGconn *c = PQconnectdb(pg.url);
    REQUIRE(c);
    if (PQstatus(c) != CONNECTION_OK)
        sc_check_fail(__FILE__, __LINE__, "connect %s: %s", pg.url, PQerrorMessage(c));
    REQUIRE(PQstatus(c) == CONNECTION_OK);
    PGresult *r = PQexec(c, "SHOW listen_addresses");
    REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1);
    CHECK_STREQ(PQgetvalue(r, 0, 0), "");
    PQclear(r);
    PQfinish(c);
}

/* The one value of a query on the test's server (from malloc). */
static char *pg_value(const char *url, const char *query)
{
    PGconn *c = PQconnectdb(url);
    REQUIRE(c && PQstatus(c) == CONNECTION_OK);
    PGresult *r = PQexec(c, query);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        sc_check_fail(__FILE__, __LINE__, "%s: %s", query, PQresultErrorMessage(r));
    REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1);
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return v;
}

/* Two daemons (a data directory each) started at once on one empty
 * database: the schema is created once, both serve, and what one wrote
 * the other reads. */
TEST(svc_pg_two_daemons_start_at_once)
{
    struct pg_server pg;
    struct svc_daemon d[2];
    struct svc_resp r;
    char dirs[2][4200];
    pg_server_start(&pg);
    const char *const data[] = {dirs[0], dirs[1]};
    const char *const args[] = {"--store", pg.url, NULL};
    for (int i = 0; i < 2; i++)
        snprintf(dirs[i], sizeof dirs[i], "%s/data%d", th_tmpdir(), i);
    svc_start_many(d, 2, data, args, NULL);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_admin(&d[i], "GET", "/healthz", NULL, NULL), 200);
    char *v = pg_value(pg.url, "SELECT string_agg(version::text, ',') FROM stepcast_schema"), want[16];
    snprintf(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    CHECK_STREQ(v, want);
    free(v);
    CHECK_EQ_INT(svc_admin(&d[0], "PUT", "/v1/jobs/shared", "{\"description\":\"one\"}", NULL), 201);
    CHECK_EQ_INT(svc_admin(&d[1], "GET", "/v1/jobs/shared", NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "description"), "one");
    svc_resp_release(&r);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_stop(&d[i]), 0);
}

/* stepcastd --check on a PostgreSQL store says what it checked. */
TEST(svc_pg_check_reports_the_store)
{
    struct svc_daemon d;
    char *report = NULL;
    size_t n;
    pg_server_use();
    svc_start(&d, NULL, NULL, NULL);
    char *t = svc_small_trace(0, 3, 7, &n);
    struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/j/ranks/0/trace", &o, NULL), 201);
    free(t);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, &report), 0);
    CHECK_CONTAINS(report, "catalog: PostgreSQL answers");
    CHECK_CONTAINS(report, "blobs: 1 rows");
    CHECK_CONTAINS(report, "consistent");
    free(report);
}

/* PostgreSQL restarted under a running daemon: /healthz says 503 while it
 * is down, the catalog answers again once it is back, with no restart of
 * the daemon, and nothing acknowledged is lost. */
TEST(svc_pg_restart_of_postgresql)
{
    struct pg_server pg;
    struct svc_daemon d;
    struct svc_resp r;
    pg_server_start(&pg);
    const char *const args[] = {"--store", pg.url, NULL};
    svc_start(&d, NULL, args, NULL);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/healthz", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"store\":{\"engine\":\"postgresql\",\"reachable\":true}");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/before", "{}", NULL), 201);

    pg_server_ctl(&pg, "stop");
    CHECK_EQ_INT(svc_admin(&d, "GET", "/healthz", NULL, &r), 503);
    CHECK_CONTAINS(r.body, "\"reachable\":false");
    CHECK_CONTAINS(r.body, "\"status\":\"store_unreachable\"");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs", NULL, &r), 503);
    CHECK_STREQ(svc_error_code(&r), "unavailable");
    svc_resp_release(&r);

    pg_server_ctl(&pg, "start");
    CHECK_EQ_INT(svc_admin(&d, "GET", "/healthz", NULL, NULL), 200);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/after", "{}", NULL), 201);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/before", NULL, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
