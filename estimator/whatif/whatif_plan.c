/* estimator/whatif/whatif_plan.c: the planner's template and evaluator over a
 * traced job (whatif_plan.h). */
#include "estimator/whatif/whatif_plan.h"

#include <stdio.h>
#include <string.h>

#include "estimator/whatif/job_check.h"
#include "estimator/spec/memory.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/whatif.h"
#include "model/replay.h"
#include "common/banned.h"

/* What a what-if cannot change: fixed in the template at its values. */
static const char *const kept[] = {"parallel.cp", "parallel.schedule", "parallel.vpp", "options.recompute",
                                   "options.sequence_parallel", "options.zero_stage"};

static void give(struct est_spec_given *given, const char *path)
{
    const char *const *keys = spec_keys();
    for (size_t i = 0; keys[i] && i < EST_SPEC_MAX_KEYS; i++)
        if (strcmp(keys[i], path) == 0)
            given->key[i] = 1;
}

int whatif_plan_request(const struct model_graph *g, const struct trace_notes_set *notes, const struct job_config *base,
                        struct est_plan_request *req, struct whatif_planner *w, struct sc_error *err)
{
    static const char *const need[] = {"layers", "hidden", "heads", "seq", "global_batch"};
    const int64_t have[] = {base->layers, base->hidden, base->heads, base->seq, base->global_batch};
    char text[JOB_CONFIG_SPEC_TEXT_MAX];
    int rc;
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        if (!have[k])
            return sc_error_set(err, SC_EINVAL,
                                "config.%s: missing: planning from a traced job needs layers, hidden, heads, seq and "
                                "global_batch in its job description",
                                need[k]);
    memset(w, 0, sizeof *w);
    w->g = g;
    w->base = *base;
    if ((rc = whatif_job_structure_gpu(g, &w->hw, NULL, 0, err)) ||
        (rc = spec_job_config_spec_text(base, w->hw->id, 1, text, sizeof text, err)) ||
        (rc = spec_parse_template(text, strlen(text), &req->spec, &req->given, err)))
        return sc_error_prefix(err, "config");
    if ((rc = whatif_job_structure_recover(g, notes, base, &w->structure, err)) || (rc = whatif_base_step(g, &w->base_step_ms, err)) ||
        (rc = whatif_job_check_world_size(base, w->structure.world_size, "config.", err)) ||
        (rc = whatif_job_check_mfu(base, w->hw, w->base_step_ms, "config.", err)))
        return rc;
    for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
        give(&req->given, kept[k]);
    return SC_OK;
}

void whatif_plan_set(const struct whatif_planner *w, const struct est_spec *s, struct job_config *set)
{
    spec_job_config_init(set);
    set->tp = s->parallel.tp;
    set->pp = s->parallel.pp;
    set->dp = s->parallel.dp;
    set->micro_batch = w->base.micro_batch ? s->parallel.micro_batch : 0;
    set->global_batch = s->parallel.global_batch; /* the plan's, whatever dp */
    /* the candidate's schedule (the template's: 1F1B), also for a job
     * traced with another */
    set->has_schedule = 1;
    set->schedule = s->parallel.schedule;
    set->vpp = s->parallel.vpp;
    if (s->model.moe.experts) /* an MoE job's experts spread as the candidate spreads them */
        set->ep = s->parallel.ep;
}

static int evaluate(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    struct whatif_planner *w = ctx;
    struct job_config set;
    struct whatif_result res;
    struct est_memory mem;
    int rc;
    memset(out, 0, sizeof *out);
    whatif_plan_set(w, s, &set);
    if ((rc = whatif_run_with(w->g, &w->base, &w->structure, w->base_step_ms, &set, 1, &res, err)))
        return rc;
    /* the slowest step, as an estimate has it */
    const struct model_replay_step *slow = model_replay_slowest(res.replay);
    out->step_ms = res.step_ms;
    if (slow)
        out->breakdown = slow->breakdown;
    out->tasks = res.graph->n_tasks;
    whatif_release(&res);
    if ((rc = spec_memory_estimate(s, w->hw->hbm_gb, &mem, err)))
        return rc;
    rc = synth_estimate_derive(s, w->hw, &mem, out, err);
    spec_memory_release(&mem);
    return rc;
}

void whatif_plan_evaluator(struct whatif_planner *w, struct est_plan_evaluator *out)
{
    out->evaluate = evaluate;
    out->bound = NULL;
    out->refine = NULL;
    out->detail = NULL;
    out->ctx = w;
}

void whatif_plan_release(struct whatif_planner *w)
{
    whatif_job_structure_release(&w->structure);
}
