/* model/replay.h: replaying a job's steps on its dependency graph.
 *
 * A list-scheduler simulation (DESIGN.md §4): every resource runs its tasks
 * in order; a task starts when its resource is free (plus the host work
 * before it) and its predecessors allow, and ends after its duration or
 * when what it waits for (finish-to-finish edges) is done; a collective
 * starts on every rank when the last rank's kernel is ready and lasts its
 * longest member's duration. It reads the graph's durations (through the
 * options' factors and overrides), gaps and latencies and each rank's
 * origin, nothing measured besides.
 *
 * Results per (rank, step): the measured and replayed step time, the error,
 * a breakdown that sums to the replayed step, the time the step spends
 * waiting in collectives kept for untraced peers, and the critical path as
 * segments that tile the step. Several replays may run on one graph at once;
 * a result borrows the graph. */
#ifndef MODEL_REPLAY_H
#define MODEL_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/graph.h"

#define MODEL_REPLAY_MAX_FACTORS 64
#define MODEL_REPLAY_PATTERN_MAX 128
#define MODEL_REPLAY_PATTERN_STARS 8

/* Durations are an input of the replay: a factor multiplies the duration
 * of every task it matches (all that match multiply), and with host_gaps
 * the host work (gap) before every task on a CPU thread of its ranks; an
 * override sets one task's duration outright. A factor may be 0: that work
 * takes no time, what waits on other work still waits. The graph is not
 * touched, so any number of what-ifs may run at once on one graph. */
struct model_replay_factor {
    int rank;          /* the rank's number in the job; -1: every rank */
    uint32_t classes;  /* bit (1 << enum model_task_class) per class matched; 0: every class */
    int family;        /* a kernel family (kernel tasks only); -1: any task */
    char pattern[MODEL_REPLAY_PATTERN_MAX]; /* a glob over task names (fnmatch); "": any name */
    double factor;     /* >= 0 */
    int host_gaps;     /* 1: also every host gap on the rank's CPU threads (class, family
                          and name are not asked of a gap) */
    int launches_only; /* 1: of calls, only those that launch GPU work */
};

struct model_replay_override {
    uint32_t task; /* a task of the graph */
    int64_t dur;   /* ns, >= 0 */
    int has_gap;   /* 1: also the host work before it, gap ns (>= 0) */
    int64_t gap;
    int has_wait;  /* 1: its kept unexplained wait (graph.h) is wait ns (>= 0) instead */
    int64_t wait;
};

/* A collective kept for untraced peers (graph.h: its group was not all
 * traced) split into the transfer and the wait for peers its traced
 * duration holds (estimator/whatif/coll_split.h computes the split). In a replay the wait
 * comes first; the transfer is scaled by the factors that match the task
 * (comm, its rank's too), the wait by how the rank's work changes under
 * the factors given for every rank (the untraced peers are taken to run
 * like the traced rank: a factor for one rank does not move them): the
 * ratio of the work of the rank's busiest resource (a GPU stream's work
 * but communication, a CPU thread's calls, host tasks and gaps), with
 * those factors, to the traced. An override of the task sets its whole
 * duration, wait included. */
enum model_wait_from {
    MODEL_WAIT_FROM_SIZE,  /* transfer: the collective model's time for its size */
    MODEL_WAIT_FROM_LEAST, /* no size in the trace: transfer is the least-waiting
                              instance's traced time */
    MODEL_WAIT_FROM_COUNT
};

struct model_coll_wait {
    uint32_t task; /* a kept communication task */
    int64_t wait;  /* ns, 0 <= wait <= its duration */
    uint8_t from;  /* enum model_wait_from */
};

struct model_coll_waits {
    const struct model_coll_wait *v; /* borrowed; at most one per task */
    size_t n;
};

/* What `gpu` scales: the GPU work that is not communication (kernels,
 * copies, sets); what `cpu` scales besides host gaps: runtime calls and
 * host work tasks. */
#define MODEL_REPLAY_GPU_CLASSES (1u << MODEL_TASK_KERNEL | 1u << MODEL_TASK_COPY | 1u << MODEL_TASK_SET)
#define MODEL_REPLAY_CPU_CLASSES (1u << MODEL_TASK_CALL | 1u << MODEL_TASK_HOST)

