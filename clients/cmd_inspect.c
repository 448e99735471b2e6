/* clients/cmd_inspect.c: `stepcast inspect`: what each rank's trace holds. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/inspect_json.h"
#include "api/whatif_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/table.h"
#include "estimator/interchange/chakra_import.h"
#include "estimator/whatif/job_check.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/whatif.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/inspect.h"
#include "model/job.h"
#include "common/banned.h"

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static void print_rank(const struct model_trace *t, const struct model_inspect *in)
{
    printf("rank %" PRId64 "  %s\n", t->rank, t->source);
    printf("  gpu: %s   world size: ", in->gpu_name != MODEL_NONE ? model_str(t, in->gpu_name) : "unknown");
    if (t->world_size >= 0)
        printf("%" PRId64 "\n", t->world_size);
    else
        printf("unknown\n");
    printf("  events: %" PRIu64 " entries, %zu complete, %" PRIu64 " flows, %" PRIu64 " metadata",
           t->n_entries, t->n_events, t->n_flow_entries, t->n_metadata);
    if (t->n_unknown)
        printf(", %" PRIu64 " of unknown categories (not modelled)", t->n_unknown);
    printf("\n\n");

    if (t->n_steps) {
        struct cli_table tb;
        cli_table_init(&tb, "step", "duration ms", "partial", NULL);
        for (size_t i = 0; i < t->n_steps; i++)
            cli_table_rowf(&tb, "%s|%.3f|%s", or_dash(model_str(t, t->steps[i].name)),
                           ms(t->steps[i].end - t->steps[i].start), t->steps[i].partial ? "yes" : "");
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
        printf("\n");
    }

    struct cli_table cats;
    cli_table_init(&cats, "category", "events", "kind", NULL);
    for (size_t i = 0; i < t->n_cats; i++)
        cli_table_rowf(&cats, "%s|%" PRIu64 "|%s", or_dash(model_str(t, t->cats[i].name)),
                       t->cats[i].count,
                       t->cats[i].flow ? "flow" : model_event_kind_name(t->cats[i].kind));
    cli_table_print(&cats, stdout, "  ");
    cli_table_release(&cats);
    printf("\n");

    if (in->n_threads) {
        struct cli_table tb;
        cli_table_init(&tb, "thread", "name", "events", "cpu ops", "runtime", "busy ms", NULL);
        for (size_t i = 0; i < in->n_threads; i++) {
            const struct model_inspect_thread *h = &in->threads[i];
            const struct model_track *k = &t->tracks[h->track];
            cli_table_rowf(&tb, "%" PRId64 "/%" PRId64 "|%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%.3f",
                           k->pid, k->tid, or_dash(model_str(t, k->label)), h->events, h->cpu_ops,
                           h->runtime_calls, ms(h->busy_ns));
        }
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
        printf("\n");
    }
    if (in->n_streams) {
        struct cli_table tb;
        cli_table_init(&tb, "gpu/stream", "kernels", "nccl", "memcpy", "memset", "busy ms", NULL);
        for (size_t i = 0; i < in->n_streams; i++) {
            const struct model_inspect_stream *s = &in->streams[i];
            cli_table_rowf(&tb, "%" PRId64 "/%" PRId64 "|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%.3f",
                           s->device, s->stream, s->kernels, s->comm_kernels, s->memcpys, s->memsets,
                           ms(s->busy_ns));
        }
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
        printf("\n");
    }
    if (in->n_colls) {
        struct cli_table tb;
        cli_table_init(&tb, "collective", "kernels", "cpu ops", "sized", "nelems", "dtype", "kernel ms", NULL);
        for (size_t i = 0; i < in->n_colls; i++) {
            const struct model_inspect_coll *c = &in->colls[i];
            char sizes[64] = "-";
            if (c->min_nelems >= 0)
                snprintf(sizes, sizeof sizes, c->min_nelems == c->max_nelems ? "%" PRId64 : "%" PRId64 "..%" PRId64,
                         c->min_nelems, c->max_nelems);
            cli_table_rowf(&tb, "%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%s|%s|%.3f", c->name, c->kernels,
                           c->cpu_ops, c->sized, sizes,
                           c->dtype != MODEL_NONE ? model_str(t, c->dtype) : "-", ms(c->kernel_ns));
        }
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
        printf("\n");
    }
    if (in->lacks) {
        printf("  lacks:\n");
        for (unsigned b = 0; b < MODEL_LACK_COUNT; b++)
            if (in->lacks & (1u << b))
                printf("    %-18s %s\n", model_inspect_lack_name(b), model_inspect_lack_text(b));
    } else {
        printf("  lacks: nothing a replay needs\n");
    }
}

/* The collectives matched across ranks in the job's graph g, as a replay
 * groups them. */
