/* daemon/store.c: the catalog's records (store.h), on SQLite or
 * PostgreSQL: jobs, traces, models, tokens, calibrations, the validation
 * ledger, plans and experiments, and the limit on the rows one token
 * stores.
 *
 * Every statement is written once and runs on both engines (store_sql.c).
 * Each public function takes a connection of the pool (store_pool.h),
 * runs its statements inside one transaction where it writes, resets what
 * it used and gives the connection back. The schema (store_schema.c) and
 * the blob rows (store_blob.c) have files of their own. */
#include "daemon/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/ledger.h"
#include "daemon/failpoint.h"
#include "daemon/sqldb.h"
#include "daemon/store_blob.h"
#include "daemon/store_pool.h"
#include "daemon/store_sql.h"
#include "common/banned.h"

/* PostgreSQL: classes of the advisory locks on (class, hashtext(key))
 * that serialise replicas (the two-key space, apart from the migration's
 * lock, store_schema.c) */
enum { PG_LOCK_OWNER = 7310, PG_LOCK_ADMINS = 7311, PG_LOCK_PLAN = 7312 };

int64_t store_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void release_plain(void *v, size_t n)
{
    (void)n;
    free(v);
}


/* ---- replicas: what one connection cannot serialise ----
 *
 * On PostgreSQL several daemons, each with several connections, share the
 * catalog, and READ COMMITTED lets
 * two transactions each count what the other is about to change (the last
 * admin token, a token's room). A transaction that checks such a count
 * first takes an advisory transaction lock on what it counts: the others
 * wait for its COMMIT, and their count, a statement later, sees it. On
 * SQLite, BEGIN IMMEDIATE holds the whole file already. */

static int replicas_serialise(struct conn *s, int cls, const char *key, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if (!conn_is_pg(s))
        return SC_OK;
    if ((rc = conn_prep(s, Q_PG_XACT_LOCK, &st, err)))
        return rc;
    sqldb_bind_int64(st, 1, cls);
    sqldb_bind_text(st, 2, key);
    return conn_run(s, st, err, "lock");
}

/* Tests: the point store.counted holds between a count and the write it
 * allows, so that two replicas race inside that window. */
static void counted(void)
{
    fp_hold("store.counted", 300);
}

/* The rows owner stored, in the transaction open. */
static int owned(struct conn *s, const char *owner, int64_t *n, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_OWNED, &st, err), r;
    *n = 0;
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, owner);
    if ((r = sqldb_step(st)) == SQLDB_ROW)
        *n = sqldb_column_int64(st, 0);
    else
        rc = conn_fail(s, err, "count owned rows");
    sqldb_reset(st);
    return rc;
}

/* SC_ELIMIT when owner (NULL: nobody's) may store no `adding` more rows. */
static int owner_room(struct conn *s, const char *owner, size_t adding, struct sc_error *err)
{
    int64_t n = 0;
    int rc;
    if (!owner || !s->pool->max_owned)
        return SC_OK;
    if ((rc = replicas_serialise(s, PG_LOCK_OWNER, owner, err)) || (rc = owned(s, owner, &n, err)))
        return rc;
    counted();
    if (n + (int64_t)adding > s->pool->max_owned)
        return sc_error_set(err, SC_ELIMIT,
                            "token '%s' has stored %lld jobs, ledger entries, plans and experiments: the limit is "
                            "max-stored-per-token %lld (delete some first)",
                            owner, (long long)n, (long long)s->pool->max_owned);
    return SC_OK;
}

void store_set_max_owned(struct store *pool, int64_t max)
{
    pthread_mutex_lock(&pool->mu);
    pool->max_owned = max;
    pthread_mutex_unlock(&pool->mu);
}

int store_owner_room(struct store *pool, const char *owner, struct sc_error *err)
{
    LOCKED(pool, owner_room(s, owner, 1, err));
}

static int job_room(struct conn *s, const char *job, const char *owner, struct sc_error *err)
{
    int yes = 0, rc = conn_exists(s, Q_JOB_EXISTS, job, &yes, err);
    return rc ? rc : yes ? SC_OK : owner_room(s, owner, 1, err);
}

int store_job_room(struct store *pool, const char *job, const char *owner, struct sc_error *err)
{
    LOCKED(pool, job_room(s, job, owner, err));
}

/* ---- jobs ---- */

static void read_job(struct sqldb_stmt *st, void *row)
{
    struct api_job *j = row;
    store_col_copy(st, 0, j->id, sizeof j->id);
    j->description = store_col_dup(st, 1);
    j->created_ns = sqldb_column_int64(st, 2);
    j->updated_ns = sqldb_column_int64(st, 3);
    j->n_traces = sqldb_column_int64(st, 4);
    j->trace_bytes = sqldb_column_int64(st, 5);
    j->n_models = sqldb_column_int64(st, 6);
}

