/* clients/cmd_replay.c: `stepcast replay` and `stepcast critical-path`:
 * rebuild each step from what its work costs and report it. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "api/replay_json.h"
#include "clients/cli.h"
#include "clients/table.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

static const char replay_usage[] =
    "usage: stepcast replay [--json] [--step-marker NAME] [--steps A-B] [--scale gpu=F]...\n"
    "                       [--scale gpu@R=F]... [--timeline DIR] TRACE...\n";
static const char path_usage[] =
    "usage: stepcast critical-path [--json] [--step-marker NAME] [--steps A-B] [--scale SPEC]... TRACE...\n";

struct run {
    struct model_job *job;
    struct model_graph *graph;
    struct model_replay *replay;
};

static void run_release(struct run *r)
{
    model_replay_free(r->replay);
    model_graph_free(r->graph);
    model_job_free(r->job);
}

/* Parse the shared options, load, build and replay. Returns an exit status;
 * *json and *timeline report the output options. */
static int prepare(int argc, char **argv, const char *cmd, const char *usage, struct run *run,
                   int *json, const char **timeline)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},          {"step-marker", required_argument, NULL, 'm'},
        {"steps", required_argument, NULL, 's'},   {"scale", required_argument, NULL, 'g'},
        {"timeline", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct model_replay_opts ro;
    struct sc_error err;
    int c, rc;

    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    model_replay_opts_default(&ro);
    memset(run, 0, sizeof *run);
    *json = 0;
    if (timeline)
        *timeline = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jm:s:g:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': *json = 1; break;
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
        case 'h': fputs(usage, stdout); return -1;
        default: return cli_usage_error(cmd, "bad option");
        }
    }
    if (optind >= argc)
        return cli_usage_error(cmd, "no trace given");
    if ((rc = cli_load_job(argv + optind, argc - optind, &lo, &run->job)))
        return rc;
    if (model_graph_build(run->job, &go, &run->graph, &err) ||
        model_replay_run(run->graph, &ro, &run->replay, &err)) {
        run_release(run);
        return cli_fail(&err);
    }
    return 0;
}

static int write_timelines(const struct run *run, const char *dir)
{
    if (mkdir(dir, 0755) && !cli_is_dir(dir)) {
        fprintf(stderr, "stepcast: cannot create directory '%s'\n", dir);
        return 1;
    }
    for (size_t i = 0; i < run->job->n_ranks; i++) {
        char path[4096];
        int rank = run->job->rank_ids[i];
        json_t *doc = api_timeline_json(run->replay, rank);
        snprintf(path, sizeof path, "%s/rank%d.replay.json", dir, rank);
        if (!doc || json_dump_file(doc, path, JSON_COMPACT | JSON_REAL_PRECISION(17))) {
            json_decref(doc);
            fprintf(stderr, "stepcast: cannot write '%s'\n", path);
            return 1;
        }
        json_decref(doc);
    }
    return 0;
}

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

static const char *step_name(const struct run *run, const struct model_replay_step *s)
{
    const struct model_trace *t = run->job->ranks[s->rank];
    return model_str(t, t->steps[s->step].name);
}

