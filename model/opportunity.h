/* model/opportunity.h: what would shorten a job's step, ranked.
 *
 * Each opportunity is a change of durations (replay.h factors or
 * overrides) whose saving is measured by replaying the graph with it, never
 * by arithmetic alone: both the baseline and the changed replay keep the
 * waits the trace does not explain (keep_unexplained), so the baseline is
 * the measured step. The changes: the network infinitely fast (comm=0) and
 * 2x faster (comm=0.5), host overhead halved (cpu=0.5), launch overhead
 * gone (launch=0, as CUDA graphs give), each of the ten kernel families
 * with the most time 2x faster (family:F=0.5, with the saving at x0 as its
 * bound), stragglers removed (every kernel matched across ranks by name
 * and order at its median duration; jobs of several ranks) and the
 * unexplained waits removed. Beside each saving, its Amdahl bound: the
 * time the change takes out of the work it acts on per step, on the rank
 * where that is most (ranks that wait for each other save together), which
 * no saving should exceed. Steps are means over (rank, step), a folded
 * job's over all its ranks (graph.h, model_graph_folding), folded or not. */
#ifndef MODEL_OPPORTUNITY_H
#define MODEL_OPPORTUNITY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/graph.h"

struct model_opportunity {
    char name[80];     /* "network infinitely fast", "gemm kernels 2x faster" */
    char resource[16]; /* communication, host, launch, gpu, unexplained */
    char change[48];   /* what was changed, in --scale words: "comm=0", "family:gemm=0.5",
                          "stragglers=median", "unexplained=0" */
    int64_t saving_ns; /* baseline step minus the changed one (may be negative) */
    int64_t bound_ns;  /* the time the change takes out of the work it acts on */
    int64_t saving_at_zero_ns; /* kernel families: the saving with them at x0; -1 otherwise */
};

struct model_opportunities {
    int64_t step_ns;     /* the baseline: mean replayed step, waits kept */
    int64_t actionable_ns; /* the baseline less the step with every actionable change
                              applied together and replayed: the network 2x faster,
                              host overhead halved, launch overhead gone, each family
                              listed 2x faster, stragglers removed (not the bounds:
                              network infinitely fast, families at x0; not the
                              unexplained waits, which need more ranks traced) */
    int64_t gpu_idle_ns; /* mean time per step that no GPU work runs on a rank */
    size_t n_ranks;      /* the job's ranks, those folded into others included */
    struct model_opportunity *v; /* sorted by saving, largest first */
    size_t n;
};

/* Whether the change (model_opportunity.change) counts in actionable_ns:
 * all but the bound comm=0 and the unexplained waits' unexplained=0. */
int model_opportunity_actionable(const char *change);

/* Replay g with each change, its kept collectives split by waits (NULL:
 * none, replay.h) in every replay, so that comm=F re-times transfers alone.
 * SC_EINVAL when the graph has no step. */
struct model_coll_waits;
int model_opportunities_find(const struct model_graph *g, const struct model_coll_waits *waits,
                             struct model_opportunities *out, struct sc_error *err);
void model_opportunities_release(struct model_opportunities *o);

#endif
