/* tests/alloc_fail.c: the wrapped allocator behind alloc_fail.h. Blocks
 * are tracked in an open-addressed set of pointers under one mutex (the
 * graph build allocates from several threads). */
#include "tests/alloc_fail.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/banned.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

#define SET_SLOTS (1u << 20) /* tracked blocks at most, a power of two */
#define TOMB ((void *)1)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int armed, env_read, reached;
static unsigned long fail_at, count;
static void **set;    /* from __real_calloc, never freed while armed */
static size_t *sizes; /* of set[i] */
static size_t live, live_bytes, peak_bytes;
static int lost; /* a block did not fit the set */

static size_t slot_of(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 40) & (SET_SLOTS - 1);
}

static void track(void *p)
{
    if (!set || !p)
        return;
    for (size_t i = slot_of(p), k = 0; k < SET_SLOTS; i = (i + 1) & (SET_SLOTS - 1), k++)
        if (!set[i] || set[i] == TOMB) {
            set[i] = p;
            sizes[i] = malloc_usable_size(p);
            live++;
            live_bytes += sizes[i];
            if (live_bytes > peak_bytes)
                peak_bytes = live_bytes;
            return;
        }
    lost = 1;
}

static void untrack(void *p)
{
    if (!set || !p)
        return;
    for (size_t i = slot_of(p), k = 0; k < SET_SLOTS && set[i]; i = (i + 1) & (SET_SLOTS - 1), k++)
        if (set[i] == p) {
            set[i] = TOMB;
            live--;
            live_bytes -= sizes[i];
            return;
        }
}

/* Whether this allocation fails; counts it. Called with mu held. */
static int fails(void)
{
    if (!env_read) {
        const char *v = getenv("STEPCAST_FAIL_ALLOC");
        env_read = 1;
        if (v && *v) {
            fail_at = strtoul(v, NULL, 10);
            armed = fail_at > 0;
        }
    }
    if (!armed)
        return 0;
    if (++count == fail_at) {
        reached = 1;
        return 1;
    }
    return 0;
}

#define WRAP(call)                                                                                           \
    do {                                                                                                               \
        pthread_mutex_lock(&mu);                                                                                       \
        if (fails()) {                                                                                                 \
            pthread_mutex_unlock(&mu);                                                                                 \
            errno = ENOMEM;                                                                                            \
            return NULL;                                                                                               \
        }                                                                                                              \
        pthread_mutex_unlock(&mu);                                                                                     \
        void *p_ = (call);                                                                                             \
        if (p_) {                                                                                                      \
            pthread_mutex_lock(&mu);                                                                                   \
            track(p_);                                                                                                 \
            pthread_mutex_unlock(&mu);                                                                                 \
        }                                                                                                              \
        return p_;                                                                                                     \
    } while (0)

void *__wrap_malloc(size_t n) { WRAP(__real_malloc(n)); }
void *__wrap_calloc(size_t k, size_t n) { WRAP(__real_calloc(k, n)); }
void *__wrap_aligned_alloc(size_t a, size_t n) { WRAP(__real_aligned_alloc(a, n)); }
char *__wrap_strdup(const char *s) { WRAP(__real_strdup(s)); }
char *__wrap_strndup(const char *s, size_t n) { WRAP(__real_strndup(s, n)); }

void *__wrap_realloc(void *p, size_t n)
{
    pthread_mutex_lock(&mu);
    if (fails()) {
        pthread_mutex_unlock(&mu);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_unlock(&mu);
    void *q = __real_realloc(p, n);
    if (q) {
        pthread_mutex_lock(&mu);
        untrack(p);
        track(q);
        pthread_mutex_unlock(&mu);
    }
    return q;
}

void __wrap_free(void *p)
{
    if (p) {
        pthread_mutex_lock(&mu);
        untrack(p);
        pthread_mutex_unlock(&mu);
    }
    __real_free(p);
}

static void *json_alloc(size_t n)
{
    return __wrap_malloc(n);
}

static void json_release(void *p)
{
    __wrap_free(p);
}

void alloc_fail_arm(unsigned long n)
{
    pthread_mutex_lock(&mu);
    if (!set) {
        set = __real_calloc(SET_SLOTS, sizeof *set);
        sizes = __real_calloc(SET_SLOTS, sizeof *sizes);
    } else
        memset(set, 0, SET_SLOTS * sizeof *set);
    live = live_bytes = peak_bytes = 0;
    lost = 0;
    count = 0;
    reached = 0;
    fail_at = n;
    env_read = 1;
    armed = 1;
    pthread_mutex_unlock(&mu);
    json_set_alloc_funcs(json_alloc, json_release);
}

void alloc_fail_disarm(unsigned long *allocations, size_t *live_out, int *failed)
{
    pthread_mutex_lock(&mu);
    armed = 0;
    *allocations = count;
    *live_out = live;
    *failed = reached;
    if (set)
        memset(set, 0, SET_SLOTS * sizeof *set);
    live = live_bytes = peak_bytes = 0;
    pthread_mutex_unlock(&mu);
}

void alloc_fail_bytes(size_t *peak, size_t *now, int *complete)
{
    pthread_mutex_lock(&mu);
    *peak = peak_bytes;
    *now = live_bytes;
    *complete = !lost;
    pthread_mutex_unlock(&mu);
}

void alloc_fail_reset_peak(void)
{
    pthread_mutex_lock(&mu);
    peak_bytes = live_bytes;
    pthread_mutex_unlock(&mu);
}
