/* clients/cmd_models.c: `stepcast models`: the models on the server.
 *
 *   stepcast models [--json] [--job J]     every model (or a job's)
 *   stepcast models [--json] ID            one model with its summary
 *   stepcast models --delete ID            delete it (admin token) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/table.h"
#include "common/banned.h"

int cmd_models(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},     {"job", required_argument, NULL, 'J'},
        {"delete", no_argument, NULL, 'd'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *job = NULL;
    int json = 0, del = 0, c, rc;
    char path[256], esc[200] = "";
    void *doc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "jJ:dh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'J': job = optarg; break;
        case 'd': del = 1; break;
        case 'h':
            printf("usage: stepcast models [--json] [--job J] [ID] | models --delete ID\n");
            return 0;
        default: return cli_usage_error("models", "bad option");
        }
    }
    if (argc - optind > 1 || (del && argc - optind != 1) || (job && optind < argc))
        return cli_usage_error("models",
                               "usage: models [--json] [--job J] [ID] | models --delete ID");
    if (optind < argc) {
        remote_escape(argv[optind], esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/models/%s", esc);
    } else {
        if (job)
            remote_escape(job, esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/models%s%s", job ? "?job=" : "", esc);
    }
    if ((rc = del || optind < argc ? remote_json(del ? "DELETE" : "GET", path, NULL, 200, &doc)
                                   : remote_list(path, "models", &doc)))
        return rc;
    if (json || del || optind < argc) {
        rc = cli_print_json(doc);
    } else {
        struct cli_table tb;
        size_t i;
        json_t *m;
        cli_table_init(&tb, "model", "job", "status", "ranks", "created", "finished", NULL);
        json_array_foreach(json_object_get(doc, "models"), i, m) cli_table_rowf(
            &tb, "%s|%s|%s|%lld|%s|%s", cli_json_str(m, "id", "-"), cli_json_str(m, "job", "-"),
            cli_json_str(m, "status", "-"), cli_json_int(m, "n_ranks"),
            cli_json_str(m, "created", "-"), cli_json_str(m, "finished", "-"));
        cli_table_print(&tb, stdout, "");
        cli_table_release(&tb);
    }
    json_decref(doc);
    return rc;
}
