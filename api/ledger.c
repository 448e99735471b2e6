/* api/ledger.c: ledger records, MAPE, bands and their JSON (ledger.h). */
#include "api/ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/json_reply.h"
#include "api/page.h"
#include "api/routes.h"
#include "estimator/synth/estimate.h"
#include "estimator/spec/spec.h"
#include "common/banned.h"

static const char *const kind_names[API_LEDGER_KIND_COUNT] = {"replay", "whatif", "estimate"};

const char *api_ledger_kind_name(enum api_ledger_kind k)
{
    return (unsigned)k < API_LEDGER_KIND_COUNT ? kind_names[k] : "unknown";
}

int api_ledger_kind_parse(const char *s, enum api_ledger_kind *out)
{
    for (int i = 0; i < API_LEDGER_KIND_COUNT; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (enum api_ledger_kind)i;
            return 0;
        }
    return -1;
}

void api_validation_release(struct api_validation *v)
{
    if (!v)
        return;
    free(v->spec);
    free(v->set);
    v->spec = v->set = NULL;
}

void api_validations_free(struct api_validation *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        api_validation_release(&v[i]);
    free(v);
}

void api_calibration_release(struct api_calibration *c)
{
    if (!c)
        return;
    free(c->document);
    free(c->report);
    c->document = c->report = NULL;
}

void api_calibrations_free(struct api_calibration *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++)
        api_calibration_release(&c[i]);
    free(c);
}

/* An entry that has a prediction to compare with. */
int ledger_step_ms_valid(double ms)
{
    return isfinite(ms) && ms >= LEDGER_STEP_MS_MIN && ms <= LEDGER_STEP_MS_MAX;
}

static int scored(const struct api_validation *v)
{
    return v->predicted_ms > 0 && v->measured_ms > 0;
}

/* Whether an entry's times can be rendered and scored: a measured time in
 * range, and a prediction in range or none. */
static int renderable(const struct api_validation *v)
{
    return ledger_step_ms_valid(v->measured_ms) && (v->predicted_ms == 0 || ledger_step_ms_valid(v->predicted_ms));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ledger_band_of(const struct api_validation *v, size_t n, enum api_ledger_kind k, struct ledger_band *out)
{
    double *ratio = malloc((n ? n : 1) * sizeof *ratio);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; ratio && i < n; i++)
        if (v[i].kind == k && !v[i].in_sample && scored(&v[i]))
            ratio[out->n++] = v[i].measured_ms / v[i].predicted_ms;
    if (ratio && out->n >= LEDGER_BAND_MIN) {
        qsort(ratio, out->n, sizeof *ratio, cmp_double);
        out->has = 1;
        out->lo = plan_quantile_sorted(ratio, out->n, 0.1);
        out->hi = plan_quantile_sorted(ratio, out->n, 0.9);
    }
    free(ratio);
}

/* A region, as ledger_bands_merge gathers entries by it. */
struct region_key {
    char gpu[48];
    enum est_model_kind model;
    enum est_sharding sharding;
};

/* The region of spec s. */
static struct region_key region_key_of(const struct est_spec *s)
{
    struct region_key k = {0};
    snprintf(k.gpu, sizeof k.gpu, "%s", s->cluster.gpu);
    plan_region_of(s, &k.model, &k.sharding);
    return k;
}

int ledger_bands_merge(const struct api_validation *v, size_t n, const struct est_bands *base, struct est_bands *out,
                       struct sc_error *err)
{
    struct est_spec *specs = calloc(n ? n : 1, sizeof *specs);
    const struct hw_profile **hws = calloc(n ? n : 1, sizeof *hws);
    struct region_key *keys = calloc(n ? n : 1, sizeof *keys);
    double *e = calloc(n ? n : 1, sizeof *e);
    size_t n_keys = 0;
    int rc = SC_OK;
    memset(out, 0, sizeof *out);
    if (!specs || !hws || !keys || !e || !(out->regions = calloc(base->n + n + 1, sizeof *out->regions))) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto done;
    }
    if (base->n)
        memcpy(out->regions, base->regions, base->n * sizeof *base->regions);
    out->n = base->n;
    /* the regions of the entries that count (hws[i] NULL: left out) */
    for (size_t i = 0; i < n; i++) {
        struct sc_error ignored;
        if (v[i].kind != API_LEDGER_ESTIMATE || v[i].in_sample || !scored(&v[i]) || !v[i].spec ||
            spec_load(v[i].spec, strlen(v[i].spec), &specs[i], &hws[i], &ignored)) {
            hws[i] = NULL;
            continue;
        }
        struct region_key k = region_key_of(&specs[i]);
        size_t j = 0;
        while (j < n_keys && memcmp(&keys[j], &k, sizeof k))
            j++;
        if (j == n_keys)
            keys[n_keys++] = k;
    }
    for (size_t j = 0; j < n_keys; j++) {
        struct est_band fresh = {0}, *b;
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            struct region_key k = hws[i] ? region_key_of(&specs[i]) : (struct region_key){0};
            if (hws[i] && memcmp(&keys[j], &k, sizeof k) == 0)
                e[m++] = v[i].predicted_ms / v[i].measured_ms - 1;
        }
        if (m < LEDGER_BAND_MIN)
            continue; /* too few to say more than the file */
        b = (struct est_band *)plan_bands_find(out, keys[j].gpu, keys[j].model, keys[j].sharding);
        if (!b) {
            b = &out->regions[out->n++];
            *b = fresh;
            snprintf(b->gpu, sizeof b->gpu, "%s", keys[j].gpu);
            b->model = keys[j].model;
            b->sharding = keys[j].sharding;
        }
        plan_band_set_errors(b, e, m);
        snprintf(b->source, sizeof b->source, "the ledger: %zu out-of-sample estimates", m);
        for (size_t i = 0; i < n; i++) {
            struct region_key k = hws[i] ? region_key_of(&specs[i]) : (struct region_key){0};
            if (!hws[i] || memcmp(&keys[j], &k, sizeof k))
                continue;
            plan_band_add_run(b, &specs[i], hws[i], v[i].measured_ms);
        }
    }
