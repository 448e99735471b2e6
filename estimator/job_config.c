/* estimator/job_config.c: parsing and writing job descriptions and
 * what-if sets (job_config.h). One table of keys serves the JSON and the
 * "k=v" forms, so they accept the same names and ranges. */
#include "estimator/job_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/spec.h"
#include "common/banned.h"

enum key_kind { KEY_INT, KEY_DTYPE, KEY_SCHEDULE, KEY_GPU };

struct key {
    const char *name;
    enum key_kind kind;
    size_t off;     /* int64_t field of struct job_config (KEY_INT) */
    int64_t max;
    int required;   /* in a job description */
};

#define INTKEY(f, max, req) {#f, KEY_INT, offsetof(struct job_config, f), max, req}
static const struct key keys[] = {
    INTKEY(tp, 1 << 16, 1),          INTKEY(pp, 1 << 16, 1),       INTKEY(dp, 1 << 20, 1),
    INTKEY(micro_batch, 1 << 20, 0), INTKEY(global_batch, 1 << 30, 0), INTKEY(layers, 1 << 16, 0),
    INTKEY(hidden, 1 << 20, 0),      INTKEY(heads, 1 << 16, 0),    INTKEY(ffn, 1 << 24, 0),
    INTKEY(seq, 1 << 24, 0),         INTKEY(vocab, 1 << 24, 0),    {"dtype", KEY_DTYPE, 0, 0, 0},
    {"schedule", KEY_SCHEDULE, 0, 0, 0}, INTKEY(vpp, 1 << 10, 0), {"gpu", KEY_GPU, 0, 0, 0},
};
#define N_KEYS (sizeof keys / sizeof keys[0])

static const char *const key_names[] = {"tp",  "pp",    "dp",  "micro_batch", "global_batch", "layers", "hidden",
                                        "heads", "ffn", "seq", "vocab",       "dtype",        "schedule", "vpp", "gpu", NULL};

const char *const *job_config_keys(void)
{
    return key_names;
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static int64_t *int_field(struct job_config *c, const struct key *k)
{
    return (int64_t *)((char *)c + k->off);
}

/* Set key k of *c from an integer v or a string s (one of them given). */
static int set_value(struct job_config *c, const struct key *k, const char *prefix, int has_int, long long v,
                     const char *s, struct sc_error *err)
{
    switch (k->kind) {
    case KEY_INT:
        if (!has_int || v < 1 || v > k->max)
            return sc_error_set(err, SC_EINVAL, "%s%s: must be an integer from 1 to %lld", prefix, k->name,
                                (long long)k->max);
        *int_field(c, k) = v;
        return SC_OK;
    case KEY_DTYPE:
        if (!s || hw_dtype_parse(s, &c->dtype, err))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be one of fp32, tf32, fp16, bf16, fp8, fp4", prefix,
                                k->name);
        c->has_dtype = 1;
        return SC_OK;
    case KEY_SCHEDULE:
        if (!s || est_schedule_parse(s, &c->schedule))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be \"1f1b\" or \"interleaved\"", prefix, k->name);
        c->has_schedule = 1;
        return SC_OK;
    case KEY_GPU:
        if (!s || !hw_profile_find(s))
            return sc_error_set(err, SC_EINVAL, "%s%s: no hardware profile named '%s' (see stepcast hardware)",
                                prefix, k->name, s ? s : "");
        snprintf(c->gpu, sizeof c->gpu, "%s", s);
        return SC_OK;
    }
    return sc_error_set(err, SC_EINTERNAL, "bad key kind");
}

/* The members of a JSON object into *c; `set` allows gpu and requires
 * nothing. */
static int from_object(const json_t *obj, int set, struct job_config *c, struct sc_error *err)
{
    const char *prefix = set ? "set." : "";
    const char *name;
    json_t *v;
    memset(c, 0, sizeof *c);
    if (!json_is_object(obj))
        return sc_error_set(err, SC_EINVAL, "%s: must be a JSON object", set ? "set" : "job description");
    json_object_foreach((json_t *)obj, name, v)
    {
        const struct key *k = find_key(name);
        if (!k || (!set && k->kind == KEY_GPU))
            return sc_error_set(err, SC_EINVAL, "%s%s: unknown key%s", prefix, name,
                                k ? " (the traced GPU is read from the trace)" : "");
        int rc = set_value(c, k, prefix, json_is_integer(v), json_is_integer(v) ? json_integer_value(v) : 0,
                           json_string_value(v), err);
        if (rc)
            return rc;
    }
    if (!set)
        for (size_t i = 0; i < N_KEYS; i++)
            if (keys[i].required && *int_field(c, &keys[i]) == 0)
                return sc_error_set(err, SC_EINVAL, "%s: required (the job description gives tp, pp and dp)",
                                    keys[i].name);
    return set ? SC_OK : job_config_check_schedule(c, "", err);
}

static int parse_json(const char *text, size_t len, int set, struct job_config *out, struct sc_error *err)
{
    json_error_t je;
    if (len > JOB_CONFIG_MAX_BYTES)
        return sc_error_set(err, SC_ELIMIT, "%s: larger than %d bytes", set ? "set" : "job description",
                            JOB_CONFIG_MAX_BYTES);
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return sc_error_set(err, SC_EPARSE, "%s: bad JSON at line %d: %s", set ? "set" : "job description",
                            je.line, je.text);
    int rc = from_object(doc, set, out, err);
    json_decref(doc);
    return rc;
}

int job_config_parse(const char *text, size_t len, struct job_config *out, struct sc_error *err)
{
    return parse_json(text, len, 0, out, err);
}

int job_config_parse_set_json(const char *text, size_t len, struct job_config *out, struct sc_error *err)
{
    return parse_json(text, len, 1, out, err);
}

