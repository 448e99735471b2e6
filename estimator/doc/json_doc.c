/* estimator/doc/json_doc.c: reading and writing the estimator's JSON
 * documents through their tables of fields (json_doc.h). */
#include "estimator/doc/json_doc.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/banned.h"

#define PATH_MAX_BYTES 160

/* One table being read: its fields land at base; given[i] marks fields[i]. */
struct reading {
    const struct doc_table *t;
    char *base;
    unsigned char given[DOC_MAX_FIELDS];
    const char *where; /* the table's path in the document ("" at the top) */
};

static const struct doc_field *find(const struct doc_table *t, const char *path)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->fields[i].path, path) == 0)
            return &t->fields[i];
    return NULL;
}

/* where + "." + rel, as errors name a value */
static void full_path(char *out, size_t size, const char *where, const char *rel)
{
    snprintf(out, size, "%s%s%s", where, *where && *rel ? "." : "", rel);
}

static const char *type_name(enum doc_type k)
{
    switch (k) {
    case DOC_OBJECT: return "an object";
    case DOC_INT: return "an integer";
    case DOC_BOOL: return "true or false";
    case DOC_NUM: return "a number";
    case DOC_ENUM:
    case DOC_STR: return "a string";
    case DOC_STRS: return "an array of strings";
    case DOC_LIST: return "an array of objects";
    case DOC_IGNORED: return "anything";
    }
    return "?";
}

static int read_table(struct reading *r, json_t *obj, struct sc_error *err);

static int check_string(const struct doc_field *f, const char *path, json_t *v, enum sc_status code,
                        struct sc_error *err)
{
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n < 1 || n >= f->size)
        return sc_error_set(err, code, "%s: must be 1 to %zu bytes", path, f->size - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return sc_error_set(err, code, "%s: holds a control character", path);
    return SC_OK;
}

/* The array v of DOC_STRS or DOC_LIST field f, its items at base + f->off. */
static int read_items(const struct reading *r, const struct doc_field *f, const char *path, json_t *v,
                      struct sc_error *err)
{
    enum sc_status code = r->t->code;
    size_t n = json_array_size(v);
    if ((double)n < f->min || (double)n > f->max)
        return sc_error_set(err, code, "%s: must hold %.0f to %.0f items", path, f->min, f->max);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        char *at = r->base + f->off + i * f->size;
        char where[PATH_MAX_BYTES];
        snprintf(where, sizeof where, "%s[%zu]", path, i);
        if (f->type == DOC_STRS) {
            if (!json_is_string(item))
                return sc_error_set(err, code, "%s: must be a string", where);
            if (check_string(f, where, item, code, err))
                return err->code;
            memcpy(at, json_string_value(item), json_string_length(item) + 1);
        } else {
            struct reading sub = {.t = f->sub, .base = at, .where = where};
            if (!json_is_object(item))
                return sc_error_set(err, code, "%s: must be an object", where);
            if (read_table(&sub, item, err))
                return err->code;
        }
    }
    *(int *)(r->base + f->count_off) = (int)n;
    return SC_OK;
}

static int set_value(const struct reading *r, const struct doc_field *f, const char *path, json_t *v,
                     struct sc_error *err)
{
    enum sc_status code = r->t->code;
    char *at = r->base + f->off;
    if (json_is_null(v) && (f->flags & DOC_NULLABLE))
        return SC_OK; /* the value as it was stays */
    switch (f->type) {
    case DOC_INT: {
        if (!json_is_integer(v))
            break;
        json_int_t x = json_integer_value(v);
        if ((double)x < f->min || (double)x > f->max)
            return sc_error_set(err, code, "%s: %lld is out of range (%.0f to %.0f)", path, (long long)x, f->min,
                                f->max);
        if (f->size == sizeof(int))
            *(int *)at = (int)x;
        else
            *(int64_t *)at = (int64_t)x;
        return SC_OK;
    }
    case DOC_NUM: {
        if (!json_is_number(v))
            break;
        double x = json_number_value(v);
        if (!(x >= f->min && x <= f->max))
            return sc_error_set(err, code, "%s: %g is out of range (%g to %g)", path, x, f->min, f->max);
        *(double *)at = x;
        return SC_OK;
    }
    case DOC_BOOL:
        if (!json_is_boolean(v))
            break;
        *(int *)at = json_is_true(v);
        return SC_OK;
    case DOC_ENUM: {
        if (!json_is_string(v))
            break;
        char names[160] = "";
        size_t used = 0;
        for (const struct doc_name *n = f->names; n->name; n++) {
            if (strcmp(n->name, json_string_value(v)) == 0) {
                *(int *)at = n->value;
                return SC_OK;
            }
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", n == f->names ? "" : ", ",
                                     n->name);
            if (used >= sizeof names)
                used = sizeof names - 1;
        }
        return sc_error_set(err, code, "%s: \"%.64s\" is not one of %s", path, json_string_value(v), names);
    }
    case DOC_STR:
        if (!json_is_string(v))
            break;
        if (check_string(f, path, v, code, err))
            return err->code;
        memcpy(at, json_string_value(v), json_string_length(v) + 1);
        return SC_OK;
    case DOC_STRS:
    case DOC_LIST:
        if (!json_is_array(v))
            break;
        return read_items(r, f, path, v, err);
    case DOC_IGNORED:
        return SC_OK;
    case DOC_OBJECT:
        break;
    }
    return sc_error_set(err, code, "%s: must be %s%s", path, type_name(f->type),
                        f->flags & DOC_NULLABLE ? " or null" : "");
}

