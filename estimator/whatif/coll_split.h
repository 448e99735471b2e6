/* estimator/whatif/coll_split.h: collectives with untraced peers (of a single
 * traced rank, or of k of a job's N ranks) split into the transfer and
 * the wait for those peers their traced time holds, for the what-if
 * (whatif.h) and the replay (model/replay.h waits) alike.
 *
 * A collective kept for untraced peers (model/graph.h) lasts, in the
 * trace, its transfer plus the time the traced rank waited for the last
 * peer to arrive. Its transfer is the collective model's time for its size
 * on the traced GPU, at most its traced time; where the trace gives no
 * size, the traced time of the least-waiting instance of that collective
 * (the shortest on its rank with its name and layout: the one whose peers
 * arrived first), at most its own. The wait is the rest. A collective that
 * every rank traced was cut to its transfer when the graph was built: all
 * transfer. A collective the model cannot time (its kind, or a group of
 * one) stays whole: all transfer. */
#ifndef ESTIMATOR_COLL_SPLIT_H
#define ESTIMATOR_COLL_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/collective_model.h"
#include "model/replay.h"

struct model_graph;

/* What the caller knows of communication task i. */
struct coll_split_in {
    int kind;               /* the kind the model times it as (enum model_coll_op); -1: not modelled */
    struct coll_group group; /* its layout */
    int64_t bytes;          /* its size (nccl-tests convention), or -1 when unknown */
    int key;                /* instances of one collective share rank, name and key */
};
typedef void (*coll_split_layout_fn)(void *ctx, uint32_t task, struct coll_split_in *in);

struct coll_split {
    double *transfer, *wait; /* per task, ns; 0 for tasks that are no communication */
    double *bytes;           /* per task: a modelled one's size, from the model when the trace gives none */
    int *kind;               /* per task: the kind the model times, or -1 */
    uint8_t *from;           /* per task: a split kept one's enum model_wait_from */
    int sizes_unknown;       /* some size came from the model (the trace gives none) */
};

/* The split of g's communication tasks, each as layout() says, timed with
 * p. Release with whatif_coll_split_release(). */
int whatif_coll_split_run(const struct model_graph *g, const struct coll_params *p, coll_split_layout_fn layout,
                   void *ctx, struct coll_split *out, struct sc_error *err);
void whatif_coll_split_release(struct coll_split *s);

/* One collective's time, us: 0 for a group of one, -1 when the model
 * cannot time it. */
double whatif_coll_split_us(const struct coll_params *p, int kind, struct coll_group gr, double bytes);

/* How many ranks kept collective i of g takes part among, as the replay's
 * split times it: its group's size where the trace gives one (model/graph.h),
 * else `world`, its trace's distributedInfo.world_size (its peers, traced
 * or not, taken to be the whole job); -1 when neither says. */
int64_t whatif_coll_split_kept_ranks(const struct model_graph *g, uint32_t i, int64_t world);

/* The waits of g's kept collectives for a replay (model/replay.h), the
 * model on the traced GPU's profile, each collective's group
 * whatif_coll_split_kept_ranks, its members packed into NVLink domains. Without a
 * profile for the traced GPU, or a group size, nothing is split. *out from
 * malloc (NULL when *n is 0). */
int whatif_coll_split_waits(const struct model_graph *g, struct model_coll_wait **out, size_t *n, struct sc_error *err);

#endif
