/* estimator/spec/job_config.c: parsing and writing job descriptions and
 * what-if sets (job_config.h). One table of keys serves the JSON and the
 * "k=v" forms, so they accept the same names and ranges. */
#include "estimator/spec/job_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "estimator/spec/spec.h"
#include "common/banned.h"

enum key_kind { KEY_INT, KEY_DTYPE, KEY_SCHEDULE, KEY_GPU, KEY_MLP, KEY_RECOMPUTE, KEY_BOOL, KEY_FRAMEWORK,
                KEY_MASTER };

struct key {
    const char *name; /* moe's members dotted: "moe.experts" */
    enum key_kind kind;
    size_t off;       /* int64_t field of struct job_config (KEY_INT) */
    int64_t min, max;
    int required;     /* in a job description */
};

#define INTKEY(f, max, req) {#f, KEY_INT, offsetof(struct job_config, f), 1, max, req}
/* zero_stage and moe.shared_experts take 0 */
#define INTKEY0(f, max) {#f, KEY_INT, offsetof(struct job_config, f), 0, max, 0}
#define NAMEKEY(name, kind) {name, kind, 0, 0, 0, 0}
/* a boolean: an int field, -1 when not given */
#define BOOLKEY(f) {#f, KEY_BOOL, offsetof(struct job_config, f), 0, 1, 0}
/* The spec's ranges (estimator/spec/spec.h, EST_MAX_*). */
static const struct key keys[] = {
    INTKEY(tp, EST_MAX_DEGREE, 1),   INTKEY(pp, EST_MAX_DEGREE, 1),    INTKEY(dp, EST_MAX_DEGREE, 1),
    INTKEY(micro_batch, EST_MAX_MICRO_BATCH, 0), INTKEY(global_batch, EST_MAX_GLOBAL_BATCH, 0),
    INTKEY(layers, EST_MAX_LAYERS, 0),
    INTKEY(hidden, EST_MAX_HIDDEN, 0), INTKEY(heads, EST_MAX_HEADS, 0), INTKEY(ffn, EST_MAX_FFN, 0),
    INTKEY(seq, EST_MAX_SEQ, 0),     INTKEY(vocab, EST_MAX_VOCAB, 0),  NAMEKEY("dtype", KEY_DTYPE),
    NAMEKEY("schedule", KEY_SCHEDULE), INTKEY(vpp, 1 << 10, 0),        NAMEKEY("gpu", KEY_GPU),
    INTKEY(kv_heads, EST_MAX_HEADS, 0), NAMEKEY("mlp", KEY_MLP),       INTKEY(cp, EST_MAX_DEGREE, 0),
    INTKEY(ep, EST_MAX_DEGREE, 0),   INTKEY(etp, EST_MAX_DEGREE, 0),   INTKEY0(zero_stage, 3),
    BOOLKEY(sequence_parallel), NAMEKEY("recompute", KEY_RECOMPUTE),
    INTKEY(gpus_per_node, 1 << 20, 0), NAMEKEY("framework", KEY_FRAMEWORK),
    NAMEKEY("master_weights", KEY_MASTER), BOOLKEY(tied_embeddings), BOOLKEY(bias),
    {"moe.experts", KEY_INT, offsetof(struct job_config, moe.experts), 1, EST_MAX_EXPERTS, 0},
    {"moe.top_k", KEY_INT, offsetof(struct job_config, moe.top_k), 1, EST_MAX_EXPERTS, 0},
    {"moe.ffn", KEY_INT, offsetof(struct job_config, moe.ffn), 1, EST_MAX_FFN, 0},
    {"moe.shared_experts", KEY_INT, offsetof(struct job_config, moe.shared_experts), 0, 1 << 10, 0},
};
#define N_KEYS (sizeof keys / sizeof keys[0])

const char *const *spec_job_config_keys(void)
{
    static const char *names[N_KEYS + 1];
    for (size_t i = 0; i < N_KEYS; i++)
        names[i] = keys[i].name;
    return names;
}

