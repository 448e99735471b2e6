/* common/csv.h: reading comma-separated text a line and a field at a time,
 * for the measurement tables stepcast takes (validation rows, GEMM
 * microbenchmarks). No quoting: a field is what lies between two commas.
 *
 *     struct sc_lines l;
 *     const char *s; size_t n;
 *     sc_lines_init(&l, text, len);
 *     while (sc_lines_next(&l, &s, &n)) { ... l.line is its number ... }
 */
#ifndef COMMON_CSV_H
#define COMMON_CSV_H

#include <stddef.h>

struct sc_lines {
    const char *p, *end;
    size_t line; /* the number of the line last given, from 1 */
};

/* A UTF-8 byte-order mark at the start is skipped. */
void sc_lines_init(struct sc_lines *l, const char *text, size_t len);

/* The next line, without its "\n" or "\r\n": 1, or 0 at the end. */
int sc_lines_next(struct sc_lines *l, const char **s, size_t *n);

/* The next field of the line [*p, end) into buf (size bytes, NUL-ended),
 * *p moved past it and its comma. `last`: the field must end the line.
 * 0, or -1 when there is no such field (the line ended, or a comma follows
 * the last one), it is empty, or it does not fit in buf. */
int sc_csv_field(const char **p, const char *end, int last, char *buf, size_t size);

#endif
