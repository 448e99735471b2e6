/* tests/pg_server.h: a real PostgreSQL server for one test.
 *
 * pg_server_start() runs tests/pg_server.sh (initdb and pg_ctl, a Unix
 * socket in a folder of the test's temp dir, no TCP) and gives the libpq
 * URL that stepcastd's --store takes. The server is stopped when the test
 * process exits. The test is SKIPped, saying why, where PostgreSQL is not
 * installed. */
#ifndef TESTS_PG_SERVER_H
#define TESTS_PG_SERVER_H

#include <limits.h>

struct pg_server {
    char dir[PATH_MAX];       /* its data, socket and logs */
    char url[PATH_MAX + 64];  /* postgresql:///postgres?host=DIR&user=stepcast */
};

void pg_server_start(struct pg_server *p);

/* Stop the server (an immediate shutdown, as a crash) or start it again:
 * cmd "stop" or "start". */
void pg_server_ctl(const struct pg_server *p, const char *cmd);

/* Start one and point every stepcastd this test runs (daemons and
 * --check) at it: STEPCAST_STORE in the test's environment. */
void pg_server_use(void);

#endif
