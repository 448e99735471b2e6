/* estimator/whatif/graph_copy.h: a new graph made from a built one through the
 * graph-building API (model/graph_builder.h), with other durations and
 * host gaps and with tasks inserted, so that a what-if replays a changed
 * step while the source graph stays as it was (graphs are immutable).
 *
 * Everything else is copied as it is: ranks, resources, every task's
 * class, name, source event and tag, every edge, the steps, the collective
 * groups, merged tasks' communication (at most a task's new duration), the
 * job the graph came from. With the source's own durations the
 * copy replays exactly as the source does. */
#ifndef ESTIMATOR_GRAPH_COPY_H
#define ESTIMATOR_GRAPH_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct model_graph;

/* A task added right after source task `after` on its resource (a GPU
 * stream runs it when the work before it there is done); or, with
 * `side`, on a communication stream of the rank's own that the copy adds
 * (one per rank, its tasks in the order of the tasks they follow), where
 * it starts once `after` and the stream's earlier tasks are done. With
 * `has_before`, source task `before` waits for it too. */
struct graph_insert {
    uint32_t after;
    int cls, sub;    /* enum model_task_class and its refinement */
    int64_t dur;     /* ns */
    const char *name;
    int side, has_before;
    uint32_t before;
};

/* Copy g with dur[i] and gap[i] (ns, >= 0) for each source task and the
 * inserted tasks ins[0..n_ins) (several may follow one task: in the order
 * given). *map (may be NULL; malloc'd) gets each source task's id in the
 * copy. */
int whatif_graph_copy(const struct model_graph *g, const int64_t *dur, const int64_t *gap, const struct graph_insert *ins,
               size_t n_ins, struct model_graph **out, uint32_t **map, struct sc_error *err);

#endif
