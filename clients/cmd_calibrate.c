/* clients/cmd_calibrate.c: `stepcast calibrate nccl-tests|gemms|traces ...
 * --out PROFILE.json`: fit the cost models to what a cluster measured and
 * write the cluster profile a spec names with `cluster.profile` (README,
 * "calibrate").
 *
 * nccl-tests: each file is one run; its collective, group size, node count
 * and GPU come from the file where it says them and from the options
 * otherwise; --gemms adds GEMM microbenchmark tables to the same profile.
 * gemms: GEMM microbenchmark tables (profiler/gemm-bench.sh) fit the
 * kernel model's fixed cost and GEMM ceiling. traces: the GEMMs with shapes fit the kernel model's fixed
 * cost and ceiling, the sized collectives the collective model. The fits
 * and what they set are printed, so the user sees how well the model
 * describes the measurements before using the profile. A fit past a
 * physical bound, or no better than the defaults on its own measurements,
 * is flagged and not written without --force.
 *
 * With a server (`stepcast --server URL calibrate ...`) the profile is
 * made and kept by the server under a name (--name) that specs then give
 * as cluster.profile: `calibrate nccl-tests FILE --name N` posts one
 * output, `calibrate gemms TABLE --name N` one GEMM table, `calibrate
 * model ID --name N` fits a built model's traces,
 * `calibrate list` and `calibrate show NAME` read them back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "estimator/calibrate/calibrate.h"
#include "estimator/costs/collective_model.h"
#include "model/job.h"
#include "common/banned.h"

#define CMD "calibrate"
#define MAX_FILES 256

static int int_opt(const char *name, const char *v, int *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || errno || x < 1 || x > 1000000)
        return cli_usage_error(CMD, "%s needs a whole number from 1 to 1000000", name);
    *out = (int)x;
    return 0;
}

static int write_profile(const char *path, const char *doc)
{
    char tmp[4096];
    FILE *f;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "w")) || fputs(doc, f) == EOF || fclose(f) || rename(tmp, path)) {
        fprintf(stderr, "stepcast: cannot write %s: %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}

/* The profile made (rc SC_OK) written to --out, or the failure said; a
 * profile with flags (a fit past a physical bound, or no better than the
 * defaults: calibrate.h) only with --force (exit 2 without). */
static int finish(int rc, const struct sc_error *err, char *doc, const char *out, int force)
{
    if (rc) {
        fflush(stdout);
        return cli_fail(err);
    }
    json_t *j = json_loads(doc, 0, NULL);
    size_t flags = json_array_size(json_object_get(j, "flags"));
    json_decref(j);
    fflush(stdout);
    if (flags && !force) {
        fprintf(stderr,
                "stepcast calibrate: %s not written: the fit has %zu flag%s (above); --force writes it anyway\n",
                out, flags, flags == 1 ? "" : "s");
        free(doc);
        return 2;
    }
    if (flags)
        fprintf(stderr, "stepcast calibrate: writing %s with %zu flag%s, as --force asks\n", out, flags,
                flags == 1 ? "" : "s");
    rc = write_profile(out, doc);
    free(doc);
    return rc;
}

/* Read the files of one kind into *f (texts from malloc, freed by
 * free_files); SC_OK or the failure in *err. */
static int read_files(const char **paths, size_t n, char **texts, size_t *lens, struct calib_files *f,
                      struct sc_error *err)
{
    *f = (struct calib_files){(const char *const *)texts, lens, paths, 0};
    for (; f->n < n; f->n++)
        if (cli_read_file(paths[f->n], 256u << 20, &texts[f->n], &lens[f->n], err))
            return err->code;
    return SC_OK;
}

static void free_files(char **texts, const struct calib_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(texts[i]);
}

/* `calibrate nccl-tests FILE... [--gemms TABLE]...` (gemms 0) or
 * `calibrate gemms TABLE...` (1): files of measurements, read whole, into
 * one profile. */
