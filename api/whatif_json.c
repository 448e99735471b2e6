/* api/whatif_json.c: what-if and structure documents (whatif_json.h). */
#include "api/whatif_json.h"

#include "api/ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_reply.h"
#include "api/reply.h"
#include "api/replay_json.h"
#include "estimator/synth/estimate.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"
#include "estimator/synth/synth_compare.h"
#include "estimator/whatif/whatif.h"
#include "common/banned.h"

static json_t *num(double v)
{
    return json_real(round(v * 1e6) / 1e6);
}

json_t *api_job_config_json(const struct job_config *c)
{
    char *text = spec_job_config_json(c);
    json_error_t je;
    json_t *o = text ? json_loads(text, 0, &je) : NULL;
    free(text);
    return o;
}

json_t *api_structure_json(const struct job_structure *s)
{
    json_t *colls = json_object(), *uses = json_object();
    for (int r = STRUCT_ROLE_DP; r < STRUCT_ROLE_COUNT; r++)
        json_object_set_new(colls, whatif_struct_role_name((enum struct_role)r),
                            json_pack("{s:I,s:o}", "count", (json_int_t)s->by_role[r], "ms", num(s->role_ms[r])));
    double steps = s->steps ? (double)s->steps : 1;
    for (int u = STRUCT_DP_GRADS; u < STRUCT_DP_USE_COUNT; u++)
        json_object_set_new(uses, whatif_struct_dp_use_name((enum struct_dp_use)u),
                            json_pack("{s:I,s:o,s:o,s:o}", "count", (json_int_t)s->by_use[u], "per_step",
                                      num((double)s->by_use[u] / steps), "bytes_per_step",
                                      num(s->use_bytes[u] / steps), "ms", num(s->use_ms[u])));
    json_t *passes =
        json_pack("{s:b,s:I,s:I,s:i,s:i}", "recorded", s->backward_tasks > 0 || s->layers_forward > 0,
                  "backward_tasks", (json_int_t)s->backward_tasks, "gradient_accumulation_tasks",
                  (json_int_t)s->param_work_tasks, "layers_forward", s->layers_forward, "layers_backward",
                  s->layers_backward);
    json_t *stack = json_pack("{s:s,s:I,s:I}", "kind",
                              s->inductor_kernels || s->compiled_regions ? "torch.compile" : "eager",
                              "inductor_kernels", (json_int_t)s->inductor_kernels, "compiled_regions",
                              (json_int_t)s->compiled_regions);
    return json_pack("{s:i,s:s,s:I,s:o,s:s,s:o,s:o,s:o,s:o,s:s,s:o}", "layers_per_rank", s->layers_per_rank,
                     "layers_from", whatif_struct_layer_source_name(s->layer_source), "layer_tasks",
                     (json_int_t)s->layer_tasks, "gpu", s->gpu ? json_string(s->gpu->id) : json_null(), "device_name",
                     s->device_name, "world_size", s->world_size > 0 ? json_integer(s->world_size) : json_null(),
                     "collectives", colls, "stack", stack, "passes", passes, "gradient_reduction",
                     whatif_struct_grad_sync_name(s->grad_sync), "data_parallel", uses);
}

/* Unrounded: a step's GPU-hours are millionths. */
static json_t *cost_json(const struct est_cost *c)
{
    return json_pack("{s:f, s:o, s:o}", "gpu_hours", c->gpu_hours, "energy_kwh",
                     c->energy_kwh >= 0 ? json_real(c->energy_kwh) : json_null(), "cost_usd",
                     c->cost_usd >= 0 ? json_real(c->cost_usd) : json_null());
}

/* One configuration's step of step_ms priced: per step and per million
 * tokens. */
static json_t *priced(const struct job_config *c, double step_ms, double gpu_hour_usd)
{
    const struct hw_profile *hw = c->gpu[0] ? cost_hw_profile_find(c->gpu) : NULL;
    double gpus = (double)spec_job_config_world_size(c), tokens = (double)c->global_batch * (double)c->seq;
    struct est_cost step, per_m;
    synth_cost_of(gpus, step_ms / 1e3, hw, gpu_hour_usd, &step);
    synth_cost_of(gpus, tokens > 0 ? step_ms / 1e3 / (tokens / 1e6) : 0, hw, gpu_hour_usd, &per_m);
    return json_pack("{s:I, s:o, s:o, s:o}", "gpus", (json_int_t)gpus, "gpu", hw ? json_string(hw->id) : json_null(),
                     "per_step", cost_json(&step), "per_m_tokens", tokens > 0 ? cost_json(&per_m) : json_null());
}

