/* tests/json_compare.c: structural JSON equality and golden files. */
#include "tests/json_compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "common/banned.h"

static int ignored(const char *key, const char *const *ignore)
{
    for (; ignore && *ignore; ignore++)
        if (strcmp(key, *ignore) == 0)
            return 1;
    return 0;
}

__attribute__((format(printf, 4, 5)))
static int differ(char *where, size_t n, const char *path, const char *fmt, ...)
{
    snprintf(where, n, "%s: ", path[0] ? path : "(root)");
    size_t len = strlen(where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where + len, n - len, fmt, ap);
    va_end(ap);
    return 0;
}

static int equal(const json_t *e, const json_t *a, double tol, const char *const *ignore, char *path,
                 size_t plen, char *where, size_t n)
{
    if (json_is_number(e) && json_is_number(a)) {
        double x = json_number_value(e), y = json_number_value(a);
        if (x == y || fabs(x - y) <= tol * fmax(fabs(x), fabs(y)))
            return 1;
        char sx[64], sy[64];
        snprintf(sx, sizeof sx, "%.12g", x);
        snprintf(sy, sizeof sy, "%.12g", y);
        return differ(where, n, path, "expected %s, got %s", sx, sy);
    }
    if (json_typeof(e) != json_typeof(a)) {
        char *se = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT), *sa = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
        differ(where, n, path, "expected %s, got %s", se ? se : "?", sa ? sa : "?");
        free(se);
        free(sa);
        return 0;
    }
    if (json_is_object(e)) {
        const char *key;
        json_t *v;
        size_t len = strlen(path);
        json_object_foreach((json_t *)e, key, v) {
            if (ignored(key, ignore))
                continue;
            snprintf(path + len, plen - len, "%s%s", len ? "." : "", key);
            json_t *w = json_object_get(a, key);
            if (!w)
                return differ(where, n, path, "missing");
            if (!equal(v, w, tol, ignore, path, plen, where, n))
                return 0;
        }
        json_object_foreach((json_t *)a, key, v) {
            if (!ignored(key, ignore) && !json_object_get(e, key)) {
                snprintf(path + len, plen - len, "%s%s", len ? "." : "", key);
                return differ(where, n, path, "unexpected");
            }
        }
        path[len] = '\0';
        return 1;
    }
    if (json_is_array(e)) {
        size_t len = strlen(path);
        if (json_array_size(e) != json_array_size(a)) {
            char se[32], sa[32];
            snprintf(se, sizeof se, "%zu", json_array_size(e));
            snprintf(sa, sizeof sa, "%zu", json_array_size(a));
            return differ(where, n, path, "expected %s elements, got %s", se, sa);
        }
        for (size_t i = 0; i < json_array_size(e); i++) {
            snprintf(path + len, plen - len, "[%zu]", i);
            if (!equal(json_array_get(e, i), json_array_get(a, i), tol, ignore, path, plen, where, n))
                return 0;
        }
        path[len] = '\0';
        return 1;
    }
    if (json_equal((json_t *)e, (json_t *)a))
        return 1;
    char *se = json_dumps(e, JSON_ENCODE_ANY), *sa = json_dumps(a, JSON_ENCODE_ANY);
    differ(where, n, path, "expected %s, got %s", se ? se : "?", sa ? sa : "?");
    free(se);
    free(sa);
    return 0;
}

int th_json_equal(const json_t *expected, const json_t *actual, double rel_tol,
                  const char *const *ignore, char *where, size_t n)
{
    char path[1024] = "";
    return equal(expected, actual, rel_tol, ignore, path, sizeof path, where, n);
}

void th_check_golden(const char *path, json_t *actual, double rel_tol, const char *const *ignore)
{
    const char *update = getenv("UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        if (json_dump_file(actual, path, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12)))
            sc_check_fail(__FILE__, __LINE__, "cannot write golden file %s", path);
        else
            printf("     wrote %s\n", path);
        return;
    }
    json_error_t jerr;
    json_t *expected = json_load_file(path, 0, &jerr);
    if (!expected) {
        sc_check_fail(__FILE__, __LINE__, "cannot read golden file %s: %s (UPDATE_GOLDEN=1 writes it)",
                      path, jerr.text);
        return;
    }
    char where[2048];
    if (!th_json_equal(expected, actual, rel_tol, ignore, where, sizeof where))
        sc_check_fail(__FILE__, __LINE__, "%s differs: %s", path, where);
    json_decref(expected);
}
