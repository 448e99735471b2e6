/* daemon/admission.c: the daemon-wide memory budget (admission.h). */
#include "daemon/admission.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "daemon/log.h"
#include "common/banned.h"

struct admission {
    pthread_mutex_t mu;
    pthread_cond_t released;
    uint64_t budget, in_use;
};

int admission_new(uint64_t budget, struct admission **out, struct sc_error *err)
{
    struct admission *a = calloc(1, sizeof *a);
    if (!a)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->released, NULL);
    a->budget = budget;
    *out = a;
    return SC_OK;
}

void admission_free(struct admission *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->released);
    free(a);
}

static int never(const struct admission *a, uint64_t need, const char *what, struct sc_error *err)
{
    return sc_error_set(err, SC_ELIMIT,
                        "%s needs an estimated %.1f MiB, more than the daemon's memory budget, %.1f MiB "
                        "(memory-budget): it can never run here",
                        what, (double)need / 1048576.0, (double)a->budget / 1048576.0);
}

uint64_t admission_bytes(double predicted)
{
    return predicted < 1.8e19 ? (uint64_t)predicted : UINT64_MAX;
}

enum admission_verdict admission_try(struct admission *a, uint64_t need, const char *what, struct sc_error *err)
{
    enum admission_verdict v = ADMISSION_OK;
    if (need > a->budget) {
        never(a, need, what, err);
        return ADMISSION_NEVER;
    }
    pthread_mutex_lock(&a->mu);
    if (a->in_use + need > a->budget) {
        sc_error_set(err, SC_ELIMIT,
                     "%s needs an estimated %.1f MiB; %.1f MiB of the %.1f MiB memory budget is taken by work "
                     "running now: try again later",
                     what, (double)need / 1048576.0, (double)a->in_use / 1048576.0, (double)a->budget / 1048576.0);
        v = ADMISSION_BUSY;
    } else {
        a->in_use += need;
        assert(a->in_use <= a->budget);
    }
    pthread_mutex_unlock(&a->mu);
    return v;
}

int admission_wait(struct admission *a, uint64_t need, const char *what, int (*stop)(void *ctx), void *ctx,
                   struct sc_error *err)
{
    int rc = SC_OK;
    if (need > a->budget)
        return never(a, need, what, err);
    pthread_mutex_lock(&a->mu);
    if (a->in_use + need > a->budget)
        log_info("admission", "event=waiting_for_memory what=\"%s\" need=%llu in_use=%llu budget=%llu", what,
                 (unsigned long long)need, (unsigned long long)a->in_use, (unsigned long long)a->budget);
    while (!(stop && stop(ctx)) && a->in_use + need > a->budget)
        pthread_cond_wait(&a->released, &a->mu);
    if (stop && stop(ctx))
        rc = SC_EEXIST;
    else
        a->in_use += need;
    assert(a->in_use <= a->budget);
    pthread_mutex_unlock(&a->mu);
    return rc;
}

void admission_release(struct admission *a, uint64_t need)
{
    pthread_mutex_lock(&a->mu);
    assert(a->in_use >= need); /* no more given back than was admitted */
    a->in_use -= need;
    pthread_cond_broadcast(&a->released);
    pthread_mutex_unlock(&a->mu);
}

void admission_wake(struct admission *a)
{
    pthread_mutex_lock(&a->mu);
    pthread_cond_broadcast(&a->released);
    pthread_mutex_unlock(&a->mu);
}

void admission_counts(struct admission *a, uint64_t *in_use, uint64_t *budget)
{
    pthread_mutex_lock(&a->mu);
    *in_use = a->in_use;
    *budget = a->budget;
    pthread_mutex_unlock(&a->mu);
}
