/* daemon/plans.c: the registry of running plans (plans.h). */
#include "daemon/plans.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/plan_json.h"
#include "daemon/admission.h"
#include "daemon/cache.h"
#include "daemon/failpoint.h"
#include "daemon/log.h"
#include "daemon/store.h"
#include "daemon/workers.h"
#include "estimator/whatif/whatif_size.h"
#include "model/job.h"
#include "common/cancel.h"
#include "common/banned.h"

struct run {
    struct plans *owner;
    char id[64];
    char *request;
    struct est_plan_request req;
    struct plans_eval pe;
    atomic_llong done, total;
    atomic_int cancel;
    int64_t saved_ns; /* when its progress was last saved */
    int held; /* plan.progress: 1 while its first report waits, 2 once read (under the mutex) */
};

struct plans {
    struct store *store;
    int nice_delta;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    struct run *running[PLANS_MAX_RUNNING];
};

void plans_eval_release(struct plans_eval *pe)
{
    whatif_plan_release(&pe->whatif);
    plan_bands_release(&pe->bands);
    if (pe->entry)
        cache_release(pe->cache, pe->entry);
}

int plans_new(struct store *store, int nice_delta, struct plans **out, struct sc_error *err)
{
    int64_t n;
    int rc = store_plans_interrupt(store, &n, err);
    if (rc)
        return rc;
    if (n)
        log_warn("plan", "event=interrupted plans=%lld msg=\"running when the daemon stopped; POST "
                         "/v1/plans/{id}/resume runs one again\"", (long long)n);
    struct plans *p = calloc(1, sizeof *p);
    if (!p)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    p->store = store;
    p->nice_delta = nice_delta;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->changed, NULL);
    *out = p;
    return SC_OK;
}

static int count_running(const struct plans *p)
{
    int n = 0;
    for (int i = 0; i < PLANS_MAX_RUNNING; i++)
        n += p->running[i] != NULL;
    return n;
}

/* Ask run r to stop (why: PLANS_CANCELLED or _INTERRUPTED): its long
 * loops at their next check, its search at the next progress report, a
 * wait for memory at once. */
static void cancel_run(struct run *r, int why)
{
    atomic_store(&r->cancel, why);
    if (r->pe.admission)
        admission_wake(r->pe.admission);
}

int plans_drain(struct plans *p, double timeout_s)
{
    struct timespec deadline = workers_deadline(timeout_s);
    pthread_mutex_lock(&p->mu);
    while (count_running(p) && pthread_cond_timedwait(&p->changed, &p->mu, &deadline) != ETIMEDOUT)
        ;
    int none = count_running(p) == 0;
    for (int i = 0; i < PLANS_MAX_RUNNING && !none; i++) /* stored `interrupted` as they stop (plans_free) */
        if (p->running[i])
            cancel_run(p->running[i], PLANS_INTERRUPTED);
    if (!none)
        pthread_cond_broadcast(&p->changed); /* a plan held at plan.progress */
    pthread_mutex_unlock(&p->mu);
    return none;
}

void plans_free(struct plans *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < PLANS_MAX_RUNNING; i++)
        if (p->running[i])
            cancel_run(p->running[i], PLANS_INTERRUPTED);
    pthread_cond_broadcast(&p->changed); /* a plan held at plan.progress */
    while (count_running(p))
        pthread_cond_wait(&p->changed, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->changed);
    free(p);
}

static int cancelled(void *ctx)
{
    return atomic_load((atomic_int *)ctx);
}

/* The evaluator (the estimator's, or the what-if's of a model) with its
 * evaluations admitted first (plans_eval.admission), by the size
 * synth_size or whatif_size_predict gives; the estimator's bounds
 * build nothing and stay its own. */
struct admitted_eval {
    struct plans_eval *pe;
    struct est_plan_evaluator inner;
};

static int admitted(struct admitted_eval *a, const struct est_spec *s, enum est_detail d, struct est_estimate *out,
                    struct sc_error *err)
{
    struct plans_eval *pe = a->pe;
    struct est_synth_size size;
    char what[160];
    int rc;
    memset(out, 0, sizeof *out);
    if (pe->graph) { /* the what-if of the model's graph (whatif_size.h) */
        struct job_config set;
        struct whatif_size ws;
        whatif_plan_set(&pe->whatif, s, &set);
        whatif_size_predict(pe->graph->n_tasks, &pe->whatif.base, &set, &ws);
        size.tasks = ws.tasks < 9e18 ? (int64_t)ws.tasks : INT64_MAX;
        size.bytes = ws.bytes;
    } else if ((rc = synth_size(s, pe->est.hw, &pe->est.costs, d, &size, err))) {
        return rc;
    }
    uint64_t need = admission_bytes(size.bytes);
    snprintf(what, sizeof what, "a plan's candidate tp %lld pp %lld dp %lld (%s, %lld tasks)",
             (long long)s->parallel.tp, (long long)s->parallel.pp, (long long)s->parallel.dp,
             pe->graph ? "what-if" : synth_detail_name(d), (long long)size.tasks);
    if (pe->cancel) {
        if ((rc = admission_wait(pe->admission, need, what, cancelled, pe->cancel, err))) {
            pe->refused = rc == SC_ELIMIT ? ADMISSION_NEVER : ADMISSION_OK;
            return rc == SC_EEXIST ? sc_error_set(err, SC_ECANCELED, "cancelled") : rc;
        }
    } else if ((pe->refused = (int)admission_try(pe->admission, need, what, err)) != ADMISSION_OK) {
        return SC_ELIMIT;
    }
    rc = pe->graph ? a->inner.evaluate(a->inner.ctx, s, out, err) : synth_estimate(s, pe->est.hw, &pe->est.costs, d, out, err);
    admission_release(pe->admission, need);
    return rc;
}