struct model_replay_opts {
    struct model_replay_factor factors[MODEL_REPLAY_MAX_FACTORS];
    size_t n_factors;
    const struct model_replay_override *overrides; /* borrowed; the last for a task wins */
    size_t n_overrides;
    int critical_path; /* compute the paths (1 by default) */
    int slowest_breakdown; /* 1: only the slowest step gets its breakdown and kept collectives'
                              time, the others' are left 0 (what an estimate reports); 0 by default */
    int keep_unexplained; /* 1: apply the graph's unexplained edges, waits the trace holds but
                             does not explain, as fixed latencies (0 by default) */
    struct model_coll_waits waits; /* kept collectives split (none by default: each keeps its
                                      whole traced duration as a wait, scaled by comm) */
    int step_unexplained; /* 1: each step's unexplained_ns, two more simulations of the graph
                             (1 by default; 0 in model_replay_opts_steps and _kept) */
};

void model_replay_opts_default(struct model_replay_opts *o);

/* The defaults for a replay read only for its steps' times and the
 * slowest step's breakdown (an estimate, a plan's what-if): no critical
 * paths, no other step's breakdown. */
void model_replay_opts_steps(struct model_replay_opts *o);

/* The defaults as a comparison of replays runs them (diff.h,
 * opportunity.h): no critical paths, the graph's unexplained waits kept,
 * the kept collectives split as `waits` says. */
void model_replay_opts_kept(struct model_replay_opts *o, struct model_coll_waits waits);

/* Add a factor from "WHAT=F" or "WHAT@R=F", 0 <= F <= 1000, R a rank
 * number of the job (checked when the replay runs). WHAT is
 *   gpu                      GPU work but communication: kernels, copies, sets
 *   comm                     communication: a collective's transfer time (its
 *                            members still wait for the last to arrive; of one
 *                            kept for untraced peers, the transfer of its split)
 *   cpu                      host work: runtime calls, host tasks, host gaps
 *   launch                   runtime calls that launch GPU work (their own cost)
 *   all                      every task and every host gap
 *   kernel, copy, set, communication, call, host   one task class
 *   kernel:TEXT              kernels (communication kernels too) whose name
 *                            contains TEXT (case matters)
 *   family:NAME              kernels of a family (kernel_family.h: gemm, attention, ...)
 *   name:GLOB                tasks whose name matches a glob ("*gemm*")
 * SC_EINVAL with a message saying what is wrong otherwise. */
int model_replay_parse_scale(const char *spec, struct model_replay_opts *o, struct sc_error *err);

/* Add a factor directly; SC_ELIMIT past MODEL_REPLAY_MAX_FACTORS, SC_EINVAL
 * for a negative or non-finite factor, or a pattern too long or with more
 * than MODEL_REPLAY_PATTERN_STARS '*'. */
int model_replay_add_factor(struct model_replay_opts *o, const struct model_replay_factor *f,
                            struct sc_error *err);

/* What bounds a segment of the critical path. */
enum model_bound {
    MODEL_BOUND_GPU_COMPUTE,
    MODEL_BOUND_COMMUNICATION,
    MODEL_BOUND_HOST,
    MODEL_BOUND_LAUNCH,
    MODEL_BOUND_SYNC,
    MODEL_BOUND_UNEXPLAINED, /* a wait kept from the trace (keep_unexplained) */
    MODEL_BOUND_COUNT
};

const char *model_bound_name(enum model_bound b);

struct model_replay_segment {
    uint32_t task;      /* the task it belongs to (for a host gap: the task after it) */
    int64_t start, end; /* ns, replay clock */
    uint8_t bound;      /* enum model_bound */
    uint8_t edge;       /* the kind of the edge that held the task back (enum model_edge_kind);
                           MODEL_EDGE_KIND_COUNT for its own work or host work. A source's
                           own run that its target, resuming before it ended (an edge of
                           negative latency), waited through carries that edge too */
    uint32_t on;        /* that edge's source (for host_poll: the GPU work the host waited
                           on), or MODEL_NONE */
};

/* Each instant of a step counts once, in this order: compute and
 * communication at once (overlap), compute, communication, a GPU stream
 * in an unexplained wait that was kept, host work, else idle. */
struct model_breakdown {
    int64_t compute_exposed, overlap, comm_exposed, unexplained, host, idle; /* ns; sum = step */
};

