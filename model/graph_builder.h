/* model/graph_builder.h: building a dependency graph (graph.h) piece by
 * piece, with or without a trace.
 *
 * The trace-driven build (model_graph_build) and anything that makes a
 * step from a spec use this one way in: add ranks, each rank's resources
 * (CPU threads, GPU streams), tasks on them in the order each resource runs
 * them, the edges between tasks, the steps (a begin and an end marker task
 * each) and the collective groups across ranks; then finish. The finished
 * graph replays, breaks down, gives a critical path and writes a timeline
 * like a traced one.
 *
 *     struct model_gb *gb = model_gb_new(&err);            // NULL: out of memory
 *     uint16_t r0;
 *     model_gb_add_rank(gb, &(struct model_rank_spec){.id = 0}, &r0);
 *     uint32_t cpu, gpu, b, k, e;
 *     model_gb_add_resource(gb, &(struct model_res_spec){.rank = r0, .label = "main"}, &cpu);
 *     model_gb_add_resource(gb, &(struct model_res_spec){.rank = r0, .gpu = 1, .tid = 7}, &gpu);
 *     model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER}, &b);
 *     model_gb_add_task(gb, &(struct model_task_spec){.res = gpu, .cls = MODEL_TASK_KERNEL,
 *                       .sub = MODEL_KF_GEMM, .dur = 10000000, .name = "gemm", .tag = "forward"}, &k);
 *     model_gb_add_task(gb, &(struct model_task_spec){.res = cpu, .cls = MODEL_TASK_MARKER}, &e);
 *     model_gb_add_edge(gb, b, k, MODEL_EDGE_LAUNCH, MODEL_FS, 0, 0);
 *     model_gb_add_edge(gb, k, e, MODEL_EDGE_HOST_SYNC, MODEL_FS, 0, 0);
 *     model_gb_add_step(gb, &(struct model_step_spec){.rank = r0, .begin = b, .end = e,
 *                       .name = "step#1", .measured_ns = -1});
 *     struct model_graph *g;
 *     if (model_gb_finish(gb, &g, &err)) ...                 // gb is freed either way
 *
 * Every call returns SC_OK or an error (bad ids, limits, out of memory)
 * set in the `err` given to model_gb_new(); after an error the builder
 * only accepts model_gb_free() (finish reports the first error again).
 * Strings are copied. Ids are dense and given in the order of the calls;
 * task ids are renumbered by finish only through the layout (see
 * model_gb_finish). */
#ifndef MODEL_GRAPH_BUILDER_H
#define MODEL_GRAPH_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/graph.h"

struct model_gb;

/* A new, empty builder; NULL (err set) when out of memory. */
struct model_gb *model_gb_new(struct sc_error *err);
void model_gb_free(struct model_gb *gb); /* NULL-safe */

/* The job the graph is built from (borrowed; it must outlive the graph),
 * for reports that show the trace's own details. Optional. */
void model_gb_set_job(struct model_gb *gb, const struct model_job *job);

/* Keep no names from here on: each task's name and tag, and each
 * collective group's dtype and process group, are the empty string (a
 * step's and a resource's names are kept). For a graph that is only
 * replayed: names do not change its timing (unless a replay scales tasks
 * by name), and interning two of them a task is much of the cost of
 * building a small one. */
void model_gb_skip_names(struct model_gb *gb);

struct model_rank_spec {
    int id;                     /* its rank number in the job */
    int64_t clock_offset_ns;    /* its clock minus rank 0's (0 for a synthesised rank) */
    int64_t launch_queue_depth; /* 0 when unknown */
};
int model_gb_add_rank(struct model_gb *gb, const struct model_rank_spec *s, uint16_t *rank);

struct model_res_spec {
    uint16_t rank;
    int gpu;           /* a GPU stream (1) or a CPU thread (0) */
    int comm;          /* a stream carrying communication kernels */
    const char *label; /* its name, or NULL */
    int64_t pid, tid;  /* device and stream, or process and thread, for timelines */
    uint32_t track;    /* its track in the rank's trace; 0 is taken as none unless has_track */
    int has_track;
    int64_t origin;    /* ns on rank 0's clock: when it is first free (0 for a synthesised step) */
};
int model_gb_add_resource(struct model_gb *gb, const struct model_res_spec *s, uint32_t *res);

struct model_task_spec {
    uint32_t res;
    int cls;           /* enum model_task_class; it must suit the resource (GPU work on a stream) */
    int sub;           /* kernel family, collective kind or call kind */
    int64_t dur, gap;  /* ns: its own duration, host work on the resource before it; >= 0 */
    const char *name;  /* NULL: the class's name */
    uint32_t event;    /* the trace event it came from; ignored unless has_event */
    int has_event;
    const char *tag;   /* the synthesis step that made it, or NULL */
    int kept;          /* a collective member that keeps its (traced) duration */
    int64_t order;     /* layout key (a traced task: its measured start on rank 0's clock);
                          equal keys keep the order of the calls */
};
/* Append a task to its resource: a resource runs its tasks in the order
 * they are added. */
int model_gb_add_task(struct model_gb *gb, const struct model_task_spec *s, uint32_t *task);

