/* tests/alloc_fail.h: allocation failures on demand, for the test runner.
 *
 * The test binary is linked with the C allocator's entry points wrapped
 * (tests/module.mk: -Wl,--wrap=malloc and the rest), so every allocation
 * the library makes passes through tests/alloc_fail.c. Unarmed, the
 * wrappers only pass it on. Armed, the Nth allocation from then on fails
 * (returns NULL, errno ENOMEM), and every block allocated is tracked until
 * freed, so a path that fails cleanly can be checked to have freed all it
 * took, and what it held at its peak can be measured. STEPCAST_FAIL_ALLOC=N in the environment arms it at the first
 * allocation of the process (to reproduce one failure under a debugger). */
#ifndef TESTS_ALLOC_FAIL_H
#define TESTS_ALLOC_FAIL_H

#include <stddef.h>

/* Arm: fail the nth allocation from now (n >= 1; 0: fail none, only count
 * and track). Jansson's allocations are routed through the wrappers too. */
void alloc_fail_arm(unsigned long n);

/* Disarm; *allocations gets the allocations made while armed, *live the
 * blocks still held of those tracked; *failed whether the nth was reached.
 * The tracking is cleared. */
void alloc_fail_disarm(unsigned long *allocations, size_t *live, int *failed);

/* The most bytes the blocks tracked since alloc_fail_arm held at once
 * (malloc_usable_size of each), and the bytes they hold now: what a piece
 * of work took of the heap at its peak, freed or not. *complete is 0 when
 * some block could not be tracked (the figures are then short). */
void alloc_fail_bytes(size_t *peak, size_t *now, int *complete);
/* Start the peak again from the bytes held now. */
void alloc_fail_reset_peak(void);

#endif