void spec_job_config_init(struct job_config *c)
{
    memset(c, 0, sizeof *c);
    c->sequence_parallel = -1;
    c->tied_embeddings = -1;
    c->bias = -1;
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static int *bool_field(struct job_config *c, const struct key *k)
{
    return (int *)((char *)c + k->off);
}

static int64_t *int_field(struct job_config *c, const struct key *k)
{
    return (int64_t *)((char *)c + k->off);
}

static int64_t int_value(const struct job_config *c, const struct key *k)
{
    return *(const int64_t *)((const char *)c + k->off);
}

/* A value as given: an integer, a boolean or a string (any of them). */
struct value {
    int is_int, is_bool;
    long long i;
    int b;
    const char *s;
};

/* Set key k of *c from v. */
static int set_value(struct job_config *c, const struct key *k, const char *prefix, const struct value *v,
                     struct sc_error *err)
{
    switch (k->kind) {
    case KEY_INT:
        if (!v->is_int || v->i < k->min || v->i > k->max)
            return sc_error_set(err, SC_EINVAL, "%s%s: must be an integer from %lld to %lld", prefix, k->name,
                                (long long)k->min, (long long)k->max);
        *int_field(c, k) = v->i;
        if (k->off == offsetof(struct job_config, zero_stage))
            c->has_zero_stage = 1;
        return SC_OK;
    case KEY_DTYPE:
        if (!v->s || cost_hw_dtype_parse(v->s, &c->dtype, err))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be one of fp32, tf32, fp16, bf16, fp8, fp4", prefix,
                                k->name);
        c->has_dtype = 1;
        return SC_OK;
    case KEY_SCHEDULE:
        if (!v->s || spec_schedule_parse(v->s, &c->schedule))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be \"1f1b\" or \"interleaved\"", prefix, k->name);
        c->has_schedule = 1;
        return SC_OK;
    case KEY_MLP:
        if (!v->s || spec_mlp_parse(v->s, &c->mlp))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be \"gelu\" or \"swiglu\"", prefix, k->name);
        c->has_mlp = 1;
        return SC_OK;
    case KEY_RECOMPUTE: /* what a traced job ran: the spec's "auto" is a search */
        if (!v->s || spec_recompute_parse(v->s, &c->recompute) || c->recompute == EST_RECOMPUTE_AUTO)
            return sc_error_set(err, SC_EINVAL, "%s%s: must be \"none\", \"selective\" or \"full\"", prefix,
                                k->name);
        c->has_recompute = 1;
        return SC_OK;
    case KEY_FRAMEWORK:
        if (!v->s || spec_framework_parse(v->s, &c->framework))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be \"megatron\" or \"pytorch\"", prefix, k->name);
        c->has_framework = 1;
        return SC_OK;
    case KEY_MASTER:
        if (!v->s || spec_master_weights_parse(v->s, &c->master_weights))
            return sc_error_set(err, SC_EINVAL, "%s%s: must be \"fp32\" or \"bf16\"", prefix, k->name);
        c->has_master_weights = 1;
        return SC_OK;
    case KEY_BOOL:
        if (!v->is_bool)
            return sc_error_set(err, SC_EINVAL, "%s%s: must be true or false", prefix, k->name);
        *bool_field(c, k) = v->b;
        return SC_OK;
    case KEY_GPU:
        if (!v->s || !cost_hw_profile_find(v->s))
            return sc_error_set(err, SC_EINVAL, "%s%s: no hardware profile named '%s' (see stepcast hardware)",
                                prefix, k->name, v->s ? v->s : "");
        snprintf(c->gpu, sizeof c->gpu, "%s", v->s);
        return SC_OK;
    }
    return sc_error_set(err, SC_EINTERNAL, "bad key kind");
}

/* The members of JSON object obj, whose keys are named after path ("" at
 * the top, "moe." in moe), into *c; `set` allows gpu. */