static int job_put(struct conn *s, const char *id, const char *desc, const char *owner, int *created,
                   struct sc_error *err)
{
    int rc, yes = 0;
    struct sqldb_stmt *st;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_exists(s, Q_JOB_EXISTS, id, &yes, err)) == SC_OK &&
        (yes || (rc = owner_room(s, owner, 1, err)) == SC_OK)) {
        if ((rc = conn_prep(s, Q_JOB_UPSERT, &st, err)) == SC_OK) {
            sqldb_bind_text(st, 1, id);
            sqldb_bind_text(st, 2, desc);
            sqldb_bind_int64(st, 3, store_now_ns());
            sqldb_bind_text(st, 4, owner);
            rc = conn_run(s, st, err, "put job");
        }
    }
    *created = !yes;
    return conn_end(s, rc, err);
}

int store_job_put(struct store *pool, const char *id, const char *description, const char *owner, int *created,
                  struct sc_error *err)
{
    LOCKED(pool, job_put(s, id, description, owner, created, err));
}

static int job_get(struct conn *s, const char *id, struct api_job *out, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_JOB_GET, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, id);
    rc = conn_one_row(s, st, read_job, out, "get job", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no job '%s'", id) : rc;
}

int store_job_get(struct store *pool, const char *id, struct api_job *out, struct sc_error *err)
{
    LOCKED(pool, job_get(s, id, out, err));
}

static void release_jobs(void *v, size_t n)
{
    api_jobs_free(v, n);
}

int store_job_list(struct store *pool, const struct api_page *pg, struct api_job **out, size_t *n, int *more,
                   struct sc_error *err)
{
    LOCKED(pool, conn_page_rows(s, Q_JOB_LIST, NULL, pg, more, read_job, sizeof **out, release_jobs, (void **)out,
                                n, "list jobs", err));
}

static int job_delete(struct conn *s, const char *id, struct store_names *models,
                      struct store_names *freed, struct sc_error *err)
{
    int rc, yes = 0;
    struct sqldb_stmt *st;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_exists(s, Q_JOB_EXISTS, id, &yes, err)) == SC_OK && !yes)
        rc = sc_error_set(err, SC_ENOTFOUND, "no job '%s'", id);
    if (rc == SC_OK)
        rc = conn_names(s, Q_JOB_MODELS, id, models, err);
    if (rc == SC_OK) {
        if ((rc = conn_prep(s, Q_JOB_DELETE, &st, err)) == SC_OK) {
            sqldb_bind_text(st, 1, id);
            rc = conn_run(s, st, err, "delete job");
        }
    }
    if (rc == SC_OK)
        rc = store_blob_gc(s, freed, err);
    return conn_end(s, rc, err);
}

int store_job_delete(struct store *pool, const char *id, struct store_names *models,
                     struct store_names *freed, struct sc_error *err)
{
    LOCKED(pool, job_delete(s, id, models, freed, err));
}

/* ---- traces ---- */

/* (rank, sha256, bytes, events) */
static void read_trace_brief(struct sqldb_stmt *st, void *row)
{
    struct api_trace *t = row;
    t->rank = sqldb_column_int64(st, 0);
    store_col_copy(st, 1, t->sha256, sizeof t->sha256);
    t->bytes = sqldb_column_int64(st, 2);
    t->events = sqldb_column_int64(st, 3);
}

/* (rank, sha256, bytes, events, steps, uploaded_ns) */
static void read_trace(struct sqldb_stmt *st, void *row)
{
    struct api_trace *t = row;
    read_trace_brief(st, t);
    t->steps = sqldb_column_int64(st, 4);
    t->uploaded_ns = sqldb_column_int64(st, 5);
}

static int trace_get(struct conn *s, const char *job, int64_t rank, struct api_trace *out,
                     struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_TRACE_GET, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, job);
    sqldb_bind_int64(st, 2, rank);
    rc = conn_one_row(s, st, read_trace, out, "get trace", err);
    return rc == SC_ENOTFOUND
               ? sc_error_set(err, rc, "job '%s' has no trace for rank %lld", job, (long long)rank)
               : rc;
}

int store_trace_get(struct store *pool, const char *job, int64_t rank, struct api_trace *out,
                    struct sc_error *err)
{
    LOCKED(pool, trace_get(s, job, rank, out, err));
}

int store_trace_list(struct store *pool, const char *job, struct api_trace **out, size_t *n,
                     struct sc_error *err)
{
    LOCKED(pool, conn_all_rows(s, Q_TRACE_LIST, job, read_trace, sizeof **out, release_plain, (void **)out,
                               n, "list traces", err));
}

