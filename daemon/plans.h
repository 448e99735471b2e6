/* daemon/plans.h: plans running in the background (POST /v1/plans), each
 * on a thread of its own (at the priority of heavy work, workers.h), at
 * most PLANS_MAX_RUNNING at once. A plan is in the catalog as `running`
 * before it starts, and its progress is saved there every
 * PLANS_SAVE_EVERY_S; once finished (done, failed, cancelled by a DELETE,
 * or interrupted by a shutdown) its row says so and it leaves the
 * registry: GET finds a plan here while it runs, in the store after. A
 * plan a crash stopped is still `running` in the catalog: plans_new marks
 * such rows `interrupted`, with the progress last saved. */
#ifndef DAEMON_PLANS_H
#define DAEMON_PLANS_H

#include <stdatomic.h>
#include <stdint.h>

#include "api/resources.h"
#include "common/error.h"
#include "estimator/plan/plan.h"
#include "estimator/whatif/whatif_plan.h"
#include "model/graph.h"

#define PLANS_MAX_RUNNING 4
#define PLANS_SAVE_EVERY_S 1.0

struct admission;
struct plans;
struct store;
struct cache;
struct cache_entry;

/* What evaluates a plan's candidates: the estimator (est), or, for a plan
 * from a built model (POST /v1/models/{id}/plan), its what-if (whatif) on
 * `graph`, the model's graph with the notes of its traces, held by the
 * cache entry `entry`. A plan by
 * the estimator ranks at the bands `bands` (its own copy).
 * plans_start takes the entry and gives it back once the plan is stored;
 * plans_run leaves it to the caller. */
struct store_plan;

struct plans_eval {
    /* each evaluation (the estimator's or a model's what-if) is admitted
     * first under this memory budget (admission.h) by its graph's
     * predicted size (synth_size, whatif_size_predict): inside a request
     * (plans_run) it is tried, and a refusal ends the plan unstored with
     * `refused` set (ADMISSION_NEVER or _BUSY); in the background
     * (plans_start) it waits, and a cancel ends the wait */
    struct admission *admission;
    int refused;
    atomic_int *cancel; /* PLANS_GOING, or why it stops: PLANS_CANCELLED, _INTERRUPTED */
    struct est_plan_estimator est;
    struct est_bands bands;       /* the estimator's: ranked at the request's risk */
    struct whatif_planner whatif; /* used when graph is set */
    const struct model_graph *graph; /* the model's (entry's), or NULL for the estimator */
    struct cache *cache;
    struct cache_entry *entry;
    char owner[API_ID_MAX]; /* the token that asked: the stored plan is its (max-stored-per-token) */
};

enum { PLANS_GOING, PLANS_CANCELLED, PLANS_INTERRUPTED };

/* Give back what pe holds: its planner, bands and cache entry. */
void plans_eval_release(struct plans_eval *pe);

/* The registry; rows left `running` by a crash become `interrupted`.
 * Plans run with their nice value raised by nice_delta. */
int plans_new(struct store *store, int nice_delta, struct plans **out, struct sc_error *err);
/* Wait up to timeout_s for the running plans to finish: 1 when none runs;
 * else those still running are interrupted (their long loops stop,
 * common/cancel.h), and plans_free waits until each is stored. */
int plans_drain(struct plans *p, double timeout_s);
/* Interrupt every running plan (its long loops stop, common/cancel.h) and
 * wait for each to be stored as `interrupted`, with its progress. */
void plans_free(struct plans *p);

/* Plan req with pe now, on this thread, and store the result as plan `id`
 * (request: the POST body, kept with it); with store NULL nothing is
 * stored and the result goes to *kept (store_plan_release), as a plan
 * planned inside its request. progress may be NULL. Without pe->cancel
 * (inside a request), an evaluation the memory budget refuses
 * (pe->refused) ends it with SC_ELIMIT, and a shutdown (common/cancel.h)
 * with SC_ECANCELED, nothing stored. */
int plans_run(struct store *store, const char *id, const char *request, const struct est_plan_request *req,
              struct plans_eval *pe, est_plan_progress_fn progress, void *ctx, struct store_plan *kept,
              struct sc_error *err);
/* The same on a thread of its own, which takes pe's cache entry once the
 * plan is stored as `running` (model: the built model it plans from, or
 * ""); else it stays the caller's: SC_ELIMIT when
 * PLANS_MAX_RUNNING run, SC_EEXIST when plan id runs already, the store's
 * error when it cannot be stored. space (plan_space of req) is its
 * progress's total from the start, before the search reports any. */
int plans_start(struct plans *p, const char *id, const char *request, const char *model,
                const struct est_plan_request *req, int64_t space, const struct plans_eval *pe,
                struct sc_error *err);
/* Whether plan id is running; its progress then. */
int plans_progress(struct plans *p, const char *id, int64_t *done, int64_t *total);
/* Cancel plan id when it runs and wait until it is stored; 1 if it ran. */
int plans_cancel(struct plans *p, const char *id);

#endif