static void print_groups(const struct model_graph *g)
{
    if (g->stats.collectives_matched) {
        struct cli_table tb;
        printf("\ncollectives across ranks (%zu):\n", g->stats.collectives_matched);
        cli_table_init(&tb, "kind", "bytes", "dtype", "group", "seq", "size", "ranks", "transfer ms", NULL);
        for (size_t k = 0; k < g->n_groups; k++) {
            const struct model_coll_group *cg = &g->groups[k];
            if (g->tasks[g->group_tasks[g->group_at[k]]].kept)
                continue; /* kept for untraced peers */
            char bytes[32] = "-", seq[32] = "-", ranks[96] = "";
            size_t n = 0;
            int64_t transfer = 0;
            if (cg->bytes >= 0)
                snprintf(bytes, sizeof bytes, "%" PRId64, cg->bytes);
            if (cg->seq >= 0)
                snprintf(seq, sizeof seq, "%" PRId64, cg->seq);
            for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1] && n < sizeof ranks; m++) {
                const struct model_task *t = &g->tasks[g->group_tasks[m]];
                n += (size_t)snprintf(ranks + n, sizeof ranks - n, "%s%d", n ? "," : "", g->ranks[t->rank].id);
                if (t->dur > transfer)
                    transfer = t->dur;
            }
            const char *dtype = model_graph_str(g, cg->dtype), *pg = model_graph_str(g, cg->pg);
            cli_table_rowf(&tb, "%s|%s|%s|%s|%s|%u|%s|%.3f", model_coll_op_name((enum model_coll_op)cg->op), bytes,
                           *dtype ? dtype : "-", *pg ? pg : "-", seq, cg->size, ranks, ms(transfer));
        }
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
    }
}

/* The host's waits on GPU work with no sync call in the job's graph g
 * (model_graph_host_waits), per rank and the work waited on. */
static int print_host_waits(const struct model_graph *g)
{
    struct model_host_wait *v;
    size_t n;
    if (model_graph_host_waits(g, &v, &n)) {
        fprintf(stderr, "stepcast: out of memory\n");
        return 1;
    }
    if (n) {
        struct cli_table tb;
        printf("\nhost waits on the GPU with no sync call:\n");
        cli_table_init(&tb, "rank", "waits on", "without a call", "polling loops", NULL);
        for (size_t k = 0; k < n; k++)
            cli_table_rowf(&tb, "%d|%.80s|%zu|%zu", g->ranks[v[k].rank].id, model_graph_str(g, v[k].name),
                           v[k].without_call, v[k].polling_loops);
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
    }
    free(v);
    return 0;
}

/* What of description cfg the traced job (its graph g, structure st)
 * contradicts, each printed; 0, or an exit status when anything is. */
/* What Chakra ET files hold, from their graph: per rank its file, its
 * tasks by class, threads and streams and dependencies; the collectives
 * coupled across ranks. */
static json_t *et_json(const struct model_job *job, const struct model_graph *g)
{
    json_t *ranks = json_array();
    for (size_t ri = 0; ranks && ri < g->n_ranks; ri++) {
        size_t by[MODEL_TASK_CLASS_COUNT] = {0}, threads = 0, streams = 0, deps = 0;
        for (size_t k = 0; k < g->n_res; k++)
            if (g->res[k].rank == ri) {
                threads += !g->res[k].gpu;
                streams += g->res[k].gpu;
            }
        for (size_t i = 0; i < g->n_tasks; i++)
            if (g->tasks[i].rank == ri) {
                by[g->tasks[i].cls]++;
                for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
                    deps += g->edges[e].kind != MODEL_EDGE_STEP_END;
            }
        json_t *classes = json_object();
        for (int c = 0; c < MODEL_TASK_CLASS_COUNT; c++)
            if (by[c] && c != MODEL_TASK_MARKER)
                json_object_set_new(classes, model_task_class_name((enum model_task_class)c), json_integer((json_int_t)by[c]));
        json_array_append_new(ranks, json_pack("{s:i, s:s, s:o, s:I, s:I, s:I}", "rank", g->ranks[ri].id, "source",
                                               job->ranks[ri]->source, "tasks", classes, "dependencies",
                                               (json_int_t)deps, "threads", (json_int_t)threads, "streams",
                                               (json_int_t)streams));
    }
    return json_pack("{s:s, s:o, s:o}", "format", "chakra_et", "ranks", ranks, "collectives", api_collectives_json(g));
}

