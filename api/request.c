/* api/request.c: JSON request bodies (request.h). */
#include "api/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/ledger.h"
#include "api/routes.h"
#include "api/job_cadence.h"
#include "api/whatif_json.h"
#include "estimator/spec/job_config.h"
#include "model/ab.h"
#include "common/banned.h"

int api_json_precheck(const char *body, size_t n, const struct api_body_limits *l,
                      struct api_reply *err)
{
    unsigned depth = 0;
    int in_str = 0, esc = 0;
    if (n > l->max_bytes)
        return api_fail(err, API_E_TOO_LARGE, "body of %zu bytes is over the limit of %zu", n,
                        l->max_bytes);
    for (size_t i = 0; i < n; i++) {
        char c = body[i];
        if (in_str) {
            if (esc)
                esc = 0;
            else if (c == '\\')
                esc = 1;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > l->max_depth)
                return api_fail(err, API_E_JSON_TOO_DEEP,
                                "body nested deeper than %u levels (at byte %zu)", l->max_depth, i);
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return SC_OK;
}

/* The body as an object into *out, or the status with the reply filled
 * when it is not one. An empty body is an empty object when `optional`. */
static int load_object(const char *body, size_t n, const struct api_body_limits *l, int optional,
                       json_t **out, struct api_reply *err)
{
    json_error_t je;
    json_t *doc;
    size_t i = 0;
    int rc;
    *out = NULL;
    while (i < n && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
        i++;
    if (i == n) {
        if (!optional)
            return api_fail(err, API_E_INVALID_JSON,
                            "the body is empty; this route takes a JSON object");
        if (!(*out = json_object()))
            return api_fail(err, API_E_UNAVAILABLE, "out of memory");
        return SC_OK;
    }
    if ((rc = api_json_precheck(body, n, l, err)))
        return rc;
    if (!(doc = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je)))
        return api_fail(err, API_E_INVALID_JSON, "body: %s (byte %d)", je.text, je.position);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return api_fail(err, API_E_INVALID_JSON, "the body is not a JSON object");
    }
    *out = doc;
    return SC_OK;
}

/* Every key of obj is in allowed (NULL-terminated), else the reply says which is not. */
static int only_fields(json_t *obj, const char *const *allowed, struct api_reply *err)
{
    const char *k;
    json_t *v;
    json_object_foreach (obj, k, v) {
        int ok = 0;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(k, allowed[i]) == 0;
        if (!ok)
            return api_fail(err, API_E_INVALID_JSON, "unknown field '%.64s'", k);
    }
    return SC_OK;
}

/* A string field: absent is fine (out untouched); else 1..max bytes without
 * control characters. */
static int get_string(json_t *obj, const char *key, size_t max, char *out, size_t out_n,
                      struct api_reply *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return SC_OK;
    if (!json_is_string(v))
        return api_fail(err, API_E_INVALID_JSON, "'%s' must be a string", key);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > max || n >= out_n)
        return api_fail(err, API_E_INVALID_JSON, "'%s' must be 1 to %zu bytes", key, max);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return api_fail(err, API_E_INVALID_JSON, "'%s' holds a control character", key);
    memcpy(out, s, n + 1);
    return SC_OK;
}

/* Parallelism degrees and sizes that must be positive integers. */
static const char *const positive_keys[] = {"tp", "pp", "dp", "ep", "cp", "etp", "sp", "gpus",
                                            "gpus_per_node", "micro_batch", "global_batch",
                                            "layers", "hidden", "heads", "kv_heads", "ffn", "seq_len", "vocab",
                                            NULL};

/* A config (or, at depth 1, one of its objects: moe or mla,
 * estimator/spec/job_config.h) named `path`. */
