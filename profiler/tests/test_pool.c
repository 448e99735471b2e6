/* profiler/tests/test_pool.c: the buffer pool's states, single-threaded
 * (stress_pool.c runs it from many threads under ThreadSanitizer). */
#include <stdlib.h>
#include <string.h>

#include "profiler/bufpool.h"
#include "tests/check.h"
#include "common/banned.h"

TEST(prof_pool_lends_takes_and_reuses)
{
    static struct prof_pool p;
    size_t size = 0, valid = 0;
    uint8_t *got;
    prof_pool_init(&p, 1001, 2, 1);
    CHECK_EQ_INT(p.buf_size, 1008); /* a multiple of 8 */
    uint8_t *a = prof_pool_get(&p, &size), *b = prof_pool_get(&p, &size);
    CHECK(a && b && a != b);
    CHECK_EQ_INT(size, 1008);
    CHECK_EQ_INT((uintptr_t)a % 8, 0);
    CHECK_EQ_INT(prof_pool_outstanding(&p), 2);
    /* the cap is reached: CUPTI 27+ may be refused */
    CHECK(prof_pool_get(&p, &size) == NULL);
    CHECK_EQ_INT(size, 0);
    CHECK_EQ_INT(p.refused, 1);
    CHECK_EQ_INT(prof_pool_take(&p, &got, &valid), -1);
    memset(b, 7, 100);
    prof_pool_done(&p, b, 100);
    int i = prof_pool_take(&p, &got, &valid);
    CHECK(i >= 0);
    CHECK(got == b);
    CHECK_EQ_INT(valid, 100);
    CHECK_EQ_INT(got[99], 7);
    CHECK_EQ_INT(prof_pool_take(&p, &got, &valid), -1);
    prof_pool_give_back(&p, i);
    CHECK(prof_pool_get(&p, &size) == b); /* reused, not allocated */
    CHECK_EQ_INT(p.allocated, 2);
    prof_pool_release(&p);
}

TEST(prof_pool_lends_loose_buffers_to_old_cupti)
{
    static struct prof_pool p;
    size_t size = 0;
    prof_pool_init(&p, 64, 1, 0);
    uint8_t *a = prof_pool_get(&p, &size), *b = prof_pool_get(&p, &size);
    CHECK(a && b && a != b);
    CHECK_EQ_INT(p.loose, 1);
    prof_pool_done(&p, b, 40); /* discarded: over the cap */
    CHECK_EQ_INT(p.lost_bytes, 40);
    uint8_t *got;
    size_t valid;
    CHECK_EQ_INT(prof_pool_take(&p, &got, &valid), -1);
    prof_pool_done(&p, a, 8);
    CHECK(prof_pool_take(&p, &got, &valid) >= 0);
    prof_pool_release(&p);
}
