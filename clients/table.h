/* clients/table.h: aligned text tables for the command line.
 *
 *     struct cli_table tb;
 *     cli_table_init(&tb, "stream", "kernels", "busy ms", NULL);
 *     cli_table_rowf(&tb, "%d|%zu|%.3f", 7, kernels, busy_ms);
 *     cli_table_print(&tb, stdout, "  ");
 *     cli_table_release(&tb);
 *
 * Columns size themselves to their widest cell; cells that look like numbers
 * are right-aligned. */
#ifndef CLIENTS_TABLE_H
#define CLIENTS_TABLE_H

#include <stdio.h>

struct cli_table {
    char **cells; /* row-major, ncols per row, row 0 is the header */
    size_t ncols, nrows, cap;
};

void cli_table_init(struct cli_table *t, const char *first, ...);
/* A row from printf-style cells: fmt is a format per cell separated by '|'. */
void cli_table_rowf(struct cli_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_table_print(const struct cli_table *t, FILE *out, const char *indent);
void cli_table_release(struct cli_table *t);

#endif