/* Change the duration of a task added (>= 0): a caller that merges work
 * into a task as it goes, such as the host calls of a synthesised step. */
int model_gb_set_dur(struct model_gb *gb, uint32_t task, int64_t dur);

/* What a kernel task's work is made of (struct model_task_part, set
 * once): how much of it is communication (0 <= comm_ns <= its duration),
 * when a synthesised task merges compute kernels with collectives among
 * peers simulated as one rank: the replay's breakdown counts the last
 * comm_ns of its run as communication, the rest as compute; and the FLOPs
 * its kernels execute (finite, >= 0). One of the two is positive. */
int model_gb_set_part(struct model_gb *gb, uint32_t task, int64_t comm_ns, double flops);

/* Make communication task `task` (in no group) a transfer on two sides
 * (struct model_task_peer): it also runs on GPU stream `res`, another
 * rank's, from when the edges added with model_gb_add_peer_edge are met.
 * The builder keeps no order of `res` for it: the caller orders it there
 * with edges (peer edges from the stream's task before, edges to the one
 * after). Once per task. */
int model_gb_pair(struct model_gb *gb, uint32_t task, uint32_t res);

/* model_gb_add_edge into the other side of paired task `to`: when that
 * side is ready (finish-to-start or start-to-start only). */
int model_gb_add_peer_edge(struct model_gb *gb, uint32_t from, uint32_t to, enum model_edge_kind kind,
                           enum model_edge_type type, int64_t lat);

/* Room for `tasks` tasks, `edges` edges, `groups` collective groups and
 * `members` members of groups in all, when the caller knows about how many
 * it will add: a hint that saves growing the arrays (more may still be
 * added; room not used costs address space only). */
int model_gb_reserve(struct model_gb *gb, size_t tasks, size_t edges, size_t groups, size_t members);

/* Task `to` waits for `from` as `type` says, `lat` ns later (clamped to
 * 32 bits). An edge from a task to itself or from/to MODEL_NONE is
 * dropped. */
int model_gb_add_edge(struct model_gb *gb, uint32_t from, uint32_t to, enum model_edge_kind kind,
                      enum model_edge_type type, int64_t lat, int inferred);

struct model_step_spec {
    uint16_t rank;
    uint32_t begin, end;  /* marker tasks of the rank */
    const char *name;     /* "ProfilerStep#3", "step#1" */
    int64_t measured_ns;  /* -1: not measured (a synthesised step) */
    int partial;          /* the trace starts or ends inside it */
    uint32_t trace_step;  /* index into the rank's trace steps, or MODEL_NONE */
};
int model_gb_add_step(struct model_gb *gb, const struct model_step_spec *s);

/* A collective over communication tasks of distinct ranks: they start
 * together when the last is ready and end together after the longest
 * member's duration. One member is allowed (peers that behave alike
 * simulated as one rank): then s->size may exceed n. */
struct model_group_spec {
    int op;             /* enum model_coll_op */
    int64_t bytes;      /* nccl-tests convention (graph.h); -1 when unknown */
    const char *dtype;  /* "Float", "BFloat16", ...; NULL when unknown */
    const char *pg;     /* process group name; NULL when unknown */
    int64_t seq;        /* sequence number in the process group; -1 when unknown */
    uint32_t size;      /* ranks taking part; 0: the members */
};
int model_gb_add_group(struct model_gb *gb, const struct model_group_spec *s, const uint32_t *tasks,
                       size_t n, uint32_t *group);

/* The job was folded (graph.h, MODEL_FOLD_OVER): it has `ranks` ranks,
 * folded or not. */
void model_gb_folding_on(struct model_gb *gb, size_t ranks);

/* Rank `id` of the job, folded into rank `rep` (added): when its first
 * step began after rep's, and its measured step times, one per step of
 * rep (-1: not measured), n of them. Add them by representative, then
 * rank number. */
struct model_folded_spec {
    uint16_t rep;
    int id;
    int64_t origin_ns;
    const int64_t *measured;
    size_t n;
};
int model_gb_add_folded(struct model_gb *gb, const struct model_folded_spec *s);

/* Counts the caller found while building, reported with the graph
 * (edges_by_kind is filled by finish). */
struct model_graph_stats *model_gb_stats(struct model_gb *gb);

/* How many tasks were added so far. */
size_t model_gb_n_tasks(const struct model_gb *gb);

/* Lay the tasks out by their order keys, link each resource's tasks, index
 * the edges and hand the graph over. Task ids change with the layout:
 * model_gb_finish_map() gives the new id of each added task. The builder
 * is freed, also on failure. A key smaller than the one of the task
 * before it on its resource is taken as equal to it: a resource runs its
 * tasks in the order they were added, whatever the keys. */
int model_gb_finish(struct model_gb *gb, struct model_graph **out, struct sc_error *err);
/* The same, and *map (malloc'd, model_gb_n_tasks() entries) gets the id in
 * the graph of each task in the order it was added. */
int model_gb_finish_map(struct model_gb *gb, struct model_graph **out, uint32_t **map,
                        struct sc_error *err);

#endif
