/* tests/bench/bench_plan.c: the planner's speed on one core, inside the
 * process (no start-up, no output).
 *
 *   bench-plan SPEC GPUS [DUMP]
 *
 * Plans SPEC on GPUS GPUs with the estimator's evaluator, best of 5 by
 * CPU time (CLOCK_PROCESS_CPUTIME_ID), and splits the time: the
 * evaluations (each a full estimate), the bounds (the cheap one of every
 * feasible combination and the tighter ZeRO-3 one of those it leaves),
 * and the rest (the spec and memory checks of every combination,
 * ordering, the top K). Prints
 * configurations evaluated per second of the whole plan and per second of
 * evaluating.
 *
 * Then, once, the same search with the bound off (nothing pruned, as the
 * planner's brute-force test runs it): every configuration that passes the
 * checks and fits is evaluated, and it prints evaluations per second of
 * that whole run's CPU time, the evaluation rate at scale. The pruned plan
 * is what `stepcast plan` runs; this run is for the rate only. With DUMP,
 * that run also writes every configuration it evaluates and every figure
 * of its estimate, exactly (C99 hex floats), one line each, to the file
 * DUMP: two builds whose dumps are the same file estimate that space alike
 * (the dump's time counts in the rate, so time without it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "estimator/plan/plan.h"
#include "common/banned.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The bound-off run's evaluator with DUMP: every estimate written out. */
struct dumping {
    struct est_plan_evaluator inner;
    FILE *f;
};

static int dump_eval(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    struct dumping *d = ctx;
    const struct est_parallel *p = &s->parallel;
    const struct est_options *o = &s->options;
    const struct model_breakdown *b = &out->breakdown;
    int rc = d->inner.evaluate(d->inner.ctx, s, out, err);
    if (rc)
        return rc;
    fprintf(d->f,
            "tp %lld cp %lld pp %lld dp %lld ep %lld mb %lld sched %d vpp %lld rc %d sp %d zero %lld: "
            "step %a tok %a mfu %a hfu %a mem %a %s fits %d \"%s\" breakdown %lld %lld %lld %lld %lld %lld "
            "gpus %a gh %a kwh %a usd %a days %a tasks %zu stages",
            (long long)p->tp, (long long)p->cp, (long long)p->pp, (long long)p->dp, (long long)p->ep,
            (long long)p->micro_batch, (int)p->schedule, (long long)p->vpp, (int)o->recompute,
            o->sequence_parallel, (long long)o->zero_stage, out->step_ms, out->tokens_per_s, out->mfu, out->hfu,
            out->memory_gb_per_gpu, out->memory_attention, out->fits, out->fits_reason,
            (long long)b->compute_exposed, (long long)b->overlap, (long long)b->comm_exposed,
            (long long)b->unexplained, (long long)b->host, (long long)b->idle, out->gpus,
            out->gpu_hours_per_m_tokens, out->energy_kwh_per_m_tokens, out->cost_usd_per_m_tokens,
            out->time_to_train_days, out->tasks);
    for (size_t i = 0; i < out->n_stages; i++)
        fprintf(d->f, " %d %a %a %a", out->stages[i].stage, out->stages[i].step_ms, out->stages[i].memory_gb,
                out->stages[i].bubble_ms);
    fputc('\n', d->f);
    return SC_OK;
}

struct timed {
    struct est_plan_evaluator inner;
    double eval_s, bound_s;
};

static int timed_eval(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    struct timed *t = ctx;
    double t0 = cpu_now();
    int rc = t->inner.evaluate(t->inner.ctx, s, out, err);
    t->eval_s += cpu_now() - t0;
    return rc;
}

/* The cheap bound and the refined one, their time counted: a bound that
 * started at t0 and returned rc. */
static int bounded(struct timed *t, double t0, int rc)
{
    t->bound_s += cpu_now() - t0;
    return rc;
}

static int timed_bound(void *ctx, const struct est_spec *s, double *ms, struct sc_error *err)
{
    struct timed *t = ctx;
    double t0 = cpu_now();
    return bounded(t, t0, t->inner.bound(t->inner.ctx, s, ms, err));
}

