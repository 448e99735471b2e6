/* daemon/plans.h: plans running in the background (POST /v1/plans), each
 * on a thread of its own, at most PLANS_MAX_RUNNING at once. A finished
 * plan (done, failed or cancelled) is written to the catalog and leaves
 * the registry: GET finds a plan here while it runs, in the store after. */
#ifndef DAEMON_PLANS_H
#define DAEMON_PLANS_H

#include <stdint.h>

#include "common/error.h"
#include "estimator/plan.h"

#define PLANS_MAX_RUNNING 4

struct plans;
struct store;

int plans_new(struct store *store, struct plans **out, struct sc_error *err);
/* Cancel every running plan and wait for each to be stored. */
void plans_free(struct plans *p);

/* Plan req with the estimator est now, on this thread, and store the result
 * as plan `id` (request: the POST body, kept with it). progress may be NULL. */
int plans_run(struct store *store, const char *id, const char *request, const struct est_plan_request *req,
              struct est_plan_estimator *est, est_plan_progress_fn progress, void *ctx,
              struct sc_error *err);
/* The same on a thread of its own; SC_ELIMIT when PLANS_MAX_RUNNING run. */
int plans_start(struct plans *p, const char *id, const char *request, const struct est_plan_request *req,
                const struct est_plan_estimator *est, struct sc_error *err);
/* Whether plan id is running; its progress then. */
int plans_progress(struct plans *p, const char *id, int64_t *done, int64_t *total);
/* Cancel plan id when it runs and wait until it is stored; 1 if it ran. */
int plans_cancel(struct plans *p, const char *id);

#endif
