/* estimator/spec/job_config.c: parsing and writing job descriptions and
 * what-if sets (job_config.h). One table of keys serves the JSON and the
 * "k=v" forms (read as the JSON object they stand for), so they accept
 * the same names and ranges; estimator/doc reads and writes it. */
#include "estimator/spec/job_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/spec.h"
#include "common/banned.h"

#define AT(member) offsetof(struct job_config, member), sizeof(((struct job_config *)0)->member)
#define INTKEY(name, member, lo, hi) {name, DOC_INT, 0, AT(member), lo, hi, NULL, NULL, 0}
#define NAMEKEY(name, member, names) {name, DOC_ENUM, 0, AT(member), 0, 0, names, NULL, 0}
/* a boolean: an int field, -1 when not given */
#define BOOLKEY(name, member) {name, DOC_BOOL, 0, AT(member), 0, 1, NULL, NULL, 0}

/* Every key, with the spec's ranges (estimator/spec/spec.h, EST_MAX_*);
 * zero_stage, moe.shared_experts and moe.dense_layers take 0. Written in
 * this order. */
static const struct doc_field keys[] = {
    INTKEY("tp", tp, 1, EST_MAX_DEGREE),
    INTKEY("pp", pp, 1, EST_MAX_DEGREE),
    INTKEY("dp", dp, 1, EST_MAX_DEGREE),
    INTKEY("micro_batch", micro_batch, 1, EST_MAX_MICRO_BATCH),
    INTKEY("global_batch", global_batch, 1, EST_MAX_GLOBAL_BATCH),
    INTKEY("layers", layers, 1, EST_MAX_LAYERS),
    INTKEY("hidden", hidden, 1, EST_MAX_HIDDEN),
    INTKEY("heads", heads, 1, EST_MAX_HEADS),
    INTKEY("ffn", ffn, 1, EST_MAX_FFN),
    INTKEY("seq", seq, 1, EST_MAX_SEQ),
    INTKEY("vocab", vocab, 1, EST_MAX_VOCAB),
    NAMEKEY("dtype", dtype, cost_hw_dtype_names),
    NAMEKEY("schedule", schedule, spec_schedule_names),
    INTKEY("vpp", vpp, 1, 1 << 10),
    {"gpu", DOC_STR, 0, AT(gpu), 0, 0, NULL, NULL, 0},
    INTKEY("kv_heads", kv_heads, 1, EST_MAX_HEADS),
    INTKEY("head_dim", head_dim, 1, EST_MAX_HEADS),
    NAMEKEY("mlp", mlp, spec_mlp_names),
    INTKEY("cp", cp, 1, EST_MAX_DEGREE),
    INTKEY("ep", ep, 1, EST_MAX_DEGREE),
    INTKEY("etp", etp, 1, EST_MAX_DEGREE),
    INTKEY("zero_stage", zero_stage, 0, 3),
    BOOLKEY("sequence_parallel", sequence_parallel),
    NAMEKEY("recompute", recompute, spec_recompute_names),
    INTKEY("gpus_per_node", gpus_per_node, 1, 1 << 20),
    NAMEKEY("framework", framework, spec_framework_names),
    NAMEKEY("master_weights", master_weights, spec_master_weights_names),
    BOOLKEY("tied_embeddings", tied_embeddings),
    BOOLKEY("bias", bias),
    {"moe", DOC_OBJECT, 0, 0, 0, 0, 0, NULL, NULL, 0},
    INTKEY("moe.experts", moe.experts, 1, EST_MAX_EXPERTS),
    INTKEY("moe.top_k", moe.top_k, 1, EST_MAX_EXPERTS),
    INTKEY("moe.ffn", moe.ffn, 1, EST_MAX_FFN),
    INTKEY("moe.shared_experts", moe.shared_experts, 0, 1 << 10),
    INTKEY("moe.every", moe.every, 1, EST_MAX_LAYERS),
    INTKEY("moe.dense_layers", moe.dense_layers, 0, EST_MAX_LAYERS),
    {"mla", DOC_OBJECT, 0, 0, 0, 0, 0, NULL, NULL, 0},
    INTKEY("mla.kv_lora_rank", mla.kv_lora_rank, 1, EST_MAX_FFN),
    INTKEY("mla.q_lora_rank", mla.q_lora_rank, 1, EST_MAX_FFN),
    INTKEY("mla.qk_head_dim", mla.qk_head_dim, 1, EST_MAX_HEADS),
    INTKEY("mla.qk_pos_emb_head_dim", mla.qk_pos_emb_head_dim, 1, EST_MAX_HEADS),
    INTKEY("mla.v_head_dim", mla.v_head_dim, 1, EST_MAX_HEADS),
};
#define N_KEYS (sizeof keys / sizeof keys[0])

