/* clients/cmd_replay.c: `stepcast replay` and `stepcast critical-path`:
 * rebuild each step from what its work costs and report it. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/replay_json.h"
#include "estimator/model_open.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/replay_print.h"
#include "model/graph.h"
#include "model/replay.h"
#include "common/banned.h"

static const char replay_usage[] =
    "usage: stepcast replay [--json] [--step-marker NAME] [--steps A-B] [--scale WHAT[@R]=F]...\n"
    "                       [--keep-unexplained] [--timeline DIR] [--no-fold | --fold] TRACE...\n"
    "       stepcast --server URL replay --model ID [--json] [--scale SPEC]... [--keep-unexplained]\n"
    "       WHAT: gpu, comm, cpu, launch, all, kernel, copy, set, communication, call, host,\n"
    "             kernel:TEXT, family:NAME, name:GLOB\n"
    "       alike ranks of a job of more than 64 are folded into one that stands for them;\n"
    "       --no-fold: never, --fold: whatever the job's size\n";
static const char path_usage[] =
    "usage: stepcast critical-path [--json] [--top N | --all] [--step-marker NAME] [--steps A-B]\n"
    "                              [--scale SPEC]... [--keep-unexplained] [--no-fold | --fold] TRACE...\n"
    "       stepcast --server URL critical-path --model ID [--json] [--top N | --all] [--scale SPEC]...\n"
    "                              [--keep-unexplained]\n"
    "       each step's path summed by task, the longest N (10); --all lists the path in order\n";

/* Parse the shared options, load, build and replay. Returns an exit status;
 * *json and *timeline report the output options. */
static int prepare(int argc, char **argv, const char *cmd, const char *usage, struct cli_run *run,
                   int *json, const char **timeline)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},          {"step-marker", required_argument, NULL, 'm'},
        {"steps", required_argument, NULL, 's'},   {"scale", required_argument, NULL, 'g'},
        {"timeline", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
        {"keep-unexplained", no_argument, NULL, 'u'},
        {"top", required_argument, NULL, 'T'},     {"all", no_argument, NULL, 'A'},
        {"no-fold", no_argument, NULL, 'N'},       {"fold", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct model_replay_opts ro;
    struct sc_error err;
    int c;

    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    model_replay_opts_default(&ro);
    ro.step_unexplained = strcmp(cmd, "critical-path") != 0; /* what only replay prints */
    memset(run, 0, sizeof *run);
    *json = 0;
    if (timeline)
        *timeline = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jm:s:g:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': *json = 1; break;
        case 'u': ro.keep_unexplained = 1; break;
        case 'N': go.fold_over = SIZE_MAX; break;
        case 'F': go.fold_over = 0; break;
        case 'm': lo.step_marker = optarg; break;
        case 's':
            if (model_graph_parse_steps(optarg, &go, &err))
                return cli_usage_error(cmd, "%s", err.msg);
            break;
        case 'g':
            if (model_replay_parse_scale(optarg, &ro, &err))
                return cli_usage_error(cmd, "%s", err.msg);
            break;
        case 't':
            if (!timeline)
                return cli_usage_error(cmd, "--timeline is an option of replay");
            *timeline = optarg;
            break;
        case 'T':
        case 'A':
            if (strcmp(cmd, "critical-path") != 0)
                return cli_usage_error(cmd, "--top and --all are options of critical-path");
            if ((c = cli_critical_path_option(cmd, c, optarg)))
                return c;
            break;
        case 'h': fputs(usage, stdout); return -1;
        default: return cli_usage_error(cmd, "bad option");
        }
    }
    if (optind >= argc)
        return cli_usage_error(cmd, "no trace given");
    /* a timeline writes the trace's events again */
    return cli_run_traces((const char *const *)argv + optind, (size_t)(argc - optind), &lo, &go, &ro,
                          timeline && *timeline ? EST_KEEP_WHOLE : EST_KEEP_HEADERS, run);
}

int cmd_replay(int argc, char **argv)
{
    struct cli_run run;
    const char *timeline;
    int json, rc = prepare(argc, argv, "replay", replay_usage, &run, &json, &timeline);
    if (rc)
        return rc < 0 ? 0 : rc;
    rc = cli_print_doc(api_replay_json(run.replay), json, cli_print_replay);
    if (rc == 0 && timeline)
        rc = cli_write_timelines(run.replay, timeline);
    cli_run_release(&run);
    return rc;
}

int cmd_critical_path(int argc, char **argv)
{
    struct cli_run run;
    int json, rc = prepare(argc, argv, "critical-path", path_usage, &run, &json, NULL);
    if (rc)
        return rc < 0 ? 0 : rc;
    rc = json ? cli_print_doc(api_critical_path_json(run.replay), 1, cli_print_critical_path)
              : cli_print_critical_path_replay(run.replay);
    cli_run_release(&run);
    return rc;
}
