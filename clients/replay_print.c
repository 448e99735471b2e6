/* clients/replay_print.c: the replay and critical-path documents as text
 * (replay_print.h). They print from the JSON documents, so the local
 * commands and the remote ones (which get those documents from stepcastd)
 * show the same tables; the critical path's summary is also printed
 * straight from a local replay, grouped the same way, which spares making
 * the document of its every segment. */
#include "clients/replay_print.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/inspect_json.h"
#include "api/replay_json.h"
#include "clients/cli.h"
#include "clients/table.h"
#include "model/graph.h"
#include "model/replay.h"
#include "common/banned.h"

int cli_print_doc(json_t *doc, int json, int (*as_text)(const json_t *))
{
    int rc = !doc ? 1 : json ? cli_print_json(doc) : as_text(doc);
    json_decref(doc);
    return rc;
}

/* The share of the measured steps' time the traces cannot explain above
 * which the table says what that means and what to do. */
#define UNEXPLAINED_NOTE 0.05

/* The words of the replay's table: a replay's against its measured step,
 * a what-if's against the traced run it changes (not an error: the run
 * changed). */
struct replay_words {
    const char *measured, *replayed, *diff, *mean, *max;
};
static const struct replay_words replay_words = {"measured ms", "replayed ms", "error %", "mean |error|",
                                                 "max |error|"};
static const struct replay_words whatif_words = {"traced ms", "what-if ms", "diff %",
                                                 "difference from the traced run: mean |diff|", "max |diff|"};

static int print_replay(const json_t *doc, const struct replay_words *w);

int cli_print_replay(const json_t *doc)
{
    return print_replay(doc, &replay_words);
}

int cli_print_whatif_replay(const json_t *doc)
{
    return print_replay(doc, &whatif_words);
}

static int print_replay(const json_t *doc, const struct replay_words *w)
{
    const json_t *steps = json_object_get(doc, "steps"), *s;
    size_t i, scored = 0;
    double measured = 0, unexplained = 0, kept = 0;
    struct cli_table tb;
    if (!json_is_array(steps)) {
        fprintf(stderr, "stepcast: the replay document has no steps\n");
        return 1;
    }
    cli_table_init(&tb, "rank", "step", w->measured, w->replayed, w->diff, "unexplained ms",
                   "compute", "overlap", "comm", "unexpl", "host", "idle", "kept coll ms", NULL);
    json_array_foreach(steps, i, s) {
        const json_t *b = json_object_get(s, "breakdown");
        int partial = json_is_true(json_object_get(s, "partial"));
        /* a step with no measured time (Chakra ET): no error to show */
        int timed = !json_is_null(json_object_get(s, "measured_ms"));
        char m[32] = "-", e[32] = "-", u[32] = "-";
        scored += !partial && timed;
        if (!partial && timed) {
            measured += cli_json_num(s, "measured_ms");
            unexplained += cli_json_num(s, "unexplained_ms");
            kept += cli_json_num(b, "unexplained");
        }
        if (timed) {
            snprintf(m, sizeof m, "%.3f", cli_json_num(s, "measured_ms"));
            snprintf(e, sizeof e, "%+.2f", cli_json_num(s, "error_pct"));
            snprintf(u, sizeof u, "%.3f", cli_json_num(s, "unexplained_ms"));
        }
        cli_table_rowf(&tb, "%lld|%s%s|%s|%.3f|%s|%s|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f",
                       cli_json_int(s, "rank"), cli_json_str(s, "step", ""), partial ? " (partial)" : "", m,
                       cli_json_num(s, "replayed_ms"), e, u, cli_json_num(b, "compute_exposed"),
                       cli_json_num(b, "overlap"), cli_json_num(b, "comm_exposed"),
                       cli_json_num(b, "unexplained"), cli_json_num(b, "host"),
                       cli_json_num(b, "idle"), cli_json_num(s, "collective_kept_ms"));
    }
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    if (scored)
        printf("\n%s %.2f%%, %s %.2f%% over %zu steps (partial steps excluded)\n", w->mean,
               cli_json_num(doc, "mean_abs_error_pct"), w->max, cli_json_num(doc, "max_abs_error_pct"), scored);
    else
        printf("\nno measured step to compare with (the steps have no measured time)\n");

    const json_t *g = json_object_get(doc, "graph"), *v;
    const char *kind;
    const char *sep = "";
    printf("graph: %lld tasks, %lld edges (", cli_json_int(g, "tasks"), cli_json_int(g, "edges"));
    json_object_foreach((json_t *)json_object_get(g, "edges_by_kind"), kind, v) {
        printf("%s%s %lld", sep, kind, (long long)json_integer_value(v));
        sep = ", ";
    }
    const json_t *hw = json_object_get(g, "host_waits");
    printf("); event syncs: %lld inferred, %lld from cuda_sync; host waits on the GPU: %lld without a "
           "call, %lld polling loops; %lld collectives matched across ranks, %lld kept\n",
           cli_json_int(g, "event_syncs_inferred"), cli_json_int(g, "event_syncs_from_cuda_sync"),
           cli_json_int(hw, "without_call"), cli_json_int(hw, "polling_loops"), cli_json_int(g, "collectives_matched"),
           cli_json_int(g, "collectives_kept"));
    if (cli_json_int(doc, "forced"))
        printf("warning: %lld tasks were scheduled ahead of a dependency cycle\n",
               cli_json_int(doc, "forced"));
    if (kept == 0 && measured > 0 && unexplained > UNEXPLAINED_NOTE * measured)
        printf("note: %.0f%% of the measured steps is time the traces cannot explain: GPU work waited on\n"
               "      something they do not hold, such as work launched before the traced window (a\n"
               "      profiler warm-up step with no synchronisation before the traced one) or a peer's\n"
               "      untraced work; --keep-unexplained replays those waits as measured\n",
               100 * unexplained / measured);
    return 0;
}