/* The members of obj, whose path in r's table is rel ("" for the table's
 * top), into r. */
static int walk(struct reading *r, json_t *obj, const char *rel, struct sc_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach (obj, key, v) {
        char member[PATH_MAX_BYTES], path[PATH_MAX_BYTES];
        snprintf(member, sizeof member, "%s%s%.64s", rel, *rel ? "." : "", key);
        full_path(path, sizeof path, r->where, member);
        const struct doc_field *f = strchr(key, '.') ? NULL : find(r->t, member); /* "a.b" is no path */
        if (!f)
            return sc_error_set(err, r->t->code, "%s: unknown key", path);
        r->given[f - r->t->fields] = 1;
        if (f->type != DOC_OBJECT) {
            if (set_value(r, f, path, v, err))
                return err->code;
        } else if (!json_is_object(v)) {
            return sc_error_set(err, r->t->code, "%s: must be an object", path);
        } else if (f->sub) {
            struct reading sub = {.t = f->sub, .base = r->base + f->off, .where = path};
            if (read_table(&sub, v, err))
                return err->code;
        } else if (walk(r, v, member, err)) {
            return err->code;
        }
    }
    return SC_OK;
}

/* Whether every object above field i of r is in the document (the
 * members of an absent object are not missing: it is, or it is optional). */
static int parents_given(const struct reading *r, size_t i)
{
    char path[PATH_MAX_BYTES];
    snprintf(path, sizeof path, "%s", r->t->fields[i].path);
    for (char *dot = strrchr(path, '.'); dot; dot = strrchr(path, '.')) {
        *dot = 0;
        const struct doc_field *parent = find(r->t, path);
        if (parent && !r->given[parent - r->t->fields])
            return 0;
    }
    return 1;
}

/* The first required field of r under prefix that the document lacks. */
static int check_required(const struct reading *r, const char *prefix, struct sc_error *err)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < r->t->n; i++) {
        const struct doc_field *f = &r->t->fields[i];
        if (!(f->flags & DOC_REQUIRED) || r->given[i] || strncmp(f->path, prefix, n) != 0 || !parents_given(r, i))
            continue;
        char path[PATH_MAX_BYTES];
        full_path(path, sizeof path, r->where, f->path);
        return sc_error_set(err, r->t->code, "%s: missing (it is required)", path);
    }
    return SC_OK;
}

static int read_table(struct reading *r, json_t *obj, struct sc_error *err)
{
    assert(r->t->n <= DOC_MAX_FIELDS);
    int rc = walk(r, obj, "", err);
    return rc ? rc : check_required(r, "", err);
}

