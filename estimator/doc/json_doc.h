/* estimator/doc/json_doc.h: the estimator's JSON documents (specs, hardware
 * profiles, cluster profiles, collective lines) read into their structs and
 * written from them, each through one table of its fields.
 *
 * A document's module lists its keys once: the JSON path, the type, the
 * accepted range and the place in the struct. This module is the only one
 * of them that meets Jansson: it checks every value against its field,
 * names the path of whatever is wrong, and writes the same table back, so
 * a reader and its writer cannot disagree about which keys exist. What a
 * document means beyond one value at a time (a bandwidth above a peak, a
 * layout that does not divide) stays with the document's own module. */
#ifndef ESTIMATOR_JSON_DOC_H
#define ESTIMATOR_JSON_DOC_H

#include <stddef.h>

#include "common/error.h"

enum doc_type {
    DOC_OBJECT,  /* an object: its members are the fields under its path, or sub's */
    DOC_INT,     /* a JSON integer in [min, max] into an int (size 4) or int64_t (size 8) */
    DOC_NUM,     /* a number in [min, max] into a double */
    DOC_BOOL,    /* true or false into an int */
    DOC_ENUM,    /* one of names into an int */
    DOC_STR,     /* a string of 1 to size - 1 bytes, no control character, into char[size] */
    DOC_STRS,    /* an array of [min, max] such strings, each char[size], counted at count_off */
    DOC_LIST,    /* an array of [min, max] objects of sub, each size bytes, counted at count_off */
    DOC_IGNORED, /* accepted whatever it holds; neither read nor written */
};

#define DOC_REQUIRED 1u /* absent is an error */
#define DOC_NULLABLE 2u /* null leaves the value as it was, and a value "not given" is written null */
#define DOC_SKIP_EMPTY 4u /* DOC_LIST: not written when it has no item */

struct doc_name {
    const char *name;
    int value;
};

struct doc_table;

struct doc_field {
    const char *path;           /* "model.moe.top_k"; an object's members follow it */
    enum doc_type type;
    unsigned flags;             /* DOC_REQUIRED, DOC_NULLABLE, DOC_SKIP_EMPTY */
    size_t off, size;           /* place and size in the struct (one item's for DOC_STRS, DOC_LIST) */
    double min, max;            /* DOC_INT, DOC_NUM: the range; DOC_STRS, DOC_LIST: the item count */
    const struct doc_name *names; /* DOC_ENUM, ending in a NULL name */
    const struct doc_table *sub;  /* DOC_OBJECT: a table of its own at off (NULL: members by path);
                                   * DOC_LIST: each item's */
    size_t count_off;           /* DOC_STRS, DOC_LIST: the int that counts the items */
};

struct doc_table {
    const struct doc_field *fields;
    size_t n;
    const char *name;      /* "the spec": whole-document errors name it */
    enum sc_status code;   /* the code of a value out of place: SC_EINVAL or SC_EPARSE */
    size_t max_bytes;      /* the largest document taken; 0: no limit */
    const char *root;      /* the document's path in errors ("set": "set.tp: ..."); NULL: none */
};

/* The most fields one table holds (given[] below has this many). */
#define DOC_MAX_FIELDS 128

/* Read the object in text into out, field by field; what is absent keeps
 * out's value. only ("model", or NULL for all) takes a document holding
 * just that subtree. given (t->n bytes, or NULL) marks each field of t
 * that the document holds. A malformed document is SC_EPARSE, one over
 * t->max_bytes SC_ELIMIT, an unknown key, a value of the wrong type or out
 * of range, or a missing required key t->code, each naming its path. On
 * error out may be partly written. */
int doc_read(const char *text, size_t len, const struct doc_table *t, const char *only, void *in_out,
             unsigned char *given, struct sc_error *err);

/* The fields of in (those under only, or all for NULL; with given, those
 * it marks) as a document, indented by indent (0: on one line, -1: on one
 * line without spaces), numbers at 17 digits so that they read back
 * exactly, keys in the table's order. Malloc'd; NULL when out of memory. */
char *doc_write(const struct doc_table *t, const char *only, const void *in, const unsigned char *given,
                int indent);

#endif
