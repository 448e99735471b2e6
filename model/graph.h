/* model/graph.h: the dependency graph of a job's training steps
 * (DESIGN.md §4).
 *
 * Nodes are tasks on resources: a CPU thread (rank, pid, tid) runs its
 * runtime calls in order, each after the host work (the measured gap) that
 * preceded it; a GPU stream (rank, device, stream) runs its kernels, copies
 * and sets in order. Edges say what else a task waits for:
 *
 *   launch        a call -> the GPU work it launched (correlation id)
 *   event_sync    GPU work before cudaEventRecord -> the first work after
 *                 cudaStreamWaitEvent on another stream (from cuda_sync
 *                 events, else inferred and counted as inferred)
 *   host_sync     GPU work -> the call that waits for it (stream, device and
 *                 event syncs, blocking copies, polling loops): the call
 *                 ends after that work does
 *   launch_queue  GPU work starting -> a launch that found the queue full
 *   inter_thread  a thread going idle -> another thread resuming after a
 *                 long gap (a hand-off, e.g. forward -> backward)
 *   host_poll     GPU work -> the host resuming after it waited on that work
 *                 with no sync call: a host gap with nothing recorded in it
 *                 (a library polling host-mapped memory a kernel writes),
 *                 finish-to-start into the call after the gap, which keeps
 *                 the gap's recorded host work; or a polling loop of
 *                 queries, finish-to-finish into its last query
 *                 (MODEL_HOST_POLL_* below)
 *   gpu_wait      GPU work -> GPU work on another stream of the device that
 *                 was ready earlier yet started just as it ended: a wait the
 *                 trace does not name (an event recorded out of sight, or
 *                 the SMs held by a kernel that fills the device)
 *   collective    the same collective on every rank of its group, all
 *                 traced: it starts when the last rank's kernel is ready and
 *                 lasts its intrinsic time (a collective kept for untraced
 *                 peers is a group of its own kernel alone, which holds its
 *                 size and group size as the trace gives them)
 *   step_end      the last GPU task of each stream launched in a rank's last
 *                 modelled step -> that step's end marker: the last step
 *                 ends when its CPU annotation and all the work it launched
 *                 have ended (work conservation; earlier steps end with
 *                 their annotation, the next step's work queued behind)
 *   unexplained   the constraint a GPU task met last -> the task, when it
 *                 started later than that on the measured timeline (its
 *                 launch call had ended, its stream was free, every edge
 *                 into it was met): its latency is the wait the trace does
 *                 not explain. A replay applies it only when asked to keep
 *                 such waits (model_replay_opts.keep_unexplained)
 *
 * Durations are measured durations of work. Waits hidden in them are cut
 * out when the graph is built: a blocking call keeps only its intrinsic
 * cost, a collective only its transfer time (with every rank of its group:
 * the shortest rank's kernel, i.e. the last to arrive; with some of them
 * untraced, one rank of a job or k of its N: each traced rank's traced
 * time, reported as kept, which a replay may split into transfer and
 * wait, replay.h). Building reads measured start times to
 * tell waits from work; the replay reads none but each step's origin.
 *
 * The graph owns its memory and is immutable once built: several replays
 * may run on it at once, each with its own durations (replay.h). Graphs
 * are built through model/graph_builder.h, from a trace
 * (model_graph_build) or piece by piece with no trace at all. */
#ifndef MODEL_GRAPH_H
#define MODEL_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strtab.h"

struct model_job;
struct model_load_opts;
struct model_trace;

#ifndef MODEL_NONE
#define MODEL_NONE UINT32_MAX /* no task, event, group (as in trace.h) */
#endif

/* A gap on a thread counts as a hand-off wait (inter_thread edge) when it
 * holds an idle stretch (no CPU op running) at least this long and another
 * thread of the rank went idle at most MODEL_HANDOFF_MAX_LATENCY_NS before
 * it resumed. */
#define MODEL_INTER_THREAD_GAP_NS 1000000
#define MODEL_HANDOFF_MAX_LATENCY_NS 2000000