/* How many of the path's tasks the text view lists (CLI_PATH_ALL: every
 * entry of the path in order). */
static long path_top = CLI_PATH_TOP_DEFAULT;

struct path_group {
    const char *bound, *task;
    size_t count;
    double ms;
};

static int group_by_ms(const void *a, const void *b)
{
    const struct path_group *x = a, *y = b;
    return (x->ms < y->ms) - (x->ms > y->ms);
}

/* The groups of a step's path (g[0..used), taken), the longest first:
 * the top path_top of them. */
static void print_groups(struct path_group *g, size_t used, double step_ms)
{
    qsort(g, used, sizeof *g, group_by_ms);
    size_t shown = (size_t)path_top < used ? (size_t)path_top : used;
    struct cli_table tb;
    cli_table_init(&tb, "ms", "share", "count", "bound", "task", NULL);
    for (size_t j = 0; j < shown; j++)
        cli_table_rowf(&tb, "%.3f|%.1f%%|%zu|%s|%.80s", g[j].ms, step_ms > 0 ? 100 * g[j].ms / step_ms : 0,
                       g[j].count, g[j].bound, g[j].task);
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
    if (shown < used)
        printf("  ... %zu more kinds of task on the path; --top N shows more, --all lists the path in order\n",
               used - shown);
}

/* The path's time grouped by bound and task name, the longest first: the
 * top path_top of them. */
static int print_path_summary(const json_t *path, double step_ms)
{
    size_t n = json_array_size(path), used = 0, k;
    struct path_group *g = calloc(n ? n : 1, sizeof *g);
    const json_t *v;
    if (!g)
        return 1;
    json_array_foreach(path, k, v) {
        const char *bound = cli_json_str(v, "bound", ""),
                   *task = cli_json_str(v, "wait", cli_json_str(v, "task", ""));
        double ms = cli_json_num(v, "end_ms") - cli_json_num(v, "start_ms");
        size_t j = 0;
        while (j < used && (strcmp(g[j].bound, bound) || strcmp(g[j].task, task)))
            j++;
        if (j == used)
            g[used++] = (struct path_group){bound, task, 0, 0};
        g[j].count++;
        g[j].ms += ms;
    }
    print_groups(g, used, step_ms);
    free(g);
    return 0;
}

/* A step's first line, up to its time by bound. */
static void print_step_head(size_t i, long long rank, const char *step, double replayed_ms, size_t n)
{
    printf("%srank %lld %s: %.3f ms replayed, %zu tasks on the critical path;", i ? "\n" : "", rank, step,
           replayed_ms, n);
}

int cli_critical_path_option(const char *cmd, int opt, const char *arg)
{
    if (opt == 'A') {
        path_top = CLI_PATH_ALL;
        return 0;
    }
    char *end;
    long n = arg ? strtol(arg, &end, 10) : 0;
    if (!arg || *end || n < 1 || n > 1000000)
        return cli_usage_error(cmd, "--top takes a count from 1 to 1000000, not '%s'", arg ? arg : "");
    path_top = n;
    return 0;
}

