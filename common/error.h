/* common/error.h: status codes and the caller-owned error record.
 *
 * Every fallible function in model/, estimator/ and common/ returns an int
 * status (SC_OK is 0) and, on failure, fills a struct sc_error the caller
 * owns, so reporting an error never allocates. Only api/ turns a status into
 * an HTTP code and only the programs (clients/, daemon/) print or exit. */
#ifndef COMMON_ERROR_H
#define COMMON_ERROR_H

#include <stdint.h>

enum sc_status {
    SC_OK = 0,
    SC_ENOMEM,    /* allocation failed */
    SC_EINVAL,    /* invalid argument or usage */
    SC_EPARSE,    /* malformed input */
    SC_ELIMIT,    /* input over a named limit */
    SC_ENUMERIC,  /* number out of range, or a numeric method failed */
    SC_EIO,       /* the operating system refused a read or write */
    SC_ENOTFOUND, /* no such file or object */
    SC_EEXIST,    /* already exists with other content */
    SC_EINTERNAL, /* a bug: an invariant did not hold */
    SC_ENOSPC,    /* no space left on the device (or quota) for a write */
    SC_ECANCELED, /* called off before it finished (common/cancel.h) */
    SC_EUNAVAILABLE /* a server it depends on does not answer (the catalog's PostgreSQL) */
};

struct sc_error {
    enum sc_status code;
    int64_t offset; /* byte offset in the input, or -1 */
    int64_t event;  /* index in traceEvents, or -1 */
    char msg[512];  /* lowercase, no final period */
};

/* Fill *e (if non-NULL) with code and a formatted message; offset and event
 * are reset to -1. Returns code, so `return sc_error_set(...)` propagates. */
__attribute__((format(printf, 3, 4)))
int sc_error_set(struct sc_error *e, enum sc_status code, const char *fmt, ...);

/* Put "prefix: " in front of e->msg (e.g. a file name); returns e->code. */
__attribute__((format(printf, 2, 3)))
int sc_error_prefix(struct sc_error *e, const char *fmt, ...);

/* A stable lowercase name for a status: "parse", "limit", ... */
const char *sc_status_name(enum sc_status code);

/* The process exit status for a failure: 2 for invalid input or usage
 * (parse, limit, numeric, invalid, not found), 1 for anything else. */
int sc_status_exit_code(enum sc_status code);

#endif
