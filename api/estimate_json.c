/* api/estimate_json.c: the estimate document (estimate_json.h). */
#include "api/estimate_json.h"

#include <math.h>

#include <string.h>

#include "api/inspect_json.h"
#include "api/ledger.h"
#include "estimator/synth/estimate.h"
#include "common/banned.h"

/* Figures rounded to what they can mean: 4 significant decimals of a ms. */
static json_t *num(double v)
{
    return json_real(round(v * 1e4) / 1e4);
}

static json_t *num_or_null(double v)
{
    return v < 0 ? json_null() : num(v);
}

json_t *api_estimate_json(const struct est_estimate *e)
{
    json_t *stages = json_array();
    const struct model_breakdown *b = &e->breakdown;
    for (size_t i = 0; stages && i < e->n_stages; i++) {
        const struct est_stage_estimate *s = &e->stages[i];
        if (json_array_append_new(stages, json_pack("{s:i, s:o, s:o, s:o, s:{s:o, s:o, s:o, s:o}}", "stage",
                                                    s->stage, "step_ms", num(s->step_ms), "memory_gb",
                                                    num(s->memory_gb), "bubble_ms", num(s->bubble_ms), "memory",
                                                    "weights_gb", num(s->weights_gb), "gradients_gb",
                                                    num(s->gradients_gb), "optimizer_gb", num(s->optimizer_gb),
                                                    "activations_gb", num(s->activations_gb)))) {
            json_decref(stages);
            return NULL;
        }
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s, s:o, s:b, s:s*, s:{s:o, s:o, s:o, s:o, s:o}, "
                     "s:o*, s:o, s:o, s:o, s:o, s:o, s:I, s:s}",
                     "step_ms", num(e->step_ms), "tokens_per_s", num(e->tokens_per_s), "mfu",
                     json_real(round(e->mfu * 1e6) / 1e6), "hfu", json_real(round(e->hfu * 1e6) / 1e6),
                     "executed_flops", num(e->executed_flops), "executed_flops_util",
                     json_real(round(e->executed_flops_util * 1e6) / 1e6),
                     "memory_gb_per_gpu", num(e->memory_gb_per_gpu), "memory_usable_gb",
                     num(e->memory_usable_gb), "memory_attention",
                     e->memory_attention ? e->memory_attention : "flash", "recompute_chosen",
                     e->recompute_chosen ? e->recompute_chosen : "none", "recompute_layers_chosen",
                     e->recompute_layers_chosen ? json_integer((json_int_t)e->recompute_layers_chosen) : json_null(),
                     "fits", e->fits, "fits_reason",
                     e->fits ? NULL : e->fits_reason, "breakdown", "compute_exposed",
                     api_json_ms(b->compute_exposed), "overlap", api_json_ms(b->overlap), "comm_exposed",
                     api_json_ms(b->comm_exposed), "host", api_json_ms(b->host), "idle", api_json_ms(b->idle),
                     "per_stage", stages, "gpus", num(e->gpus), "gpu_hours_per_m_tokens",
                     num(e->gpu_hours_per_m_tokens), "energy_kwh_per_m_tokens", num(e->energy_kwh_per_m_tokens),
                     "cost_usd_per_m_tokens", num_or_null(e->cost_usd_per_m_tokens), "time_to_train_days",
                     num_or_null(e->time_to_train_days), "tasks", (json_int_t)e->tasks, "notes",
                     "energy counts the GPUs alone at board power (an upper bound); time_to_train_days assumes "
                     "this step time throughout, with no failures or restarts");
}

char *api_estimate_text(const struct est_estimate *e, const struct ledger_band *band, size_t *len)
{
    json_t *doc = api_estimate_json(e);
    char *text = NULL;
    if (doc && !json_object_set_new(doc, "band", ledger_band_json(band, API_LEDGER_ESTIMATE, e->step_ms)))
        text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(doc);
    *len = text ? strlen(text) : 0;
    return text;
}
