/* model/diff.h: two runs of one program, before (A) and after (B) a
 * change: how their steps differ and why.
 *
 * Ranks are matched by their order in each job; on each rank, steps by
 * their order among the steps that are not partial, and GPU work
 * (kernels, copies, sets) and CPU work (runtime calls and host tasks) by
 * name and their order among the tasks of that name. a and b are the means of
 * the matched steps, each job replayed with its unexplained waits kept (so
 * both are their measured steps).
 *
 * Each side is replayed with its kept collectives split into transfer and
 * wait (model/replay.h waits; none given: each kept whole as transfer).
 * The difference is attributed by replaying A with B's durations one
 * category at a time, in this fixed order, each part being the change in
 * A's mean step the category makes on top of those before it (sequential
 * attribution: the parts telescope, so they sum to the difference):
 *   compute:<family>  matched kernels of each kernel family (the family
 *                     order of kernel_family.h), B's durations
 *   communication     matched communication kernels, B's transfer times
 *                     (of a collective kept for untraced peers: B's transfer,
 *                     A's wait, as the sides' splits say, replay.h)
 *   peer_waits        matched collectives kept for untraced peers: B's waits
 *   copies            matched copies and sets on GPU streams
 *   host              matched CPU work: B's durations
 *   idle              matched CPU work: B's host gaps before it (a thread's
 *                     time outside any op it records: Python, data loading)
 *   unexplained       matched GPU tasks: B's unexplained waits where A had one
 *   removed           A's kernels with no match in B, at no cost
 *   added             B's kernels with no match in A, measured on B: B's
 *                     step less B's with them at no cost
 *   unmatched         the rest: B's step less A's with all of the above,
 *                     less `added`: waits B has where A had none, and what
 *                     the two graphs' structure (edges, latencies) makes
 *                     differ
 * Idle time is no input of a replay: it changes as the parts above do. */
#ifndef MODEL_DIFF_H
#define MODEL_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/graph.h"

#define MODEL_DIFF_NAME_MAX 160

struct model_diff_part {
    char category[40]; /* "compute:gemm", "communication", ..., "unmatched" */
    int64_t ns;
    int64_t *each;     /* per matched (rank, step) pair, in the order of step_ordinal: the part on
                          that pair's steps (ns is their mean, up to rounding) */
};

/* Kernels by name: added (B only), removed (A only) or re-timed (matched,
 * their total time changed). */
struct model_diff_kernel {
    char name[MODEL_DIFF_NAME_MAX];
    size_t count;       /* instances (matched pairs, for re-timed) */
    int64_t a_ns, b_ns; /* total time in A and in B, per (rank, step) of each */
};

struct model_diff {
    int64_t a_ns, b_ns;   /* mean matched step of each */
    size_t steps;         /* matched (rank, step) pairs */
    uint32_t *step_ordinal; /* per pair: its steps' place among its rank's matched steps (the
                               job's step, for intervals over steps) */
    struct model_diff_part *parts; /* in the order above; sum = b_ns - a_ns */
    size_t n_parts;
    struct model_diff_kernel *added, *removed, *retimed; /* by time, most first */
    size_t n_added, n_removed, n_retimed;
};

/* The method, as reports state it. */
#define MODEL_DIFF_METHOD                                                                                       \
    "sequential: A replayed with B's durations one category at a time in a fixed order (compute by kernel "  \
    "family, communication, peer waits, copies, host, idle, unexplained, removed), each part the change it makes; " \
    "added: B's step " \
    "less B's without its unmatched kernels; unmatched is the rest, so the parts sum to the difference"

/* Re-timed kernels: matched kernels whose total time changed by at least
 * this fraction, at most MODEL_DIFF_MAX_KERNELS of each list. */
#define MODEL_DIFF_RETIMED_FRAC 0.05
#define MODEL_DIFF_MAX_KERNELS 20

/* SC_EINVAL when the two have no step to match. */
struct model_coll_waits;
int model_diff_run(const struct model_graph *a, const struct model_coll_waits *wa, const struct model_graph *b,
                   const struct model_coll_waits *wb, struct model_diff *out, struct sc_error *err);
void model_diff_release(struct model_diff *d);

#endif
