/* common/spans.c: the union of time spans (spans.h). */
#include "common/spans.h"

#include "common/banned.h"

/* Sort v[0..n) by start, a natural merge sort whose passes go between v
 * and t; returns the one that holds the sorted spans. */
static struct sc_span *sort(struct sc_span *v, struct sc_span *t, size_t n)
{
    for (;;) {
        size_t runs = 0, lo = 0;
        while (lo < n) {
            size_t mid = lo + 1;
            while (mid < n && v[mid - 1].a <= v[mid].a)
                mid++;
            size_t hi = mid;
            if (hi < n)
                for (hi++; hi < n && v[hi - 1].a <= v[hi].a;)
                    hi++;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                t[k++] = v[j].a < v[i].a ? v[j++] : v[i++];
            while (i < mid)
                t[k++] = v[i++];
            while (j < hi)
                t[k++] = v[j++];
            runs++;
            lo = hi;
        }
        struct sc_span *sorted = t;
        t = v;
        v = sorted;
        if (runs <= 1)
            return v;
    }
}

size_t sc_span_union(struct sc_span *v, struct sc_span *tmp, size_t n, struct sc_span **out)
{
    size_t m = 0, sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = v[i - 1].a <= v[i].a;
    if (!sorted)
        v = sort(v, tmp, n);
    for (size_t i = 0; i < n; i++) {
        if (m && v[i].a <= v[m - 1].b) {
            if (v[i].b > v[m - 1].b)
                v[m - 1].b = v[i].b;
        } else {
            v[m++] = v[i];
        }
    }
    *out = v;
    return m;
}

size_t sc_span_seek(const struct sc_span *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].b <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int sc_spans_union(struct sc_spans *s, struct sc_spans *tmp)
{
    struct sc_span *u;
    if (sc_vec_reserve((void **)&tmp->v, &tmp->cap, s->n, sizeof *tmp->v))
        return -1;
    s->n = sc_span_union(s->v, tmp->v, s->n, &u);
    if (u != s->v) {
        struct sc_spans keep = *s;
        s->v = tmp->v;
        s->cap = tmp->cap;
        tmp->v = keep.v;
        tmp->cap = keep.cap;
    }
    return 0;
}
