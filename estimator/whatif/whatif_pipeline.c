/* estimator/whatif/whatif_pipeline.c: the measured work of one micro-batch's
 * passes on a traced job's compute streams (whatif_pipeline.h). */
#include "estimator/whatif/whatif_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/whatif/structure.h"
#include "model/graph.h"
#include "common/vec.h"
#include "common/banned.h"

/* A layer's pass (a run of one layer's kernels on a stream), or the work
 * outside layers between two passes (layer -1): kernels ids[first ..
 * first + kernels). */
struct item {
    int32_t layer;
    size_t first, kernels;
    double ns, modelled_ns;
    int backward;
    size_t split; /* a forward and a backward back to back: the forward's kernels (0: one pass) */
};

struct items {
    struct item *v;
    size_t n, cap;
    uint32_t *ids;
    size_t n_ids, cap_ids;
};

static int push(struct items *it, struct item x)
{
    if (sc_vec_reserve((void **)&it->v, &it->cap, it->n + 1, sizeof *it->v))
        return -1;
    it->v[it->n++] = x;
    return 0;
}

/* The runs of one layer's kernels and the work between them on rank r's
 * streams, in order. */
static int collect(const struct model_graph *g, const struct job_structure *st, const uint8_t *per_mb, uint16_t r,
                   struct items *it)
{
    for (uint32_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != r || !res->gpu)
            continue;
        int open = 0;
        for (uint32_t i = res->first; i != MODEL_NONE; i = g->next[i]) {
            if (g->tasks[i].cls != MODEL_TASK_KERNEL || !per_mb[i])
                continue;
            int32_t l = st->layer[i];
            if ((!open || it->v[it->n - 1].layer != l) && push(it, (struct item){l, it->n_ids, 0, 0, 0, 0, 0}))
                return -1;
            open = 1;
            if (sc_vec_reserve((void **)&it->ids, &it->cap_ids, it->n_ids + 1, sizeof *it->ids))
                return -1;
            it->ids[it->n_ids++] = i;
            it->v[it->n - 1].kernels++;
        }
    }
    return 0;
}

/* x's measured and modelled time: the sums over its kernels ids[first ..
 * first + kernels), the modelled part of each at most its duration. */
static void time_item(const double *dur, const double *model_ns, const uint32_t *ids, struct item *x)
{
    x->ns = x->modelled_ns = 0;
    for (size_t k = x->first; k < x->first + x->kernels; k++) {
        uint32_t i = ids[k];
        x->ns += dur[i];
        x->modelled_ns += model_ns[i] < dur[i] ? model_ns[i] : dur[i];
    }
}

/* Each run split into passes and each pass classified. A layer's backward
 * runs about twice its forward's kernels (the gradients of inputs and of
 * weights), more with recomputation: with K_f the fewest kernels of the
 * layer's runs and K_b the fewest of those above 1.5 K_f, a run of K_f +
 * K_b kernels is a forward and a backward back to back (1F1B's steady
 * state: the forward first after a forward, else the backward first), a
 * run of more than 1.5 K_f a backward; where all runs have as many
 * kernels, one taking more than 1.5 times the shortest's time is. */
