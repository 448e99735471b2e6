/* daemon/builder.c: the build queue and its workers (builder.h). */
#include "daemon/builder.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/encode.h"
#include "daemon/admission.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/failpoint.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/store.h"
#include "daemon/workers.h"
#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/trace.h"
#include "common/banned.h"

struct slot {
    char id[API_ID_MAX]; /* "" when idle */
    double progress;
    int waiting; /* taken from the queue, not yet admitted */
};

struct builder {
    struct builder_env env;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    char (*queue)[API_ID_MAX]; /* ring */
    size_t cap, head, n;
    unsigned workers, running, waiting;
    atomic_int stopping; /* read without mu by admission_wait's stop */
    /* admission: one worker at a time holds the turn, from taking the
     * queue's head until that build is admitted (or fails), so builds start
     * in the order they were queued */
    int turn_taken;
    pthread_t *threads;
    unsigned started;
    struct slot *slots;
};

/* A model's traces and build options from the catalog, built. */
static int build_from_catalog(struct builder *b, const char *id, const struct api_model *m,
                              built_progress_fn progress, void *pctx, struct built_model **out,
                              struct sc_error *err)
{
    struct model_load_opts opts = *b->env.load;
    struct model_graph_opts go;
    struct api_trace *traces = NULL;
    size_t n = 0;
    int rc = store_model_traces(b->env.store, id, &traces, &n, err);
    model_graph_opts_default(&go);
    if (m->fold >= 0)
        go.fold_over = m->fold ? 0 : SIZE_MAX;
    if (rc == SC_OK && (!m->steps || (rc = model_graph_parse_steps(m->steps, &go, err)) == SC_OK)) {
        opts.step_marker = m->step_marker;
        rc = built_model_build(id, traces, n, b->env.blobs, &opts, &go, progress, pctx, out, err);
    }
    free(traces);
    return rc;
}

struct progress_ctx {
    struct builder *b;
    struct slot *slot;
};

static void on_progress(void *ctx, double f)
{
    struct progress_ctx *p = ctx;
    pthread_mutex_lock(&p->b->mu);
    p->slot->progress = f;
    pthread_mutex_unlock(&p->b->mu);
}

/* Give up the admission turn (with b->mu held). */
static void end_turn(struct builder *b, struct slot *slot)
{
    if (slot->waiting) {
        slot->waiting = 0;
        b->waiting--;
        b->turn_taken = 0;
        pthread_cond_broadcast(&b->work);
    }
}

static int builder_stopping(void *ctx)
{
    struct builder *b = ctx;
    return atomic_load(&b->stopping);
}

/* The build's memory estimate against the daemon's budget (admission.h):
 * SC_OK once it is admitted (*need reserved), SC_ELIMIT when it can never
 * fit, another error when it cannot be estimated; SC_EEXIST when the
 * builder stops while it waits (the model stays `building` for the next
 * start). */
