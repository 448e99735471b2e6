/* tests/integration/test_svc_migrate.c: stepcastd --migrate, the sample's
 * SQLite catalog and blobs copied to a real PostgreSQL
 * (tests/pg_server.h), then served from there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/pg_server.h"
#include "common/banned.h"

/* The answers a migrated catalog must give as its source did. */
#define N_ROUTES 5

static void answers(const struct svc_daemon *d, const char *model, const char *token, json_t *out[N_ROUTES])
{
    char paths[N_ROUTES][128];
    snprintf(paths[0], sizeof paths[0], "/v1/jobs/sample");
    snprintf(paths[1], sizeof paths[1], "/v1/models/%s", model);
    snprintf(paths[2], sizeof paths[2], "/v1/tokens");
    snprintf(paths[3], sizeof paths[3], "/v1/models/%s/replay", model);
    snprintf(paths[4], sizeof paths[4], "/v1/validations");
    for (int i = 0; i < N_ROUTES; i++) {
        struct svc_resp r;
        /* the read token where it may read: it must have come across */
        CHECK_EQ_INT(svc_call_as(d, i == 2 ? SVC_ADMIN : token, "GET", paths[i], NULL, &r), 200);
        out[i] = json_loads(r.body ? r.body : "", 0, NULL);
        REQUIRE(out[i]);
        svc_resp_release(&r);
    }
}

static int run_migrate(const char *from, const char *to, const char *data_dir, char **out, char **err)
{
    char *argv[] = {(char *)th_build_path("stepcastd"), "--migrate", "--from", (char *)from, "--to", (char *)to,
                    "--data-dir", (char *)data_dir, NULL};
    return th_run(argv, out, err);
}

/* The sample job uploaded and built on the default SQLite store (as `make
 * run` does), a token and a ledger entry added; migrated to PostgreSQL
 * with its blobs into a new data directory: a daemon there answers the
 * job, the model, the tokens, the replay and the ledger as the SQLite
 * daemon did, and --check passes on both stores. A second run refuses the
 * catalog, not empty any more, and changes nothing. */
TEST(svc_migrate_sample_from_sqlite_to_postgresql)
{
    static const char entry[] = "{\"spec\":{\"model\":{\"layers\":2,\"hidden\":256,\"heads\":4,\"seq\":256},"
                                "\"cluster\":{\"gpu\":\"h100-sxm\"}},\"measured_step_ms\":5.123456789012345,"
                                "\"source\":\"t\"}";
    const char *files[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz", "data/sample/rank2.json.gz",
                           "data/sample/rank3.json.gz"};
    struct pg_server pg;
    struct svc_daemon d;
    struct svc_resp r;
    json_t *before[N_ROUTES], *after[N_ROUTES];
    char src[4200], dst[4200], from[4300], reader[128], *out = NULL, *err = NULL, *report = NULL;
    pg_server_start(&pg);
    snprintf(src, sizeof src, "%s/sqlite", th_tmpdir());
    snprintf(dst, sizeof dst, "%s/pg-data", th_tmpdir());
    snprintf(from, sizeof from, "sqlite:%s/catalog.db", src);

    svc_start(&d, src, NULL, NULL);
    char *model = svc_model_of_files(&d, "sample", 0, files, 4);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/tokens", "{\"scope\":\"read\",\"name\":\"dashboards\"}", &r), 201);
    snprintf(reader, sizeof reader, "%s", svc_json_str(r.body, "token"));
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/validations", entry, NULL), 201);
    answers(&d, model, reader, before);
    CHECK_EQ_INT(svc_stop(&d), 0);

    CHECK_EQ_INT(run_migrate(from, pg.url, dst, &out, &err), 0);
    CHECK_CONTAINS(out, "table traces: 4 rows");
    /* every blob row copied as a file: the 4 traces and the built model */
    CHECK_CONTAINS(out, "table blobs: 5 rows");
    CHECK_CONTAINS(out, "blobs: 5 files");
    CHECK_CONTAINS(out, "migrated");
    free(out);
    free(err);

    const char *const args[] = {"--store", pg.url, NULL};
    svc_start(&d, dst, args, NULL);
    answers(&d, model, reader, after);
    for (int i = 0; i < N_ROUTES; i++) {
        if (!json_equal(before[i], after[i])) {
            char *a = json_dumps(before[i], JSON_COMPACT), *b = json_dumps(after[i], JSON_COMPACT);
            sc_check_fail(__FILE__, __LINE__, "answer %d differs:\n  sqlite:     %.600s\n  postgresql: %.600s", i,
                          a, b);
            free(a);
            free(b);
        }
        json_decref(before[i]);
        json_decref(after[i]);
    }
    CHECK_EQ_INT(svc_stop(&d), 0);

    CHECK_EQ_INT(svc_run_check(src, &report), 0);
    CHECK_CONTAINS(report, "consistent");
    free(report);
    setenv("STEPCAST_STORE", pg.url, 1);
    CHECK_EQ_INT(svc_run_check(dst, &report), 0);
    CHECK_CONTAINS(report, "catalog: PostgreSQL answers");
    CHECK_CONTAINS(report, "consistent");
    free(report);
    unsetenv("STEPCAST_STORE");

    CHECK(run_migrate(from, pg.url, dst, &out, &err) != 0);
    CHECK_CONTAINS(err, "not empty");
    CHECK_CONTAINS(err, "nothing was copied");
    free(out);
    free(err);
    free(model);
}