static int check_config_at(json_t *cfg, const char *path, int depth, struct api_reply *err)
{
    const char *k;
    json_t *v;
    if (!json_is_object(cfg))
        return api_fail(err, API_E_INVALID_JSON, "'%s' must be an object", path);
    if (json_object_size(cfg) > 64)
        return api_fail(err, API_E_INVALID_JSON, "'%s' has more than 64 fields", path);
    json_object_foreach (cfg, k, v) {
        if (strlen(k) > 64)
            return api_fail(err, API_E_INVALID_JSON, "config field names are at most 64 bytes");
        if (json_is_object(v) && depth == 0 && spec_job_config_is_object(k)) {
            char inner[80];
            snprintf(inner, sizeof inner, "config.%s", k);
            int rc = check_config_at(v, inner, 1, err);
            if (rc)
                return rc;
            continue;
        }
        if (depth && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 30)))
            return api_fail(err, API_E_INVALID_JSON, "%s.%s must be an integer from 0 to %d", path, k, 1 << 30);
        if (json_is_object(v) || json_is_array(v))
            return api_fail(err, API_E_INVALID_JSON, "%s.%s must be a number, string or boolean", path, k);
        if (json_is_string(v) && json_string_length(v) > 256)
            return api_fail(err, API_E_INVALID_JSON, "%s.%s is longer than 256 bytes", path, k);
        for (size_t i = 0; depth == 0 && positive_keys[i]; i++)
            if (strcmp(k, positive_keys[i]) == 0 && !json_is_integer(v))
                return api_fail(err, API_E_INVALID_JSON, "config.%s must be a positive integer", k);
            else if (strcmp(k, positive_keys[i]) == 0 &&
                     (json_integer_value(v) < 1 || json_integer_value(v) > (1 << 30)))
                return api_fail(err, API_E_UNPROCESSABLE, "config.%s must be an integer from 1 to %d", k, 1 << 30);
    }
    return SC_OK;
}

int api_decode_job(const char *body, size_t n, const struct api_body_limits *l, char **canonical,
                   struct api_reply *err)
{
    static const char *const fields[] = {"config",       "hardware", "description", "steps_per_day",
                                         "runtime_hours", "gpu_hour_usd", "tags",       NULL};
    static const char *const numbers[] = {"steps_per_day", "runtime_hours", "gpu_hour_usd"};
    struct sc_error cerr;
    char hw[72] = "", desc[1025] = "";
    json_t *doc, *cfg, *v;
    int rc;
    *canonical = NULL;
    if ((rc = load_object(body, n, l, 1, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)) || (rc = get_string(doc, "hardware", 64, hw, sizeof hw, err)) ||
        (rc = get_string(doc, "description", 1024, desc, sizeof desc, err)))
        goto out;
    if (*hw && !api_id_valid(hw)) {
        rc = api_fail(err, API_E_INVALID_JSON, "'hardware' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
        goto out;
    }
    if ((cfg = json_object_get(doc, "config")) && (rc = check_config_at(cfg, "config", 0, err)))
        goto out;
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++) {
        double min = 0, max = 0;
        api_job_number_range(numbers[i], &min, &max);
        if ((v = json_object_get(doc, numbers[i])) && !json_is_number(v)) {
            rc = api_fail(err, API_E_INVALID_JSON, "'%s' must be a number", numbers[i]);
            goto out;
        } else if (v && !(json_number_value(v) >= min && json_number_value(v) <= max)) {
            rc = api_fail(err, API_E_UNPROCESSABLE, "'%s' must be a number from %g to %g (%g given)", numbers[i], min,
                          max, json_number_value(v));
            goto out;
        }
    }
    if ((v = json_object_get(doc, "tags"))) {
        const char *k;
        json_t *t;
        if (!json_is_object(v) || json_object_size(v) > 16) {
            rc = api_fail(err, API_E_INVALID_JSON, "'tags' must be an object of at most 16 strings");
            goto out;
        }
        json_object_foreach (v, k, t)
            if (!api_id_valid(k) || !json_is_string(t) || json_string_length(t) == 0 ||
                json_string_length(t) > 128 || strpbrk(json_string_value(t), "\r\n\t")) {
                rc = api_fail(err, API_E_INVALID_JSON,
                              "tags are identifiers naming strings of 1 to 128 bytes on one line ('%.64s')", k);
                goto out;
            }
    }
    if (!(*canonical = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS)))
        rc = api_fail(err, API_E_UNAVAILABLE, "out of memory");
    else if (api_job_config_check(*canonical, &cerr)) /* what a what-if would refuse, refused now */
        rc = api_fail(err, cerr.code == SC_ENOMEM ? API_E_UNAVAILABLE : API_E_UNPROCESSABLE, "%s", cerr.msg);
