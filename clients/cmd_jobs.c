/* clients/cmd_jobs.c: `stepcast jobs` and `stepcast job`: the jobs on the
 * server.
 *
 *   stepcast jobs [--json]            every job: ranks, trace bytes, models
 *   stepcast jobs [--json] JOB        one job: its traces and models
 *   stepcast jobs --delete JOB        delete it (admin token)
 *   stepcast job config --job J FILE  its description (what-ifs and plans
 *                                     of its models start from it) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/table.h"
#include "estimator/spec/job_config.h"
#include "common/banned.h"

static void print_list(json_t *doc)
{
    struct cli_table tb;
    size_t i;
    json_t *j;
    cli_table_init(&tb, "job", "ranks", "trace MB", "models", "hardware", "updated", NULL);
    json_array_foreach(json_object_get(doc, "jobs"), i, j) cli_table_rowf(
        &tb, "%s|%lld|%.1f|%lld|%s|%s", cli_json_str(j, "id", "-"), cli_json_int(j, "n_ranks"),
        (double)cli_json_int(j, "trace_bytes") / 1e6, cli_json_int(j, "n_models"),
        cli_json_str(j, "hardware", "-"), cli_json_str(j, "updated", "-"));
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
}

static void print_job(json_t *j)
{
    struct cli_table tb;
    size_t i;
    json_t *t;
    char *cfg = json_dumps(json_object_get(j, "config"), JSON_COMPACT | JSON_ENCODE_ANY);
    printf("job %s  hardware: %s  config: %s\n\n", cli_json_str(j, "id", "-"),
           cli_json_str(j, "hardware", "-"), cfg ? cfg : "null");
    free(cfg);
    cli_table_init(&tb, "rank", "sha256", "bytes", "events", "steps", "uploaded", NULL);
    json_array_foreach(json_object_get(j, "traces"), i, t) cli_table_rowf(
        &tb, "%lld|%.16s|%lld|%lld|%lld|%s", cli_json_int(t, "rank"),
        cli_json_str(t, "sha256", "-"), cli_json_int(t, "bytes"), cli_json_int(t, "events"),
        cli_json_int(t, "steps"), cli_json_str(t, "uploaded", "-"));
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
    printf("\n");
    cli_table_init(&tb, "model", "status", "created", NULL);
    json_array_foreach(json_object_get(j, "models"), i, t)
        cli_table_rowf(&tb, "%s|%s|%s", cli_json_str(t, "id", "-"), cli_json_str(t, "status", "-"),
                       cli_json_str(t, "created", "-"));
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
}

int cmd_jobs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"delete", no_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int json = 0, del = 0, c, rc;
    char path[256], esc[200];
    void *doc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "jdh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'd': del = 1; break;
        case 'h': printf("usage: stepcast jobs [--json] [JOB] | jobs --delete JOB\n"); return 0;
        default: return cli_usage_error("jobs", "bad option");
        }
    }
    if (argc - optind > 1 || (del && argc - optind != 1))
        return cli_usage_error("jobs", "usage: jobs [--json] [JOB] | jobs --delete JOB");
    if (optind < argc) {
        remote_escape(argv[optind], esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/jobs/%s", esc);
    } else
        snprintf(path, sizeof path, "/v1/jobs");
    if ((rc = del || optind < argc ? remote_json(del ? "DELETE" : "GET", path, NULL, 200, &doc)
                                   : remote_list(path, "jobs", &doc)))
        return rc;
    if (json || del)
        rc = cli_print_json(doc);
    else if (optind < argc)
        print_job(doc);
    else
        print_list(doc);
    json_decref(doc);
    return rc;
}

/* The body of PUT /v1/jobs/{job}: config (a description's JSON text) as
 * the job's config, the hardware and description of the job as it is
 * (doc: its GET, or NULL for a new job) kept, as a PUT replaces them;
 * description, when not NULL, replaces the job's. NULL when out of memory. */
static char *job_body(const char *config, json_t *doc, const char *description)
{
    static const char *const kept[] = {"hardware", "description"};
    char *body = NULL;
    json_t *b = json_object(), *c = json_loads(config, 0, NULL);
    if (b && c) {
        json_object_set(b, "config", c);
        for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
            if (json_is_string(json_object_get(doc, kept[i])))
                json_object_set(b, kept[i], json_object_get(doc, kept[i]));
        if (!description || !json_object_set_new(b, "description", json_string(description)))
            body = json_dumps(b, JSON_COMPACT);
    }
    json_decref(c);
    json_decref(b);
    return body;
}

int cmd_job(int argc, char **argv)
{
    static const struct option opts[] = {
        {"job", required_argument, NULL, 'J'},  {"server", required_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},       {"help", no_argument, NULL, 'h'},
        {"description", required_argument, NULL, 'D'}, {NULL, 0, NULL, 0},
    };
    static const char usage[] = "usage: stepcast job config [--server URL] --job J [--description TEXT] [--json] FILE\n"
                                "       FILE: the job's description (docs/commands/whatif.md), checked here first;\n"
                                "       TEXT: the job's free-text description (kept when not given)\n";
    const char *id = NULL, *description = NULL;
    struct job_config cfg;
    struct remote r;
    struct remote_resp resp = {0};
    struct sc_error err;
    char path[256], esc[200], *config = NULL, *body = NULL;
    json_t *doc = NULL;
    int json = 0, c, rc = 0;

    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "config") != 0)
        return cli_usage_error("job", "give a subcommand: job config --job J FILE");
    argc--;
    argv++;
    optind = 1;
    while ((c = getopt_long(argc, argv, "J:S:D:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'J': id = optarg; break;
        case 'D': description = optarg; break;
        case 'S': remote_set_options(optarg, NULL); break;
        case 'j': json = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("job config", "bad option");
        }
    }
    if (!id || argc - optind != 1)
        return cli_usage_error("job config", "give --job J and one FILE");
    if ((rc = cli_load_job_config(argv[optind], &cfg)))
        return rc;
    remote_escape(id, esc, sizeof esc);
    snprintf(path, sizeof path, "/v1/jobs/%s", esc);
    if (remote_open(&r, &err))
        return cli_fail(&err);
    /* the job as it is: its hardware and description stay */
    if (remote_call(&r, "GET", path, NULL, &resp, &err))
        rc = cli_fail(&err);
    else if (resp.status == 200)
        doc = json_loads(resp.body, 0, NULL);
    else if (resp.status != 404)
        rc = remote_fail(&resp);
    remote_resp_release(&resp);
    if (!rc && (!(config = spec_job_config_json(&cfg)) || !(body = job_body(config, doc, description))))
        rc = cli_fail(&(struct sc_error){.code = SC_ENOMEM, .msg = "out of memory"});
    if (!rc && remote_call(&r, "PUT", path, body, &resp, &err))
        rc = cli_fail(&err);
    else if (!rc && resp.status != 200 && resp.status != 201)
        rc = remote_fail(&resp);
    else if (!rc && json) {
        json_t *job = json_loads(resp.body, 0, NULL);
        rc = job ? cli_print_json(job) : 1;
        json_decref(job);
    } else if (!rc)
        printf("job %s: config %s (%s)\n", id, config, resp.status == 201 ? "a new job" : "replaced");
    remote_resp_release(&resp);
    remote_close(&r);
    json_decref(doc);
    free(config);
    free(body);
    return rc;
}
