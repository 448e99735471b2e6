/* estimator/model_open.c: a traced job opened once, its questions asked
 * with its collectives' waits applied (model_open.h). */
#include "estimator/model_open.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/traced.h"
#include "estimator/whatif/whatif.h"
#include "model/ab.h"
#include "model/diff.h"
#include "model/opportunity.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

struct est_traced_model {
    const struct model_job *job; /* its traces shed to headers unless opened with keep_traces */
    struct model_job *own;       /* job when opened here (NULL: borrowed) */
    struct est_traced model; /* its graph and kept collectives' split */
};

void est_model_options_default(struct est_model_options *o)
{
    memset(o, 0, sizeof *o);
    model_load_opts_default(&o->load);
    model_graph_opts_default(&o->graph);
}

int est_model_open(const char *const *paths, size_t n, const struct est_model_options *o,
                   est_model_progress_fn progress, void *progress_ctx, struct est_traced_model **out,
                   struct sc_error *err)
{
    struct est_model_options defaults;
    struct est_traced_model *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (!o) {
        est_model_options_default(&defaults);
        o = &defaults;
    }
    struct model_graph_load gl = {
        .load = &o->load, .ranks = o->ranks, .progress = progress, .progress_ctx = progress_ctx};
    int rc = est_traced_build(paths, n, &gl, &o->graph, o->keep, &m->own, &m->model, err);
    m->job = m->own;
    if (rc) {
        est_model_close(m);
        return rc;
    }
    *out = m;
    return SC_OK;
}

int est_model_of_job(const struct model_job *job, const struct model_graph_opts *go, struct est_traced_model **out,
                     struct sc_error *err)
{
    struct model_graph_opts defaults;
    struct est_traced_model *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (!go) {
        model_graph_opts_default(&defaults);
        go = &defaults;
    }
    m->job = job;
    int rc = est_traced_of_job(job, go, &m->model, err);
    if (rc) {
        est_model_close(m);
        return rc;
    }
    *out = m;
    return SC_OK;
}

int est_model_adopt(struct model_job *job, struct est_traced *t, struct est_traced_model **out,
                    struct sc_error *err)
{
    struct est_traced_model *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) {
        est_traced_release(t);
        model_job_free(job);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    m->job = m->own = job;
    m->model = *t;
    *out = m;
    return SC_OK;
}

void est_model_close(struct est_traced_model *m)
{
    if (!m)
        return;
    est_traced_release(&m->model);
    model_job_free(m->own);
    free(m);
}

const struct model_graph *est_model_graph(const struct est_traced_model *m)
{
    return m->model.graph;
}

const struct model_job *est_model_job(const struct est_traced_model *m)
{
    return m->job;
}

const struct model_coll_waits *est_model_waits(const struct est_traced_model *m)
{
    return &m->model.waits;
}

size_t est_model_bytes(const struct est_traced_model *m)
{
    size_t bytes = model_graph_bytes(m->model.graph) + m->model.waits.n * sizeof *m->model.waits.v +
                   trace_notes_set_bytes(&m->model.notes);
    for (size_t i = 0; i < m->job->n_ranks; i++)
        bytes += model_trace_bytes(m->job->ranks[i]);
    return bytes;
}

int est_model_replay(const struct est_traced_model *m, struct model_replay_opts *ro, struct model_replay **out,
                     struct sc_error *err)
{
    ro->waits = m->model.waits;
    return model_replay_run(m->model.graph, ro, out, err);
}

int est_model_opportunities(const struct est_traced_model *m, struct model_opportunities *out,
                            struct sc_error *err)
{
    return model_opportunities_find(m->model.graph, &m->model.waits, out, err);
}

int est_model_diff(const struct est_traced_model *a, const struct est_traced_model *b, struct model_diff *out,
                   struct sc_error *err)
{
    return model_diff_run(a->model.graph, &a->model.waits, b->model.graph, &b->model.waits, out, err);
}

int est_model_ab(const struct est_traced_model *a, const struct est_traced_model *b, const struct model_ab_opts *o,
                 struct model_ab *out, struct sc_error *err)
{
    struct model_diff d = {0};
    int rc = model_ab_run(a->job, b->job, o, out, err);
    if (rc == SC_OK && (rc = est_model_diff(a, b, &d, err)) == SC_OK)
        rc = model_ab_attribute(out, &d, o->seed, err);
    model_diff_release(&d);
    return rc;
}

int est_model_whatif(const struct est_traced_model *m, const struct job_config *cfg, const struct job_config *set,
                     struct whatif_result *out, struct sc_error *err)
{
    return whatif_run(m->model.graph, est_model_notes(m), cfg, set, out, err);
}

const struct trace_notes_set *est_model_notes(const struct est_traced_model *m)
{
    return m->model.notes.rank ? &m->model.notes : NULL;
}