static int passes(const double *dur, const double *model_ns, int32_t layers, struct items *in, struct items *out)
{
    for (int32_t l = -1; l < layers; l++) {
        size_t kf = 0, kb = 0;
        double shortest = 0;
        for (size_t j = 0; j < in->n; j++)
            if (in->v[j].layer == l && (!kf || in->v[j].kernels < kf))
                kf = in->v[j].kernels;
        for (size_t j = 0; j < in->n; j++) {
            const struct item *x = &in->v[j];
            if (x->layer == l && 2 * x->kernels > 3 * kf && (!kb || x->kernels < kb))
                kb = x->kernels;
        }
        for (size_t j = 0; j < in->n; j++) {
            struct item *x = &in->v[j];
            if (x->layer != l)
                continue;
            time_item(dur, model_ns, in->ids, x);
            if (!shortest || x->ns < shortest)
                shortest = x->ns;
        }
        for (size_t j = 0; j < in->n; j++) {
            struct item *x = &in->v[j];
            if (x->layer != l || l < 0)
                continue;
            x->backward = kb ? 2 * x->kernels > 3 * kf : 2 * x->ns > 3 * shortest;
            x->split = kb && x->kernels == kf + kb ? kf : 0;
        }
    }
    int prev_bwd = 0;
    for (size_t j = 0; j < in->n; j++) {
        struct item x = in->v[j];
        if (!x.split) {
            if (push(out, x))
                return -1;
            if (x.layer >= 0)
                prev_bwd = x.backward;
            continue;
        }
        size_t kf = x.split, kb = x.kernels - kf;
        struct item a = {x.layer, x.first, prev_bwd ? kb : kf, 0, 0, prev_bwd, 0},
                    c = {x.layer, x.first + a.kernels, prev_bwd ? kf : kb, 0, 0, !prev_bwd, 0};
        for (int h = 0; h < 2; h++) {
            struct item *y = h ? &c : &a;
            time_item(dur, model_ns, in->ids, y);
            if (push(out, *y))
                return -1;
        }
        prev_bwd = c.backward;
    }
    return 0;
}

int whatif_measure_passes(const struct model_graph *g, const struct job_structure *st, const double *dur,
                          const double *model_ns, const uint8_t *per_mb, struct whatif_passes *out,
                          struct sc_error *err)
{
    double f = 0, b = 0, embed = 0, head = 0;
    size_t f_passes = 0, b_passes = 0;
    struct items runs = {0}, it = {0};
    memset(out, 0, sizeof *out);
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        double r_embed = 0, r_head = 0;
        size_t r_mbs = 0, steps = 0;
        int32_t first = -1, layers = 0;
        runs.n = runs.n_ids = it.n = 0;
        if (collect(g, st, per_mb, r, &runs)) {
            free(runs.v);
            free(runs.ids);
            free(it.v);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        for (size_t j = 0; j < runs.n; j++)
            if (runs.v[j].layer >= 0) {
                if (first < 0 || runs.v[j].layer < first)
                    first = runs.v[j].layer;
                if (runs.v[j].layer + 1 > layers)
                    layers = runs.v[j].layer + 1;
            }
        if (passes(dur, model_ns, layers, &runs, &it)) {
            free(runs.v);
            free(runs.ids);
            free(it.v);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        /* outside layers: after a forward pass, the output layer and the
         * loss; else the embedding */
        int after_forward = 0;
        for (size_t j = 0; j < it.n; j++) {
            const struct item *x = &it.v[j];
            if (x->layer < 0) {
                *(after_forward ? &r_head : &r_embed) += x->ns;
                continue;
            }
            *(x->backward ? &b : &f) += x->ns;
            *(x->backward ? &b_passes : &f_passes) += 1;
            r_mbs += !x->backward && x->layer == first;
            out->measured_ns += x->ns;
            out->modelled_ns += x->modelled_ns;
            after_forward = !x->backward;
        }
        if (r_mbs) {
            embed += r_embed / (double)r_mbs;
            head += r_head / (double)r_mbs;
        }
        /* micro-batches per step: the first layer's forward passes over
         * the rank's steps */
        for (size_t s = 0; s < g->n_steps; s++)
            steps += g->steps[s].rank == r;
        if (steps && (int)(r_mbs / steps) > out->micro_batches)
            out->micro_batches = (int)(r_mbs / steps);
    }
    free(it.v);
    free(runs.v);
    free(runs.ids);
    if (!f_passes || !b_passes)
        return sc_error_set(err, SC_EINVAL,
                            "set.pp: regrouping stages needs the traced layers' forward and backward passes, and "
                            "the trace shows %s",
                            !f_passes && !b_passes ? "no layer" : !f_passes ? "no forward pass" : "no backward pass");
    out->ns.layer_f[0] = out->ns.layer_f[1] = (int64_t)(f / (double)f_passes);
    out->ns.layer_b[0] = out->ns.layer_b[1] = (int64_t)(b / (double)b_passes);
    out->ns.embed_f = (int64_t)embed;
    out->ns.head_f = (int64_t)head;
    return SC_OK;
}