static int walk(const json_t *obj, const char *prefix, const char *path, int set, struct job_config *c,
                struct sc_error *err)
{
    const char *name;
    json_t *v;
    char full[80];
    json_object_foreach((json_t *)obj, name, v)
    {
        snprintf(full, sizeof full, "%s%.64s", path, name);
        const struct key *k = strchr(name, '.') ? NULL : find_key(full);
        if (!*path && strcmp(name, "moe") == 0) {
            if (!json_is_object(v))
                return sc_error_set(err, SC_EINVAL, "%smoe: must be an object", prefix);
            int rc = walk(v, prefix, "moe.", set, c, err);
            if (rc)
                return rc;
            continue;
        }
        if (!k || (!set && k->kind == KEY_GPU))
            return sc_error_set(err, SC_EINVAL, "%s%s: unknown key%s", prefix, full,
                                k ? " (the traced GPU is read from the trace)" : "");
        struct value val = {json_is_integer(v), json_is_boolean(v), json_is_integer(v) ? json_integer_value(v) : 0,
                            json_is_true(v), json_string_value(v)};
        int rc = set_value(c, k, prefix, &val, err);
        if (rc)
            return rc;
    }
    return SC_OK;
}

/* A JSON object into *c; `set` allows gpu and requires nothing. */
static int from_object(const json_t *obj, int set, struct job_config *c, struct sc_error *err)
{
    const char *prefix = set ? "set." : "";
    spec_job_config_init(c);
    if (!json_is_object(obj))
        return sc_error_set(err, SC_EINVAL, "%s: must be a JSON object", set ? "set" : "job description");
    int rc = walk(obj, prefix, "", set, c, err);
    if (rc)
        return rc;
    if (!set)
        for (size_t i = 0; i < N_KEYS; i++)
            if (keys[i].required && int_value(c, &keys[i]) == 0)
                return sc_error_set(err, SC_EINVAL, "%s: required (the job description gives tp, pp and dp)",
                                    keys[i].name);
    return set ? SC_OK : spec_job_config_check_schedule(c, "", err);
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

int spec_job_config_parse(const char *text, size_t len, struct job_config *out, struct sc_error *err)
{
    return parse_json(text, len, 0, out, err);
}

int spec_job_config_parse_set_json(const char *text, size_t len, struct job_config *out, struct sc_error *err)
{
    return parse_json(text, len, 1, out, err);
}

int spec_job_config_parse_set_list(const char *list, struct job_config *out, struct sc_error *err)
{
    char item[160];
    spec_job_config_init(out);
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
        struct value v = {0, 0, strtoll(eq + 1, &end, 10), 0, eq + 1};
        v.is_int = eq[1] && !*end && errno == 0;
        v.b = strcmp(eq + 1, "true") == 0;
        v.is_bool = v.b || strcmp(eq + 1, "false") == 0;
        int rc = set_value(out, k, "set.", &v, err);
        if (rc)
            return rc;
    }
    return SC_OK;
}

void spec_job_config_apply(const struct job_config *base, const struct job_config *set, struct job_config *out)
{
    *out = *base;
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].kind == KEY_INT && int_value(set, &keys[i]))
            *int_field(out, &keys[i]) = int_value(set, &keys[i]);
    if (set->has_zero_stage) {
        out->has_zero_stage = 1;
        out->zero_stage = set->zero_stage;
    }
    if (set->has_dtype) {
        out->has_dtype = 1;
        out->dtype = set->dtype;
    }
    if (set->has_schedule) {
        out->has_schedule = 1;
        out->schedule = set->schedule;
    }
    if (set->has_mlp) {
        out->has_mlp = 1;
        out->mlp = set->mlp;
    }
    if (set->has_recompute) {
        out->has_recompute = 1;
        out->recompute = set->recompute;
    }
    if (set->has_framework) {
        out->has_framework = 1;
        out->framework = set->framework;
    }
    if (set->has_master_weights) {
        out->has_master_weights = 1;
        out->master_weights = set->master_weights;
    }
    if (set->sequence_parallel >= 0)
        out->sequence_parallel = set->sequence_parallel;
    if (set->tied_embeddings >= 0)
        out->tied_embeddings = set->tied_embeddings;
    if (set->bias >= 0)
        out->bias = set->bias;
    if (set->gpu[0])
        snprintf(out->gpu, sizeof out->gpu, "%s", set->gpu);
}

