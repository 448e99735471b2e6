/* tests/bench/bench_load.c: the trace load every command shares, alone.
 *
 *   bench-load TRACE...
 *
 * Loads the traces as one job (model_job_load: read, parse, event tables,
 * steps) and makes each rank's summary (model_inspect_trace), then exits:
 * what `stepcast inspect` did before it also built the job's graph to list
 * the collectives matched across ranks. tests/bench/ingest.py times this
 * process against Python's json.load of the same file. */
#include <stdio.h>

#include "model/inspect.h"
#include "model/job.h"
#include "model/stream.h"
#include "common/banned.h"

int main(int argc, char **argv)
{
    struct model_load_opts lo;
    struct model_job *job = NULL;
    struct sc_error err;
    if (argc < 2) {
        fprintf(stderr, "usage: bench-load TRACE...\n");
        return 2;
    }
    model_load_opts_default(&lo);
    if (model_job_load((const char *const *)(argv + 1), (size_t)(argc - 1), &lo, 0, &job, &err)) {
        fprintf(stderr, "bench-load: %s\n", err.msg);
        return 1;
    }
    size_t events = 0;
    for (size_t i = 0; i < job->n_ranks; i++) {
        struct model_inspect *in;
        if (model_inspect_trace(job->ranks[i], &in, &err)) {
            fprintf(stderr, "bench-load: %s\n", err.msg);
            model_job_free(job);
            return 1;
        }
        events += job->ranks[i]->n_events;
        model_inspect_free(in);
    }
    printf("%zu ranks, %zu events; gzip inflated by %s\n", job->n_ranks, events, model_stream_inflater());
    model_job_free(job);
    return 0;
}
