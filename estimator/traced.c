/* estimator/traced.c: a traced job's graph and its kept collectives'
 * split, built once (traced.h). */
#include "estimator/traced.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/interchange/chakra_import.h"
#include "estimator/whatif/coll_split.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

/* The split of out->graph's kept collectives, and its notes when its
 * traces are whole (notes_whole); out released on failure. */
static int split(struct est_traced *out, int notes_whole, int rc, struct sc_error *err)
{
    struct model_coll_wait *v = NULL;
    if (rc == SC_OK && (rc = whatif_coll_split_waits(out->graph, &v, &out->waits.n, err)) == SC_OK)
        out->waits.v = v;
    if (rc == SC_OK && notes_whole)
        rc = trace_notes_of_graph(out->graph, &out->notes, err);
    if (rc)
        est_traced_release(out);
    return rc;
}

int est_traced_build(const char *const *paths, size_t n, const struct model_graph_load *l,
                     const struct model_graph_opts *go, int keep_traces, struct model_job **job,
                     struct est_traced *out, struct sc_error *err)
{
    static const struct model_graph_load none;
    struct model_load_opts lo;
    int et, rc;
    memset(out, 0, sizeof *out);
    *job = NULL;
    if (!l)
        l = &none;
    if (l->load)
        lo = *l->load;
    else
        model_load_opts_default(&lo);
    if ((rc = chakra_is_et(paths, n, &et, err)))
        return rc;
    if (et)
        rc = chakra_import(paths, n, &lo.limits, l->ranks, job, &out->graph, err);
    else if (!keep_traces)
        rc = model_graph_build_paths(paths, n, l, go, job, &out->graph, err);
    else if ((rc = model_job_load_each(paths, n, l->ranks, &lo, l->threads, NULL, job, err)) == SC_OK)
        rc = model_graph_build(*job, go, &out->graph, err);
    return split(out, keep_traces, rc, err);
}

int est_traced_of_job(const struct model_job *job, const struct model_graph_opts *go, struct est_traced *out,
                      struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    return split(out, 1, model_graph_build(job, go, &out->graph, err), err);
}

void est_traced_release(struct est_traced *t)
{
    model_graph_free(t->graph);
    free((void *)t->waits.v);
    trace_notes_set_release(&t->notes);
    memset(t, 0, sizeof *t);
}
