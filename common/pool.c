/* common/pool.c: one function over n items on several threads (pool.h). */
#include "common/pool.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cancel.h"
#include "common/banned.h"

#define MAX_THREADS 64

struct pool {
    size_t n;
    int (*fn)(void *ctx, size_t i, struct sc_error *err);
    void *ctx;
    struct sc_error *errs;
    int *rcs;
    atomic_size_t next;
    atomic_size_t first_failed; /* the lowest index that failed, or n */
    atomic_int *cancel;         /* the calling thread's (common/cancel.h) */
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    sc_cancel_attach(p->cancel);
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n || i > atomic_load(&p->first_failed))
            return NULL;
        assert(i < p->n);
        if (sc_cancelled())
            p->rcs[i] = sc_error_set(&p->errs[i], SC_ECANCELED, "called off");
        else
            p->rcs[i] = p->fn(p->ctx, i, &p->errs[i]);
        size_t f = atomic_load(&p->first_failed);
        while (p->rcs[i] && i < f && !atomic_compare_exchange_weak(&p->first_failed, &f, i))
            ;
    }
}

unsigned sc_pool_threads(unsigned threads)
{
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (unsigned)c : 1;
    }
    return threads > MAX_THREADS ? MAX_THREADS : threads;
}

int sc_parallel_for(size_t n, unsigned threads, int (*fn)(void *ctx, size_t i, struct sc_error *err),
                    void *ctx, struct sc_error *err)
{
    struct pool p = {.n = n, .fn = fn, .ctx = ctx, .cancel = sc_cancel_flag()};
    pthread_t tid[MAX_THREADS];
    unsigned nt = sc_pool_threads(threads), started = 0;
    int rc = SC_OK;

    if (n == 0)
        return SC_OK;
    if (nt > n)
        nt = (unsigned)n;
    assert(nt >= 1 && nt <= MAX_THREADS);
    p.errs = calloc(n, sizeof *p.errs);
    p.rcs = calloc(n, sizeof *p.rcs);
    if (!p.errs || !p.rcs) {
        free(p.errs);
        free(p.rcs);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    atomic_init(&p.next, 0);
    atomic_init(&p.first_failed, n);
    for (unsigned i = 1; i < nt; i++)
        if (pthread_create(&tid[started], NULL, worker, &p) == 0)
            started++;
    worker(&p);
    assert(started < nt);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    assert(atomic_load(&p.next) >= n || atomic_load(&p.first_failed) < n); /* every item run, or one failed */
    for (size_t i = 0; i < n; i++)
        if (p.rcs[i]) {
            if (err)
                *err = p.errs[i];
            rc = p.rcs[i];
            break;
        }
    free(p.errs);
    free(p.rcs);
    return rc;
}
