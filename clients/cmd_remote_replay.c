/* clients/cmd_remote_replay.c: `stepcast replay --model ID` against a server.
 *
 *   stepcast --server URL replay --model ID [--json] [--scale SPEC]... [--steps A-B]
 *
 * The server answers with the document `stepcast replay --json` prints
 * locally; this prints it (indented) as it came. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/remote.h"
#include "common/banned.h"

int cmd_remote_replay(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'M'}, {"json", no_argument, NULL, 'j'},
        {"scale", required_argument, NULL, 's'}, {"steps", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *model = NULL;
    char path[2048], esc[512];
    size_t n;
    int c, rc;
    struct remote r;
    struct remote_resp resp;
    struct sc_error err;

    path[0] = '\0';
    optind = 1;
    while ((c = getopt_long(argc, argv, "M:js:S:h", opts, NULL)) != -1) {
        switch (c) {
        case 'M': model = optarg; break;
        case 'j': break; /* the server's answer is JSON */
        case 's':
        case 'S':
            remote_escape(optarg, esc, sizeof esc);
            n = strlen(path);
            snprintf(path + n, sizeof path - n, "%c%s=%s", n ? '&' : '?', c == 's' ? "scale" : "steps", esc);
            break;
        case 'h':
            printf("usage: stepcast --server URL replay --model ID [--json] [--scale SPEC]... [--steps A-B]\n");
            return 0;
        default: return cli_usage_error("replay", "bad option");
        }
    }
    if (!model || optind != argc)
        return cli_usage_error("replay", "with --server, replay takes --model ID (no trace files)");
    if (remote_open(&r, &err))
        return cli_fail(&err);
    char full[2300];
    snprintf(full, sizeof full, "/v1/models/%s/replay%s", model, path);
    if (remote_call(&r, "GET", full, NULL, &resp, &err)) {
        remote_close(&r);
        return cli_fail(&err);
    }
    if (resp.status != 200) {
        rc = remote_fail(&resp);
    } else {
        json_t *doc = json_loads(resp.body, 0, NULL);
        rc = doc ? cli_print_json(doc) : 1;
        json_decref(doc);
    }
    remote_resp_release(&resp);
    remote_close(&r);
    return rc;
}
