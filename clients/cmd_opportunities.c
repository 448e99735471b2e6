/* clients/cmd_opportunities.c: `stepcast opportunities`: what would shorten
 * the step, ranked, each saving measured by a replay (model/opportunity.h);
 * locally from traces, or from a server for one model or the whole fleet:
 *
 *   stepcast opportunities [--json] [--step-marker NAME] [--steps A-B] TRACE...
 *   stepcast --server URL opportunities --model ID [--json]
 *   stepcast --server URL opportunities --fleet [--top N] [--json]
 *
 * Text and JSON come from the same documents (api/opportunity_json.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/opportunity_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "estimator/model_open.h"
#include "clients/table.h"
#include "model/graph.h"
#include "model/opportunity.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast opportunities [--json] [--step-marker NAME] [--steps A-B] [--no-fold | --fold] TRACE...\n"
    "       stepcast --server URL opportunities --model ID [--json]\n"
    "       stepcast --server URL opportunities --fleet [--top N] [--json]\n";

static int print_job(const json_t *doc)
{
    const json_t *list = json_object_get(doc, "opportunities"), *o;
    size_t i;
    struct cli_table tb;
    if (!json_is_array(list)) {
        fprintf(stderr, "stepcast: the document has no opportunities\n");
        return 1;
    }
    printf("step %.3f ms (replayed, unexplained waits kept), GPU idle %.3f ms per step, %lld rank(s)\n\n",
           cli_json_num(doc, "step_ms"), cli_json_num(doc, "gpu_idle_ms"), cli_json_int(doc, "ranks"));
    cli_table_init(&tb, "saving ms", "saving %", "bound ms", "resource", "change", "opportunity", NULL);
    json_array_foreach(list, i, o)
        cli_table_rowf(&tb, "%.3f|%.2f|%.3f|%s|%s|%s", cli_json_num(o, "saving_ms"), cli_json_num(o, "saving_pct"),
                       cli_json_num(o, "amdahl_bound_ms"), cli_json_str(o, "resource", ""),
                       cli_json_str(o, "change", ""), cli_json_str(o, "name", ""));
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    return 0;
}

static int print_fleet(const json_t *doc)
{
    const json_t *list = json_object_get(doc, "jobs"), *j;
    size_t i;
    struct cli_table tb;
    if (!json_is_array(list)) {
        fprintf(stderr, "stepcast: the document has no jobs\n");
        return 1;
    }
    cli_table_init(&tb, "GPU ms/step won", "job", "model", "ranks", "step ms", "GPU idle ms", "best opportunity",
                   NULL);
    json_array_foreach(list, i, j) {
        const json_t *o = json_object_get(j, "opportunity");
        cli_table_rowf(&tb, "%.3f|%s|%s|%lld|%.3f|%.3f|%s (%s)", cli_json_num(j, "gpu_ms_per_step"),
                       cli_json_str(j, "job", ""), cli_json_str(j, "model", ""), cli_json_int(j, "ranks"),
                       cli_json_num(j, "step_ms"), cli_json_num(j, "gpu_idle_ms"), cli_json_str(o, "name", ""),
                       cli_json_str(o, "change", ""));
    }
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    return 0;
}

int cmd_opportunities(int argc, char **argv)
{
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct est_traced_model *m;
    struct model_opportunities ops;
    struct sc_error err;
    int rc, json;

    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    if ((rc = cli_trace_options(argc, argv, "opportunities", usage, &lo, &go, &json)))
        return rc < 0 ? 0 : rc;
    if (optind >= argc)
        return cli_usage_error("opportunities", "no trace given");
    if ((rc = cli_open_traces((const char *const *)argv + optind, (size_t)(argc - optind), &lo, &go,
                              EST_KEEP_HEADERS, &m)))
        return rc;
    if (est_model_opportunities(m, &ops, &err)) {
        est_model_close(m);
        return cli_fail(&err);
    }
    rc = cli_print_doc(api_opportunities_json(&ops), json, print_job);
    model_opportunities_release(&ops);
    est_model_close(m);
    return rc;
}

int cmd_remote_opportunities(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'M'}, {"fleet", no_argument, NULL, 'f'},
        {"top", required_argument, NULL, 't'},   {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *model = NULL;
    char path[640], esc[512];
    long top = 0; /* 0: every page */
    int c, rc, json = 0, fleet = 0;
    void *doc = NULL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "M:ft:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'M': model = optarg; break;
        case 'f': fleet = 1; break;
        case 't': {
            char *end;
            top = strtol(optarg, &end, 10);
            if (*end || end == optarg || top < 1 || top > 1000)
                return cli_usage_error("opportunities", "--top takes a number from 1 to 1000");
            break;
        }
        case 'j': json = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("opportunities", "bad option");
        }
    }
    if (optind != argc || !!model == fleet)
        return cli_usage_error("opportunities", "with --server, give --model ID or --fleet (no trace files)");
    if (fleet) {
        if (top) /* the first N; else every model ranked */
            snprintf(path, sizeof path, "/v1/opportunities?top=%ld", top);
        else
            snprintf(path, sizeof path, "/v1/opportunities");
    } else {
        remote_escape(model, esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/models/%s/opportunities", esc);
    }
    if ((rc = fleet && !top ? remote_list(path, "jobs", &doc) : remote_json("GET", path, NULL, 200, &doc)))
        return rc;
    return cli_print_doc(doc, json, fleet ? print_fleet : print_job);
}
