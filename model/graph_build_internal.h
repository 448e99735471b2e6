/* model/graph_build_internal.h: what the parts of the graph build share
 * (graph.h, model_graph_build), for those parts only.
 *
 * The build runs in four parts, one file each: a rank's sequences of
 * calls and GPU work found from its trace, and what its part keeps of the
 * trace once found (graph_rank.c); the edges of one rank (graph_edges.c);
 * alike ranks folded into one (graph_fold.c); and the ranks joined into
 * one graph (graph_join.c). graph_build.c drives them. They share one
 * `struct builder` per rank's part, and its `struct rank_build` while the
 * part is found. */
#ifndef MODEL_GRAPH_BUILD_INTERNAL_H
#define MODEL_GRAPH_BUILD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/cancel.h"
#include "common/error.h"
#include "common/i64map.h"
#include "common/pool.h"
#include "common/spans.h"
#include "model/graph.h"
#include "model/graph_builder.h"
#include "model/job.h"
#include "model/trace.h"

struct pending_edge {
    uint32_t to, from;
    int64_t lat;
    uint8_t type, kind, inferred;
};

/* A task while the graph is found: what the graph will hold of it, and
 * the trace event it came from (MODEL_NONE for a step marker). */
struct btask {
    int64_t dur, gap;
    uint32_t res, event;
    uint32_t name; /* string id in the rank's trace (MODEL_NONE: a step marker) */
    uint16_t rank;
    uint8_t kind; /* enum model_task_class */
    uint8_t sub;  /* kernel family, collective kind or call kind */
    uint8_t kept;
};

/* A communication task of a rank, with what grouping it across ranks
 * needs of its trace (string ids are the rank's trace's). */
struct comm_meta {
    uint32_t task;      /* the task, in its rank's part */
    uint32_t pg;        /* "Process Group Name", or MODEL_NONE */
    uint32_t dtype;     /* or MODEL_NONE */
    int64_t key_seq;    /* the sequence number that keys it (PyTorch's, else NCCL's), or -1 */
    int64_t seq;        /* PyTorch's sequence number, or -1 */
    int64_t bytes;      /* nccl-tests convention for its own operation; -1 when unknown */
    int64_t stream;     /* its stream's id */
    int64_t end;        /* measured end, trace clock */
    int32_t group_size; /* "Group size", else its process group's pg_size; or -1 */
    uint8_t op;         /* enum model_coll_op of its name */
};

/* A collective group found across ranks: its members' range in
 * join.group_tasks (task ids of the joined graph). */
struct bgroup {
    uint32_t first, n;
    struct model_group_spec spec;
};

/* A stream of one rank: its tasks and when each was launched. */
struct stream {
    uint32_t res;
    uint32_t first, n;  /* tasks */
    int64_t *lstart;    /* launch call start per task (prefix max), INT64_MIN if none */
};

/* Median duration of the calls of each API name (by name id). */
struct api_median {
    uint32_t *name;
    int64_t *median;
    size_t n;
};

struct rank_build {
    const struct model_trace *t;
    uint16_t rank;
    int64_t origin, wend; /* the window, trace clock */
    size_t step_lo, step_hi;
    uint32_t *window_kinds; /* per track, MODEL_EV_KIND_COUNT counts by kind: its events
                               in the window, in part (gb_rank_window) */
    uint32_t *outer;   /* per event: the kept call it is nested in, else itself */
    uint32_t *task_of; /* per event: its task, or MODEL_NONE */
    struct stream *streams;
    size_t n_streams, cap_streams;
    uint32_t thread_lo, thread_hi; /* its thread resources */
    int64_t launch_lat, return_lat;
    struct api_median med;
    uint32_t *records; /* cudaEventRecord call tasks, by start */
    size_t n_records;
    /* per thread (from thread_lo): the SPANS_MARKS_CALLS the host-sync pass
     * found, kept for the host-poll pass when they are also the thread's
     * SPANS_MARKS (no Python frame in the window); NULL where none */
    int64_t **marks;
    size_t *n_marks;
};

/* What is found of one rank before the ranks are joined: a builder whose
 * arrays hold that rank's tasks (rank index 0 inside; the join renumbers). */
