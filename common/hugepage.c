/* common/hugepage.c: large arrays and the command line's heap on
 * transparent huge pages, and giving freed memory back (hugepage.h). */
#include "common/hugepage.h"

#include <assert.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
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

/* glibc's ceiling for the threshold it raises by itself (32 MiB on 64-bit
 * systems) and the trim threshold that goes with it. */
#define KEEP_MMAP_MAX (32 << 20)

/* How far the heap grows at a time once on huge pages (sc_heap_huge_pages):
 * what one advice covers. Address space only: pages are taken as touched. */
#define HUGE_HEAP_PAD (64 << 20)

static atomic_int keeping;

#ifdef SC_GLIBC_HEAP
static atomic_int huge_heap;

/* The heap's free top, grown by the pad first, advised onto huge pages:
 * the heap ends at its top, and a heap grown by brk later is a new mapping
 * that no advice covers. A block larger than all the heap's free memory
 * together can only come from a heap grown for it (by the pad); where that
 * block would be mapped on its own instead, the top is advised as it is. */
static void advise_heap(void)
{
#ifdef MADV_HUGEPAGE
    static void *volatile probe; /* volatile: to a compiler, a malloc freed unused is no call at all */
    struct mallinfo2 mi = mallinfo2();
    char *end = sbrk(0);
    if (end == (char *)-1)
        return;
    uintptr_t from = ((uintptr_t)(end - mi.keepcost) /* keepcost: the free top's size */ + SC_HUGEPAGE_MIN - 1) & ~(uintptr_t)(SC_HUGEPAGE_MIN - 1);
    if (mi.fordblks < KEEP_MMAP_MAX / 2) {
        probe = malloc(mi.fordblks + ((size_t)1 << 20));
        free(probe);
        end = sbrk(0);
    }
    if (end != (char *)-1 && from < (uintptr_t)end)
        (void)madvise((void *)from, (uintptr_t)end - from, MADV_HUGEPAGE); /* a hint, as in sc_huge_alloc */
#endif
}
#endif

void sc_heap_huge_pages(void)
{
#ifdef SC_GLIBC_HEAP
    (void)mallopt(M_ARENA_MAX, 1);
    (void)mallopt(M_MMAP_THRESHOLD, KEEP_MMAP_MAX);
    (void)mallopt(M_TRIM_THRESHOLD, 2 * HUGE_HEAP_PAD);
    (void)mallopt(M_TOP_PAD, HUGE_HEAP_PAD);
    atomic_store(&huge_heap, 1);
    advise_heap();
#endif
}

void sc_heap_trim(void)
{
#ifdef SC_GLIBC_HEAP
    (void)malloc_trim(0);
    if (atomic_load(&huge_heap))
        advise_heap();
#endif
}

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
        (void)mallopt(M_TRIM_THRESHOLD, atomic_load(&huge_heap) ? 2 * HUGE_HEAP_PAD : 2 * KEEP_MMAP_MAX);
        sc_heap_trim();
#endif
    }
}
