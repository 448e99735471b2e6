/* profiler/tests/stress_pool.c: the CUPTI buffer pool under concurrency,
 * built with -fsanitize=thread (profiler/module.mk).
 *
 * Threads play CUPTI: they ask for buffers (as threads making CUDA calls
 * do), fill them with a checkable pattern and complete them, some
 * themselves and some through a "worker" thread (CUPTI completes buffers
 * on its own threads). One consumer takes completed buffers, checks every
 * byte of the pattern and gives them back, as the flush thread does. Every
 * buffer completed must be taken exactly once with its content intact; no
 * data race may be reported. Prints `N passed, N failed`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/bufpool.h"
#include "common/banned.h"

enum { PRODUCERS = 6, ROUNDS = 4000, QUEUE = 64 };

struct scenario {
    const char *name;
    size_t max_buffers;
    int allow_null;
};

static struct prof_pool pool;
static atomic_ullong completed, taken, bad, bytes_done, bytes_taken;
static atomic_int producers_left;

/* buffers handed from producers to the worker, as CUPTI hands them internally */
static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;
static struct {
    uint8_t *buf;
    size_t valid;
} queue[QUEUE];
static int qhead, qlen, qclosed;

static void fill(uint8_t *buf, size_t n, uint32_t seed)
{
    memcpy(buf, &seed, sizeof seed);
    uint32_t len = (uint32_t)n;
    memcpy(buf + 4, &len, sizeof len);
    for (size_t i = 8; i < n; i++)
        buf[i] = (uint8_t)(seed * 31 + i);
}

static int intact(const uint8_t *buf, size_t valid)
{
    uint32_t seed, len;
    memcpy(&seed, buf, sizeof seed);
    memcpy(&len, buf + 4, sizeof len);
    if (len != valid)
        return 0;
    for (size_t i = 8; i < valid; i++)
        if (buf[i] != (uint8_t)(seed * 31 + i))
            return 0;
    return 1;
}

static void complete(uint8_t *buf, size_t valid, int loose)
{
    if (!loose) {
        atomic_fetch_add(&completed, 1);
        atomic_fetch_add(&bytes_done, valid);
    }
    prof_pool_done(&pool, buf, valid);
}

/* Whether buf is one of the pool's own buffers (not a loose one). */
static int in_pool(const uint8_t *buf)
{
    for (int i = 0; i < PROF_POOL_SLOTS; i++)
        if (atomic_load(&pool.slots[i].buf) == buf)
            return 1;
    return 0;
}

static void *producer(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        size_t size = 0;
        uint8_t *buf = prof_pool_get(&pool, &size);
        if (!buf)
            continue; /* refused: CUPTI drops the records */
        int loose = !in_pool(buf);
        size_t valid = 8 + (size_t)(r * 7 + id) % (size - 8);
        fill(buf, valid, (uint32_t)(id * 100000 + (uintptr_t)r));
        if (loose || r % 2) {
            complete(buf, valid, loose);
            continue;
        }
        pthread_mutex_lock(&qmu);
        while (qlen == QUEUE)
            pthread_cond_wait(&qcv, &qmu);
        queue[(qhead + qlen++) % QUEUE].buf = buf;
        queue[(qhead + qlen - 1) % QUEUE].valid = valid;
        pthread_cond_broadcast(&qcv);
        pthread_mutex_unlock(&qmu);
    }
    if (atomic_fetch_sub(&producers_left, 1) == 1) {
        pthread_mutex_lock(&qmu);
        qclosed = 1;
        pthread_cond_broadcast(&qcv);
        pthread_mutex_unlock(&qmu);
    }
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&qmu);
        while (!qlen && !qclosed)
            pthread_cond_wait(&qcv, &qmu);
        if (!qlen) {
            pthread_mutex_unlock(&qmu);
            return NULL;
        }
        uint8_t *buf = queue[qhead].buf;
        size_t valid = queue[qhead].valid;
        qhead = (qhead + 1) % QUEUE;
        qlen--;
        pthread_cond_broadcast(&qcv);
        pthread_mutex_unlock(&qmu);
        complete(buf, valid, 0);
    }
}

static atomic_int stop_consumer;

static void drain(void)
{
    uint8_t *buf;
    size_t valid;
    int i;
    while ((i = prof_pool_take(&pool, &buf, &valid)) >= 0) {
        if (!intact(buf, valid))
            atomic_fetch_add(&bad, 1);
        atomic_fetch_add(&taken, 1);
        atomic_fetch_add(&bytes_taken, valid);
        prof_pool_give_back(&pool, i);
    }
}

static void *consumer(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_consumer))
        drain();
    return NULL;
}

static int run(const struct scenario *s)
{
    pthread_t p[PRODUCERS], w, c;
    prof_pool_init(&pool, 4096, s->max_buffers, s->allow_null);
    atomic_store(&completed, 0);
    atomic_store(&taken, 0);
    atomic_store(&bad, 0);
    atomic_store(&bytes_done, 0);
    atomic_store(&bytes_taken, 0);
    atomic_store(&producers_left, PRODUCERS);
    atomic_store(&stop_consumer, 0);
    qhead = qlen = qclosed = 0;
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&w, NULL, worker, NULL);
    for (uintptr_t i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    pthread_join(w, NULL);
    atomic_store(&stop_consumer, 1);
    pthread_join(c, NULL);
    drain();
    int ok = atomic_load(&bad) == 0 && atomic_load(&taken) == atomic_load(&completed) &&
             atomic_load(&bytes_taken) == atomic_load(&bytes_done) && atomic_load(&completed) > 0 &&
             prof_pool_outstanding(&pool) == 0;
    printf("%s %-44s completed %llu taken %llu corrupt %llu refused %llu loose %llu\n",
           ok ? "ok  " : "FAIL", s->name, (unsigned long long)atomic_load(&completed),
           (unsigned long long)atomic_load(&taken), (unsigned long long)atomic_load(&bad),
           (unsigned long long)atomic_load(&pool.refused), (unsigned long long)atomic_load(&pool.loose));
    prof_pool_release(&pool);
    return ok;
}

int main(void)
{
    static const struct scenario scenarios[] = {
        {"prof_tsan_pool_plenty_of_buffers", PROF_POOL_SLOTS, 1},
        {"prof_tsan_pool_capped_refusing", 3, 1},
        {"prof_tsan_pool_capped_loose_buffers", 3, 0},
    };
    int passed = 0, failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (run(&scenarios[i]))
            passed++;
        else
            failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
