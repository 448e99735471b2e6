/* common/error.c: status names and the error record (see error.h). */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sc_error_set(struct sc_error *e, enum sc_status code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        e->code = code;
        e->offset = -1;
        e->event = -1;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int sc_error_prefix(struct sc_error *e, const char *fmt, ...)
{
    char head[256], old[sizeof e->msg];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s: %s", head, old);
    return e->code;
}

const char *sc_status_name(enum sc_status code)
{
    switch (code) {
    case SC_OK: return "ok";
    case SC_ENOMEM: return "out_of_memory";
    case SC_EINVAL: return "invalid";
    case SC_EPARSE: return "parse";
    case SC_ELIMIT: return "limit";
    case SC_ENUMERIC: return "numeric";
    case SC_EIO: return "io";
    case SC_ENOTFOUND: return "not_found";
    case SC_EEXIST: return "exists";
    case SC_EINTERNAL: return "internal";
    case SC_ENOSPC: return "no_space";
    case SC_ECANCELED: return "cancelled";
    case SC_EUNAVAILABLE: return "unavailable";
    }
    return "unknown";
}

int sc_status_exit_code(enum sc_status code)
{
    switch (code) {
    case SC_OK: return 0;
    case SC_EINVAL: case SC_EPARSE: case SC_ELIMIT: case SC_ENUMERIC: case SC_ENOTFOUND:
        return 2;
    default:
        return 1;
    }
}
