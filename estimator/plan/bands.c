/* estimator/plan/bands.c: the bands file, the compiled-in bands and what a
 * band says of an estimate (bands.h). */
#include "estimator/plan/bands.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/embedded.h"
#include "estimator/synth/estimate.h"
#include "estimator/spec/spec.h"
#include "common/banned.h"

extern const struct sc_embedded sc_bands_files[]; /* generated from data/calibration/bands.json */

const double est_band_levels[EST_BAND_LEVELS] = {0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95};
const char *const est_band_level_names[EST_BAND_LEVELS] = {"p05", "p10", "p25", "p50", "p75", "p90", "p95"};

static const char *const kind_names[EST_MODEL_KIND_COUNT] = {"dense", "moe"};
static const char *const sharding_names[EST_SHARDING_COUNT] = {"none", "distributed_optimizer", "fsdp"};

const char *plan_model_kind_name(enum est_model_kind k)
{
    return (unsigned)k < EST_MODEL_KIND_COUNT ? kind_names[k] : "?";
}

const char *plan_sharding_name(enum est_sharding s)
{
    return (unsigned)s < EST_SHARDING_COUNT ? sharding_names[s] : "?";
}

/* ---- the file ---- */

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int only_keys(json_t *o, const char *const *keys, size_t n, const char *where, struct sc_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach (o, k, v)
        if (name_index(k, keys, (int)n) < 0)
            return sc_error_set(err, SC_EPARSE, "%s%.64s: unknown key", where, k);
    return SC_OK;
}

static int whole_at_least_1(json_t *v, int64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > ((json_int_t)1 << 40))
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

static int parse_region(json_t *r, struct est_band *b, const char *at, struct sc_error *err)
{
    static const char *const keys[] = {"gpu", "model", "sharding", "rows", "error", "best_mfu", "max_gpus", "source"};
    const char *gpu = json_string_value(json_object_get(r, "gpu")), *k;
    const char *src = json_string_value(json_object_get(r, "source"));
    json_t *e = json_object_get(r, "error"), *m = json_object_get(r, "best_mfu"), *v;
    int kind = name_index(json_string_value(json_object_get(r, "model")), kind_names, EST_MODEL_KIND_COUNT);
    int shard = name_index(json_string_value(json_object_get(r, "sharding")), sharding_names, EST_SHARDING_COUNT);
    int rc;
    memset(b, 0, sizeof *b);
    if (!json_is_object(r))
        return sc_error_set(err, SC_EPARSE, "%s: must be an object", at);
    if ((rc = only_keys(r, keys, sizeof keys / sizeof keys[0], at, err)))
        return rc;
    if (!gpu || !cost_hw_profile_find(gpu))
        return sc_error_set(err, SC_EPARSE, "%sgpu: must be the id of a hardware profile", at);
    snprintf(b->gpu, sizeof b->gpu, "%s", gpu);
    if (kind < 0)
        return sc_error_set(err, SC_EPARSE, "%smodel: must be \"dense\" or \"moe\"", at);
    if (shard < 0)
        return sc_error_set(err, SC_EPARSE, "%ssharding: must be \"none\", \"distributed_optimizer\" or \"fsdp\"",
                            at);
    b->model = (enum est_model_kind)kind;
    b->sharding = (enum est_sharding)shard;
    if (whole_at_least_1(json_object_get(r, "rows"), &b->rows))
        return sc_error_set(err, SC_EPARSE, "%srows: must be a whole number of at least 1", at);
    if (whole_at_least_1(json_object_get(r, "max_gpus"), &b->max_gpus))
        return sc_error_set(err, SC_EPARSE, "%smax_gpus: must be a whole number of at least 1", at);
    if (!src || !*src || strlen(src) >= sizeof b->source)
        return sc_error_set(err, SC_EPARSE, "%ssource: must be a string of 1 to %zu bytes", at,
                            sizeof b->source - 1);
    snprintf(b->source, sizeof b->source, "%s", src);
    if (!json_is_object(e))
        return sc_error_set(err, SC_EPARSE, "%serror: must be an object of p05 to p95", at);
    char at_error[80];
    snprintf(at_error, sizeof at_error, "%serror.", at);
    if ((rc = only_keys(e, est_band_level_names, EST_BAND_LEVELS, at_error, err)))
        return rc;
    for (int i = 0; i < EST_BAND_LEVELS; i++) {
        v = json_object_get(e, est_band_level_names[i]);
        if (!json_is_number(v) || !(json_number_value(v) >= -0.99) || !(json_number_value(v) <= 100))
            return sc_error_set(err, SC_EPARSE, "%serror.%s: must be a number from -0.99 to 100", at,
                                est_band_level_names[i]);
        b->error[i] = json_number_value(v);
        if (i > 0 && b->error[i] < b->error[i - 1])
            return sc_error_set(err, SC_EPARSE, "%serror.%s: below %s: the quantiles must ascend", at,
                                est_band_level_names[i], est_band_level_names[i - 1]);
    }
    if (!json_is_object(m))
        return sc_error_set(err, SC_EPARSE, "%sbest_mfu: must be an object of dtype -> MFU", at);
    json_object_foreach (m, k, v) {
        enum hw_dtype d = HW_FP32;
        if (cost_hw_dtype_parse(k, &d, err)) {
            err->code = SC_EPARSE;
            return sc_error_prefix(err, "%sbest_mfu", at);
        }
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1)
            return sc_error_set(err, SC_EPARSE, "%sbest_mfu.%s: must be a number in (0, 1]", at, k);
        b->best_mfu[d] = json_number_value(v);
    }
    return SC_OK;
}

