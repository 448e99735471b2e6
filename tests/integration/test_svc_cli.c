/* tests/integration/test_svc_cli.c: the command line's remote mode against
 * a real stepcastd: upload (directory, tarball, one rank), build --wait,
 * replay and critical-path --model (the same output as the local commands),
 * jobs, models, tokens; and local mode beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* Run build/stepcast with args; stdout and stderr into *out / *err. */
static int cli(char **out, char **err, const char *a1, const char *a2, const char *a3, const char *a4,
               const char *a5, const char *a6)
{
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", th_build_path("stepcast"));
    char *argv[] = {bin, (char *)a1, (char *)a2, (char *)a3, (char *)a4, (char *)a5, (char *)a6, NULL};
    char *o = NULL, *e = NULL;
    int rc = th_run(argv, &o, &e);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

TEST(svc_cli_remote_mode)
{
    struct svc_daemon d;
    char gen[4096], tarball[4096], file[4200], tokfile[4096], *out = NULL, *err = NULL;
    snprintf(gen, sizeof gen, "%s/gen", th_tmpdir());
    snprintf(tarball, sizeof tarball, "%s/gen.tar.gz", th_tmpdir());
    char *gargv[] = {(char *)th_build_path("gentrace"), "--ranks", "4", "--steps", "2", "--gzip", gen, NULL};
    char gbin[4096];
    snprintf(gbin, sizeof gbin, "%s", gargv[0]);
    gargv[0] = gbin;
    CHECK_EQ_INT(th_run(gargv, NULL, NULL), 0);
    char *targv[] = {"/bin/tar", "-czf", tarball, "-C", gen, ".", NULL};
    CHECK_EQ_INT(th_run(targv, NULL, NULL), 0);
    snprintf(tokfile, sizeof tokfile, "%s", th_write_file("admin.token", SVC_ADMIN "\n", sizeof SVC_ADMIN));
    svc_start(&d, NULL, NULL, NULL);
    setenv("STEPCAST_SERVER", d.url, 1);
    unsetenv("STEPCAST_TOKEN");

    /* every rank of a directory, then of a tarball: the same blobs */
    CHECK_EQ_INT(cli(&out, &err, "--token-file", tokfile, "upload", "--job", "g", gen), 0);
    CHECK_EQ_INT(count(out, " created "), 4);
    CHECK_CONTAINS(err, "uploaded 4 traces to job g (4 new)");
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&out, NULL, "--token-file", tokfile, "upload", "--job", "g", tarball), 0);
    CHECK_EQ_INT(count(out, " identical "), 4);
    free(out);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    CHECK_EQ_INT(cli(&out, NULL, "upload", "--job", "t", tarball, NULL, NULL), 0);
    CHECK_EQ_INT(count(out, " created "), 4);
    free(out);
    /* one rank; a trace sent as another rank than it says is refused */
    snprintf(file, sizeof file, "%s/rank1.json.gz", gen);
    CHECK_EQ_INT(cli(NULL, &err, "upload", "--job", "one", "--rank", "5", file), 2);
    CHECK_CONTAINS(err, "unprocessable");
    free(err);
    CHECK_EQ_INT(cli(NULL, NULL, "upload", "--job", "one", "--rank", "1", file), 0);

    /* build, wait, replay: the same document as the local replay */
    CHECK_EQ_INT(cli(&out, NULL, "build", "--job", "g", "--wait", NULL, NULL), 0);
    char model[80];
    snprintf(model, sizeof model, "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    CHECK(strncmp(model, "m-", 2) == 0);
    /* replay and critical-path, as JSON and as tables, scaled too, the
     * path summed (--top) and listed (--all) */
    static const char *const forms[][3] = {
        {"replay", "--json", NULL},          {"replay", NULL, NULL},
        {"critical-path", "--json", NULL},   {"critical-path", NULL, NULL},
        {"replay", "--scale", "gpu=2"},      {"replay", "--keep-unexplained", NULL},
        {"opportunities", "--json", NULL},   {"opportunities", NULL, NULL},
        {"critical-path", "--top", "3"},     {"critical-path", "--all", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char *remote = NULL, *local = NULL;
        const char *const *f = forms[i];
        setenv("STEPCAST_SERVER", d.url, 1);
        CHECK_EQ_INT(cli(&remote, NULL, f[0], "--model", model, f[1], f[2], NULL), 0);
        /* the server named in the environment does not make the local
         * command (traces, no --model) a remote one */
        if (i % 2)
            unsetenv("STEPCAST_SERVER");
        const char *la[6] = {f[0]};
        size_t n = 1;
        for (int k = 1; k < 3 && f[k]; k++)
            la[n++] = f[k];
        la[n] = gen;
        CHECK_EQ_INT(cli(&local, NULL, la[0], la[1], la[2], la[3], la[4], la[5]), 0);
        CHECK(remote && local && strlen(remote) > 100);
        if (f[1] && !strcmp(f[1], "--json")) {
            json_t *a = json_loads(remote ? remote : "", 0, NULL), *b = json_loads(local ? local : "", 0, NULL);
            CHECK(a && b && json_equal(a, b));
            json_decref(a);
            json_decref(b);
        } else {
            CHECK_STREQ(remote ? remote : "", local ? local : "");
        }
        free(remote);
        free(local);
    }
    /* the fleet names the model; a diff of the model against itself, as locally */
    setenv("STEPCAST_SERVER", d.url, 1);
    CHECK_EQ_INT(cli(&out, NULL, "opportunities", "--fleet", "--top", "5", NULL, NULL), 0);
    CHECK_CONTAINS(out, model);
    free(out);
    char *remote_diff = NULL, *local_diff = NULL;
    CHECK_EQ_INT(cli(&remote_diff, NULL, "diff", "--model", model, "--other", model, NULL), 0);
    unsetenv("STEPCAST_SERVER");
    CHECK_EQ_INT(cli(&local_diff, NULL, "diff", gen, gen, NULL, NULL, NULL), 0);
    CHECK_STREQ(remote_diff ? remote_diff : "", local_diff ? local_diff : "");
    CHECK_CONTAINS(local_diff ? local_diff : "", "B - A = +0.000 ms");
    free(remote_diff);
    free(local_diff);
    CHECK_EQ_INT(cli(&out, NULL, "inspect", file, NULL, NULL, NULL, NULL), 0); /* local mode */
    CHECK_CONTAINS(out, "rank 1");
    free(out);
    CHECK_EQ_INT(cli(NULL, &err, "jobs", NULL, NULL, NULL, NULL, NULL), 2);
    CHECK_CONTAINS(err, "--server");
    free(err);
    setenv("STEPCAST_SERVER", d.url, 1);

    /* listings */
    CHECK_EQ_INT(cli(&out, NULL, "jobs", NULL, NULL, NULL, NULL, NULL), 0);
    CHECK_CONTAINS(out, "job");
    CHECK(strstr(out, "\ng ") && strstr(out, "\nt ") && strstr(out, "\none "));
    free(out);
    CHECK_EQ_INT(cli(&out, NULL, "jobs", "g", NULL, NULL, NULL, NULL), 0);
    CHECK_CONTAINS(out, model);
    free(out);
    CHECK_EQ_INT(cli(&out, NULL, "jobs", "--json", "g", NULL, NULL, NULL), 0);
    json_t *job = json_loads(out ? out : "", 0, NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(job, "traces")), 4);
    json_decref(job);
    free(out);
    CHECK_EQ_INT(cli(&out, NULL, "models", "--job", "g", NULL, NULL, NULL), 0);
    CHECK_CONTAINS(out, "ready");
    free(out);
    CHECK_EQ_INT(cli(&out, NULL, "models", model, NULL, NULL, NULL, NULL), 0);
    CHECK_CONTAINS(out, "\"summary\"");
    free(out);
    /* an identifier goes as one path segment, as written: never another resource */
    CHECK_EQ_INT(cli(NULL, &err, "jobs", "--delete", "../tokens/t-000000000000", NULL, NULL, NULL), 2);
    CHECK_CONTAINS(err, "no_route");
    free(err);
    CHECK_EQ_INT(cli(NULL, &err, "models", "a b?job=g", NULL, NULL, NULL, NULL), 2);
    CHECK_CONTAINS(err, "invalid_id");
    free(err);

    /* tokens: a read token reads, and is refused the rest */
    CHECK_EQ_INT(cli(&out, NULL, "tokens", "create", "--scope", "read", "--name", "ci"), 0);
    char secret[128];
    snprintf(secret, sizeof secret, "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    CHECK(strncmp(secret, "sct_", 4) == 0);
    CHECK_EQ_INT(cli(&out, NULL, "tokens", NULL, NULL, NULL, NULL, NULL), 0);
    CHECK_CONTAINS(out, "ci");
    CHECK(!strstr(out, secret));
    free(out);
    setenv("STEPCAST_TOKEN", secret, 1);
    CHECK_EQ_INT(cli(NULL, NULL, "jobs", NULL, NULL, NULL, NULL, NULL), 0);
    CHECK_EQ_INT(cli(NULL, &err, "tokens", NULL, NULL, NULL, NULL, NULL), 2);
    CHECK_CONTAINS(err, "forbidden");
    free(err);
    CHECK_EQ_INT(cli(NULL, &err, "build", "--job", "g", NULL, NULL, NULL), 2);
    free(err);
    unsetenv("STEPCAST_TOKEN");
    CHECK_EQ_INT(cli(NULL, &err, "jobs", NULL, NULL, NULL, NULL, NULL), 2);
    CHECK_CONTAINS(err, "unauthorized");
    free(err);
    CHECK_EQ_INT(svc_stop(&d), 0);
    /* nobody there */
    CHECK_EQ_INT(cli(NULL, &err, "--token-file", tokfile, "jobs", NULL, NULL, NULL), 1);
    free(err);
    unsetenv("STEPCAST_SERVER");
}
