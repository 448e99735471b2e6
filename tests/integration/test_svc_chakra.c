/* tests/integration/test_svc_chakra.c: a built model's Chakra export over
 * HTTP (GET /v1/models/{id}/chakra, a tar) and through the command line
 * (`stepcast export chakra --model ID`): the same files, node for node,
 * as the local export of the same traces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/archive.h"
#include "model/chakra_et.h"
#include "model/stream.h"
#include <jansson.h>
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

/* How many framed messages buf[0..n) holds, or -1. */
static long messages(const void *buf, size_t n)
{
    struct model_et_cursor c = {buf, n, 0};
    const unsigned char *msg;
    size_t len;
    struct sc_error err;
    long k = 0;
    int r;
    while ((r = model_et_next(&c, &msg, &len, &err)) == 1)
        k++;
    return r == 0 ? k : -1;
}

/* The messages in dir/name, or -1. */
static long file_messages(const char *dir, const char *name)
{
    char path[4400];
    size_t n;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *data = th_read_file(path, &n);
    long k = data ? messages(data, n) : -1;
    free(data);
    return k;
}

TEST(svc_chakra_export_equals_cli)
{
    struct svc_daemon d;
    char gen[4096], local[4200], remote[4200], path[256], files[4][4200];
    const char *paths[4];
    char *stepcast = strdup(th_build_path("stepcast"));
    th_gentrace_dir(4, (const char *const[]){"--steps", "1", "--layers", "2", NULL}, gen, sizeof gen);
    for (int r = 0; r < 4; r++) {
        snprintf(files[r], sizeof files[r], "%s/rank%d.json", gen, r);
        paths[r] = files[r];
    }
    snprintf(local, sizeof local, "%s/chakra-local", th_tmpdir());
    snprintf(remote, sizeof remote, "%s/chakra-remote", th_tmpdir());
    char *lo[] = {stepcast, "export", "chakra", "--out", local, gen, NULL};
    CHECK_EQ_INT(th_run(lo, NULL, NULL), 0);

    svc_start(&d, NULL, NULL, NULL);
    char *model = svc_model_of_files(&d, "g", 0, paths, 4);
    struct svc_resp r;
    snprintf(path, sizeof path, "/v1/models/%s/chakra", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    struct model_archive *a = NULL;
    struct sc_error err;
    int members = 0;
    if (r.body && model_archive_open_mem(r.body, r.len, "reply", &a, &err) == SC_OK) {
        const char *name;
        struct model_stream *m;
        while (model_archive_next(a, &name, &m, &err) == SC_OK && m) {
            members++;
            CHECK(!strcmp(name, "comm_group.json") || !strncmp(name, "stepcast.", 9));
        }
    }
    model_archive_free(a);
    svc_resp_release(&r);
    CHECK_EQ_INT(members, 5);
    snprintf(path, sizeof path, "/v1/models/%s/chakra?prefix=a/b", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 400);
    svc_resp_release(&r);

    /* the command line against the server: the local export's files */
    setenv("STEPCAST_SERVER", d.url, 1);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *re[] = {stepcast, "export", "chakra", "--out", remote, "--model", model, NULL};
    CHECK_EQ_INT(th_run(re, NULL, NULL), 0);
    unsetenv("STEPCAST_SERVER");
    unsetenv("STEPCAST_TOKEN");
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "stepcast.%d.et", k);
        long n = file_messages(local, name);
        CHECK(n > 10);
        CHECK_EQ_INT(file_messages(remote, name), n);
    }
    char lg[4400], rg[4400];
    size_t ln, rn;
    snprintf(lg, sizeof lg, "%s/comm_group.json", local);
    snprintf(rg, sizeof rg, "%s/comm_group.json", remote);
    char *lt = th_read_file(lg, &ln), *rt = th_read_file(rg, &rn);
    CHECK(lt && rt && ln == rn && !memcmp(lt, rt, ln));
    free(lt);
    free(rt);

    /* the exported files uploaded as a job's ranks: replayed as the
     * command line replays the folder, one step each, nothing measured */
    char ets[4][4400];
    const char *et_paths[4];
    for (int k = 0; k < 4; k++) {
        snprintf(ets[k], sizeof ets[k], "%s/stepcast.%d.et", local, k);
        et_paths[k] = ets[k];
    }
    char *et_model = svc_model_of_files(&d, "et", 0, et_paths, 4);
    char *et_argv[] = {stepcast, "replay", "--json", local, NULL}, *out = NULL;
    CHECK_EQ_INT(th_run(et_argv, &out, NULL), 0);
    json_t *cli = out ? json_loads(out, 0, NULL) : NULL, *http = NULL;
    snprintf(path, sizeof path, "/v1/models/%s/replay", et_model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    http = r.body ? json_loads(r.body, 0, NULL) : NULL;
    svc_resp_release(&r);
    json_t *hs = json_object_get(http, "steps"), *cs = json_object_get(cli, "steps");
    CHECK_EQ_INT(json_array_size(hs), 4);
    for (size_t k = 0; k < json_array_size(hs); k++) {
        json_t *h = json_array_get(hs, k), *c = json_array_get(cs, k);
        CHECK(json_is_null(json_object_get(h, "measured_ms")) && !json_object_get(h, "error_pct"));
        CHECK_NEAR(json_number_value(json_object_get(h, "replayed_ms")),
                   json_number_value(json_object_get(c, "replayed_ms")), 1e-9);
    }
    json_decref(cli);
    json_decref(http);
    free(out);
    /* the command line uploads the folder's .et files, each as the rank
     * its name says, and leaves its communicator table */
    char *up[] = {stepcast, "upload", "--job", "et-cli", local, NULL}, *uerr = NULL;
    setenv("STEPCAST_SERVER", d.url, 1);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    CHECK_EQ_INT(th_run(up, NULL, &uerr), 0);
    CHECK_CONTAINS(uerr, "uploaded 4 traces to job et-cli (4 new)");
    free(uerr);
    unsetenv("STEPCAST_SERVER");
    unsetenv("STEPCAST_TOKEN");
    /* a file that says it is rank 2, sent as rank 3 */
    snprintf(path, sizeof path, "/v1/jobs/wrong/ranks/3/trace");
    CHECK_EQ_INT(svc_call(&d, "PUT", path, &(struct svc_opts){.token = SVC_ADMIN, .file = ets[2]}, &r), 422);
    CHECK_CONTAINS(r.body, "rank 2");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
    free(et_model);
    free(model);
    free(stepcast);
}
