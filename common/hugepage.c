/* common/hugepage.c: large arrays on transparent huge pages, and giving
 * freed memory back (hugepage.h). */
#include "common/hugepage.h"

#include <assert.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* glibc's heap is the heap, unless a sanitizer's allocator replaced it:
 * then malloc_trim and mallopt only reach glibc's own arena, never set up
 * by a first malloc, and two threads calling them at once (a build's
 * trim, a plan's mallopt) set it up concurrently and crash in it. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SC_SANITIZED_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SC_SANITIZED_HEAP 1
#endif
#if defined(__GLIBC__) && !defined(SC_SANITIZED_HEAP)
#define SC_GLIBC_HEAP 1
#endif

#include "common/banned.h"

void *sc_huge_alloc(size_t n)
{
    if (n < SC_HUGEPAGE_MIN)
        return malloc(n ? n : 1);
    if (n > SIZE_MAX - SC_HUGEPAGE_MIN)
        return NULL;
    size_t whole = (n + SC_HUGEPAGE_MIN - 1) / SC_HUGEPAGE_MIN * SC_HUGEPAGE_MIN;
    assert(whole >= n && whole % SC_HUGEPAGE_MIN == 0);
    void *p = aligned_alloc(SC_HUGEPAGE_MIN, whole);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, whole, MADV_HUGEPAGE); /* a hint: refused is as good as ignored */
#endif
    return p;
}

void sc_heap_trim(void)
{
#ifdef SC_GLIBC_HEAP
    (void)malloc_trim(0);
#endif
}

/* glibc's ceiling for the threshold it raises by itself (32 MiB on 64-bit
 * systems) and the trim threshold that goes with it. */
#define KEEP_MMAP_MAX (32 << 20)

static atomic_int keeping;

void sc_heap_keep_begin(void)
{
    if (atomic_fetch_add(&keeping, 1) == 0) {
#ifdef SC_GLIBC_HEAP
        (void)mallopt(M_MMAP_THRESHOLD, KEEP_MMAP_MAX);
        (void)mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
    }
}

void sc_heap_keep_end(void)
{
    if (atomic_fetch_sub(&keeping, 1) == 1) {
#ifdef SC_GLIBC_HEAP
        (void)mallopt(M_TRIM_THRESHOLD, 2 * KEEP_MMAP_MAX);
        (void)malloc_trim(0);
#endif
    }
}
