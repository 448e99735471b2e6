/* estimator/synth/estimate.c: synthesise, replay, and derive the figures of an
 * estimate (estimate.h). */
#include "estimator/synth/estimate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/memory.h"
#include "model/graph.h"
#include "common/banned.h"

/* Idle time of the rank's compute stream inside its step: the step less
 * its busy time (the synthesiser labels that stream "compute"). */
static double compute_idle_ms(const struct model_graph *g, const struct model_replay *rp,
                              const struct model_replay_step *st)
{
    int64_t busy = 0, cur_s = 0, cur_e = -1;
    for (size_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != st->rank || !res->gpu || strcmp(sc_strtab_str(&g->names, res->label), "compute") != 0)
            continue;
        for (uint32_t t = res->first; t != MODEL_NONE; t = g->next[t]) {
            int64_t s = rp->start[t] > st->start ? rp->start[t] : st->start;
            int64_t e = rp->end[t] < st->end ? rp->end[t] : st->end;
            if (e <= s)
                continue;
            if (s > cur_e) { /* a stream's tasks do not overlap: intervals come in order */
                if (cur_e > cur_s)
                    busy += cur_e - cur_s;
                cur_s = s;
            }
            if (e > cur_e)
                cur_e = e;
        }
    }
    if (cur_e > cur_s)
        busy += cur_e - cur_s;
    return (double)(st->end - st->start - busy) / 1e6;
}

double synth_graph_flops(const struct model_graph *g, const struct est_spec *s)
{
    double sum = 0;
    for (size_t i = 0; i < g->n_parts; i++)
        sum += g->parts[i].flops;
    return sum * (double)(s->parallel.tp * s->parallel.cp * s->parallel.dp);
}

double synth_mfu(const struct est_spec *s, const struct hw_profile *hw, double step_ms)
{
    double peak = hw->peak_tflops[s->options.dtype] * 1e12 * (double)spec_gpus(s);
    double tokens_per_s = step_ms > 0 ? (double)(s->parallel.global_batch * s->model.seq) / (step_ms / 1e3) : 0;
    return peak > 0 ? spec_model_flops_per_token(&s->model) * tokens_per_s / peak : 0;
}

int synth_estimate_derive(const struct est_spec *s, const struct hw_profile *hw, const struct est_memory *mem,
                        struct est_estimate *out, struct sc_error *err)
{
    double step_s = out->step_ms / 1e3;
    double tokens = (double)(s->parallel.global_batch * s->model.seq);
    out->gpus = (double)spec_gpus(s);
    out->tokens_per_s = step_s > 0 ? tokens / step_s : 0;
    double peak = hw->peak_tflops[s->options.dtype] * 1e12 * out->gpus;
    out->mfu = synth_mfu(s, hw, out->step_ms);
    struct est_spec run; /* with the recomputation estimated (auto resolved) */
    spec_memory_chosen_spec(s, mem, &run);
    double hw_flops = spec_hardware_flops_per_token(&run);
    out->hfu = peak > 0 ? hw_flops * out->tokens_per_s / peak : 0;
    if (!(out->executed_flops > 0))
        out->executed_flops = hw_flops * tokens;
    out->executed_flops_util = peak > 0 && step_s > 0 ? out->executed_flops / step_s / peak : 0;
    out->memory_gb_per_gpu = mem->gb_per_gpu;
    out->memory_usable_gb = mem->capacity_gb;
    out->memory_attention = s->options.attention == EST_ATTENTION_UNFUSED ? "unfused" : "flash";
    out->recompute_chosen = spec_recompute_name(mem->recompute);
    out->recompute_layers_chosen = mem->recompute == EST_RECOMPUTE_FULL ? mem->recompute_layers : 0;
    out->fits = mem->fits;
    if (!mem->fits)
        snprintf(out->fits_reason, sizeof out->fits_reason,
                 "pipeline rank %lld needs %.1f GB; %s has %.1f GB after the %.1f GB reserve",
                 (long long)mem->worst_stage, mem->gb_per_gpu, hw->id, mem->capacity_gb,
                 hw->hbm_gb - mem->capacity_gb);
    struct est_cost per_m;
    synth_cost_of(out->gpus, tokens > 0 ? step_s / (tokens / 1e6) : 0, hw, s->cluster.gpu_hour_usd, &per_m);
    out->gpu_hours_per_m_tokens = per_m.gpu_hours;
    out->energy_kwh_per_m_tokens = per_m.energy_kwh;
    out->cost_usd_per_m_tokens = per_m.cost_usd;
    out->time_to_train_days = s->options.train_tokens > 0 && out->tokens_per_s > 0 ?
                                  s->options.train_tokens / out->tokens_per_s / 86400 : -1;
    if (!(isfinite(out->step_ms) && out->step_ms > 0))
        return sc_error_set(err, SC_ENUMERIC, "the estimate is not physical: a step of %g ms", out->step_ms);
    if (!(isfinite(out->mfu) && out->mfu > 0 && out->mfu <= 1))
        return sc_error_set(err, SC_ENUMERIC,
                            "the estimate is not physical: MFU %.3g (a step of %.6g ms on %.0f x %s) is outside "
                            "(0, 1]",
                            out->mfu, out->step_ms, out->gpus, hw->id);
    return SC_OK;
}

