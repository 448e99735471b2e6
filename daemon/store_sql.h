/* daemon/store_sql.h: every statement of the catalog (store.h), by number.
 *
 * Each is written once and runs on both engines (sqldb.h). A connection of
 * the pool (store_pool.h) prepares statement q from store_sql[q] on its
 * first use and keeps it, so the token lookup that every request makes is
 * prepared once per connection. The table stands apart from the code
 * that runs it, so that the pool, the blob rows (store_blob.c) and the
 * records (store.c) number the statements alike. */
#ifndef DAEMON_STORE_SQL_H
#define DAEMON_STORE_SQL_H

enum store_stmt {
    Q_BLOB_EXISTS, Q_BLOB_LIST, Q_BLOB_TOTALS, Q_BLOB_INSERT, Q_BLOB_GC,
    Q_JOB_EXISTS, Q_JOB_UPSERT, Q_JOB_TOUCH, Q_JOB_GET, Q_JOB_LIST, Q_JOB_DELETE, Q_JOB_MODELS,
    Q_TRACE_GET, Q_TRACE_LIST, Q_TRACE_UPSERT, Q_TRACE_COUNT,
    Q_MODEL_INSERT, Q_MODEL_PIN, Q_MODEL_GET, Q_MODEL_LIST, Q_MODEL_LIST_JOB, Q_MODEL_TRACES,
    Q_MODEL_DELETE, Q_MODEL_OPP_GET, Q_MODEL_OPP_PUT,
    Q_TOKEN_INSERT, Q_TOKEN_LOOKUP, Q_TOKEN_LIST, Q_TOKEN_GET, Q_TOKEN_REVOKE, Q_TOKEN_ADMINS,
    Q_CALIB_PUT, Q_CALIB_GET, Q_CALIB_LIST, Q_CALIB_EXISTS,
    Q_VALID_INSERT, Q_VALID_LIST, Q_VALID_SUMMARY, Q_VALID_DELETE,
    Q_PLAN_PUT, Q_PLAN_GET, Q_PLAN_DELETE, Q_PLAN_PROGRESS, Q_PLAN_INTERRUPT, Q_PLAN_INTERRUPTED,
    Q_EXP_INSERT, Q_EXP_GET, Q_EXP_LIST, Q_EXP_DECIDE, Q_EXP_CLOSE,
    Q_OWNED,
    Q_PG_XACT_LOCK, Q_PG_PLAN_CLAIM, Q_PG_PLAN_UNCLAIM, Q_PG_PLANS_INTERRUPT, Q_PLAN_STATE,
    Q_COUNT
};

extern const char *const store_sql[Q_COUNT];

#endif
