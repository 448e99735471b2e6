/* clients/cli.c: what the stepcast subcommands share (cli.h): errors and
 * usage errors, the trace options, files read whole, traces opened and
 * replayed through the estimator's façade (estimator/model_open.h), specs
 * resolved with a file lookup of their cluster profile
 * (estimator/request_resolve.h), and JSON for display. Apart from main.c,
 * which only dispatches to the subcommands, so that no subcommand calls
 * back into the file that calls it. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "api/timeline_json.h"
#include "clients/cli.h"
#include "estimator/spec/job_config.h"
#include "estimator/model_open.h"
#include "estimator/request_resolve.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "common/banned.h"

int cli_fail(const struct sc_error *err)
{
    fprintf(stderr, "stepcast: %s\n", err->msg);
    return sc_status_exit_code(err->code);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "stepcast%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'stepcast --help')\n");
    return 2;
}

int cli_trace_options(int argc, char **argv, const char *cmd, const char *cmd_usage, struct model_load_opts *lo,
                      struct model_graph_opts *go, int *json)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"step-marker", required_argument, NULL, 'm'},
        {"steps", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
        {"no-fold", no_argument, NULL, 'N'},     {"fold", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    struct sc_error err;
    int c;
    *json = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jm:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': *json = 1; break;
        case 'm': lo->step_marker = optarg; break;
        case 's':
            if (model_graph_parse_steps(optarg, go, &err))
                return cli_usage_error(cmd, "%s", err.msg);
            break;
        case 'N': go->fold_over = SIZE_MAX; break;
        case 'F': go->fold_over = 0; break;
        case 'h': fputs(cmd_usage, stdout); return -1;
        default: return cli_usage_error(cmd, "bad option");
        }
    }
    return 0;
}

int cli_load_job(char **paths, int n, const struct model_load_opts *opts, struct model_job **out)
{
    struct sc_error err;
    if (model_job_load((const char *const *)paths, (size_t)n, opts, 0, out, &err))
        return cli_fail(&err);
    return 0;
}

int cli_read_file(const char *path, size_t max, char **out, size_t *n, struct sc_error *err)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    *out = NULL;
    *n = 0;
    if (!f)
        return sc_error_set(err, SC_ENOTFOUND, "%s: %s", path, strerror(errno));
    if (!(buf = malloc(max + 1))) {
        fclose(f);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    *n = fread(buf, 1, max + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || *n > max) {
        free(buf);
        return sc_error_set(err, failed ? SC_EIO : SC_ELIMIT, "%s: %s (at most %zu bytes)", path,
                            failed ? "read failed" : "too large", max);
    }
    buf[*n] = '\0';
    *out = buf;
    return SC_OK;
}

int cli_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_print_json(void *json)
{
    int rc = json_dumpf(json, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) ? 1 : 0;
    fputc('\n', stdout);
    return rc;
}

const char *cli_json_str(const void *obj, const char *key, const char *none)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : none;
}

long long cli_json_int(const void *obj, const char *key)
{
    return (long long)json_integer_value(json_object_get(obj, key));
}

double cli_json_num(const void *obj, const char *key)
{
    return json_number_value(json_object_get(obj, key));
}

int cli_has_option(int argc, char **argv, const char *opt)
{
    size_t n = strlen(opt);
    for (int a = 1; a < argc && strcmp(argv[a], "--") != 0; a++)
        if (strncmp(argv[a], opt, n) == 0 && (argv[a][n] == '\0' || argv[a][n] == '='))
            return 1;
    return 0;
}

/* Read and parse the job description at path; an exit status. */
int cli_load_job_config(const char *path, struct job_config *cfg)
{
    struct sc_error err;
    char *text;
    size_t n;
    if (cli_read_file(path, JOB_CONFIG_MAX_BYTES, &text, &n, &err))
        return cli_fail(&err);
    int rc = spec_job_config_parse(text, n, cfg, &err);
    free(text);
    if (rc) {
        sc_error_prefix(&err, "%s", path);
        return cli_fail(&err);
    }
    return 0;
}

void cli_run_release(struct cli_run *r)
{
    model_replay_free(r->replay);
    est_model_close(r->model);
    memset(r, 0, sizeof *r);
}

int cli_open_traces(const char *const *paths, size_t n, const struct model_load_opts *lo,
                    const struct model_graph_opts *go, enum est_keep keep, struct est_traced_model **out)
{
    struct est_model_options o = {.load = *lo, .graph = *go, .keep = keep};
    struct sc_error err;
    return est_model_open(paths, n, &o, NULL, NULL, out, &err) ? cli_fail(&err) : 0;
}

