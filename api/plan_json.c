/* api/plan_json.c: the plan document and the plan request (plan_json.h). */
#include "api/plan_json.h"

#include <stdlib.h>
#include <string.h>

#include "api/estimate_json.h"
#include "api/megatron_args.h"
#include "estimator/plan/plan.h"
#include "common/banned.h"

/* A band: its region, where it comes from and what it holds. */
static json_t *band_json(const struct est_band *b)
{
    json_t *e = json_object(), *m = json_object();
    for (int k = 0; e && k < EST_BAND_LEVELS; k++)
        json_object_set_new(e, est_band_level_names[k], json_real(b->error[k]));
    for (int d = 0; m && d < HW_DTYPE_COUNT; d++)
        if (b->best_mfu[d] > 0)
            json_object_set_new(m, cost_hw_dtype_name((enum hw_dtype)d), json_real(b->best_mfu[d]));
    return json_pack("{s:s, s:s, s:s, s:I, s:s, s:o, s:o, s:I}", "gpu", b->gpu, "model",
                     plan_model_kind_name(b->model), "sharding", plan_sharding_name(b->sharding), "rows",
                     (json_int_t)b->rows, "source", b->source, "error", e, "best_mfu", m, "max_gpus",
                     (json_int_t)b->max_gpus);
}

/* What the bands say of a row: "at_risk", "band", "extrapolated" and why. */
static int add_band(json_t *out, const struct est_band_view *v)
{
    json_t *risk = json_pack("{s:f, s:f, s:f}", "risk", v->risk, "error", v->error, "step_ms", v->step_ms);
    if (json_object_set_new(out, "at_risk", risk) ||
        json_object_set_new(out, "band", v->band ? band_json(v->band) : json_null()) ||
        json_object_set_new(out, "extrapolated", json_boolean(v->extrapolated)))
        return -1;
    return v->extrapolated ? json_object_set_new(out, "extrapolated_because", json_string(v->reason)) : 0;
}

/* The row's parallel and options objects, every value written out; the
 * top row's (first) Megatron-LM arguments. */
static json_t *row_json(const struct est_plan *p, const struct est_plan_row *row, int first)
{
    char *text = spec_json(&row->spec);
    json_t *spec = text ? json_loads(text, 0, NULL) : NULL;
    json_t *estimate = api_estimate_json(&row->estimate), *out = NULL;
    free(text);
    if (spec && estimate)
        out = json_pack("{s:O, s:O, s:O}", "parallel", json_object_get(spec, "parallel"), "options",
                        json_object_get(spec, "options"), "estimate", estimate);
    char *args = out && first ? api_megatron_args(&row->spec.model, row->spec.options.dtype,
                                                  json_object_get(spec, "parallel"), json_object_get(spec, "options"))
                              : NULL;
    if (out && first && (!args || json_object_set_new(out, "megatron_args", json_string(args)))) {
        json_decref(out);
        out = NULL;
    }
    free(args);
    json_decref(spec);
    json_decref(estimate);
    if (out && ((p->banded && add_band(out, &row->band)) ||
                (row->has_kernel && json_object_set_new(out, "kernel", api_estimate_json(&row->kernel))))) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

json_t *api_plan_json(const struct est_plan *p)
{
    json_t *top = json_array();
    for (size_t i = 0; top && i < p->n_rows; i++)
        if (json_array_append_new(top, row_json(p, &p->rows[i], i == 0))) {
            json_decref(top);
            return NULL;
        }
    return json_pack("{s:I, s:I, s:{s:I, s:I}, s:f, s:o}", "evaluated", (json_int_t)p->evaluated, "pruned",
                     (json_int_t)p->pruned, "infeasible", "memory", (json_int_t)p->infeasible_memory,
                     "divisibility", (json_int_t)p->infeasible_divisibility, "risk", p->risk, "top", top);
}

int api_plan_request_decode(const char *body, size_t len, struct est_plan_request *req, char **spec,
                            struct sc_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je), *v;
    const char *key;
    int rc = SC_OK;
    char *text = NULL;
    req->gpus = 0;
    req->up_to = 0;
    req->top = API_PLAN_DEFAULT_TOP;
    req->objective = EST_OBJECTIVE_TIME;
    req->risk = EST_RISK_DEFAULT;
    if (!doc)
        return sc_error_set(err, SC_EPARSE, "not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return sc_error_set(err, SC_EINVAL, "the body must be a JSON object");
    }
    json_object_foreach (doc, key, v) {
        if (strcmp(key, "spec") == 0 && spec) {
            if (!json_is_object(v))
                rc = sc_error_set(err, SC_EINVAL, "spec: must be an object");
            else if (!(text = json_dumps(v, JSON_COMPACT)))
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        } else if (strcmp(key, "gpus") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 20))
                rc = sc_error_set(err, SC_EINVAL, "gpus: must be a whole number from 1 to %d", 1 << 20);
            else
                req->gpus = (int64_t)json_integer_value(v);
        } else if (strcmp(key, "up_to") == 0) {
            if (!json_is_boolean(v))
                rc = sc_error_set(err, SC_EINVAL, "up_to: must be true or false");
            else
                req->up_to = json_is_true(v);
        } else if (strcmp(key, "top") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > EST_PLAN_MAX_TOP)
                rc = sc_error_set(err, SC_EINVAL, "top: must be a whole number from 1 to %d", EST_PLAN_MAX_TOP);
            else
                req->top = (size_t)json_integer_value(v);
        } else if (strcmp(key, "objective") == 0) {
            if (!json_is_string(v))
                rc = sc_error_set(err, SC_EINVAL, "objective: must be \"time\" or \"cost\"");
            else
                rc = plan_objective_parse(json_string_value(v), &req->objective, err);
        } else if (strcmp(key, "risk") == 0 && spec) {
            if (!json_is_number(v))
                rc = sc_error_set(err, SC_EINVAL, "risk: must be a number from 0.5 to 1");
            else
                rc = plan_risk_check(json_number_value(v), "risk", err);
            req->risk = json_number_value(v);
        } else {
            rc = sc_error_set(err, SC_EINVAL, "%.64s: unknown key (%sgpus, up_to, top, objective%s)", key,
                              spec ? "spec, " : "", spec ? ", risk" : "");
        }
        if (rc)
            break;
    }
    json_decref(doc);
    if (!rc && spec && !text)
        rc = sc_error_set(err, SC_EINVAL, "spec: missing (it is required)");
    if (!rc && !req->gpus)
        rc = sc_error_set(err, SC_EINVAL, "gpus: missing (it is required)");
    if (rc) {
        free(text);
        text = NULL;
    }
    if (spec)
        *spec = text;
    return rc;
}
