/* estimator/costs/collective_model.c: the collective cost model, and what
 * measured fits tell of its parameters (collective_model.h). */
#include "estimator/costs/collective_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/costs/cost_params.h"
#include "estimator/costs/hardware.h"
#include "common/banned.h"

double cost_coll_bus_factor(enum model_coll_op k, int n)
{
    if (n < 1)
        n = 1;
    switch (k) {
    case MODEL_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case MODEL_COLL_ALLGATHER:
    case MODEL_COLL_REDUCESCATTER:
    case MODEL_COLL_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

void cost_coll_params_from_hw(const struct hw_profile *hw, struct coll_params *p)
{
    memset(p, 0, sizeof *p);
    p->base_us = cost_param_cited(cost_param_base_us);
    p->intra.busbw_gbps = hw->nvlink_gbps * cost_param_cited(cost_param_intra_fraction);
    p->intra.hop_us = cost_param_cited(cost_param_nvlink_hop_us);
    p->inter.busbw_gbps = hw->network_gbps * cost_param_cited(cost_param_inter_fraction);
    p->inter.hop_us = cost_param_cited(cost_param_net_hop_us);
    p->nvls_gain = cost_param_cited(cost_param_nvls_gain);
    p->nvls = hw->nvls;
    p->sharp = hw->ib_sharp;
    memcpy(p->lines, hw->coll_lines, sizeof p->lines);
}

const char *cost_coll_algo_name(enum coll_algo a)
{
    static const char *const names[] = {"ring", "tree", "nvls", "direct"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "unknown";
}

/* One algorithm over the two tiers: steps on each and the bytes each rank
 * moves over each, as a fraction of S. */
struct plan {
    double steps_intra, steps_inter;
    double bytes_intra, bytes_inter;
    double intra_gain; /* busbw multiplier inside the domain (NVLS) */
    enum coll_algo algo;
};

/* A plan inside one domain priced by a kind's lines: the line of the
 * range S falls in; between two ranges' sizes, the straight way from the
 * one's largest to the other's smallest; and never less than a range
 * below at its largest size. So the time grows with the size where two
 * fits meet, whatever lines a profile holds. */
static double line_at(const struct coll_params *p, const struct coll_line *l, const struct plan *pl, double bytes,
                      struct coll_estimate *e)
{
    e->alpha_us = p->base_us + pl->steps_intra * l->hop_us;
    e->transfer_us = bytes * pl->bytes_intra / l->busbw_gbps * 1e-3; /* GB/s = 1e3 bytes per microsecond */
    e->time_us = e->alpha_us + e->transfer_us;
    e->algo = pl->algo;
    return e->time_us;
}

static double lines_time(const struct coll_params *p, const struct coll_lines *L, const struct plan *pl,
                         double bytes, struct coll_estimate *e)
{
    int r = 0;
    while (r + 1 < L->n && L->v[r + 1].from_bytes <= bytes)
        r++;
    if (r + 1 < L->n && bytes > L->v[r].to_bytes) { /* between two ranges */
        struct coll_estimate next;
        double end = line_at(p, &L->v[r], pl, L->v[r].to_bytes, e);
        double rise = line_at(p, &L->v[r + 1], pl, L->v[r + 1].from_bytes, &next) - end;
        double f = (bytes - L->v[r].to_bytes) / (L->v[r + 1].from_bytes - L->v[r].to_bytes);
        if (rise > 0) {
            e->transfer_us += f * rise;
            e->time_us += f * rise;
        }
    } else {
        line_at(p, &L->v[r], pl, bytes, e);
    }
    for (int i = 0; i < r; i++) {
        struct coll_estimate end;
        if (line_at(p, &L->v[i], pl, L->v[i].to_bytes, &end) > e->time_us)
            *e = end;
    }
    return e->time_us;
}

static double plan_time(const struct coll_params *p, const struct plan *pl, double bytes,
                        struct coll_estimate *e)
{
    double alpha = p->base_us + pl->steps_intra * p->intra.hop_us + pl->steps_inter * p->inter.hop_us;
    double t_intra = pl->bytes_intra > 0 ? pl->bytes_intra / (p->intra.busbw_gbps * pl->intra_gain) : 0;
    double t_inter = pl->bytes_inter > 0 ? pl->bytes_inter / p->inter.busbw_gbps : 0;
    /* GB/s = 1e3 bytes per microsecond */
    double transfer = bytes * (t_intra > t_inter ? t_intra : t_inter) * 1e-3;
    e->alpha_us = alpha;
    e->transfer_us = transfer;
    e->time_us = alpha + transfer;
    e->algo = pl->algo;
    return e->time_us;
}

/* The plans of a kind over g ranks per domain and d domains (n = g x d). */
static size_t plans(const struct coll_params *p, enum model_coll_op k, int g, int d,
                    struct plan *out)
{
    double n = (double)g * d;
    struct plan ring = {.intra_gain = 1, .algo = COLL_ALGO_RING};
    size_t np = 0;
    switch (k) {
    case MODEL_COLL_ALLREDUCE:
        ring.steps_intra = 2.0 * (g - 1);
        ring.bytes_intra = 2.0 * (g - 1) / g;
        ring.steps_inter = 2.0 * (d - 1);
        ring.bytes_inter = 2.0 * (d - 1) / d / g;
        if (p->nvls && g > 1) { /* in-switch reduction in the domain */
            ring.steps_intra = 2;
            ring.intra_gain = p->nvls_gain;
            ring.algo = COLL_ALGO_NVLS;
        }
        if (p->sharp && d > 1) { /* the shard goes up the switches once and back */
            ring.steps_inter = 2;
            ring.bytes_inter = 1.0 / g;
        }
        out[np++] = ring;
        if (d > 2 && !p->sharp) { /* NCCL's double binary tree across domains */
            struct plan tree = ring;
            tree.steps_inter = 2.0 * ceil(log2((double)d));
            tree.algo = ring.algo == COLL_ALGO_NVLS ? COLL_ALGO_NVLS : COLL_ALGO_TREE;
            out[np++] = tree;
        }
        return np;
    case MODEL_COLL_ALLGATHER:
    case MODEL_COLL_REDUCESCATTER:
        ring.steps_intra = g - 1;
        ring.bytes_intra = (double)(g - 1) / g;
        ring.steps_inter = d - 1;
        ring.bytes_inter = (double)(d - 1) / d / g;
        out[np++] = ring;
        return np;
    case MODEL_COLL_ALLTOALL:
        ring.algo = COLL_ALGO_DIRECT;
        ring.steps_intra = g - 1;
        ring.bytes_intra = (g - 1) / n;
        ring.steps_inter = n - g;
        ring.bytes_inter = (n - g) / n;
        out[np++] = ring;
        return np;
    case MODEL_COLL_BROADCAST:
    case MODEL_COLL_REDUCE: /* a pipelined chain through every rank */
        ring.steps_intra = g - 1;
        ring.bytes_intra = g > 1 ? 1 : 0;
        ring.steps_inter = d - 1;
        ring.bytes_inter = d > 1 ? 1 : 0;
        out[np++] = ring;
        return np;
    case MODEL_COLL_SENDRECV:
        ring.algo = COLL_ALGO_DIRECT;
        if (d > 1) {
            ring.steps_inter = 1;
            ring.bytes_inter = 1;
        } else {
            ring.steps_intra = 1;
            ring.bytes_intra = 1;
        }
        out[np++] = ring;
        return np;
    default:
        return 0;
    }
}

/* The tiers' figures. */
static int in_range(double v, double lo, double hi)
{
    return v >= lo && v <= hi; /* false for NaN */
}

static int tiers_valid(const struct coll_params *p, struct sc_error *err)
{
    if (!in_range(p->intra.busbw_gbps, COLL_MIN_BUSBW_GBPS, COLL_MAX_BUSBW_GBPS) ||
        !in_range(p->inter.busbw_gbps, COLL_MIN_BUSBW_GBPS, COLL_MAX_BUSBW_GBPS) ||
        !in_range(p->nvls_gain, COLL_MIN_NVLS_GAIN, COLL_MAX_NVLS_GAIN) ||
        !in_range(p->base_us, 0, COLL_MAX_LATENCY_US) || !in_range(p->intra.hop_us, 0, COLL_MAX_LATENCY_US) ||
        !in_range(p->inter.hop_us, 0, COLL_MAX_LATENCY_US))
        return sc_error_set(err, SC_EINVAL,
                            "collective parameters: bandwidths must be %g to %g GB/s, latencies 0 to %g us, the "
                            "NVLS gain %g to %g (intra %g GB/s, inter %g GB/s, base %g us, hops %g and %g us, "
                            "gain %g)",
                            COLL_MIN_BUSBW_GBPS, COLL_MAX_BUSBW_GBPS, COLL_MAX_LATENCY_US, COLL_MIN_NVLS_GAIN,
                            COLL_MAX_NVLS_GAIN, p->intra.busbw_gbps, p->inter.busbw_gbps, p->base_us,
                            p->intra.hop_us, p->inter.hop_us, p->nvls_gain);
    return SC_OK;
}

int cost_coll_params_valid(const struct coll_params *p, struct sc_error *err)
{
    if (tiers_valid(p, err))
        return err->code;
    return cost_coll_lines_valid(p->lines, err);
}

int cost_coll_estimate(const struct coll_params *p, enum model_coll_op kind, const struct coll_group *g,
                  double bytes, struct coll_estimate *out, struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    if (!cost_coll_kind_modelled(kind))
        return sc_error_set(err, SC_EINVAL, "no cost model for collective '%s'", model_coll_op_name(kind));
    if (g->ranks < 1 || g->ranks_per_domain < 1 || g->ranks_per_domain > g->ranks)
        return sc_error_set(err, SC_EINVAL, "collective group of %d ranks, %d per domain: need 1 <= per domain <= ranks",
                            g->ranks, g->ranks_per_domain);
    if (!(bytes >= 0) || !isfinite(bytes))
        return sc_error_set(err, SC_EINVAL, "collective size must be a finite number of bytes >= 0");
    if (tiers_valid(p, err) || cost_coll_kind_lines_valid(kind, &p->lines[kind], err)) /* what this estimate reads */
        return err->code;
    if (g->ranks == 1 && kind != MODEL_COLL_SENDRECV) {
        out->time_us = out->alpha_us = p->base_us; /* a local copy at most */
        return SC_OK;
    }
    int per = g->ranks_per_domain;
    int domains = (g->ranks + per - 1) / per;
    struct plan pl[2];
    size_t np = plans(p, kind, per, domains, pl);
    const struct coll_lines *L = domains == 1 && p->lines[kind].n > 0 ? &p->lines[kind] : NULL;
    for (size_t i = 0; i < np; i++) {
        struct coll_estimate e;
        if (L)
            lines_time(p, L, &pl[i], bytes, &e);
        else
            plan_time(p, &pl[i], bytes, &e);
        if (i == 0 || e.time_us < out->time_us)
            *out = e;
    }
    return SC_OK;
}

/* ---- measured parameters ---- */

static void say(char *report, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *report, size_t len, const char *fmt, ...)
{
    if (!report || !len)
        return;
    size_t used = strlen(report);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report + used, len - used, fmt, ap);
    va_end(ap);
}

/* The measurement to read a tier from: all-reduce first, then the most ranks. */
static const struct coll_measurement *pick(const struct coll_measurement *m, size_t n, int inter)
{
    const struct coll_measurement *best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (m[i].inter != inter || m[i].n_fits == 0 || (inter && m[i].nodes < 2))
            continue;
        int ar = m[i].kind == MODEL_COLL_ALLREDUCE, best_ar = best && best->kind == MODEL_COLL_ALLREDUCE;
        if (!best || ar > best_ar || (ar == best_ar && m[i].ranks > best->ranks))
            best = &m[i];
    }
    return best;
}

/* Only small messages measure latency: a fit of large ones has an alpha
 * that is mostly the noise of its bandwidth term (or waits for peers). */
static int latency_fit(const struct coll_fit *f)
{
    return f->alpha_fitted && f->size_lo < coll_fit_range_lo[1];
}

/* A kind's lines from its one-domain measurement of the most ranks, when
 * that measured both latency (sizes below 64 KiB) and the largest sizes
 * (16 MiB and up): lines stand for every size, so they need both ends. */
static void apply_lines(struct coll_params *p, const struct coll_measurement *m, size_t n, char *report,
                        size_t report_len)
{
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++) {
        const struct coll_measurement *best = NULL;
        for (size_t i = 0; i < n; i++) /* a measurement's kind is one the model times */
            if ((int)m[i].kind == k && !m[i].inter && m[i].ranks > 1 && m[i].n_fits > 0 &&
                (!best || m[i].ranks > best->ranks))
                best = &m[i];
        if (!best)
            continue;
        const struct coll_fit *small = &best->fits[0], *big = &best->fits[best->n_fits - 1];
        struct plan pl[2];
        plans(p, best->kind, best->ranks, 1, pl);
        if (!latency_fit(small) || !(big->busbw_gbps > 0) || big->size_hi < coll_fit_range_lo[COLL_FIT_RANGES - 1] ||
            !(pl[0].steps_intra > 0)) {
            say(report, report_len, "%s: no lines from %s (it needs sizes below 64 KiB and from 16 MiB)\n",
                cost_coll_kind_name(best->kind), best->source);
            continue;
        }
        struct coll_lines *L = &p->lines[best->kind];
        L->n = 0;
        say(report, report_len, "%s in the NVLink domain, from %s (%d ranks):", cost_coll_kind_name(best->kind), best->source,
            best->ranks);
        for (size_t i = 0; i < best->n_fits; i++) {
            const struct coll_fit *f = &best->fits[i];
            if (!(f->busbw_gbps > 0))
                continue;
            struct coll_line *l = &L->v[L->n];
            l->from_bytes = f->size_lo;
            l->to_bytes = f->size_hi;
            l->hop_us = f->alpha_fitted ? fmax(0, f->alpha_us - p->base_us) / pl[0].steps_intra : 0;
            l->busbw_gbps = f->busbw_gbps;
            say(report, report_len, "%s from %.0f B hop %.3f us busbw %.1f GB/s", L->n++ ? ";" : "",
                l->from_bytes, l->hop_us, l->busbw_gbps);
        }
        say(report, report_len, "\n");
    }
}

