/* estimator/traced.c: a traced job's graph, its kept collectives' split
 * and its traces' notes, built once (traced.h). */
#include "estimator/traced.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/interchange/chakra_import.h"
#include "estimator/whatif/coll_split.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

/* The notes of the traces a streamed build keeps a part of
 * (model_graph_load.kept), taken by the loading threads while each trace
 * is whole, and dropped as soon as the part is folded into another's
 * (.dropped), so that a folded job holds the notes of its representatives
 * only. A drop may come before the notes it drops: it is remembered. */
struct kept_notes {
    pthread_mutex_t mu;
    struct noted {
        const struct model_trace *t;
        struct trace_notes notes;
        int dropped; /* notes empty, and to be released on arrival */
    } *v;
    size_t n, cap;
};

/* The entry of t in k, added when there is none; NULL: out of memory.
 * Under k->mu. */
static struct noted *noted_of(struct kept_notes *k, const struct model_trace *t)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->v[i].t == t)
            return &k->v[i];
    if (sc_vec_reserve((void **)&k->v, &k->cap, k->n + 1, sizeof *k->v))
        return NULL;
    k->v[k->n] = (struct noted){.t = t};
    return &k->v[k->n++];
}

static int note_kept(void *ctx, const struct model_trace *t, struct sc_error *err)
{
    struct kept_notes *k = ctx;
    struct trace_notes notes;
    int rc = trace_notes_of_trace(t, &notes, err);
    if (rc)
        return rc;
    int taken = 0;
    pthread_mutex_lock(&k->mu);
    struct noted *e = noted_of(k, t);
    if (!e)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    else if (!e->dropped) {
        e->notes = notes;
        taken = 1;
    }
    pthread_mutex_unlock(&k->mu);
    if (!taken)
        trace_notes_release(&notes);
    return rc;
}

static void note_dropped(void *ctx, const struct model_trace *t)
{
    struct kept_notes *k = ctx;
    pthread_mutex_lock(&k->mu);
    struct noted *e = noted_of(k, t);
    if (e) { /* else out of memory: its notes stay until the build ends */
        trace_notes_release(&e->notes);
        e->dropped = 1;
    }
    pthread_mutex_unlock(&k->mu);
}

/* The notes of g's ranks into *out, taken over from k. */
static int kept_notes_take(struct kept_notes *k, const struct model_graph *g, struct trace_notes_set *out,
                           struct sc_error *err)
{
    int rc = SC_OK;
    if (!(out->rank = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *out->rank)))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    else
        out->n_ranks = g->n_ranks;
    for (size_t r = 0; r < out->n_ranks && rc == SC_OK; r++) {
        const struct model_trace *t = model_graph_trace(g, (uint16_t)r);
        size_t i = 0;
        while (i < k->n && k->v[i].t != t)
            i++;
        if (i == k->n || k->v[i].dropped) {
            rc = sc_error_set(err, SC_EINTERNAL, "rank %zu of the graph has no notes", r);
            break;
        }
        out->rank[r] = k->v[i].notes;
        k->v[i] = k->v[--k->n];
    }
    return rc;
}

/* Release the notes k still holds (a failed build's). */
static void kept_notes_release(struct kept_notes *k)
{
    for (size_t i = 0; i < k->n; i++)
        trace_notes_release(&k->v[i].notes);
    free(k->v);
    pthread_mutex_destroy(&k->mu);
}

/* Empty notes, one per rank of g (a Chakra job: no trace events). */
static int no_notes(const struct model_graph *g, struct trace_notes_set *out, struct sc_error *err)
{
    if (!(out->rank = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *out->rank)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    out->n_ranks = g->n_ranks;
    return SC_OK;
}

/* The split of out->graph's kept collectives; out released on failure. */
static int split(struct est_traced *out, int rc, struct sc_error *err)
{
    struct model_coll_wait *v = NULL;
    if (rc == SC_OK && (rc = whatif_coll_split_waits(out->graph, &v, &out->waits.n, err)) == SC_OK)
        out->waits.v = v;
    if (rc)
        est_traced_release(out);
    return rc;
}

int est_traced_build(const char *const *paths, size_t n, const struct model_graph_load *l,
                     const struct model_graph_opts *go, enum est_keep keep, struct model_job **job,
                     struct est_traced *out, struct sc_error *err)
{
    static const struct model_graph_load none;
    struct model_load_opts lo;
    struct model_graph_load gl;
    struct kept_notes kept = {.mu = PTHREAD_MUTEX_INITIALIZER};
    int et, rc;
    memset(out, 0, sizeof *out);
    *job = NULL;
    if (!l)
        l = &none;
    if (l->load)
        lo = *l->load;
    else
        model_load_opts_default(&lo);
    /* the graph reads neither operators' inputs nor flows: with the traces
     * shed to their headers, nothing else will (a what-if's notes re-time
     * GEMMs by the inputs) */
    lo.lean = keep == EST_KEEP_HEADERS;
    gl = *l;
    gl.load = &lo;
    if ((rc = chakra_is_et(paths, n, &et, err)))
        return rc;
    if (et) {
        if ((rc = chakra_import(paths, n, &lo.limits, l->ranks, job, &out->graph, err)) == SC_OK &&
            keep == EST_KEEP_NOTES)
            rc = no_notes(out->graph, &out->notes, err);
    } else if (keep == EST_KEEP_WHOLE) {
        if ((rc = model_job_load_each(paths, n, l->ranks, &lo, l->threads, NULL, job, err)) == SC_OK)
            rc = model_graph_build(*job, go, &out->graph, err);
    } else if (keep == EST_KEEP_HEADERS) {
        rc = model_graph_build_paths(paths, n, &gl, go, job, &out->graph, err);
    } else {
        gl.kept = note_kept;
        gl.dropped = note_dropped;
        gl.kept_ctx = &kept;
        if ((rc = model_graph_build_paths(paths, n, &gl, go, job, &out->graph, err)) == SC_OK)
            rc = kept_notes_take(&kept, out->graph, &out->notes, err);
    }
    kept_notes_release(&kept);
    return split(out, rc, err);
}

int est_traced_of_job(const struct model_job *job, const struct model_graph_opts *go, struct est_traced *out,
                      struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    return split(out, model_graph_build(job, go, &out->graph, err), err);
}

void est_traced_release(struct est_traced *t)
{
    model_graph_free(t->graph);
    free((void *)t->waits.v);
    trace_notes_set_release(&t->notes);
    memset(t, 0, sizeof *t);
}
