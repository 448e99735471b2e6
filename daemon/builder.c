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
#include "daemon/blobs.h"
#include "daemon/build_queue.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/failpoint.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/model_blob.h"
#include "daemon/store.h"
#include "daemon/workers.h"
#include "common/cancel.h"
#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/trace.h"
#include "common/banned.h"

/* Largest built model's blob read back (its memory is the model's). */
#define MODEL_BLOB_MAX_LOAD ((size_t)1 << 40)

/* Why a build stops before its end: its model was deleted, or its lease
 * lost (through any replica), or the daemon stops (its drain timed out). */
enum { BUILD_GOING, BUILD_CANCELLED, BUILD_INTERRUPTED };

struct slot {
    char id[API_ID_MAX]; /* "" when idle */
    double progress;
    int waiting;  /* taken from the queue, not yet admitted */
    int has_turn; /* holds the admission turn */
    /* BUILD_GOING, or why its build stops: the cancel flag of its worker
     * (common/cancel.h), which the build's loops and threads obey */
    atomic_int cancel;
};

struct worker_arg {
    struct builder *b;
    struct slot *slot;
};

struct builder {
    struct builder_env env;
    pthread_mutex_t mu;
    pthread_cond_t work, idle, tick;
    size_t cap; /* max-queued-builds: models building in the catalog */
    unsigned workers, running, waiting;
    atomic_int stopping; /* read without mu by admission_wait's stop */
    int kicked;          /* a build was submitted since the workers last looked */
    int claim_failing;   /* the last claim failed (logged once until one works) */
    /* admission: one worker at a time holds the turn, from taking the
     * queue's head until that build is admitted (or fails), so builds start
     * in the order they were queued */
    int turn_taken;
    pthread_t *threads;
    unsigned started;
    pthread_t lease_thread;
    int lease_started, lease_stop;
    struct slot *slots;
    struct worker_arg *args;
    /* builder_counts: the catalog's waiting builds, as counted at
     * counted_at (metrics_clock() seconds; 0: never) */
    int64_t counted_waiting;
    double counted_at;
};

/* How long builder_counts reuses the catalog's count: /healthz and
 * /metrics run no query per probe. */
#define COUNTS_FRESH_S 1.0

/* The graph options model m is built with: the defaults, its rank
 * folding and its steps. */
static int graph_opts(const struct api_model *m, struct model_graph_opts *go, struct sc_error *err)
{
    model_graph_opts_default(go);
    if (m->fold >= 0)
        go->fold_over = m->fold ? 0 : SIZE_MAX;
    return m->steps ? model_graph_parse_steps(m->steps, go, err) : SC_OK;
}

/* A model's traces and build options from the catalog, built, with at
 * most reps_max representatives when folded (0: any number). */
