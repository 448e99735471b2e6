/* common/hugepage.h: large arrays on transparent huge pages, and giving
 * freed memory back.
 *
 * The first touch of each 4 KiB page of a fresh array is a page fault; an
 * array filled once and read a few times (a graph's, a replay's) can spend
 * more time in those faults than in its own work, the more so in virtual
 * machines where a fault is dear. Backed by 2 MiB pages, it takes one
 * fault where 512 were. */
#ifndef COMMON_HUGEPAGE_H
#define COMMON_HUGEPAGE_H

#include <stddef.h>

/* Arrays from this size on are worth whole huge pages. */
#define SC_HUGEPAGE_MIN ((size_t)2 << 20)

/* Memory for an array of n bytes (uninitialised), released with free()
 * and resizable with realloc() like malloc's. From SC_HUGEPAGE_MIN bytes on
 * it starts on a huge page boundary and the kernel is advised to back it
 * with huge pages (a hint: where the kernel offers none, it is ordinary
 * memory). NULL when out of memory. */
void *sc_huge_alloc(size_t n);

/* Give the memory free()d so far back to the system where the allocator
 * still holds it (glibc keeps freed blocks of its heaps and of other
 * threads' arenas resident). A job's build frees each rank's scratch as it
 * goes; without this, the process's resident size would keep the peak of
 * all of it. Costs a walk over the allocator's free lists; a no-op where
 * the C library has no such call. */
void sc_heap_trim(void);

/* Keep the memory freed from now on for the allocations that follow,
 * until the matching sc_heap_keep_end(), which trims the heap. For a loop
 * that builds and frees large arrays over and over (the planner's
 * evaluations): were the memory given back each round, every round would
 * fault fresh pages in and have the kernel zero them, a tenth of its time.
 * Calls nest and may come from several threads (the setting is the
 * process's: memory freed elsewhere meanwhile is kept too). With glibc,
 * no trimming of the heap and arrays of up to 32 MiB from it; elsewhere a
 * no-op. */
void sc_heap_keep_begin(void);
void sc_heap_keep_end(void);

#endif
