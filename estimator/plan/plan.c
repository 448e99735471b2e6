/* estimator/plan/plan.c: the planner's enumeration, checks, bounds and
 * top-K search (the rules are in plan.h). */
#include "estimator/plan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/memory.h"
#include "estimator/synth/synth.h"
#include "common/hugepage.h"
#include "common/vec.h"
#include "common/banned.h"

/* Sequences this long or longer are also split over context-parallel ranks. */
#define PLAN_CP_MIN_SEQ 8192

const char *plan_objective_name(enum est_objective o)
{
    return o == EST_OBJECTIVE_COST ? "cost" : "time";
}

int plan_objective_parse(const char *s, enum est_objective *out, struct sc_error *err)
{
    if (strcmp(s, "time") == 0)
        *out = EST_OBJECTIVE_TIME;
    else if (strcmp(s, "cost") == 0)
        *out = EST_OBJECTIVE_COST;
    else
        return sc_error_set(err, SC_EINVAL, "objective: \"%.32s\" is not one of time, cost", s);
    return SC_OK;
}

int plan_parse_spec(const char *text, size_t len, struct est_plan_request *req,
                        struct sc_error *err)
{
    int rc = spec_parse_template(text, len, &req->spec, &req->given, err);
    if (rc)
        return rc;
    if (!spec_given_has(&req->given, "parallel.global_batch"))
        return sc_error_set(err, SC_EINVAL,
                            "parallel.global_batch: missing (a plan keeps the global batch)");
    return spec_check_gpu(&req->spec, NULL, err);
}

static int estimate_eval(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    const struct est_plan_estimator *e = ctx;
    return synth_estimate(s, e->hw, &e->costs, EST_DETAIL_STAGE, out, err);
}

static int estimate_kernel(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    const struct est_plan_estimator *e = ctx;
    return synth_estimate(s, e->hw, &e->costs, EST_DETAIL_KERNEL, out, err);
}

/* The pass costs of s's layout, remembered (*out points into the memo). */
static int pass_costs(struct est_plan_estimator *e, const struct est_spec *s, const struct est_pass_costs **out,
                      struct sc_error *err)
{
    const struct est_parallel *p = &s->parallel;
    struct est_plan_pass_key k;
    size_t i;
    int rc;
    k = (struct est_plan_pass_key){p->tp, p->cp, p->ep, p->etp, p->micro_batch, s->options.sequence_parallel,
                                   s->options.recompute, s->options.dtype, s->options.attention,
                                   s->options.tp_comm_overlap};
    for (size_t back = 1; back <= e->n_memo; back++) { /* the newest first: neighbours share layouts */
        i = (e->next_memo + EST_PLAN_MEMO - back) % EST_PLAN_MEMO;
        if (memcmp(&e->memo_key[i], &k, sizeof k) == 0) {
            *out = &e->memo[i];
            return SC_OK;
        }
    }
    i = e->next_memo++ % EST_PLAN_MEMO;
    if (e->n_memo < EST_PLAN_MEMO)
        e->n_memo++;
    if ((rc = synth_pass_costs(s, e->hw, &e->costs, &e->memo[i], err))) {
        memset(&e->memo_key[i], 0xff, sizeof k); /* matches no layout */
        return rc;
    }
    e->memo_key[i] = k;
    *out = &e->memo[i];
    return SC_OK;
}

static int estimate_bound(void *ctx, const struct est_spec *s, double *ms, struct sc_error *err)
{
    struct est_plan_estimator *e = ctx;
    const struct est_pass_costs *pc;
    int rc = pass_costs(e, s, &pc, err);
    *ms = 0;
    return rc ? rc : synth_bound_of(s, e->hw, &e->costs, pc, ms, err);
}

/* ZeRO-3's streams followed unit by unit (0 for other stages): the search
 * takes the larger of it and the bound. */
