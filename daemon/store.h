/* daemon/store.h: the catalog: jobs, traces, models, validations, tokens.
 *
 * A SQL database named by a store URL (sqldb.h): by default SQLite
 * (sqlite:<data>/catalog.db) in WAL mode with foreign keys on and
 * synchronous=FULL, or PostgreSQL (postgresql://...); either way a commit
 * that returned is durable. The schema is versioned (SQLite: PRAGMA
 * user_version; PostgreSQL: table stepcast_schema) and migrated forward on
 * open, on PostgreSQL in one transaction under an advisory lock, so that
 * daemons starting at once migrate it once; a newer schema than this build
 * knows is refused.
 *
 * Trace bytes are not here: a `blobs` row names a file of the blob store
 * (blobs.h) by its SHA-256, and traces (the current trace of each rank of a
 * job) and model_traces (the traces a model was built from) point at blob
 * rows. A blob row exists only while something points at it: every function
 * that drops references deletes the blob rows left unreferenced in the same
 * transaction and hands their names back (`freed`) for the caller to unlink
 * after the commit.
 *
 * Experiments (two jobs compared, POST /v1/experiments) keep their
 * verdict with the digest of its inputs, so a restart neither loses nor
 * recomputes it.
 *
 * Lists take a page (api/page.h: rows after the cursor's key, at most its
 * limit; *more says whether rows follow) or NULL for every row.
 *
 * Jobs, ledger entries, plans and experiments keep the id of the token that
 * stored them (the owner, NULL for rows from before schema 6 or stored by
 * nobody): with store_set_max_owned, a function that would add a row past
 * the owner's limit adds nothing and returns SC_ELIMIT.
 *
 * Every function is one transaction on one connection of a pool (on
 * SQLite one connection, so functions run one at a time; on PostgreSQL
 * up to store-connections at once): any thread may call any function.
 * Strings handed back are owned by the caller (release them with the
 * matching *_release / *_free).
 *
 * The records are here (store.c); the catalog's connections
 * (store_pool.h), schema (store_schema.h) and blob rows (store_blob.h)
 * have headers of their own, which this one includes. */
#ifndef DAEMON_STORE_H
#define DAEMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "api/ledger.h"
#include "api/page.h"
#include "api/resources.h"
#include "common/error.h"
#include "daemon/store_blob.h"
#include "daemon/store_pool.h"
#include "daemon/store_schema.h"

/* The rows one owner may store (0: any number); from startup. */
void store_set_max_owned(struct store *s, int64_t max);
/* SC_OK when owner may store one more row, else SC_ELIMIT naming the
 * limit (what a row stored later, a background plan's, is checked by). */
int store_owner_room(struct store *s, const char *owner, struct sc_error *err);

/* SC_OK when job exists or owner may store one more row, else SC_ELIMIT
 * (checked before a trace's blob goes into place; store_trace_put checks
 * again). */
int store_job_room(struct store *s, const char *job, const char *owner, struct sc_error *err);

/* ---- jobs ---- */

/* Create or replace a job's description (NULL: none). *created says which. */
int store_job_put(struct store *s, const char *id, const char *description, const char *owner, int *created,
                  struct sc_error *err);
int store_job_get(struct store *s, const char *id, struct api_job *out, struct sc_error *err);
/* By id. */
int store_job_list(struct store *s, const struct api_page *pg, struct api_job **out, size_t *n, int *more,
                   struct sc_error *err);
/* Delete a job with its traces and models; `models` gets the ids of the
 * models removed, `freed` the blobs left unreferenced. */
int store_job_delete(struct store *s, const char *id, struct store_names *models,
                     struct store_names *freed, struct sc_error *err);

/* ---- traces ---- */

int store_trace_get(struct store *s, const char *job, int64_t rank, struct api_trace *out,
                    struct sc_error *err);
int store_trace_list(struct store *s, const char *job, struct api_trace **out, size_t *n,
                     struct sc_error *err);
/* Set the trace of (job, rank) to t: under the lock on t->sha256, calls
 * place(ctx, sha) to put the blob's file in place unless a row names that
 * blob already, then creates the job if needed and the blob row if new,
 * and sets t->uploaded_ns to the time stored. The blob the rank held
 * before, if now unreferenced, goes to `freed`. */
