/* model/opportunity.c: opportunities, each measured by a replay
 * (opportunity.h). */
#include "model/opportunity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "model/task_key.h"
#include "common/banned.h"

#define TOP_FAMILIES 10

struct finder {
    const struct model_graph *g;
    struct model_coll_waits waits; /* the kept collectives' split, in every replay */
    struct sc_error *err;
    int64_t *dur0, *gap0, *dur, *gap; /* the baseline's durations and gaps, then a change's */
    int64_t base_ns;
    size_t n_steps;       /* (rank, step) pairs */
    int64_t *rank_steps;  /* per rank: its steps */
    int64_t *rank_sum;    /* per rank: scratch */
    uint8_t *use;         /* per step: one the means are taken over */
    struct model_opportunities *out;
    size_t cap;
};

/* Mean replayed step of opts over f->use; with idle, the mean time no
 * GPU work runs. In a folded job (graph.h, model_graph_folding) the mean
 * is over the job's ranks: a representative's step counts once for itself
 * and once for each rank folded into it, as that rank replays it
 * (replay.h, model_replay_folded_ns), with its representative's idle time. */
static int mean_step(struct finder *f, const struct model_replay_opts *o, int64_t *mean, int64_t *idle)
{
    const struct model_graph *g = f->g;
    if (!g->folding.n_folded)
        return model_replay_mean_step(g, o, f->use, mean, idle, NULL, f->err);
    struct model_replay *r;
    size_t *ord = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *ord); /* each rank's steps so far */
    if (!ord)
        return sc_error_set(f->err, SC_ENOMEM, "out of memory");
    int rc = model_replay_run(g, o, &r, f->err);
    if (rc) {
        free(ord);
        return rc;
    }
    int64_t sum = 0, idle_sum = 0, n = 0;
    for (size_t s = 0; s < r->n_steps; s++) {
        const struct model_replay_step *rs = &r->steps[s];
        size_t k = ord[rs->rank]++, first, folded = model_graph_folded_into(g, rs->rank, &first);
        if (!f->use[s])
            continue;
        int64_t idle_s = rs->replayed_ns - rs->breakdown.compute_exposed - rs->breakdown.overlap -
                         rs->breakdown.comm_exposed;
        sum += rs->replayed_ns;
        for (size_t q = first; q < first + folded; q++)
            sum += model_replay_folded_ns(r, s, k, &g->folding.folded[q]);
        idle_sum += idle_s * (int64_t)(folded + 1);
        n += (int64_t)(folded + 1);
    }
    model_replay_free(r);
    free(ord);
    *mean = n ? sum / n : 0;
    if (idle)
        *idle = n ? idle_sum / n : 0;
    return SC_OK;
}

static int add(struct finder *f, const char *name, const char *resource, const char *change, int64_t saving,
               int64_t bound, int64_t at_zero)
{
    struct model_opportunities *o = f->out;
    if (sc_vec_reserve((void **)&o->v, &f->cap, o->n + 1, sizeof *o->v))
        return sc_error_set(f->err, SC_ENOMEM, "out of memory");
    struct model_opportunity *p = &o->v[o->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->resource, sizeof p->resource, "%s", resource);
    snprintf(p->change, sizeof p->change, "%s", change);
    p->saving_ns = saving;
    p->bound_ns = bound;
    p->saving_at_zero_ns = at_zero;
    return SC_OK;
}

/* The most per step of f->rank_sum over the ranks (0 when none). */
static int64_t max_per_step(const struct finder *f)
{
    int64_t most = 0;
    for (size_t r = 0; r < f->g->n_ranks; r++)
        if (f->rank_steps[r] && f->rank_sum[r] / f->rank_steps[r] > most)
            most = f->rank_sum[r] / f->rank_steps[r];
    return most;
}

/* What o takes out of the work per step: the time by which it shortens
 * durations and gaps (what it lengthens is not counted), on the rank where
 * that is most: ranks that wait for each other save together. */
