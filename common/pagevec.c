/* common/pagevec.c: growing arrays whose large sizes are mappings of their
 * own, appended to one another by moving pages (pagevec.h). */
#define _GNU_SOURCE /* mremap */
#include "common/pagevec.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/vec.h"
#include "common/banned.h"

static size_t page_bytes(void)
{
    long p = sysconf(_SC_PAGESIZE); /* read from the process's start-up data: no system call */
    return p > 0 ? (size_t)p : 4096;
}

static int is_mapping(size_t cap, size_t elem)
{
    return cap * elem >= SC_PAGEVEC_MIN;
}

/* The length of the mapping of an array of capacity cap: a mapping's
 * capacity is always its length in whole elements, so this is that length. */
static size_t mapping_bytes(size_t cap, size_t elem)
{
    size_t page = page_bytes();
    return (cap * elem + page - 1) / page * page;
}

int sc_pagevec_reserve(void **arr, size_t *cap, size_t used, size_t need, size_t elem)
{
    if (need <= *cap) /* every append but a few: nothing more on this path */
        return 0;
    assert(elem && elem < page_bytes() && used <= *cap);
    size_t n = sc_vec_grown(*cap, need);
    if (!n || n > (SIZE_MAX - page_bytes()) / elem)
        return -1;
    if (!is_mapping(n, elem))
        return sc_vec_reserve(arr, cap, need, elem); /* the same doubling */
    size_t len = mapping_bytes(n, elem), old = mapping_bytes(*cap, elem);
    void *p = MAP_FAILED;
    if (is_mapping(*cap, elem)) /* fails where pages moved in made it mappings of their own */
        p = mremap(*arr, old, len, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        if (used)
            memcpy(p, *arr, used * elem);
        sc_pagevec_free(*arr, *cap, elem);
    }
    *arr = p;
    *cap = len / elem;
    assert(*cap >= need && mapping_bytes(*cap, elem) == len);
    return 0;
}

void sc_pagevec_free(void *arr, size_t cap, size_t elem)
{
    if (arr && is_mapping(cap, elem))
        (void)munmap(arr, mapping_bytes(cap, elem));
    else
        free(arr);
}

/* *src's pages moved to follow *dst's first n_dst elements: src's bytes
 * shifted within its own pages to where they fall in a page of dst, the
 * bytes of dst's last page before them copied in front, and the pages
 * then remapped over dst's from that page on. 0, or -1 with both arrays'
 * elements where they were. */
static int move_pages(void **dst, size_t *dst_cap, size_t n_dst, void **src, size_t *src_cap, size_t n_src,
                      size_t elem)
{
    size_t page = page_bytes(), at = n_dst * elem, bytes = n_src * elem;
    size_t head = at % page, from = at - head; /* dst's page where src begins, and dst's bytes in it */
    size_t need = (head + bytes + page - 1) / page * page, slen = mapping_bytes(*src_cap, elem);
    if (need > slen) { /* room to shift src by head bytes */
        void *p = mremap(*src, slen, need, MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
            return -1;
        *src = p;
        *src_cap = need / elem;
        slen = need;
    }
    size_t dlen = mapping_bytes(*dst_cap, elem);
    if (from + need > dlen) { /* dst's mapping reaches past where src's pages go */
        void *p = mremap(*dst, dlen, from + need, MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
            return -1;
        *dst = p;
        *dst_cap = (from + need) / elem;
        dlen = from + need;
    }
    char *s = *src, *d = *dst;
    memmove(s + head, s, bytes);
    memcpy(s, d + from, head);
    if (mremap(s, need, need, MREMAP_MAYMOVE | MREMAP_FIXED, d + from) == MAP_FAILED) {
        memmove(s, s + head, bytes); /* as it was */
        return -1;
    }
    if (slen > need)
        (void)munmap(s + need, slen - need);
    *src = NULL;
    *src_cap = 0;
    assert(mapping_bytes(*dst_cap, elem) == dlen && dlen >= at + bytes);
    return 0;
}

int sc_pagevec_append(void **dst, size_t *dst_cap, size_t *n_dst, void **src, size_t *src_cap, size_t *n_src,
                      size_t elem)
{
    size_t nd = *n_dst, ns = *n_src;
    assert(nd <= *dst_cap && ns <= *src_cap);
    if (ns > SIZE_MAX / elem - nd)
        return -1;
    if (ns * elem >= page_bytes() && is_mapping(*dst_cap, elem) && is_mapping(*src_cap, elem) &&
        move_pages(dst, dst_cap, nd, src, src_cap, ns, elem) == 0) {
        /* taken */
    } else if (ns > nd && is_mapping(*src_cap, elem) && !is_mapping(*dst_cap, elem)) {
        /* a small dst goes in front of src, which becomes dst */
        if (sc_pagevec_reserve(src, src_cap, ns, nd + ns, elem))
            return -1;
        memmove((char *)*src + nd * elem, *src, ns * elem);
        if (nd)
            memcpy(*src, *dst, nd * elem);
        sc_pagevec_free(*dst, *dst_cap, elem);
        *dst = *src;
        *dst_cap = *src_cap;
    } else {
        if (sc_pagevec_reserve(dst, dst_cap, nd, nd + ns, elem))
            return -1;
        if (ns)
            memcpy((char *)*dst + nd * elem, *src, ns * elem);
        sc_pagevec_free(*src, *src_cap, elem);
    }
    *src = NULL;
    *src_cap = 0;
    *n_dst = nd + ns;
    *n_src = 0;
    return 0;
}