/* Host waits on GPU work that no sync call records (host_poll edges).
 *
 * A gap: the longest stretch of the host gap before a runtime call that
 * does not wait itself (not a sync, a query or a blocking copy: after such
 * a call's gap the host waited through the call) in which no event of its
 * thread starts or ends (inside or between CPU ops, Python frames
 * included) is a wait on GPU work when
 *   - the thread's trace records operators (cpu_op events): a thread
 *     traced by its runtime calls alone (CUPTI's) is silent between them
 *     whatever it runs;
 *   - the thread's gaps are otherwise short: it has at least
 *     MODEL_HOST_POLL_MIN_CALLS calls and its usual gap (the median gap
 *     before a call) is at most MODEL_HOST_POLL_USUAL_MAX_NS;
 *   - the stretch is far longer than that: at least MODEL_HOST_POLL_RATIO
 *     times the usual gap and at least MODEL_HOST_POLL_MIN_NS;
 *   - it ends (the host resumes) at most MODEL_HOST_POLL_EARLY_NS before
 *     or MODEL_HOST_POLL_LATE_NS after the end of a task the thread itself
 *     launched before the stretch began and that was then the last task
 *     queued on its stream (the signal may come before the kernel ends;
 *     work queued behind it was not awaited: a program running ahead of
 *     its GPU would otherwise see waits wherever a gap ends near some
 *     kernel's end by chance).
 * The call after the gap then starts when that task has ended plus the
 * offset measured from its end to the call (negative when the host
 * resumed first), and after the gap's host work less the stretch: what
 * the host did before the wait and after it resumed stays host work.
 *
 * A polling loop: runtime queries (cudaEventQuery, cudaStreamQuery, their
 * driver and hip forms) on one thread, each at most
 * MODEL_HOST_POLL_LOOP_GAP_NS after the one before, with nothing recorded
 * between them but Python frames, is a wait when it ends as the work it
 * polled does: a task the thread launched before the loop began, then the
 * last queued on its stream, that ended after the loop's last query but
 * one had started and at most MODEL_HOST_POLL_LOOP_LATE_NS before the
 * last query ended. That query then ends when the task has ended, plus
 * the offset measured; the queries between keep no time. So a watchdog
 * thread's queries (the work it polls was launched by another thread) and
 * a caching allocator's (events of work done long before, not of the work
 * just queued) stay host work. */
#define MODEL_HOST_POLL_MIN_CALLS 8
#define MODEL_HOST_POLL_USUAL_MAX_NS 50000
#define MODEL_HOST_POLL_RATIO 20
#define MODEL_HOST_POLL_MIN_NS 100000
#define MODEL_HOST_POLL_EARLY_NS 80000
#define MODEL_HOST_POLL_LATE_NS 10000
#define MODEL_HOST_POLL_LOOP_GAP_NS 200000
#define MODEL_HOST_POLL_LOOP_LATE_NS 30000

/* Rank folding: a job of many ranks is mostly data-parallel replicas
 * that run the same program at about the same speed. A rank whose part of
 * the graph has the same tasks, edges, steps and collectives (the same
 * process groups and sequence numbers) as another's, and whose work (the
 * durations of its GPU work but communication; its calls, host tasks and
 * host gaps) falls in the same MODEL_FOLD_TOL-wide bucket on each side, is
 * folded: the graph holds one of them, the representative (the one with
 * the most GPU work, then CPU work: the last to arrive at a collective),
 * which stands for the others in every collective; the others' measured
 * step times are kept (model_graph_folding) and scored against the
 * representative's replay. A rank unlike any other (a straggler) stands
 * alone. Ranks are folded when a job has more than fold_over of them. */
#define MODEL_FOLD_OVER 64
#define MODEL_FOLD_TOL 0.02
/* Work below this is bucketed as if it were this much (small totals jitter
 * by more than MODEL_FOLD_TOL). */
#define MODEL_FOLD_FLOOR_NS 1000000

struct model_graph_opts {
    int64_t first_step, last_step; /* step numbers to model; -1 = all */
    int64_t inter_thread_gap_ns;   /* default MODEL_INTER_THREAD_GAP_NS */
    int use_cuda_sync;             /* 1: trust cuda_sync events when present */
    size_t fold_over;              /* fold alike ranks of a job of more ranks than this
                                      (MODEL_FOLD_OVER; SIZE_MAX: never, 0: always) */
    size_t fold_reps_max;          /* a folded job's representatives at most (0: any
                                      number): one more fails the build with SC_ELIMIT,
                                      for what sized its memory by them (the daemon) */
    int inspect_only;              /* 1: what `stepcast inspect` reads (the collectives
                                      matched across ranks, the host's waits) and no more:
                                      the edges only a replay reads (hand-offs between
                                      threads, step ends, unexplained waits, waits
                                      between GPU work, a full launch queue) are not
                                      found, and a replay refuses the graph */
};

void model_graph_opts_default(struct model_graph_opts *o);

/* Set first_step/last_step from "A-B" or "A" (step numbers, A <= B).
 * SC_EINVAL with a message otherwise. */
int model_graph_parse_steps(const char *spec, struct model_graph_opts *o, struct sc_error *err);

/* What a task is, set when the graph is built; the replay and every report
 * read this, never the trace. `sub` refines it per class. */
