/* tests/unit/test_plan.c: the planner (estimator/plan/plan.h) against brute
 * force: its bound never exceeds the estimate it bounds, pruning never
 * changes the top rows, rows are sorted, fit and use the GPUs asked for,
 * fixed values stay fixed, and a cancelled search stops (within one
 * evaluation once it evaluates). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/memory.h"
#include "estimator/plan/plan.h"
#include "estimator/synth/synth.h"
#include "tests/check.h"
#include "common/banned.h"

/* 16 GPUs of 8 per node, a small dense model: a few thousand combinations,
 * most of them cheap to estimate. */
static const char dense[] = "{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048,\"vocab\":32000},"
                            "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
/* a long sequence (context parallelism searched) and MoE (expert
 * parallelism searched) on 8 GPUs */
static const char moe_cp[] =
    "{\"model\":{\"layers\":4,\"hidden\":512,\"heads\":8,\"kv_heads\":4,\"seq\":8192,\"vocab\":32000,"
    "\"mlp\":\"swiglu\",\"moe\":{\"experts\":4,\"top_k\":2}},"
    "\"parallel\":{\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
    "\"options\":{\"zero_stage\":1,\"recompute\":\"selective\"}}";

struct fixture {
    struct est_plan_request req;
    struct est_plan_estimator est;
    struct est_plan_evaluator ev;
};

static void setup(struct fixture *f, const char *spec, int64_t gpus, size_t top)
{
    struct sc_error err;
    memset(f, 0, sizeof *f);
    REQUIRE(plan_parse_spec(spec, strlen(spec), &f->req, &err) == SC_OK);
    REQUIRE(spec_check_gpu(&f->req.spec, &f->est.hw, &err) == SC_OK);
    calib_costs_default(f->est.hw, &f->req.spec, &f->est.costs);
    plan_evaluator_estimate(&f->est, &f->ev);
    f->req.gpus = gpus;
    f->req.top = top;
}

/* Evaluates like the estimator, and checks both bounds against each
 * estimate; counts where ZeRO-3's is tighter than the other. */
static int bound_violations, z3_tighter;
static int checked_eval(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    const struct est_plan_estimator *e = ctx;
    struct est_pass_costs pc;
    double lb, z3, half;
    int rc = synth_estimate(s, e->hw, &e->costs, EST_DETAIL_STAGE, out, err);
    if (rc || (rc = synth_bound(s, e->hw, &e->costs, &lb, err)) ||
        (rc = synth_pass_costs(s, e->hw, &e->costs, &pc, err)) ||
        (rc = synth_bound_z3(s, e->hw, &e->costs, &pc, INFINITY, &z3, err)) ||
        (rc = synth_bound_z3(s, e->hw, &e->costs, &pc, z3 / 2, &half, err)))
        return rc;
    bound_violations += lb > out->step_ms + 1e-9;
    bound_violations += z3 > out->step_ms + 1e-9;
    bound_violations += half > z3 || half < z3 / 2; /* stopped early: still a bound, and enough */
    z3_tighter += z3 > lb;
    return rc;
}

static void same_rows(const struct est_plan *a, const struct est_plan *b, size_t n)
{
    REQUIRE(a->n_rows >= n && b->n_rows >= n);
    for (size_t i = 0; i < n; i++) {
        CHECK(memcmp(&a->rows[i].spec.parallel, &b->rows[i].spec.parallel, sizeof a->rows[i].spec.parallel) == 0);
        CHECK(memcmp(&a->rows[i].spec.options, &b->rows[i].spec.options, sizeof a->rows[i].spec.options) == 0);
        CHECK(a->rows[i].estimate.step_ms == b->rows[i].estimate.step_ms);
    }
}

static void brute_force_agrees(const char *spec, int64_t gpus, enum est_objective obj, int up_to)
{
    struct fixture f;
    struct est_plan pruned, all;
    struct sc_error err;
    setup(&f, spec, gpus, 3);
    f.req.objective = obj;
    f.req.up_to = up_to;
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &pruned, &err) == SC_OK);

    /* brute force: every feasible combination evaluated, none pruned */
    struct est_plan_evaluator brute = {checked_eval, NULL, &f.est, NULL};
    bound_violations = z3_tighter = 0;
    f.req.top = EST_PLAN_MAX_TOP;
    REQUIRE(plan_run(&f.req, &brute, NULL, NULL, &all, &err) == SC_OK);
    CHECK_EQ_INT(all.pruned, 0);
    CHECK(all.evaluated > 20);
    CHECK(all.n_rows == (size_t)(all.evaluated < EST_PLAN_MAX_TOP ? all.evaluated : EST_PLAN_MAX_TOP));
    CHECK_EQ_INT(bound_violations, 0);
    CHECK_EQ_INT(pruned.evaluated + pruned.pruned, all.evaluated);
    CHECK_EQ_INT(pruned.infeasible_memory, all.infeasible_memory);
    CHECK_EQ_INT(pruned.infeasible_divisibility, all.infeasible_divisibility);
    CHECK_EQ_INT(pruned.space, all.space);
    CHECK_EQ_INT(all.space, all.evaluated + all.infeasible_memory + all.infeasible_divisibility);
    CHECK(pruned.pruned > 0);
    same_rows(&pruned, &all, 3);

    /* sorted by the objective, every row fits on the GPUs asked for */
    for (size_t i = 0; i < all.n_rows; i++) {
        const struct est_plan_row *r = &all.rows[i];
        CHECK(r->estimate.fits);
        CHECK(up_to ? spec_gpus(&r->spec) <= gpus : spec_gpus(&r->spec) == gpus);
        CHECK(r->spec.parallel.tp <= r->spec.cluster.gpus_per_node);
        CHECK(i == 0 || all.rows[i - 1].objective <= r->objective);
        CHECK(r->objective == (obj == EST_OBJECTIVE_TIME ? r->estimate.step_ms : r->estimate.gpu_hours_per_m_tokens) ||
              (obj == EST_OBJECTIVE_COST &&
               r->objective > r->estimate.gpu_hours_per_m_tokens * (1 - 1e-12) &&
               r->objective < r->estimate.gpu_hours_per_m_tokens * (1 + 1e-12)));
    }
    plan_release(&pruned);
    plan_release(&all);
}

