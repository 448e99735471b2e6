/* clients/cmd_diff.c: `stepcast diff`: two runs of one program, before (A)
 * and after (B) a change: the step-time difference attributed by replays
 * (model/diff.h), and the kernels added, removed and re-timed; locally from
 * traces or from a server's built models:
 *
 *   stepcast diff [--json] [--step-marker NAME] [--steps A-B] A B
 *   stepcast --server URL diff --model A --other B [--json]
 *
 * A and B are each one run: a trace, a folder of traces or an archive.
 * Text and JSON come from the same document (api/diff_json.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/diff_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "estimator/model_open.h"
#include "clients/table.h"
#include "model/diff.h"
#include "model/graph.h"
#include "common/banned.h"

static const char usage[] = "usage: stepcast diff [--json] [--step-marker NAME] [--steps A-B] [--no-fold | --fold] A B\n"
                            "       stepcast --server URL diff --model A --other B [--json]\n";

static void print_kernels(const char *title, const json_t *list)
{
    const json_t *k;
    size_t i;
    struct cli_table tb;
    if (!json_array_size(list))
        return;
    printf("\nkernels %s:\n", title);
    cli_table_init(&tb, "count", "A ms/step", "B ms/step", "kernel", NULL);
    json_array_foreach(list, i, k)
        cli_table_rowf(&tb, "%lld|%.3f|%.3f|%.100s", cli_json_int(k, "count"), cli_json_num(k, "a_ms"),
                       cli_json_num(k, "b_ms"), cli_json_str(k, "name", ""));
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
}

static int print_diff(const json_t *doc)
{
    const json_t *parts = json_object_get(doc, "attribution"), *v, *kernels = json_object_get(doc, "kernels");
    const char *category;
    struct cli_table tb;
    if (!json_is_object(parts)) {
        fprintf(stderr, "stepcast: the document has no attribution\n");
        return 1;
    }
    printf("A %.3f ms, B %.3f ms per step (%lld matched steps): B - A = %+.3f ms\n", cli_json_num(doc, "a_ms"),
           cli_json_num(doc, "b_ms"), cli_json_int(doc, "steps"), cli_json_num(doc, "difference_ms"));
    printf("method: %s\n\n", cli_json_str(doc, "method", ""));
    cli_table_init(&tb, "category", "ms", NULL);
    json_object_foreach((json_t *)parts, category, v)
        cli_table_rowf(&tb, "%s|%+.3f", category, json_number_value(v));
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
    print_kernels("added (in B only)", json_object_get(kernels, "added"));
    print_kernels("removed (in A only)", json_object_get(kernels, "removed"));
    print_kernels("re-timed", json_object_get(kernels, "retimed"));
    return 0;
}

int cmd_diff(int argc, char **argv)
{
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct est_traced_model *m[2];
    struct model_diff d;
    struct sc_error err;
    int rc, json;

    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    if ((rc = cli_trace_options(argc, argv, "diff", usage, &lo, &go, &json)))
        return rc < 0 ? 0 : rc;
    if (argc - optind != 2)
        return cli_usage_error("diff", "give two runs, A and B");
    if ((rc = cli_open_runs(argv + optind, &lo, &go, m)))
        return rc;
    if (est_model_diff(m[0], m[1], &d, &err)) {
        rc = cli_fail(&err);
    } else {
        rc = cli_print_doc(api_diff_json(&d), json, print_diff);
        model_diff_release(&d);
    }
    est_model_close(m[0]);
    est_model_close(m[1]);
    return rc;
}

int cmd_remote_diff(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'M'}, {"other", required_argument, NULL, 'O'},
        {"json", no_argument, NULL, 'j'},        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *a = NULL, *b = NULL;
    char path[640], esc[512];
    int c, rc, json = 0;
    void *doc = NULL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "M:O:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'M': a = optarg; break;
        case 'O': b = optarg; break;
        case 'j': json = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("diff", "bad option");
        }
    }
    if (optind != argc || !a || !b)
        return cli_usage_error("diff", "with --server, give --model A --other B (no trace files)");
    json_t *body = json_pack("{s:s}", "other", b);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return 1;
    remote_escape(a, esc, sizeof esc);
    snprintf(path, sizeof path, "/v1/models/%s/diff", esc);
    rc = remote_json("POST", path, text, 200, &doc);
    free(text);
    return rc ? rc : cli_print_doc(doc, json, print_diff);
}
