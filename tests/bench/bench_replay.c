/* tests/bench/bench_replay.c: replay speed in tasks per second on one core.
 *
 *   bench-replay TRACE...
 *
 * Builds the graph of the job once, then times the simulation alone
 * (model_replay_simulate: every start and finish of every task) and the full
 * replay with per-step results, best of 5 each. As a floor measured in the
 * same run: one pass reading every task and edge the simulation reads. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "common/banned.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct model_job *job;
    struct model_graph *g;
    struct sc_error err;
    if (argc < 2) {
        fprintf(stderr, "usage: bench-replay TRACE...\n");
        return 2;
    }
    double t0 = now();
    if (model_job_load((const char *const *)argv + 1, (size_t)argc - 1, NULL, 0, &job, &err) ||
        model_graph_build(job, NULL, &g, &err)) {
        fprintf(stderr, "bench-replay: %s\n", err.msg);
        return 1;
    }
    double t_build = now() - t0;
    int64_t *start = malloc(g->n_tasks * sizeof *start), *end = malloc(g->n_tasks * sizeof *end);
    double best_sim = 1e30, best_full = 1e30, best_floor = 1e30, best_what_if = 1e30;
    /* a what-if: every GPU task x2, kernels named like a GEMM x0.5 */
    struct model_replay_opts what_if;
    model_replay_opts_default(&what_if);
    if (model_replay_parse_scale("gpu=2", &what_if, &err) || model_replay_parse_scale("name:*gemm*=0.5", &what_if, &err)) {
        fprintf(stderr, "bench-replay: %s\n", err.msg);
        return 1;
    }
    size_t forced = 0;
    volatile int64_t sink = 0;
    for (int i = 0; i < 5; i++) {
        double a = now();
        int64_t s = 0;
        for (size_t k = 0; k < g->n_tasks; k++)
            s += g->tasks[k].dur + g->tasks[k].gap + g->pred_at[k];
        for (size_t e = 0; e < g->n_edges; e++)
            s += g->edges[e].lat + g->succs[e];
        sink += s;
        double b = now();
        if (model_replay_simulate(g, NULL, start, end, &forced, &err)) {
            fprintf(stderr, "bench-replay: %s\n", err.msg);
            return 1;
        }
        double c = now();
        struct model_replay *r;
        if (model_replay_run(g, NULL, &r, &err)) {
            fprintf(stderr, "bench-replay: %s\n", err.msg);
            return 1;
        }
        double d = now();
        model_replay_free(r);
        if (model_replay_simulate(g, &what_if, start, end, &forced, &err)) {
            fprintf(stderr, "bench-replay: %s\n", err.msg);
            return 1;
        }
        if (now() - d < best_what_if)
            best_what_if = now() - d;
        if (b - a < best_floor)
            best_floor = b - a;
        if (c - b < best_sim)
            best_sim = c - b;
        if (d - c < best_full)
            best_full = d - c;
    }
    (void)sink;
    printf("  graph: %zu tasks, %zu edges, %zu collective groups, %zu ranks (load + build %.3f s)\n",
           g->n_tasks, g->n_edges, g->n_groups, job->n_ranks, t_build);
    printf("  simulation:            %8.2f ms  %6.2f M tasks/s  (%.1f ns/task; one pass over the same arrays: %.2f ms, %.1fx faster)\n",
           best_sim * 1e3, g->n_tasks / best_sim / 1e6, best_sim * 1e9 / g->n_tasks, best_floor * 1e3,
           best_sim / best_floor);
    printf("  simulation, what-if:   %8.2f ms  %6.2f M tasks/s  (gpu=2 and name:*gemm*=0.5: durations from factors)\n",
           best_what_if * 1e3, g->n_tasks / best_what_if / 1e6);
    printf("  replay with results:   %8.2f ms  %6.2f M tasks/s  (steps, breakdowns, critical paths)\n",
           best_full * 1e3, g->n_tasks / best_full / 1e6);
    printf("  budget (DESIGN.md §9: >= 10 M tasks/s on one core): %s\n",
           g->n_tasks / best_sim >= 10e6 ? "met" : "NOT met");
    free(start);
    free(end);
    model_graph_free(g);
    model_job_free(job);
    return forced ? 1 : 0;
}