enum model_task_class {
    MODEL_TASK_KERNEL, /* a compute kernel; sub: enum model_kernel_family */
    MODEL_TASK_COPY,   /* a copy on a GPU stream */
    MODEL_TASK_SET,    /* a memset on a GPU stream */
    MODEL_TASK_COMM,   /* a communication kernel; sub: enum model_coll_op */
    MODEL_TASK_CALL,   /* a runtime or driver call on a CPU thread; sub: enum model_call_kind */
    MODEL_TASK_HOST,   /* host work on a CPU thread (an operator, a synthesised step's CPU time) */
    MODEL_TASK_MARKER, /* a step boundary (no duration) */
    MODEL_TASK_CLASS_COUNT
};

/* What a runtime call does to the timeline. */
enum model_call_kind {
    MODEL_CALL_OTHER,  /* no ordering effect (queries of attributes, allocs, event records) */
    MODEL_CALL_LAUNCH, /* enqueues GPU work and returns */
    MODEL_CALL_SYNC,   /* waits for GPU work (stream, device, event syncs, polling, stream waits) */
    MODEL_CALL_MEMCPY, /* a blocking copy or set: enqueues GPU work and waits for it */
    MODEL_CALL_KIND_COUNT
};

/* "kernel", "copy", ...; "unknown" out of range. */
const char *model_task_class_name(enum model_task_class c);
const char *model_call_kind_name(enum model_call_kind k);
/* The class named (as model_task_class_name writes it), or -1. */
int model_task_class_parse(const char *name);

/* Whether a class runs on a GPU stream. */
static inline int model_task_on_gpu(unsigned cls)
{
    return cls <= MODEL_TASK_COMM;
}

enum model_edge_kind {
    MODEL_EDGE_LAUNCH,
    MODEL_EDGE_EVENT_SYNC,
    MODEL_EDGE_HOST_SYNC,
    MODEL_EDGE_LAUNCH_QUEUE,
    MODEL_EDGE_INTER_THREAD,
    MODEL_EDGE_GPU_WAIT,
    MODEL_EDGE_STEP_END,
    MODEL_EDGE_HOST_POLL,
    MODEL_EDGE_UNEXPLAINED,
    MODEL_EDGE_KIND_COUNT
};

/* How an edge constrains its target: finish-to-start (the usual), start-to-
 * start, finish-to-finish (the target cannot end before), start-to-finish. */
enum model_edge_type { MODEL_FS, MODEL_SS, MODEL_FF, MODEL_SF };

/* What the simulation reads per task (32 bytes); names and provenance are
 * in model_task_src. */
struct model_task {
    int64_t dur;       /* ns, the intrinsic duration (comm: transfer time) */
    int64_t gap;       /* ns of host work on the resource before it */
    uint32_t res;      /* resource */
    uint32_t group;    /* collective group, or MODEL_NONE */
    uint16_t rank;     /* index into the graph's ranks */
    uint8_t cls;       /* enum model_task_class */
    uint8_t sub;       /* kernel family, collective kind or call kind (see the class) */
    uint8_t kept;      /* a collective that keeps its traced duration */
    uint8_t paired;    /* a transfer that runs on a second resource too (struct model_task_peer) */
};

/* What a synthesised task's work is made of (model_gb_set_part): how much
 * of it is communication, when it merges compute kernels with collectives
 * among peers simulated as one rank (the breakdown counts that as such),
 * and the floating-point operations its kernels execute (GEMMs and
 * attention; an estimate sums them into its executed-FLOP figures). */
struct model_task_part {
    uint32_t task;
    int64_t comm_ns;
    double flops;
};

/* A point-to-point transfer held as one task on both its sides
 * (model_gb_pair): a send and its receive, which start when both are ready
 * and end together (a collective group of two would hold the same timing
 * in two tasks). The task sits on its resource (side 0); `res` is the
 * other side's stream. Edges marked `peer` say when the other side is
 * ready. The task's start is its own side's ready time, as a group
 * member's; it runs from when both sides are ready, for its duration. */
struct model_task_peer {
    uint32_t task;
    uint32_t res;
};

/* Where a task came from, and its name. */
struct model_task_src {
    uint32_t name;  /* string id in the graph's names */
    uint32_t event; /* index of the source event in its rank's trace, or MODEL_NONE */
    uint32_t tag;   /* string id of the synthesis step that made it, or MODEL_NONE */
};

struct model_edge {
    uint32_t from;
    int32_t lat;  /* ns added to the constraint */
    uint8_t type; /* enum model_edge_type */
    uint8_t kind; /* enum model_edge_kind */
    uint8_t inferred;
    uint8_t peer; /* constrains the other side of a paired task (struct model_task_peer) */
};