int synth_estimate_admit(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       enum est_detail d, double budget, const char *budget_name, struct sc_error *err)
{
    struct est_synth_size size;
    int rc = synth_size(s, hw, c, d, &size, err);
    if (rc || size.bytes <= budget)
        return rc;
    return sc_error_set(err, SC_ELIMIT,
                        "the estimate needs an estimated %.1f MiB (%lld tasks at %s detail), more than %s, %.1f MiB: "
                        "estimate at a coarser detail, or with fewer micro-batches (parallel.global_batch)",
                        size.bytes / 1048576.0, (long long)size.tasks, synth_detail_name(d), budget_name,
                        budget / 1048576.0);
}

void synth_cost_of(double gpus, double seconds, const struct hw_profile *hw, double gpu_hour_usd, struct est_cost *out)
{
    out->gpu_hours = gpus * seconds / 3600;
    out->energy_kwh = hw ? out->gpu_hours * hw->board_power_w / 1000 : -1;
    out->cost_usd = gpu_hour_usd >= 0 ? out->gpu_hours * gpu_hour_usd : -1;
}

int synth_estimate(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                 enum est_detail detail, struct est_estimate *out, struct sc_error *err)
{
    struct model_graph *g = NULL;
    struct model_replay *rp = NULL;
    struct model_replay_opts ro;
    struct est_memory mem;
    struct est_spec chosen; /* s with recompute "auto" resolved */
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = spec_memory_estimate(s, hw->hbm_gb, &mem, err)))
        return rc;
    spec_memory_chosen_spec(s, &mem, &chosen);
    s = &chosen;
    if ((rc = synth_unnamed(s, hw, c, detail, &g, err))) {
        spec_memory_release(&mem);
        return rc;
    }
    model_replay_opts_steps(&ro);
    if ((rc = model_replay_run(g, &ro, &rp, err))) {
        spec_memory_release(&mem);
        model_graph_free(g);
        return rc;
    }
    out->stages = calloc(rp->n_steps ? rp->n_steps : 1, sizeof *out->stages);
    if (!out->stages) {
        spec_memory_release(&mem);
        model_replay_free(rp);
        model_graph_free(g);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < rp->n_steps; i++) {
        const struct model_replay_step *st = &rp->steps[i];
        struct est_stage_estimate *e = &out->stages[out->n_stages++];
        e->stage = (int)st->rank;
        e->step_ms = (double)st->replayed_ns / 1e6;
        if (st->rank < mem.n_stages) {
            const struct est_stage_memory *sm = &mem.stages[st->rank];
            e->memory_gb = sm->total / 1e9;
            e->weights_gb = sm->states.weights / 1e9;
            e->gradients_gb = sm->states.gradients / 1e9;
            e->optimizer_gb = sm->states.optimizer / 1e9;
            e->activations_gb = sm->activations / 1e9;
        }
        e->bubble_ms = compute_idle_ms(g, rp, st);
    }
    out->tasks = g->n_tasks;
    out->executed_flops = synth_graph_flops(g, s);
    const struct model_replay_step *slow = model_replay_slowest(rp);
    if (slow) {
        out->step_ms = (double)slow->replayed_ns / 1e6;
        out->breakdown = slow->breakdown;
    }

    rc = synth_estimate_derive(s, hw, &mem, out, err);
    spec_memory_release(&mem);
    model_replay_free(rp);
    model_graph_free(g);
    if (rc)
        synth_estimate_release(out);
    return rc;
}

void synth_estimate_release(struct est_estimate *e)
{
    free(e->stages);
    memset(e, 0, sizeof *e);
}
