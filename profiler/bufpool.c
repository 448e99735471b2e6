/* profiler/bufpool.c: lock-free lending of CUPTI activity buffers (bufpool.h). */
#include "profiler/bufpool.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

void prof_pool_init(struct prof_pool *p, size_t buf_size, size_t max_buffers, int allow_null)
{
    memset(p, 0, sizeof *p);
    p->buf_size = (buf_size + 7) & ~(size_t)7;
    p->max_buffers = max_buffers < 1 ? 1 : max_buffers > PROF_POOL_SLOTS ? PROF_POOL_SLOTS : max_buffers;
    p->allow_null = allow_null;
    for (int i = 0; i < PROF_POOL_SLOTS; i++) {
        atomic_init(&p->slots[i].state, PROF_SLOT_EMPTY);
        atomic_init(&p->slots[i].buf, NULL);
    }
}

/* Move a slot from one state to another if it is in the first: a plain
 * load first, so scanning busy slots costs no atomic read-modify-write. */
static int cas(atomic_int *state, int from, int to)
{
    return atomic_load_explicit(state, memory_order_relaxed) == from &&
           atomic_compare_exchange_strong_explicit(state, &from, to, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

uint8_t *prof_pool_get(struct prof_pool *p, size_t *size)
{
    *size = p->buf_size;
    for (int i = 0; i < PROF_POOL_SLOTS; i++)
        if (cas(&p->slots[i].state, PROF_SLOT_FREE, PROF_SLOT_CUPTI))
            return atomic_load_explicit(&p->slots[i].buf, memory_order_relaxed);
    /* no free buffer: allocate one into an empty slot, within the cap */
    for (int i = 0; i < PROF_POOL_SLOTS; i++) {
        if (atomic_load_explicit(&p->allocated, memory_order_relaxed) >= p->max_buffers)
            break;
        if (!cas(&p->slots[i].state, PROF_SLOT_EMPTY, PROF_SLOT_BUSY))
            continue;
        void *b = NULL;
        if (atomic_fetch_add(&p->allocated, 1) >= p->max_buffers ||
            posix_memalign(&b, 8, p->buf_size)) {
            atomic_fetch_sub(&p->allocated, 1);
            atomic_store_explicit(&p->slots[i].state, PROF_SLOT_EMPTY, memory_order_release);
            break;
        }
        atomic_store_explicit(&p->slots[i].buf, (uint8_t *)b, memory_order_relaxed);
        atomic_store_explicit(&p->slots[i].state, PROF_SLOT_CUPTI, memory_order_release);
        return b;
    }
    if (p->allow_null) {
        atomic_fetch_add(&p->refused, 1);
        *size = 0;
        return NULL;
    }
    /* older CUPTIs may crash on a NULL buffer: lend one that will be discarded */
    void *b = NULL;
    if (posix_memalign(&b, 8, p->buf_size)) {
        atomic_fetch_add(&p->refused, 1);
        *size = 0;
        return NULL;
    }
    atomic_fetch_add(&p->loose, 1);
    return b;
}

void prof_pool_done(struct prof_pool *p, uint8_t *buf, size_t valid)
{
    if (!buf)
        return;
    for (int i = 0; i < PROF_POOL_SLOTS; i++) {
        struct prof_slot *s = &p->slots[i];
        if (atomic_load_explicit(&s->buf, memory_order_relaxed) != buf ||
            atomic_load_explicit(&s->state, memory_order_acquire) != PROF_SLOT_CUPTI)
            continue;
        s->valid = valid;
        atomic_store_explicit(&s->state, PROF_SLOT_DONE, memory_order_release);
        return;
    }
    atomic_fetch_add(&p->lost_bytes, valid);
    free(buf);
}

int prof_pool_take(struct prof_pool *p, uint8_t **buf, size_t *valid)
{
    for (int i = 0; i < PROF_POOL_SLOTS; i++) {
        struct prof_slot *s = &p->slots[i];
        if (!cas(&s->state, PROF_SLOT_DONE, PROF_SLOT_BUSY))
            continue;
        *buf = atomic_load_explicit(&s->buf, memory_order_relaxed);
        *valid = s->valid;
        return i;
    }
    return -1;
}

void prof_pool_give_back(struct prof_pool *p, int i)
{
    atomic_store_explicit(&p->slots[i].state, PROF_SLOT_FREE, memory_order_release);
}

size_t prof_pool_outstanding(struct prof_pool *p)
{
    size_t n = 0;
    for (int i = 0; i < PROF_POOL_SLOTS; i++)
        n += atomic_load_explicit(&p->slots[i].state, memory_order_acquire) == PROF_SLOT_CUPTI;
    return n;
}

void prof_pool_release(struct prof_pool *p)
{
    for (int i = 0; i < PROF_POOL_SLOTS; i++) {
        free(atomic_load_explicit(&p->slots[i].buf, memory_order_relaxed));
        atomic_store_explicit(&p->slots[i].buf, NULL, memory_order_relaxed);
        atomic_store_explicit(&p->slots[i].state, PROF_SLOT_EMPTY, memory_order_relaxed);
    }
    atomic_store(&p->allocated, 0);
}
