/* api/query.h: the typed query parameters of each operation, decoded once.
 *
 * Each operation's parameters are declared in api/ops.def (API_QUERY) with
 * a type, bounds, a default and a description; the OpenAPI document shows
 * them, and api_query_decode() checks a request's query against them before
 * any handler runs: an unknown name, a repeat, a missing required one or a
 * bad value is a 400 naming the parameter. Handlers read the decoded values
 * by name (a name the operation does not declare is a programming error). */
#ifndef API_QUERY_H
#define API_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "api/reply.h"
#include "api/routes.h"

enum api_qtype { API_Q_INT, API_Q_NUMBER, API_Q_BOOL, API_Q_ENUM, API_Q_ID, API_Q_STRING };

#define API_QF_REQUIRED 1u /* must be given */
#define API_QF_REPEAT 2u   /* may repeat; the first value is decoded */
#define API_QF_CAP 4u      /* over max is 422 unprocessable (a cap, not a bound) */

struct api_query_param {
    enum api_op op;
    const char *name;
    enum api_qtype type;
    double min, max;     /* INT and NUMBER */
    const char *def;     /* the default, as text; NULL: none */
    unsigned flags;      /* API_QF_x */
    const char *form;    /* ENUM: the values, comma-separated; STRING: NULL or an ERE to match */
    const char *description;
};

/* The i-th query parameter of op (in ops.def's order); NULL past the last. */
const struct api_query_param *api_query_param(enum api_op op, size_t i);

/* The OpenAPI schema type of t: "integer", "number", "boolean", "string". */
const char *api_qtype_name(enum api_qtype t);

#define API_QUERY_MAX 16 /* parameters in one request, and declared per operation */

struct api_query_value {
    const char *text; /* the value (the first one given), else the default, else NULL */
    int given;
    int64_t i;        /* INT, and BOOL as 0 or 1 */
    double x;         /* NUMBER */
};

struct api_query {
    enum api_op op;
    struct api_query_value v[API_QUERY_MAX]; /* by api_query_param's index */
};

/* Decode the query (keys and values, n of them; values point into the
 * request, and out keeps pointing there) of a request to op into out.
 * More than API_QUERY_MAX parameters, an unknown or repeated name, a
 * required one missing and a value of the wrong type or outside its bounds
 * are 400 bad_request naming the parameter (an identifier: invalid_id),
 * a value over a cap 422, in r. */
int api_query_decode(enum api_op op, const char *const *keys, const char *const *vals, size_t n,
                     struct api_query *out, struct api_reply *r);

/* Whether the request gave the parameter. */
int api_query_given(const struct api_query *q, const char *name);
/* The parameter's text (given, else its default), NULL when neither. */
const char *api_query_str(const struct api_query *q, const char *name);
/* An INT's value, or a BOOL's (0 or 1): given, else the default, else 0. */
int64_t api_query_int(const struct api_query *q, const char *name);
/* A NUMBER's value: given, else the default, else 0. */
double api_query_number(const struct api_query *q, const char *name);

#endif