static int trace_put(struct conn *s, const char *job, struct api_trace *t, const char *owner,
                     store_blob_fn place, void *ctx, struct store_names *freed, struct sc_error *err)
{
    int64_t now = t->uploaded_ns = store_now_ns();
    struct sqldb_stmt *st;
    int rc, yes = 0;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = store_digest_lock(s->db, t->sha256, err)) || (rc = conn_exists(s, Q_BLOB_EXISTS, t->sha256, &yes, err)) ||
        (!yes && (rc = place(ctx, t->sha256, err))))
        return conn_end(s, rc, err);
    fp_hold("store.placed", 1000);
    yes = 0;
    if ((rc = conn_exists(s, Q_JOB_EXISTS, job, &yes, err)) || (!yes && (rc = owner_room(s, owner, 1, err))) ||
        (rc = conn_prep(s, Q_JOB_TOUCH, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, job);
    sqldb_bind_int64(st, 2, now);
    sqldb_bind_text(st, 3, owner);
    if ((rc = conn_run(s, st, err, "touch job")))
        return conn_end(s, rc, err);
    if ((rc = conn_prep(s, Q_BLOB_INSERT, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, t->sha256);
    sqldb_bind_int64(st, 2, t->bytes);
    sqldb_bind_int64(st, 3, now);
    if ((rc = conn_run(s, st, err, "insert blob")))
        return conn_end(s, rc, err);
    if ((rc = conn_prep(s, Q_TRACE_UPSERT, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, job);
    sqldb_bind_int64(st, 2, t->rank);
    sqldb_bind_text(st, 3, t->sha256);
    sqldb_bind_int64(st, 4, t->bytes);
    sqldb_bind_int64(st, 5, t->events);
    sqldb_bind_int64(st, 6, t->steps);
    sqldb_bind_int64(st, 7, now);
    if ((rc = conn_run(s, st, err, "put trace")))
        return conn_end(s, rc, err);
    return conn_end(s, store_blob_gc(s, freed, err), err);
}

int store_trace_put(struct store *pool, const char *job, struct api_trace *t, const char *owner,
                    store_blob_fn place, void *ctx, struct store_names *freed, struct sc_error *err)
{
    LOCKED(pool, trace_put(s, job, t, owner, place, ctx, freed, err));
}

/* ---- models ---- */

static void read_model(struct sqldb_stmt *st, void *row)
{
    struct api_model *m = row;
    char status[16];
    store_col_copy(st, 0, m->id, sizeof m->id);
    store_col_copy(st, 1, m->job, sizeof m->job);
    store_col_copy(st, 2, status, sizeof status);
    m->status = !strcmp(status, "ready")         ? API_MODEL_READY
                : !strcmp(status, "failed")      ? API_MODEL_FAILED
                : !strcmp(status, "interrupted") ? API_MODEL_INTERRUPTED
                                                 : API_MODEL_BUILDING;
    m->error = store_col_dup(st, 3);
    m->step_marker = store_col_dup(st, 4);
    m->steps = store_col_dup(st, 5);
    store_col_copy(st, 6, m->version, sizeof m->version);
    m->summary = store_col_dup(st, 7);
    m->created_ns = sqldb_column_int64(st, 8);
    m->finished_ns = sqldb_column_int64(st, 9);
    m->n_ranks = sqldb_column_int64(st, 10);
    m->fold = (int)sqldb_column_int64(st, 11); /* -1: by the job's size */
    m->progress = sqldb_column_double(st, 12);
}

static int model_create(struct conn *s, const struct api_model *m, struct sc_error *err)
{
    int rc, yes = 0;
    int64_t n = 0;
    struct sqldb_stmt *st;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_exists(s, Q_JOB_EXISTS, m->job, &yes, err)) == SC_OK && !yes)
        rc = sc_error_set(err, SC_ENOTFOUND, "no job '%s'", m->job);
    if (rc == SC_OK && (rc = conn_count(s, Q_TRACE_COUNT, m->job, &n, err)) == SC_OK && n == 0)
        rc = sc_error_set(err, SC_EINVAL, "job '%s' has no trace to build a model from", m->job);
    if (rc == SC_OK) {
        if ((rc = conn_prep(s, Q_MODEL_INSERT, &st, err)))
            return conn_end(s, rc, err);
        sqldb_bind_text(st, 1, m->id);
        sqldb_bind_text(st, 2, m->job);
        sqldb_bind_text(st, 3, m->step_marker);
        sqldb_bind_text(st, 4, m->steps);
        sqldb_bind_text(st, 5, m->version);
        sqldb_bind_int64(st, 6, store_now_ns());
        sqldb_bind_int64(st, 7, m->fold);
        rc = conn_run(s, st, err, "insert model");
    }
    if (rc == SC_OK) {
        if ((rc = conn_prep(s, Q_MODEL_PIN, &st, err)))
            return conn_end(s, rc, err);
        sqldb_bind_text(st, 1, m->id);
        sqldb_bind_text(st, 2, m->job);
        rc = conn_run(s, st, err, "pin traces");
    }
    return conn_end(s, rc, err);
}

int store_model_create(struct store *pool, const struct api_model *m, struct sc_error *err)
{
    LOCKED(pool, model_create(s, m, err));
}

static int model_get(struct conn *s, const char *id, struct api_model *out, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_MODEL_GET, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, id);
    rc = conn_one_row(s, st, read_model, out, "get model", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no model '%s'", id) : rc;
}

int store_model_get(struct store *pool, const char *id, struct api_model *out, struct sc_error *err)
{
    LOCKED(pool, model_get(s, id, out, err));
}

static void release_models(void *v, size_t n)
{
    api_models_free(v, n);
}

int store_model_list(struct store *pool, const char *job, const struct api_page *pg, struct api_model **out,
                     size_t *n, int *more, struct sc_error *err)
{
    LOCKED(pool, conn_page_rows(s, job ? Q_MODEL_LIST_JOB : Q_MODEL_LIST, job, pg, more, read_model, sizeof **out,
                                release_models, (void **)out, n, "list models", err));
}

int store_model_traces(struct store *pool, const char *id, struct api_trace **out, size_t *n,
                       struct sc_error *err)
{
    LOCKED(pool, conn_all_rows(s, Q_MODEL_TRACES, id, read_trace_brief, sizeof **out, release_plain,
                               (void **)out, n, "model traces", err));
}

static void read_text(struct sqldb_stmt *st, void *row)
{
    *(char **)row = store_col_dup(st, 0);
}

static int model_opportunities(struct conn *s, const char *id, const char *version, char **doc,
                               struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_MODEL_OPP_GET, &st, err);
    *doc = NULL;
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, id);
    sqldb_bind_text(st, 2, version);
    rc = conn_one_row(s, st, read_text, doc, "get opportunities", err);
    if (rc == SC_OK && !*doc)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no opportunities kept for model '%s'", id) : rc;
}

int store_model_opportunities(struct store *pool, const char *id, const char *version, char **doc,
                              struct sc_error *err)
{
    LOCKED(pool, model_opportunities(s, id, version, doc, err));
}

static int model_keep_opportunities(struct conn *s, const char *id, const char *version, const char *doc,
                                    struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, Q_MODEL_OPP_PUT, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, id);
    sqldb_bind_text(st, 2, version);
    sqldb_bind_text(st, 3, doc);
    rc = conn_run(s, st, err, "keep opportunities");
    if (rc == SC_OK && sqldb_changes(s->db) == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "no ready model '%s'", id);
    return conn_end(s, rc, err);
}

