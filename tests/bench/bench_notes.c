/* tests/bench/bench_notes.c: what taking a what-if's notes costs a build.
 *
 *   bench-notes TRACE...
 *
 * Builds the traces' model while they load, as the daemon does, both ways
 * in turn, ROUNDS rounds: the graph and its collectives' split alone
 * (model_graph_build_paths, then whatif_coll_split_waits: the build before
 * the notes) and the model with the notes a what-if reads of each trace
 * (est_model_open). Prints the median wall time of each and their ratio,
 * then the notes' bytes against the events they were taken from and the
 * graph's bytes, and the model's (est_model_bytes, what the daemon's cache
 * counts). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "estimator/model_open.h"
#include "estimator/whatif/coll_split.h"
#include "estimator/whatif/trace_notes.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

#define ROUNDS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}

/* The build before the notes: the graph while loading, and its split. */
static int build_without(const char *const *paths, size_t n, struct sc_error *err)
{
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_coll_wait *w = NULL;
    size_t nw = 0;
    int rc = model_graph_build_paths(paths, n, NULL, NULL, &job, &g, err);
    if (rc == SC_OK)
        rc = whatif_coll_split_waits(g, &w, &nw, err);
    free(w);
    model_graph_free(g);
    model_job_free(job);
    return rc;
}

int main(int argc, char **argv)
{
    struct sc_error err;
    if (argc < 2) {
        fprintf(stderr, "usage: bench-notes TRACE...\n");
        return 2;
    }
    const char *const *paths = (const char *const *)(argv + 1);
    size_t n = (size_t)(argc - 1);
    double without[ROUNDS], with[ROUNDS];
    struct est_traced_model *m = NULL;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        if (build_without(paths, n, &err)) {
            fprintf(stderr, "bench-notes: %s\n", err.msg);
            return 1;
        }
        double t1 = now_s();
        est_model_close(m);
        m = NULL;
        if (est_model_open(paths, n, NULL, NULL, NULL, &m, &err)) {
            fprintf(stderr, "bench-notes: %s\n", err.msg);
            return 1;
        }
        without[r] = t1 - t0;
        with[r] = now_s() - t1;
    }
    const struct model_graph *g = est_model_graph(m);
    const struct trace_notes_set *s = est_model_notes(m);
    uint64_t events = 0;
    size_t calls = 0, colls = 0, gemms = 0, ops = 0;
    for (size_t r = 0; r < s->n_ranks; r++) {
        events += model_graph_trace(g, (uint16_t)r)->n_complete;
        calls += s->rank[r].n_calls;
        colls += s->rank[r].n_colls;
        gemms += s->rank[r].n_gemms;
        ops += s->rank[r].n_op_keys;
    }
    double a = median(without, ROUNDS), b = median(with, ROUNDS);
    size_t nb = trace_notes_set_bytes(s), gb = model_graph_bytes(g), mb = est_model_bytes(m);
    printf("  build, median of %d: %.1f ms without the notes, %.1f ms with them (x%.3f)\n", ROUNDS, a * 1e3,
           b * 1e3, b / a);
    printf("  notes of %zu ranks (%llu events): %zu calls, %zu collectives, %zu GEMMs, %zu operators; %.2f MiB, "
           "%.1f bytes an event\n",
           s->n_ranks, (unsigned long long)events, calls, colls, gemms, ops, (double)nb / 1048576.0,
           (double)nb / (double)(events ? events : 1));
    printf("  graph %.2f MiB (notes %.1f%% of it), model %.2f MiB (notes %.1f%% of it)\n", (double)gb / 1048576.0,
           100.0 * (double)nb / (double)gb, (double)mb / 1048576.0, 100.0 * (double)nb / (double)mb);
    est_model_close(m);
    return 0;
}