int plan_bands_parse(const char *text, size_t len, struct est_bands *out, struct sc_error *err)
{
    static const char *const keys[] = {"format", "version", "regions"};
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *regions, *r;
    size_t i;
    int rc = SC_OK;
    memset(out, 0, sizeof *out);
    if (!doc)
        return sc_error_set(err, SC_EPARSE, "not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    regions = json_object_get(doc, "regions");
    if (!json_is_object(doc))
        rc = sc_error_set(err, SC_EPARSE, "the bands file must be a JSON object");
    else if ((rc = only_keys(doc, keys, 3, "", err)))
        ;
    else if (!json_is_string(json_object_get(doc, "format")) ||
             strcmp(json_string_value(json_object_get(doc, "format")), "stepcast-bands") != 0)
        rc = sc_error_set(err, SC_EPARSE, "format: must be \"stepcast-bands\"");
    else if (!json_is_integer(json_object_get(doc, "version")) || json_integer_value(json_object_get(doc, "version")) != 1)
        rc = sc_error_set(err, SC_EPARSE, "version: must be 1");
    else if (!json_is_array(regions) || json_array_size(regions) > 4096)
        rc = sc_error_set(err, SC_EPARSE, "regions: must be an array of at most 4096 regions");
    else if (!(out->regions = calloc(json_array_size(regions) + 1, sizeof *out->regions)))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    json_array_foreach (rc ? NULL : regions, i, r) {
        char at[64];
        struct est_band *b = &out->regions[out->n];
        snprintf(at, sizeof at, "regions[%zu].", i);
        if ((rc = parse_region(r, b, at, err)))
            break;
        if (plan_bands_find(out, b->gpu, b->model, b->sharding)) {
            rc = sc_error_set(err, SC_EPARSE, "regions[%zu]: %s, %s, %s is given twice", i, b->gpu,
                              kind_names[b->model], sharding_names[b->sharding]);
            break;
        }
        out->n++;
    }
    json_decref(doc);
    if (rc)
        plan_bands_release(out);
    return rc;
}

char *plan_bands_text(const struct est_bands *b)
{
    json_t *regions = json_array(), *doc;
    char *text = NULL;
    for (size_t i = 0; regions && i < b->n; i++) {
        const struct est_band *r = &b->regions[i];
        json_t *e = json_object(), *m = json_object();
        for (int k = 0; e && k < EST_BAND_LEVELS; k++)
            json_object_set_new(e, est_band_level_names[k], json_real(r->error[k]));
        for (int d = 0; m && d < HW_DTYPE_COUNT; d++)
            if (r->best_mfu[d] > 0)
                json_object_set_new(m, cost_hw_dtype_name((enum hw_dtype)d), json_real(r->best_mfu[d]));
        if (json_array_append_new(regions,
                                  json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:I, s:s}", "gpu", r->gpu, "model",
                                            kind_names[r->model], "sharding", sharding_names[r->sharding], "rows",
                                            (json_int_t)r->rows, "error", e, "best_mfu", m, "max_gpus",
                                            (json_int_t)r->max_gpus, "source", r->source))) {
            json_decref(regions);
            return NULL;
        }
    }
    doc = regions ? json_pack("{s:s, s:i, s:o}", "format", "stepcast-bands", "version", 1, "regions", regions)
                  : NULL;
    if (doc)
        text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    json_decref(doc);
    return text;
}

void plan_bands_release(struct est_bands *b)
{
    free(b->regions);
    b->regions = NULL;
    b->n = 0;
}

