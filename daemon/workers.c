/* daemon/workers.c: the heavy work pool (workers.h). */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "daemon/workers.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cancel.h"
#include "common/banned.h"

struct job {
    workers_fn fn, then;
    void *ctx;
    enum workers_room room;
};

struct workers {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    struct job *queue; /* ring of every room's places: every reserved place fits */
    size_t cap, head, n;
    size_t places[WORKERS_ROOMS]; /* reserved, not yet done: at most max_places */
    size_t max_places[WORKERS_ROOMS];
    unsigned threads, started, running;
    unsigned answering; /* jobs past their place, in their `then` */
    int nice_delta, stopping;
    atomic_int cancel;
    pthread_t *tids;
};

void workers_background(int nice_delta)
{
    struct sched_param none = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
    /* Linux: PRIO_PROCESS with a thread id sets that thread's nice alone */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int now = getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && nice_delta > 0)
        setpriority(PRIO_PROCESS, tid, now + nice_delta > 19 ? 19 : now + nice_delta);
}

static void *worker(void *arg)
{
    struct workers *w = arg;
    workers_background(w->nice_delta);
    sc_cancel_attach(&w->cancel);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stopping && w->n == 0)
            pthread_cond_wait(&w->work, &w->mu);
        if (w->n == 0) /* stopping, nothing left */
            break;
        struct job j = w->queue[w->head];
        w->head = (w->head + 1) % w->cap;
        w->n--;
        w->running++;
        pthread_mutex_unlock(&w->mu);
        j.fn(j.ctx);
        pthread_mutex_lock(&w->mu);
        assert(w->running > 0 && j.room < WORKERS_ROOMS && w->places[j.room] > 0); /* its place reserved */
        w->running--;
        w->places[j.room]--;
        if (j.then) { /* the place given back first: whoever reads the answer finds it free */
            w->answering++;
            pthread_mutex_unlock(&w->mu);
            j.then(j.ctx);
            pthread_mutex_lock(&w->mu);
            w->answering--;
        }
        pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int workers_start(unsigned threads, size_t max_queued, size_t max_uploads, int nice_delta, struct workers **out,
                  struct sc_error *err)
{
    struct workers *w = calloc(1, sizeof *w);
    threads = threads ? threads : 1;
    *out = NULL;
    if (!w || !(w->queue = calloc(threads + max_queued + max_uploads, sizeof *w->queue)) ||
        !(w->tids = calloc(threads, sizeof *w->tids))) {
        if (w)
            free(w->queue);
        free(w);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    w->max_places[WORKERS_HEAVY] = threads + max_queued;
    w->max_places[WORKERS_UPLOAD] = max_uploads;
    w->cap = threads + max_queued + max_uploads;
    w->threads = threads;
    w->nice_delta = nice_delta;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->idle, NULL);
    for (unsigned i = 0; i < threads; i++) {
        int e = pthread_create(&w->tids[i], NULL, worker, w);
        if (e) { /* pthread_create returns its error; errno is not set */
            workers_free(w);
            return sc_error_set(err, SC_EIO, "cannot start worker threads: %s", strerror(e));
        }
        w->started++;
    }
    *out = w;
    return SC_OK;
}

int workers_reserve(struct workers *w, enum workers_room room, struct sc_error *err)
{
    int rc = SC_OK;
    pthread_mutex_lock(&w->mu);
    if (atomic_load(&w->cancel))
        rc = sc_error_set(err, SC_ECANCELED, "the server is shutting down");
    else if (w->places[room] >= w->max_places[room] && room == WORKERS_UPLOAD)
        rc = sc_error_set(err, SC_ELIMIT, "%zu uploads are being checked (max-uploads): try again later",
                          w->max_places[room]);
    else if (w->places[room] >= w->max_places[room])
        rc = sc_error_set(err, SC_ELIMIT,
                          "%u requests are computing and %zu wait for them (heavy-requests, heavy-queue): "
                          "try again later",
                          w->threads, w->max_places[room] - w->threads);
    else
        w->places[room]++;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void workers_submit(struct workers *w, enum workers_room room, workers_fn fn, workers_fn then, void *ctx)
{
    pthread_mutex_lock(&w->mu);
    /* submitted in a place reserved: the places bound the queue */
    assert(room < WORKERS_ROOMS && w->places[room] > 0 && w->n < w->cap);
    w->queue[(w->head + w->n) % w->cap] = (struct job){fn, then, ctx, room};
    w->n++;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
}

void workers_counts(struct workers *w, long *running, long *queued)
{
    pthread_mutex_lock(&w->mu);
    *running = (long)w->running;
    *queued = (long)w->n;
    pthread_mutex_unlock(&w->mu);
}

void workers_cancel(struct workers *w)
{
    atomic_store(&w->cancel, 1);
}

struct timespec workers_deadline(double timeout_s)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (timeout_s > 0) {
        long ns = t.tv_nsec + (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
        t.tv_sec += (time_t)timeout_s + ns / 1000000000;
        t.tv_nsec = ns % 1000000000;
    }
    return t;
}

int workers_wait_idle(struct workers *w, double timeout_s)
{
    struct timespec deadline = workers_deadline(timeout_s);
    pthread_mutex_lock(&w->mu);
    while (w->places[WORKERS_HEAVY] + w->places[WORKERS_UPLOAD] + w->answering > 0 &&
           pthread_cond_timedwait(&w->idle, &w->mu, &deadline) != ETIMEDOUT)
        ;
    int idle = w->places[WORKERS_HEAVY] + w->places[WORKERS_UPLOAD] + w->answering == 0;
    pthread_mutex_unlock(&w->mu);
    return idle;
}

void workers_free(struct workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    for (unsigned i = 0; i < w->started; i++)
        pthread_join(w->tids[i], NULL);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->mu);
    free(w->queue);
    free(w->tids);
    free(w);
}
