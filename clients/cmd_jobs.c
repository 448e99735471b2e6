/* clients/cmd_jobs.c: `stepcast jobs`: the jobs on the server.
 *
 *   stepcast jobs [--json]            every job: ranks, trace bytes, models
 *   stepcast jobs [--json] JOB        one job: its traces and models
 *   stepcast jobs --delete JOB        delete it (admin token) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/remote.h"
#include "clients/table.h"
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
    if ((rc = remote_json(del ? "DELETE" : "GET", path, NULL, 200, &doc)))
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
