/* common/pagevec.h: growing arrays that, once large, are mappings of their
 * own, so that one array can take another's pages instead of a copy.
 *
 * A trace parsed in parts (model/trace_reader.c) joins each part's tables
 * onto the first's. Copied, a part's rows are written once more, into
 * fresh pages of the first table (a page fault and a zeroed page for each
 * 4 KiB), and the part's own pages are then given back. Moved, the kernel
 * hands those pages over (mremap) and only the rows before the first
 * table's last page boundary are copied.
 *
 * An array of cap elements of elem bytes (elem under a page) is malloc'd
 * below SC_PAGEVEC_MIN bytes and a mapping of cap * elem bytes rounded up
 * to whole pages from there on: its capacity tells which, so it is resized
 * and freed only through these calls, with its capacity. */
#ifndef COMMON_PAGEVEC_H
#define COMMON_PAGEVEC_H

#include <stddef.h>

#define SC_PAGEVEC_MIN ((size_t)256 << 10)

/* Room for `need` elements, the capacity at least doubled (as
 * sc_vec_reserve); the first `used` are kept. 0, or -1 (the array
 * untouched) when out of memory or the size would overflow. */
int sc_pagevec_reserve(void **arr, size_t *cap, size_t used, size_t need, size_t elem);

/* Free an array of capacity cap (NULL is nothing to free). */
void sc_pagevec_free(void *arr, size_t cap, size_t elem);

/* Append *src's *n_src elements after *dst's *n_dst, and take *src: its
 * pages become *dst's where both are mappings; a small *dst is copied in
 * front of a larger mapping *src, which becomes *dst; else *src is copied
 * and freed. Then *n_dst counts both, and *src, *src_cap and *n_src are
 * NULL, 0 and 0. 0, or -1 when out of memory (the elements of both and
 * their counts as they were, either array perhaps moved or grown, *src
 * still the caller's). */
int sc_pagevec_append(void **dst, size_t *dst_cap, size_t *n_dst, void **src, size_t *src_cap, size_t *n_src,
                      size_t elem);

#endif