int cli_print_critical_path(const json_t *doc)
{
    const json_t *steps = json_object_get(doc, "steps"), *s;
    size_t i;
    if (!json_is_array(steps)) {
        fprintf(stderr, "stepcast: the critical-path document has no steps\n");
        return 1;
    }
    json_array_foreach(steps, i, s) {
        const json_t *v, *path = json_object_get(s, "path");
        const char *bound;
        size_t k;
        print_step_head(i, cli_json_int(s, "rank"), cli_json_str(s, "step", ""), cli_json_num(s, "replayed_ms"),
                        json_array_size(path));
        json_object_foreach((json_t *)json_object_get(s, "by_bound"), bound, v)
            printf(" %s %.3f", bound, json_number_value(v));
        printf("\n");
        if (path_top != CLI_PATH_ALL) {
            if (print_path_summary(path, cli_json_num(s, "replayed_ms")))
                return 1;
            continue;
        }
        struct cli_table tb;
        cli_table_init(&tb, "start ms", "end ms", "bound", "resource", "task", NULL);
        json_array_foreach(path, k, v)
            cli_table_rowf(&tb, "%.3f|%.3f|%s|%s|%.80s", cli_json_num(v, "start_ms"),
                           cli_json_num(v, "end_ms"), cli_json_str(v, "bound", ""),
                           cli_json_str(v, "resource", ""), cli_json_str(v, "wait", cli_json_str(v, "task", "")));
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
    }
    return 0;
}

/* A group of a replayed path, found by its bound and the interned name of
 * its task (or of the GPU work a host wait was on): names are interned
 * once in the graph, so equal names are the same pointer. */
struct group_key {
    const char *name;
    uint8_t bound, wait;
};

static size_t key_hash(const struct group_key *k, size_t mask)
{
    uint64_t h = ((uint64_t)(uintptr_t)k->name >> 3) * 0x9E3779B97F4A7C15ull;
    return (size_t)((h >> 32) ^ (h ^ ((uint64_t)k->bound << 1 | k->wait)) * 0xC2B2AE3D27D4EB4Full) & mask;
}

/* Step s's path grouped as print_path_summary groups the document's, in
 * the same order, from the replay itself. */
static int print_replay_summary(const struct model_replay *r, const struct model_replay_step *s)
{
    const struct model_graph *g = r->g;
    size_t n = s->path_n, used = 0, cap = 16;
    int rc = 1;
    while (cap < 2 * n)
        cap *= 2;
    struct path_group *gr = calloc(n ? n : 1, sizeof *gr);
    struct group_key *keys = calloc(n ? n : 1, sizeof *keys);
    uint32_t *slot = calloc(cap, sizeof *slot); /* group index + 1; 0: free */
    char **waits = calloc(n ? n : 1, sizeof *waits);
    size_t n_waits = 0;
    if (!gr || !keys || !slot || !waits)
        goto out;
    for (size_t k = s->path_first; k < s->path_first + n; k++) {
        const struct model_replay_segment *sg = &r->segments[k];
        struct group_key key = {.bound = sg->bound, .wait = sg->edge == MODEL_EDGE_HOST_POLL};
        key.name = model_graph_str(g, g->src[key.wait ? sg->on : sg->task].name);
        size_t h = key_hash(&key, cap - 1);
        uint32_t j;
        while ((j = slot[h]) && (keys[j - 1].name != key.name || keys[j - 1].bound != key.bound ||
                                 keys[j - 1].wait != key.wait))
            h = (h + 1) & (cap - 1);
        if (!j) {
            const char *task = key.name;
            if (key.wait) { /* as the document words it (api_critical_path_json) */
                char wait[160];
                snprintf(wait, sizeof wait, "host waits on %s", key.name);
                if (!(task = waits[n_waits++] = strdup(wait)))
                    goto out;
            }
            keys[used] = key;
            gr[used++] = (struct path_group){model_bound_name((enum model_bound)sg->bound), task, 0, 0};
            slot[h] = j = (uint32_t)used;
        }
        gr[j - 1].count++;
        gr[j - 1].ms += api_ms(sg->end - s->start) - api_ms(sg->start - s->start);
    }
    print_groups(gr, used, api_ms(s->replayed_ns));
    rc = 0;
out:
    for (size_t k = 0; k < n_waits; k++)
        free(waits[k]);
    free(waits);
    free(slot);
    free(keys);
    free(gr);
    return rc;
}

int cli_print_critical_path_replay(const struct model_replay *r)
{
    if (path_top == CLI_PATH_ALL)
        return cli_print_doc(api_critical_path_json(r), 0, cli_print_critical_path);
    const struct model_graph *g = r->g;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct model_replay_step *s = &r->steps[i];
        int64_t by[MODEL_BOUND_COUNT] = {0};
        for (size_t k = s->path_first; k < s->path_first + s->path_n; k++)
            by[r->segments[k].bound] += r->segments[k].end - r->segments[k].start;
        print_step_head(i, g->ranks[s->rank].id, model_graph_str(g, g->steps[i].name), api_ms(s->replayed_ns),
                        s->path_n);
        for (int b = 0; b < MODEL_BOUND_COUNT; b++)
            printf(" %s %.3f", model_bound_name((enum model_bound)b), api_ms(by[b]));
        printf("\n");
        if (print_replay_summary(r, s))
            return 1;
    }
    return 0;
}