enum est_schedule spec_job_config_schedule(const struct job_config *c)
{
    return c->has_schedule ? c->schedule : EST_SCHEDULE_1F1B;
}

int64_t spec_job_config_vpp(const struct job_config *c)
{
    return c->vpp ? c->vpp : 1;
}

int spec_job_config_sequence_parallel(const struct job_config *c)
{
    return c->sequence_parallel > 0;
}

int64_t spec_job_config_world_size(const struct job_config *c)
{
    return c->tp * (c->cp ? c->cp : 1) * c->pp * c->dp;
}

int spec_job_config_check_schedule(const struct job_config *c, const char *prefix, struct sc_error *err)
{
    return spec_schedule_check(c->pp, spec_job_config_vpp(c), spec_job_config_schedule(c), c->layers,
                              spec_job_config_micro_batches(c), prefix, prefix, err);
}

int64_t spec_job_config_micro_batches(const struct job_config *c)
{
    if (!c->global_batch || !c->micro_batch || !c->dp)
        return 0;
    return c->global_batch / (c->micro_batch * c->dp);
}

char *spec_job_config_json(const struct job_config *c)
{
    json_t *o = json_object(), *moe = NULL;
    for (size_t i = 0; o && i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        json_t *v = NULL;
        switch (k->kind) {
        case KEY_INT:
            if (int_value(c, k) || (k->off == offsetof(struct job_config, zero_stage) && c->has_zero_stage))
                v = json_integer(int_value(c, k));
            break;
        case KEY_DTYPE: v = c->has_dtype ? json_string(cost_hw_dtype_name(c->dtype)) : NULL; break;
        case KEY_SCHEDULE: v = c->has_schedule ? json_string(spec_schedule_name(c->schedule)) : NULL; break;
        case KEY_MLP: v = c->has_mlp ? json_string(spec_mlp_name(c->mlp)) : NULL; break;
        case KEY_RECOMPUTE: v = c->has_recompute ? json_string(spec_recompute_name(c->recompute)) : NULL; break;
        case KEY_BOOL: {
            int b = *bool_field((struct job_config *)c, k);
            v = b >= 0 ? json_boolean(b) : NULL;
            break;
        }
        case KEY_FRAMEWORK: v = c->has_framework ? json_string(spec_framework_name(c->framework)) : NULL; break;
        case KEY_MASTER:
            v = c->has_master_weights ? json_string(spec_master_weights_name(c->master_weights)) : NULL;
            break;
        case KEY_GPU: v = c->gpu[0] ? json_string(c->gpu) : NULL; break;
        }
        if (!v)
            continue;
        if (strncmp(k->name, "moe.", 4) == 0) {
            if (!moe)
                json_object_set_new(o, "moe", moe = json_object());
            json_object_set_new(moe, k->name + 4, v);
        } else {
            json_object_set_new(o, k->name, v);
        }
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

/* A JSON text written into text[0..size): n its length (size once it
 * overflowed), first whether the next member opens its object. */
struct out {
    char *text;
    size_t size, n;
    int first;
};

static void vput(struct out *o, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vput(struct out *o, const char *fmt, va_list ap)
{
    int k = o->n < o->size ? vsnprintf(o->text + o->n, o->size - o->n, fmt, ap) : 0;
    o->n = k < 0 || o->n + (size_t)k >= o->size ? o->size : o->n + (size_t)k;
}

/* Text as it is; "{" in it opens an object (its next member first). */
static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput(o, fmt, ap);
    va_end(ap);
    o->first = fmt[strlen(fmt) - 1] == '{';
}

/* A member of the open object, after a comma unless it is the first. */
static void member(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void member(struct out *o, const char *fmt, ...)
{
    va_list ap;
    if (!o->first)
        put(o, ",");
    va_start(ap, fmt);
    vput(o, fmt, ap);
    va_end(ap);
    o->first = 0;
}

/* A member for each int key of names that c gives (not 0), named without
 * its object's prefix ("moe.top_k": "top_k"). */
static void int_members(struct out *o, const struct job_config *c, const char *const *names)
{
    for (; *names; names++) {
        int64_t v = int_value(c, find_key(*names));
        const char *dot = strchr(*names, '.');
        if (v)
            member(o, "\"%s\":%lld", dot ? dot + 1 : *names, (long long)v);
    }
}

int spec_job_config_spec_text(const struct job_config *c, const char *gpu, int open, char *text, size_t size,
                         struct sc_error *err)
{
    static const char *const model_keys[] = {"layers", "hidden", "heads", "seq", "ffn", "vocab", "kv_heads", NULL};
    static const char *const moe_keys[] = {"moe.experts", "moe.top_k", "moe.ffn", "moe.shared_experts", NULL};
    static const char *const par_keys[] = {"global_batch", "cp", "ep", "etp", NULL};
    struct out o = {text, size, 0, 0};
    if (!c->layers || !c->hidden || !c->heads || !c->seq)
        return sc_error_set(err, SC_EINVAL, "the job description lacks layers, hidden, heads or seq");
    put(&o, "{\"model\":{");
    int_members(&o, c, model_keys);
    if (c->has_mlp)
        member(&o, "\"mlp\":\"%s\"", spec_mlp_name(c->mlp));
    if (c->tied_embeddings >= 0)
        member(&o, "\"tied_embeddings\":%s", c->tied_embeddings ? "true" : "false");
    if (c->bias >= 0)
        member(&o, "\"bias\":%s", c->bias ? "true" : "false");
    if (c->moe.experts || c->moe.top_k || c->moe.ffn || c->moe.shared_experts) {
        member(&o, "\"moe\":{");
        o.first = 1;
        int_members(&o, c, moe_keys);
        put(&o, "}");
    }
    put(&o, "},\"parallel\":{");
    if (!open)
        member(&o, "\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"micro_batch\":%lld,\"schedule\":\"%s\",\"vpp\":%lld",
               (long long)c->tp, (long long)c->pp, (long long)c->dp, (long long)(c->micro_batch ? c->micro_batch : 1),
               spec_schedule_name(spec_job_config_schedule(c)), (long long)spec_job_config_vpp(c));
    else if (!c->micro_batch) /* a what-if keeps it (a spec's default: 1) */
        member(&o, "\"micro_batch\":1");
    int_members(&o, c, par_keys);
    put(&o, "},\"cluster\":{\"gpu\":\"%s\"", gpu);
    if (c->gpus_per_node)
        member(&o, "\"gpus_per_node\":%lld", (long long)c->gpus_per_node);
    put(&o, "},\"options\":{");
    if (c->has_dtype)
        member(&o, "\"dtype\":\"%s\"", cost_hw_dtype_name(c->dtype));
    if (c->has_recompute)
        member(&o, "\"recompute\":\"%s\"", spec_recompute_name(c->recompute));
    if (c->has_zero_stage)
        member(&o, "\"zero_stage\":%lld", (long long)c->zero_stage);
    if (c->sequence_parallel >= 0)
        member(&o, "\"sequence_parallel\":%s", c->sequence_parallel ? "true" : "false");
    if (c->has_framework)
        member(&o, "\"framework\":\"%s\"", spec_framework_name(c->framework));
    if (c->has_master_weights)
        member(&o, "\"master_weights\":\"%s\"", spec_master_weights_name(c->master_weights));
    put(&o, "}}");
    if (o.n >= size)
        return sc_error_set(err, SC_ELIMIT, "the job description's spec is too long");
    return SC_OK;
}

int spec_job_config_spec(const struct job_config *c, const char *gpu, struct est_spec *out, struct sc_error *err)
{
    char text[JOB_CONFIG_SPEC_TEXT_MAX];
    int rc = spec_job_config_spec_text(c, gpu, 0, text, sizeof text, err);
    if (rc)
        return rc;
    return spec_load(text, strlen(text), out, NULL, err);
}
