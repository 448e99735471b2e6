/* daemon/built.h: a built model in memory: the opened model and its memo.
 *
 * built_model_build() is the whole build: it opens the traces a model was
 * made from (blobs, by rank, on all cores) through the estimator's façade
 * (estimator/model_open.h), which builds the dependency graph, keeps of
 * each trace only its header and the notes a what-if reads of it, and
 * splits its kept collectives' waits for the replays that queries run on
 * it. Builders call it for new models and the cache calls it to bring
 * back a ready model after a restart or an eviction, so both give the
 * same model. A built model is immutable but for its memo: the rendered
 * answers to queries, kept (bounded) since the same replay of the same
 * model is asked for again and again. Handlers (h_models.c) parse
 * queries, ask them of the opened model and render the answers; this
 * file knows none of that. */
#ifndef DAEMON_BUILT_H
#define DAEMON_BUILT_H

#include <stddef.h>
#include <stdint.h>

#include "api/reply.h"
#include "api/resources.h"
#include "common/error.h"

struct blob_store;
struct model_graph;
struct model_graph_opts;
struct model_job;
struct model_load_opts;

struct built_model;

typedef void (*built_progress_fn)(void *ctx, double fraction);

/* Build model `id` from traces[0..n) (rank and sha256 used) with the load
 * and graph options. progress, when non-NULL, is told the fraction done as
 * ranks are built (from the loading threads, never going back). SC_ENOTFOUND
 * when there is no trace (the job deleted while the build waited). */
int built_model_build(const char *id, const struct api_trace *traces, size_t n,
                      struct blob_store *bs, const struct model_load_opts *opts,
                      const struct model_graph_opts *graph_opts, built_progress_fn progress,
                      void *progress_ctx, struct built_model **out, struct sc_error *err);
void built_model_free(struct built_model *m); /* NULL-safe */

/* A built model of parts already made (built_model_build's, or those read
 * from its blob: model_blob.h): traces[0..n) it was made from and the
 * opened model (estimator/model_open.h), taken over (also on failure). */
struct est_traced_model;
int built_model_assemble(const char *id, const struct api_trace *traces, size_t n,
                         const struct model_load_opts *opts, struct est_traced_model *model,
                         struct built_model **out, struct sc_error *err);
/* The traces it was made from, *n of them. */
const struct api_trace *built_model_traces(const struct built_model *m, size_t *n);

/* Load one trace of a model from its blob; an error names the blob by its
 * hash (not the server's path) after "rank N: ". */
struct model_trace;
int built_load_trace(struct blob_store *bs, const struct api_trace *tr, const struct model_load_opts *opts,
                     struct model_trace **out, struct sc_error *err);

/* The peak memory a build of traces[0..n) with graph options go is
 * estimated to take: BUILT_BYTES_FIXED, plus BUILT_BYTES_PER_EVENT for each
 * event the graph holds (what the graph, the notes a what-if reads of the
 * traces, and a replay hold of it), plus
 * BUILT_BYTES_PER_LOADING_EVENT for each event of the traces that may be in
 * memory whole at once (the largest, one per loading thread: each trace
 * is shed once its rank is built). Measured as the daemon's peak RSS
 * during a build less before it (docs/service.md "Build memory",
 * BENCHMARKS.md "Scale"): 61 to 73 bytes per event, loading included, on
 * gentrace jobs of 64 ranks (3.3 million events) and 16 ranks (0.2
 * million), the model's blob streamed to its file a chunk at a time (88
 * to 93 while it was written into one buffer of its size); the constants
 * bound those (svc_unfolded_build_within_its_estimate). A trace's events are
 * traces[i].events, or counted from its blob (streaming, bounded memory)
 * when that is negative (unknown).
 *
 * When go folds the job's ranks (n over go->fold_over: model/graph.h), the
 * graph holds only representatives: counted as the BUILT_FOLD_REPS largest
 * ranks (or fold_over, when more: those are held before folding starts),
 * plus BUILT_BYTES_PER_FOLDED_RANK for every rank (its trace's header and
 * measured step times). Measured at 4,096 ranks of 20 MB (BENCHMARKS.md
 * "Scale", tests/bench/scale.py, which checks the estimate): the build
 * grew the daemon by 1,084 MB, where the representatives at
 * BUILT_BYTES_PER_EVENT and the loading come to 462 MB, leaving 152 KB a
 * rank. reps_max then says that bound, for the build's
 * go->fold_reps_max: a job whose ranks fold to more representatives fails
 * its build with SC_ELIMIT instead of outgrowing the estimate (the builder
 * then admits it again as unfolded). */
#define BUILT_BYTES_PER_EVENT 72
#define BUILT_BYTES_PER_LOADING_EVENT 256
#define BUILT_BYTES_FIXED (4u << 20)
#define BUILT_FOLD_REPS 64
#define BUILT_BYTES_PER_FOLDED_RANK (192u << 10)
struct built_estimate {
    uint64_t bytes;       /* peak */
    uint64_t events;      /* of every trace */
    uint64_t held_events; /* of the ranks the graph holds (events when unfolded) */
    size_t reps_max;      /* representatives counted (0: not folded) */
};
int built_model_estimate(const struct api_trace *traces, size_t n, struct blob_store *bs,
                         const struct model_load_opts *opts, const struct model_graph_opts *go,
                         struct built_estimate *out, struct sc_error *err);

/* Bytes it holds (for the cache's budget), memo included at its bound. */
size_t built_model_bytes(const struct built_model *m);
/* The opened model (estimator/model_open.h) its queries run on: replays
 * and comparisons with its kept collectives' waits applied. */
struct est_traced_model;
const struct est_traced_model *built_model_opened(const struct built_model *m);

/* The calibration samples of m's traces (estimator/calibrate/calibrate.h:
 * the GEMMs, memory-bound ops, attention and collectives a calibration
 * fits), for calibrations from the model; what-ifs, their validations and
 * plans read the notes the model took of its traces instead
 * (est_model_notes). The first call reads the traces from their blobs, one
 * at a time in rank order (one trace in memory at once), and m keeps the
 * samples: later calibrations of m read no blob. *added gets the bytes
 * that first call kept (0 after), for the cache to count. *out is valid
 * while m is and never changes once made (calib_acc_finish only reads
 * it). Thread-safe: concurrent first calls read once. */
struct calib_acc;
int built_model_calib_samples(struct built_model *m, struct blob_store *bs, const struct calib_acc **out,
                              size_t *added, struct sc_error *err);
/* Whether m keeps its calibration samples already. */
int built_model_has_calib_samples(struct built_model *m);
/* The peak bytes built_model_calib_samples takes to read m's traces: its
 * largest trace whole, BUILT_BYTES_PER_LOADING_EVENT an event. */
double built_model_calib_read_bytes(const struct built_model *m);

/* Trace files read from blobs since the process started: by builds (each
 * rank's trace), by built_model_calib_samples and by built_load_trace. */
uint64_t built_trace_reads(void);

/* Longest memo key (a query's name and parameters). */
#define BUILT_MEMO_KEY_MAX 512

/* The answer kept under key, copied into r: 1, else 0 (r untouched).
 * Thread-safe. */
int built_memo_get(struct built_model *m, const char *key, struct api_reply *r);
/* Keep a copy of a 200 answer under key while it fits the memo's budget;
 * when full, the oldest answers go first. Thread-safe. */
void built_memo_put(struct built_model *m, const char *key, const struct api_reply *r);

#endif