_Static_assert(sizeof(enum hw_dtype) == sizeof(int) && sizeof(enum est_schedule) == sizeof(int) &&
                   sizeof(enum est_mlp) == sizeof(int) && sizeof(enum est_recompute) == sizeof(int) &&
                   sizeof(enum est_framework) == sizeof(int) && sizeof(enum est_master_weights) == sizeof(int),
               "enum keys are read as int");

static const struct doc_table description_doc = {keys, N_KEYS, "job description", SC_EINVAL, JOB_CONFIG_MAX_BYTES,
                                                 NULL};
static const struct doc_table set_doc = {keys, N_KEYS, "set", SC_EINVAL, JOB_CONFIG_MAX_BYTES, "set"};

const char *const *spec_job_config_keys(void)
{
    static const char *names[N_KEYS + 1];
    size_t n = 0;
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].type != DOC_OBJECT)
            names[n++] = keys[i].path;
    return names;
}

void spec_job_config_init(struct job_config *c)
{
    memset(c, 0, sizeof *c);
    c->sequence_parallel = -1;
    c->tied_embeddings = -1;
    c->bias = -1;
}

static size_t key_index(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].path, name) == 0)
            return i;
    return N_KEYS;
}

static int64_t int_value(const struct job_config *c, const char *name)
{
    return *(const int64_t *)((const char *)c + keys[key_index(name)].off);
}

/* The keys whose "given" c keeps in a flag of its own (their values have
 * no "not given" of their own). */
static const struct {
    const char *key;
    size_t flag; /* an int of struct job_config */
} given_flags[] = {
    {"dtype", offsetof(struct job_config, has_dtype)},
    {"schedule", offsetof(struct job_config, has_schedule)},
    {"mlp", offsetof(struct job_config, has_mlp)},
    {"recompute", offsetof(struct job_config, has_recompute)},
    {"framework", offsetof(struct job_config, has_framework)},
    {"master_weights", offsetof(struct job_config, has_master_weights)},
    {"zero_stage", offsetof(struct job_config, has_zero_stage)},
};
#define N_GIVEN_FLAGS (sizeof given_flags / sizeof given_flags[0])

static void set_given(struct job_config *c, const unsigned char *given)
{
    for (size_t i = 0; i < N_GIVEN_FLAGS; i++)
        *(int *)((char *)c + given_flags[i].flag) = given[key_index(given_flags[i].key)];
}

/* What a document says beyond one value at a time: a traced job's
 * recomputation is what it ran (the spec's "auto" is a search), its GPU is
 * the trace's, a set's GPU has a profile, a description gives its layout. */
static int check_config(const struct job_config *c, const unsigned char *given, int set, struct sc_error *err)
{
    const char *prefix = set ? "set." : "";
    if (c->has_recompute && c->recompute == EST_RECOMPUTE_AUTO)
        return sc_error_set(err, SC_EINVAL, "%srecompute: must be \"none\", \"selective\" or \"full\"", prefix);
    if (given[key_index("gpu")] && !set)
        return sc_error_set(err, SC_EINVAL, "gpu: unknown key (the traced GPU is read from the trace)");
    if (given[key_index("gpu")] && !cost_hw_profile_find(c->gpu))
        return sc_error_set(err, SC_EINVAL, "set.gpu: no hardware profile named '%s' (see stepcast hardware)",
                            c->gpu);
    if (set)
        return SC_OK;
    for (const char *const *k = (const char *const[]){"tp", "pp", "dp", NULL}; *k; k++)
        if (!given[key_index(*k)])
            return sc_error_set(err, SC_EINVAL, "%s: required (the job description gives tp, pp and dp)", *k);
    return spec_job_config_check_schedule(c, "", err);
}

static int parse_json(const char *text, size_t len, int set, struct job_config *out, struct sc_error *err)
{
    unsigned char given[N_KEYS];
    int rc;
    spec_job_config_init(out);
    if ((rc = doc_read(text, len, set ? &set_doc : &description_doc, NULL, out, given, err)))
        return rc;
    set_given(out, given);
    return check_config(out, given, set, err);
}