int store_model_keep_opportunities(struct store *pool, const char *id, const char *version, const char *doc,
                                   struct sc_error *err)
{
    LOCKED(pool, model_keep_opportunities(s, id, version, doc, err));
}

static int model_delete(struct conn *s, const char *id, struct store_names *freed,
                        struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, Q_MODEL_DELETE, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, id);
    rc = conn_run(s, st, err, "delete model");
    if (rc == SC_OK && sqldb_changes(s->db) == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "no model '%s'", id);
    if (rc == SC_OK)
        rc = store_blob_gc(s, freed, err);
    return conn_end(s, rc, err);
}

int store_model_delete(struct store *pool, const char *id, struct store_names *freed,
                       struct sc_error *err)
{
    LOCKED(pool, model_delete(s, id, freed, err));
}

/* ---- tokens ---- */

static void read_token(struct sqldb_stmt *st, void *row)
{
    struct api_token *t = row;
    char scope[16];
    store_col_copy(st, 0, t->id, sizeof t->id);
    store_col_copy(st, 1, t->name, sizeof t->name);
    store_col_copy(st, 2, scope, sizeof scope);
    if (api_scope_parse(scope, &t->scope))
        t->scope = API_SCOPE_READ;
    t->created_ns = sqldb_column_int64(st, 3);
    t->revoked_ns = sqldb_column_int64(st, 4);
}

static int token_create(struct conn *s, const struct api_token *t, const char *hash,
                        struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, Q_TOKEN_INSERT, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, t->id);
    sqldb_bind_text(st, 2, t->name);
    sqldb_bind_text(st, 3, api_scope_name(t->scope));
    sqldb_bind_text(st, 4, hash);
    sqldb_bind_int64(st, 5, t->created_ns ? t->created_ns : store_now_ns());
    rc = conn_run(s, st, err, "create token");
    return conn_end(s, rc, err);
}

int store_token_create(struct store *pool, const struct api_token *t, const char *hash,
                       struct sc_error *err)
{
    LOCKED(pool, token_create(s, t, hash, err));
}

static int token_one(struct conn *s, enum store_stmt q, const char *key, struct api_token *out,
                     struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, q, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, key);
    rc = conn_one_row(s, st, read_token, out, "get token", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no such token") : rc;
}

int store_token_lookup(struct store *pool, const char *hash, struct api_token *out,
                       struct sc_error *err)
{
    LOCKED(pool, token_one(s, Q_TOKEN_LOOKUP, hash, out, err));
}

int store_token_list(struct store *pool, const struct api_page *pg, struct api_token **out, size_t *n, int *more,
                     struct sc_error *err)
{
    LOCKED(pool, conn_page_rows(s, Q_TOKEN_LIST, NULL, pg, more, read_token, sizeof **out, release_plain,
                                (void **)out, n, "list tokens", err));
}