out:
    if (rc) {
        free(*canonical);
        *canonical = NULL;
    }
    json_decref(doc);
    return rc;
}

int api_decode_build(const char *body, size_t n, const struct api_body_limits *l,
                     struct api_build_req *out, struct api_reply *err)
{
    static const char *const fields[] = {"step_marker", "steps", "fold", NULL};
    json_t *doc, *fold;
    int rc;
    memset(out, 0, sizeof *out);
    out->fold = -1;
    if ((rc = load_object(body, n, l, 1, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)) == SC_OK &&
        (rc = get_string(doc, "step_marker", 255, out->step_marker, sizeof out->step_marker, err)) == SC_OK)
        rc = get_string(doc, "steps", 63, out->steps, sizeof out->steps, err);
    if (rc == SC_OK && (fold = json_object_get(doc, "fold"))) {
        if (json_is_boolean(fold))
            out->fold = json_is_true(fold);
        else
            rc = api_fail(err, API_E_INVALID_JSON, "'fold' must be a boolean (true: fold alike ranks whatever "
                                                   "the job's size, false: never)");
    }
    json_decref(doc);
    return rc;
}

int api_decode_diff(const char *body, size_t n, const struct api_body_limits *l, char other[API_ID_MAX],
                    struct api_reply *err)
{
    static const char *const fields[] = {"other", NULL};
    json_t *doc;
    int rc;
    other[0] = '\0';
    if ((rc = load_object(body, n, l, 0, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)) == SC_OK &&
        (rc = get_string(doc, "other", API_ID_MAX - 1, other, API_ID_MAX, err)) == SC_OK && !api_id_valid(other))
        rc = api_fail(err, API_E_INVALID_JSON, "'other' must be a model id");
    json_decref(doc);
    return rc;
}

int api_decode_ab(const char *body, size_t n, const struct api_body_limits *l, struct api_ab_req *out,
                  struct api_reply *err)
{
    static const char *const fields[] = {"a", "b", "min_effect_pct", "refutations", "seed", NULL};
    struct model_ab_opts o;
    json_t *doc, *v;
    int rc;
    memset(out, 0, sizeof *out);
    model_ab_opts_default(&o);
    out->min_effect_pct = o.min_effect_pct;
    out->refutations = o.refutations;
    out->seed = o.seed;
    if ((rc = load_object(body, n, l, 0, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)) || (rc = get_string(doc, "a", API_ID_MAX - 1, out->a, API_ID_MAX, err)) ||
        (rc = get_string(doc, "b", API_ID_MAX - 1, out->b, API_ID_MAX, err)))
        goto out;
    if (!api_id_valid(out->a) || !api_id_valid(out->b)) {
        rc = api_fail(err, API_E_INVALID_JSON, "'a' and 'b' must be model ids");
        goto out;
    }
    if ((v = json_object_get(doc, "min_effect_pct"))) {
        if (!json_is_number(v) || !(json_number_value(v) > 0 && json_number_value(v) <= 100)) {
            rc = api_fail(err, API_E_INVALID_JSON, "'min_effect_pct' must be a number above 0 and at most 100");
            goto out;
        }
        out->min_effect_pct = json_number_value(v);
    }
    if ((v = json_object_get(doc, "refutations"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 5) {
            rc = api_fail(err, API_E_INVALID_JSON, "'refutations' must be an integer from 0 to 5");
            goto out;
        }
        out->refutations = (int)json_integer_value(v);
    }
    if ((v = json_object_get(doc, "seed"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            rc = api_fail(err, API_E_INVALID_JSON, "'seed' must be a whole number");
            goto out;
        }
        out->seed = (unsigned long)json_integer_value(v);
    }
out:
    json_decref(doc);
    return rc;
}

int api_decode_experiment(const char *body, size_t n, const struct api_body_limits *l,
                          struct api_experiment_req *out, struct api_reply *err)
{
    static const char *const fields[] = {"baseline", "variant", "hypothesis", "external_id", NULL};
    json_t *doc;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = load_object(body, n, l, 0, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)) == SC_OK &&
        (rc = get_string(doc, "baseline", API_ID_MAX - 1, out->baseline, sizeof out->baseline, err)) == SC_OK &&
        (rc = get_string(doc, "variant", API_ID_MAX - 1, out->variant, sizeof out->variant, err)) == SC_OK &&
        (rc = get_string(doc, "hypothesis", 1024, out->hypothesis, sizeof out->hypothesis, err)) == SC_OK &&
        (rc = get_string(doc, "external_id", 128, out->external_id, sizeof out->external_id, err)) == SC_OK &&
        (!api_id_valid(out->baseline) || !api_id_valid(out->variant)))
        rc = api_fail(err, API_E_INVALID_JSON, "'baseline' and 'variant' must be job ids");
    json_decref(doc);
    return rc;
}

