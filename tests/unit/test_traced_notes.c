/* tests/unit/test_traced_notes.c: the notes a what-if reads of a traced
 * job's traces (estimator/whatif/trace_notes.h), taken once when the model
 * is built (estimator/traced.h).
 *
 * A model built while loading takes each kept rank's notes before its
 * trace is shed: they must equal the notes of the same ranks' traces
 * loaded whole, unfolded and folded (a folded job's only for its
 * representatives), and the model's bytes count them. A Chakra job has
 * no trace events: empty notes, one per rank. */
#include <stdio.h>
#include <string.h>

#include "estimator/model_open.h"
#include "estimator/whatif/trace_notes.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define RANKS 24

static const char *const GEN_ARGS[] = {"--steps", "3", "--layers", "6", "--modules", "--slow-rank", "5",
                                       "--slow-factor", "1.5", NULL};

/* Whether two notes are the same, field for field (never their padding). */
static int same_call(const struct trace_call_note *a, const struct trace_call_note *b)
{
    return a->event == b->event && a->track == b->track && a->at == b->at && a->layer == b->layer &&
           a->backward == b->backward && a->hook == b->hook;
}

static int same_coll(const struct trace_coll_note *a, const struct trace_coll_note *b)
{
    return a->event == b->event && a->group_size == b->group_size && a->dtype_bytes == b->dtype_bytes &&
           a->in_nelems == b->in_nelems && a->out_nelems == b->out_nelems;
}

static int same_gemm(const struct trace_gemm_note *a, const struct trace_gemm_note *b)
{
    return a->event == b->event && a->shape.m == b->shape.m && a->shape.n == b->shape.n &&
           a->shape.k == b->shape.k && a->shape.batch == b->shape.batch && a->shape.dtype == b->shape.dtype;
}

/* What differs between two ranks' notes, or NULL. */
static const char *notes_differ(const struct trace_notes *a, const struct trace_notes *b)
{
    if (a->n_calls != b->n_calls || a->n_colls != b->n_colls || a->n_gemms != b->n_gemms ||
        a->n_op_keys != b->n_op_keys)
        return "counts";
    for (size_t i = 0; i < a->n_calls; i++)
        if (!same_call(&a->calls[i], &b->calls[i]))
            return "calls";
    for (size_t i = 0; i < a->n_colls; i++)
        if (!same_coll(&a->colls[i], &b->colls[i]))
            return "collectives";
    for (size_t i = 0; i < a->n_gemms; i++)
        if (!same_gemm(&a->gemms[i], &b->gemms[i]))
            return "GEMMs";
    if (a->n_op_keys && memcmp(a->op_keys, b->op_keys, a->n_op_keys * sizeof *a->op_keys))
        return "operators";
    if (a->ops_busy_ns != b->ops_busy_ns || a->module_layers != b->module_layers ||
        a->unit_layers != b->unit_layers || a->has_autograd != b->has_autograd || a->has_hooks != b->has_hooks ||
        a->inductor_kernels != b->inductor_kernels || a->compiled_regions != b->compiled_regions)
        return "scalars";
    return NULL;
}

/* Built while loading (fold_over as given), then from the job loaded
 * whole: the same ranks, the same notes for each. */
static void check_notes(const char *const *paths, const struct model_job *whole, size_t fold_over)
{
    struct est_model_options mo;
    struct est_traced_model *streamed = NULL, *loaded = NULL;
    struct sc_error err;
    struct trace_notes_set whole_notes = {0};
    est_model_options_default(&mo);
    mo.graph.fold_over = fold_over;
    mo.keep = EST_KEEP_NOTES;
    if (est_model_open(paths, RANKS, &mo, NULL, NULL, &streamed, &err) ||
        est_model_of_job(whole, &mo.graph, &loaded, &err) ||
        trace_notes_of_graph(est_model_graph(loaded), &whole_notes, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(streamed && loaded);
    CHECK(est_model_notes(loaded) == NULL); /* a loaded job's what-ifs take them from its traces */
    const struct model_graph *gs = est_model_graph(streamed), *gl = est_model_graph(loaded);
    const struct trace_notes_set *ns = est_model_notes(streamed), *nl = &whole_notes;
    REQUIRE(ns);
    CHECK_EQ_INT(ns->n_ranks, gs->n_ranks);
    CHECK_EQ_INT(nl->n_ranks, gl->n_ranks);
    REQUIRE(gs->n_ranks == gl->n_ranks && ns->n_ranks == nl->n_ranks);
    CHECK(fold_over < RANKS ? gs->n_ranks < RANKS : gs->n_ranks == RANKS);
    size_t events = 0, noted = 0;
    for (size_t r = 0; r < gs->n_ranks; r++) {
        CHECK_EQ_INT(gs->ranks[r].id, gl->ranks[r].id);
        const char *what = notes_differ(&ns->rank[r], &nl->rank[r]);
        if (what)
            sc_check_fail(__FILE__, __LINE__, "rank %d: the notes taken while loading differ in %s", gs->ranks[r].id,
                          what);
        events += model_graph_trace(gl, (uint16_t)r)->n_events;
        noted += ns->rank[r].n_calls;
    }
    CHECK(noted > 0);
    size_t bytes = trace_notes_set_bytes(ns);
    CHECK(bytes > 0 && est_model_bytes(streamed) >= model_graph_bytes(gs) + bytes);
    printf("  %s %zu: %zu ranks, notes %zu bytes (%.1f a traced event), graph %zu bytes\n",
           fold_over < RANKS ? "folded past" : "unfolded, ranks", fold_over < RANKS ? fold_over : (size_t)RANKS,
           gs->n_ranks, bytes, (double)bytes / (double)(events ? events : 1), model_graph_bytes(gs));
    trace_notes_set_release(&whole_notes);
    est_model_close(streamed);
    est_model_close(loaded);
}

TEST(traced_notes_taken_while_loading_equal_those_of_whole_traces)
{
    char paths[RANKS][TH_PATH_MAX];
    const char *pv[RANKS];
    struct model_load_opts lo;
    struct model_job *whole = NULL;
    struct sc_error err;
    th_gentrace_paths(RANKS, GEN_ARGS, paths, pv);
    model_load_opts_default(&lo);
    REQUIRE(model_job_load(pv, RANKS, &lo, 0, &whole, &err) == SC_OK);
    check_notes(pv, whole, SIZE_MAX); /* unfolded */
    check_notes(pv, whole, 0);        /* folded as they come */
    check_notes(pv, whole, 8);        /* folded past 8 ranks */
    model_job_free(whole);
}

TEST(traced_notes_of_a_chakra_job_are_empty)
{
    const char *path = "tests/fuzz/corpus/chakra/gentrace-rank0.et";
    struct est_model_options mo;
    struct est_traced_model *m = NULL;
    struct sc_error err;
    est_model_options_default(&mo);
    mo.keep = EST_KEEP_NOTES;
    if (est_model_open(&path, 1, &mo, NULL, NULL, &m, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(m);
    const struct trace_notes_set *n = est_model_notes(m);
    REQUIRE(n);
    static const struct trace_notes none;
    CHECK_EQ_INT(n->n_ranks, est_model_graph(m)->n_ranks);
    for (size_t r = 0; r < n->n_ranks; r++)
        CHECK(memcmp(&n->rank[r], &none, sizeof none) == 0);
    est_model_close(m);
}