static int print_et(const json_t *doc, const struct model_graph *g)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "ranks"), i, r) {
        const char *cls;
        json_t *n;
        printf("%srank %lld: %s (Chakra ET: one step, no measured time)\n", i ? "\n" : "", cli_json_int(r, "rank"),
               cli_json_str(r, "source", ""));
        printf("  tasks:");
        json_object_foreach(json_object_get(r, "tasks"), cls, n) printf(" %s %lld", cls, (long long)json_integer_value(n));
        printf("\n  dependencies %lld, threads %lld, streams %lld\n", cli_json_int(r, "dependencies"),
               cli_json_int(r, "threads"), cli_json_int(r, "streams"));
    }
    print_groups(g);
    return 0;
}

static int contradictions(const struct model_graph *g, const struct job_config *cfg, const struct job_structure *st)
{
    struct sc_error err;
    struct est_spec spec;
    double step_ms;
    int rc = 0;
    if (whatif_job_check_world_size(cfg, st->world_size, "", &err))
        rc = cli_fail(&err);
    /* the description's own checks, as an estimate of it makes them */
    if (st->gpu && cfg->layers && cfg->hidden && cfg->heads && cfg->seq && spec_job_config_spec(cfg, st->gpu->id, &spec, &err))
        rc = cli_fail(&err);
    if (whatif_base_step(g, &step_ms, &err) || whatif_job_check_mfu(cfg, st->gpu, step_ms, "", &err))
        rc = cli_fail(&err);
    return rc;
}

/* What launched the structure's work: the stack, the passes and what the
 * data-parallel collectives are for. */
static void print_launchers(const struct job_structure *st)
{
    double steps = st->steps ? (double)st->steps : 1;
    if (st->inductor_kernels || st->compiled_regions)
        printf("  stack: torch.compile (%zu Inductor kernels, %zu compiled regions)\n", st->inductor_kernels,
               st->compiled_regions);
    else
        printf("  stack: eager\n");
    if (st->backward_tasks)
        printf("  passes: %d layers with forward work, %d with backward work (%zu tasks the autograd engine ran, "
               "%zu of them accumulating gradients)\n",
               st->layers_forward, st->layers_backward, st->backward_tasks, st->param_work_tasks);
    else
        printf("  passes: the trace records no autograd engine function, so forward and backward are not told "
               "apart\n");
    printf("  gradient reduction: %s%s\n",
           st->grad_sync == STRUCT_SYNC_DDP    ? "DDP buckets, all-reduced"
           : st->grad_sync == STRUCT_SYNC_ZERO ? "buckets reduce-scattered (distributed optimizer)"
           : st->grad_sync == STRUCT_SYNC_FSDP ? "FSDP: per-unit gathers, gradients reduce-scattered"
                                               : "none found",
           st->grad_sync == STRUCT_SYNC_FSDP && !st->by_use[STRUCT_DP_GRADS]
               ? " (its units' hooks traced, no collective: a process group of one)"
               : "");
    if (!st->by_role[STRUCT_ROLE_DP])
        return;
    struct cli_table tb;
    cli_table_init(&tb, "data-parallel", "count", "per step", "MB per step", "traced ms", NULL);
    for (int u = STRUCT_DP_GRADS; u < STRUCT_DP_USE_COUNT; u++)
        if (st->by_use[u])
            cli_table_rowf(&tb, "%s|%zu|%.1f|%.3f|%.3f", whatif_struct_dp_use_name((enum struct_dp_use)u), st->by_use[u],
                           (double)st->by_use[u] / steps, st->use_bytes[u] / steps / 1e6, st->use_ms[u]);
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
}

/* The job's structure in its graph g recovered against its description
 * (structure.h, job_check.h): printed, or added to the JSON document *doc
 * under "structure". */