int spec_job_config_parse(const char *text, size_t len, struct job_config *out, struct sc_error *err)
{
    return parse_json(text, len, 0, out, err);
}

int spec_job_config_parse_set_json(const char *text, size_t len, struct job_config *out, struct sc_error *err)
{
    return parse_json(text, len, 1, out, err);
}

/* ---- writing JSON text by hand: a set's k=v list, a spec ---- */

/* JSON text written into text[0..size): n its length (size once it
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

/* A k=v item's value as JSON: an integer or a boolean as it is, anything
 * else a string (escaped). */
static void put_value(struct out *o, const char *v)
{
    char *end;
    errno = 0;
    (void)strtoll(v, &end, 10);
    if ((*v && !*end && errno == 0) || strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        put(o, "%s", v);
        return;
    }
    put(o, "\"");
    for (; *v; v++)
        if (*v == '"' || *v == '\\')
            put(o, "\\%c", *v);
        else if ((unsigned char)*v < 0x20)
            put(o, "\\u%04x", (unsigned)*v);
        else
            put(o, "%c", *v);
    put(o, "\"");
}

/* The objects of a description, whose members a k=v list dots. */
static const char *const objects[] = {"moe", "mla"};
#define N_OBJECTS (sizeof objects / sizeof objects[0])

int spec_job_config_is_object(const char *key)
{
    for (size_t i = 0; i < N_OBJECTS; i++)
        if (strcmp(key, objects[i]) == 0)
            return 1;
    return 0;
}

/* The object of a dotted key ("moe.top_k": 0), or N_OBJECTS. */
static size_t object_of(const char *key)
{
    const char *dot = strchr(key, '.');
    for (size_t i = 0; dot && i < N_OBJECTS; i++)
        if (strlen(objects[i]) == (size_t)(dot - key) && !strncmp(key, objects[i], (size_t)(dot - key)))
            return i;
    return N_OBJECTS;
}

/* "k=v,k=v" as the JSON object it stands for ("moe.top_k=2": {"moe":
 * {"top_k": 2}}), read as a set's JSON is: one table of keys serves both. */
int spec_job_config_parse_set_list(const char *list, struct job_config *out, struct sc_error *err)
{
    spec_job_config_init(out);
    if (!list || !*list)
        return sc_error_set(err, SC_EINVAL, "set: empty (give k=v,k=v)");
    size_t cap = 6 * strlen(list) + 64; /* every byte escaped, the braces and an object's name */
    char *text = malloc(cap), *members[N_OBJECTS] = {NULL};
    struct out top = {text, cap, 0, 0}, in[N_OBJECTS];
    int rc = SC_OK;
    int oom = !text;
    for (size_t i = 0; i < N_OBJECTS; i++) {
        members[i] = malloc(cap);
        in[i] = (struct out){members[i], cap, 0, 1};
        oom |= !members[i];
    }
    if (oom) {
        rc = sc_error_set(err, SC_ENOMEM, "set: out of memory");
        goto out;
    }
    put(&top, "{");
    for (const char *p = list; *p && !rc;) {
        char item[160];
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item) {
            rc = sc_error_set(err, SC_EINVAL, "set: bad item at '%.40s' (give k=v,k=v)", p);
            break;
        }
        memcpy(item, p, n);
        item[n] = '\0';
        p += n + (p[n] == ',');
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = sc_error_set(err, SC_EINVAL, "set.%s: give a value (k=v)", item);
            break;
        }
        *eq = '\0';
        size_t k = key_index(item);
        if (k == N_KEYS || keys[k].type == DOC_OBJECT) {
            rc = sc_error_set(err, SC_EINVAL, "set.%s: unknown key", item);
            break;
        }
        size_t obj = object_of(item);
        struct out *o = obj < N_OBJECTS ? &in[obj] : &top;
        member(o, "\"%s\":", obj < N_OBJECTS ? strchr(item, '.') + 1 : item);
        put_value(o, eq + 1);
    }
    if (!rc) {
        for (size_t i = 0; i < N_OBJECTS; i++)
            if (in[i].n)
                member(&top, "\"%s\":{%.*s}", objects[i], (int)in[i].n, members[i]);
        put(&top, "}");
        rc = parse_json(text, top.n, 1, out, err);
    }
out:
    free(text);
    for (size_t i = 0; i < N_OBJECTS; i++)
        free(members[i]);
    return rc;
}

/* The keys c gives: an int other than 0, a boolean not -1, a GPU named,
 * a value whose flag says so; an object when a member is given. */