static int calibrate_files(int argc, char **argv, int gemms)
{
    struct calib_opts o = {.kind = MODEL_COLL_UNKNOWN};
    const char *files[2][MAX_FILES], *out = NULL; /* [0] nccl-tests outputs, [1] GEMM tables */
    char *texts[2][MAX_FILES];
    size_t lens[2][MAX_FILES], n_files[2] = {0, 0};
    int rc, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *file = a;
        if (!strcmp(a, "--force")) {
            force = 1;
            continue;
        }
        /* what nccl-tests takes beyond --out and --gpu */
        int of_runs = !gemms && (!strcmp(a, "--kind") || !strcmp(a, "--ranks") || !strcmp(a, "--nodes") ||
                                 !strcmp(a, "--gemms"));
        int table = gemms;
        if (of_runs || !strcmp(a, "--out") || !strcmp(a, "--gpu")) {
            if (!v)
                return cli_usage_error(CMD, "%s needs a value", a);
            i++;
        }
        if (!strcmp(a, "--out")) {
            out = v;
            continue;
        } else if (!strcmp(a, "--gpu")) {
            o.gpu = v;
            continue;
        } else if (of_runs && !strcmp(a, "--kind")) {
            if ((o.kind = cost_coll_kind_from_name(v)) == MODEL_COLL_UNKNOWN)
                return cli_usage_error(CMD, "--kind: '%s' is none of all_reduce, all_gather, "
                                       "reduce_scatter, alltoall, broadcast, reduce, sendrecv", v);
            continue;
        } else if (of_runs && !strcmp(a, "--gemms")) {
            file = v;
            table = 1;
        } else if (of_runs) { /* --ranks, --nodes */
            if ((rc = int_opt(a, v, a[2] == 'r' ? &o.ranks : &o.nodes)))
                return rc;
            continue;
        } else if (a[0] == '-') {
            return cli_usage_error(CMD, "unknown option '%s'", a);
        }
        if (n_files[table] == MAX_FILES)
            return cli_usage_error(CMD, "more than %d files", MAX_FILES);
        files[table][n_files[table]++] = file;
    }
    if (!n_files[gemms])
        return cli_usage_error(CMD, gemms ? "no GEMM table given" : "no nccl-tests output given");
    if (!out)
        return cli_usage_error(CMD, "--out PROFILE.json is required");

    struct sc_error err;
    struct calib_files f[2] = {{NULL, NULL, NULL, 0}, {NULL, NULL, NULL, 0}};
    char *doc = NULL;
    rc = read_files(files[0], n_files[0], texts[0], lens[0], &f[0], &err);
    if (!rc)
        rc = read_files(files[1], n_files[1], texts[1], lens[1], &f[1], &err);
    if (!rc)
        rc = calib_files(&f[0], &f[1], &o, stdout, &doc, &err);
    free_files(texts[0], &f[0]);
    free_files(texts[1], &f[1]);
    return finish(rc, &err, doc, out, force);
}

static int calibrate_traces(int argc, char **argv)
{
    const char *out = NULL, *gpu = NULL;
    char **paths = calloc((size_t)argc, sizeof *paths);
    int n_paths = 0, rc = 0, force = 0;
    if (!paths)
        return 1;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--force") == 0) {
            force = 1;
        } else if (strcmp(a, "--out") == 0 || strcmp(a, "--gpu") == 0) {
            if (!v)
                rc = cli_usage_error(CMD, "%s needs a value", a);
            else
                *(a[2] == 'o' ? &out : &gpu) = v;
            i++;
        } else if (a[0] == '-') {
            rc = cli_usage_error(CMD, "unknown option '%s'", a);
        } else {
            paths[n_paths++] = argv[i];
        }
    }
    if (!rc && !n_paths)
        rc = cli_usage_error(CMD, "no trace given");
    if (!rc && !out)
        rc = cli_usage_error(CMD, "--out PROFILE.json is required");
    struct model_job *job = NULL;
    if (!rc)
        rc = cli_load_job(paths, n_paths, NULL, &job);
    free(paths);
    if (rc)
        return rc;
    struct sc_error err;
    char *doc = NULL;
    rc = calib_traces(job, gpu, stdout, &doc, &err);
    model_job_free(job);
    return finish(rc, &err, doc, out, force);
}

/* Print a calibration the server answered: its report, then what it is. */
static int print_calibration(json_t *c, int as_json)
{
    if (as_json)
        return cli_print_json(c);
    const char *report = json_string_value(json_object_get(c, "report"));
    if (report)
        fputs(report, stdout);
    printf("calibration %s: %s, from %s, sha256 %.12s\n", json_string_value(json_object_get(c, "name")),
           json_string_value(json_object_get(c, "gpu")), json_string_value(json_object_get(c, "source")),
           json_string_value(json_object_get(c, "sha256")));
    return 0;
}

/* Append "&key=escaped" to a query. */
static void add_query(char *q, size_t n, const char *key, const char *v)
{
    char esc[256];
    size_t k = strlen(q);
    remote_escape(v, esc, sizeof esc);
    snprintf(q + k, n - k, "%s%s=%s", k ? "&" : "?", key, esc);
}

