/* estimator/whatif/whatif_host.c: the traced host's time as a what-if carries
 * it over (whatif_host.h): the profiler's cost taken off, the MLP
 * activation's operators, the pace of a rebuilt schedule's dispatches. */
#include "estimator/whatif/whatif_host.h"

#include <math.h>

#include "estimator/calibrate/cost_set.h"
#include "estimator/synth/synth.h"
#include "estimator/whatif/coll_placement.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/whatif_price.h"
#include "model/graph.h"
#include "common/banned.h"

/* The profiler's share of the time the traced host spends inside the
 * operators torch.profiler records (Kineto's cpu_op events, structure.h
 * host_ops): it instruments each, and a host that runs an operator slower
 * runs that instrumentation slower too. The what-if answers the step as the
 * job runs without the profiler, so each host gap loses, per operator that
 * began in it, this share of the host's mean time inside an operator.
 * 0.60: the one share at which the H100's host-bound traced step of
 * data/calibration/torch-steps (gpt-h1024-s1024-b8, replayed at 27.01 ms)
 * comes out at the 24.24 ms measured without the profiler (4.3 us per
 * operator on that host, 2.7 on the H200's), fitted on the H100's table alone and checked on
 * the H200's (tests/whatif_steps.py; docs/lab/what-if-on-traced-jobs.md).
 * PyTorch's maintainers report the same order: "4 us per op on CUDA"
 * (pytorch/pytorch#82793). */
#define PROFILER_SHARE 0.60

/* The profiler's cost per recorded operator on the traced host, ns. */
static double profiler_op_ns(const struct job_structure *st)
{
    return st->host_ops_total ? PROFILER_SHARE * st->host_ops_ns / (double)st->host_ops_total : 0;
}

/* The traced host's time for one operator as the what-if runs it: its
 * mean time inside the operators the profiler recorded, less the
 * profiler's cost (whatif_host_unprofile) unless the target runs profiled,
 * ns. */
static double host_op_ns(const struct job_structure *st, int profiled)
{
    return st->host_ops_total ? st->host_ops_ns / (double)st->host_ops_total - (profiled ? 0 : profiler_op_ns(st))
                              : 0;
}

/* The operators eager PyTorch records for one layer's MLP activation,
 * forward or backward (the operator counts of the traces of
 * data/calibration/torch-steps, the GPT's against the Llama's): GELU runs
 * aten::gelu forward and, backward, the engine's call, GeluBackward0 and
 * aten::gelu_backward; SwiGLU on one GEMM's chunked output runs
 * aten::chunk, its split, two narrows, two slices and two as_strided
 * views, the silu and the multiply forward, and backward the engine's call
 * and node of the multiply (two aten::mul), of the silu (silu_backward)
 * and of the split (the halves' aten::cat). 0 for another stack: a fused
 * activation's host work is the traced job's own. */
static int activation_ops(const struct job_config *c, int backward)
{
    if (!c->has_framework || c->framework != EST_FRAMEWORK_PYTORCH)
        return 0;
    return whatif_gated(c) ? 10 : backward ? 3 : 1;
}

/* The kernels of one layer's MLP activation, forward or backward
 * (whatif_activation_us): eager SwiGLU's two forward and four backward,
 * one for GELU or a fused activation. */
static int activation_kernels(const struct job_config *c, int backward)
{
    return whatif_gated(c) && c->has_framework && c->framework == EST_FRAMEWORK_PYTORCH ? (backward ? 4 : 2) : 1;
}

void whatif_host_activation(const struct model_graph *g, const struct job_structure *st,
                            const struct coll_placement *pl, const struct job_config *b, const struct job_config *t,
                            int profiled, double r, double *dur, double *gap)
{
    double per = host_op_ns(st, profiled);
    for (uint32_t i = 0; i < g->n_tasks && pl->mlp_activation && per > 0; i++) {
        int pass = pl->mlp_activation[i];
        if (!pass)
            continue;
        int bwd = pass == COLL_MLP_BACKWARD, o0 = activation_ops(b, bwd), o1 = activation_ops(t, bwd);
        int k0 = activation_kernels(b, bwd), k1 = activation_kernels(t, bwd);
        if (!o0 || !o1 || (o0 == o1 && k0 == k1))
            continue;
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
            uint32_t c = g->edges[e].from;
            if (g->edges[e].kind != MODEL_EDGE_LAUNCH || !st->host_ops[c])
                continue;
            double d = (double)st->host_ops[c] * ((double)o1 / (double)o0 - 1) * per;
            gap[c] = fmax(0, gap[c] + d * (st->layer[c] >= 0 ? r : 1));
            dur[c] *= (double)k1 / (double)k0;
        }
    }
}

double whatif_host_unprofile(const struct model_graph *g, const struct job_structure *st, double *gap)
{
    double per = profiler_op_ns(st), cut = 0;
    for (uint32_t i = 0; i < g->n_tasks && per > 0 && st->host_ops; i++)
        if (st->host_ops[i]) {
            double c = fmin(gap[i], (double)st->host_ops[i] * per);
            gap[i] -= c;
            cut += c;
        }
    return cut / 1e6 / (double)(g->n_steps ? g->n_steps : 1);
}

/* Host work per step of graph g: every host thread's calls and the work
 * between them, the mean over ranks and steps, ns. */
static double host_ns_per_step(const struct model_graph *g)
{
    double ns = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (!g->res[t->res].gpu && (t->cls == MODEL_TASK_CALL || t->cls == MODEL_TASK_HOST))
            ns += (double)t->dur + (double)t->gap;
    }
    size_t steps = g->n_steps ? g->n_steps : 1;
    return ns / (double)steps;
}

/* c's host time per operation scaled by the traced step's host work over
 * that of the base configuration's step synthesised with c: an eager step
 * dispatches more per operation than Megatron's; a step synthesised under
 * other defaults, what they had. */
double whatif_host_op_us(const struct model_graph *g, const struct job_config *b, const struct hw_profile *hw0,
                         double profiler_ns, const struct est_costs *c)
{
    struct est_spec bs;
    struct model_graph *sg = NULL;
    struct sc_error ignored;
    double traced = fmax(0, host_ns_per_step(g) - profiler_ns), synth = 0;
    if (spec_job_config_spec(b, hw0->id, &bs, &ignored) || synth_unnamed(&bs, hw0, c, EST_DETAIL_KERNEL, &sg, &ignored))
        return c->host_op_us;
    synth = host_ns_per_step(sg);
    model_graph_free(sg);
    return synth > 0 && traced > 0 ? c->host_op_us * traced / synth : c->host_op_us;
}