static int estimate_refine(void *ctx, const struct est_spec *s, double enough_ms, double *ms, struct sc_error *err)
{
    struct est_plan_estimator *e = ctx;
    const struct est_pass_costs *pc;
    *ms = 0;
    if (s->options.zero_stage < 3) /* synth_bound_z3 would give 0: no pass costs needed */
        return SC_OK;
    int rc = pass_costs(e, s, &pc, err);
    return rc ? rc : synth_bound_z3(s, e->hw, &e->costs, pc, enough_ms, ms, err);
}

void plan_evaluator_estimate(struct est_plan_estimator *e, struct est_plan_evaluator *out)
{
    e->n_memo = e->next_memo = 0;
    out->evaluate = estimate_eval;
    out->bound = estimate_bound;
    out->refine = estimate_refine;
    out->detail = estimate_kernel;
    out->ctx = e;
}

/* ---- enumeration ---- */

/* One combination, compact: the spec is rebuilt from the template. */
struct cand {
    int64_t tp, cp, pp, dp, ep, mb, vpp;
    int8_t recompute, sp, zero, schedule;
    int8_t refined;  /* bound includes the evaluator's refine */
    int64_t index;   /* order of enumeration */
    double bound;    /* of the objective */
};

typedef int (*visit_fn)(void *ctx, const struct cand *c);

/* The keys a spec may fix, as bits. */
enum { F_TP, F_CP, F_PP, F_DP, F_EP, F_ETP, F_MB, F_SCHEDULE, F_VPP, F_RECOMPUTE, F_SP, F_ZERO, F_COUNT };
static const char *const fixable[F_COUNT] = {
    "parallel.tp", "parallel.cp", "parallel.pp", "parallel.dp", "parallel.ep", "parallel.etp",
    "parallel.micro_batch", "parallel.schedule", "parallel.vpp", "options.recompute",
    "options.sequence_parallel", "options.zero_stage"};

static unsigned fixed_mask(const struct est_plan_request *req)
{
    unsigned m = 0;
    for (int i = 0; i < F_COUNT; i++)
        if (spec_given_has(&req->given, fixable[i]))
            m |= 1u << i;
    return m;
}

#define MAX_VALUES 256

/* The divisors of n up to limit, ascending (at most cap of them). */
static size_t divisors(int64_t n, int64_t limit, int64_t *out, size_t cap)
{
    int64_t high[MAX_VALUES];
    size_t k = 0, h = 0;
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d)
            continue;
        if (d <= limit && k < cap)
            out[k++] = d;
        if (d * d != n && n / d <= limit && h < sizeof high / sizeof high[0])
            high[h++] = n / d;
    }
    while (h > 0 && k < cap)
        out[k++] = high[--h];
    return k;
}

struct walk {
    const struct est_plan_request *req;
    visit_fn visit; /* each combination, or */
    void *ctx;
    int64_t *count; /* only counted, when not NULL */
    unsigned fixed; /* fixed_mask(req) */
    int64_t index;
};

/* The schedules and virtual stages tried for pp ranks. */
static size_t schedules(const struct walk *w, int64_t pp, int64_t *vpp, int8_t *sched)
{
    const struct est_spec *s = &w->req->spec;
    int64_t layers = s->model.layers;
    int fix_sched = (w->fixed >> F_SCHEDULE & 1), fix_vpp = (w->fixed >> F_VPP & 1);
    size_t k = 0;
    if (fix_vpp || (fix_sched && s->parallel.schedule == EST_SCHEDULE_1F1B)) {
        vpp[0] = s->parallel.vpp;
        sched[0] = (int8_t)(fix_sched ? s->parallel.schedule
                                      : s->parallel.vpp > 1 ? EST_SCHEDULE_INTERLEAVED : EST_SCHEDULE_1F1B);
        return 1;
    }
    if (!fix_sched) {
        vpp[k] = 1;
        sched[k++] = EST_SCHEDULE_1F1B;
    }
    for (int64_t v = 2; v <= EST_PLAN_MAX_VPP && pp > 1; v++)
        if (layers % (pp * v) == 0 || (layers + 2) % (pp * v) == 0) {
            vpp[k] = v;
            sched[k++] = EST_SCHEDULE_INTERLEAVED;
        }
    return k;
}