int api_decode_token(const char *body, size_t n, const struct api_body_limits *l,
                     struct api_token_req *out, struct api_reply *err)
{
    static const char *const fields[] = {"scope", "name", NULL};
    char scope[16] = "";
    json_t *doc;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = load_object(body, n, l, 0, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)) == SC_OK &&
        (rc = get_string(doc, "scope", 15, scope, sizeof scope, err)) == SC_OK &&
        (rc = get_string(doc, "name", 127, out->name, sizeof out->name, err)) == SC_OK &&
        api_scope_parse(scope, &out->scope))
        rc = api_fail(err, API_E_INVALID_JSON, "'scope' must be \"read\", \"write\" or \"admin\"");
    json_decref(doc);
    return rc;
}

void api_validation_req_release(struct api_validation_req *v)
{
    free(v->spec);
    free(v->set);
    v->spec = v->set = NULL;
}

/* An object member as compact JSON text, or NULL when absent or null. */
static int object_text(json_t *obj, const char *key, char **out, struct api_reply *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return SC_OK;
    if (!json_is_object(v))
        return api_fail(err, API_E_INVALID_JSON, "'%s' must be an object or null", key);
    if (!(*out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS)))
        return api_fail(err, API_E_UNAVAILABLE, "out of memory");
    return SC_OK;
}

int api_decode_validation(const char *body, size_t n, const struct api_body_limits *l,
                          struct api_validation_req *out, struct api_reply *err)
{
    static const char *const fields[] = {"model", "spec", "set", "measured_step_ms", "source", "run_at",
                                         "in_sample", NULL};
    json_t *doc, *v;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = load_object(body, n, l, 0, &doc, err)))
        return rc;
    if ((rc = only_fields(doc, fields, err)))
        goto done;
    v = json_object_get(doc, "model");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !api_id_valid(json_string_value(v))) {
            rc = api_fail(err, API_E_INVALID_JSON, "'model' must be a model id or null");
            goto done;
        }
        snprintf(out->model, sizeof out->model, "%s", json_string_value(v));
    }
    v = json_object_get(doc, "measured_step_ms");
    if (!json_is_number(v) || !ledger_step_ms_valid(json_number_value(v))) {
        rc = api_fail(err, json_is_number(v) ? API_E_UNPROCESSABLE : API_E_INVALID_JSON,
                      "'measured_step_ms' must be a number from %g to %g (ms)", LEDGER_STEP_MS_MIN,
                      LEDGER_STEP_MS_MAX);
        goto done;
    }
    out->measured_ms = json_number_value(v);
    v = json_object_get(doc, "in_sample");
    if (v && !json_is_boolean(v)) {
        rc = api_fail(err, API_E_INVALID_JSON, "'in_sample' must be a boolean");
        goto done;
    }
    out->in_sample = v && json_is_true(v);
    if ((rc = get_string(doc, "source", 255, out->source, sizeof out->source, err)) ||
        (rc = get_string(doc, "run_at", 39, out->run_at, sizeof out->run_at, err)) ||
        (rc = object_text(doc, "spec", &out->spec, err)) || (rc = object_text(doc, "set", &out->set, err)))
        goto done;
    if (!out->model[0] && !out->spec)
        rc = api_fail(err, API_E_INVALID_JSON, "give 'model' (a replay or, with 'set', a what-if) or 'spec' (an estimate)");
    else if (out->model[0] && out->spec)
        rc = api_fail(err, API_E_INVALID_JSON, "give 'model' or 'spec', not both");
    else if (out->set && !out->model[0])
        rc = api_fail(err, API_E_INVALID_JSON, "'set' is a what-if of a model: give 'model' too");
done:
    json_decref(doc);
    if (rc)
        api_validation_req_release(out);
    return rc;
}
