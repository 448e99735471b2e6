/* model/job.h: the traces of one training job, one per rank.
 *
 * A job is given as several files (one per rank), a directory of them, or a
 * tar archive (.tar, .tar.gz, .tar.xz, ...) of them; each trace may be
 * plain or gzip'd.
 * A rank comes from the trace's distributedInfo.rank, else from its position
 * in the order the files were given (directory and archive entries in name
 * order). Two traces claiming one rank is an error. Files load in parallel, on
 * all cores; an archive is one stream, read a member after another, and its
 * members are parsed in batches (up to 128 MiB of them as stored) on all
 * cores, a larger member alone as it is read. */
#ifndef MODEL_JOB_H
#define MODEL_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/trace.h"

struct model_job {
    struct model_trace **ranks; /* sorted by rank; owned */
    int *rank_ids;              /* the rank of ranks[i] */
    size_t n_ranks;
};

/* Load every trace named by paths[0..n). `threads` bounds the parallel
 * loads (0: one per online CPU). */
int model_job_load(const char *const *paths, size_t n, const struct model_load_opts *opts,
                   unsigned threads, struct model_job **out, struct sc_error *err);

/* What model_job_load_each does with each trace as soon as it is loaded:
 * fn(ctx, trace, err), in the thread that loaded it (several run at once),
 * before the job ranks the traces. fn may shed the trace's event tables
 * (model_trace_shed) once it has taken what it needs; a failure stops the
 * load with fn's error. */
struct model_job_each {
    int (*fn)(void *ctx, struct model_trace *t, struct sc_error *err);
    void *ctx;
};

/* model_job_load, handing each trace to `each` (NULL: none) as it is
 * loaded. `ranks`, when not NULL, says that every path is a plain trace
 * file and ranks[i] (when >= 0) is the rank of paths[i], whatever its
 * trace says. */
int model_job_load_each(const char *const *paths, size_t n, const int64_t *ranks,
                        const struct model_load_opts *opts, unsigned threads,
                        const struct model_job_each *each, struct model_job **out, struct sc_error *err);

/* A job of already loaded traces (taken over, also on failure), ranked as
 * above. */
int model_job_from_traces(struct model_trace **traces, size_t n, struct model_job **out,
                          struct sc_error *err);

void model_job_free(struct model_job *j); /* NULL-safe */

/* ---- what TRACE... names (shared with the command line's upload) ---- */

struct model_paths {
    char **v; /* each from malloc */
    size_t n, cap;
};
void model_paths_release(struct model_paths *l);

/* Append a directory's regular, non-hidden files, in name order;
 * SC_ENOTFOUND when it holds none. */
int model_job_dir_files(const char *dir, struct model_paths *out, struct sc_error *err);
/* fn(ctx, name, label, in, err) for each non-hidden regular file of a tar
 * archive, compressed or not (model/archive.h), in archive order (a job
 * ranks them in name order): name as stored, label "ARCHIVE:name" for
 * messages, in its bytes until fn returns. The first failure stops the
 * walk; SC_ENOTFOUND when the archive holds no file, SC_ELIMIT when it
 * holds more than MODEL_MAX_RANKS. */
struct model_stream;
typedef int (*model_member_fn)(void *ctx, const char *name, const char *label,
                               struct model_stream *in, struct sc_error *err);
int model_job_each_member(const char *path, model_member_fn fn, void *ctx, struct sc_error *err);

/* Most ranks a job may have. */
#define MODEL_MAX_RANKS 65536u

#endif