TEST(plan_top_is_the_brute_force_minimum)
{
    brute_force_agrees(dense, 16, EST_OBJECTIVE_TIME, 0);
}

TEST(plan_cost_up_to_is_the_brute_force_minimum)
{
    brute_force_agrees(dense, 16, EST_OBJECTIVE_COST, 1);
}

/* ZeRO-3 on pipelines, where the bound that follows each rank's compute
 * and data-parallel streams prunes: it never exceeds an estimate, and it
 * is tighter than the other bound somewhere (with and without the
 * gathers' prefetch, on a dense and an MoE model) */
TEST(plan_zero3_bound_holds_and_prunes)
{
    static const char *const specs[] = {
        "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":32000},"
        "\"parallel\":{\"global_batch\":64},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
        "\"options\":{\"zero_stage\":3}}",
        "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":32000},"
        "\"parallel\":{\"global_batch\":64},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
        "\"options\":{\"zero_stage\":3,\"overlap_param_gather\":false}}",
        "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":8,\"seq\":2048,\"vocab\":32000,"
        "\"mlp\":\"swiglu\",\"moe\":{\"experts\":4,\"top_k\":2}},"
        "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
        "\"options\":{\"zero_stage\":3}}"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        brute_force_agrees(specs[i], 16, EST_OBJECTIVE_TIME, 0);
        CHECK(z3_tighter > 0);
    }
}

TEST(plan_moe_and_context_parallel_space)
{
    brute_force_agrees(moe_cp, 8, EST_OBJECTIVE_TIME, 0);
    struct fixture f;
    struct est_plan p;
    struct sc_error err;
    int cp = 0, ep = 0;
    setup(&f, moe_cp, 8, 50);
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &p, &err) == SC_OK);
    for (size_t i = 0; i < p.n_rows; i++) {
        const struct est_spec *s = &p.rows[i].spec;
        cp |= s->parallel.cp > 1;
        ep |= s->parallel.ep > 1;
        /* fixed in the spec: never searched */
        CHECK_EQ_INT(s->options.zero_stage, 1);
        CHECK_EQ_INT(s->options.recompute, EST_RECOMPUTE_SELECTIVE);
        CHECK_EQ_INT(s->parallel.global_batch, 8);
    }
    CHECK(cp && ep);
    plan_release(&p);
}

static int stop_early(void *ctx, int64_t done, int64_t total)
{
    int *calls = ctx;
    CHECK(done <= total);
    return ++*calls >= 2;
}

/* The estimator's evaluator, counting its evaluations. */
struct counted {
    struct est_plan_evaluator inner;
    int evaluations;
};

static int counted_eval(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    struct counted *c = ctx;
    c->evaluations++;
    return c->inner.evaluate(c->inner.ctx, s, out, err);
}

static int counted_bound(void *ctx, const struct est_spec *s, double *step_ms, struct sc_error *err)
{
    struct counted *c = ctx;
    return c->inner.bound(c->inner.ctx, s, step_ms, err);
}

static int counted_refine(void *ctx, const struct est_spec *s, double enough_ms, double *step_ms,
                          struct sc_error *err)
{
    struct counted *c = ctx;
    return c->inner.refine(c->inner.ctx, s, enough_ms, step_ms, err);
}

static int stop_after_evaluation(void *ctx, int64_t done, int64_t total)
{
    const struct counted *c = ctx;
    CHECK(done <= total);
    return c->evaluations > 0;
}