static int token_revoke(struct conn *s, const char *id, struct api_token *out,
                        struct sc_error *err)
{
    int64_t admins = 0;
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    /* every revocation (the token read under the lock too): never the last admin token */
    if ((rc = replicas_serialise(s, PG_LOCK_ADMINS, "admins", err)) || (rc = token_one(s, Q_TOKEN_GET, id, out, err)))
        return conn_end(s, rc, err);
    if (out->revoked_ns)
        return conn_end(s, SC_OK, err); /* already revoked: nothing to do */
    if ((rc = conn_count(s, Q_TOKEN_ADMINS, NULL, &admins, err)))
        return conn_end(s, rc, err);
    counted();
    if (out->scope == API_SCOPE_ADMIN && admins <= 1)
        return conn_end(s, sc_error_set(err, SC_EEXIST, "token '%s' is the last active admin token", id),
                        err);
    if ((rc = conn_prep(s, Q_TOKEN_REVOKE, &st, err)))
        return conn_end(s, rc, err);
    out->revoked_ns = store_now_ns();
    sqldb_bind_text(st, 1, id);
    sqldb_bind_int64(st, 2, out->revoked_ns);
    rc = conn_run(s, st, err, "revoke token");
    return conn_end(s, rc, err);
}

int store_token_revoke(struct store *pool, const char *id, struct api_token *out,
                       struct sc_error *err)
{
    LOCKED(pool, token_revoke(s, id, out, err));
}

int store_token_active_admins(struct store *pool, int64_t *n, struct sc_error *err)
{
    LOCKED(pool, conn_count(s, Q_TOKEN_ADMINS, NULL, n, err));
}

/* ---- calibrations ---- */

static void read_calibration(struct sqldb_stmt *st, void *row)
{
    struct api_calibration *c = row;
    store_col_copy(st, 0, c->name, sizeof c->name);
    store_col_copy(st, 1, c->gpu, sizeof c->gpu);
    store_col_copy(st, 2, c->source, sizeof c->source);
    store_col_copy(st, 3, c->model, sizeof c->model);
    store_col_copy(st, 4, c->sha256, sizeof c->sha256);
    c->created_ns = sqldb_column_int64(st, 5);
    c->document = store_col_dup(st, 6);
    c->report = store_col_dup(st, 7);
}

static int calibration_put(struct conn *s, struct api_calibration *c, int *created, struct sc_error *err)
{
    int rc, yes = 0;
    struct sqldb_stmt *st;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_exists(s, Q_CALIB_EXISTS, c->name, &yes, err)) == SC_OK &&
        (rc = conn_prep(s, Q_CALIB_PUT, &st, err)) == SC_OK) {
        c->created_ns = store_now_ns();
        sqldb_bind_text(st, 1, c->name);
        sqldb_bind_text(st, 2, c->gpu);
        sqldb_bind_text(st, 3, c->source);
        sqldb_bind_text(st, 4, c->model[0] ? c->model : NULL);
        sqldb_bind_text(st, 5, c->sha256);
        sqldb_bind_text(st, 6, c->document);
        sqldb_bind_text(st, 7, c->report);
        sqldb_bind_int64(st, 8, c->created_ns);
        rc = conn_run(s, st, err, "put calibration");
    }
    *created = !yes;
    return conn_end(s, rc, err);
}

int store_calibration_put(struct store *pool, struct api_calibration *c, int *created, struct sc_error *err)
{
    LOCKED(pool, calibration_put(s, c, created, err));
}

static int calibration_get(struct conn *s, const char *name, struct api_calibration *out,
                           struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_CALIB_GET, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, name);
    rc = conn_one_row(s, st, read_calibration, out, "get calibration", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no calibration '%s'", name) : rc;
}

int store_calibration_get(struct store *pool, const char *name, struct api_calibration *out,
                          struct sc_error *err)
{
    LOCKED(pool, calibration_get(s, name, out, err));
}

static void release_calibrations(void *v, size_t n)
{
    api_calibrations_free(v, n);
}

int store_calibration_list(struct store *pool, const struct api_page *pg, struct api_calibration **out, size_t *n,
                           int *more, struct sc_error *err)
{
    LOCKED(pool, conn_page_rows(s, Q_CALIB_LIST, NULL, pg, more, read_calibration, sizeof **out,
                                release_calibrations, (void **)out, n, "list calibrations", err));
}

/* ---- the validation ledger ---- */

static void read_validation(struct sqldb_stmt *st, void *row)
{
    struct api_validation *v = row;
    char kind[16];
    v->id = sqldb_column_int64(st, 0);
    store_col_copy(st, 1, v->model, sizeof v->model);
    store_col_copy(st, 2, kind, sizeof kind);
    if (api_ledger_kind_parse(kind, &v->kind))
        v->kind = API_LEDGER_REPLAY;
    v->spec = store_col_dup(st, 3);
    v->set = store_col_dup(st, 4);
    v->measured_ms = sqldb_column_double(st, 5);
    v->predicted_ms = sqldb_column_double(st, 6);
    store_col_copy(st, 7, v->source, sizeof v->source);
    store_col_copy(st, 8, v->run_at, sizeof v->run_at);
    store_col_copy(st, 9, v->version, sizeof v->version);
    store_col_copy(st, 10, v->calibration, sizeof v->calibration);
    v->in_sample = (int)sqldb_column_int64(st, 11) != 0;
    v->created_ns = sqldb_column_int64(st, 12);
}