/* A breakdown part's provenance: the share of its work's time a model
 * gave and, in words, where it came from. */
static json_t *source_json(double share)
{
    share = round(share * 1e6) / 1e6;
    return json_pack("{s:f, s:s}", "modelled_share", share, "source",
                     share <= 0 ? "measured" : share >= 1 ? "modelled" : "measured and modelled");
}

/* Each part of the what-if's breakdown (replay_json's `breakdown`): from
 * measurement (carried from traced durations) or from models (re-priced
 * by a cost model), by the work that fills it (whatif.h modelled_share_*);
 * idle time is no work's. */
static json_t *breakdown_sources(const struct whatif_result *r)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:{s:n, s:s}}", "compute_exposed",
                     source_json(r->modelled_share_compute), "overlap", source_json(r->modelled_share_overlap),
                     "comm_exposed", source_json(r->modelled_share_comm), "unexplained", source_json(0), "host",
                     source_json(r->modelled_share_host), "idle", "modelled_share", "source", "no work");
}

json_t *api_whatif_json(const struct whatif_result *r, double gpu_hour_usd)
{
    json_t *doc = api_replay_json(r->replay), *models = json_array();
    if (!doc || !models) {
        json_decref(doc);
        json_decref(models);
        return NULL;
    }
    for (int m = 0; m < WHATIF_MODEL_COUNT; m++) {
        const struct whatif_model_use *u = &r->models[m];
        if (!u->tasks)
            continue;
        json_array_append_new(models, json_pack("{s:s,s:I,s:o,s:s}", "model", u->name, "tasks", (json_int_t)u->tasks,
                                                "ms", num(u->ms), "why", u->why));
    }
    if (r->host_exposed_ms > 0) {
        char why[384], prof[128] = "";
        if (r->profiler_ms > 0)
            snprintf(prof, sizeof prof, " less the profiler's cost per operator it recorded (%.3f ms a step)",
                     r->profiler_ms);
        snprintf(why, sizeof why,
                 "not a model: the traced job's host work kept at its measured pace%s; the GPUs wait %.3f ms of the "
                 "step (%.1f%%) for it, where a spec's estimate has its stack's host costs",
                 prof, r->host_exposed_ms, r->step_ms > 0 ? 100 * r->host_exposed_ms / r->step_ms : 0);
        json_array_append_new(models, json_pack("{s:s,s:I,s:o,s:s}", "model", "traced_host", "tasks", (json_int_t)0,
                                                "ms", num(r->host_exposed_ms), "why", why));
    }
    if (r->has_memory) {
        json_array_append_new(models, json_pack("{s:s,s:I,s:o,s:s}", "model", "memory_model", "tasks", (json_int_t)0,
                                                "ms", num(0), "why", "the target's memory per GPU and whether it fits"));
    }
    json_object_set_new(doc, "base", api_job_config_json(&r->base));
    json_object_set_new(doc, "target", api_job_config_json(&r->target));
    json_object_set_new(doc, "step_ms", num(r->step_ms));
    json_object_set_new(doc, "base_step_ms", num(r->base_step_ms));
    json_object_set_new(doc, "profiler_ms", num(r->profiler_ms));
    json_object_set_new(doc, "profiled_step_ms", r->profiled_step_ms > 0 ? num(r->profiled_step_ms) : json_null());
    json_object_set_new(doc, "from_measured_ms", num(r->from_measured_ms));
    json_object_set_new(doc, "from_models_ms", num(r->from_models_ms));
    json_object_set_new(doc, "models_used", models);
    json_object_set_new(doc, "breakdown_sources", breakdown_sources(r));
    json_object_set_new(doc, "collective_transfer_ms", num(r->collective_transfer_ms));
    json_object_set_new(doc, "collective_wait_ms", num(r->collective_wait_ms));
    json_object_set_new(doc, "memory_gb_per_gpu", r->has_memory ? num(r->memory_gb_per_gpu) : json_null());
    json_object_set_new(doc, "fits", r->has_memory ? json_boolean(r->fits) : json_null());
    json_object_set_new(doc, "structure", api_structure_json(&r->structure));
    json_object_set_new(doc, "cost",
                        json_pack("{s:o, s:o, s:s}", "base", priced(&r->base, r->base_step_ms, gpu_hour_usd), "target",
                                  priced(&r->target, r->step_ms, gpu_hour_usd), "energy",
                                  "kWh at the GPUs' board power: an upper bound"));
    return doc;
}

