/* api/inspect_json.c: inspect results as JSON (inspect_json.h). */
#include "api/inspect_json.h"

#include <math.h>
#include <stdlib.h>

#include "estimator/whatif/coll_split.h"
#include "estimator/whatif/structure.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/inspect.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

double api_ms(int64_t ns)
{
    return round((double)ns) / 1e6;
}

json_t *api_json_ms(int64_t ns)
{
    return json_real(api_ms(ns));
}

static json_t *str_or_null(const struct model_trace *t, uint32_t id)
{
    return id == MODEL_NONE ? json_null() : json_string(model_str(t, id));
}

static json_t *int_or_null(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *track_name(const struct model_trace *t, uint32_t track)
{
    const struct model_track *k = &t->tracks[track];
    return str_or_null(t, k->label);
}

static json_t *devices_json(const struct model_trace *t)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < t->n_devices; i++) {
        const struct model_device *d = &t->devices[i];
        json_array_append_new(a, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
                                           "id", int_or_null(d->id),
                                           "name", str_or_null(t, d->name),
                                           "memory_bytes", int_or_null(d->total_mem),
                                           "sms", int_or_null(d->num_sms),
                                           "compute_major", int_or_null(d->major),
                                           "compute_minor", int_or_null(d->minor)));
    }
    return a;
}

static json_t *distributed_json(const struct model_trace *t)
{
    if (!t->has_distributed_info)
        return json_null();
    json_t *pgs = json_array();
    for (size_t i = 0; pgs && i < t->n_pgs; i++) {
        const struct model_pg *p = &t->pgs[i];
        json_array_append_new(pgs, json_pack("{s:o, s:o, s:o, s:o}", "name", str_or_null(t, p->name),
                                             "description", str_or_null(t, p->desc),
                                             "size", int_or_null(p->size),
                                             "ranks", str_or_null(t, p->ranks)));
    }
    return json_pack("{s:o, s:o, s:o}", "backend", str_or_null(t, t->backend),
                     "nccl_version", str_or_null(t, t->nccl_version), "process_groups", pgs);
}

json_t *api_inspect_rank_json(const struct model_trace *t, const struct model_inspect *in)
{
    json_t *steps = json_array(), *cats = json_object(), *threads = json_array(),
           *streams = json_array(), *colls = json_array(), *lacks = json_array();
    if (!steps || !cats || !threads || !streams || !colls || !lacks)
        goto fail;
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct model_step *s = &t->steps[i];
        json_array_append_new(steps, json_pack("{s:s, s:I, s:I, s:o, s:b}", "name", model_str(t, s->name),
                                               "number", (json_int_t)s->number,
                                               "start_ns", (json_int_t)s->start,
                                               "duration_ms", api_json_ms(s->end - s->start),
                                               "partial", s->partial));
    }
    for (size_t i = 0; i < t->n_cats; i++) {
        const char *name = model_str(t, t->cats[i].name);
        json_object_set_new(cats, *name ? name : "(none)", json_integer((json_int_t)t->cats[i].count));
    }
    for (size_t i = 0; i < in->n_threads; i++) {
        const struct model_inspect_thread *h = &in->threads[i];
        const struct model_track *k = &t->tracks[h->track];
        json_array_append_new(threads, json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:o}",
                                                 "pid", (json_int_t)k->pid, "tid", (json_int_t)k->tid,
                                                 "name", track_name(t, h->track),
                                                 "events", (json_int_t)h->events,
                                                 "cpu_ops", (json_int_t)h->cpu_ops,
                                                 "runtime_calls", (json_int_t)h->runtime_calls,
                                                 "busy_ms", api_json_ms(h->busy_ns)));
    }
    for (size_t i = 0; i < in->n_streams; i++) {
        const struct model_inspect_stream *s = &in->streams[i];
        json_array_append_new(streams, json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:o}",
                                                 "device", (json_int_t)s->device,
                                                 "stream", (json_int_t)s->stream,
                                                 "name", track_name(t, s->track),
                                                 "kernels", (json_int_t)s->kernels,
                                                 "comm_kernels", (json_int_t)s->comm_kernels,
                                                 "memcpys", (json_int_t)s->memcpys,
                                                 "memsets", (json_int_t)s->memsets,
                                                 "busy_ms", api_json_ms(s->busy_ns)));
    }
    for (size_t i = 0; i < in->n_colls; i++) {
        const struct model_inspect_coll *c = &in->colls[i];
        json_array_append_new(colls, json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o}",
                                               "name", c->name, "kernels", (json_int_t)c->kernels,
                                               "cpu_ops", (json_int_t)c->cpu_ops,
                                               "sized", (json_int_t)c->sized,
                                               "min_nelems", int_or_null(c->min_nelems),
                                               "max_nelems", int_or_null(c->max_nelems),
                                               "total_bytes", int_or_null(c->total_bytes),
                                               "dtype", str_or_null(t, c->dtype),
                                               "kernel_ms", api_json_ms(c->kernel_ns)));
    }
    for (unsigned b = 0; b < MODEL_LACK_COUNT; b++)
        if (in->lacks & (1u << b))
            json_array_append_new(lacks, json_string(model_inspect_lack_name(b)));

    return json_pack("{s:I, s:s, s:o, s:o, s:o, s:o, s:{s:o, s:I, s:I, s:b}, s:o,"
                     " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:o,"
                     " s:{s:I, s:I, s:I}, s:o}",
                     "rank", (json_int_t)t->rank, "source", t->source,
                     "world_size", int_or_null(t->world_size), "gpu", str_or_null(t, in->gpu_name),
                     "devices", devices_json(t), "distributed", distributed_json(t),
                     "time",
                     "base_ns", t->has_base_time ? json_integer(t->base_time_ns) : json_null(),
                     "first_ns", (json_int_t)t->first_ts, "last_ns", (json_int_t)t->last_end,
                     "anchored", !t->time_unanchored,
                     "steps", steps,
                     "events",
                     "entries", (json_int_t)t->n_entries, "complete", (json_int_t)t->n_events,
                     "metadata", (json_int_t)t->n_metadata, "instants", (json_int_t)t->n_instants,
                     "counters", (json_int_t)t->n_counters, "flows", (json_int_t)t->n_flow_entries,
                     "other_phases", (json_int_t)t->n_other_phase,
                     "unknown_category", (json_int_t)t->n_unknown,
                     "categories", cats, "threads", threads, "streams", streams,
                     "collectives", colls,
                     "launches",
                     "runtime_calls", (json_int_t)in->runtime_calls,
                     "gpu_without_launch", (json_int_t)in->gpu_without_launch,
                     "launch_without_gpu", (json_int_t)in->launch_without_gpu,
                     "lacks", lacks);