int cli_run_traces(const char *const *paths, size_t n, const struct model_load_opts *lo,
                   const struct model_graph_opts *go, struct model_replay_opts *ro, enum est_keep keep,
                   struct cli_run *run)
{
    struct sc_error err;
    int rc;
    memset(run, 0, sizeof *run);
    if ((rc = cli_open_traces(paths, n, lo, go, keep, &run->model)))
        return rc;
    if (est_model_replay(run->model, ro, &run->replay, &err)) {
        cli_run_release(run);
        return cli_fail(&err);
    }
    return 0;
}

int cli_write_timelines(const struct model_replay *r, const char *dir)
{
    if (mkdir(dir, 0755) && !cli_is_dir(dir)) {
        fprintf(stderr, "stepcast: cannot create directory '%s'\n", dir);
        return 1;
    }
    for (size_t i = 0; i < r->g->n_ranks; i++) {
        char path[4096];
        int rank = r->g->ranks[i].id;
        json_t *doc = api_timeline_json(r, rank);
        snprintf(path, sizeof path, "%s/rank%d.replay.json", dir, rank);
        if (!doc || json_dump_file(doc, path, API_TIMELINE_DUMP_FLAGS)) {
            json_decref(doc);
            fprintf(stderr, "stepcast: cannot write '%s'\n", path);
            return 1;
        }
        json_decref(doc);
    }
    return 0;
}

int cli_open_runs(char **paths, const struct model_load_opts *lo, const struct model_graph_opts *go,
                  struct est_traced_model *m[2])
{
    int rc = 0;
    m[0] = m[1] = NULL;
    for (int k = 0; k < 2 && rc == 0; k++)
        rc = cli_open_traces((const char *const *)paths + k, 1, lo, go, EST_KEEP_HEADERS, &m[k]);
    if (rc) {
        est_model_close(m[0]);
        m[0] = NULL;
    }
    return rc;
}

/* The file lookup of a spec's cluster.profile (estimator/request_resolve.h):
 * the file as named, else NAME.json in the --calibrations directory
 * (ctx, may be NULL). */
static int find_profile_file(void *ctx, const char *name, struct est_profile_found *found, struct sc_error *err)
{
    const char *dir = ctx;
    char path[4096];
    int rc;
    if (!dir || access(name, F_OK) == 0 || strchr(name, '/'))
        rc = cli_read_file(name, 16 << 20, &found->document, &found->len, err);
    else if (snprintf(path, sizeof path, "%s/%s.json", dir, name), access(path, F_OK) != 0)
        return sc_error_set(err, SC_ENOTFOUND, "cluster.profile: no file '%s', nor '%s'", name, path);
    else
        rc = cli_read_file(path, 16 << 20, &found->document, &found->len, err);
    return rc ? sc_error_prefix(err, "cluster.profile") : SC_OK;
}

int cli_spec_costs(const struct est_spec *spec, const struct hw_profile *hw, const char *calibrations,
                   struct est_costs *costs)
{
    struct est_profile_lookup files = {find_profile_file, (void *)calibrations};
    enum est_request_fault fault;
    struct sc_error err;
    if (est_request_costs(spec, hw, &files, costs, NULL, &fault, &err))
        return cli_fail(&err);
    return 0;
}

int cli_load_spec(const char *text, size_t n, const char *source, const char *calibrations, struct est_spec *spec,
                  const struct hw_profile **hw, struct est_costs *costs)
{
    struct est_profile_lookup files = {find_profile_file, (void *)calibrations};
    struct est_request req;
    struct sc_error err;
    if (est_request_resolve(text, n, 0, &files, &req, &err)) {
        if (req.fault == EST_REQUEST_SPEC)
            sc_error_prefix(&err, "%s", source);
        return cli_fail(&err);
    }
    *spec = req.spec;
    *hw = req.hw;
    *costs = req.costs;
    est_request_release(&req);
    return 0;
}

int cli_load_spec_file(const char *path, const char *calibrations, struct est_spec *spec,
                       const struct hw_profile **hw, struct est_costs *costs)
{
    struct sc_error err;
    size_t n;
    char *text;
    if (cli_read_file(path, 1 << 20, &text, &n, &err))
        return cli_fail(&err);
    int rc = cli_load_spec(text, n, path, calibrations, spec, hw, costs);
    free(text);
    return rc;
}

int cli_estimate(const char *text, size_t n, const char *source, const char *calibrations, enum est_detail detail,
                 struct est_spec *spec, struct est_estimate *e)
{
    const struct hw_profile *hw;
    struct est_costs costs;
    struct sc_error err;
    int rc = cli_load_spec(text, n, source, calibrations, spec, &hw, &costs);
    if (rc)
        return rc;
    /* refused before it allocates, rather than swapping */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double budget = pages > 0 && page > 0 ? (double)pages * (double)page / 2 : INFINITY;
    if (synth_estimate_admit(spec, hw, &costs, detail, budget, "half of this machine's memory", &err) ||
        synth_estimate(spec, hw, &costs, detail, e, &err))
        return cli_fail(&err);
    return 0;
}
