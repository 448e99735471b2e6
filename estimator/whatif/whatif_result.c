/* estimator/whatif/whatif_result.c: a what-if's answer accounted for
 * (whatif_result.h): the steps it averages, the share of each kind of work
 * a model gave, and the critical paths split into measured and modelled
 * time. */
#include "estimator/whatif/whatif_result.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "model/graph.h"
#include "model/replay.h"
#include "common/banned.h"

void whatif_release(struct whatif_result *r)
{
    if (!r)
        return;
    model_replay_free(r->replay);
    model_graph_free(r->graph);
    whatif_job_structure_release(&r->structure);
    r->replay = NULL;
    r->graph = NULL;
}

/* Whether the answer averages step s of r: the complete steps, or every
 * step when none is complete (`complete`: whether any is). The step time
 * and its split into measured and modelled time average the same steps. */
static int averaged(const struct model_replay *r, size_t s, int complete)
{
    return !complete || !r->steps[s].partial;
}

static int any_complete(const struct model_replay *r)
{
    for (size_t s = 0; s < r->n_steps; s++)
        if (!r->steps[s].partial)
            return 1;
    return 0;
}

/* The mean of the steps averaged, ms; *steps (when not NULL) gets how
 * many, *host_ms (when not NULL) the mean time they wait on the host (the
 * replay's breakdown). */
double whatif_mean_step_ms(const struct model_replay *r, size_t *steps, double *host_ms)
{
    double sum = 0, host = 0;
    size_t n = 0;
    int complete = any_complete(r);
    for (size_t s = 0; s < r->n_steps; s++)
        if (averaged(r, s, complete)) {
            sum += (double)r->steps[s].replayed_ns;
            host += (double)r->steps[s].breakdown.host;
            n++;
        }
    if (steps)
        *steps = n;
    if (host_ms)
        *host_ms = n ? host / (double)n / 1e6 : 0;
    return n ? sum / (double)n / 1e6 : 0;
}

void whatif_provenance_add(struct whatif_provenance *p, const struct model_task *t, double modelled)
{
    double d = (double)t->dur;
    if (t->cls == MODEL_TASK_COMM) {
        p->comm += d;
        p->comm_model += d * modelled;
    } else if (model_task_on_gpu(t->cls)) {
        p->compute += d;
        p->compute_model += d * modelled;
    } else {
        d += (double)t->gap;
        p->host += d;
        p->host_model += d * modelled;
    }
}

void whatif_provenance_set(const struct whatif_provenance *p, struct whatif_result *out)
{
    out->modelled_share_compute = p->compute > 0 ? p->compute_model / p->compute : 0;
    out->modelled_share_comm = p->comm > 0 ? p->comm_model / p->comm : 0;
    out->modelled_share_overlap =
        p->compute + p->comm > 0 ? (p->compute_model + p->comm_model) / (p->compute + p->comm) : 0;
    out->modelled_share_host = p->host > 0 ? p->host_model / p->host : 0;
}

int whatif_result_attribute(struct whatif_result *out, const struct model_graph *g, const uint32_t *map,
                            const double *dur, const double *model_ns, const uint8_t *model, struct sc_error *err)
{
    const struct model_graph *c = out->graph;
    const struct model_replay *r = out->replay;
    uint32_t *src = malloc((c->n_tasks ? c->n_tasks : 1) * sizeof *src);
    if (!src)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < c->n_tasks; i++)
        src[i] = MODEL_NONE; /* inserted */
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        assert(map[i] < c->n_tasks);
        src[map[i]] = i;
    }
    struct whatif_provenance pv = {0};
    for (uint32_t k = 0; k < c->n_tasks; k++) { /* inserted tasks are the collective model's */
        uint32_t i = src[k];
        double d = i == MODEL_NONE ? 1 : dur[i];
        double share = i == MODEL_NONE ? 1 : model_ns[i] > 0 && d > 0 ? fmin(model_ns[i] / d, 1) : 0;
        whatif_provenance_add(&pv, &c->tasks[k], share);
    }
    whatif_provenance_set(&pv, out);
    double models[WHATIF_MODEL_COUNT] = {0}, total = 0;
    size_t n = 0;
    int complete = any_complete(r);
    for (size_t s = 0; s < r->n_steps; s++) {
        const struct model_replay_step *st = &r->steps[s];
        if (!averaged(r, s, complete))
            continue;
        n++;
        total += (double)st->replayed_ns;
        for (size_t k = st->path_first; k < st->path_first + st->path_n; k++) {
            const struct model_replay_segment *seg = &r->segments[k];
            double len = (double)(seg->end - seg->start);
            uint32_t i = src[seg->task];
            if (seg->bound == MODEL_BOUND_HOST)
                continue;
            if (i == MODEL_NONE) {
                models[WHATIF_COLLECTIVE_MODEL] += len;
                continue;
            }
            double d = dur[i];
            if (model_ns[i] > 0 && d > 0)
                models[model[i]] += len * (model_ns[i] < d ? model_ns[i] / d : 1.0);
        }
    }
    free(src);
    if (!n)
        return SC_OK;
    out->from_models_ms = 0;
    for (int m = 0; m < WHATIF_MODEL_COUNT; m++) {
        out->models[m].ms = models[m] / (double)n / 1e6;
        out->from_models_ms += out->models[m].ms;
    }
    out->from_measured_ms = total / (double)n / 1e6 - out->from_models_ms;
    return SC_OK;
}