static int build_from_catalog(struct builder *b, const char *id, const struct api_model *m, size_t reps_max,
                              built_progress_fn progress, void *pctx, struct built_model **out,
                              struct sc_error *err)
{
    struct model_load_opts opts = *b->env.load;
    struct model_graph_opts go;
    struct api_trace *traces = NULL;
    size_t n = 0;
    int rc = store_model_traces(b->env.store, id, &traces, &n, err);
    if (rc == SC_OK && (rc = graph_opts(m, &go, err)) == SC_OK) {
        go.fold_reps_max = reps_max;
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
    while (fp_armed("build.progress") && !atomic_load(&p->slot->cancel)) { /* tests: held until cancelled */
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Give up the admission turn (with b->mu held). */
static void end_turn(struct builder *b, struct slot *slot)
{
    if (slot->waiting) {
        slot->waiting = 0;
        b->waiting--;
    }
    if (slot->has_turn) {
        slot->has_turn = 0;
        b->turn_taken = 0;
        pthread_cond_broadcast(&b->work);
    }
}

/* admission_wait's stop: the builder stops, or this build is cancelled */
static int build_stops(void *ctx)
{
    const struct worker_arg *wa = ctx;
    return atomic_load(&wa->b->stopping) || atomic_load(&wa->slot->cancel);
}

/* The build's memory estimate against the daemon's budget (admission.h):
 * SC_OK once it is admitted (*need reserved; *reps_max the representatives
 * it was estimated with, 0 when not folded), SC_ELIMIT when it can never
 * fit, another error when it cannot be estimated; SC_EEXIST when the
 * builder stops while it waits (the model stays `building` for the next
 * start) or the build is cancelled. unfolded: estimated as if no rank
 * folded (a build that folded to more representatives than estimated,
 * again). */
static int admit(struct builder *b, struct slot *slot, const struct api_model *m, int unfolded, uint64_t *need,
                 size_t *reps_max, struct sc_error *err)
{
    struct worker_arg wa = {b, slot};
    struct api_trace *traces = NULL;
    struct model_graph_opts go;
    struct built_estimate est = {0};
    uint64_t in_use, budget;
    size_t n = 0;
    char what[160], held[64] = "", ranks[64] = "";
    int rc = store_model_traces(b->env.store, slot->id, &traces, &n, err);
    if (rc == SC_OK && (rc = graph_opts(m, &go, err)) == SC_OK) {
        if (unfolded)
            go.fold_over = SIZE_MAX;
        rc = built_model_estimate(traces, n, b->env.blobs, b->env.load, &go, &est, err);
    }
    free(traces);
    *need = est.bytes;
    *reps_max = est.reps_max;
    if (est.reps_max) {
        snprintf(held, sizeof held, " of its %zu largest ranks (folded)", est.reps_max);
        snprintf(ranks, sizeof ranks, ", plus %u KiB for each of its %zu ranks", BUILT_BYTES_PER_FOLDED_RANK >> 10, n);
    }
    admission_counts(b->env.admission, &in_use, &budget);
    if (rc == SC_OK && *need > budget)
        rc = sc_error_set(err, SC_ELIMIT,
                          "the build needs an estimated %.1f MiB (%llu events%s at %d bytes each, %d "
                          "more each for those of the traces loading at once, plus %.0f MiB%s), more "
                          "than the daemon's memory budget, %.1f MiB (memory-budget): it "
                          "can never run here",
                          (double)*need / 1048576.0, (unsigned long long)est.held_events, held,
                          BUILT_BYTES_PER_EVENT, BUILT_BYTES_PER_LOADING_EVENT,
                          (double)BUILT_BYTES_FIXED / 1048576.0, ranks, (double)budget / 1048576.0);
    snprintf(what, sizeof what, "the build of model %s", slot->id);
    if (rc == SC_OK)
        rc = admission_wait(b->env.admission, *need, what, build_stops, &wa, err);
    pthread_mutex_lock(&b->mu);
    end_turn(b, slot);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

static void release(struct builder *b, uint64_t need)
{
    admission_release(b->env.admission, need);
}

/* The built model's blob (model_blob.h), for every replica to load: its
 * name and size, and the model it is written from. */
struct built_blob {
    struct blob_store *bs;
    const struct built_model *bm;
    size_t n;
    char sha[DIGEST_HEX_LEN + 1];
};

static int store_blob(struct builder *b, const struct built_model *bm, struct built_blob *bb, struct sc_error *err)
{
    bb->bs = b->env.blobs;
    bb->bm = bm;
    int rc = model_blob_put(bm, bb->bs, bb->sha, &bb->n, err);
    if (rc)
        sc_error_prefix(err, "storing the built model");
    return rc;
}

/* bq_finish's place, under the lock on the blob's digest: its file written
 * again when another replica removed it since store_blob wrote it (an
 * identical built model's blob, its model deleted meanwhile). */
static int place_blob(void *ctx, struct sc_error *err)
{
    struct built_blob *bb = ctx;
    char again[DIGEST_HEX_LEN + 1];
    size_t n;
    if (blob_exists(bb->bs, bb->sha))
        return SC_OK;
    log_info("build", "blob=%s event=put_again msg=\"removed by another replica since it was written\"", bb->sha);
    return model_blob_put(bb->bm, bb->bs, again, &n, err);
}

/* Publish a build's outcome under its lease: the catalog row, then the
 * model in this replica's cache. *kept 0 when the lease was lost (another
 * replica took the build, or the model was deleted): nothing published. */
static int publish(struct builder *b, const char *id, int rc, struct built_model *bm, const char *summary,
                   struct built_blob *bb, struct sc_error *err, int *kept)
{
    struct sc_error e;
    int saved;
    if (rc == SC_OK)
        fp_hold("build.publishing", 2000);
    pthread_mutex_lock(b->env.publish_mu);
    if (rc == SC_OK)
        saved = bq_finish(b->env.store, id, b->env.owner, API_MODEL_READY, NULL, summary, bb->sha, bb->n, place_blob,
                          bb, kept, &e);
    else
        saved = bq_finish(b->env.store, id, b->env.owner, API_MODEL_FAILED, err->msg, NULL, NULL, 0, NULL, NULL,
                          kept, &e);
    if (rc == SC_OK && saved == SC_OK && *kept)
        cache_put(b->env.cache, id, bm, built_model_bytes(bm), NULL);
    pthread_mutex_unlock(b->env.publish_mu);
    if (saved)
        log_error("build", "model=%s event=not_saved msg=\"%s\"", id, e.msg);
    return saved;
}

/* A build cancelled by a shutdown: its model `interrupted` under its
 * lease, with the progress it had made. */
static void interrupt(struct builder *b, struct slot *slot, const char *id, double dt)
{
    struct sc_error e;
    char why[200];
    int kept = 0;
    pthread_mutex_lock(&b->mu);
    double progress = slot->progress;
    pthread_mutex_unlock(&b->mu);
    snprintf(why, sizeof why, "the daemon stopped during the build: POST /v1/models/%s/resume builds it again", id);
    if (bq_interrupt(b->env.store, id, b->env.owner, progress, why, &kept, &e))
        log_error("build", "model=%s event=not_saved msg=\"%s\"", id, e.msg);
    else if (kept)
        log_warn("build", "model=%s event=interrupted ms=%.1f progress=%.3f msg=\"the drain timed out: "
                          "POST /v1/models/%s/resume builds it again\"", id, dt * 1e3, progress, id);
}

static void build_one(struct builder *b, struct slot *slot)
{
    struct progress_ctx pc = {b, slot};
    struct api_model m;
    struct built_model *bm = NULL;
    struct sc_error err, e;
    char *summary = NULL;
    uint64_t need = 0;
    double t0 = metrics_clock();
    int rc, kept = 0;

    if ((rc = store_model_get(b->env.store, slot->id, &m, &err))) {
        if (rc != SC_ENOTFOUND)
            log_error("build", "model=%s event=lookup_failed msg=\"%s\"", slot->id, err.msg);
        return; /* deleted before it was built: nothing to do */
    }
    if (m.status != API_MODEL_BUILDING) {
        api_model_release(&m);
        return;
    }
    size_t reps_max = 0;
    for (int unfolded = 0;; unfolded = 1) {
        rc = admit(b, slot, &m, unfolded, &need, &reps_max, &err);
        if (rc == SC_EEXIST) { /* stopping: the next claim builds it (or cancelled: gone) */
            if (bq_release(b->env.store, m.id, b->env.owner, &e))
                log_warn("build", "model=%s event=lease_not_released msg=\"%s\"", m.id, e.msg);
            api_model_release(&m);
            return;
        }
        if (rc) {
            need = 0;
            break;
        }
        log_info("build", "model=%s job=%s event=start ranks=%lld estimate=%llu reps_max=%zu replica=%s", m.id,
                 m.job, (long long)m.n_ranks, (unsigned long long)need, reps_max, b->env.owner);
        rc = build_from_catalog(b, slot->id, &m, reps_max, on_progress, &pc, &bm, &err);
        fp_hit("build.after_load");
        if (rc != SC_ELIMIT || !reps_max)
            break;
        /* its ranks folded to more representatives than estimated: again,
         * estimated and admitted as if none folded */
        log_info("build", "model=%s event=refold msg=\"%s\"", m.id, err.msg);
        release(b, need);
        need = 0;
    }
    if (rc == SC_OK)
        rc = api_model_summary(est_model_job(built_model_opened(bm)), &summary, &err);
    if (rc == SC_OK && sc_cancelled()) /* nor is its blob written */
        rc = sc_error_set(&err, SC_ECANCELED, "called off");
    struct built_blob bb = {0};
    if (rc == SC_OK)
        rc = store_blob(b, bm, &bb, &err);
    int why = rc == SC_ECANCELED ? atomic_load(&slot->cancel) : BUILD_GOING;
    double dt;
    if (why == BUILD_GOING && publish(b, m.id, rc, bm, summary, &bb, &err, &kept) == SC_OK &&
        kept && rc == SC_OK)
        bm = NULL; /* the cache has it */

    dt = metrics_clock() - t0;
    if (why == BUILD_GOING && !kept) /* deleted after its last check: cancelled all the same */
        why = atomic_load(&slot->cancel);
    if (why == BUILD_INTERRUPTED)
        interrupt(b, slot, m.id, dt);
    else if (why == BUILD_CANCELLED)
        log_info("build", "model=%s event=cancelled ms=%.1f msg=\"the model was deleted, or its lease lost: the "
                          "build stopped, nothing published\"", m.id, dt * 1e3);
    else if (!kept)
        log_warn("build", "model=%s event=lease_lost ms=%.1f msg=\"another replica took the build, or the "
                          "model was deleted: its result is dropped\"",
                 m.id, dt * 1e3);
    else {
        metrics_build(b->env.metrics, rc == SC_OK, dt);
        if (rc == SC_OK)
            log_info("build", "model=%s event=ready ms=%.1f", m.id, dt * 1e3);
        else {
            char q[600];
            log_warn("build", "model=%s event=failed ms=%.1f status=%s msg=\"%s\"", m.id, dt * 1e3,
                     sc_status_name(err.code), log_quote(err.msg, q, sizeof q));
        }
    }
    built_model_free(bm);
    free(summary);
    api_model_release(&m);
    if (need)
        release(b, need);
}

/* Take the next build from the catalog's queue into slot (with b->mu held,
 * and the admission turn): 1 when one was taken. */
static int claim(struct builder *b, struct slot *slot)
{
    char id[API_ID_MAX];
    struct sc_error err;
    pthread_mutex_unlock(&b->mu);
    int got = bq_claim(b->env.store, b->env.owner, id, &err);
    pthread_mutex_lock(&b->mu);
    if (got < 0 && !b->claim_failing)
        log_warn("build", "event=claim_failed msg=\"%s\"", err.msg);
    b->claim_failing = got < 0;
    if (got <= 0)
        return 0;
    memcpy(slot->id, id, sizeof slot->id);
    slot->progress = 0;
    atomic_store(&slot->cancel, BUILD_GOING);
    slot->waiting = 1;
    b->running++;
    b->waiting++;
    return 1;
}

static void *worker(void *arg)
{
    struct worker_arg *wa = arg;
    struct builder *b = wa->b;
    struct slot *slot = wa->slot;
    workers_background(b->env.nice_delta);
    sc_cancel_attach(&slot->cancel); /* its builds' loops and threads stop when it is set */
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->stopping && b->turn_taken)
            pthread_cond_wait(&b->work, &b->mu);
        if (b->stopping)
            break;
        slot->has_turn = 1;
        b->turn_taken = 1;
        b->kicked = 0;
        if (!claim(b, slot)) {
            end_turn(b, slot);
            /* nothing to build: look again in BQ_POLL_S (another replica's
             * queue, an expired lease) or when a build is submitted here */
            struct timespec at = workers_deadline(BQ_POLL_S);
            while (!b->stopping && !b->kicked && !b->turn_taken)
                if (pthread_cond_timedwait(&b->work, &b->mu, &at) == ETIMEDOUT)
                    break;
            continue;
        }
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

/* Stop the build of model id, if one runs here (with b->mu held); why:
 * BUILD_CANCELLED or _INTERRUPTED. 1 when one did. */
static int cancel_locked(struct builder *b, const char *id, int why)
{
    int found = 0;
    for (unsigned i = 0; i < b->workers; i++)
        if (b->slots[i].id[0] && (!id || strcmp(b->slots[i].id, id) == 0)) {
            int going = BUILD_GOING;
            atomic_compare_exchange_strong(&b->slots[i].cancel, &going, why);
            found = 1;
        }
    if (found)
        admission_wake(b->env.admission); /* a build waiting for memory looks at its flag */
    return found;
}

/* Every BQ_POLL_S, look whether the builds taken here still hold their
 * leases (a model deleted through any replica loses its lease: its build
 * stops), and every BQ_RENEW_S renew them, writing their progress for the
 * other replicas to read. */
static void *lease_keeper(void *arg)
{
    struct builder *b = arg;
    char (*ids)[API_ID_MAX] = calloc(b->workers, sizeof *ids);
    double *progress = calloc(b->workers, sizeof *progress);
    double renewed = metrics_clock();
    pthread_mutex_lock(&b->mu);
    while (!b->lease_stop && ids && progress) {
        struct timespec at = workers_deadline(BQ_POLL_S);
        while (!b->lease_stop && pthread_cond_timedwait(&b->tick, &b->mu, &at) != ETIMEDOUT)
            ;
        if (b->lease_stop)
            break;
        size_t n = 0;
        for (unsigned i = 0; i < b->workers; i++)
            if (b->slots[i].id[0]) {
                memcpy(ids[n], b->slots[i].id, sizeof ids[n]);
                progress[n++] = b->slots[i].progress;
            }
        pthread_mutex_unlock(&b->mu);
        int renew = metrics_clock() - renewed >= BQ_RENEW_S - 0.5 * BQ_POLL_S;
        if (renew)
            renewed = metrics_clock();
        for (size_t i = 0; i < n; i++) {
            struct sc_error err;
            int kept = 0;
            int rc = renew ? bq_renew(b->env.store, ids[i], b->env.owner, progress[i], &kept, &err)
                           : bq_held(b->env.store, ids[i], b->env.owner, &kept, &err);
            if (rc) {
                log_warn("build", "model=%s event=lease_not_renewed msg=\"%s\"", ids[i], err.msg);
                continue;
            }
            pthread_mutex_lock(&b->mu);
            if (!kept && cancel_locked(b, ids[i], BUILD_CANCELLED))
                log_info("build", "model=%s event=lease_gone msg=\"the model was deleted, or its lease taken: "
                                  "the build stops\"", ids[i]);
            pthread_mutex_unlock(&b->mu);
        }
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    free(ids);
    free(progress);
    return NULL;
}

int builder_start(const struct builder_env *env, unsigned workers, size_t max_queued,
                  struct builder **out, struct sc_error *err)
{
    struct builder *b = calloc(1, sizeof *b);
    *out = NULL;
    if (!b || !(b->threads = calloc(workers, sizeof *b->threads)) ||
        !(b->slots = calloc(workers, sizeof *b->slots)) || !(b->args = calloc(workers, sizeof *b->args))) {
        if (b) {
            free(b->threads);
            free(b->slots);
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
    pthread_cond_init(&b->tick, NULL);
    int e = pthread_create(&b->lease_thread, NULL, lease_keeper, b);
    b->lease_started = e == 0;
    for (unsigned i = 0; i < workers && e == 0; i++) {
        b->args[i] = (struct worker_arg){b, &b->slots[i]};
        if ((e = pthread_create(&b->threads[i], NULL, worker, &b->args[i])) == 0)
            b->started++;
    }
    if (e) { /* pthread_create returns its error; errno is not set */
        builder_stop(b, 0);
        builder_free(b);
        return sc_error_set(err, SC_EIO, "cannot start build threads: %s", strerror(e));
    }
    *out = b;
    return SC_OK;
}

int builder_submit(struct builder *b, const char *id, struct sc_error *err)
{
    int64_t all = 0, waiting = 0;
    int rc = atomic_load(&b->stopping) ? sc_error_set(err, SC_ELIMIT, "shutting down")
                                       : bq_counts(b->env.store, &all, &waiting, err);
    /* the model's own row counts: it is already building in the catalog */
    if (rc == SC_OK && all > (int64_t)b->cap)
        rc = sc_error_set(err, SC_ELIMIT, "%lld builds are queued or running (max-queued-builds)",
                          (long long)all - 1);
    if (rc == SC_OK) {
        log_debug("build", "model=%s event=submitted", id);
        pthread_mutex_lock(&b->mu);
        b->kicked = 1;
        pthread_cond_signal(&b->work);
        pthread_mutex_unlock(&b->mu);
    }
    return rc;
}

int builder_progress(struct builder *b, const char *id, double *fraction, int *queued)
{
    struct sc_error err;
    int found = 0;
    pthread_mutex_lock(&b->mu);
    for (unsigned i = 0; i < b->workers && !found; i++)
        if (strcmp(b->slots[i].id, id) == 0) {
            *fraction = b->slots[i].progress;
            *queued = b->slots[i].waiting;
            found = 1;
        }
    pthread_mutex_unlock(&b->mu);
    /* building on another replica, or waiting for one to take it */
    return found ? 1 : bq_progress(b->env.store, id, fraction, queued, &err) == 1;
}

void builder_counts(struct builder *b, long *running, long *queued)
{
    struct sc_error err;
    int64_t all = 0, waiting;
    double now = metrics_clock();
    pthread_mutex_lock(&b->mu);
    int fresh = b->counted_at > 0 && now - b->counted_at < COUNTS_FRESH_S;
    waiting = b->counted_waiting;
    pthread_mutex_unlock(&b->mu);
    int counted = !fresh && bq_counts(b->env.store, &all, &waiting, &err) == SC_OK;
    if (!fresh && !counted)
        waiting = 0; /* the catalog does not answer: not kept */
    pthread_mutex_lock(&b->mu);
    if (counted) {
        b->counted_waiting = waiting;
        b->counted_at = now;
    }
    *running = (long)(b->running - b->waiting);
    *queued = (long)(b->waiting + (unsigned)waiting);
    pthread_mutex_unlock(&b->mu);
}

int builder_cancel(struct builder *b, const char *id)
{
    pthread_mutex_lock(&b->mu);
    int found = cancel_locked(b, id, BUILD_CANCELLED);
    pthread_mutex_unlock(&b->mu);
    if (found)
        log_info("build", "model=%s event=cancel msg=\"the model was deleted: the build stops\"", id);
    return found;
}

/* Wait (with b->mu held) until no build runs or the deadline passes: 1
 * when none runs. */
static int wait_idle(struct builder *b, const struct timespec *deadline)
{
    while (b->running > 0)
        if (pthread_cond_timedwait(&b->idle, &b->mu, deadline) == ETIMEDOUT)
            return b->running == 0;
    return 1;
}

int builder_stop(struct builder *b, double timeout_s)
{
    struct timespec deadline = workers_deadline(timeout_s);
    pthread_mutex_lock(&b->mu);
    b->stopping = 1; /* builds not taken stay `building` in the catalog */
    pthread_cond_broadcast(&b->work);
    admission_wake(b->env.admission); /* builds waiting for memory look at stopping */
    int all = wait_idle(b, &deadline);
    if (!all) { /* the drain timed out: what still builds stops, its model interrupted */
        log_warn("build", "event=drain_timeout builds=%u msg=\"cancelled: their models are interrupted\"",
                 b->running);
        cancel_locked(b, NULL, BUILD_INTERRUPTED);
        deadline = workers_deadline(BUILDER_CANCEL_GRACE_S);
        all = wait_idle(b, &deadline);
    }
    if (all) {
        b->lease_stop = 1;
        pthread_cond_broadcast(&b->tick);
    }
    pthread_mutex_unlock(&b->mu);
    if (!all)
        return 0;
    for (unsigned i = 0; i < b->started; i++)
        pthread_join(b->threads[i], NULL);
    b->started = 0;
    if (b->lease_started)
        pthread_join(b->lease_thread, NULL);
    b->lease_started = 0;
    return 1;
}

void builder_free(struct builder *b)
{
    if (!b)
        return;
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->idle);
    pthread_cond_destroy(&b->tick);
    pthread_mutex_destroy(&b->mu);
    free(b->threads);
    free(b->slots);
    free(b->args);
    free(b);
}

/* A ready model from its blob (model_blob.h): 1 when loaded, 0 when it
 * has none or it cannot be read (logged: the model is built again from
 * its traces), -1 on the catalog's error (in err). */
static int load_blob(struct builder *b, const char *id, const struct api_model *m, struct built_model **out,
                     struct sc_error *err)
{
    char sha[DIGEST_HEX_LEN + 1];
    struct model_load_opts opts = *b->env.load;
    struct sc_error e;
    void *p = NULL;
    size_t n = 0;
    int rc = bq_built_blob(b->env.store, id, sha, err);
    if (rc <= 0)
        return rc;
    opts.step_marker = m->step_marker;
    if ((rc = blob_get(b->env.blobs, sha, MODEL_BLOB_MAX_LOAD, &p, &n, &e)) == SC_OK)
        rc = model_blob_read(p, n, id, &opts, out, &e);
    free(p);
    if (rc) {
        char q[600];
        log_error("build", "model=%s event=blob_unreadable blob=%s msg=\"%s\" then=rebuild", id, sha,
                  log_quote(e.msg, q, sizeof q));
        return 0;
    }
    return 1;
}

int builder_load_ready(void *ctx, const char *id, void **value, size_t *bytes,
                       struct sc_error *err)
{
    struct builder *b = ctx;
    struct built_model *bm = NULL;
    struct api_model m;
    int rc = store_model_get(b->env.store, id, &m, err), from_blob = 0;
    if (rc)
        return rc;
    if (m.status != API_MODEL_READY)
        rc = sc_error_set(err, SC_EEXIST, "model '%s' is %s", id, api_model_status_name(m.status));
    else if ((from_blob = load_blob(b, id, &m, &bm, err)) < 0)
        rc = err->code;
    else if (from_blob || (rc = build_from_catalog(b, id, &m, 0, NULL, NULL, &bm, err)) == SC_OK) {
        *value = bm;
        *bytes = built_model_bytes(bm);
        log_info("build", "model=%s event=reloaded from=%s bytes=%zu", id, from_blob ? "blob" : "traces", *bytes);
    }
    api_model_release(&m);
    return rc;
}