int job_config_parse_set_list(const char *list, struct job_config *out, struct sc_error *err)
{
    char item[160];
    memset(out, 0, sizeof *out);
    if (!list || !*list)
        return sc_error_set(err, SC_EINVAL, "set: empty (give k=v,k=v)");
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item)
            return sc_error_set(err, SC_EINVAL, "set: bad item at '%.40s' (give k=v,k=v)", p);
        memcpy(item, p, n);
        item[n] = '\0';
        p += n + (p[n] == ',');
        char *eq = strchr(item, '=');
        if (!eq)
            return sc_error_set(err, SC_EINVAL, "set.%s: give a value (k=v)", item);
        *eq = '\0';
        const struct key *k = find_key(item);
        if (!k)
            return sc_error_set(err, SC_EINVAL, "set.%s: unknown key", item);
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        int is_int = eq[1] && !*end && errno == 0;
        int rc = set_value(out, k, "set.", is_int, v, eq + 1, err);
        if (rc)
            return rc;
    }
    return SC_OK;
}

void job_config_apply(const struct job_config *base, const struct job_config *set, struct job_config *out)
{
    *out = *base;
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].kind == KEY_INT && *int_field((struct job_config *)set, &keys[i]))
            *int_field(out, &keys[i]) = *int_field((struct job_config *)set, &keys[i]);
    if (set->has_dtype) {
        out->has_dtype = 1;
        out->dtype = set->dtype;
    }
    if (set->has_schedule) {
        out->has_schedule = 1;
        out->schedule = set->schedule;
    }
    if (set->gpu[0])
        snprintf(out->gpu, sizeof out->gpu, "%s", set->gpu);
}

enum est_schedule job_config_schedule(const struct job_config *c)
{
    return c->has_schedule ? c->schedule : EST_SCHEDULE_1F1B;
}

int64_t job_config_vpp(const struct job_config *c)
{
    return c->vpp ? c->vpp : 1;
}

int job_config_check_schedule(const struct job_config *c, const char *prefix, struct sc_error *err)
{
    return est_schedule_check(c->pp, job_config_vpp(c), job_config_schedule(c), c->layers,
                              job_config_micro_batches(c), prefix, prefix, err);
}

int64_t job_config_micro_batches(const struct job_config *c)
{
    if (!c->global_batch || !c->micro_batch || !c->dp)
        return 0;
    return c->global_batch / (c->micro_batch * c->dp);
}

char *job_config_json(const struct job_config *c)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        if (k->kind == KEY_INT && *int_field((struct job_config *)c, k))
            json_object_set_new(o, k->name, json_integer(*int_field((struct job_config *)c, k)));
        else if (k->kind == KEY_DTYPE && c->has_dtype)
            json_object_set_new(o, k->name, json_string(hw_dtype_name(c->dtype)));
        else if (k->kind == KEY_SCHEDULE && c->has_schedule)
            json_object_set_new(o, k->name, json_string(est_schedule_name(c->schedule)));
        else if (k->kind == KEY_GPU && c->gpu[0])
            json_object_set_new(o, k->name, json_string(c->gpu));
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

int job_config_spec_text(const struct job_config *c, const char *gpu, int open, char *text, size_t size,
                         struct sc_error *err)
{
    if (!c->layers || !c->hidden || !c->heads || !c->seq)
        return sc_error_set(err, SC_EINVAL, "the job description lacks layers, hidden, heads or seq");
    int n = snprintf(text, size, "{\"model\":{\"layers\":%lld,\"hidden\":%lld,\"heads\":%lld,\"seq\":%lld",
                     (long long)c->layers, (long long)c->hidden, (long long)c->heads, (long long)c->seq);
    if (c->ffn)
        n += snprintf(text + n, size - (size_t)n, ",\"ffn\":%lld", (long long)c->ffn);
    if (c->vocab)
        n += snprintf(text + n, size - (size_t)n, ",\"vocab\":%lld", (long long)c->vocab);
    char par[256] = ""; /* the parallel object's members, each after a comma */
    int p = 0;
    if (!open)
        p += snprintf(par + p, sizeof par - (size_t)p,
                      ",\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"micro_batch\":%lld,\"schedule\":\"%s\",\"vpp\":%lld",
                      (long long)c->tp, (long long)c->pp, (long long)c->dp,
                      (long long)(c->micro_batch ? c->micro_batch : 1), est_schedule_name(job_config_schedule(c)),
                      (long long)job_config_vpp(c));
    else if (!c->micro_batch) /* a what-if keeps it (a spec's default: 1) */
        p += snprintf(par + p, sizeof par - (size_t)p, ",\"micro_batch\":1");
    if (c->global_batch)
        snprintf(par + p, sizeof par - (size_t)p, ",\"global_batch\":%lld", (long long)c->global_batch);
    n += snprintf(text + n, size - (size_t)n, "},\"parallel\":{%s},\"cluster\":{\"gpu\":\"%s\"}",
                  par[0] ? par + 1 : "", gpu);
    if (c->has_dtype)
        n += snprintf(text + n, size - (size_t)n, ",\"options\":{\"dtype\":\"%s\"}", hw_dtype_name(c->dtype));
    if ((size_t)snprintf(text + n, size - (size_t)n, "}") >= size - (size_t)n)
        return sc_error_set(err, SC_ELIMIT, "the job description's spec is too long");
    return SC_OK;
}

int job_config_spec(const struct job_config *c, const char *gpu, struct est_spec *out, struct sc_error *err)
{
    char text[1024];
    int rc = job_config_spec_text(c, gpu, 0, text, sizeof text, err);
    if (rc)
        return rc;
    return est_spec_load(text, strlen(text), out, NULL, err);
}