fail:
    json_decref(steps);
    json_decref(cats);
    json_decref(threads);
    json_decref(streams);
    json_decref(colls);
    json_decref(lacks);
    return NULL;
}

static json_t *graph_str_or_null(const struct model_graph *g, uint32_t id)
{
    const char *v = model_graph_str(g, id);
    return *v ? json_string(v) : json_null();
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The rank numbers of collective group k's members, in its order, or with
 * the ranks folded into them (model/graph.h, model_graph_folding),
 * ascending. */
static json_t *group_ranks_json(const struct model_graph *g, size_t k)
{
    size_t n = 0, first;
    for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1]; m++)
        n += 1 + model_graph_folded_into(g, g->tasks[g->group_tasks[m]].rank, &first);
    int *ids = malloc(n * sizeof *ids);
    json_t *ranks = json_array();
    if (!ids || !ranks) {
        free(ids);
        json_decref(ranks);
        return NULL;
    }
    n = 0;
    for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1]; m++) {
        uint16_t rank = g->tasks[g->group_tasks[m]].rank;
        ids[n++] = g->ranks[rank].id;
        for (size_t q = 0, c = model_graph_folded_into(g, rank, &first); q < c; q++)
            ids[n++] = g->folding.folded[first + q].id;
    }
    if (g->folding.n_folded)
        qsort(ids, n, sizeof *ids, cmp_int);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(ranks, json_integer(ids[i]));
    free(ids);
    return ranks;
}