static int timed_refine(void *ctx, const struct est_spec *s, double enough_ms, double *ms, struct sc_error *err)
{
    struct timed *t = ctx;
    double t0 = cpu_now();
    return bounded(t, t0, t->inner.refine(t->inner.ctx, s, enough_ms, ms, err));
}

int main(int argc, char **argv)
{
    struct est_plan_request req;
    struct est_plan_estimator est;
    struct sc_error err;
    char *text = NULL;
    size_t n = 0, cap = 0;
    FILE *f;
    if ((argc != 3 && argc != 4) || !(f = fopen(argv[1], "r"))) {
        fprintf(stderr, "usage: bench-plan SPEC GPUS [DUMP]\n");
        return 2;
    }
    for (size_t got = 1; got;) {
        if (n + 4096 > cap && !(text = realloc(text, cap = 2 * cap + 4096)))
            return 1;
        got = fread(text + n, 1, cap - n, f);
        n += got;
    }
    fclose(f);
    memset(&req, 0, sizeof req);
    if (plan_parse_spec(text, n, &req, &err) || spec_check_gpu(&req.spec, &est.hw, &err)) {
        fprintf(stderr, "bench-plan: %s\n", err.msg);
        return 1;
    }
    free(text);
    req.gpus = atoll(argv[2]);
    req.top = 10;
    calib_costs_default(est.hw, &req.spec, &est.costs);
    struct timed best = {0};
    double best_total = -1;
    struct est_plan plan;
    for (int i = 0; i < 5; i++) {
        struct timed t = {0};
        plan_evaluator_estimate(&est, &t.inner);
        struct est_plan_evaluator ev = {timed_eval, timed_bound, &t, timed_refine};
        double t0 = cpu_now();
        if (plan_run(&req, &ev, NULL, NULL, &plan, &err)) {
            fprintf(stderr, "bench-plan: %s\n", err.msg);
            return 1;
        }
        double total = cpu_now() - t0;
        if (best_total < 0 || total < best_total) {
            best_total = total;
            best = t;
        }
        if (i < 4)
            plan_release(&plan);
    }
    printf("  space %lld: evaluated %lld, pruned %lld, infeasible: memory %lld, divisibility %lld\n",
           (long long)plan.space, (long long)plan.evaluated, (long long)plan.pruned,
           (long long)plan.infeasible_memory, (long long)plan.infeasible_divisibility);
    printf("  CPU: plan %.1f ms = evaluations %.1f ms + bounds %.1f ms + checks of every combination and the "
           "rest %.1f ms\n",
           best_total * 1e3, best.eval_s * 1e3, best.bound_s * 1e3, (best_total - best.eval_s - best.bound_s) * 1e3);
    printf("  %.0f evaluations per second of the plan, %.0f per second of evaluating (%.2f ms each); "
           "%.0f combinations dealt with per second\n",
           (double)plan.evaluated / best_total, (double)plan.evaluated / best.eval_s,
           best.eval_s * 1e3 / (double)plan.evaluated, (double)plan.space / best_total);
    plan_release(&plan);

    struct est_plan_evaluator all;
    plan_evaluator_estimate(&est, &all);
    all.bound = NULL;
    struct dumping d = {all, NULL};
    if (argc == 4) {
        if (!(d.f = fopen(argv[3], "w"))) {
            fprintf(stderr, "bench-plan: cannot write %s\n", argv[3]);
            return 1;
        }
        all = (struct est_plan_evaluator){dump_eval, NULL, &d, NULL};
    }
    double t0 = cpu_now();
    if (plan_run(&req, &all, NULL, NULL, &plan, &err)) {
        fprintf(stderr, "bench-plan: %s\n", err.msg);
        return 1;
    }
    double total = cpu_now() - t0;
    if (d.f && fclose(d.f)) {
        fprintf(stderr, "bench-plan: cannot write %s\n", argv[3]);
        return 1;
    }
    printf("  bound off (every feasible configuration, one run): evaluated %lld, pruned %lld in %.2f s CPU: "
           "%.0f evaluations per second of the whole run (%.2f ms each)\n",
           (long long)plan.evaluated, (long long)plan.pruned, total, (double)plan.evaluated / total,
           total * 1e3 / (double)plan.evaluated);
    plan_release(&plan);
    return 0;
}