static int calibrate_remote(int argc, char **argv)
{
    const char *what = argv[1], *name = NULL, *file = NULL;
    char query[1024] = "", path[1400];
    int as_json = 0, of_runs = 0, rc; /* of_runs: --kind, --ranks or --nodes given */
    json_t *doc;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) {
            as_json = 1;
        } else if (!strcmp(a, "--name") || !strcmp(a, "--gpu") || !strcmp(a, "--kind") || !strcmp(a, "--ranks") ||
                   !strcmp(a, "--nodes")) {
            if (!v)
                return cli_usage_error(CMD, "%s needs a value", a);
            if (a[2] == 'n' && a[3] == 'a')
                name = v;
            of_runs |= strcmp(a, "--name") && strcmp(a, "--gpu");
            add_query(query, sizeof query, a + 2, v);
            i++;
        } else if (a[0] == '-' || file) {
            return cli_usage_error(CMD, "unexpected argument '%s'", a);
        } else {
            file = a;
        }
    }
    if (!strcmp(what, "list") || !strcmp(what, "show")) {
        char esc[200] = "";
        if ((!strcmp(what, "show")) != (file != NULL) || query[0])
            return cli_usage_error(CMD, "usage: calibrate list | calibrate show NAME [--json]");
        remote_escape(file ? file : "", esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/calibrations%s%s", file ? "/" : "", esc);
        if ((rc = remote_json("GET", path, NULL, 200, (void **)&doc)))
            return rc;
        if (file || as_json) {
            rc = print_calibration(doc, as_json);
        } else {
            size_t i;
            json_t *c;
            json_array_foreach (json_object_get(doc, "calibrations"), i, c)
                printf("%-24s %-16s %-10s %.12s\n", json_string_value(json_object_get(c, "name")),
                       json_string_value(json_object_get(c, "gpu")), json_string_value(json_object_get(c, "source")),
                       json_string_value(json_object_get(c, "sha256")));
        }
        json_decref(doc);
        return rc;
    }
    if (!file || !name)
        return cli_usage_error(CMD, "usage: calibrate nccl-tests FILE --name N [--gpu ID] [--kind K] [--ranks N] "
                               "[--nodes N] | calibrate gemms TABLE.csv --name N [--gpu ID] | "
                               "calibrate model ID --name N [--gpu ID] | calibrate list | show NAME");
    if (!strcmp(what, "model")) {
        char esc[200];
        remote_escape(file, esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/models/%s/calibration%s", esc, query);
        struct remote r;
        struct remote_resp resp;
        struct sc_error err;
        if (remote_open(&r, &err) || remote_call(&r, "POST", path, NULL, &resp, &err)) {
            remote_close(&r);
            return cli_fail(&err);
        }
        remote_close(&r);
        doc = resp.status == 200 || resp.status == 201 ? json_loads(resp.body, 0, NULL) : NULL;
        rc = doc ? print_calibration(doc, as_json) : remote_fail(&resp);
        json_decref(doc);
        remote_resp_release(&resp);
        return rc;
    }
    if (strcmp(what, "nccl-tests") && strcmp(what, "gemms"))
        return cli_usage_error(CMD, "unknown source '%s' (nccl-tests, gemms, model, list or show)", what);
    if (!strcmp(what, "gemms") && of_runs)
        return cli_usage_error(CMD, "calibrate gemms takes --name and --gpu only");
    struct remote r;
    struct remote_resp resp;
    struct sc_error err;
    size_t len;
    char *text;
    if (cli_read_file(file, 1u << 20, &text, &len, &err))
        return cli_fail(&err);
    snprintf(path, sizeof path, "/v1/calibrations/%s%s", what, query);
    rc = remote_open(&r, &err) || remote_post_text(&r, path, text, len, &resp, &err);
    remote_close(&r);
    free(text);
    if (rc)
        return cli_fail(&err);
    doc = resp.status == 200 || resp.status == 201 ? json_loads(resp.body, 0, NULL) : NULL;
    rc = doc ? print_calibration(doc, as_json) : remote_fail(&resp);
    json_decref(doc);
    remote_resp_release(&resp);
    return rc;
}

static const char usage[] =
    "usage: stepcast calibrate nccl-tests [--gpu ID] [--kind K] [--ranks N] [--nodes N] [--gemms TABLE.csv]...\n"
    "                          [--force] --out PROFILE.json FILE...\n"
    "       stepcast calibrate gemms [--gpu ID] [--force] --out PROFILE.json TABLE.csv...\n"
    "       stepcast calibrate traces [--gpu ID] [--force] --out PROFILE.json TRACE...\n"
    "       stepcast --server URL calibrate nccl-tests FILE --name N [--gpu ID] [--kind K] [--ranks N]\n"
    "                          [--nodes N] [--json]\n"
    "       stepcast --server URL calibrate gemms TABLE.csv --name N [--gpu ID] [--json]\n"
    "       stepcast --server URL calibrate model ID --name N [--gpu ID] [--json]\n"
    "       stepcast --server URL calibrate list | calibrate show NAME [--json]\n"
    "       a fit past a physical bound or no better than the defaults is flagged, and written\n"
    "       only with --force\n";

int cmd_calibrate(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || cli_has_option(argc, argv, "--help"))) {
        fputs(usage, stdout);
        return 0;
    }
    /* traces, or a profile written to --out: local forms */
    if (argc >= 2 && (!strcmp(argv[1], "traces") || cli_has_option(argc, argv, "--out")))
        remote_stay_local();
    if (argc >= 2 && remote_configured())
        return calibrate_remote(argc, argv);
    if (argc < 2)
        return cli_usage_error("calibrate", "what to calibrate from: nccl-tests, gemms or traces");
    if (strcmp(argv[1], "nccl-tests") == 0 || strcmp(argv[1], "gemms") == 0)
        return calibrate_files(argc - 1, argv + 1, argv[1][0] == 'g');
    if (strcmp(argv[1], "traces") == 0)
        return calibrate_traces(argc - 1, argv + 1);
    return cli_usage_error("calibrate", "unknown source '%s' (nccl-tests, gemms or traces)", argv[1]);
}
