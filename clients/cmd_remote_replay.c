/* clients/cmd_remote_replay.c: `stepcast replay` and `stepcast critical-path`
 * against a server:
 *
 *   stepcast --server URL replay --model ID [--json] [--scale SPEC]... [--keep-unexplained]
 *   stepcast --server URL critical-path --model ID [--json] [--scale SPEC]... [--keep-unexplained]
 *                                       [--top N | --all]
 *
 * The server answers with the document the local command prints with
 * --json; without --json it is shown as the same tables. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "common/banned.h"

static int remote_document(int argc, char **argv, const char *cmd, const char *route,
                           int (*as_text)(const json_t *))
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'M'}, {"json", no_argument, NULL, 'j'},
        {"scale", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
        {"keep-unexplained", no_argument, NULL, 'u'}, {"top", required_argument, NULL, 'T'},
        {"all", no_argument, NULL, 'A'}, {"no-fold", no_argument, NULL, 'N'},
        {"fold", no_argument, NULL, 'F'}, {NULL, 0, NULL, 0},
    };
    const char *model = NULL;
    char query[2048] = "", esc[512];
    int c, rc, json = 0;
    struct remote r;
    struct remote_resp resp;
    struct sc_error err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "M:js:h", opts, NULL)) != -1) {
        switch (c) {
        case 'M': model = optarg; break;
        case 'j': json = 1; break;
        case 'u': {
            size_t n = strlen(query);
            snprintf(query + n, sizeof query - n, "%ckeep_unexplained=true", n ? '&' : '?');
            break;
        }
        case 's': {
            size_t n = strlen(query);
            remote_escape(optarg, esc, sizeof esc);
            snprintf(query + n, sizeof query - n, "%cscale=%s", n ? '&' : '?', esc);
            break;
        }
        case 'T':
        case 'A':
            if (as_text != cli_print_critical_path)
                return cli_usage_error(cmd, "--top and --all are options of critical-path");
            if ((rc = cli_critical_path_option(cmd, c, optarg)))
                return rc;
            break;
        case 'N':
        case 'F':
            return cli_usage_error(cmd, "a model's ranks are folded or not when it is built: "
                                        "stepcast build --job J --no-fold (or --fold)");
        case 'h':
            printf("usage: stepcast --server URL %s --model ID [--json] [--scale SPEC]... [--keep-unexplained]%s\n"
                   "(steps, the step marker and rank folding are chosen when the model is built)\n",
                   cmd, as_text == cli_print_critical_path ? " [--top N | --all]" : "");
            return 0;
        default: return cli_usage_error(cmd, "bad option");
        }
    }
    if (!model || optind != argc)
        return cli_usage_error(cmd, "with --server, %s takes --model ID (no trace files)", cmd);
    if (remote_open(&r, &err))
        return cli_fail(&err);
    char path[2400], id[512];
    remote_escape(model, id, sizeof id);
    snprintf(path, sizeof path, "/v1/models/%s/%s%s", id, route, query);
    if (remote_call(&r, "GET", path, NULL, &resp, &err)) {
        remote_close(&r);
        return cli_fail(&err);
    }
    rc = remote_print_document(&resp, json, as_text);
    remote_resp_release(&resp);
    remote_close(&r);
    return rc;
}

int cmd_remote_replay(int argc, char **argv)
{
    return remote_document(argc, argv, "replay", "replay", cli_print_replay);
}

int cmd_remote_critical_path(int argc, char **argv)
{
    return remote_document(argc, argv, "critical-path", "critical-path", cli_print_critical_path);
}