int store_trace_put(struct store *s, const char *job, struct api_trace *t, const char *owner,
                    store_blob_fn place, void *ctx, struct store_names *freed, struct sc_error *err);

/* ---- models ---- */

/* Record a new model (status building, m->id, m->job, options, version) and
 * pin the job's current traces to it. SC_ENOTFOUND: no such job;
 * SC_EINVAL: the job has no trace. */
int store_model_create(struct store *s, const struct api_model *m, struct sc_error *err);
int store_model_get(struct store *s, const char *id, struct api_model *out, struct sc_error *err);
/* All models, or a job's (job non-NULL), by (created_ns, id); summaries
 * are not loaded. */
int store_model_list(struct store *s, const char *job, const struct api_page *pg, struct api_model **out,
                     size_t *n, int *more, struct sc_error *err);
/* The traces a model was built from, by rank: rank, sha256, bytes and
 * events (-1 when unknown: no rank of any job holds that blob any more);
 * steps and uploaded_ns are 0. */
int store_model_traces(struct store *s, const char *id, struct api_trace **out, size_t *n,
                       struct sc_error *err);
/* (the end of a build: bq_finish, build_queue.h) */
/* A ready model's opportunities document (GET /v1/models/{id}/opportunities)
 * as stepcast `version` found it, kept so that ranking the fleet need not
 * load the model again: *doc is malloc'd; SC_ENOTFOUND when that version
 * kept none. Keeping one replaces what another version kept;
 * SC_ENOTFOUND when the model is not ready (or was deleted). */
int store_model_opportunities(struct store *s, const char *id, const char *version, char **doc,
                              struct sc_error *err);
int store_model_keep_opportunities(struct store *s, const char *id, const char *version, const char *doc,
                                   struct sc_error *err);
int store_model_delete(struct store *s, const char *id, struct store_names *freed,
                       struct sc_error *err);

/* ---- tokens (the secret is never stored, only its hash) ---- */
int store_token_create(struct store *s, const struct api_token *t, const char *hash,
                       struct sc_error *err);
/* The token whose hash this is (revoked ones too). SC_ENOTFOUND if none. */
int store_token_lookup(struct store *s, const char *hash, struct api_token *out,
                       struct sc_error *err);
/* By (created_ns, id). */
int store_token_list(struct store *s, const struct api_page *pg, struct api_token **out, size_t *n, int *more,
                     struct sc_error *err);
/* Revoke; SC_EEXIST when it is the last active admin token. */
int store_token_revoke(struct store *s, const char *id, struct api_token *out,
                       struct sc_error *err);
int store_token_active_admins(struct store *s, int64_t *n, struct sc_error *err);

/* ---- calibrations: cluster profiles by name ---- */

/* Create or replace calibration c->name (sets c->created_ns); *created
 * says which. */
int store_calibration_put(struct store *s, struct api_calibration *c, int *created, struct sc_error *err);
/* With its document and report. SC_ENOTFOUND if none. */
int store_calibration_get(struct store *s, const char *name, struct api_calibration *out,
                          struct sc_error *err);
/* All, without documents and reports, by name. */
int store_calibration_list(struct store *s, const struct api_page *pg, struct api_calibration **out, size_t *n,
                           int *more, struct sc_error *err);

/* ---- the validation ledger (api/ledger.h) ---- */

/* Add entries v[0..n) in one transaction; sets their id and created_ns. */
int store_validation_add(struct store *s, struct api_validation *v, size_t n, const char *owner,
                         struct sc_error *err);
/* Entries by id, of one model and/or kind (NULL: any). */
int store_validation_list(struct store *s, const char *model, const char *kind, const struct api_page *pg,
                          struct api_validation **out, size_t *n, int *more, struct sc_error *err);
/* The same entries, all, with their ids, models, kinds, times, run_at and
 * flags only (no spec, set, source or calibration): what MAPEs read. */
int store_validation_summary(struct store *s, const char *model, const char *kind, struct api_validation **out,
                             size_t *n, struct sc_error *err);
int store_validation_delete(struct store *s, int64_t id, struct sc_error *err);

/* Wall-clock nanoseconds, as stored. */
int64_t store_now_ns(void);

