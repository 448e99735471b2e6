/* daemon/plans.h: plans running in the background (POST /v1/plans), each
 * on a thread of its own, at most PLANS_MAX_RUNNING at once. A finished
 * plan (done, failed or cancelled) is written to the catalog and leaves
 * the registry: GET finds a plan here while it runs, in the store after. */
#ifndef DAEMON_PLANS_H
#define DAEMON_PLANS_H

#include <stdint.h>

#include "common/error.h"
#include "estimator/plan.h"
#include "estimator/whatif_plan.h"

#define PLANS_MAX_RUNNING 4

struct plans;
struct store;
struct cache;
struct cache_entry;

/* What evaluates a plan's candidates: the estimator (est), or, for a plan
 * from a built model (POST /v1/models/{id}/plan), its what-if (whatif,
 * whose graph the cache entry `entry` holds: plans_start takes that
 * reference and gives it back once the plan is stored). */
struct plans_eval {
    struct est_plan_estimator est;
    struct whatif_planner whatif; /* used when whatif.g is set */
    struct cache *cache;
    struct cache_entry *entry;
};

int plans_new(struct store *store, struct plans **out, struct sc_error *err);
/* Cancel every running plan and wait for each to be stored. */
void plans_free(struct plans *p);

/* Plan req with pe now, on this thread, and store the result as plan `id`
 * (request: the POST body, kept with it). progress may be NULL. The cache
 * entry stays the caller's. */
int plans_run(struct store *store, const char *id, const char *request, const struct est_plan_request *req,
              struct plans_eval *pe, est_plan_progress_fn progress, void *ctx, struct sc_error *err);
/* The same on a thread of its own, which takes pe's cache entry; SC_ELIMIT
 * when PLANS_MAX_RUNNING run (the entry then stays the caller's). */
int plans_start(struct plans *p, const char *id, const char *request, const struct est_plan_request *req,
                const struct plans_eval *pe, struct sc_error *err);
/* Whether plan id is running; its progress then. */
int plans_progress(struct plans *p, const char *id, int64_t *done, int64_t *total);
/* Cancel plan id when it runs and wait until it is stored; 1 if it ran. */
int plans_cancel(struct plans *p, const char *id);

#endif
