/* model/graph_build.c: building the dependency graph from event tables.
 *
 * Per rank: the steps asked for set a window (the first step's start to the
 * last step's end). The runtime calls in it become tasks on their threads,
 * in order, each with the measured host gap before it; step boundaries
 * become marker tasks on the step thread; kernels, copies and sets launched
 * in the window (or running in it with no launch in the trace: work spilled
 * in from before) become tasks on their streams. Then each edge class is
 * found (see graph.h), cutting the waits out of the durations that hid
 * them. Across ranks, the same collective is grouped and the ranks' clocks
 * are aligned on collective completions.
 *
 * Building reads measured times: to order tasks, to tell a wait from work
 * and to pick among candidate dependencies. What a replay reads afterwards
 * is only durations, gaps, latencies and each rank's origin. The tasks,
 * edges, steps and groups found here go into the graph through the public
 * builder (graph_builder.h), each task with its class and source event.
 *
 * Ranks are found apart, each into a part of its own (on all cores), and
 * only then joined: collectives grouped and clocks aligned across ranks.
 * A part takes of its trace what the join needs (names, collective
 * metadata), so model_graph_build_paths can shed each trace as soon as its
 * part is found and a job's events are never all in memory; the join hands
 * each part to the builder and frees it before the next. In a job of many
 * ranks, alike parts are folded as they come (graph.h, MODEL_FOLD_OVER):
 * only their representatives reach the join.
 *
 * This file drives the parts: graph_rank.c (a rank's sequences),
 * graph_edges.c (its edges), graph_fold.c and graph_join.c, which share
 * graph_build_internal.h. */
#include "model/graph.h"
#include "model/graph_build_internal.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/hugepage.h"
#include "common/banned.h"

/* One rank's tasks, edges and steps from its trace (rank_keep's notes
 * included), into a new builder. */
static int rank_part(const struct model_trace *t, const struct model_graph_opts *o, struct builder **out,
                     struct sc_error *err)
{
    struct builder *b = calloc(1, sizeof *b);
    struct rank_build *r;
    int rc;

    *out = NULL;
    if (!b)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    b->err = err;
    b->o = *o;
    r = &b->r;
    r->t = t;
    r->outer = malloc((t->n_events ? t->n_events : 1) * sizeof *r->outer);
    r->task_of = malloc((t->n_events ? t->n_events : 1) * sizeof *r->task_of);
    if (!r->outer || !r->task_of) {
        rc = OOM(b);
        goto out;
    }
    memset(r->outer, 0xff, t->n_events * sizeof *r->outer);
    memset(r->task_of, 0xff, t->n_events * sizeof *r->task_of);
    if ((rc = CALLED_OFF(err)) || (rc = gb_rank_window(b, r)) || (rc = gb_rank_threads(b, r)) ||
        (rc = gb_rank_streams(b, r)))
        goto out;
    size_t n = b->n_tasks ? b->n_tasks : 1;
    b->wait_done = calloc(n, sizeof *b->wait_done);
    b->next_gpu = malloc(n * sizeof *b->next_gpu);
    b->cur_gpu = malloc(n * sizeof *b->cur_gpu);
    b->last_rec = malloc(n * sizeof *b->last_rec);
    b->stream_ix = malloc((b->n_res ? b->n_res : 1) * sizeof *b->stream_ix);
    if (!b->wait_done || !b->next_gpu || !b->cur_gpu || !b->last_rec || !b->stream_ix) {
        rc = OOM(b);
        goto out;
    }
    memset(b->stream_ix, 0xff, b->n_res * sizeof *b->stream_ix);
    if ((rc = CALLED_OFF(err)) || (rc = gb_thread_scans(b, r)) || (rc = gb_api_medians(b, r, &r->med)) ||
        (rc = gb_calibrate_latencies(b, r)) || (rc = gb_launch_edges(b, r)) || (rc = gb_cuda_sync_edges(b, r)))
        goto out;
    /* the host's waits inspect reads come of none of these: the edges
     * between GPU work, and launches blocked by a full queue */
    if (!o->inspect_only && ((rc = gb_inferred_event_edges(b, r)) || (rc = CALLED_OFF(err)) ||
                             (rc = gb_launch_queue_edges(b, r, &b->queue_depth)) || (rc = gb_gpu_wait_edges(b, r))))
        goto out;
    if ((rc = gb_host_sync_edges(b, r)) || (rc = gb_host_poll_edges(b, r)) || (rc = CALLED_OFF(err)))
        goto out;
    if (!o->inspect_only && ((rc = gb_inter_thread_edges(b, r)) || (rc = gb_step_end_edges(b, r)) ||
                             (rc = gb_unexplained_waits(b))))
        goto out;
    if ((rc = gb_rank_keep(b)))
        goto out;
    gb_rank_profile(b);
out:
    gb_rank_trim(b);
    b->err = NULL;
    if (rc) {
        gb_rank_free(b);
        return rc;
    }
    *out = b;
    return SC_OK;
}

