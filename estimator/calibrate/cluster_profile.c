/* estimator/calibrate/cluster_profile.c: the cluster profile document, written and
 * read with Jansson (cluster_profile.h). */
#include "estimator/calibrate/cluster_profile.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/banned.h"

#define PROFILE_FORMAT "stepcast-cluster-profile"
#define PROFILE_VERSION 1

static json_t *num_or_null(double v, int known)
{
    return known && isfinite(v) ? json_real(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *tier_json(const struct coll_tier *t)
{
    return json_pack("{s:f, s:f}", "busbw_gbps", t->busbw_gbps, "hop_us", t->hop_us);
}

static json_t *fit_json(const struct coll_fit *f)
{
    return json_pack("{s:f, s:f, s:o, s:o, s:o, s:o, s:I, s:f, s:f}", "size_min", f->size_lo, "size_max",
                     f->size_hi, "alpha_us", num_or_null(f->alpha_us, f->alpha_fitted), "alpha_stderr_us",
                     num_or_null(f->alpha_se_us, f->alpha_fitted), "busbw_gbps",
                     num_or_null(f->busbw_gbps, f->busbw_gbps > 0), "busbw_stderr_gbps",
                     num_or_null(f->busbw_se_gbps, f->busbw_gbps > 0), "points", (json_int_t)f->points,
                     "rms_err_pct", f->rms_err_pct, "max_err_pct", f->max_err_pct);
}

static json_t *check_json(const struct estimate_check *c)
{
    return json_pack("{s:f, s:f, s:f}", "median_abs_err_pct", c->median_abs_pct, "mean_abs_err_pct",
                     c->mean_abs_pct, "median_ratio", c->median_ratio);
}

/* The document as a tree (NULL when out of memory). */
static json_t *profile_doc(const struct cluster_profile *p, const struct coll_measurement *m, size_t n)
{
    json_t *ms = json_array();
    for (size_t i = 0; ms && i < n; i++) {
        json_t *fits = json_array();
        for (size_t j = 0; fits && j < m[i].n_fits; j++)
            json_array_append_new(fits, fit_json(&m[i].fits[j]));
        json_array_append_new(ms, json_pack("{s:s, s:i, s:i, s:s, s:s, s:o}", "kind", cost_coll_kind_name(m[i].kind),
                                            "ranks", m[i].ranks, "nodes", m[i].nodes, "tier",
                                            m[i].inter ? "inter" : "intra", "source", m[i].source, "fits",
                                            fits ? fits : json_null()));
    }
    const struct coll_params *c = &p->coll;
    json_t *coll = json_pack("{s:f, s:o, s:o, s:f, s:b, s:b}", "base_us", c->base_us, "intra",
                             tier_json(&c->intra), "inter", tier_json(&c->inter), "nvls_gain", c->nvls_gain,
                             "nvls", c->nvls, "sharp", c->sharp);
    char *lines_text = cost_coll_lines_json(c->lines);
    json_t *lines = lines_text ? json_loads(lines_text, 0, NULL) : NULL;
    free(lines_text);
    if (coll && lines)
        json_object_set_new(coll, "lines", lines);
    else
        json_decref(lines);
    json_t *flags = json_array();
    for (int i = 0; flags && i < p->n_flags; i++)
        json_array_append_new(flags, json_string(p->flags[i]));
    json_t *doc = json_pack("{s:s, s:i, s:o, s:o, s:s, s:o, s:o, s:o}", "format", PROFILE_FORMAT, "version",
                            PROFILE_VERSION, "gpu", str_or_null(p->gpu), "device_name",
                            str_or_null(p->device_name), "source", p->source, "measurements",
                            ms ? ms : json_null(), "collective", coll ? coll : json_null(), "flags",
                            flags ? flags : json_null());
    if (doc && p->has_kernel) {
        json_t *k = json_object();
        for (size_t i = 0; k && i < cost_kernel_param_count(); i++) {
            char name[64];
            json_object_set_new(k, cost_kernel_param_name(i, name, sizeof name),
                                json_real(cost_kernel_param_get(&p->kernel, i)));
        }
        json_t *fit = p->kernel_fit.samples || p->mem_fit.samples || p->attn_fit.fitted ? json_object() : NULL;
        if (fit && p->kernel_fit.samples) {
            json_object_set_new(fit, "gemm_samples", json_integer((json_int_t)p->kernel_fit.samples));
            json_object_set_new(fit, "before", check_json(&p->kernel_fit.before));
            json_object_set_new(fit, "after", check_json(&p->kernel_fit.after));
            json_object_set_new(fit, "kernel_fixed_us_stderr", json_real(p->kernel_fit.fixed_se_us));
            json_object_set_new(fit, "gemm_ceiling_scale_stderr", json_real(p->kernel_fit.scale_se));
        }
        if (fit && p->mem_fit.samples) {
            const struct mem_fit *f = &p->mem_fit;
            json_object_set_new(fit, "memory_bound",
                                json_pack("{s:I, s:f, s:o, s:o}", "samples", (json_int_t)f->samples,
                                          "hbm_fraction_stderr", f->fraction_se, "before", check_json(&f->before),
                                          "after", check_json(&f->after)));
        }
        if (fit && p->attn_fit.fitted) {
            const struct attn_fit *f = &p->attn_fit;
            json_object_set_new(fit, "attention",
                                json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:o, s:o}", "forward",
                                          (json_int_t)f->forward, "backward", (json_int_t)f->backward,
                                          "attn_efficiency_stderr", f->forward_se[0], "attn_block_us_stderr",
                                          f->forward_se[1], "attn_backward_fraction_stderr", f->backward_se[0],
                                          "attn_backward_block_us_stderr", f->backward_se[1], "before",
                                          check_json(&f->before), "after", check_json(&f->after)));
        }
        if (k && fit)
            json_object_set_new(k, "fit", fit);
        else
            json_decref(fit);
        json_object_set_new(doc, "kernel", k ? k : json_null());
    }
    return doc;
}

