/* estimator/synth/invariants.c: the physical invariants every estimate keeps
 * (invariants.h). */
#include "estimator/synth/invariants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/costs/collective_model.h"
#include "estimator/spec/flops.h"
#include "estimator/spec/memory.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "common/banned.h"

/* Rounding: task durations are whole nanoseconds, figures rounded on the
 * way out. */
#define SLACK_NS 1.0
#define SLACK_REL 1e-6

double synth_wire_factor(enum model_coll_op op, int n, int in_switch)
{
    if (n < 2)
        return 0;
    double f = cost_coll_bus_factor(op, n);
    return in_switch && op == MODEL_COLL_ALLREDUCE ? f / 2 : f;
}

/* The dtype a kernel of family `sub` runs in: attention keeps bf16 under
 * the fp8 and fp4 recipes. */
static enum hw_dtype task_dtype(const struct est_spec *s, int sub)
{
    enum hw_dtype d = s->options.dtype;
    return sub == MODEL_KF_ATTENTION && (d == HW_FP8 || d == HW_FP4) ? HW_BF16 : d;
}

/* Every task with FLOPs at least its FLOPs over the ceiling (a merged
 * task, at other details, over the faster of its dtypes'). */
static int check_tasks_flops(const struct est_spec *s, const struct hw_profile *hw, const struct model_graph *g,
                             struct sc_error *err)
{
    for (size_t k = 0; k < g->n_parts; k++) {
        const struct model_task *t = &g->tasks[g->parts[k].task];
        double f = g->parts[k].flops;
        if (!(f > 0))
            continue;
        double ceiling = fmax(cost_hw_matmul_ceiling_tflops(hw, task_dtype(s, t->sub)),
                              cost_hw_matmul_ceiling_tflops(hw, s->options.dtype));
        double least_ns = f / (ceiling * 1e12) * 1e9;
        if ((double)t->dur + SLACK_NS < least_ns * (1 - SLACK_REL))
            return sc_error_set(err, SC_EINTERNAL,
                                "invariant broken: task '%s' runs %.4g FLOPs in %.0f ns, faster than %s's "
                                "%.1f TFLOP/s matmul ceiling allows (%.0f ns)",
                                model_graph_str(g, g->src ? g->src[g->parts[k].task].name : 0), f,
                                (double)t->dur, hw->id, ceiling, least_ns);
    }
    return SC_OK;
}

/* Every collective at least its bytes on the wire over all of a GPU's
 * links at once (a group across domains moves data over NVLink and the
 * network together). */
static int check_collectives(const struct est_spec *s, const struct hw_profile *hw, const struct model_graph *g,
                             struct sc_error *err)
{
    double link = fmax(hw->nvlink_gbps, s->cluster.intra_node_gbps) + fmax(hw->network_gbps, s->cluster.inter_node_gbps);
    int in_switch = hw->nvls || hw->ib_sharp;
    for (size_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (t->cls != MODEL_TASK_COMM || t->group == MODEL_NONE)
            continue;
        const struct model_coll_group *grp = &g->groups[t->group];
        if (grp->bytes <= 0)
            continue;
        double wire = (double)grp->bytes * synth_wire_factor((enum model_coll_op)grp->op, (int)grp->size, in_switch);
        double least_ns = wire / (link * 1e9) * 1e9;
        if ((double)t->dur + SLACK_NS < least_ns * (1 - SLACK_REL))
            return sc_error_set(err, SC_EINTERNAL,
                                "invariant broken: a %s of %lld bytes over %u ranks takes %.0f ns, less than "
                                "its %.0f ns on a %.0f GB/s link",
                                model_coll_op_name((enum model_coll_op)grp->op), (long long)grp->bytes,
                                grp->size, (double)t->dur, least_ns, link);
    }
    return SC_OK;
}

