/* common/csv.c: comma-separated text a line and a field at a time (csv.h). */
#include "common/csv.h"

#include <string.h>

#include "common/banned.h"

void sc_lines_init(struct sc_lines *l, const char *text, size_t len)
{
    l->p = text;
    l->end = text + len;
    l->line = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        l->p += 3;
}

int sc_lines_next(struct sc_lines *l, const char **s, size_t *n)
{
    if (l->p >= l->end)
        return 0;
    const char *eol = memchr(l->p, '\n', (size_t)(l->end - l->p));
    const char *stop = eol ? eol : l->end;
    size_t w = (size_t)(stop - l->p);
    if (w && stop[-1] == '\r')
        w--;
    *s = l->p;
    *n = w;
    l->p = eol ? eol + 1 : l->end;
    l->line++;
    return 1;
}

int sc_csv_field(const char **p, const char *end, int last, char *buf, size_t size)
{
    const char *q = *p;
    const char *comma = memchr(q, ',', (size_t)(end - q));
    const char *fe = last ? end : comma;
    if (!fe || (last && comma) || fe == q || (size_t)(fe - q) >= size)
        return -1;
    memcpy(buf, q, (size_t)(fe - q));
    buf[fe - q] = '\0';
    *p = fe < end ? fe + 1 : end;
    return 0;
}