static int validation_add(struct conn *s, struct api_validation *v, size_t n, const char *owner,
                          struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = owner_room(s, owner, n, err)))
        return conn_end(s, rc, err);
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        if ((rc = conn_prep(s, Q_VALID_INSERT, &st, err)))
            break;
        v[i].created_ns = store_now_ns();
        sqldb_bind_text(st, 1, v[i].model[0] ? v[i].model : NULL);
        sqldb_bind_text(st, 2, api_ledger_kind_name(v[i].kind));
        sqldb_bind_text(st, 3, v[i].spec);
        sqldb_bind_text(st, 4, v[i].set);
        sqldb_bind_double(st, 5, v[i].measured_ms);
        if (v[i].predicted_ms > 0)
            sqldb_bind_double(st, 6, v[i].predicted_ms);
        sqldb_bind_text(st, 7, v[i].source[0] ? v[i].source : NULL);
        sqldb_bind_text(st, 8, v[i].run_at[0] ? v[i].run_at : NULL);
        sqldb_bind_text(st, 9, v[i].version);
        sqldb_bind_text(st, 10, v[i].calibration[0] ? v[i].calibration : NULL);
        sqldb_bind_int64(st, 11, v[i].in_sample != 0);
        sqldb_bind_int64(st, 12, v[i].created_ns);
        sqldb_bind_text(st, 13, owner);
        if (sqldb_step(st) == SQLDB_ROW)
            v[i].id = sqldb_column_int64(st, 0);
        else
            rc = conn_fail(s, err, "add validation");
        sqldb_reset(st);
    }
    return conn_end(s, rc, err);
}

int store_validation_add(struct store *pool, struct api_validation *v, size_t n, const char *owner,
                         struct sc_error *err)
{
    LOCKED(pool, validation_add(s, v, n, owner, err));
}

static void release_validations(void *v, size_t n)
{
    api_validations_free(v, n);
}

static int validation_list(struct conn *s, enum store_stmt q, const char *model, const char *kind,
                           const struct api_page *pg, struct api_validation **out, size_t *n, int *more,
                           struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, q, &st, err);
    *out = NULL;
    *n = 0;
    if (rc)
        return rc;
    sqldb_bind_text(st, 2, kind);
    /* all_rows binds ?1 */
    return conn_page_rows(s, q, model, pg, more, read_validation, sizeof **out, release_validations,
                          (void **)out, n, "list validations", err);
}

int store_validation_list(struct store *pool, const char *model, const char *kind, const struct api_page *pg,
                          struct api_validation **out, size_t *n, int *more, struct sc_error *err)
{
    LOCKED(pool, validation_list(s, Q_VALID_LIST, model, kind, pg, out, n, more, err));
}

int store_validation_summary(struct store *pool, const char *model, const char *kind, struct api_validation **out,
                             size_t *n, struct sc_error *err)
{
    LOCKED(pool, validation_list(s, Q_VALID_SUMMARY, model, kind, NULL, out, n, NULL, err));
}

static int validation_delete(struct conn *s, int64_t id, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, Q_VALID_DELETE, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_int64(st, 1, id);
    rc = conn_run(s, st, err, "delete validation");
    if (rc == SC_OK && sqldb_changes(s->db) == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "no validation %lld", (long long)id);
    return conn_end(s, rc, err);
}

int store_validation_delete(struct store *pool, int64_t id, struct sc_error *err)
{
    LOCKED(pool, validation_delete(s, id, err));
}

/* ---- finished plans ---- */

void store_plan_release(struct store_plan *p)
{
    free(p->request);
    free(p->document);
    free(p->error);
    memset(p, 0, sizeof *p);
}

static int plan_put(struct conn *s, const struct store_plan *p, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, Q_PLAN_PUT, &st, err)) == SC_OK) {
        sqldb_bind_text(st, 1, p->id);
        sqldb_bind_text(st, 2, p->request);
        sqldb_bind_text(st, 3, p->state);
        sqldb_bind_text(st, 4, p->document);
        sqldb_bind_text(st, 5, p->error);
        sqldb_bind_text(st, 6, p->version);
        sqldb_bind_int64(st, 7, p->created_ns);
        sqldb_bind_int64(st, 8, p->finished_ns);
        sqldb_bind_text(st, 9, p->model);
        sqldb_bind_int64(st, 10, p->done);
        sqldb_bind_int64(st, 11, p->total);
        sqldb_bind_text(st, 12, p->owner[0] ? p->owner : NULL);
        rc = conn_run(s, st, err, "put plan");
    }
    return conn_end(s, rc, err);
}

int store_plan_put(struct store *pool, const struct store_plan *p, struct sc_error *err)
{
    LOCKED(pool, plan_put(s, p, err));
}

static int plan_progress(struct conn *s, const char *id, int64_t done, int64_t total, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_PLAN_PROGRESS, &st, err);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, id);
    sqldb_bind_int64(st, 2, done);
    sqldb_bind_int64(st, 3, total);
    return conn_run(s, st, err, "save a plan's progress");
}