char *calib_cluster_profile_json(const struct cluster_profile *p, const struct coll_measurement *m, size_t n)
{
    json_t *doc = profile_doc(p, m, n);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(doc);
    return text;
}

static int get_num(json_t *obj, const char *key, const char *where, double *out, struct sc_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return SC_OK; /* keeps the default */
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return sc_error_set(err, SC_EPARSE, "cluster profile: %s.%s must be a number >= 0", where, key);
    *out = json_number_value(v);
    return SC_OK;
}

static int get_str(json_t *doc, const char *key, char *out, size_t len, struct sc_error *err)
{
    json_t *v = json_object_get(doc, key);
    if (v && !json_is_null(v) && !json_is_string(v))
        return sc_error_set(err, SC_EPARSE, "cluster profile: %s must be a string or null", key);
    if (v)
        snprintf(out, len, "%s", json_is_string(v) ? json_string_value(v) : "");
    return SC_OK;
}

static int parse_coll(json_t *c, struct coll_params *q, struct sc_error *err)
{
    json_t *in = json_object_get(c, "intra"), *x = json_object_get(c, "inter"), *b;
    int status;
    if (!json_is_object(c) || (in && !json_is_object(in)) || (x && !json_is_object(x)))
        return sc_error_set(err, SC_EPARSE, "cluster profile: collective, collective.intra and "
                                            "collective.inter must be objects");
    if ((status = get_num(c, "base_us", "collective", &q->base_us, err)) ||
        (status = get_num(c, "nvls_gain", "collective", &q->nvls_gain, err)) ||
        (status = get_num(in, "busbw_gbps", "collective.intra", &q->intra.busbw_gbps, err)) ||
        (status = get_num(in, "hop_us", "collective.intra", &q->intra.hop_us, err)) ||
        (status = get_num(x, "busbw_gbps", "collective.inter", &q->inter.busbw_gbps, err)) ||
        (status = get_num(x, "hop_us", "collective.inter", &q->inter.hop_us, err)))
        return status;
    if ((b = json_object_get(c, "lines"))) {
        char *text = json_dumps(b, JSON_ENCODE_ANY); /* doubles at 17 digits: read back exactly */
        if (!text)
            return sc_error_set(err, SC_ENOMEM, "cluster profile: collective.lines: out of memory");
        status = cost_coll_lines_parse(text, strlen(text), "cluster profile: collective.lines", q->lines, err);
        free(text);
        if (status)
            return status;
    }
    if ((b = json_object_get(c, "nvls")))
        q->nvls = json_is_true(b);
    if ((b = json_object_get(c, "sharp")))
        q->sharp = json_is_true(b);
    return SC_OK;
}

int calib_cluster_profile_parse(const char *json, size_t len, struct cluster_profile *p, struct sc_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    struct cluster_profile q = *p;
    int status = SC_OK;
    if (!doc)
        return sc_error_set(err, SC_EPARSE, "cluster profile: %s (line %d)", je.text, je.line);
    const char *fmt = json_string_value(json_object_get(doc, "format"));
    json_t *c = json_object_get(doc, "collective"), *k = json_object_get(doc, "kernel");
    if (!json_is_object(doc) || !fmt || strcmp(fmt, PROFILE_FORMAT) != 0) {
        status = sc_error_set(err, SC_EPARSE, "cluster profile: format must be \"%s\"", PROFILE_FORMAT);
        goto out;
    }
    if (json_integer_value(json_object_get(doc, "version")) != PROFILE_VERSION) {
        status = sc_error_set(err, SC_EPARSE, "cluster profile: version must be %d", PROFILE_VERSION);
        goto out;
    }
    if ((status = get_str(doc, "gpu", q.gpu, sizeof q.gpu, err)) ||
        (status = get_str(doc, "device_name", q.device_name, sizeof q.device_name, err)) ||
        (status = get_str(doc, "source", q.source, sizeof q.source, err)))
        goto out;
    if (c && (status = parse_coll(c, &q.coll, err)))
        goto out;
    if (c && cost_coll_params_valid(&q.coll, err)) {
        sc_error_prefix(err, "cluster profile");
        status = err->code = SC_EPARSE;
        goto out;
    }
    if (k) {
        if (!json_is_object(k)) {
            status = sc_error_set(err, SC_EPARSE, "cluster profile: kernel must be an object");
            goto out;
        }
        for (size_t i = 0; i < cost_kernel_param_count(); i++) {
            char name[64];
            if ((status = get_num(k, cost_kernel_param_name(i, name, sizeof name), "kernel",
                                  cost_kernel_param_at(&q.kernel, i), err)))
                goto out;
        }
        if (cost_kernel_params_check(&q.kernel, err)) {
            status = sc_error_set(err, SC_EPARSE, "cluster profile: %s", err->msg);
            goto out;
        }
        q.has_kernel = 1;
    }
    *p = q;
out:
    json_decref(doc);
    return status;
}
