/* estimator/calibrate/cluster_profile.c: the cluster profile document, written and
 * read with Jansson (cluster_profile.h). */
#include "estimator/calibrate/cluster_profile.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/doc/json_doc.h"
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
    json_t *doc = json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o}", "format", PROFILE_FORMAT, "version",
                            PROFILE_VERSION, "gpu", str_or_null(p->gpu), "device_name",
                            str_or_null(p->device_name), "source", str_or_null(p->source), "measurements",
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

/* ---- reading ---- */

/* The document as read: its header, then the profile. */
struct profile_doc {
    char format[32];
    int64_t version;
    struct cluster_profile p;
};

#define AT(member) offsetof(struct profile_doc, member), sizeof(((struct profile_doc *)0)->member)
#define FIELD(path, type, flags, member, lo, hi) {path, type, flags, AT(member), lo, hi, NULL, NULL, 0}
#define OBJECT(path) {path, DOC_OBJECT, 0, 0, 0, 0, 0, NULL, NULL, 0}
#define IGNORED(path) {path, DOC_IGNORED, 0, 0, 0, 0, 0, NULL, NULL, 0}
/* a figure the fit gives: >= 0 here, its physical range checked after
 * (cost_coll_params_valid, cost_kernel_params_check) */
#define FIGURE(path, member) FIELD(path, DOC_NUM, 0, member, 0, HUGE_VAL)

static const struct doc_field header_fields[] = {
    FIELD("format", DOC_STR, DOC_REQUIRED, format, 0, 0),
    FIELD("version", DOC_INT, DOC_REQUIRED, version, 1, PROFILE_VERSION),
    FIELD("gpu", DOC_STR, DOC_NULLABLE, p.gpu, 0, 0),
    FIELD("device_name", DOC_STR, DOC_NULLABLE, p.device_name, 0, 0),
    FIELD("source", DOC_STR, DOC_NULLABLE, p.source, 0, 0),
    IGNORED("measurements"),
    IGNORED("flags"),
    OBJECT("collective"),
    FIGURE("collective.base_us", p.coll.base_us),
    FIGURE("collective.nvls_gain", p.coll.nvls_gain),
    OBJECT("collective.intra"),
    FIGURE("collective.intra.busbw_gbps", p.coll.intra.busbw_gbps),
    FIGURE("collective.intra.hop_us", p.coll.intra.hop_us),
    OBJECT("collective.inter"),
    FIGURE("collective.inter.busbw_gbps", p.coll.inter.busbw_gbps),
    FIGURE("collective.inter.hop_us", p.coll.inter.hop_us),
    {"collective.lines", DOC_OBJECT, 0, AT(p.coll.lines), 0, 0, NULL, &cost_coll_lines_doc, 0},
    FIELD("collective.nvls", DOC_BOOL, 0, p.coll.nvls, 0, 1),
    FIELD("collective.sharp", DOC_BOOL, 0, p.coll.sharp, 0, 1),
    OBJECT("kernel"),
    IGNORED("kernel.fit"),
};
#define N_HEADER (sizeof header_fields / sizeof header_fields[0])
#define MAX_KERNEL_PARAMS 64

/* The header's fields and one "kernel.NAME" for each kernel parameter,
 * whose names the kernel model gives at run time. */
static struct doc_field fields[N_HEADER + MAX_KERNEL_PARAMS];
static char kernel_paths[MAX_KERNEL_PARAMS][72];
static struct doc_table profile_table = {fields, 0, "a cluster profile", SC_EPARSE, 0};
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    static struct profile_doc at; /* where each parameter lies */
    size_t n = N_HEADER;
    memcpy(fields, header_fields, sizeof header_fields);
    assert(cost_kernel_param_count() <= MAX_KERNEL_PARAMS);
    for (size_t i = 0; i < cost_kernel_param_count(); i++, n++) {
        char name[64];
        snprintf(kernel_paths[i], sizeof kernel_paths[i], "kernel.%s", cost_kernel_param_name(i, name, sizeof name));
        fields[n] = (struct doc_field)FIGURE(kernel_paths[i], p.kernel);
        fields[n].off = (size_t)((char *)cost_kernel_param_at(&at.p.kernel, i) - (char *)&at);
        fields[n].size = sizeof(double);
    }
    profile_table.n = n;
}

static int given_at(const unsigned char *given, const char *path)
{
    for (size_t i = 0; i < profile_table.n; i++)
        if (strcmp(fields[i].path, path) == 0)
            return given[i];
    return 0;
}

int calib_cluster_profile_parse(const char *json, size_t len, struct cluster_profile *p, struct sc_error *err)
{
    unsigned char given[DOC_MAX_FIELDS];
    struct profile_doc *d = malloc(sizeof *d);
    int status;
    if (!d)
        return sc_error_set(err, SC_ENOMEM, "cluster profile: out of memory");
    pthread_once(&table_once, build_table);
    memset(d, 0, sizeof *d);
    d->p = *p;
    memset(d->p.coll.lines, 0, sizeof d->p.coll.lines); /* lines given replace all of them */
    if ((status = doc_read(json, len, &profile_table, NULL, d, given, err))) {
        sc_error_prefix(err, "cluster profile");
        goto out;
    }
    if (strcmp(d->format, PROFILE_FORMAT) != 0) {
        status = sc_error_set(err, SC_EPARSE, "cluster profile: format must be \"%s\"", PROFILE_FORMAT);
        goto out;
    }
    if (!given_at(given, "collective.lines"))
        memcpy(d->p.coll.lines, p->coll.lines, sizeof d->p.coll.lines);
    if (given_at(given, "collective") && cost_coll_params_valid(&d->p.coll, err)) {
        sc_error_prefix(err, "cluster profile");
        status = err->code = SC_EPARSE;
        goto out;
    }
    if (given_at(given, "kernel")) {
        if (cost_kernel_params_check(&d->p.kernel, err)) {
            status = sc_error_set(err, SC_EPARSE, "cluster profile: %s", err->msg);
            goto out;
        }
        d->p.has_kernel = 1;
    }
    *p = d->p;
out:
    free(d);
    return status;
}