static int admitted_stage(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    return admitted(ctx, s, EST_DETAIL_STAGE, out, err);
}

static int admitted_kernel(void *ctx, const struct est_spec *s, struct est_estimate *out, struct sc_error *err)
{
    return admitted(ctx, s, EST_DETAIL_KERNEL, out, err);
}

static int admitted_bound(void *ctx, const struct est_spec *s, double *step_ms, struct sc_error *err)
{
    struct admitted_eval *a = ctx;
    return a->inner.bound(a->inner.ctx, s, step_ms, err);
}

static int admitted_refine(void *ctx, const struct est_spec *s, double enough_ms, double *step_ms,
                           struct sc_error *err)
{
    struct admitted_eval *a = ctx;
    return a->inner.refine(a->inner.ctx, s, enough_ms, step_ms, err);
}

/* The progress reported, on its way to the caller's report. */
struct seen {
    est_plan_progress_fn fn;
    void *ctx;
    int64_t done, total;
};

static int seen_progress(void *ctx, int64_t done, int64_t total)
{
    struct seen *p = ctx;
    p->done = done;
    p->total = total;
    return p->fn ? p->fn(p->ctx, done, total) : 0;
}

int plans_run(struct store *store, const char *id, const char *request, const struct est_plan_request *req,
              struct plans_eval *pe, est_plan_progress_fn progress, void *ctx, struct store_plan *kept,
              struct sc_error *err)
{
    struct seen seen = {progress, ctx, 0, plan_space(req)};
    struct est_plan_evaluator ev;
    struct admitted_eval adm;
    struct est_plan_request banded = *req;
    struct est_plan plan;
    struct sc_error perr;
    struct store_plan row = {.request = (char *)request, .created_ns = store_now_ns()};
    json_t *doc = NULL;
    if (pe->graph) {
        whatif_plan_evaluator(&pe->whatif, &ev);
    } else {
        plan_evaluator_estimate(&pe->est, &ev);
        banded.bands = &pe->bands;
    }
    if (pe->admission) {
        adm = (struct admitted_eval){pe, ev};
        ev = (struct est_plan_evaluator){admitted_stage, ev.bound ? admitted_bound : NULL, &adm,
                                         ev.refine ? admitted_refine : NULL, ev.detail ? admitted_kernel : NULL};
    }
    snprintf(row.id, sizeof row.id, "%s", id);
    snprintf(row.owner, sizeof row.owner, "%s", pe->owner);
    snprintf(row.version, sizeof row.version, "%s", STEPCAST_VERSION);
    pe->refused = ADMISSION_OK;
    int failed = plan_run(&banded, &ev, seen_progress, &seen, &plan, &perr);
    int stop = pe->cancel ? atomic_load(pe->cancel) : PLANS_GOING;
    if (failed && !pe->cancel && (pe->refused != ADMISSION_OK || perr.code == SC_ECANCELED)) {
        plan_release(&plan);
        *err = perr; /* inside a request: refused, or called off by a shutdown; nothing stored */
        return perr.code == SC_ECANCELED ? SC_ECANCELED : SC_ELIMIT;
    }
    row.done = seen.done;
    row.total = seen.total;
    if (stop == PLANS_INTERRUPTED && (failed || plan.cancelled)) { /* a shutdown: POST .../resume runs it again */
        snprintf(row.state, sizeof row.state, "interrupted");
    } else if (failed && stop == PLANS_CANCELLED) { /* while it waited for memory or computed */
        snprintf(row.state, sizeof row.state, "cancelled");
    } else if (failed) {
        snprintf(row.state, sizeof row.state, "failed");
        row.error = perr.msg;
    } else if (plan.cancelled) {
        snprintf(row.state, sizeof row.state, "cancelled");
    } else if (!(doc = api_plan_json(&plan)) || !(row.document = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(12)))) {
        snprintf(row.state, sizeof row.state, "failed");
        row.error = "out of memory";
    } else {
        snprintf(row.state, sizeof row.state, "done");
    }
    plan_release(&plan);
    json_decref(doc);
    row.finished_ns = store_now_ns();
    log_info("plan", "plan=%s state=%s evaluated=%lld pruned=%lld", id, row.state, (long long)plan.evaluated,
             (long long)plan.pruned);
    if (!store) { /* planned inside its request: answered, not kept */
        *kept = row;
        kept->request = NULL;
        if (row.error && !(kept->error = strdup(row.error))) {
            store_plan_release(kept);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        return SC_OK;
    }
    int rc = store_plan_put(store, &row, err);
    free(row.document);
    return rc;
}

