/* tests/integration/test_svc_pg.c: stepcastd on a real PostgreSQL
 * (--store postgresql://...), a server of the test's own
 * (tests/pg_server.h). */
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "tests/check.h"
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