int plan_bands_copy(const struct est_bands *b, struct est_bands *out, struct sc_error *err)
{
    out->n = 0;
    if (!(out->regions = calloc(b->n + 1, sizeof *out->regions)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (b->n)
        memcpy(out->regions, b->regions, b->n * sizeof *b->regions);
    out->n = b->n;
    return SC_OK;
}

/* ---- the compiled-in bands ---- */

static struct est_bands builtin;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

/* A file that does not parse is a build defect (a test parses it): it is
 * reported and the bands are empty. */
static void load_builtin(void)
{
    struct sc_error err;
    const struct sc_embedded *f = &sc_bands_files[0];
    if (f->name && plan_bands_parse((const char *)f->data, f->len, &builtin, &err))
        fprintf(stderr, "stepcast: %s: %s\n", f->name, err.msg);
}

const struct est_bands *plan_bands_builtin(void)
{
    pthread_once(&builtin_once, load_builtin);
    return &builtin;
}

/* ---- what a band says ---- */

void plan_region_of(const struct est_spec *s, enum est_model_kind *model, enum est_sharding *sharding)
{
    *model = s->model.moe.experts > 0 ? EST_MODEL_MOE : EST_MODEL_DENSE;
    *sharding = s->options.zero_stage >= 3 ? EST_SHARDING_FSDP
                : s->options.zero_stage >= 1 ? EST_SHARDING_OPTIMIZER
                                             : EST_SHARDING_NONE;
}

const struct est_band *plan_bands_find(const struct est_bands *b, const char *gpu, enum est_model_kind model,
                                      enum est_sharding sharding)
{
    for (size_t i = 0; b && i < b->n; i++)
        if (b->regions[i].model == model && b->regions[i].sharding == sharding && strcmp(b->regions[i].gpu, gpu) == 0)
            return &b->regions[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double plan_quantile_sorted(const double *x, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    return i + 1 < n ? x[i] + (pos - (double)i) * (x[i + 1] - x[i]) : x[n - 1];
}

void plan_band_add_run(struct est_band *b, const struct est_spec *s, const struct hw_profile *hw, double measured_ms)
{
    double mfu = synth_mfu(s, hw, measured_ms);
    if (mfu > b->best_mfu[s->options.dtype] && mfu <= 1)
        b->best_mfu[s->options.dtype] = mfu;
    if (spec_gpus(s) > b->max_gpus)
        b->max_gpus = spec_gpus(s);
}

void plan_band_set_errors(struct est_band *out, double *e, size_t n)
{
    qsort(e, n, sizeof *e, cmp_double);
    out->rows = (int64_t)n;
    for (int k = 0; k < EST_BAND_LEVELS; k++)
        out->error[k] = plan_quantile_sorted(e, n, est_band_levels[k]);
}

double plan_band_error_at(const struct est_band *b, double q)
{
    if (q <= est_band_levels[0])
        return b->error[0];
    for (int k = 1; k < EST_BAND_LEVELS; k++)
        if (q <= est_band_levels[k]) {
            double t = (q - est_band_levels[k - 1]) / (est_band_levels[k] - est_band_levels[k - 1]);
            return b->error[k - 1] + t * (b->error[k] - b->error[k - 1]);
        }
    return b->error[EST_BAND_LEVELS - 1];
}

int plan_risk_check(double p, const char *field, struct sc_error *err)
{
    if (!(p >= 0.5 && p <= 1))
        return sc_error_set(err, SC_EINVAL, "%s: %g is not in [0.5, 1] (0.5: the median; 0.9: measured "
                                            "above it one time in ten)", field, p);
    return SC_OK;
}

double plan_band_at_risk(const struct est_band *b, double p, double est_ms)
{
    return b ? est_ms / (1 + plan_band_error_at(b, 1 - p)) : est_ms;
}

/* Append "; "-joined reasons. */
static void add_reason(struct est_band_view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_reason(struct est_band_view *v, const char *fmt, ...)
{
    size_t n = strlen(v->reason);
    va_list ap;
    v->extrapolated = 1;
    if (n && n + 2 < sizeof v->reason) {
        memcpy(v->reason + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(v->reason + n, sizeof v->reason - n, fmt, ap);
    va_end(ap);
}

void plan_band_view_of(const struct est_bands *b, const struct est_spec *s, const struct est_estimate *e, double p,
                      struct est_band_view *out)
{
    enum est_model_kind model;
    enum est_sharding sharding;
    enum hw_dtype d = s->options.dtype;
    memset(out, 0, sizeof *out);
    plan_region_of(s, &model, &sharding);
    out->band = plan_bands_find(b, s->cluster.gpu, model, sharding);
    out->risk = p;
    out->step_ms = plan_band_at_risk(out->band, p, e->step_ms);
    if (!out->band) {
        add_reason(out, "no validated row of %s, %s, sharding %s", s->cluster.gpu, kind_names[model],
                   sharding_names[sharding]);
        return;
    }
    out->error = plan_band_error_at(out->band, 1 - p);
    if (spec_gpus(s) > out->band->max_gpus)
        add_reason(out, "%lld GPUs, above the %lld of the largest validated row", (long long)spec_gpus(s),
                   (long long)out->band->max_gpus);
    if (!(out->band->best_mfu[d] > 0))
        add_reason(out, "no validated row in %s", cost_hw_dtype_name(d));
    else if (e->mfu > out->band->best_mfu[d] / (1 + out->band->error[0]))
        add_reason(out, "MFU %.1f%% above the best measured %.1f%% with the band's error (%.1f%%)", e->mfu * 100,
                   out->band->best_mfu[d] * 100, out->band->best_mfu[d] / (1 + out->band->error[0]) * 100);
}