/* The values of one small dimension: the fixed one, or those of 0..n-1
 * that `ok` keeps. */
static size_t small_values(int is_fixed, int64_t fixed_value, int n, int (*ok)(const struct cand *, int),
                           const struct cand *c, int8_t *out)
{
    size_t k = 0;
    for (int v = 0; v < n; v++)
        if (is_fixed ? v == fixed_value : ok(c, v))
            out[k++] = (int8_t)v;
    return k;
}

/* Searched, each recomputation is tried; "auto" only where the spec
 * fixes it (check_one resolves it per layout). */
static int chosen_recompute(const struct cand *c, int v)
{
    (void)c;
    return v != EST_RECOMPUTE_AUTO;
}

static int sp_value(const struct cand *c, int v)
{
    return !v || c->tp > 1; /* sequence parallelism splits over tp */
}

static int zero_value(const struct cand *c, int v)
{
    return !v || c->dp * c->cp > 1; /* ZeRO shards over the data-parallel ranks */
}

static int walk_layout(struct walk *w, struct cand *c)
{
    const struct est_plan_request *req = w->req;
    const struct est_spec *s = &req->spec;
    int64_t ep[MAX_VALUES], vpp[EST_PLAN_MAX_VPP + 1], mbs[32];
    int8_t sched[EST_PLAN_MAX_VPP + 1], rcps[4], sps[2], zs[4];
    size_t n_ep = 1, n_mb = 0, n_sched = schedules(w, c->pp, vpp, sched);
    size_t n_rcp = small_values((w->fixed >> F_RECOMPUTE & 1), s->options.recompute, 4, chosen_recompute, c, rcps);
    size_t n_sp = small_values((w->fixed >> F_SP & 1), s->options.sequence_parallel, 2, sp_value,
                               c, sps);
    size_t n_z = small_values((w->fixed >> F_ZERO & 1), s->options.zero_stage, 4, zero_value, c, zs);
    int rc;
    ep[0] = s->parallel.ep;
    if (!(w->fixed >> F_EP & 1) && s->model.moe.experts > 0)
        n_ep = divisors(s->model.moe.experts, c->tp * c->cp * c->dp, ep, MAX_VALUES);
    if ((w->fixed >> F_MB & 1))
        mbs[n_mb++] = s->parallel.micro_batch;
    else
        for (int64_t mb = 1; mb <= EST_PLAN_MAX_MICRO_BATCH && (mb == 1 || mb * c->dp <= s->parallel.global_batch);
             mb *= 2)
            mbs[n_mb++] = mb;
    if (w->count) {
        *w->count += (int64_t)(n_ep * n_mb * n_sched * n_rcp * n_sp * n_z);
        return 0;
    }
    for (size_t e = 0; e < n_ep; e++)
        for (size_t b = 0; b < n_mb; b++)
            for (size_t k = 0; k < n_sched; k++)
                for (size_t r = 0; r < n_rcp; r++)
                    for (size_t q = 0; q < n_sp; q++)
                        for (size_t z = 0; z < n_z; z++) {
                            c->ep = ep[e];
                            c->mb = mbs[b];
                            c->vpp = vpp[k];
                            c->schedule = sched[k];
                            c->recompute = rcps[r];
                            c->sp = sps[q];
                            c->zero = zs[z];
                            c->index = w->index++;
                            if ((rc = w->visit(w->ctx, c)))
                                return rc;
                        }
    return 0;
}

