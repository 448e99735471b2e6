/* common/hugepage.c: large arrays on transparent huge pages, and giving
 * freed memory back (hugepage.h). */
#include "common/hugepage.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "common/banned.h"

void *sc_huge_alloc(size_t n)
{
    if (n < SC_HUGEPAGE_MIN)
        return malloc(n ? n : 1);
    if (n > SIZE_MAX - SC_HUGEPAGE_MIN)
        return NULL;
    size_t whole = (n + SC_HUGEPAGE_MIN - 1) / SC_HUGEPAGE_MIN * SC_HUGEPAGE_MIN;
    void *p = aligned_alloc(SC_HUGEPAGE_MIN, whole);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, whole, MADV_HUGEPAGE); /* a hint: refused is as good as ignored */
#endif
    return p;
}

void sc_heap_trim(void)
{
#ifdef __GLIBC__
    (void)malloc_trim(0);
#endif
}
