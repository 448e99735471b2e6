/* tests/pg_server.c: a real PostgreSQL server for one test (pg_server.h). */
#include "tests/pg_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/helpers.h"

#define PG_SCRIPT "tests/pg_server.sh"
#define PG_SKIP 77

/* the servers this process started, stopped at exit */
static char started[4][PATH_MAX];
static int n_started;

static void stop_all(void)
{
    for (int i = 0; i < n_started; i++) {
        char *argv[] = {"/bin/sh", PG_SCRIPT, "stop", started[i], NULL};
        char *out = NULL, *err = NULL;
        if (th_run(argv, &out, &err) != 0)
            fprintf(stderr, "could not stop the PostgreSQL server in %s: %s\n", started[i], err ? err : "");
        free(out);
        free(err);
    }
    n_started = 0;
}

void pg_server_start(struct pg_server *p)
{
    static int registered;
    char *out = NULL, *err = NULL;
    REQUIRE(n_started < (int)(sizeof started / sizeof *started));
    if (access(PG_SCRIPT, R_OK))
        SKIP("%s is not here: run the tests from the repository's root", PG_SCRIPT);
    /* as root the server runs as `postgres`, which must reach its folder */
    REQUIRE(chmod(th_tmpdir(), 0711) == 0);
    snprintf(p->dir, sizeof p->dir, "%s/pg%d", th_tmpdir(), n_started);
    REQUIRE(mkdir(p->dir, 0700) == 0);
    char *argv[] = {"/bin/sh", PG_SCRIPT, "start", p->dir, NULL};
    int rc = th_run(argv, &out, &err);
    if (rc == PG_SKIP) {
        char why[512];
        snprintf(why, sizeof why, "%s", err ? err : "");
        why[strcspn(why, "\n")] = '\0';
        free(out);
        free(err);
        SKIP("%s", why);
    }
    if (rc != 0 || !out)
        sc_check_fail(__FILE__, __LINE__, "%s start failed (%d): %s", PG_SCRIPT, rc, err ? err : "");
    REQUIRE(rc == 0 && out);
    out[strcspn(out, "\n")] = '\0';
    snprintf(p->url, sizeof p->url, "%s", out);
    free(out);
    free(err);
    snprintf(started[n_started++], PATH_MAX, "%s", p->dir);
    if (!registered++)
        atexit(stop_all);
}

void pg_server_ctl(const struct pg_server *p, const char *cmd)
{
    char *argv[] = {"/bin/sh", PG_SCRIPT, (char *)cmd, (char *)p->dir, NULL};
    char *out = NULL, *err = NULL;
    int rc = th_run(argv, &out, &err);
    if (rc != 0)
        sc_check_fail(__FILE__, __LINE__, "%s %s failed (%d): %s", PG_SCRIPT, cmd, rc, err ? err : "");
    free(out);
    free(err);
}

void pg_server_use(void)
{
    static struct pg_server pg;
    pg_server_start(&pg);
    REQUIRE(setenv("STEPCAST_STORE", pg.url, 1) == 0);
}