struct builder {
    struct model_graph_opts o;
    struct sc_error *err;
    struct rank_build r; /* the rank, while its trace is read */
    /* per call task, along its thread: the first GPU task launched by it or
     * a later call, the last launched by it or an earlier call, and the last
     * cudaEventRecord up to it; per resource: its stream (MODEL_NONE for threads) */
    uint32_t *next_gpu, *cur_gpu, *last_rec, *stream_ix;

    struct btask *tasks;
    size_t n_tasks, cap_tasks;
    int64_t *ts, *end; /* measured, trace clock, per task */
    size_t cap_times;
    uint32_t *wait_done; /* per task: already given a wait edge */
    struct model_resource *res;
    size_t n_res, cap_res;
    struct pending_edge *edges;
    size_t n_edges, cap_edges;
    struct model_graph_step *steps;
    size_t n_steps, cap_steps;
    struct comm_meta *comm; /* its communication tasks, by resource and order */
    size_t n_comm;
    int64_t queue_depth;
    struct model_graph_stats stats;
    /* folding (graph.h, MODEL_FOLD_OVER): a hash of its structure, its
     * work, and as a representative, the ranks folded into it */
    uint64_t sig;
    int64_t work_gpu, work_cpu;
    int64_t anchor; /* its first step's start less the mean end of its collectives, trace clock */
    int64_t *comm_min; /* per comm[] entry: the shortest traced time among the ranks it stands for
                          (NULL: its own) */
    struct folded *folded;
    size_t n_folded, cap_folded;
};

/* A rank folded into a representative: its trace (header) and its
 * measured step times, one per step of the representative. */
struct folded {
    const struct model_trace *t;
    int id; /* its rank number, once the job has ranked its traces */
    int64_t *measured;
    int64_t anchor; /* its builder's */
};

#define OOM(b) sc_error_set((b)->err, SC_ENOMEM, "out of memory")
/* SC_ECANCELED once the work is called off (common/cancel.h): looked at
 * between a rank's passes and between the ranks joined */
#define CALLED_OFF(e) (sc_cancelled() ? sc_error_set((e), SC_ECANCELED, "the graph's build was called off") : SC_OK)

static inline int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* What thread_events collects of a thread's events. */
enum span_mode {
    SPANS_OPS,         /* the union of its CPU op intervals */
    SPANS_MARKS,       /* the instants any event on it starts or ends */
    SPANS_MARKS_CALLS, /* the same, but of Python frames */
};

/* The ranks' parts as they are found: all held while the job has at most
 * `over` ranks, then folded as they come (the classes of alike ranks and
 * who stands for each do not depend on the order). */
struct folder {
    size_t over, seen;
    size_t reps_max; /* model_graph_opts.fold_reps_max */
    struct builder **v; /* the parts held: every rank's, or once folding, the representatives */
    size_t n, cap;
    /* NULL, or told the trace of each part held that is then folded into
     * another's (model_graph_load.dropped) */
    void (*dropped)(void *ctx, const struct model_trace *t);
    void *dropped_ctx;
};

/* The ranks' parts, in rank order, and what is found across them. */
struct join {
    struct builder **parts;
    const struct model_trace **traces; /* each part's trace (its header is enough) */
    int *rank_ids;
    size_t n;
    size_t total; /* the job's ranks: n and those folded into them */
    int folded;   /* the job was folded (graph.h, MODEL_FOLD_OVER) */
    struct sc_error *err;
    uint32_t *base;        /* per rank: its first task in the graph */
    int64_t *clock_offset; /* per rank */
    struct bgroup *groups;
    size_t n_groups, cap_groups;
    uint32_t *group_tasks;
    size_t n_group_tasks, cap_group_tasks;
    struct model_graph_stats stats;
};

/* graph_rank.c: a rank's tasks and resources, its sequences, the lookups
 * on them, and the part handed over */
int gb_add_edge(struct builder *b, uint32_t from, uint32_t to, int64_t lat, uint8_t type,
                uint8_t kind, int inferred);