static int bound_of(struct finder *f, const struct model_replay_opts *o, int64_t *bound)
{
    const struct model_graph *g = f->g;
    int rc = model_replay_durations(g, o, f->dur, f->gap, f->err);
    if (rc)
        return rc;
    for (size_t r = 0; r < g->n_ranks; r++)
        f->rank_sum[r] = 0;
    for (size_t i = 0; i < g->n_tasks; i++)
        f->rank_sum[g->tasks[i].rank] += (f->dur0[i] > f->dur[i] ? f->dur0[i] - f->dur[i] : 0) +
                                         (f->gap0[i] > f->gap[i] ? f->gap0[i] - f->gap[i] : 0);
    *bound = max_per_step(f);
    return SC_OK;
}

/* A change given in --scale words (each spec separated by a space). */
static int scaled(struct finder *f, const char *name, const char *resource, const char *change)
{
    struct model_replay_opts o;
    int64_t mean, bound;
    int rc;
    model_replay_opts_kept(&o, f->waits);
    if ((rc = model_replay_parse_scale(change, &o, f->err)) || (rc = mean_step(f, &o, &mean, NULL)) ||
        (rc = bound_of(f, &o, &bound)))
        return rc;
    return add(f, name, resource, change, f->base_ns - mean, bound, -1);
}

/* The ten kernel families with the most time, each at x0.5 (and x0). */
static int families(struct finder *f)
{
    int64_t time[MODEL_KF_COUNT] = {0};
    int order[MODEL_KF_COUNT];
    for (size_t i = 0; i < f->g->n_tasks; i++)
        if (f->g->tasks[i].cls == MODEL_TASK_KERNEL && f->g->tasks[i].sub < MODEL_KF_COUNT)
            time[f->g->tasks[i].sub] += f->g->tasks[i].dur;
    for (int k = 0; k < MODEL_KF_COUNT; k++) { /* by time, most first (a few: insertion) */
        int j = k;
        for (; j > 0 && time[order[j - 1]] < time[k]; j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
    for (int k = 0; k < TOP_FAMILIES && k < MODEL_KF_COUNT && time[order[k]] > 0; k++) {
        const char *fam = model_kernel_family_name((enum model_kernel_family)order[k]);
        char name[80], half[48], zero[48];
        struct model_replay_opts o;
        int64_t mean0;
        int rc;
        snprintf(name, sizeof name, "%s kernels 2x faster", fam);
        snprintf(half, sizeof half, "family:%s=0.5", fam);
        snprintf(zero, sizeof zero, "family:%s=0", fam);
        model_replay_opts_kept(&o, f->waits);
        if ((rc = model_replay_parse_scale(zero, &o, f->err)) || (rc = mean_step(f, &o, &mean0, NULL)) ||
            (rc = scaled(f, name, "gpu", half)))
            return rc;
        f->out->v[f->out->n - 1].saving_at_zero_ns = f->base_ns - mean0;
    }
    return SC_OK;
}

/* Kernels by name and ordinal, across ranks (task_key.h: the same
 * kernel on each rank). */
static int by_name_ord(const void *a, const void *b)
{
    const struct model_task_key *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return (x->ord > y->ord) - (x->ord < y->ord);
}

/* A duration and how many ranks have it (a representative and the ranks
 * folded into it, graph.h). */
struct weighted {
    int64_t d;
    size_t n;
};

static int by_duration(const void *a, const void *b)
{
    int64_t x = ((const struct weighted *)a)->d, y = ((const struct weighted *)b)->d;
    return (x > y) - (x < y);
}

/* The duration at position pos (from 0) of v sorted, each v[i] counted
 * v[i].n times. */
static int64_t weighted_at(const struct weighted *v, size_t n, size_t pos)
{
    size_t i = 0;
    for (size_t seen = v[0].n; seen <= pos && i + 1 < n; seen += v[++i].n)
        ;
    return v[i].d;
}

/* The overrides that put every kernel matched on at least two ranks at the
 * median of its durations across ranks (of an even count, the mean of the
 * middle two; a folded job's across all its ranks, a representative's
 * duration standing for the ranks folded into it): *ov from malloc, *n_ov
 * of them. */
static int straggler_overrides(struct finder *f, struct model_replay_override **out, size_t *n_out)
{
    const struct model_graph *g = f->g;
    struct model_task_key *k = NULL;
    struct model_replay_override *ov = NULL;
    struct weighted *d = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *d);
    size_t n = 0, n_ov = 0;
    int rc = SC_OK;
    *out = NULL;
    *n_out = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        n += g->tasks[i].cls == MODEL_TASK_KERNEL;
    k = malloc((n ? n : 1) * sizeof *k);
    ov = malloc((n ? n : 1) * sizeof *ov);
    if (!k || !ov || !d) {
        rc = sc_error_set(f->err, SC_ENOMEM, "out of memory");
        goto out;
    }
    n = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].cls == MODEL_TASK_KERNEL)
            k[n++] = model_task_key_of(g, i);
    model_task_keys_number(k, n);
    sc_sort(k, n, sizeof *k, by_name_ord);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && by_name_ord(&k[b], &k[a]) == 0; b++)
            ;
        if (b - a < 2 || b - a > g->n_ranks)
            continue;
        size_t m = 0, first;
        for (size_t j = a; j < b; j++) {
            d[j - a] = (struct weighted){g->tasks[k[j].task].dur, 1 + model_graph_folded_into(g, k[j].rank, &first)};
            m += d[j - a].n;
        }
        sc_sort(d, b - a, sizeof *d, by_duration);
        int64_t lo = weighted_at(d, b - a, (m - 1) / 2), hi = weighted_at(d, b - a, m / 2);
        int64_t median = lo + (hi - lo) / 2;
        for (size_t j = a; j < b; j++)
            ov[n_ov++] = (struct model_replay_override){k[j].task, median};
    }
    *out = ov;
    *n_out = n_ov;
    ov = NULL;
