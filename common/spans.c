/* common/spans.c: the union of time spans (spans.h). */
#include "common/spans.h"

#include <assert.h>
#include <string.h>

#include "common/banned.h"

/* Sort v[0..n) of `runs` sorted runs by start, a natural merge sort whose
 * passes go between v and t; returns the one that holds the sorted spans. */
static struct sc_span *merge_sort(struct sc_span *v, struct sc_span *t, size_t n, size_t runs)
{
    while (runs > 1) {
        size_t lo = 0;
        runs = 0;
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
            assert(k == hi); /* each span of the two runs merged once */
            runs++;
            lo = hi;
        }
        struct sc_span *sorted = t;
        t = v;
        v = sorted;
    }
    return v;
}

enum { RADIX_BITS = 11, RADIX = 1 << RADIX_BITS };

/* Sort v[0..n) by start, least significant digit first (stable), the
 * starts taken from the smallest, `range` the largest less it; passes go
 * between v and t, one per RADIX_BITS of the range; returns the one that
 * holds the sorted spans. */
static struct sc_span *radix_sort(struct sc_span *v, struct sc_span *t, size_t n, int64_t lo, uint64_t range)
{
    for (unsigned shift = 0; shift < 64 && (range >> shift); shift += RADIX_BITS) {
        size_t at[RADIX] = {0};
        for (size_t i = 0; i < n; i++)
            at[((uint64_t)v[i].a - (uint64_t)lo) >> shift & (RADIX - 1)]++;
        size_t sum = 0;
        for (size_t d = 0; d < RADIX; d++) {
            size_t c = at[d];
            at[d] = sum;
            sum += c;
        }
        assert(sum == n);
        for (size_t i = 0; i < n; i++)
            t[at[((uint64_t)v[i].a - (uint64_t)lo) >> shift & (RADIX - 1)]++] = v[i];
        struct sc_span *sorted = t;
        t = v;
        v = sorted;
    }
    return v;
}

/* Sort v[0..n) by start through t; returns the one that holds the sorted
 * spans. A merge pass per halving of the sorted runs, or a radix pass per
 * RADIX_BITS of the starts' range, whichever takes fewer passes (a radix
 * pass reads twice: counted as two). */
static struct sc_span *sort(struct sc_span *v, struct sc_span *t, size_t n, size_t runs)
{
    int64_t lo = v[0].a, hi = v[0].a;
    for (size_t i = 1; i < n; i++) {
        lo = v[i].a < lo ? v[i].a : lo;
        hi = v[i].a > hi ? v[i].a : hi;
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    unsigned merge_passes = 0, radix_passes = 0;
    for (size_t r = runs - 1; r; r >>= 1)
        merge_passes++;
    for (uint64_t r = range; r; r >>= RADIX_BITS)
        radix_passes++;
    if (n >= RADIX && merge_passes > 2 * radix_passes)
        return radix_sort(v, t, n, lo, range);
    return merge_sort(v, t, n, runs);
}

/* The ends of the spans still open, a min-heap in h[0..n). */
static void heap_push(int64_t *h, size_t *n, int64_t x)
{
    size_t i = (*n)++;
    while (i && h[(i - 1) / 2] > x) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static int64_t heap_pop(int64_t *h, size_t *n)
{
    int64_t top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = x;
    return top;
}

static void put_instant(int64_t *at, size_t *m, int64_t x)
{
    if (!*m || at[*m - 1] != x)
        at[(*m)++] = x;
}

size_t sc_span_instants(struct sc_span *v, struct sc_span *tmp, size_t n)
{
    int64_t *at = (int64_t *)(void *)v;
    size_t runs = n ? 1 : 0, m = 0, open = 0;
    for (size_t i = 1; i < n; i++)
        runs += v[i].a < v[i - 1].a;
    if (runs > 1) {
        struct sc_span *sorted = sort(v, tmp, n, runs);
        if (sorted != v)
            memcpy(v, sorted, n * sizeof *v);
    }
    int64_t *ends = (int64_t *)(void *)tmp; /* n spans: room for n ends */
    for (size_t i = 0; i < n; i++) {
        /* at[0..m) never reaches v[i + 1]: before v[i] is read, the spans
         * before it gave at most 2i instants, and v[i] itself one more,
         * written over at[2i], its own start, once it is read */
        struct sc_span x = v[i];
        while (open && ends[0] <= x.a)
            put_instant(at, &m, heap_pop(ends, &open));
        put_instant(at, &m, x.a);
        heap_push(ends, &open, x.b);
        assert(m <= 2 * i + 1);
    }
    while (open)
        put_instant(at, &m, heap_pop(ends, &open));
    return m;
}

size_t sc_first_after(const int64_t *at, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (at[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t sc_span_union(struct sc_span *v, struct sc_span *tmp, size_t n, struct sc_span **out)
{
    size_t m = 0, runs = n ? 1 : 0;
    for (size_t i = 1; i < n; i++)
        runs += v[i].a < v[i - 1].a;
    if (runs > 1)
        v = sort(v, tmp, n, runs);
    for (size_t i = 0; i < n; i++) {
        assert(i == 0 || v[i - 1].a <= v[i].a); /* sorted by start */
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