int cmd_replay(int argc, char **argv)
{
    struct run run;
    const char *timeline;
    int json, rc = prepare(argc, argv, "replay", replay_usage, &run, &json, &timeline);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (json) {
        json_t *doc = api_replay_json(run.replay);
        rc = doc ? cli_print_json(doc) : 1;
        json_decref(doc);
    } else {
        const struct model_replay *r = run.replay;
        struct cli_table tb;
        cli_table_init(&tb, "rank", "step", "measured ms", "replayed ms", "error %", "compute",
                       "overlap", "comm", "host", "idle", "kept coll ms", NULL);
        for (size_t i = 0; i < r->n_steps; i++) {
            const struct model_replay_step *s = &r->steps[i];
            const struct model_breakdown *b = &s->breakdown;
            cli_table_rowf(&tb, "%d|%s%s|%.3f|%.3f|%+.2f|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f",
                           run.job->rank_ids[s->rank], step_name(&run, s), s->partial ? " (partial)" : "",
                           ms(s->measured_ns), ms(s->replayed_ns), s->error_pct, ms(b->compute_exposed),
                           ms(b->overlap), ms(b->comm_exposed), ms(b->host), ms(b->idle),
                           ms(s->collective_kept_ns));
        }
        cli_table_print(&tb, stdout, "");
        cli_table_release(&tb);
        printf("\nmean |error| %.2f%%, max |error| %.2f%% over %zu steps (partial steps excluded)\n",
               r->mean_abs_error_pct, r->max_abs_error_pct, r->n_scored);
        const struct model_graph *g = run.graph;
        printf("graph: %zu tasks, %zu edges (%zu launch, %zu event sync of which %zu inferred, %zu host sync, "
               "%zu launch queue, %zu inter-thread); %zu collectives matched across ranks, %zu kept\n",
               g->n_tasks, g->n_edges, g->edges_by_kind[MODEL_EDGE_LAUNCH],
               g->edges_by_kind[MODEL_EDGE_EVENT_SYNC], g->inferred_event_syncs,
               g->edges_by_kind[MODEL_EDGE_HOST_SYNC], g->edges_by_kind[MODEL_EDGE_LAUNCH_QUEUE],
               g->edges_by_kind[MODEL_EDGE_INTER_THREAD], g->collectives_matched, g->collectives_kept);
        if (r->forced)
            printf("warning: %zu tasks were scheduled ahead of a dependency cycle\n", r->forced);
    }
    if (rc == 0 && timeline)
        rc = write_timelines(&run, timeline);
    run_release(&run);
    return rc;
}

int cmd_critical_path(int argc, char **argv)
{
    struct run run;
    int json, rc = prepare(argc, argv, "critical-path", path_usage, &run, &json, NULL);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (json) {
        json_t *doc = api_critical_path_json(run.replay);
        rc = doc ? cli_print_json(doc) : 1;
        json_decref(doc);
    } else {
        const struct model_replay *r = run.replay;
        for (size_t i = 0; i < r->n_steps; i++) {
            const struct model_replay_step *s = &r->steps[i];
            int64_t by[MODEL_BOUND_COUNT] = {0};
            for (size_t k = s->path_first; k < s->path_first + s->path_n; k++)
                by[r->segments[k].bound] += r->segments[k].end - r->segments[k].start;
            printf("%srank %d %s: %.3f ms replayed;", i ? "\n" : "", run.job->rank_ids[s->rank],
                   step_name(&run, s), ms(s->replayed_ns));
            for (int b = 0; b < MODEL_BOUND_COUNT; b++)
                printf(" %s %.3f", model_bound_name((enum model_bound)b), ms(by[b]));
            printf("\n");
            struct cli_table tb;
            cli_table_init(&tb, "start ms", "end ms", "bound", "resource", "task", NULL);
            for (size_t k = s->path_first; k < s->path_first + s->path_n; k++) {
                const struct model_replay_segment *sg = &r->segments[k];
                const struct model_task *t = &run.graph->tasks[sg->task];
                const struct model_resource *res = &run.graph->res[t->res];
                const struct model_trace *tr = run.job->ranks[t->rank];
                const char *name = t->event == MODEL_NONE ? "(step boundary)" : model_str(tr, tr->events[t->event].name);
                cli_table_rowf(&tb, "%.3f|%.3f|%s|rank %d %s %" PRId64 "|%.80s", ms(sg->start - s->start),
                               ms(sg->end - s->start), model_bound_name((enum model_bound)sg->bound),
                               run.job->rank_ids[t->rank], res->gpu ? "stream" : "thread",
                               tr->tracks[res->track].tid, name);
            }
            cli_table_print(&tb, stdout, "  ");
            cli_table_release(&tb);
        }
    }
    run_release(&run);
    return rc;
}