done:
    free(specs);
    free(hws);
    free(keys);
    free(e);
    if (rc)
        plan_bands_release(out);
    return rc;
}

json_t *ledger_band_json(const struct ledger_band *b, enum api_ledger_kind k, double predicted_ms)
{
    if (!b->has)
        return json_pack("{s:s, s:I, s:i}", "kind", api_ledger_kind_name(k), "entries", (json_int_t)b->n,
                         "needed", LEDGER_BAND_MIN);
    return json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f}", "kind", api_ledger_kind_name(k), "entries",
                     (json_int_t)b->n, "coverage", 0.8, "ratio_lo", b->lo, "ratio_hi", b->hi, "lo_ms",
                     predicted_ms * b->lo, "hi_ms", predicted_ms * b->hi);
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *parsed_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

json_t *api_validation_json(const struct api_validation *v)
{
    json_t *o = json_pack("{s:I, s:o, s:s, s:o, s:o, s:f, s:o, s:o, s:o, s:o, s:o, s:b, s:o}", "id",
                          (json_int_t)v->id, "model", str_or_null(v->model), "kind", api_ledger_kind_name(v->kind),
                          "spec", parsed_or_null(v->spec), "set", parsed_or_null(v->set), "measured_step_ms",
                          v->measured_ms, "predicted_step_ms",
                          scored(v) ? json_real(v->predicted_ms) : json_null(), "error_pct",
                          scored(v) ? json_real((v->predicted_ms - v->measured_ms) / v->measured_ms * 100)
                                    : json_null(),
                          "source", str_or_null(v->source), "run_at", str_or_null(v->run_at), "version",
                          str_or_null(v->version), "in_sample", v->in_sample, "created",
                          api_json_time(v->created_ns));
    if (o)
        json_object_set_new(o, "calibration", str_or_null(v->calibration));
    return o;
}

/* Running sums of absolute percentage errors under a key. */
static int add_ape(json_t *groups, const char *key, double ape)
{
    json_t *g = json_object_get(groups, key);
    if (!g) {
        if (!(g = json_pack("{s:f, s:I}", "sum", 0.0, "n", (json_int_t)0)) || json_object_set_new(groups, key, g))
            return -1;
    }
    json_object_set_new(g, "sum", json_real(json_real_value(json_object_get(g, "sum")) + ape));
    json_object_set_new(g, "n", json_integer(json_integer_value(json_object_get(g, "n")) + 1));
    return 0;
}

/* {key: {"sum","n"}} into {key: {"mape_pct","n"}}. */
static void finish_groups(json_t *groups)
{
    const char *key;
    json_t *g;
    json_object_foreach(groups, key, g) {
        json_int_t n = json_integer_value(json_object_get(g, "n"));
        json_object_set_new(g, "mape_pct", json_real(json_real_value(json_object_get(g, "sum")) / (double)n));
        json_object_del(g, "sum");
    }
}

/* The month of an entry: its run_at's "YYYY-MM" when it starts with one,
 * else the month it was posted (UTC). */