/* ---- plans (POST /v1/plans): background ones from their 202 on, and
 * finished ones; what a restart keeps ---- */

struct store_plan {
    char id[64];
    char *request;   /* the POST body, compact JSON (malloc'd) */
    char model[STORE_NAME_MAX]; /* the built model a plan from a model plans from, or "" */
    char state[16];  /* "running", "interrupted", "done", "failed" or "cancelled" */
    char *document;  /* the plan document when done, else NULL */
    char *error;     /* why it failed, else NULL */
    char version[32];
    int64_t done, total; /* its progress: combinations evaluated, of */
    int64_t created_ns, finished_ns; /* finished_ns 0 while running or interrupted */
    char owner[STORE_NAME_MAX]; /* the token that asked for it, or "" */
};
void store_plan_release(struct store_plan *p);
/* Store plan p, or update the one stored under its id: its state,
 * document, error, version, progress and finish (not its request, model
 * or creation). */
int store_plan_put(struct store *s, const struct store_plan *p, struct sc_error *err);
/* A running plan's progress. */
int store_plan_progress(struct store *s, const char *id, int64_t done, int64_t total, struct sc_error *err);
/* The oldest interrupted plan of this request (and model, "" for none)
 * into id; SC_ENOTFOUND when there is none. */
int store_plan_interrupted(struct store *s, const char *request, const char *model, char id[64],
                           struct sc_error *err);
/* Every plan still `running` becomes `interrupted` (at startup: a crash
 * stopped them); *n says how many. */
int store_plans_interrupt(struct store *s, int64_t *n, struct sc_error *err);
/* PostgreSQL, where replicas share the plans: a plan about to run is
 * claimed by this daemon (a session advisory lock, held until unclaimed or
 * until this daemon's connection ends), so that it runs once. SC_EEXIST
 * when another daemon runs it, or when it is stored in a state other than
 * `interrupted`. store_plans_interrupt passes over the plans claimed. On
 * SQLite (one daemon) both do nothing. */
int store_plan_claim(struct store *s, const char *id, struct sc_error *err);
void store_plan_unclaim(struct store *s, const char *id);
/* SC_ENOTFOUND when there is none. */
int store_plan_get(struct store *s, const char *id, struct store_plan *out, struct sc_error *err);
int store_plan_delete(struct store *s, const char *id, struct sc_error *err);

/* ---- experiments: a baseline job against a variant job ---- */

struct store_experiment {
    char id[64];
    char baseline[STORE_NAME_MAX], variant[STORE_NAME_MAX]; /* job ids */
    char *hypothesis;     /* or NULL (malloc'd) */
    char external_id[129]; /* "" when none */
    int closed;
    char *inputs;  /* the digest of the verdict's inputs, or NULL while undecided */
    char *verdict; /* the A/B document (JSON) for those inputs, or NULL */
    char *bank;    /* when closed: the saving banked (JSON), or NULL */
    int64_t created_ns, decided_ns, closed_ns; /* 0: not yet */
    char owner[STORE_NAME_MAX]; /* the token that created it, or "" (kept, not read back) */
};
void store_experiment_release(struct store_experiment *e);
void store_experiments_free(struct store_experiment *v, size_t n);
/* A new open experiment (id, baseline, variant, hypothesis, external_id,
 * created_ns). */
int store_experiment_create(struct store *s, const struct store_experiment *e, struct sc_error *err);
/* SC_ENOTFOUND when there is none. */
int store_experiment_get(struct store *s, const char *id, struct store_experiment *out, struct sc_error *err);
/* Every experiment, or those of one external id (non-NULL), oldest first
 * (by (created_ns, id)). */
int store_experiment_list(struct store *s, const char *external_id, const struct api_page *pg,
                          struct store_experiment **out, size_t *n, int *more, struct sc_error *err);
/* Keep an open experiment's verdict, the digest of its inputs and when
 * it was decided (SC_ENOTFOUND when it is closed or gone). */
int store_experiment_decide(struct store *s, const char *id, const char *inputs, const char *verdict,
                            int64_t decided_ns, struct sc_error *err);
/* Close an open one, with the saving it banks (JSON, or NULL). */
int store_experiment_close(struct store *s, const char *id, const char *bank, struct sc_error *err);

#endif