json_t *api_collectives_json(const struct model_graph *g)
{
    json_t *out = json_array();
    for (size_t k = 0; out && k < g->n_groups; k++) {
        const struct model_coll_group *cg = &g->groups[k];
        if (g->tasks[g->group_tasks[g->group_at[k]]].kept)
            continue; /* kept for untraced peers: no collective across ranks */
        json_t *ranks = group_ranks_json(g, k);
        int64_t transfer = 0;
        for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1]; m++) {
            const struct model_task *t = &g->tasks[g->group_tasks[m]];
            if (t->dur > transfer)
                transfer = t->dur;
        }
        json_t *c = json_pack("{s:s, s:o, s:o, s:o, s:o, s:I, s:o, s:o}", "kind",
                              model_coll_op_name((enum model_coll_op)cg->op), "bytes",
                              cg->bytes < 0 ? json_null() : json_integer(cg->bytes), "dtype",
                              graph_str_or_null(g, cg->dtype), "process_group", graph_str_or_null(g, cg->pg), "seq",
                              cg->seq < 0 ? json_null() : json_integer(cg->seq), "group_size",
                              (json_int_t)cg->size, "ranks", ranks, "transfer_ms", api_json_ms(transfer));
        if (!c || json_array_append_new(out, c)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* The collectives kept on their traced rank (members of theirs were not
 * traced: one rank's trace, or k of a job's N ranks), per rank, kind and
 * the group they take part among (whatif_coll_split_kept_ranks: the trace's
 * group size, else its world size; null when neither says): how many,
 * and their traced time (a transfer and a wait for the untraced peers). */
static json_t *kept_collectives_json(const struct model_graph *g)
{
    struct kept {
        uint16_t rank;
        uint8_t op;
        int64_t ranks;
        size_t n;
        int64_t ns;
    } v[64];
    size_t n = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (!t->kept)
            continue;
        const struct model_trace *tr = whatif_job_structure_trace(g, t->rank);
        int64_t ranks = whatif_coll_split_kept_ranks(g, i, tr ? tr->world_size : -1);
        size_t k = 0;
        while (k < n && !(v[k].rank == t->rank && v[k].op == t->sub && v[k].ranks == ranks))
            k++;
        if (k == n) {
            if (n == sizeof v / sizeof v[0])
                continue; /* more kinds than a summary shows */
            v[n++] = (struct kept){t->rank, (uint8_t)t->sub, ranks, 0, 0};
        }
        v[k].n++;
        v[k].ns += t->dur;
    }
    json_t *out = json_array();
    for (size_t k = 0; out && k < n; k++) {
        json_t *c = json_pack("{s:I, s:s, s:o, s:I, s:o}", "rank", (json_int_t)g->ranks[v[k].rank].id, "kind",
                              model_coll_op_name((enum model_coll_op)v[k].op), "group_size",
                              v[k].ranks > 0 ? json_integer(v[k].ranks) : json_null(), "count", (json_int_t)v[k].n,
                              "traced_ms", api_json_ms(v[k].ns));
        if (!c || json_array_append_new(out, c)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* The host's waits on GPU work that no sync call records (graph.h,
 * model_graph_host_waits): per rank and the work waited on, how many gaps
 * without a call and polling loops. NULL when out of memory. */
static json_t *host_waits_json(const struct model_graph *g)
{
    struct model_host_wait *v;
    size_t n;
    if (model_graph_host_waits(g, &v, &n))
        return NULL;
    json_t *out = json_array();
    for (size_t k = 0; out && k < n; k++) {
        json_t *w = json_pack("{s:I, s:s, s:I, s:I}", "rank", (json_int_t)g->ranks[v[k].rank].id, "on",
                              model_graph_str(g, v[k].name), "without_call", (json_int_t)v[k].without_call,
                              "polling_loops", (json_int_t)v[k].polling_loops);
        if (!w || json_array_append_new(out, w)) {
            json_decref(out);
            out = NULL;
        }
    }
    free(v);
    return out;
}

json_t *api_inspect_job_json(const struct model_job *job, const struct model_graph *g, struct sc_error *err)
{
    json_t *ranks = json_array();
    if (!ranks)
        goto oom;
    for (size_t i = 0; i < job->n_ranks; i++) {
        struct model_inspect *in;
        int rc = model_inspect_trace(job->ranks[i], &in, err);
        if (rc) {
            json_decref(ranks);
            return NULL;
        }
        json_t *r = api_inspect_rank_json(job->ranks[i], in);
        model_inspect_free(in);
        if (!r || json_array_append_new(ranks, r))
            goto oom;
    }
    /* the collectives matched across ranks, as a replay groups them */
    json_t *groups = g ? api_collectives_json(g) : json_null();
    json_t *kept = g ? kept_collectives_json(g) : json_null();
    json_t *waits = g ? host_waits_json(g) : json_null();
    if (!groups || !kept || !waits) {
        json_decref(groups);
        json_decref(kept);
        json_decref(waits);
        goto oom;
    }
    json_t *doc = json_pack("{s:s, s:o, s:o, s:o, s:o}", "stepcast_version", STEPCAST_VERSION, "ranks", ranks,
                            "collective_groups", groups, "kept_collectives", kept, "host_waits", waits);
    if (doc)
        return doc;
oom:
    json_decref(ranks);
    sc_error_set(err, SC_ENOMEM, "out of memory");
    return NULL;
}
