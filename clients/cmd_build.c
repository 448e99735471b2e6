/* clients/cmd_build.c: `stepcast build`: build a model on the server.
 *
 *   stepcast build --job J [--step-marker NAME] [--steps A-B] [--wait]
 *
 * Prints the model id on stdout. With --wait, polls the model until it is
 * ready or failed, drawing a progress bar on stderr when it is a terminal;
 * exits 1 when the build failed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "common/banned.h"

static void bar(const char *id, double f)
{
    char b[41];
    int n = (int)(f * 40 + 0.5);
    for (int i = 0; i < 40; i++)
        b[i] = i < n ? '#' : '.';
    b[40] = '\0';
    fprintf(stderr, "\rbuilding %s [%s] %3d%%", id, b, (int)(f * 100 + 0.5));
    fflush(stderr);
}

/* Poll until the model is no longer building; 0 when ready. */
static int wait_model(struct remote *r, const char *id)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/models/%s", id);
    for (;;) {
        struct remote_resp resp;
        struct sc_error err;
        const char *status = "", *error = NULL;
        double progress = 0;
        if (remote_call(r, "GET", path, NULL, &resp, &err))
            return cli_fail(&err);
        if (resp.status != 200) {
            int rc = remote_fail(&resp);
            remote_resp_release(&resp);
            return rc;
        }
        json_t *doc = json_loads(resp.body, 0, NULL);
        json_unpack(doc, "{s:s, s?F, s?s}", "status", &status, "progress", &progress, "error", &error);
        int done = strcmp(status, "building") != 0, rc = 0;
        if (r->progress_tty)
            bar(id, done ? 1.0 : progress);
        if (done) {
            if (r->progress_tty)
                fputc('\n', stderr);
            if (strcmp(status, "ready") != 0) {
                fprintf(stderr, "stepcast: model %s %s: %s\n", id, status, error ? error : "?");
                rc = 1;
            }
        }
        json_decref(doc);
        remote_resp_release(&resp);
        if (done)
            return rc;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int cmd_build(int argc, char **argv)
{
    static const struct option opts[] = {
        {"job", required_argument, NULL, 'j'},  {"step-marker", required_argument, NULL, 'm'},
        {"steps", required_argument, NULL, 's'}, {"wait", no_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},        {"no-fold", no_argument, NULL, 'N'},
        {"fold", no_argument, NULL, 'F'},        {NULL, 0, NULL, 0},
    };
    const char *job = NULL, *marker = NULL, *steps = NULL, *id = NULL;
    int wait = 0, fold = -1, c, rc;
    struct remote r;
    struct remote_resp resp;
    struct sc_error err;
    char path[256], esc[200];

    optind = 1;
    while ((c = getopt_long(argc, argv, "j:m:s:wh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': job = optarg; break;
        case 'm': marker = optarg; break;
        case 's': steps = optarg; break;
        case 'w': wait = 1; break;
        case 'N': fold = 0; break;
        case 'F': fold = 1; break;
        case 'h':
            printf("usage: stepcast build --job J [--step-marker NAME] [--steps A-B] [--no-fold | --fold] [--wait]\n");
            return 0;
        default: return cli_usage_error("build", "bad option");
        }
    }
    if (!job || optind != argc)
        return cli_usage_error("build", "usage: build --job J [--step-marker NAME] [--steps A-B] [--no-fold | --fold] "
                                        "[--wait]");
    json_t *body = json_object();
    if (marker)
        json_object_set_new(body, "step_marker", json_string(marker));
    if (steps)
        json_object_set_new(body, "steps", json_string(steps));
    if (fold >= 0)
        json_object_set_new(body, "fold", json_boolean(fold));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (remote_open(&r, &err)) {
        free(text);
        return cli_fail(&err);
    }
    remote_escape(job, esc, sizeof esc);
    snprintf(path, sizeof path, "/v1/jobs/%s/models", esc);
    rc = remote_call(&r, "POST", path, text, &resp, &err);
    free(text);
    if (rc) {
        remote_close(&r);
        return cli_fail(&err);
    }
    if (resp.status != 202) {
        rc = remote_fail(&resp);
    } else {
        json_t *doc = json_loads(resp.body, 0, NULL);
        json_unpack(doc, "{s:s}", "model", &id);
        if (!id) {
            fprintf(stderr, "stepcast: the server's answer has no model id\n");
            rc = 1;
        } else {
            printf("%s\n", id);
            fflush(stdout);
            rc = wait ? wait_model(&r, id) : 0;
        }
        json_decref(doc);
    }
    remote_resp_release(&resp);
    remote_close(&r);
    return rc;
}
