/* profiler/bufpool.h: the activity buffers lent to CUPTI.
 *
 * CUPTI asks for a buffer (bufferRequested) from whatever thread is making a
 * CUDA call and hands it back full (bufferCompleted) from its own worker
 * threads, possibly several at once. Neither may block, so the pool is a
 * fixed array of slots whose state moves by compare-and-swap only:
 *
 *     EMPTY --get--> CUPTI --done--> DONE --take--> BUSY --give_back--> FREE --get--> CUPTI
 *
 * A slot's buffer is allocated the first time it is lent (separately, with
 * posix_memalign, 8-byte aligned as CUPTI requires) and reused after. One
 * consumer thread takes DONE buffers, converts them and gives them back; the
 * order in which full buffers are taken does not matter, the trace is joined
 * at the end. When every slot is taken and the memory cap allows no more, a
 * request gets NULL on CUPTI versions that accept it (API 27+: CUPTI counts
 * the records as dropped) and otherwise a loose buffer that is discarded on
 * return, its loss counted. */
#ifndef PROFILER_BUFPOOL_H
#define PROFILER_BUFPOOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PROF_POOL_SLOTS 256

enum prof_slot_state { PROF_SLOT_EMPTY, PROF_SLOT_FREE, PROF_SLOT_CUPTI, PROF_SLOT_DONE, PROF_SLOT_BUSY };

struct prof_slot {
    atomic_int state;
    _Atomic(uint8_t *) buf;
    size_t valid; /* written before DONE is published, read after it is seen */
};

struct prof_pool {
    struct prof_slot slots[PROF_POOL_SLOTS];
    size_t buf_size;
    size_t max_buffers;       /* slots that may hold a buffer */
    int allow_null;           /* CUPTI accepts a NULL buffer (drops records) */
    atomic_size_t allocated;  /* buffers allocated in slots */
    atomic_ullong refused;    /* requests answered NULL */
    atomic_ullong loose;      /* loose buffers handed out */
    atomic_ullong lost_bytes; /* bytes of loose buffers discarded unread */
};

/* buf_size: bytes per buffer (rounded to a multiple of 8); max_buffers:
 * at most PROF_POOL_SLOTS, at least 1. */
void prof_pool_init(struct prof_pool *p, size_t buf_size, size_t max_buffers, int allow_null);

/* bufferRequested: a buffer for CUPTI, or NULL. *size gets its size. */
uint8_t *prof_pool_get(struct prof_pool *p, size_t *size);

/* bufferCompleted: CUPTI returns buf with `valid` bytes of records. */
void prof_pool_done(struct prof_pool *p, uint8_t *buf, size_t valid);

/* Consumer: the next full buffer, or -1 when there is none. */
int prof_pool_take(struct prof_pool *p, uint8_t **buf, size_t *valid);

/* Consumer: slot `i` (from prof_pool_take) is converted; lend it again. */
void prof_pool_give_back(struct prof_pool *p, int i);

/* Buffers currently lent to CUPTI. */
size_t prof_pool_outstanding(struct prof_pool *p);

/* Free every buffer. Only when CUPTI holds none (tests, or after the
 * session's last forced flush). */
void prof_pool_release(struct prof_pool *p);

#endif