static int structure(const struct model_graph *g, const struct job_config *cfg, json_t *doc)
{
    struct job_structure st;
    struct sc_error err;
    if (whatif_job_structure_recover(g, NULL, cfg, &st, &err))
        return cli_fail(&err);
    int rc = contradictions(g, cfg, &st);
    if (rc) {
        whatif_job_structure_release(&st);
        return rc;
    }
    const char *schedule = spec_schedule_name(spec_job_config_schedule(cfg));
    if (doc) {
        json_t *sj = api_structure_json(&st);
        if (sj)
            json_object_set_new(sj, "pipeline", json_pack("{s:I, s:s, s:I}", "pp", (json_int_t)cfg->pp, "schedule",
                                                          schedule, "vpp", (json_int_t)spec_job_config_vpp(cfg)));
        json_object_set_new(doc, "structure", sj);
    } else {
        printf("\nstructure (checked against the job description):\n");
        printf("  gpu: %s (%s)   layers per rank: %d, from %s (%zu tasks)\n", st.gpu ? st.gpu->id : "no profile",
               or_dash(st.device_name), st.layers_per_rank, whatif_struct_layer_source_name(st.layer_source), st.layer_tasks);
        printf("  pipeline: pp %lld, schedule %s, vpp %lld (as described)\n", (long long)cfg->pp, schedule,
               (long long)spec_job_config_vpp(cfg));
        struct cli_table tb;
        cli_table_init(&tb, "collectives", "count", "traced ms", NULL);
        for (int r = STRUCT_ROLE_DP; r < STRUCT_ROLE_COUNT; r++)
            cli_table_rowf(&tb, "%s|%zu|%.3f", r == STRUCT_ROLE_DP    ? "data-parallel"
                                                : r == STRUCT_ROLE_TP  ? "tensor-parallel"
                                                : r == STRUCT_ROLE_PP  ? "pipeline send/recv"
                                                : r == STRUCT_ROLE_CP  ? "context-parallel exchange"
                                                : r == STRUCT_ROLE_EP  ? "expert-parallel exchange"
                                                : r == STRUCT_ROLE_EDP ? "expert data-parallel"
                                                                       : "other",
                           st.by_role[r], st.role_ms[r]);
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
        print_launchers(&st);
    }
    whatif_job_structure_release(&st);
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"step-marker", required_argument, NULL, 'm'},
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct model_load_opts lo;
    struct model_job *job = NULL;
    struct job_config cfg;
    const char *config = NULL;
    int json = 0, c, rc;

    model_load_opts_default(&lo);
    optind = 1;
    while ((c = getopt_long(argc, argv, "jm:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'c': config = optarg; break;
        case 'm': lo.step_marker = optarg; break;
        case 'h':
            printf("usage: stepcast inspect [--json] [--step-marker NAME] [--config FILE] TRACE...\n");
            return 0;
        default: return cli_usage_error("inspect", "bad option");
        }
    }
    if (optind >= argc)
        return cli_usage_error("inspect", "no trace given");
    if (config && (rc = cli_load_job_config(config, &cfg)))
        return rc;
    int et;
    struct sc_error eterr;
    if (chakra_is_et((const char *const *)argv + optind, (size_t)(argc - optind), &et, &eterr))
        return cli_fail(&eterr);
    if (et) { /* no trace to inspect: what the files' graph holds */
        struct model_graph *g = NULL;
        json_t *doc = NULL;
        if (config)
            return cli_usage_error("inspect", "--config needs Kineto traces");
        if (chakra_import((const char *const *)argv + optind, (size_t)(argc - optind), &lo.limits, NULL, &job, &g,
                              &eterr))
            rc = cli_fail(&eterr);
        else if (!(doc = et_json(job, g)))
            rc = 1;
        else
            rc = json ? cli_print_json(doc) : print_et(doc, g);
        json_decref(doc);
        model_graph_free(g);
        model_job_free(job);
        return rc;
    }
    lo.lean = !config; /* the structure reads a what-if's notes, which read the inputs */
    if ((rc = cli_load_job(argv + optind, argc - optind, &lo, &job)))
        return rc;
    /* its graph, for the collectives matched across ranks and the
     * structure; none when it has no step to build one of, which only the
     * structure needs */
    struct model_graph_opts go;
    struct model_graph *g = NULL;
    struct sc_error gerr;
    model_graph_opts_default(&go);
    go.inspect_only = !config; /* the structure replays the graph */
    rc = model_graph_build(job, &go, &g, &gerr);
    if (rc && (rc != SC_EINVAL || config)) {
        model_job_free(job);
        return cli_fail(&gerr);
    }
    rc = 0;
    if (json) {
        struct sc_error err;
        json_t *doc = api_inspect_job_json(job, g, &err);
        if (!doc) {
            model_graph_free(g);
            model_job_free(job);
            return cli_fail(&err);
        }
        if (config)
            rc = structure(g, &cfg, doc);
        if (rc == 0)
            rc = cli_print_json(doc);
        json_decref(doc);
    } else {
        for (size_t i = 0; i < job->n_ranks && rc == 0; i++) {
            struct sc_error err;
            struct model_inspect *in;
            if (model_inspect_trace(job->ranks[i], &in, &err)) {
                rc = cli_fail(&err);
                break;
            }
            if (i)
                printf("\n");
            print_rank(job->ranks[i], in);
            model_inspect_free(in);
        }
        if (rc == 0 && g) {
            print_groups(g);
            rc = print_host_waits(g);
        }
        if (rc == 0 && config)
            rc = structure(g, &cfg, NULL);
    }
    model_graph_free(g);
    model_job_free(job);
    return rc;
}