/* Each rank's step at least the work of each of its GPU streams. */
static int check_streams(const struct model_graph *g, const struct model_replay *rp, struct sc_error *err)
{
    for (size_t q = 0; q < g->n_res; q++) {
        const struct model_resource *res = &g->res[q];
        if (!res->gpu)
            continue;
        int64_t busy = 0;
        for (uint32_t t = res->first; t != MODEL_NONE; t = g->next[t])
            busy += g->tasks[t].dur;
        for (size_t k = 0; k < rp->n_steps; k++)
            if (rp->steps[k].rank == res->rank && (double)rp->steps[k].replayed_ns + SLACK_NS < (double)busy)
                return sc_error_set(err, SC_EINTERNAL,
                                    "invariant broken: pipeline rank %u's step of %.3f ms is shorter than the "
                                    "%.3f ms of work on its stream '%s'",
                                    (unsigned)res->rank, (double)rp->steps[k].replayed_ns / 1e6, (double)busy / 1e6,
                                    model_graph_str(g, res->label));
    }
    return SC_OK;
}

/* The figures of the estimate against the FLOPs executed. */
static int check_figures(const struct est_spec *s, const struct hw_profile *hw, const struct est_estimate *e,
                         const struct model_graph *g, struct sc_error *err)
{
    double tokens = (double)(s->parallel.global_batch * s->model.seq);
    double formula = spec_hardware_flops_per_token(s) * tokens;
    double executed = synth_graph_flops(g, s);
    if (fabs(executed / formula - 1) > 0.01)
        return sc_error_set(err, SC_EINTERNAL,
                            "invariant broken: the step's tasks execute %.6g FLOPs, the hardware-FLOP formula "
                            "says %.6g (%+.2f%%)",
                            executed, formula, 100 * (executed / formula - 1));
    double peak = hw->peak_tflops[s->options.dtype];
    double share = cost_hw_matmul_ceiling_tflops(hw, s->options.dtype) / peak;
    if (e->executed_flops_util > share * (1 + SLACK_REL) + 1e-6)
        return sc_error_set(err, SC_EINTERNAL,
                            "invariant broken: executed_flops_util %.4f above %s's %s matmul ceiling, %.4f of peak",
                            e->executed_flops_util, hw->id, cost_hw_dtype_name(s->options.dtype), share);
    /* MFU counts attention's whole square: beyond the ceiling by that alone */
    struct est_spec plain = *s;
    plain.options.recompute = EST_RECOMPUTE_NONE;
    plain.options.moe_capacity_factor = 0;
    double mfu_most = share * spec_model_flops_per_token(&s->model) / spec_hardware_flops_per_token(&plain);
    if (e->mfu > mfu_most * (1 + SLACK_REL) + 1e-6)
        return sc_error_set(err, SC_EINTERNAL, "invariant broken: mfu %.4f above %.4f, the ceiling's share %.4f "
                                               "with causal attention's masked half",
                            e->mfu, mfu_most, share);
    return SC_OK;
}

int synth_invariants_check(const struct est_spec *spec, const struct hw_profile *hw, const struct est_costs *c,
                         const struct est_estimate *e, struct sc_error *err)
{
    struct est_spec resolved; /* recompute auto: what it chose */
    const struct est_spec *s = &resolved;
    struct model_graph *g = NULL;
    struct model_replay *rp = NULL;
    struct model_replay_opts ro;
    int rc;
    if ((rc = spec_memory_resolve_recompute(spec, hw->hbm_gb, &resolved, err)) ||
        (rc = synth_build(s, hw, c, EST_DETAIL_KERNEL, &g, err)))
        return rc;
    model_replay_opts_steps(&ro);
    if (!(rc = model_replay_run(g, &ro, &rp, err)) && !(rc = check_tasks_flops(s, hw, g, err)) &&
        !(rc = check_collectives(s, hw, g, err)) && !(rc = check_streams(g, rp, err)))
        rc = check_figures(s, hw, e, g, err);
    model_replay_free(rp);
    model_graph_free(g);
    return rc;
}