/* Every combination on exactly n GPUs. */
static int walk_gpus(struct walk *w, int64_t n)
{
    const struct est_plan_request *req = w->req;
    const struct est_spec *s = &req->spec;
    int64_t tps[MAX_VALUES], cps[MAX_VALUES], pps[MAX_VALUES];
    size_t n_tp, n_cp, n_pp;
    int rc;
    if ((w->fixed >> F_TP & 1)) {
        tps[0] = s->parallel.tp;
        n_tp = n % tps[0] == 0;
    } else {
        size_t k = divisors(n, s->cluster.gpus_per_node, tps, MAX_VALUES);
        n_tp = 0;
        for (size_t i = 0; i < k; i++)
            if (s->cluster.gpus_per_node % tps[i] == 0)
                tps[n_tp++] = tps[i];
    }
    for (size_t a = 0; a < n_tp; a++) {
        int64_t rest = n / tps[a];
        if ((w->fixed >> F_CP & 1)) {
            cps[0] = s->parallel.cp;
            n_cp = rest % cps[0] == 0;
        } else if (s->model.seq >= PLAN_CP_MIN_SEQ) {
            n_cp = divisors(rest, rest, cps, MAX_VALUES);
        } else {
            cps[0] = 1;
            n_cp = 1;
        }
        for (size_t b = 0; b < n_cp; b++) {
            int64_t rest2 = rest / cps[b];
            if ((w->fixed >> F_PP & 1)) {
                pps[0] = s->parallel.pp;
                n_pp = rest2 % pps[0] == 0;
            } else {
                /* the layers (or layers + 2) split evenly over the stages */
                size_t k = divisors(rest2, s->model.layers + 2, pps, MAX_VALUES);
                n_pp = 0;
                for (size_t i = 0; i < k; i++)
                    if (s->model.layers % pps[i] == 0 || (s->model.layers + 2) % pps[i] == 0)
                        pps[n_pp++] = pps[i];
            }
            for (size_t c = 0; c < n_pp; c++) {
                if (w->count && *w->count > EST_PLAN_MAX_SPACE)
                    return 0; /* past the cap: counting further tells nothing */
                struct cand cd = {.tp = tps[a], .cp = cps[b], .pp = pps[c], .dp = rest2 / pps[c]};
                if ((w->fixed >> F_DP & 1) && cd.dp != s->parallel.dp)
                    continue;
                if ((rc = walk_layout(w, &cd)))
                    return rc;
            }
        }
    }
    return 0;
}

/* The GPU counts planned: N, and with up_to every smaller power of two or
 * multiple of gpus_per_node. */
static int walk_all(struct walk *w0)
{
    struct walk w = *w0;
    int rc;
    const struct est_plan_request *req = w.req;
    w.fixed = fixed_mask(req);
    for (int64_t n = req->gpus; n >= 1; n--) {
        int pow2 = (n & (n - 1)) == 0;
        if (n != req->gpus && (!req->up_to || !(pow2 || n % req->spec.cluster.gpus_per_node == 0)))
            continue;
        if ((rc = walk_gpus(&w, n)))
            return rc;
        if (!req->up_to)
            break;
    }
    return 0;
}

int64_t plan_space(const struct est_plan_request *req)
{
    int64_t n = 0;
    struct walk w = {.req = req, .count = &n};
    walk_all(&w);
    return n;
}

/* ---- the search ---- */

static void cand_spec(const struct est_plan_request *req, unsigned fixed, const struct cand *c,
                      struct est_spec *s)
{
    *s = req->spec;
    s->parallel.tp = c->tp;
    s->parallel.cp = c->cp;
    s->parallel.pp = c->pp;
    s->parallel.dp = c->dp;
    s->parallel.ep = c->ep;
    s->parallel.micro_batch = c->mb;
    s->parallel.vpp = c->vpp;
    s->parallel.schedule = (enum est_schedule)c->schedule;
    if (!(fixed >> F_ETP & 1))
        s->parallel.etp = 0; /* the default: tp */
    s->options.recompute = (enum est_recompute)c->recompute;
    s->options.sequence_parallel = c->sp;
    s->options.zero_stage = c->zero;
}