struct model_resource {
    uint16_t rank;
    uint8_t gpu;       /* a stream (1) or a thread (0) */
    uint8_t comm;      /* a stream carrying communication kernels */
    uint32_t track;    /* the track in the rank's trace, or MODEL_NONE */
    uint32_t label;    /* string id of its name ("" when none) */
    uint32_t first, last, n; /* its first and last task (linked by prev/next), how many */
    int64_t pid, tid;  /* device and stream, or process and thread (timeline ids) */
    int64_t origin;    /* ns, rank 0's clock: when the resource is first free */
};

/* Step k of rank r: its boundary markers and what the trace measured. */
struct model_graph_step {
    uint16_t rank;
    uint32_t step;         /* index into the rank's trace steps, or MODEL_NONE */
    uint32_t begin, end;   /* marker tasks */
    uint32_t name;         /* string id */
    int64_t measured_ns;   /* -1 when nothing was measured (a synthesised step) */
    uint8_t partial;
};

struct model_graph_rank {
    int id;                     /* the rank's number in its job */
    int64_t clock_offset_ns;    /* its clock minus rank 0's, from collectives */
    int64_t launch_queue_depth; /* 0 when no plateau was found */
};

/* A collective across ranks: what a cost model needs to know of it. Sizes
 * follow the nccl-tests convention: all-reduce, broadcast, reduce: the
 * buffer; all-gather: the total output; reduce-scatter: the total input;
 * all-to-all: the total sent per rank; send/recv: the message. */
struct model_coll_group {
    uint8_t op;          /* enum model_coll_op */
    int64_t bytes;       /* -1 when unknown */
    uint32_t dtype;      /* string id ("" when unknown) */
    uint32_t pg;         /* string id of the process group ("" when unknown) */
    int64_t seq;         /* sequence number in the process group, -1 when unknown */
    uint32_t size;       /* ranks taking part (may exceed the members: peers not modelled) */
};

/* A rank folded into another that stands for it (MODEL_FOLD_OVER). */
struct model_folded_rank {
    int id;            /* its rank number in the job */
    uint16_t rep;      /* the rank standing for it: index into the graph's ranks */
    uint32_t measured; /* its measured step times: folding.measured[measured + k] for its
                          representative's k-th step (graph order), ns; -1: not measured */
    int64_t origin_ns; /* how much later than its representative it entered its first step
                          (clocks aligned on collectives): what replays the rank's first
                          step shorter (replay.h, model_replay_folded_ns) */
};

struct model_graph_folding {
    int on;          /* the job was past fold_over: its alike ranks were folded */
    size_t ranks;    /* the job's ranks, folded or not */
    const struct model_folded_rank *folded; /* by representative, then rank number */
    size_t n_folded;
    const int64_t *measured;
    size_t n_measured;
};

/* What the build found, for reports and tests. */
struct model_graph_stats {
    size_t edges_by_kind[MODEL_EDGE_KIND_COUNT];
    size_t inferred_event_syncs, cuda_sync_event_syncs;
    size_t collectives_matched, collectives_kept;
    size_t host_waits_gap, host_waits_loop; /* host_poll edges: gaps without a call, polling loops */
};

/* Tasks are laid out in the order the builder's keys give (a traced graph:
 * measured start on rank 0's clock), which is about the order a replay
 * reaches them: the simulation then walks memory nearly in sequence. A
 * resource's tasks are linked in its order by prev/next (MODEL_NONE at the
 * ends), which is also the order of their numbers. The graph owns all its
 * arrays; nothing writes into them once it is built. */
struct model_graph {
    const struct model_job *job; /* borrowed, or NULL for a graph built without a trace; its
                                    traces may be shed (model_trace_shed): headers only */
    struct sc_strtab names;      /* task, resource, step and group strings */
    const struct model_task *tasks;
    const struct model_task_src *src;
    const uint32_t *prev, *next;
    size_t n_tasks;
    const struct model_edge *edges; /* predecessors of task i: edges[pred_at[i] .. pred_at[i + 1]) */
    const uint32_t *pred_at;
    size_t n_edges;
    const struct model_resource *res;
    size_t n_res;
    const struct model_graph_step *steps;
    size_t n_steps;
    const struct model_graph_rank *ranks;
    size_t n_ranks;
    /* successors of task i: succs[succ_at[i] .. succ_at[i + 1]), each the
     * target task << 2 | its edge type */
    const uint32_t *succ_at, *succs;
    const struct model_coll_group *groups;
    const uint32_t *group_at, *group_tasks; /* members of group g: group_tasks[group_at[g] ..] */
    size_t n_groups;
    const struct model_task_part *parts; /* by task; none in a traced job's graph */
    size_t n_parts;
    const struct model_task_peer *peers; /* by resource, each in its order; none in a traced job's graph */
    size_t n_peers;
    struct model_graph_stats stats;
    struct model_graph_folding folding; /* off (zeroed) but in a folded traced job */
    int inspect_only;                   /* built so (model_graph_opts): not to be replayed */
};

