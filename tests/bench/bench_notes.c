/* tests/bench/bench_notes.c: what taking a what-if's notes costs a build.
 *
 *   bench-notes TRACE...
 *
 * Builds the traces' model while they load (est_model_open), both ways in
 * turn, ROUNDS rounds: keeping the traces' headers alone (EST_KEEP_HEADERS,
 * as a replay does) and with the notes a what-if reads of each trace
 * (EST_KEEP_NOTES, as the daemon's built models). Prints the median wall time of each and their ratio,
 * then the notes' bytes against the events they were taken from and the
 * graph's bytes, and the model's (est_model_bytes, what the daemon's cache
 * counts). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "estimator/model_open.h"
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

/* The model of paths[0..n) keeping `keep` of the traces, timed into *dt. */
static struct est_traced_model *open_timed(const char *const *paths, size_t n, enum est_keep keep, double *dt)
{
    struct est_model_options o;
    struct est_traced_model *m = NULL;
    struct sc_error err;
    est_model_options_default(&o);
    o.keep = keep;
    double t0 = now_s();
    if (est_model_open(paths, n, &o, NULL, NULL, &m, &err)) {
        fprintf(stderr, "bench-notes: %s\n", err.msg);
        return NULL;
    }
    *dt = now_s() - t0;
    return m;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-notes TRACE...\n");
        return 2;
    }
    const char *const *paths = (const char *const *)(argv + 1);
    size_t n = (size_t)(argc - 1);
    double without[ROUNDS], with[ROUNDS];
    struct est_traced_model *m = NULL;
    for (int r = 0; r < ROUNDS; r++) {
        struct est_traced_model *bare = open_timed(paths, n, EST_KEEP_HEADERS, &without[r]);
        est_model_close(bare);
        est_model_close(m);
        m = bare ? open_timed(paths, n, EST_KEEP_NOTES, &with[r]) : NULL;
        if (!m)
            return 1;
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