int doc_read(const char *text, size_t len, const struct doc_table *t, const char *only, void *in_out,
             unsigned char *given, struct sc_error *err)
{
    struct reading r = {.t = t, .base = in_out, .where = t->root ? t->root : ""};
    json_error_t je;
    json_t *doc;
    int rc;
    assert(t->n <= DOC_MAX_FIELDS);
    if (t->max_bytes && len > t->max_bytes)
        return sc_error_set(err, SC_ELIMIT, "%s is %zu bytes, over the limit of %zu", t->name, len, t->max_bytes);
    if (!(doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)))
        return sc_error_set(err, SC_EPARSE, "not valid JSON: %s (line %d, column %d)", je.text, je.line,
                            je.column);
    if (!json_is_object(doc)) {
        rc = sc_error_set(err, t->code, "%s must be a JSON object", t->name);
    } else if (only) {
        json_t *part = json_object_get(doc, only);
        const struct doc_field *f = find(t, only);
        if (!json_is_object(part) || json_object_size(doc) != 1 || !f) {
            rc = sc_error_set(err, t->code, "%s: expected a document with only a %s object", only, only);
        } else {
            char prefix[PATH_MAX_BYTES];
            snprintf(prefix, sizeof prefix, "%s.", only);
            r.given[f - t->fields] = 1;
            if (!(rc = walk(&r, part, only, err)))
                rc = check_required(&r, prefix, err);
        }
    } else {
        rc = read_table(&r, doc, err);
    }
    json_decref(doc);
    if (given)
        memcpy(given, r.given, t->n);
    return rc;
}

/* ---- writing ---- */

static json_t *write_table(const struct doc_table *t, const char *only, const char *base,
                           const unsigned char *given);

static json_t *items_json(const struct doc_field *f, const char *base)
{
    json_t *a = json_array();
    int n = *(const int *)(base + f->count_off);
    for (int i = 0; a && i < n; i++) {
        const char *at = base + f->off + (size_t)i * f->size;
        if (json_array_append_new(a, f->type == DOC_STRS ? json_string(at) : write_table(f->sub, NULL, at, NULL))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The value of f at base as JSON (null for a value not given); NULL when
 * out of memory. */
static json_t *field_json(const struct doc_field *f, const char *base)
{
    const char *at = base + f->off;
    switch (f->type) {
    case DOC_INT: {
        int64_t x = f->size == sizeof(int) ? *(const int *)at : *(const int64_t *)at;
        return (f->flags & DOC_NULLABLE) && !x ? json_null() : json_integer((json_int_t)x);
    }
    case DOC_NUM: {
        double x = *(const double *)at;
        return x < f->min || !isfinite(x) ? json_null() : json_real(x);
    }
    case DOC_BOOL: return json_boolean(*(const int *)at);
    case DOC_ENUM:
        for (const struct doc_name *n = f->names; n->name; n++)
            if (n->value == *(const int *)at)
                return json_string(n->name);
        return json_null();
    case DOC_STR: return *at ? json_string(at) : json_null();
    case DOC_STRS:
    case DOC_LIST: return items_json(f, base);
    case DOC_OBJECT: return f->sub ? write_table(f->sub, NULL, at, NULL) : json_object();
    case DOC_IGNORED: break;
    }
    return json_null();
}

/* Every field of t under only (NULL: all) that given marks (NULL: all)
 * into an object. */
static json_t *write_table(const struct doc_table *t, const char *only, const char *base,
                           const unsigned char *given)
{
    json_t *doc = json_object();
    size_t n = only ? strlen(only) : 0;
    for (size_t i = 0; doc && i < t->n; i++) {
        const struct doc_field *f = &t->fields[i];
        if (f->type == DOC_IGNORED || (given && !given[i]) ||
            (only && (strncmp(f->path, only, n) != 0 || (f->path[n] && f->path[n] != '.'))))
            continue;
        if (f->type == DOC_LIST && (f->flags & DOC_SKIP_EMPTY) && *(const int *)(base + f->count_off) == 0)
            continue;
        /* the parent object is the one already written at the path's prefix */
        json_t *parent = doc;
        const char *p = f->path, *dot;
        while (parent && (dot = strchr(p, '.'))) {
            char key[PATH_MAX_BYTES];
            snprintf(key, sizeof key, "%.*s", (int)(dot - p), p);
            parent = json_object_get(parent, key);
            p = dot + 1;
        }
        json_t *v = field_json(f, base);
        if (!parent || !v || json_object_set_new(parent, p, v)) {
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}

char *doc_write(const struct doc_table *t, const char *only, const void *in, const unsigned char *given,
                int indent)
{
    json_t *doc = write_table(t, only, in, given);
    size_t layout = indent < 0 ? JSON_COMPACT : (size_t)JSON_INDENT(indent);
    char *text = doc ? json_dumps(doc, layout | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(doc);
    return text;
}