static void month_of(const struct api_validation *v, char out[8])
{
    const char *r = v->run_at;
    if (strlen(r) >= 7 && r[4] == '-' && strspn(r, "0123456789") == 4 && r[5] >= '0' && r[5] <= '1' &&
        r[6] >= '0' && r[6] <= '9') {
        snprintf(out, 8, "%.7s", r);
        return;
    }
    time_t t = (time_t)(v->created_ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, 8, "%04d-%02d", (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100);
}

json_t *api_ledger_json(const struct api_validation *v, size_t n, int with_in_sample)
{
    struct api_list_meta m = {0};
    return api_ledger_page_json(v, n, v, n, with_in_sample, &m);
}

json_t *api_ledger_page_json(const struct api_validation *page, size_t n_page, const struct api_validation *v,
                             size_t n, int with_in_sample, struct api_list_meta *m)
{
    json_t *entries = json_array(), *all = json_object(), *by_model = json_object(), *by_kind = json_object(),
           *by_month = json_object(), *bands = json_object();
    json_t *doc = NULL;
    int bad = !entries || !all || !by_model || !by_kind || !by_month || !bands;
    for (size_t i = 0; i < n_page && !bad; i++) {
        json_t *e = renderable(&page[i]) ? api_validation_json(&page[i]) : NULL;
        if (!e)
            m->skipped++;
        else
            bad = json_array_append_new(entries, e) != 0;
    }
    for (size_t i = 0; i < n && !bad; i++) {
        if (!renderable(&v[i]) || !scored(&v[i]) || (v[i].in_sample && !with_in_sample))
            continue;
        double ape = fabs(v[i].predicted_ms - v[i].measured_ms) / v[i].measured_ms * 100;
        char month[8];
        month_of(&v[i], month);
        bad = add_ape(all, "all", ape) || (v[i].model[0] && add_ape(by_model, v[i].model, ape)) ||
              add_ape(by_kind, api_ledger_kind_name(v[i].kind), ape) || add_ape(by_month, month, ape);
    }
    for (int k = 0; k < API_LEDGER_KIND_COUNT && !bad; k++) {
        struct ledger_band b;
        ledger_band_of(v, n, (enum api_ledger_kind)k, &b);
        bad = json_object_set_new(bands, api_ledger_kind_name((enum api_ledger_kind)k),
                                  b.has ? json_pack("{s:I, s:f, s:f, s:f}", "entries", (json_int_t)b.n, "coverage",
                                                    0.8, "ratio_lo", b.lo, "ratio_hi", b.hi)
                                        : json_pack("{s:I, s:i}", "entries", (json_int_t)b.n, "needed",
                                                    LEDGER_BAND_MIN)) != 0;
    }
    if (!bad && !v) { /* a page after the first: its entries only */
        doc = json_pack("{s:O, s:I, s:o}", "entries", entries, "skipped", (json_int_t)m->skipped, "next_cursor",
                        m->next_cursor ? json_string(m->next_cursor) : json_null());
    } else if (!bad) {
        finish_groups(all);
        finish_groups(by_model);
        finish_groups(by_kind);
        finish_groups(by_month);
        json_t *overall = json_object_get(all, "all");
        doc = json_pack("{s:O, s:o, s:b, s:O, s:O, s:O, s:O, s:I, s:o}", "entries", entries, "mape",
                        overall ? json_incref(overall) : json_pack("{s:n, s:i}", "mape_pct", "n", 0),
                        "in_sample_included", with_in_sample, "by_model", by_model, "by_kind", by_kind,
                        "by_month", by_month, "bands", bands, "skipped", (json_int_t)m->skipped, "next_cursor",
                        m->next_cursor ? json_string(m->next_cursor) : json_null());
    }
    json_decref(entries);
    json_decref(all);
    json_decref(by_model);
    json_decref(by_kind);
    json_decref(by_month);
    json_decref(bands);
    return doc;
}

json_t *api_calibration_json(const struct api_calibration *c, int full)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:o}", "name", c->name, "gpu", c->gpu, "source", c->source,
                          "model", str_or_null(c->model), "sha256", c->sha256, "created",
                          api_json_time(c->created_ns));
    if (o && full) {
        json_object_set_new(o, "profile", parsed_or_null(c->document));
        json_object_set_new(o, "report", str_or_null(c->report));
    }
    return o;
}

int api_reply_validation(struct api_reply *r, unsigned status, const struct api_validation *v)
{
    return api_reply_json(r, status, api_validation_json(v));
}

int api_reply_ledger(struct api_reply *r, const struct api_validation *v, size_t n, int with_in_sample)
{
    return api_reply_json(r, 200, api_ledger_json(v, n, with_in_sample));
}

int api_reply_calibration(struct api_reply *r, unsigned status, const struct api_calibration *c)
{
    return api_reply_json(r, status, api_calibration_json(c, 1));
}

int api_reply_calibrations(struct api_reply *r, const struct api_calibration *v, size_t n, struct api_list_meta *m)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *c = api_calibration_json(&v[i], 0);
        if (!c) {
            m->skipped++;
        } else if (json_array_append_new(a, c)) {
            json_decref(a);
            a = NULL;
        }
    }
    return api_reply_json(r, 200, api_list_doc("calibrations", a, m));
}