struct search {
    const struct est_plan_request *req;
    /* a step time's factor at the risk, by sharding (the GPU and the
     * model kind are the template's): 1 / (1 + the error quantile) */
    double at_risk[EST_SHARDING_COUNT];
    const struct est_plan_evaluator *ev;
    const struct hw_profile *hw;
    est_plan_progress_fn progress;
    void *progress_ctx;
    struct est_plan *out;
    int64_t total, done;
    int evaluating;     /* past the walk: each tick is an evaluation, reported */
    struct cand *cands; /* feasible ones, with their bounds */
    size_t n, cap;
    struct sc_error *err;
    unsigned fixed; /* fixed_mask(req) */
    /* the memory of the last combination that passed the spec's checks:
     * its activations serve the next one when only ZeRO differs */
    struct est_memory last_mem;
    struct cand last;
};

/* The objective of a step time for spec s: the time at the risk itself,
 * or GPU-hours per million tokens. */
static double objective(const struct search *y, const struct est_spec *s, double step_ms)
{
    enum est_model_kind model;
    enum est_sharding sharding;
    plan_region_of(s, &model, &sharding);
    step_ms *= y->at_risk[sharding];
    if (y->req->objective == EST_OBJECTIVE_TIME)
        return step_ms;
    double tokens = (double)s->parallel.global_batch * (double)s->model.seq;
    return (double)spec_gpus(s) * step_ms / 3.6e6 / (tokens / 1e6);
}

/* Whether two combinations differ in the ZeRO stage at most. */
static int same_but_zero(const struct cand *a, const struct cand *b)
{
    return a->tp == b->tp && a->cp == b->cp && a->pp == b->pp && a->dp == b->dp && a->ep == b->ep &&
           a->mb == b->mb && a->vpp == b->vpp && a->recompute == b->recompute && a->sp == b->sp &&
           a->schedule == b->schedule;
}

static int tick(struct search *y)
{
    y->done++;
    if (y->progress && (y->evaluating || y->done % 64 == 0 || y->done == y->total) &&
        y->progress(y->progress_ctx, y->done, y->total)) {
        y->out->cancelled = 1;
        return 1;
    }
    return 0;
}

/* Check one combination; keep it (with its bound) when it is feasible. */
static int check_one(void *ctx, const struct cand *c)
{
    struct search *y = ctx;
    struct est_spec s;
    struct est_memory mem;
    struct cand chosen = *c; /* recompute "auto": the least that fits */
    int rc, fits = 0;
    y->out->space++;
    cand_spec(y->req, y->fixed, c, &s);
    if (spec_check(&s, NULL)) { /* only counted: no message formatted */
        y->out->infeasible_divisibility++;
        return tick(y) ? -1 : 0;
    }
    int8_t lo = c->recompute, hi = c->recompute;
    if (c->recompute == EST_RECOMPUTE_AUTO)
        lo = EST_RECOMPUTE_NONE, hi = EST_RECOMPUTE_FULL;
    for (int8_t r = lo; r <= hi && !fits; r++) {
        chosen.recompute = r;
        s.options.recompute = (enum est_recompute)r;
        const struct est_memory *like = y->last_mem.stages && same_but_zero(&y->last, &chosen) ? &y->last_mem : NULL;
        if ((rc = spec_memory_estimate_like(&s, like, y->hw->hbm_gb, 1, &mem, y->err)))
            return rc;
        fits = mem.fits;
        spec_memory_release(&y->last_mem);
        y->last_mem = mem;
        y->last = chosen;
    }
    c = &chosen;
    if (!fits) {
        y->out->infeasible_memory++;
        return tick(y) ? -1 : 0;
    }
    if (sc_vec_reserve((void **)&y->cands, &y->cap, y->n + 1, sizeof *y->cands))
        return sc_error_set(y->err, SC_ENOMEM, "out of memory planning");
    struct cand *k = &y->cands[y->n++];
    *k = *c;
    k->bound = 0;
    if (y->ev->bound) {
        double ms;
        if ((rc = y->ev->bound(y->ev->ctx, &s, &ms, y->err)))
            return rc;
        k->bound = objective(y, &s, ms);
    }
    return 0;
}

