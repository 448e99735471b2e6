/* tests/json_compare.h: structural comparison of JSON documents for golden
 * tests: objects by key (order ignored), arrays in order, reals within a
 * relative tolerance, integers and reals compared as numbers. */
#ifndef TESTS_JSON_COMPARE_H
#define TESTS_JSON_COMPARE_H

#include <jansson.h>

/* 1 when equal; otherwise 0 and `where` (size n) names the first difference
 * as a path ("ranks[0].steps[2].duration_ms: 1.5 != 1.6"). Keys listed in
 * `ignore` (NULL-terminated, may be NULL) are skipped at any depth. */
int th_json_equal(const json_t *expected, const json_t *actual, double rel_tol,
                  const char *const *ignore, char *where, size_t n);

/* Compare `actual` with the golden file `path`; with UPDATE_GOLDEN=1 in the
 * environment, write actual there instead. Reports through CHECK. */
void th_check_golden(const char *path, json_t *actual, double rel_tol, const char *const *ignore);

#endif
