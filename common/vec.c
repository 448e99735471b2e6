/* common/vec.c: doubling growth for malloc'd arrays, a sort of what comes
 * in runs and a selection (vec.h). */
#include "common/vec.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

size_t sc_vec_grown(size_t cap, size_t need)
{
    size_t n = cap ? cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return 0;
        n *= 2;
    }
    return n;
}

int sc_vec_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
    assert(arr && cap && elem);
    if (need <= *cap)
        return 0;
    size_t n = sc_vec_grown(*cap, need);
    if (!n || n > SIZE_MAX / elem)
        return -1;
    assert(n >= need && n > *cap);
    void *p = realloc(*arr, n * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

/* The end of the run in order that starts at element i. */
static size_t run_end(const char *v, size_t i, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    while (++i < n && cmp(v + (i - 1) * size, v + i * size) <= 0)
        ;
    return i;
}

void sc_sort_runs(void *base, void *tmp, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *v = base, *w = tmp;
    for (size_t runs = 2; n > 1 && runs > 1;) {
        runs = 0;
        for (size_t i = 0; i < n; runs++) {
            size_t m = run_end(v, i, n, size, cmp), e = m < n ? run_end(v, m, n, size, cmp) : n;
            if (m == n && i == 0)
                goto done; /* one run: in order */
            size_t x = i, y = m, o = i;
            while (x < m && y < e) {
                size_t *from, k;
                if (cmp(v + y * size, v + x * size) < 0) { /* the right side's, up to v[x] */
                    for (k = y + 1; k < e && cmp(v + k * size, v + x * size) < 0; k++)
                        ;
                    from = &y;
                } else { /* the left side's, up to v[y] */
                    for (k = x + 1; k < m && cmp(v + y * size, v + k * size) >= 0; k++)
                        ;
                    from = &x;
                }
                memcpy(w + o * size, v + *from * size, (k - *from) * size);
                o += k - *from;
                *from = k;
            }
            memcpy(w + o * size, v + x * size, (m - x) * size);
            memcpy(w + (o + m - x) * size, v + y * size, (e - y) * size);
            assert(o + (m - x) + (e - y) == e); /* the two runs' elements, each once */
            i = e;
        }
        char *t = v; /* the merged runs are the next pass's input */
        v = w;
        w = t;
    }
done:
    if (v != base)
        memcpy(base, v, n * size);
}

/* One quickselect for each element type (vec.h). */
#define SC_SELECT(NAME, T)                                                     \
T NAME(T *v, size_t n, size_t k)                                               \
{                                                                              \
    size_t lo = 0, hi = n - 1;                                                 \
    assert(k < n);                                                             \
    while (lo < hi) {                                                          \
        /* Hoare's partition of v[lo..hi] around the median of three */        \
        size_t mid = lo + (hi - lo) / 2;                                       \
        T a = v[lo], b = v[mid], c = v[hi];                                    \
        T pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b); \
        size_t i = lo, j = hi;                                                 \
        for (;;) {                                                             \
            while (v[i] < pivot)                                               \
                i++;                                                           \
            while (v[j] > pivot)                                               \
                j--;                                                           \
            if (i >= j)                                                        \
                break;                                                         \
            T t = v[i];                                                        \
            v[i++] = v[j];                                                     \
            v[j--] = t;                                                        \
        }                                                                      \
        /* v[lo..j] <= pivot <= v[j+1..hi] */                                  \
        if (k <= j)                                                            \
            hi = j;                                                            \
        else                                                                   \
            lo = j + 1;                                                        \
    }                                                                          \
    return v[k];                                                               \
}

SC_SELECT(sc_select_i64, int64_t)
SC_SELECT(sc_select_double, double)

int sc_sort_runs_alloc(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n < 2)
        return 0;
    void *tmp = malloc(n * size);
    if (!tmp)
        return -1;
    sc_sort_runs(base, tmp, n, size, cmp);
    free(tmp);
    return 0;
}