char *api_ledger_file_text(const struct api_validation *v, size_t n)
{
    json_t *entries = json_array();
    for (size_t i = 0; entries && i < n; i++) {
        json_t *e = api_validation_json(&v[i]);
        if (!e || json_object_set_new(e, "created_ns", json_integer((json_int_t)v[i].created_ns)) ||
            json_array_append_new(entries, e)) {
            json_decref(entries);
            entries = NULL;
        }
    }
    json_t *doc = entries ? json_pack("{s:s, s:i, s:o}", "format", "stepcast-ledger", "version", 1, "entries",
                                      entries)
                          : NULL;
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(doc);
    return text;
}

/* A string member into out (n bytes): absent or null is "", anything else
 * not a string, or too long, fails. */
static int member_str(json_t *o, const char *key, char *out, size_t n)
{
    json_t *v = json_object_get(o, key);
    out[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= n)
        return -1;
    snprintf(out, n, "%s", json_string_value(v));
    return 0;
}

/* An object member as compact JSON text (NULL when absent or null). */
static int member_object(json_t *o, const char *key, char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return -1;
    *out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    return *out ? 0 : -1;
}

static const char *read_entry(json_t *e, struct api_validation *v)
{
    json_t *m = json_object_get(e, "measured_step_ms"), *p = json_object_get(e, "predicted_step_ms");
    char kind[16];
    if (!json_is_object(e))
        return "an object";
    if (!json_is_integer(json_object_get(e, "id")) || json_integer_value(json_object_get(e, "id")) < 1)
        return "id";
    v->id = json_integer_value(json_object_get(e, "id"));
    if (member_str(e, "model", v->model, sizeof v->model) || (v->model[0] && !api_id_valid(v->model)))
        return "model";
    if (member_str(e, "kind", kind, sizeof kind) || api_ledger_kind_parse(kind, &v->kind))
        return "kind";
    if (!json_is_number(m) || !ledger_step_ms_valid(json_number_value(m)))
        return "measured_step_ms";
    v->measured_ms = json_number_value(m);
    if (p && !json_is_null(p) && (!json_is_number(p) || !ledger_step_ms_valid(json_number_value(p))))
        return "predicted_step_ms";
    v->predicted_ms = p && json_is_number(p) ? json_number_value(p) : 0;
    if (member_str(e, "source", v->source, sizeof v->source))
        return "source";
    if (member_str(e, "run_at", v->run_at, sizeof v->run_at))
        return "run_at";
    if (member_str(e, "version", v->version, sizeof v->version))
        return "version";
    if (member_str(e, "calibration", v->calibration, sizeof v->calibration))
        return "calibration";
    if (!json_is_boolean(json_object_get(e, "in_sample")))
        return "in_sample";
    v->in_sample = json_is_true(json_object_get(e, "in_sample"));
    if (!json_is_integer(json_object_get(e, "created_ns")) || json_integer_value(json_object_get(e, "created_ns")) < 0)
        return "created_ns";
    v->created_ns = json_integer_value(json_object_get(e, "created_ns"));
    if (member_object(e, "spec", &v->spec))
        return "spec";
    if (member_object(e, "set", &v->set))
        return "set";
    return NULL;
}

int api_ledger_file_parse(const char *text, size_t len, struct api_validation **out, size_t *n,
                          struct sc_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *entries;
    const char *format = NULL;
    int version = 0, rc = SC_OK;
    *out = NULL;
    *n = 0;
    if (!doc)
        return sc_error_set(err, SC_EPARSE, "not JSON: %s (byte %d)", je.text, je.position);
    if (json_unpack(doc, "{s:s, s:i, s:o}", "format", &format, "version", &version, "entries", &entries) ||
        strcmp(format, "stepcast-ledger") != 0 || version != 1 || !json_is_array(entries)) {
        json_decref(doc);
        return sc_error_set(err, SC_EPARSE, "not a stepcast ledger (format \"stepcast-ledger\", version 1, entries)");
    }
    size_t k = json_array_size(entries);
    struct api_validation *v = calloc(k ? k : 1, sizeof *v);
    if (!v)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < k && rc == SC_OK; i++) {
        const char *bad = read_entry(json_array_get(entries, i), &v[i]);
        if (bad)
            rc = sc_error_set(err, SC_EPARSE, "entries[%zu]: %s is not valid", i, bad);
        for (size_t j = 0; j < i && rc == SC_OK; j++)
            if (v[j].id == v[i].id)
                rc = sc_error_set(err, SC_EPARSE, "entries[%zu]: id %lld repeats", i, (long long)v[i].id);
    }
    json_decref(doc);
    if (rc) {
        api_validations_free(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return SC_OK;
}
