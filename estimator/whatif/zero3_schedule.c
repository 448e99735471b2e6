/* estimator/whatif/zero3_schedule.c: ZeRO-3's collectives on a traced
 * step's units, in the estimator's order (zero3_schedule.h). */
#include "estimator/whatif/zero3_schedule.h"

#include "common/error.h"
#include "estimator/whatif/coll_placement.h"
#include "model/collective.h"
#include "model/graph.h"
#include "common/banned.h"

static double unit_params(const struct zero3_params *p, int kind)
{
    return kind == COLL_UNIT_LAYER ? p->layer : kind == COLL_UNIT_EMBEDDING ? p->embedding : p->output;
}

int whatif_zero3_schedule(const struct coll_grads *c, const struct zero3_params *p, int prefetch,
                          int (*emit)(void *ctx, const struct zero3_coll *c), void *ctx)
{
    uint32_t free_at = MODEL_NONE, grads_after = MODEL_NONE;
    double grads = 0, grads_times = 1;
    int rc = SC_OK;
    for (size_t k = 0; k < c->n_units && !rc; k++) {
        const struct coll_unit *u = &c->units[k];
        uint32_t freed = prefetch ? free_at : u->prev;
        double params = unit_params(p, u->kind), times = u->kind == COLL_UNIT_LAYER ? p->layers_per_unit : 1;
        free_at = u->prev;
        if (params > 0) {
            /* at the step's start, after the host's first launch */
            uint32_t after = freed == MODEL_NONE ? c->start : freed;
            rc = emit(ctx, &(struct zero3_coll){after, u->first == after ? MODEL_NONE : u->first,
                                                MODEL_COLL_ALLGATHER, params, times});
        }
        if (!rc && grads > 0)
            rc = emit(ctx, &(struct zero3_coll){grads_after, c->optimizer_begin, MODEL_COLL_REDUCESCATTER, grads,
                                                grads_times});
        grads = 0;
        if (u->backward) {
            grads = params;
            grads_times = times;
            grads_after = u->last == MODEL_NONE ? c->start : u->last;
        }
    }
    if (!rc && grads > 0)
        rc = emit(ctx, &(struct zero3_coll){grads_after, c->optimizer_begin, MODEL_COLL_REDUCESCATTER, grads,
                                            grads_times});
    return rc;
}