/* The candidates not yet dealt with: a binary heap, the least bound
 * (then the first enumerated) on top. */
static int cand_before(const struct cand *a, const struct cand *b)
{
    return a->bound != b->bound ? a->bound < b->bound : a->index < b->index;
}

static void heap_down(struct cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < n && cand_before(&h[l], &h[least]))
            least = l;
        if (r < n && cand_before(&h[r], &h[least]))
            least = r;
        if (least == i)
            return;
        struct cand t = h[i];
        h[i] = h[least];
        h[least] = t;
        i = least;
    }
}

static struct cand heap_pop(struct cand *h, size_t *n)
{
    struct cand top = h[0];
    h[0] = h[--*n];
    heap_down(h, *n, 0);
    return top;
}

/* Put c back (the heap has room: it came off it). */
static void heap_push(struct cand *h, size_t *n, const struct cand *c)
{
    size_t i = (*n)++;
    while (i > 0 && cand_before(c, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = *c;
}

/* Row a before row b: objective, then step time, then enumeration order. */
static int row_before(const struct est_plan_row *a, int64_t ia, const struct est_plan_row *b, int64_t ib)
{
    if (a->objective != b->objective)
        return a->objective < b->objective;
    if (a->estimate.step_ms != b->estimate.step_ms)
        return a->estimate.step_ms < b->estimate.step_ms;
    return ia < ib;
}

/* Insert a row into the sorted top K (indices beside it); an evicted row
 * is released. */
static void keep_top(struct est_plan *out, int64_t *order, size_t top, struct est_plan_row *row, int64_t index)
{
    size_t n = out->n_rows, at = n;
    while (at > 0 && row_before(row, index, &out->rows[at - 1], order[at - 1]))
        at--;
    if (at >= top) {
        synth_estimate_release(&row->estimate);
        return;
    }
    if (n == top) {
        synth_estimate_release(&out->rows[n - 1].estimate);
        n--;
    }
    memmove(&out->rows[at + 1], &out->rows[at], (n - at) * sizeof *out->rows);
    memmove(&order[at + 1], &order[at], (n - at) * sizeof *order);
    out->rows[at] = *row;
    order[at] = index;
    out->n_rows = n + 1;
}

int plan_run(const struct est_plan_request *req, const struct est_plan_evaluator *ev,
                 est_plan_progress_fn progress, void *progress_ctx, struct est_plan *out,
                 struct sc_error *err)
{
    struct search y = {.req = req, .ev = ev, .progress = progress, .progress_ctx = progress_ctx,
                       .out = out, .err = err, .fixed = fixed_mask(req)};
    int64_t *order = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    if (req->top < 1 || req->top > EST_PLAN_MAX_TOP)
        return sc_error_set(err, SC_EINVAL, "top: %zu is not in 1 to %d", req->top, EST_PLAN_MAX_TOP);
    if (req->gpus < 1 || req->gpus > (1 << 20))
        return sc_error_set(err, SC_EINVAL, "gpus: %lld is not in 1 to %d", (long long)req->gpus, 1 << 20);
    out->risk = req->risk ? req->risk : EST_RISK_DEFAULT;
    out->banded = req->bands != NULL;
    if ((rc = plan_risk_check(out->risk, "risk", err)))
        return rc;
    for (int k = 0; k < EST_SHARDING_COUNT; k++) {
        enum est_model_kind model;
        enum est_sharding sharding;
        struct est_spec like = req->spec;
        like.options.zero_stage = k == EST_SHARDING_FSDP ? 3 : k; /* a stage of each kind */
        plan_region_of(&like, &model, &sharding);
        y.at_risk[k] = plan_band_at_risk(plan_bands_find(req->bands, req->spec.cluster.gpu, model, sharding),
                                        out->risk, 1);
    }
    if ((rc = spec_check_gpu(&req->spec, &y.hw, err)))
        return rc;
    y.total = plan_space(req);
    if (y.total > EST_PLAN_MAX_SPACE)
        return sc_error_set(err, SC_ELIMIT, "the plan spans at least %lld configurations, over the limit of %d",
                            (long long)y.total, EST_PLAN_MAX_SPACE);
    out->rows = calloc(req->top, sizeof *out->rows);
    order = calloc(req->top, sizeof *order);
    if (!out->rows || !order) {
        free(order);
        return sc_error_set(err, SC_ENOMEM, "out of memory planning");
    }
    /* each evaluation builds and frees a graph and its replay: the memory
     * stays for the next one */
    sc_heap_keep_begin();
    struct walk w = {.req = req, .visit = check_one, .ctx = &y};
    rc = walk_all(&w);
    if (rc > 0)
        goto done;
    if (rc < 0) { /* cancelled */
        rc = SC_OK;
        goto done;
    }
    /* least bound first (without a bound, the order of enumeration); a
     * candidate's refined bound is made when it first comes to the top,
     * and one it raises goes back into the heap to wait its turn */
    for (size_t i = y.n / 2; i-- > 0;)
        heap_down(y.cands, y.n, i);
    y.evaluating = 1;
    for (size_t left = y.n; left > 0;) {
        struct cand c = heap_pop(y.cands, &left);
        int full = out->n_rows == req->top;
        if (full && c.bound > out->rows[req->top - 1].objective) {
            out->pruned += (int64_t)left + 1;
            y.done += (int64_t)left;
            tick(&y);
            break;
        }
        struct est_plan_row row;
        memset(&row, 0, sizeof row);
        cand_spec(req, y.fixed, &c, &row.spec);
        if ((rc = spec_check(&row.spec, err)))
            goto done;
        if (ev->bound && ev->refine && !c.refined) {
            /* the step time at which it would be pruned now (the
             * objective grows in proportion to it) */
            double ms, enough = full ? out->rows[req->top - 1].objective / objective(&y, &row.spec, 1) : INFINITY;
            if ((rc = ev->refine(ev->ctx, &row.spec, enough, &ms, err)))
                goto done;
            c.refined = 1;
            double refined = objective(&y, &row.spec, ms);
            if (refined > c.bound) {
                c.bound = refined;
                heap_push(y.cands, &left, &c);
                continue;
            }
        }
        if ((rc = ev->evaluate(ev->ctx, &row.spec, &row.estimate, err)))
            goto done;
        out->evaluated++;
        row.objective = objective(&y, &row.spec, row.estimate.step_ms);
        keep_top(out, order, req->top, &row, c.index);
        if (tick(&y))
            break;
    }
    /* what the bands say of each row, and the top row at kernel detail */
    for (size_t i = 0; !rc && !out->cancelled && out->banded && i < out->n_rows; i++)
        plan_band_view_of(req->bands, &out->rows[i].spec, &out->rows[i].estimate, out->risk, &out->rows[i].band);
    if (!rc && !out->cancelled && out->n_rows && ev->detail) {
        if ((rc = ev->detail(ev->ctx, &out->rows[0].spec, &out->rows[0].kernel, err)))
            goto done;
        out->rows[0].has_kernel = 1;
    }
done:
    sc_heap_keep_end();
    spec_memory_release(&y.last_mem);
    free(y.cands);
    free(order);
    if (rc || out->cancelled) {
        plan_release(out);
        out->cancelled = !rc;
    }
    return rc;
}

void plan_release(struct est_plan *p)
{
    for (size_t i = 0; i < p->n_rows; i++) {
        synth_estimate_release(&p->rows[i].estimate);
        synth_estimate_release(&p->rows[i].kernel);
    }
    free(p->rows);
    p->rows = NULL;
    p->n_rows = 0;
}
