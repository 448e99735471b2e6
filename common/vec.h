/* common/vec.h: growing a malloc'd array by doubling.
 *
 *     struct event *ev = NULL; size_t n = 0, cap = 0;
 *     if (sc_vec_reserve((void **)&ev, &cap, n + 1, sizeof *ev)) goto oom;
 *     ev[n++] = e;
 *
 * Capacity at least doubles, so appends are amortised O(1). */
#ifndef COMMON_VEC_H
#define COMMON_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity an array of capacity cap grows to for `need` elements: cap
 * (16 when 0) doubled until it holds them; 0 when that would overflow. */
size_t sc_vec_grown(size_t cap, size_t need);

/* Make room for `need` elements of `elem` bytes. Returns 0, or -1 (the array
 * is untouched) when out of memory or the size would overflow. */
int sc_vec_reserve(void **arr, size_t *cap, size_t need, size_t elem);

/* qsort that also takes an empty array, which may then be NULL (qsort's
 * contract does not allow a NULL base even for no element). */
static inline void sc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/* base[0..n) sorted by cmp through tmp (room for n elements of size):
 * passes merging its runs already in order two by two, copying what comes
 * from one side in blocks. Much cheaper than qsort on what comes as a few
 * long runs (a trace's events: each thread's in time order, in a few
 * sections); stable, so the same order as qsort where cmp is a total
 * order. */
void sc_sort_runs(void *base, void *tmp, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* The same with a tmp of its own: 0, or -1 (base untouched) when out of
 * memory. */
int sc_sort_runs_alloc(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* The k-th smallest of v[0..n) (k < n), found in place by quickselect: v
 * is left permuted. The value a sort would put at v[k], in linear time on
 * average, for the medians and percentiles that need no other order. */
int64_t sc_select_i64(int64_t *v, size_t n, size_t k);
double sc_select_double(double *v, size_t n, size_t k); /* no NaN in v */

#endif
