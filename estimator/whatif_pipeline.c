/* estimator/whatif_pipeline.c: the measured work of one micro-batch's
 * passes on a traced job's compute streams (whatif_pipeline.h). */
#include "estimator/whatif_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/structure.h"
#include "model/graph.h"
#include "common/banned.h"

/* A layer's pass (a run of one layer's kernels on a stream), or the work
 * outside layers between two passes (layer -1). */
struct item {
    int32_t layer;
    size_t kernels;
    double ns, modelled_ns;
    int backward;
};

struct items {
    struct item *v;
    size_t n, cap;
};

static int push(struct items *it, int32_t layer)
{
    if (it->n == it->cap) {
        size_t nc = it->cap ? 2 * it->cap : 256;
        struct item *nv = realloc(it->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        it->v = nv;
        it->cap = nc;
    }
    it->v[it->n++] = (struct item){layer, 0, 0, 0, 0};
    return 0;
}

/* The passes and the work between them on rank r's streams, in order. */
static int collect(const struct model_graph *g, const struct job_structure *st, const double *dur,
                   const double *model_ns, const uint8_t *per_mb, uint16_t r, struct items *it)
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
            if ((!open || it->v[it->n - 1].layer != l) && push(it, l))
                return -1;
            open = 1;
            struct item *x = &it->v[it->n - 1];
            x->kernels++;
            x->ns += dur[i];
            x->modelled_ns += model_ns[i] < dur[i] ? model_ns[i] : dur[i];
        }
    }
    return 0;
}

/* A layer's backward pass runs about twice its forward's kernels (the
 * gradients of inputs and of weights), more with recomputation: a pass is
 * backward when it has more than 1.5 times the fewest kernels of that
 * layer's passes, or, where all have as many, takes more than 1.5 times
 * the shortest's time. */
static void classify(struct items *it, int32_t layers)
{
    for (int32_t l = 0; l < layers; l++) {
        size_t fewest = 0, most = 0;
        double shortest = 0;
        for (size_t j = 0; j < it->n; j++) {
            const struct item *x = &it->v[j];
            if (x->layer != l)
                continue;
            if (!fewest || x->kernels < fewest)
                fewest = x->kernels;
            if (x->kernels > most)
                most = x->kernels;
            if (!shortest || x->ns < shortest)
                shortest = x->ns;
        }
        for (size_t j = 0; j < it->n; j++) {
            struct item *x = &it->v[j];
            if (x->layer == l)
                x->backward = 2 * most > 3 * fewest ? 2 * x->kernels > 3 * fewest : 2 * x->ns > 3 * shortest;
        }
    }
}

int whatif_measure_passes(const struct model_graph *g, const struct job_structure *st, const double *dur,
                          const double *model_ns, const uint8_t *per_mb, struct whatif_passes *out,
                          struct sc_error *err)
{
    double f = 0, b = 0, embed = 0, head = 0;
    size_t f_passes = 0, b_passes = 0;
    struct items it = {NULL, 0, 0};
    memset(out, 0, sizeof *out);
    for (uint16_t r = 0; r < g->n_ranks; r++) {
        double r_embed = 0, r_head = 0;
        size_t r_mbs = 0, steps = 0;
        int32_t first = -1, layers = 0;
        it.n = 0;
        if (collect(g, st, dur, model_ns, per_mb, r, &it)) {
            free(it.v);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        for (size_t j = 0; j < it.n; j++)
            if (it.v[j].layer >= 0) {
                if (first < 0 || it.v[j].layer < first)
                    first = it.v[j].layer;
                if (it.v[j].layer + 1 > layers)
                    layers = it.v[j].layer + 1;
            }
        classify(&it, layers);
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
