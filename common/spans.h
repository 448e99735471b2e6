/* common/spans.h: time spans [a, b) and their union.
 *
 * The time a stream, a thread or a kind of work is busy is the union of
 * its spans. Spans often come as a few runs already sorted by start (one
 * per stream or thread, each in time order), so the union sorts them with a
 * natural merge sort, a pass per halving of the runs; spans of many short
 * runs (the starts and ends of nested calls) are sorted by radix instead, a
 * pass per 11 bits of their time range. Then it merges the touching and
 * overlapping ones. The replay's
 * breakdowns, inspect's busy times and the graph's idle stretches of a
 * thread are made this way; the instants a thread's calls start and end
 * at (sc_span_instants) come from the calls in start order. libc only. */
#ifndef COMMON_SPANS_H
#define COMMON_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "common/vec.h"

struct sc_span {
    int64_t a, b;
};

/* A growing array of spans. */
struct sc_spans {
    struct sc_span *v;
    size_t n, cap;
};

/* Append [a, b); an empty span (b <= a) is left out, and one that starts
 * within the last span (a stream's next task, back to back) extends it:
 * the union is the same, with fewer spans to sort. 0, or -1 when out of
 * memory. */
static inline int sc_spans_add(struct sc_spans *s, int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    if (s->n && a >= s->v[s->n - 1].a && a <= s->v[s->n - 1].b) {
        if (b > s->v[s->n - 1].b)
            s->v[s->n - 1].b = b;
        return 0;
    }
    if (sc_vec_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
        return -1;
    s->v[s->n++] = (struct sc_span){a, b};
    return 0;
}

/* The union of v[0..n): disjoint spans by start, each the merge of spans
 * that touch or overlap (the same whatever order spans of equal start come
 * in). When v is not sorted by start it is sorted through tmp (room for n),
 * which may then hold the result. Returns how many; *out points at them,
 * in v or in tmp. */
size_t sc_span_union(struct sc_span *v, struct sc_span *tmp, size_t n, struct sc_span **out);

/* The instants the n spans v[0..n) (b >= a) start and end at, in order
 * and each once, written over them: at[0..m), where at is v's memory as
 * int64_t (room for 2n, as many as the spans' ends); returns m. The spans
 * are sorted by start through tmp (room for n) as in sc_span_union, and
 * the ends of the spans open at each start are kept in a heap: in start
 * order, nested calls end in the order they are left, so the heap stays
 * as shallow as the nesting. */
size_t sc_span_instants(struct sc_span *v, struct sc_span *tmp, size_t n);

/* The first of the times at[0..n) (in order: instants, starts) after t;
 * n when none is. */
size_t sc_first_after(const int64_t *at, size_t n, int64_t t);

/* The first of v[0..n) (disjoint, by start: a union) that ends after t;
 * n when none does. */
size_t sc_span_seek(const struct sc_span *v, size_t n, int64_t t);

/* s made its union (sc_span_union) through tmp, grown as needed; s and tmp
 * may trade buffers. 0, or -1 when out of memory (s unchanged). */
int sc_spans_union(struct sc_spans *s, struct sc_spans *tmp);

#endif