/* ---- building -------------------------------------------------------------------------- */

/* A trace and the rank number the job gave it. */
struct ranked {
    const struct model_trace *t;
    int id;
};

static int by_trace(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct ranked *)a)->t, y = (uintptr_t)((const struct ranked *)b)->t;
    return (x > y) - (x < y);
}

static int by_folded_id(const void *a, const void *b)
{
    int x = ((const struct folded *)a)->id, y = ((const struct folded *)b)->id;
    return (x > y) - (x < y);
}

/* The join's parts: the folder's, in the job's rank order, each with the
 * rank numbers of those folded into it. The folder gives its parts over. */
static int assemble(struct join *j, struct folder *f, const struct model_job *job, struct sc_error *err)
{
    struct ranked *by_t = malloc((job->n_ranks ? job->n_ranks : 1) * sizeof *by_t);
    size_t folded = 0;
    int rc = SC_OK;

    j->total = job->n_ranks;
    j->folded = gb_folder_on(f);
    j->parts = calloc(f->n ? f->n : 1, sizeof *j->parts);
    j->traces = malloc((f->n ? f->n : 1) * sizeof *j->traces);
    j->rank_ids = malloc((f->n ? f->n : 1) * sizeof *j->rank_ids);
    if (!by_t || !j->parts || !j->traces || !j->rank_ids) {
        free(by_t);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < job->n_ranks; i++)
        by_t[i] = (struct ranked){job->ranks[i], (int)i}; /* the job's index, for now */
    sc_sort(by_t, job->n_ranks, sizeof *by_t, by_trace);
    /* each part at its trace's index in the job; the others folded */
    struct builder **at = calloc(job->n_ranks ? job->n_ranks : 1, sizeof *at);
    if (!at) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < f->n; k++) {
        struct builder *p = f->v[k];
        struct ranked key = {p->r.t, 0}, *hit = bsearch(&key, by_t, job->n_ranks, sizeof *by_t, by_trace);
        if (!hit || at[hit->id]) {
            rc = sc_error_set(err, SC_EINTERNAL, "'%s' was built but is not in the job", p->r.t->source);
            goto out;
        }
        at[hit->id] = p;
        for (size_t q = 0; q < p->n_folded; q++) {
            struct ranked fk = {p->folded[q].t, 0}, *fh = bsearch(&fk, by_t, job->n_ranks, sizeof *by_t, by_trace);
            if (!fh) {
                rc = sc_error_set(err, SC_EINTERNAL, "'%s' was folded but is not in the job", fk.t->source);
                goto out;
            }
            p->folded[q].id = job->rank_ids[fh->id];
        }
        sc_sort(p->folded, p->n_folded, sizeof *p->folded, by_folded_id);
        folded += p->n_folded;
    }
    if (f->n + folded != job->n_ranks) {
        rc = sc_error_set(err, SC_EINTERNAL, "%zu traces were loaded but %zu built", job->n_ranks, f->n + folded);
        goto out;
    }
    for (size_t i = 0; i < job->n_ranks; i++) {
        if (!at[i])
            continue;
        j->parts[j->n] = at[i];
        j->traces[j->n] = job->ranks[i];
        j->rank_ids[j->n++] = job->rank_ids[i];
    }
    assert(j->n == f->n); /* each part placed once, in the job's order */
    free(f->v); /* the parts are the join's now */
    f->v = NULL;
    f->n = f->cap = 0;
out:
    free(by_t);
    free(at);
    return rc;
}

struct job_parts {
    const struct model_job *job;
    const struct model_graph_opts *o;
    struct builder **parts;
};