out:
    free(k);
    free(ov);
    free(d);
    return rc;
}

static int stragglers(struct finder *f)
{
    struct model_replay_override *ov;
    struct model_replay_opts o;
    int64_t mean, bound;
    size_t n_ov;
    int rc = straggler_overrides(f, &ov, &n_ov);
    if (rc)
        return rc;
    model_replay_opts_kept(&o, f->waits);
    o.overrides = ov;
    o.n_overrides = n_ov;
    if ((rc = mean_step(f, &o, &mean, NULL)) == SC_OK && (rc = bound_of(f, &o, &bound)) == SC_OK)
        rc = add(f, "stragglers removed (every kernel at its median across ranks)", "gpu", "stragglers=median",
                 f->base_ns - mean, bound, -1);
    free(ov);
    return rc;
}

int model_opportunity_actionable(const char *change)
{
    return strcmp(change, "comm=0") && strcmp(change, "unexplained=0");
}

/* Every actionable change found (opportunity.h actionable_ns) applied
 * together in one replay (the stragglers' as overrides). */
static int actionable(struct finder *f)
{
    struct model_replay_override *ov = NULL;
    struct model_replay_opts o;
    size_t n_ov = 0;
    int64_t mean;
    int rc = SC_OK;
    if (f->g->n_ranks > 1 && (rc = straggler_overrides(f, &ov, &n_ov)))
        return rc;
    model_replay_opts_kept(&o, f->waits);
    o.overrides = ov;
    o.n_overrides = n_ov;
    for (size_t i = 0; i < f->out->n && rc == SC_OK; i++) {
        const char *c = f->out->v[i].change;
        if (model_opportunity_actionable(c) && strcmp(c, "stragglers=median"))
            rc = model_replay_parse_scale(c, &o, f->err);
    }
    if (rc == SC_OK && (rc = mean_step(f, &o, &mean, NULL)) == SC_OK)
        f->out->actionable_ns = f->base_ns - mean;
    free(ov);
    return rc;
}

