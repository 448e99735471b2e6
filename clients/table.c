/* clients/table.c: aligned text tables (table.h). */
#include "clients/table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "common/banned.h"

void cli_table_init(struct cli_table *t, const char *first, ...)
{
    va_list ap;
    memset(t, 0, sizeof *t);
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *))
        t->ncols++;
    va_end(ap);
    va_start(ap, first);
    size_t i = 0;
    if (sc_vec_reserve((void **)&t->cells, &t->cap, t->ncols, sizeof *t->cells))
        abort();
    for (const char *s = first; s; s = va_arg(ap, const char *))
        t->cells[i++] = strdup(s);
    va_end(ap);
    t->nrows = 1;
}

void cli_table_rowf(struct cli_table *t, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    size_t base = t->nrows * t->ncols;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (sc_vec_reserve((void **)&t->cells, &t->cap, base + t->ncols, sizeof *t->cells))
        abort();
    char *p = line;
    for (size_t i = 0; i < t->ncols; i++) {
        char *bar = p ? strchr(p, '|') : NULL;
        if (bar)
            *bar = '\0';
        t->cells[base + i] = strdup(p ? p : "");
        p = bar ? bar + 1 : NULL;
    }
    t->nrows++;
}

static int numeric(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("0123456789.-+%x", *s))
            return 0;
    return 1;
}

void cli_table_print(const struct cli_table *t, FILE *out, const char *indent)
{
    size_t w[64] = {0};
    size_t nc = t->ncols < 64 ? t->ncols : 64;
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < nc; c++) {
            size_t n = strlen(t->cells[r * t->ncols + c]);
            if (n > w[c])
                w[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        fputs(indent, out);
        for (size_t c = 0; c < nc; c++) {
            const char *s = t->cells[r * t->ncols + c];
            int right = r > 0 && numeric(s);
            int last = c + 1 == nc;
            if (right)
                fprintf(out, "%*s", (int)w[c], s);
            else if (last)
                fputs(s, out);
            else
                fprintf(out, "%-*s", (int)w[c], s);
            if (!last)
                fputs("  ", out);
        }
        fputc('\n', out);
    }
}

void cli_table_release(struct cli_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