static int part_of_rank(void *ctx, size_t i, struct sc_error *err)
{
    struct job_parts *jp = ctx;
    return rank_part(jp->job->ranks[i], jp->o, &jp->parts[i], err);
}

int model_graph_build(const struct model_job *job, const struct model_graph_opts *opts,
                      struct model_graph **out, struct sc_error *err)
{
    struct model_graph_opts o;
    struct join j = {.err = err};
    struct folder f = {0};
    struct builder **parts = NULL;
    int rc;

    *out = NULL;
    if (opts)
        o = *opts;
    else
        model_graph_opts_default(&o);
    if (!job->n_ranks)
        return sc_error_set(err, SC_EINVAL, "no trace to build a graph from");
    if (!(parts = calloc(job->n_ranks, sizeof *parts)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    struct job_parts jp = {job, &o, parts};
    f.over = o.fold_over;
    f.reps_max = o.fold_reps_max;
    rc = sc_parallel_for(job->n_ranks, 0, part_of_rank, &jp, err);
    for (size_t i = 0; i < job->n_ranks; i++) { /* in rank order */
        int kept;
        if (rc == SC_OK)
            rc = gb_folder_add(&f, parts[i], &kept, err);
        else
            gb_rank_free(parts[i]);
    }
    free(parts);
    if (rc == SC_OK && (rc = assemble(&j, &f, job, err)) == SC_OK)
        rc = gb_join(&j, job, out);
    gb_folder_release(&f);
    gb_join_release(&j);
    return rc;
}

/* ---- building while loading ------------------------------------------------------------- */

struct streamed {
    const struct model_graph_opts *o;
    const struct model_graph_load *l;
    pthread_mutex_t mu;
    struct folder fold;
    size_t n;
};

/* model_job_each: a trace just loaded -> its part; the trace keeps only
 * its header. The trace of a part kept is handed whole to l->kept first
 * (l->dropped, under the lock, when it is folded later on): p may be
 * folded or freed by another thread once the lock is let go, but folding
 * reads only a part's own tables and its trace's header (strings, tracks,
 * steps, source), never the events read or shed here. */
static int part_of_loaded(void *ctx, struct model_trace *t, struct sc_error *err)
{
    struct streamed *s = ctx;
    struct builder *p;
    int kept;
    int rc = rank_part(t, s->o, &p, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->mu);
    rc = gb_folder_add(&s->fold, p, &kept, err);
    size_t done = ++s->n;
    pthread_mutex_unlock(&s->mu);
    if (rc == SC_OK && kept && s->l->kept)
        rc = s->l->kept(s->l->kept_ctx, t, err);
    model_trace_shed(t);
    if (rc == SC_OK && s->l->progress)
        s->l->progress(s->l->progress_ctx, done);
    return rc;
}

int model_graph_build_paths(const char *const *paths, size_t n, const struct model_graph_load *l,
                            const struct model_graph_opts *opts, struct model_job **job_out,
                            struct model_graph **out, struct sc_error *err)
{
    static const struct model_graph_load none;
    struct model_graph_opts o;
    struct model_load_opts lo;
    struct model_job *job = NULL;
    struct streamed s = {.o = &o, .l = l ? l : &none};
    struct join j = {.err = err};
    int rc;

    *out = NULL;
    *job_out = NULL;
    if (opts)
        o = *opts;
    else
        model_graph_opts_default(&o);
    if (s.l->load)
        lo = *s.l->load;
    else
        model_load_opts_default(&lo);
    s.fold.over = o.fold_over;
    s.fold.reps_max = o.fold_reps_max;
    s.fold.dropped = s.l->dropped;
    s.fold.dropped_ctx = s.l->kept_ctx;
    pthread_mutex_init(&s.mu, NULL);
    struct model_job_each each = {part_of_loaded, &s};
    rc = model_job_load_each(paths, n, s.l->ranks, &lo, s.l->threads, &each, &job, err);
    if (rc == SC_OK)
        rc = assemble(&j, &s.fold, job, err);
    gb_folder_release(&s.fold); /* the parts not taken (a failed load) */
    pthread_mutex_destroy(&s.mu);
    sc_heap_trim(); /* the traces' tables, freed by the loading threads */
    if (rc == SC_OK)
        rc = gb_join(&j, job, out);
    gb_join_release(&j);
    if (rc) {
        model_job_free(job);
        return rc;
    }
    *job_out = job;
    return SC_OK;
}