TEST(plan_cancel_and_limits)
{
    struct fixture f;
    struct est_plan p;
    struct sc_error err;
    int calls = 0;
    setup(&f, dense, 16, 3);
    CHECK_EQ_INT(plan_run(&f.req, &f.ev, stop_early, &calls, &p, &err), SC_OK);
    CHECK(p.cancelled);
    CHECK_EQ_INT(p.n_rows, 0);
    CHECK_EQ_INT(calls, 2);

    /* a cancel asked for during the evaluations is seen after the next one */
    struct counted c = {.inner = f.ev};
    struct est_plan_evaluator ev = {counted_eval, counted_bound, &c, counted_refine};
    f.req.top = 50;
    CHECK_EQ_INT(plan_run(&f.req, &ev, stop_after_evaluation, &c, &p, &err), SC_OK);
    CHECK(p.cancelled);
    CHECK_EQ_INT(c.evaluations, 1);
    CHECK_EQ_INT(plan_run(&f.req, &ev, NULL, NULL, &p, &err), SC_OK); /* uncancelled: many more */
    CHECK(p.evaluated > 1 && c.evaluations == 1 + p.evaluated);
    plan_release(&p);

    f.req.top = 0;
    CHECK_EQ_INT(plan_run(&f.req, &f.ev, NULL, NULL, &p, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "top");

    /* a space over the cap is refused before any work, with its size known */
    setup(&f, "{\"model\":{\"layers\":500,\"hidden\":8192,\"heads\":64,\"seq\":131072},"
              "\"parallel\":{\"global_batch\":4096},\"cluster\":{\"gpu\":\"h100-sxm\"}}", 65536, 3);
    f.req.up_to = 1;
    CHECK(plan_space(&f.req) > EST_PLAN_MAX_SPACE);
    CHECK_EQ_INT(plan_run(&f.req, &f.ev, NULL, NULL, &p, &err), SC_ELIMIT);

    /* the batch is what a plan keeps: it must be given */
    static const char no_batch[] = "{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                                   "\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    CHECK_EQ_INT(plan_parse_spec(no_batch, strlen(no_batch), &f.req, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "parallel.global_batch");
    static const char bad_key[] = "{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                                  "\"parallel\":{\"global_batch\":8,\"tpp\":2},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    CHECK_EQ_INT(plan_parse_spec(bad_key, strlen(bad_key), &f.req, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "parallel.tpp");
}

/* options.recompute "auto" in the template: each layout with the least
 * recomputation that fits (none, selective, full) and no other, so a third
 * of the space the searched recomputation has; each row the searched
 * plan's row of the same combination. */
TEST(plan_recompute_auto_is_the_least_that_fits)
{
    static const char base[] = "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":32000},"
                               "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"v100-sxm2-16gb\"},"
                               "\"options\":{\"dtype\":\"fp16\"%s}}";
    char text[512];
    struct fixture f, g;
    struct est_plan autop, all;
    struct sc_error err;
    snprintf(text, sizeof text, base, ",\"recompute\":\"auto\"");
    setup(&f, text, 4, EST_PLAN_MAX_TOP);
    snprintf(text, sizeof text, base, "");
    setup(&g, text, 4, EST_PLAN_MAX_TOP);
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &autop, &err) == SC_OK);
    REQUIRE(plan_run(&g.req, &g.ev, NULL, NULL, &all, &err) == SC_OK);
    CHECK_EQ_INT(autop.space * 3, all.space);
    CHECK(autop.n_rows > 0 && autop.n_rows < EST_PLAN_MAX_TOP && all.n_rows < EST_PLAN_MAX_TOP);
    int recomputed = 0;
    for (size_t i = 0; i < autop.n_rows; i++) {
        const struct est_plan_row *r = &autop.rows[i];
        CHECK(r->estimate.fits);
        CHECK(r->spec.options.recompute != EST_RECOMPUTE_AUTO);
        CHECK_EQ_INT(strcmp(r->estimate.recompute_chosen, spec_recompute_name(r->spec.options.recompute)), 0);
        recomputed += r->spec.options.recompute != EST_RECOMPUTE_NONE;
        for (int lower = EST_RECOMPUTE_NONE; lower < (int)r->spec.options.recompute; lower++) {
            struct est_spec s = r->spec;
            struct est_memory m;
            s.options.recompute = (enum est_recompute)lower;
            REQUIRE(spec_memory_estimate(&s, f.est.hw->hbm_gb, &m, &err) == SC_OK);
            CHECK(!m.fits);
            spec_memory_release(&m);
        }
        size_t same = 0;
        char *mine = spec_json(&r->spec);
        REQUIRE(mine != NULL);
        for (size_t k = 0; k < all.n_rows; k++) {
            char *theirs = spec_json(&all.rows[k].spec);
            REQUIRE(theirs != NULL);
            same += strcmp(mine, theirs) == 0 && all.rows[k].estimate.step_ms == r->estimate.step_ms;
            free(theirs);
        }
        free(mine);
        if (same != 1)
            sc_check_fail(__FILE__, __LINE__, "row %zu (tp %lld pp %lld dp %lld mb %lld recompute %d zero %lld, %.3f ms): "
                          "%zu rows of the searched plan alike", i, (long long)r->spec.parallel.tp,
                          (long long)r->spec.parallel.pp, (long long)r->spec.parallel.dp,
                          (long long)r->spec.parallel.micro_batch, (int)r->spec.options.recompute,
                          (long long)r->spec.options.zero_stage, r->estimate.step_ms, same);
    }
    CHECK(recomputed > 0);
    plan_release(&autop);
    plan_release(&all);
}