static void given_of(const struct job_config *c, unsigned char given[N_KEYS])
{
    memset(given, 0, N_KEYS);
    for (size_t i = 0; i < N_KEYS; i++) {
        const char *at = (const char *)c + keys[i].off;
        if (keys[i].type == DOC_INT)
            given[i] = *(const int64_t *)at != 0;
        else if (keys[i].type == DOC_BOOL)
            given[i] = *(const int *)at >= 0;
    }
    given[key_index("gpu")] = c->gpu[0] != 0;
    for (size_t i = 0; i < N_GIVEN_FLAGS; i++)
        given[key_index(given_flags[i].key)] = (unsigned char)*(const int *)((const char *)c + given_flags[i].flag);
    for (size_t i = 0; i < N_KEYS; i++)
        if (object_of(keys[i].path) < N_OBJECTS && given[i])
            given[key_index(objects[object_of(keys[i].path)])] = 1;
}

void spec_job_config_apply(const struct job_config *base, const struct job_config *set, struct job_config *out)
{
    unsigned char given[N_KEYS];
    *out = *base;
    given_of(set, given);
    for (size_t i = 0; i < N_KEYS; i++)
        if (given[i] && keys[i].type != DOC_OBJECT)
            memcpy((char *)out + keys[i].off, (const char *)set + keys[i].off, keys[i].size);
    for (size_t i = 0; i < N_GIVEN_FLAGS; i++)
        *(int *)((char *)out + given_flags[i].flag) |= *(const int *)((const char *)set + given_flags[i].flag);
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

void spec_job_config_expert_groups(const struct job_config *c, int64_t *ep, int64_t *etp, int64_t *edp)
{
    int64_t dense = c->tp * (c->cp ? c->cp : 1) * c->dp;
    *ep = c->ep ? c->ep : 1;
    *etp = c->etp ? c->etp : c->tp;
    *edp = *ep * *etp > 0 && dense % (*ep * *etp) == 0 ? dense / (*ep * *etp) : 0;
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
    unsigned char given[N_KEYS];
    given_of(c, given);
    return doc_write(&description_doc, NULL, c, given, -1);
}

/* A member for each int key of names that c gives (not 0), named without
 * its object's prefix ("moe.top_k": "top_k"). */
static void int_members(struct out *o, const struct job_config *c, const char *const *names)
{
    for (; *names; names++) {
        int64_t v = int_value(c, *names);
        const char *dot = strchr(*names, '.');
        if (v)
            member(o, "\"%s\":%lld", dot ? dot + 1 : *names, (long long)v);
    }
}

/* Object obj's given members as `"obj":{...}`, in the keys' order; nothing
 * when none is given. */
static void object_members(struct out *o, const struct job_config *c, size_t obj)
{
    int any = 0;
    for (size_t i = 0; i < N_KEYS; i++)
        any |= object_of(keys[i].path) == obj && int_value(c, keys[i].path) != 0;
    if (!any)
        return;
    member(o, "\"%s\":{", objects[obj]);
    o->first = 1;
    for (size_t i = 0; i < N_KEYS; i++)
        if (object_of(keys[i].path) == obj && int_value(c, keys[i].path))
            member(o, "\"%s\":%lld", strchr(keys[i].path, '.') + 1, (long long)int_value(c, keys[i].path));
    put(o, "}");
}

int spec_job_config_spec_text(const struct job_config *c, const char *gpu, int open, char *text, size_t size,
                         struct sc_error *err)
{
    static const char *const model_keys[] = {"layers", "hidden", "heads", "seq", "ffn", "vocab", "kv_heads", "head_dim",
                                             NULL};
    static const char *const par_keys[] = {"global_batch", "cp", "etp", NULL};
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
    for (size_t i = 0; i < N_OBJECTS; i++)
        object_members(&o, c, i);
    put(&o, "},\"parallel\":{");
    if (!open)
        member(&o, "\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"micro_batch\":%lld,\"schedule\":\"%s\",\"vpp\":%lld",
               (long long)c->tp, (long long)c->pp, (long long)c->dp, (long long)(c->micro_batch ? c->micro_batch : 1),
               spec_schedule_name(spec_job_config_schedule(c)), (long long)spec_job_config_vpp(c));
    else if (!c->micro_batch) /* a what-if keeps it (a spec's default: 1) */
        member(&o, "\"micro_batch\":1");
    if (!open && c->ep)
        member(&o, "\"ep\":%lld", (long long)c->ep);
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