int store_plan_progress(struct store *pool, const char *id, int64_t done, int64_t total, struct sc_error *err)
{
    LOCKED(pool, plan_progress(s, id, done, total, err));
}

static void read_id(struct sqldb_stmt *st, void *row)
{
    store_col_copy(st, 0, row, 64);
}

static int plan_interrupted(struct conn *s, const char *request, const char *model, char id[64],
                            struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_PLAN_INTERRUPTED, &st, err);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, request);
    sqldb_bind_text(st, 2, model);
    rc = conn_one_row(s, st, read_id, id, "find an interrupted plan", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no interrupted plan of this request") : rc;
}

int store_plan_interrupted(struct store *pool, const char *request, const char *model, char id[64],
                           struct sc_error *err)
{
    LOCKED(pool, plan_interrupted(s, request, model, id, err));
}

/* On PostgreSQL only the running plans no replica claims (store.h). */
static int plans_interrupt(struct conn *s, int64_t *n, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int pg = conn_is_pg(s), rc = conn_prep(s, pg ? Q_PG_PLANS_INTERRUPT : Q_PLAN_INTERRUPT, &st, err);
    *n = 0;
    if (rc == SC_OK && pg)
        sqldb_bind_int64(st, 1, PG_LOCK_PLAN);
    if (rc == SC_OK && (rc = conn_run(s, st, err, "mark plans interrupted")) == SC_OK)
        *n = sqldb_changes(s->db);
    return rc;
}

int store_plans_interrupt(struct store *pool, int64_t *n, struct sc_error *err)
{
    LOCKED(pool, plans_interrupt(s, n, err));
}

/* The one integer of advisory-lock statement q on plan id (PostgreSQL). */
static int plan_lock(struct conn *s, enum store_stmt q, const char *id, int64_t *v, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, q, &st, err);
    if (rc)
        return rc;
    sqldb_bind_int64(st, 1, PG_LOCK_PLAN);
    sqldb_bind_text(st, 2, id);
    rc = sqldb_step(st) == SQLDB_ROW ? SC_OK : conn_fail(s, err, "plan lock");
    *v = rc == SC_OK ? sqldb_column_int64(st, 0) : 0;
    sqldb_reset(st);
    return rc;
}

static int plan_claim(struct conn *s, const char *id, struct sc_error *err)
{
    char state[64] = ""; /* read_id's size */
    int64_t got = 0;
    struct sqldb_stmt *st;
    int rc;
    if (!conn_is_pg(s))
        return SC_OK;
    if ((rc = plan_lock(s, Q_PG_PLAN_CLAIM, id, &got, err)))
        return rc;
    if (!got)
        return sc_error_set(err, SC_EEXIST, "plan '%s' is running on another replica", id);
    if ((rc = conn_prep(s, Q_PLAN_STATE, &st, err)) == SC_OK) {
        sqldb_bind_text(st, 1, id);
        rc = conn_one_row(s, st, read_id, state, "plan state", err);
        rc = rc == SC_ENOTFOUND ? SC_OK : rc; /* a new plan */
    }
    if (rc == SC_OK && *state && strcmp(state, "interrupted"))
        rc = sc_error_set(err, SC_EEXIST, "plan '%s' is %s already", id, state);
    if (rc)
        plan_lock(s, Q_PG_PLAN_UNCLAIM, id, &got, NULL);
    return rc;
}

int store_plan_claim(struct store *pool, const char *id, struct sc_error *err)
{
    LOCKED_ON(pool, PLAN_CONN, plan_claim(s, id, err));
}

void store_plan_unclaim(struct store *pool, const char *id)
{
    int64_t was;
    struct conn *s = conn_take(pool, PLAN_CONN);
    if (conn_is_pg(s)) /* failing, the connection was lost, and the claim with it */
        (void)plan_lock(s, Q_PG_PLAN_UNCLAIM, id, &was, NULL);
    conn_give(s);
}

static void read_plan(struct sqldb_stmt *st, void *row)
{
    struct store_plan *p = row;
    store_col_copy(st, 0, p->id, sizeof p->id);
    p->request = store_col_dup(st, 1);
    store_col_copy(st, 2, p->state, sizeof p->state);
    p->document = store_col_dup(st, 3);
    p->error = store_col_dup(st, 4);
    store_col_copy(st, 5, p->version, sizeof p->version);
    p->created_ns = sqldb_column_int64(st, 6);
    p->finished_ns = sqldb_column_int64(st, 7);
    store_col_copy(st, 8, p->model, sizeof p->model);
    p->done = sqldb_column_int64(st, 9);
    p->total = sqldb_column_int64(st, 10);
    store_col_copy(st, 11, p->owner, sizeof p->owner);
}

static int plan_get(struct conn *s, const char *id, struct store_plan *out, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_PLAN_GET, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, id);
    rc = conn_one_row(s, st, read_plan, out, "get plan", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no plan '%s'", id) : rc;
}

int store_plan_get(struct store *pool, const char *id, struct store_plan *out, struct sc_error *err)
{
    LOCKED(pool, plan_get(s, id, out, err));
}