static int run_progress(void *ctx, int64_t done, int64_t total)
{
    struct run *r = ctx;
    struct plans *p = r->owner;
    int64_t now = store_now_ns();
    atomic_store(&r->done, done);
    atomic_store(&r->total, total);
    if (now - r->saved_ns >= (int64_t)(PLANS_SAVE_EVERY_S * 1e9)) { /* what a crash leaves to read */
        struct sc_error err;
        r->saved_ns = now;
        if (store_plan_progress(p->store, r->id, done, total, &err))
            log_warn("plan", "plan=%s event=progress_not_saved msg=\"%s\"", r->id, err.msg);
    }
    if (fp_armed("plan.progress")) { /* tests: the first report waits until it is read */
        pthread_mutex_lock(&p->mu);
        if (!r->held)
            r->held = 1;
        while (r->held == 1 && !atomic_load(&r->cancel))
            pthread_cond_wait(&p->changed, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    return atomic_load(&r->cancel);
}

static void *run_thread(void *arg)
{
    struct run *r = arg;
    struct plans *p = r->owner;
    struct sc_error err;
    workers_background(p->nice_delta);
    sc_cancel_attach(&r->cancel);
    if (plans_run(p->store, r->id, r->request, &r->req, &r->pe, run_progress, r, NULL, &err))
        log_warn("plan", "plan=%s event=not_stored msg=\"%s\"", r->id, err.msg);
    store_plan_unclaim(p->store, r->id);
    plans_eval_release(&r->pe);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < PLANS_MAX_RUNNING; i++)
        if (p->running[i] == r)
            p->running[i] = NULL;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->mu);
    free(r->request);
    free(r);
    return NULL;
}

static struct run *find(struct plans *p, const char *id)
{
    for (int i = 0; i < PLANS_MAX_RUNNING; i++)
        if (p->running[i] && strcmp(p->running[i]->id, id) == 0)
            return p->running[i];
    return NULL;
}

int plans_start(struct plans *p, const char *id, const char *request, const char *model,
                const struct est_plan_request *req, int64_t space, const struct plans_eval *pe,
                struct sc_error *err)
{
    struct run *r = calloc(1, sizeof *r);
    struct store_plan row = {.request = (char *)request, .total = space, .created_ns = store_now_ns()};
    pthread_t t;
    pthread_attr_t attr;
    int slot = -1, rc = SC_OK;
    if (!r || !(r->request = strdup(request))) {
        free(r);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    r->owner = p;
    snprintf(r->id, sizeof r->id, "%s", id);
    r->req = *req;
    r->pe = *pe;
    r->pe.cancel = &r->cancel; /* waits for memory, and a cancel ends the wait */
    atomic_init(&r->total, space);
    snprintf(row.id, sizeof row.id, "%s", id);
    snprintf(row.model, sizeof row.model, "%s", model);
    snprintf(row.state, sizeof row.state, "running");
    snprintf(row.version, sizeof row.version, "%s", STEPCAST_VERSION);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < PLANS_MAX_RUNNING && slot < 0; i++)
        if (!p->running[i])
            slot = i;
    if (find(p, id)) {
        rc = sc_error_set(err, SC_EEXIST, "plan '%s' is running already", id);
    } else if (slot < 0) {
        rc = sc_error_set(err, SC_ELIMIT, "%d plans are running (the most at once): try again later",
                          PLANS_MAX_RUNNING);
    } else if ((rc = store_plan_claim(p->store, id, err))) {
        /* another replica runs it, or ran it already */
    } else if ((rc = store_plan_put(p->store, &row, err))) {
        store_plan_unclaim(p->store, id);
    } else { /* acknowledged: in the catalog first */
        p->running[slot] = r;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, run_thread, r)) {
            p->running[slot] = NULL;
            rc = sc_error_set(err, SC_ENOMEM, "could not start a thread for the plan");
            snprintf(row.state, sizeof row.state, "failed");
            row.error = err->msg;
            row.finished_ns = store_now_ns();
            store_plan_put(p->store, &row, NULL);
            store_plan_unclaim(p->store, id);
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&p->mu);
    if (rc) {
        free(r->request);
        free(r);
    }
    return rc;
}

int plans_progress(struct plans *p, const char *id, int64_t *done, int64_t *total)
{
    pthread_mutex_lock(&p->mu);
    struct run *r = find(p, id);
    if (r) {
        *done = atomic_load(&r->done);
        *total = atomic_load(&r->total);
        if (r->held == 1) {
            r->held = 2;
            pthread_cond_broadcast(&p->changed);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return r != NULL;
}

int plans_cancel(struct plans *p, const char *id)
{
    pthread_mutex_lock(&p->mu);
    struct run *r = find(p, id);
    if (r) {
        cancel_run(r, PLANS_CANCELLED);
        pthread_cond_broadcast(&p->changed); /* a plan held at plan.progress */
        while (find(p, id))
            pthread_cond_wait(&p->changed, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return r != NULL;
}