json_t *api_synth_compare_json(const struct synth_compare *c)
{
    json_t *a = json_array();
    for (int f = 0; a && f < MODEL_KF_COUNT; f++)
        if (c->traced_kernels[f] > 0 || c->synth_kernels[f] > 0)
            json_array_append_new(a, json_pack("{s:s,s:o,s:o,s:o,s:o}", "family",
                                               model_kernel_family_name((enum model_kernel_family)f), "traced_ms",
                                               num(c->traced_ms[f]), "synth_ms", num(c->synth_ms[f]),
                                               "traced_kernels", num(c->traced_kernels[f]), "synth_kernels",
                                               num(c->synth_kernels[f])));
    return a;
}

int api_decode_whatif(const char *body, size_t len, struct job_config *set, struct api_reply *r)
{
    json_error_t je;
    struct sc_error err;
    json_t *doc = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je), *v;
    const char *k;
    int rc = SC_OK;
    if (!json_is_object(doc)) {
        json_decref(doc);
        return api_fail(r, API_E_INVALID_JSON, "the body must be a JSON object {\"set\":{...}}");
    }
    json_object_foreach(doc, k, v)
    {
        if (strcmp(k, "set") != 0) {
            rc = api_fail(r, API_E_INVALID_JSON, "%s: unknown key (give {\"set\":{...}})", k);
            break;
        }
    }
    json_t *s = json_object_get(doc, "set");
    if (!rc && !json_is_object(s))
        rc = api_fail(r, API_E_INVALID_JSON, "set: required, an object of what to change");
    if (!rc) {
        char *text = json_dumps(s, JSON_COMPACT);
        if (!text)
            rc = api_fail(r, API_E_UNAVAILABLE, "out of memory");
        else if (spec_job_config_parse_set_json(text, strlen(text), set, &err))
            rc = api_fail(r, API_E_INVALID_JSON, "%s", err.msg);
        free(text);
    }
    json_decref(doc);
    return rc;
}

/* The keys of a job's config that a job description has (seq_len read as
 * seq), as compact JSON text (malloc'd); NULL without a config or memory. */
static char *config_known(const char *description)
{
    json_t *doc = description ? json_loads(description, 0, NULL) : NULL;
    json_t *cfg = json_object_get(doc, "config"), *kept = json_object();
    const char *const *keys = spec_job_config_keys();
    for (size_t i = 0; cfg && kept && keys[i]; i++) {
        char top[64]; /* "moe" of "moe.experts": the object is kept whole */
        snprintf(top, sizeof top, "%.*s", (int)strcspn(keys[i], "."), keys[i]);
        json_t *v = json_object_get(cfg, top);
        if (!v && strcmp(top, "seq") == 0)
            v = json_object_get(cfg, "seq_len");
        if (v && strcmp(top, "gpu") != 0)
            json_object_set(kept, top, v);
    }
    char *text = cfg && kept ? json_dumps(kept, JSON_COMPACT) : NULL;
    json_decref(kept);
    json_decref(doc);
    return text;
}

int api_job_config_check(const char *description, struct sc_error *err)
{
    struct job_config c;
    char *text = config_known(description);
    int rc = SC_OK;
    spec_job_config_init(&c);
    if (text && (rc = spec_job_config_parse_set_json(text, strlen(text), &c, err)) &&
        strncmp(err->msg, "set.", 4) == 0) { /* named as the description names it */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "config.%s", err->msg + 4);
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    free(text);
    return rc;
}

int api_job_config_from_job(const char *description, struct job_config *out, struct sc_error *err)
{
    json_t *doc = description ? json_loads(description, 0, NULL) : NULL;
    json_t *cfg = json_object_get(doc, "config");
    int rc;
    char *text = config_known(description);
    if (!cfg)
        rc = sc_error_set(err, SC_EINVAL,
                          "the job has no config: give its tp, pp and dp with PUT /v1/jobs/{job} "
                          "{\"config\":{\"tp\":..,\"pp\":..,\"dp\":..}}");
    else if (!text)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    else if ((rc = spec_job_config_parse(text, strlen(text), out, err)))
        sc_error_prefix(err, "the job's config");
    free(text);
    json_decref(doc);
    return rc;
}

int api_reply_whatif(struct api_reply *r, const struct whatif_result *res, const struct ledger_band *band,
                     double gpu_hour_usd)
{
    json_t *doc = api_whatif_json(res, gpu_hour_usd);
    if (doc && band && json_object_set_new(doc, "band", ledger_band_json(band, API_LEDGER_WHATIF, res->step_ms)))
        doc = (json_decref(doc), NULL);
    if (!doc)
        return api_fail(r, API_E_UNAVAILABLE, "out of memory");
    return api_reply_json(r, 200, doc);
}