static int plan_delete(struct conn *s, const char *id, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, Q_PLAN_DELETE, &st, err)))
        return conn_end(s, rc, err);
    sqldb_bind_text(st, 1, id);
    rc = conn_run(s, st, err, "delete plan");
    if (rc == SC_OK && sqldb_changes(s->db) == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "no plan '%s'", id);
    return conn_end(s, rc, err);
}

int store_plan_delete(struct store *pool, const char *id, struct sc_error *err)
{
    LOCKED(pool, plan_delete(s, id, err));
}

/* ---- experiments ---- */

void store_experiment_release(struct store_experiment *e)
{
    free(e->hypothesis);
    free(e->inputs);
    free(e->verdict);
    free(e->bank);
    memset(e, 0, sizeof *e);
}

void store_experiments_free(struct store_experiment *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        store_experiment_release(&v[i]);
    free(v);
}

static void read_experiment(struct sqldb_stmt *st, void *row)
{
    struct store_experiment *e = row;
    store_col_copy(st, 0, e->id, sizeof e->id);
    store_col_copy(st, 1, e->baseline, sizeof e->baseline);
    store_col_copy(st, 2, e->variant, sizeof e->variant);
    e->hypothesis = store_col_dup(st, 3);
    store_col_copy(st, 4, e->external_id, sizeof e->external_id);
    e->closed = strcmp(sqldb_column_text(st, 5), "closed") == 0;
    e->inputs = store_col_dup(st, 6);
    e->verdict = store_col_dup(st, 7);
    e->bank = store_col_dup(st, 8);
    e->created_ns = sqldb_column_int64(st, 9);
    e->decided_ns = sqldb_column_int64(st, 10);
    e->closed_ns = sqldb_column_int64(st, 11);
}

static int experiment_create(struct conn *s, const struct store_experiment *e, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = owner_room(s, e->owner[0] ? e->owner : NULL, 1, err)) == SC_OK &&
        (rc = conn_prep(s, Q_EXP_INSERT, &st, err)) == SC_OK) {
        sqldb_bind_text(st, 1, e->id);
        sqldb_bind_text(st, 2, e->baseline);
        sqldb_bind_text(st, 3, e->variant);
        sqldb_bind_text(st, 4, e->hypothesis);
        sqldb_bind_text(st, 5, e->external_id[0] ? e->external_id : NULL);
        sqldb_bind_int64(st, 6, e->created_ns);
        sqldb_bind_text(st, 7, e->owner[0] ? e->owner : NULL);
        rc = conn_run(s, st, err, "create experiment");
    }
    return conn_end(s, rc, err);
}

int store_experiment_create(struct store *pool, const struct store_experiment *e, struct sc_error *err)
{
    LOCKED(pool, experiment_create(s, e, err));
}

static int experiment_get(struct conn *s, const char *id, struct store_experiment *out, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_EXP_GET, &st, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, id);
    rc = conn_one_row(s, st, read_experiment, out, "get experiment", err);
    return rc == SC_ENOTFOUND ? sc_error_set(err, rc, "no experiment '%s'", id) : rc;
}

int store_experiment_get(struct store *pool, const char *id, struct store_experiment *out, struct sc_error *err)
{
    LOCKED(pool, experiment_get(s, id, out, err));
}

static void release_experiments(void *v, size_t n)
{
    store_experiments_free(v, n);
}

int store_experiment_list(struct store *pool, const char *external_id, const struct api_page *pg,
                          struct store_experiment **out, size_t *n, int *more, struct sc_error *err)
{
    LOCKED(pool, conn_page_rows(s, Q_EXP_LIST, external_id, pg, more, read_experiment, sizeof **out,
                                release_experiments, (void **)out, n, "list experiments", err));
}

/* One UPDATE of an open experiment: ?1 its id, ?2 text, ?3 a time (decide
 * also ?2 inputs, ?3 verdict, ?4 the time). */
static int experiment_update(struct conn *s, enum store_stmt q, const char *id, const char *a, const char *b,
                             int64_t ns, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc, i = 2;
    if ((rc = sqldb_begin(s->db, err)))
        return rc;
    if ((rc = conn_prep(s, q, &st, err)) == SC_OK) {
        sqldb_bind_text(st, 1, id);
        sqldb_bind_text(st, i++, a);
        if (q == Q_EXP_DECIDE)
            sqldb_bind_text(st, i++, b);
        sqldb_bind_int64(st, i, ns);
        rc = conn_run(s, st, err, "update experiment");
    }
    if (rc == SC_OK && sqldb_changes(s->db) == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "no open experiment '%s'", id);
    return conn_end(s, rc, err);
}

int store_experiment_decide(struct store *pool, const char *id, const char *inputs, const char *verdict,
                            int64_t decided_ns, struct sc_error *err)
{
    LOCKED(pool, experiment_update(s, Q_EXP_DECIDE, id, inputs, verdict, decided_ns, err));
}

int store_experiment_close(struct store *pool, const char *id, const char *bank, struct sc_error *err)
{
    LOCKED(pool, experiment_update(s, Q_EXP_CLOSE, id, bank, NULL, store_now_ns(), err));
}