int gb_new_task(struct builder *b, const struct btask *t, int64_t ts, int64_t end);
int gb_new_res(struct builder *b, uint16_t rank, int gpu, uint32_t track, int64_t origin);
int gb_is_call(unsigned kind);
int gb_rank_window(struct builder *b, struct rank_build *r);
int gb_rank_threads(struct builder *b, struct rank_build *r);
uint32_t gb_launch_task(const struct rank_build *r, uint32_t ev);
int64_t gb_launch_ts(const struct rank_build *r, uint32_t ev);
int gb_rank_streams(struct builder *b, struct rank_build *r);
uint32_t gb_last_launched_before(const struct stream *s, int64_t before);
uint32_t gb_last_ending_by(const struct builder *b, uint32_t first, size_t n, int64_t t);
struct stream *gb_stream_of_task(struct rank_build *r, const struct builder *b, uint32_t task);
int gb_thread_scans(struct builder *b, struct rank_build *r);
uint32_t gb_next_launched(const struct builder *b, uint32_t c);
uint32_t gb_current_stream_task(const struct builder *b, uint32_t c);
/* Whether the thread's trace records an event of this kind in the window
 * (for MODEL_EV_CPU_OP: whether its SPANS_OPS would not be empty). */
int gb_thread_has(const struct rank_build *r, uint32_t track, uint8_t kind);
/* The union of the thread's CPU ops in the window (SPANS_OPS), into *out
 * (malloc'd) and *nout. */
int gb_thread_ops(struct builder *b, struct rank_build *r, uint32_t track, struct sc_span **out, size_t *nout);
/* The instants its events (SPANS_MARKS, SPANS_MARKS_CALLS) start and end
 * at in the window, in order (sc_span_instants), into *out and *nout. */
int gb_thread_marks(struct builder *b, struct rank_build *r, uint32_t track, enum span_mode mode, int64_t **out,
                    size_t *nout);
/* The longest stretch of [a, b] that no busy span covers, or that holds
 * none of the instants at[0..n). */
struct sc_span gb_longest_idle(const struct sc_span *busy, size_t n, int64_t a, int64_t b);
struct sc_span gb_longest_between(const int64_t *at, size_t n, int64_t a, int64_t b);
int gb_rank_keep(struct builder *b);
/* Free the marks the host-sync pass kept (struct rank_build). */
void gb_rank_drop_marks(struct rank_build *r);
void gb_rank_trim(struct builder *b);
void gb_rank_free(struct builder *b);

/* graph_edges.c: the edges of one rank */
int gb_api_medians(struct builder *b, struct rank_build *r, struct api_median *m);
int gb_calibrate_latencies(struct builder *b, struct rank_build *r);
int gb_launch_edges(struct builder *b, struct rank_build *r);
int gb_cuda_sync_edges(struct builder *b, struct rank_build *r);
int gb_inferred_event_edges(struct builder *b, struct rank_build *r);
int gb_gpu_wait_edges(struct builder *b, struct rank_build *r);
int gb_host_sync_edges(struct builder *b, struct rank_build *r);
int gb_host_poll_edges(struct builder *b, struct rank_build *r);
int gb_launch_queue_edges(struct builder *b, struct rank_build *r, int64_t *depth_out);
int gb_inter_thread_edges(struct builder *b, struct rank_build *r);
int gb_step_end_edges(struct builder *b, struct rank_build *r);
int gb_unexplained_waits(struct builder *b);

/* graph_fold.c: alike ranks folded as they come */
void gb_rank_profile(struct builder *b);
/* Take a rank's part p (freed on failure); *kept: whether p is held now,
 * before folding starts or as a representative (else it was folded into
 * one). A part kept may still be folded later, into one that stands for
 * it or on crossing the threshold: f->dropped is told then. */
int gb_folder_add(struct folder *f, struct builder *p, int *kept, struct sc_error *err);
int gb_folder_on(const struct folder *f);
void gb_folder_release(struct folder *f);

/* graph_join.c: the parts joined into one graph (marked inspect_only when
 * the parts were built so: model_graph_opts) */
int gb_join(struct join *j, const struct model_job *job, struct model_graph **out);
void gb_join_release(struct join *j);

#endif