/* The unexplained waits removed: the replay without them. */
static int unexplained(struct finder *f)
{
    struct model_replay_opts o;
    int64_t mean;
    int rc;
    model_replay_opts_kept(&o, f->waits);
    o.keep_unexplained = 0;
    if ((rc = mean_step(f, &o, &mean, NULL)))
        return rc;
    for (size_t r = 0; r < f->g->n_ranks; r++)
        f->rank_sum[r] = 0;
    for (uint32_t i = 0; i < f->g->n_tasks; i++)
        f->rank_sum[f->g->tasks[i].rank] += model_graph_unexplained_wait(f->g, i);
    return add(f, "unexplained waits removed", "unexplained", "unexplained=0", f->base_ns - mean,
               max_per_step(f), -1);
}

static int saving_desc(const void *a, const void *b)
{
    const struct model_opportunity *x = a, *y = b;
    if (x->saving_ns != y->saving_ns)
        return x->saving_ns < y->saving_ns ? 1 : -1;
    return strcmp(x->change, y->change);
}

int model_opportunities_find(const struct model_graph *g, const struct model_coll_waits *waits,
                             struct model_opportunities *out, struct sc_error *err)
{
    struct finder f = {.g = g, .err = err, .out = out};
    struct model_replay_opts o;
    size_t n = g->n_tasks ? g->n_tasks : 1;
    int rc;

    memset(out, 0, sizeof *out);
    out->n_ranks = g->folding.on ? g->folding.ranks : g->n_ranks;
    f.dur0 = malloc((4 * n + 2 * (g->n_ranks ? g->n_ranks : 1)) * sizeof *f.dur0);
    if (!f.dur0)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    f.gap0 = f.dur0 + n;
    f.dur = f.gap0 + n;
    f.gap = f.dur + n;
    f.rank_steps = f.gap + n;
    f.rank_sum = f.rank_steps + (g->n_ranks ? g->n_ranks : 1);
    memset(f.rank_steps, 0, g->n_ranks * sizeof *f.rank_steps);
    int any_whole = 0;
    for (size_t s = 0; s < g->n_steps; s++)
        if (g->steps[s].end != MODEL_NONE) {
            f.n_steps++;
            f.rank_steps[g->steps[s].rank]++;
            any_whole |= !g->steps[s].partial;
        }
    if (!f.n_steps) {
        free(f.dur0);
        return sc_error_set(err, SC_EINVAL, "no step to find opportunities in");
    }
    /* the means are over the steps with an end, those not partial when
     * there are such */
    if (!(f.use = malloc(g->n_steps))) {
        free(f.dur0);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t s = 0; s < g->n_steps; s++)
        f.use[s] = g->steps[s].end != MODEL_NONE && (!any_whole || !g->steps[s].partial);
    if (waits)
        f.waits = *waits;
    model_replay_opts_kept(&o, f.waits);
    if ((rc = model_replay_durations(g, &o, f.dur0, f.gap0, err)) ||
        (rc = mean_step(&f, &o, &f.base_ns, &out->gpu_idle_ns)))
        goto out;
    out->step_ns = f.base_ns;
    if ((rc = scaled(&f, "network infinitely fast", "communication", "comm=0")) ||
        (rc = scaled(&f, "network 2x faster", "communication", "comm=0.5")) ||
        (rc = scaled(&f, "host overhead halved", "host", "cpu=0.5")) ||
        (rc = scaled(&f, "launch overhead gone (as CUDA graphs give)", "launch", "launch=0")) ||
        (rc = families(&f)) || (g->n_ranks > 1 && (rc = stragglers(&f))) || (rc = unexplained(&f)) ||
        (rc = actionable(&f)))
        goto out;
    sc_sort(out->v, out->n, sizeof *out->v, saving_desc);
out:
    free(f.dur0);
    free(f.use);
    if (rc)
        model_opportunities_release(out);
    return rc;
}

void model_opportunities_release(struct model_opportunities *o)
{
    free(o->v);
    o->v = NULL;
    o->n = 0;
}