struct model_replay_step {
    uint16_t rank;
    uint32_t step;     /* index into the rank's trace steps, or MODEL_NONE */
    int64_t measured_ns, replayed_ns; /* measured_ns -1: not measured (error_pct 0, not scored) */
    int64_t start, end; /* replay clock */
    double error_pct;  /* (replayed - measured) / measured x 100 */
    uint8_t partial;
    struct model_breakdown breakdown;
    int64_t collective_kept_ns; /* waiting in collectives kept for untraced peers: the waits
                                   of their split, else their whole time */
    int64_t unexplained_ns; /* what the waits the graph does not explain cost it: |the step
                               replayed with them kept - without|, both from the graph's own
                               durations, whatever this replay scales (0 when not measured,
                               or not asked for: model_replay_opts.step_unexplained) */
    size_t path_first, path_n; /* segments, in time order */
};

struct model_replay {
    const struct model_graph *g; /* borrowed */
    int64_t *start, *end;        /* per task, ns, replay clock (rank 0's) */
    int64_t *gap;                /* per task, ns: the host work before it in this replay */
    struct model_replay_step *steps;
    size_t n_steps;
    struct model_replay_segment *segments;
    size_t n_segments;
    double mean_abs_error_pct, max_abs_error_pct; /* over steps that are not partial (and the
                                                     measured steps of ranks folded into theirs) */
    size_t n_scored;
    size_t forced; /* tasks scheduled ahead of a dependency cycle (0 when all is well) */
    size_t split_from[MODEL_WAIT_FROM_COUNT]; /* kept collectives split, by where the transfer
                                                 came from (the options' waits) */
};

/* Each task's duration and the host gap before it (n_tasks each) as the
 * options' factors and overrides make them: what a replay with them runs. */
int model_replay_durations(const struct model_graph *g, const struct model_replay_opts *o, int64_t *dur,
                           int64_t *gap, struct sc_error *err);

/* The most work a replay counts: every task's duration and gap summed
 * (2^60 ns, about 36 years; past any step a question is about, and below
 * common/checked.h's SC_SAT_MAX, so a synthesised duration that saturated
 * is refused here). With the latest resource origin (at most 2^62 ns),
 * each end time the replay forms is below that plus one edge latency (at
 * most 2^31 ns) a task, so int64 never overflows. A graph (or factors)
 * past either is SC_ELIMIT, a negative duration or gap (a factor that
 * overflowed) SC_EINVAL. */
#define MODEL_REPLAY_MAX_WORK_NS 1.152921504606846976e18
#define MODEL_REPLAY_MAX_ORIGIN_NS 4.611686018427387904e18

int model_replay_run(const struct model_graph *g, const struct model_replay_opts *o,
                     struct model_replay **out, struct sc_error *err);
void model_replay_free(struct model_replay *r); /* NULL-safe */

/* Replay g with o and average the steps that use[] marks (per graph step:
 * a replay's steps are the graph's, in its order): *mean the replayed
 * step, ns; with idle, *idle the time in it that no GPU work runs (neither
 * compute nor communication). Both 0 when no step is marked. With each,
 * each[s] the replayed step s, ns, for every graph step. */
int model_replay_mean_step(const struct model_graph *g, const struct model_replay_opts *o, const uint8_t *use,
                           int64_t *mean, int64_t *idle, int64_t *each, struct sc_error *err);

/* The replayed time of step s of r, the k-th step of its rank, for rank
 * f folded into that rank (graph.h, model_graph_folding): the
 * representative's, less how much later f entered its first step. */
int64_t model_replay_folded_ns(const struct model_replay *r, size_t s, size_t k, const struct model_folded_rank *f);

/* The step of r that replays longest (the first of equals): the one an
 * estimate's step time and breakdown are. NULL when r has no step. */
const struct model_replay_step *model_replay_slowest(const struct model_replay *r);

/* Just the simulation: fill start[] and end[] (n_tasks each) with the
 * factors and overrides applied; *forced gets the number of tasks scheduled ahead of a
 * dependency cycle. For benchmarks and callers that need no per-step
 * results. */
int model_replay_simulate(const struct model_graph *g, const struct model_replay_opts *o,
                          int64_t *start, int64_t *end, size_t *forced, struct sc_error *err);

#endif