/* The first part (struct model_task_part) of a task
 * numbered i or more (n_parts when none is): task i's own when it has
 * one, and where a walk over tasks in increasing order starts. */
size_t model_graph_part_seek(const struct model_graph *g, uint32_t i);

/* The ranks folded into the graph's rank r (model_graph_folding): how
 * many, from folding.folded[*first]. */
size_t model_graph_folded_into(const struct model_graph *g, uint16_t r, size_t *first);

/* The trace of the graph's rank r (its job's with that rank number; a
 * folded job's ranks are its representatives, not the job's first
 * ranks), or NULL (no job). */
const struct model_trace *model_graph_trace(const struct model_graph *g, uint16_t r);

/* A string of the graph's names. */
static inline const char *model_graph_str(const struct model_graph *g, uint32_t id)
{
    return sc_strtab_str(&g->names, id);
}

/* Build the graph of a job's steps (its ranks on all cores, each rank's
 * tasks and edges found apart, then joined at collectives). SC_EINVAL when
 * there is no step to model (no ProfilerStep and no marker, or none in the
 * range asked). */
int model_graph_build(const struct model_job *job, const struct model_graph_opts *opts,
                      struct model_graph **out, struct sc_error *err);
void model_graph_free(struct model_graph *g); /* NULL-safe */

/* How model_graph_build_paths loads. Zeroed: default load options, ranks
 * from the traces, one thread per online CPU, no progress calls. */
struct model_graph_load {
    const struct model_load_opts *load; /* NULL: model_load_opts_default */
    const int64_t *ranks;               /* as model_job_load_each; NULL: from the traces */
    unsigned threads;                   /* 0: one per online CPU */
    /* called from the loading threads with the number of ranks built so far */
    void (*progress)(void *ctx, size_t built);
    void *progress_ctx;
    /* NULL, or called from the loading threads with each trace, still
     * whole, whose rank's part the graph may keep: never one folded into
     * another rank's as it came. An error fails the build. */
    int (*kept)(void *ctx, const struct model_trace *t, struct sc_error *err);
    /* NULL, or told the trace of a part kept that was then folded into
     * another's (one that stands for it, or on crossing fold_over): it
     * will not be in the graph. Called under the build's lock, and it
     * may come before kept's call for that trace returns. */
    void (*dropped)(void *ctx, const struct model_trace *t);
    void *kept_ctx; /* both's */
};

/* Load the traces that paths name (as model_job_load) and build their
 * graph, rank by rank as each trace is loaded, on all cores: each trace is
 * shed (model_trace_shed) once its rank's tasks and edges are found, so a
 * job's traces are never all in memory; what is held is the graph (tasks,
 * edges, interned names) and each trace's header. The same graph as
 * model_job_load then model_graph_build. *job (its traces shed) outlives
 * *out, which borrows it. */
int model_graph_build_paths(const char *const *paths, size_t n, const struct model_graph_load *l,
                            const struct model_graph_opts *opts, struct model_job **job,
                            struct model_graph **out, struct sc_error *err);

/* Bytes the graph holds (for caches that bound memory). */
size_t model_graph_bytes(const struct model_graph *g);

const char *model_edge_kind_name(enum model_edge_kind k);

/* The host's waits on GPU work that no sync call records (host_poll
 * edges, MODEL_HOST_POLL_*), per rank and the work waited on (by name):
 * gaps with nothing recorded (finish-to-start edges into the call after
 * the gap) and polling loops (finish-to-finish into the last query). */
struct model_host_wait {
    uint16_t rank;        /* index into the graph's ranks */
    uint32_t name;        /* the GPU work's name, string id in the graph's names */
    size_t without_call;  /* gaps */
    size_t polling_loops; /* loops of queries */
};

/* g's host waits, by rank and name, into *out (from malloc; NULL when
 * none) and *n; SC_ENOMEM. */
int model_graph_host_waits(const struct model_graph *g, struct model_host_wait **out, size_t *n);

/* The unexplained wait before task i: its unexplained edge's latency, 0
 * when it has none. */
int64_t model_graph_unexplained_wait(const struct model_graph *g, uint32_t i);

#endif
