/* api/query.c: the query parameter table (from ops.def) and its decoder
 * (query.h). */
#include "api/query.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static const struct api_query_param params[] = {
#define API_OP(...)
#define API_QUERY(OP, NAME, TYPE, MIN, MAX, DEFAULT, FLAGS, FORM, DESCRIPTION) \
    {API_OP_##OP, NAME, API_Q_##TYPE, MIN, MAX, DEFAULT, FLAGS, FORM, DESCRIPTION},
#include "api/ops.def"
};

const struct api_query_param *api_query_param(enum api_op op, size_t i)
{
    for (size_t k = 0; k < sizeof params / sizeof params[0]; k++)
        if (params[k].op == op && i-- == 0)
            return &params[k];
    return NULL;
}

const char *api_qtype_name(enum api_qtype t)
{
    switch (t) {
    case API_Q_INT:
        return "integer";
    case API_Q_NUMBER:
        return "number";
    case API_Q_BOOL:
        return "boolean";
    default:
        return "string";
    }
}

/* Whether v is one of the comma-separated values. */
static int enum_has(const char *values, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = values; p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && n > 0 && memcmp(p, v, n) == 0)
            return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

/* Whether v matches the extended regular expression re. */
static int matches(const char *re, const char *v)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
        return 0;
    int ok = regexec(&rx, v, 0, NULL, 0) == 0;
    regfree(&rx);
    return ok;
}

/* One value of parameter p into *out; else the reply in r. */
static int decode_value(const struct api_query_param *p, const char *v, struct api_query_value *out,
                        struct api_reply *r)
{
    char *end;
    out->text = v;
    switch (p->type) {
    case API_Q_INT: {
        errno = 0;
        long long x = strtoll(v, &end, 10);
        int digits = *v == '-' || (*v >= '0' && *v <= '9');
        int over = digits && end != v && !*end && ((errno == ERANGE && x > 0) || (!errno && x > p->max));
        if (over && (p->flags & API_QF_CAP))
            return api_fail(r, API_E_UNPROCESSABLE, "%s %.24s is over the most, %.0f", p->name, v, p->max);
        if (!digits || end == v || *end || errno || x < p->min || x > p->max)
            return api_fail(r, API_E_BAD_REQUEST, "%s must be a number from %.0f to %.0f (an integer)", p->name,
                            p->min, p->max);
        out->i = x;
        return SC_OK;
    }
    case API_Q_NUMBER: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x) || x < p->min || x > p->max)
            return api_fail(r, API_E_BAD_REQUEST, "%s must be a number from %g to %g", p->name, p->min, p->max);
        out->x = x;
        return SC_OK;
    }
    case API_Q_BOOL:
        if (!*v || !strcmp(v, "true") || !strcmp(v, "1"))
            out->i = 1;
        else if (!strcmp(v, "false") || !strcmp(v, "0"))
            out->i = 0;
        else
            return api_fail(r, API_E_BAD_REQUEST, "%s must be true or false", p->name);
        return SC_OK;
    case API_Q_ENUM:
        if (!enum_has(p->form, v))
            return api_fail(r, API_E_BAD_REQUEST, "%s: '%.32s' is none of %s", p->name, v, p->form);
        return SC_OK;
    case API_Q_ID:
        if (!api_id_valid(v))
            return api_fail(r, API_E_INVALID_ID,
                            "%s: '%.64s' is not a valid identifier ([A-Za-z0-9][A-Za-z0-9._-]{0,63})", p->name, v);
        return SC_OK;
    case API_Q_STRING:
        if (p->form && !matches(p->form, v))
            return api_fail(r, API_E_BAD_REQUEST, "%s: '%.64s' does not match %s (%s)", p->name, v, p->form,
                            p->description);
        return SC_OK;
    }
    return api_fail(r, API_E_INTERNAL, "%s: a parameter of no known type", p->name);
}

int api_query_decode(enum api_op op, const char *const *keys, const char *const *vals, size_t n,
                     struct api_query *out, struct api_reply *r)
{
    const struct api_query_param *p;
    memset(out, 0, sizeof *out);
    out->op = op;
    if (n > API_QUERY_MAX)
        return api_fail(r, API_E_BAD_REQUEST, "more than %d query parameters", API_QUERY_MAX);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while ((p = api_query_param(op, k)) && strcmp(p->name, keys[i]) != 0)
            k++;
        if (!p)
            return api_fail(r, API_E_BAD_REQUEST, "unknown query parameter '%.64s'", keys[i]);
        if (out->v[k].given) {
            if (p->flags & API_QF_REPEAT)
                continue;
            return api_fail(r, API_E_BAD_REQUEST, "query parameter '%.64s' is repeated", keys[i]);
        }
        int rc = decode_value(p, vals[i], &out->v[k], r);
        if (rc)
            return rc;
        out->v[k].given = 1;
    }
    for (size_t k = 0; (p = api_query_param(op, k)); k++) {
        assert(k < API_QUERY_MAX);
        if (out->v[k].given)
            continue;
        if (p->flags & API_QF_REQUIRED)
            return api_fail(r, API_E_BAD_REQUEST, "?%s= is required: %s", p->name, p->description);
        int rc = p->def ? decode_value(p, p->def, &out->v[k], r) : SC_OK;
        if (rc)
            return rc; /* a default its own type refuses: ops.def is wrong */
    }
    return SC_OK;
}

/* The value of the parameter called name; it must be one of q's operation's. */
static const struct api_query_value *value(const struct api_query *q, const char *name)
{
    static const struct api_query_value none;
    const struct api_query_param *p;
    for (size_t k = 0; (p = api_query_param(q->op, k)); k++)
        if (!strcmp(p->name, name))
            return &q->v[k];
    assert(!"a query parameter the operation does not declare");
    return &none;
}

int api_query_given(const struct api_query *q, const char *name)
{
    return value(q, name)->given;
}

const char *api_query_str(const struct api_query *q, const char *name)
{
    return value(q, name)->text;
}

int64_t api_query_int(const struct api_query *q, const char *name)
{
    return value(q, name)->i;
}

double api_query_number(const struct api_query *q, const char *name)
{
    return value(q, name)->x;
}