static int admit(struct builder *b, struct slot *slot, uint64_t *need, struct sc_error *err)
{
    struct api_trace *traces = NULL;
    uint64_t events = 0, in_use, budget;
    size_t n = 0;
    char what[160];
    int rc = store_model_traces(b->env.store, slot->id, &traces, &n, err);
    if (rc == SC_OK)
        rc = built_model_estimate(traces, n, b->env.blobs, b->env.load, need, &events, err);
    free(traces);
    admission_counts(b->env.admission, &in_use, &budget);
    if (rc == SC_OK && *need > budget)
        rc = sc_error_set(err, SC_ELIMIT,
                          "the build needs an estimated %.1f MiB (%llu events at %d bytes each, %d "
                          "more each for those of the traces loading at once, plus %.0f MiB), more "
                          "than the daemon's memory budget, %.1f MiB (memory-budget): it "
                          "can never run here",
                          (double)*need / 1048576.0, (unsigned long long)events, BUILT_BYTES_PER_EVENT,
                          BUILT_BYTES_PER_LOADING_EVENT, (double)BUILT_BYTES_FIXED / 1048576.0,
                          (double)budget / 1048576.0);
    snprintf(what, sizeof what, "the build of model %s", slot->id);
    if (rc == SC_OK)
        rc = admission_wait(b->env.admission, *need, what, builder_stopping, b, err);
    pthread_mutex_lock(&b->mu);
    end_turn(b, slot);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

static void release(struct builder *b, uint64_t need)
{
    admission_release(b->env.admission, need);
}

static void build_one(struct builder *b, struct slot *slot)
{
    struct progress_ctx pc = {b, slot};
    struct api_model m;
    struct built_model *bm = NULL;
    struct sc_error err;
    char *summary = NULL;
    uint64_t need = 0;
    double t0 = metrics_clock();
    int rc;

    if ((rc = store_model_get(b->env.store, slot->id, &m, &err))) {
        if (rc != SC_ENOTFOUND)
            log_error("build", "model=%s event=lookup_failed msg=\"%s\"", slot->id, err.msg);
        return; /* deleted before it was built: nothing to do */
    }
    if (m.status != API_MODEL_BUILDING) {
        api_model_release(&m);
        return;
    }
    rc = admit(b, slot, &need, &err);
    if (rc == SC_EEXIST) { /* stopping: built at the next start */
        api_model_release(&m);
        return;
    }
    if (rc == SC_OK) {
        log_info("build", "model=%s job=%s event=start ranks=%lld estimate=%llu", m.id, m.job,
                 (long long)m.n_ranks, (unsigned long long)need);
        rc = build_from_catalog(b, slot->id, &m, on_progress, &pc, &bm, &err);
        fp_hit("build.after_load");
    } else
        need = 0;
    if (rc == SC_OK)
        rc = api_model_summary(est_model_job(built_model_opened(bm)), &summary, &err);

    pthread_mutex_lock(b->env.publish_mu);
    int saved = rc == SC_OK
                    ? store_model_finish(b->env.store, m.id, API_MODEL_READY, NULL, summary, &err)
                    : store_model_finish(b->env.store, m.id, API_MODEL_FAILED, err.msg, NULL, NULL);
    if (rc == SC_OK && saved == SC_OK) {
        cache_put(b->env.cache, m.id, bm, built_model_bytes(bm), NULL);
        bm = NULL;
    }
    pthread_mutex_unlock(b->env.publish_mu);

    double dt = metrics_clock() - t0;
    metrics_build(b->env.metrics, rc == SC_OK, dt);
    if (rc == SC_OK)
        log_info("build", "model=%s event=ready ms=%.1f", m.id, dt * 1e3);
    else {
        char q[600];
        log_warn("build", "model=%s event=failed ms=%.1f status=%s msg=\"%s\"", m.id, dt * 1e3,
                 sc_status_name(err.code), log_quote(err.msg, q, sizeof q));
    }
    built_model_free(bm);
    free(summary);
    api_model_release(&m);
    if (need)
        release(b, need);
}

static void *worker(void *arg)
{
    struct builder *b = arg;
    workers_background(b->env.nice_delta);
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->stopping && (b->n == 0 || b->turn_taken))
            pthread_cond_wait(&b->work, &b->mu);
        if (b->stopping)
            break;
        struct slot *slot = NULL;
        for (unsigned i = 0; i < b->workers && !slot; i++)
            if (!b->slots[i].id[0])
                slot = &b->slots[i];
        memcpy(slot->id, b->queue[b->head], sizeof slot->id);
        slot->progress = 0;
        slot->waiting = 1;
        b->turn_taken = 1;
        b->head = (b->head + 1) % b->cap;
        b->n--;
        b->running++;
        b->waiting++;
        pthread_mutex_unlock(&b->mu);

        build_one(b, slot);

        pthread_mutex_lock(&b->mu);
        end_turn(b, slot); /* when it ended before admission */
        slot->id[0] = '\0';
        b->running--;
        pthread_cond_broadcast(&b->idle);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int builder_start(const struct builder_env *env, unsigned workers, size_t max_queued,
                  struct builder **out, struct sc_error *err)
{
    struct builder *b = calloc(1, sizeof *b);
    *out = NULL;
    if (!b || !(b->queue = calloc(max_queued, sizeof *b->queue)) ||
        !(b->threads = calloc(workers, sizeof *b->threads)) ||
        !(b->slots = calloc(workers, sizeof *b->slots))) {
        if (b) {
            free(b->queue);
            free(b->threads);
            free(b);
        }
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    b->env = *env;
    b->cap = max_queued;
    b->workers = workers;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->work, NULL);
    pthread_cond_init(&b->idle, NULL);
    for (unsigned i = 0; i < workers; i++) {
        int e = pthread_create(&b->threads[i], NULL, worker, b);
        if (e) { /* pthread_create returns its error; errno is not set */
            b->workers = i;
            builder_stop(b, 0);
            builder_free(b);
            return sc_error_set(err, SC_EIO, "cannot start build threads: %s", strerror(e));
        }
        b->started++;
    }
    *out = b;
    return SC_OK;
}

int builder_submit(struct builder *b, const char *id, struct sc_error *err)
{
    int rc = SC_OK;
    pthread_mutex_lock(&b->mu);
    /* running builds count against the bound too */
    if (b->stopping)
        rc = sc_error_set(err, SC_ELIMIT, "shutting down");
    else if (b->n + b->running >= b->cap)
        rc = sc_error_set(err, SC_ELIMIT, "%zu builds are queued or running (max-queued-builds)",
                          b->n + b->running);
    else {
        snprintf(b->queue[(b->head + b->n) % b->cap], API_ID_MAX, "%s", id);
        b->n++;
        pthread_cond_signal(&b->work);
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int builder_progress(struct builder *b, const char *id, double *fraction, int *queued)
{
    int found = 0;
    pthread_mutex_lock(&b->mu);
    for (unsigned i = 0; i < b->workers && !found; i++)
        if (strcmp(b->slots[i].id, id) == 0) {
            *fraction = b->slots[i].progress;
            *queued = b->slots[i].waiting;
            found = 1;
        }
    for (size_t i = 0; i < b->n && !found; i++)
        if (strcmp(b->queue[(b->head + i) % b->cap], id) == 0) {
            *fraction = 0;
            *queued = 1;
            found = 1;
        }
    pthread_mutex_unlock(&b->mu);
    return found;
}

void builder_counts(struct builder *b, long *running, long *queued)
{
    pthread_mutex_lock(&b->mu);
    *running = (long)(b->running - b->waiting);
    *queued = (long)(b->n + b->waiting);
    pthread_mutex_unlock(&b->mu);
}

int builder_stop(struct builder *b, double timeout_s)
{
    struct timespec deadline = workers_deadline(timeout_s);
    int all = 1;
    pthread_mutex_lock(&b->mu);
    b->stopping = 1;
    b->n = 0; /* queued builds stay `building` in the catalog */
    pthread_cond_broadcast(&b->work);
    admission_wake(b->env.admission); /* builds waiting for memory look at stopping */
    while (b->running > 0 && all)
        if (pthread_cond_timedwait(&b->idle, &b->mu, &deadline) == ETIMEDOUT)
            all = b->running == 0;
    pthread_mutex_unlock(&b->mu);
    if (!all)
        return 0;
    for (unsigned i = 0; i < b->started; i++)
        pthread_join(b->threads[i], NULL);
    b->started = 0;
    return 1;
}

void builder_free(struct builder *b)
{
    if (!b)
        return;
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->idle);
    pthread_mutex_destroy(&b->mu);
    free(b->queue);
    free(b->threads);
    free(b->slots);
    free(b);
}

int builder_load_ready(void *ctx, const char *id, void **value, size_t *bytes,
                       struct sc_error *err)
{
    struct builder *b = ctx;
    struct built_model *bm = NULL;
    struct api_model m;
    int rc = store_model_get(b->env.store, id, &m, err);
    if (rc)
        return rc;
    if (m.status != API_MODEL_READY)
        rc = sc_error_set(err, SC_EEXIST, "model '%s' is %s", id, api_model_status_name(m.status));
    else if ((rc = build_from_catalog(b, id, &m, NULL, NULL, &bm, err)) == SC_OK) {
        *value = bm;
        *bytes = built_model_bytes(bm);
        log_info("build", "model=%s event=reloaded bytes=%zu", id, *bytes);
    }
    api_model_release(&m);
    return rc;
}