void cost_coll_params_apply(struct coll_params *p, const struct coll_measurement *m, size_t n,
                       char *report, size_t report_len)
{
    const struct coll_measurement *in = pick(m, n, 0), *x = pick(m, n, 1);
    struct plan pl[2];
    if (in) {
        const struct coll_fit *big = &in->fits[in->n_fits - 1], *small = &in->fits[0];
        plans(p, in->kind, in->ranks, 1, pl);
        if (big->busbw_gbps > 0 && big->size_hi >= coll_fit_range_lo[COLL_FIT_RANGES - 1]) {
            p->intra.busbw_gbps = big->busbw_gbps / pl[0].intra_gain;
            say(report, report_len, "intra busbw %.1f GB/s from %s %s, %d ranks, sizes %.0f-%.0f B\n",
                p->intra.busbw_gbps, in->source, cost_coll_kind_name(in->kind), in->ranks, big->size_lo,
                big->size_hi);
        }
        if (latency_fit(small) && pl[0].steps_intra > 0) {
            p->intra.hop_us = fmax(0, small->alpha_us - p->base_us) / pl[0].steps_intra;
            say(report, report_len, "intra hop %.3f us from alpha %.2f us over %.0f steps (%s)\n",
                p->intra.hop_us, small->alpha_us, pl[0].steps_intra, in->source);
        }
    }
    int g = x ? x->ranks / x->nodes : 0, d = x ? x->nodes : 0;
    if (x && g >= 1 && g * d == x->ranks) {
        const struct coll_fit *big = &x->fits[x->n_fits - 1], *small = &x->fits[0];
        plans(p, x->kind, g, d, pl);
        if (big->busbw_gbps > 0 && big->size_hi >= coll_fit_range_lo[COLL_FIT_RANGES - 1] &&
            pl[0].bytes_inter > 0) {
            double per_byte = cost_coll_bus_factor(x->kind, x->ranks) / big->busbw_gbps;
            double intra = pl[0].bytes_intra > 0 ? pl[0].bytes_intra / (p->intra.busbw_gbps * pl[0].intra_gain) : 0;
            if (per_byte > 1.1 * intra) {
                p->inter.busbw_gbps = pl[0].bytes_inter / per_byte;
                say(report, report_len, "inter busbw %.1f GB/s from %s (%d nodes x %d)\n",
                    p->inter.busbw_gbps, x->source, d, g);
            } else {
                say(report, report_len, "inter busbw kept at %.1f GB/s: %s is bound by NVLink, not the network\n",
                    p->inter.busbw_gbps, x->source);
            }
        }
        if (latency_fit(small) && pl[0].steps_inter > 0) {
            double rest = small->alpha_us - p->base_us - pl[0].steps_intra * p->intra.hop_us;
            p->inter.hop_us = fmax(0, rest) / pl[0].steps_inter;
            say(report, report_len, "inter hop %.3f us from alpha %.2f us over %.0f steps (%s)\n",
                p->inter.hop_us, small->alpha_us, pl[0].steps_inter, x->source);
        }
    }
    apply_lines(p, m, n, report, report_len);
}
