/* daemon/store_schema.c: the catalog's schema (store_schema.h): SQLite's
 * as its migrations from version 1, PostgreSQL's whole at the version its
 * support began (pg_base) and its migrations since; run forward when the
 * catalog opens, and checked by store_check. Kept apart from the records'
 * statements (store.c) because it changes on its own: a new version
 * touches this file and the statements that read its new columns. */
#include "daemon/store_schema.h"

#include <stdio.h>
#include <string.h>

#include "daemon/sqldb.h"
#include "daemon/store_pool.h"
#include "common/banned.h"

/* SQLite: migration i takes the schema from version i to i + 1. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    "CREATE TABLE jobs("
    "  id TEXT PRIMARY KEY,"
    "  description TEXT,"
    "  created_ns INTEGER NOT NULL,"
    "  updated_ns INTEGER NOT NULL);"
    "CREATE TABLE blobs("
    "  sha256 TEXT PRIMARY KEY,"
    "  bytes INTEGER NOT NULL,"
    "  created_ns INTEGER NOT NULL);"
    "CREATE TABLE traces("
    "  job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    "  rank INTEGER NOT NULL,"
    "  sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    "  bytes INTEGER NOT NULL,"
    "  events INTEGER NOT NULL,"
    "  steps INTEGER NOT NULL,"
    "  uploaded_ns INTEGER NOT NULL,"
    "  PRIMARY KEY(job, rank));"
    "CREATE INDEX traces_sha256 ON traces(sha256);"
    "CREATE TABLE models("
    "  id TEXT PRIMARY KEY,"
    "  job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    "  status TEXT NOT NULL CHECK(status IN ('building', 'ready', 'failed')),"
    "  error TEXT,"
    "  step_marker TEXT,"
    "  steps TEXT,"
    "  version TEXT NOT NULL,"
    "  summary TEXT,"
    "  created_ns INTEGER NOT NULL,"
    "  finished_ns INTEGER);"
    "CREATE INDEX models_job ON models(job);"
    "CREATE TABLE model_traces("
    "  model TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,"
    "  rank INTEGER NOT NULL,"
    "  sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    "  PRIMARY KEY(model, rank));"
    "CREATE INDEX model_traces_sha256 ON model_traces(sha256);"
    "CREATE TABLE validations("
    "  id INTEGER PRIMARY KEY,"
    "  model TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,"
    "  step INTEGER,"
    "  measured_ns INTEGER NOT NULL,"
    "  predicted_ns INTEGER,"
    "  created_ns INTEGER NOT NULL);"
    "CREATE TABLE tokens("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  scope TEXT NOT NULL CHECK(scope IN ('read', 'write', 'admin')),"
    "  hash TEXT NOT NULL UNIQUE,"
    "  created_ns INTEGER NOT NULL,"
    "  revoked_ns INTEGER);",
    /* 2: the validation ledger (entries without a model, outliving their
     * model, with the prediction made at post time) and calibrations */
    "CREATE TABLE ledger("
    "  id INTEGER PRIMARY KEY,"
    "  model TEXT,"
    "  kind TEXT NOT NULL CHECK(kind IN ('replay', 'whatif', 'estimate')),"
    "  spec TEXT,"
    "  set_json TEXT,"
    "  measured_ms REAL NOT NULL,"
    "  predicted_ms REAL,"
    "  source TEXT,"
    "  run_at TEXT,"
    "  version TEXT NOT NULL,"
    "  calibration TEXT,"
    "  in_sample INTEGER NOT NULL DEFAULT 0,"
    "  created_ns INTEGER NOT NULL);"
    "INSERT INTO ledger(id, model, kind, measured_ms, predicted_ms, source, version, created_ns)"
    "  SELECT id, model, 'replay', measured_ns / 1e6, predicted_ns / 1e6,"
    "         CASE WHEN step IS NULL THEN NULL ELSE 'step ' || step END, '', created_ns FROM validations;"
    "DROP TABLE validations;"
    "ALTER TABLE ledger RENAME TO validations;"
    "CREATE INDEX validations_model ON validations(model);"
    "CREATE TABLE calibrations("
    "  name TEXT PRIMARY KEY,"
    "  gpu TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  model TEXT,"
    "  sha256 TEXT NOT NULL,"
    "  document TEXT NOT NULL,"
    "  report TEXT,"
    "  created_ns INTEGER NOT NULL);",
    /* 3: finished plans (POST /v1/plans), kept across restarts */
    "CREATE TABLE plans("
    "  id TEXT PRIMARY KEY,"
    "  request TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK(state IN ('done', 'failed', 'cancelled')),"
    "  document TEXT,"
    "  error TEXT,"
    "  version TEXT NOT NULL,"
    "  created_ns INTEGER NOT NULL,"
    "  finished_ns INTEGER NOT NULL);",
    /* 4: a ready model's opportunities as a stepcast version found them,
     * kept for the fleet's ranking (GET /v1/opportunities) */
    "ALTER TABLE models ADD COLUMN opportunities TEXT; ALTER TABLE models ADD COLUMN opportunities_version TEXT;",
    /* 5: experiments (POST /v1/experiments): two jobs compared, the verdict
     * kept with the digest of the inputs it was computed from */
    "CREATE TABLE experiments("
    "  id TEXT PRIMARY KEY,"
    "  baseline TEXT NOT NULL,"
    "  variant TEXT NOT NULL,"
    "  hypothesis TEXT,"
    "  external_id TEXT,"
    "  state TEXT NOT NULL CHECK(state IN ('open', 'closed')),"
    "  inputs TEXT,"
    "  verdict TEXT,"
    "  bank TEXT,"
    "  created_ns INTEGER NOT NULL,"
    "  decided_ns INTEGER,"
    "  closed_ns INTEGER);"
    "CREATE INDEX experiments_external ON experiments(external_id);",
    /* 6: background plans stored from their 202 on (running, then
     * interrupted by a crash or a shutdown, with their progress), and the
     * model a plan from a model plans from, to resume it */
    "CREATE TABLE plans6("
    "  id TEXT PRIMARY KEY,"
    "  request TEXT NOT NULL,"
    "  model TEXT,"
    "  state TEXT NOT NULL CHECK(state IN ('running', 'interrupted', 'done', 'failed', 'cancelled')),"
    "  document TEXT,"
    "  error TEXT,"
    "  version TEXT NOT NULL,"
    "  done INTEGER NOT NULL DEFAULT 0,"
    "  total INTEGER NOT NULL DEFAULT 0,"
    "  created_ns INTEGER NOT NULL,"
    "  finished_ns INTEGER NOT NULL);"
    "INSERT INTO plans6(id, request, state, document, error, version, created_ns, finished_ns)"
    "  SELECT id, request, state, document, error, version, created_ns, finished_ns FROM plans;"
    "DROP TABLE plans;"
    "ALTER TABLE plans6 RENAME TO plans;",
    /* 7: the token that stored each job, ledger entry, plan and experiment,
     * so that max-stored-per-token can count them */
    "ALTER TABLE jobs ADD COLUMN owner TEXT; CREATE INDEX jobs_owner ON jobs(owner);"
    "ALTER TABLE validations ADD COLUMN owner TEXT; CREATE INDEX validations_owner ON validations(owner);"
    "ALTER TABLE plans ADD COLUMN owner TEXT; CREATE INDEX plans_owner ON plans(owner);"
    "ALTER TABLE experiments ADD COLUMN owner TEXT; CREATE INDEX experiments_owner ON experiments(owner);",
    /* 8: a model's rank folding (model/graph.h, MODEL_FOLD_OVER): NULL by
     * the job's size, 0 never, 1 always */
    "ALTER TABLE models ADD COLUMN fold INTEGER;",
    /* 9: the build queue (build_queue.h): a building model's lease (the
     * replica building it and until when), its progress, and the blob of
     * the built model once ready (model_blob.h) */
    "ALTER TABLE models ADD COLUMN lease_owner TEXT;"
    "ALTER TABLE models ADD COLUMN lease_ns INTEGER;"
    "ALTER TABLE models ADD COLUMN progress REAL;"
    "ALTER TABLE models ADD COLUMN built TEXT REFERENCES blobs(sha256);"
    "CREATE INDEX models_built ON models(built);",
    /* 10: a model may be `interrupted` (a build a shutdown cancelled, with
     * its progress; POST /v1/models/{id}/resume queues it again). SQLite
     * changes a CHECK only by building the table again, its foreign keys
     * off (migrate_sqlite) */
    "CREATE TABLE models10("
    "  id TEXT PRIMARY KEY,"
    "  job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    "  status TEXT NOT NULL CHECK(status IN ('building', 'ready', 'failed', 'interrupted')),"
    "  error TEXT,"
    "  step_marker TEXT,"
    "  steps TEXT,"
    "  version TEXT NOT NULL,"
    "  summary TEXT,"
    "  created_ns INTEGER NOT NULL,"
    "  finished_ns INTEGER,"
    "  opportunities TEXT,"
    "  opportunities_version TEXT,"
    "  fold INTEGER,"
    "  lease_owner TEXT,"
    "  lease_ns INTEGER,"
    "  progress REAL,"
    "  built TEXT REFERENCES blobs(sha256));"
    "INSERT INTO models10(id, job, status, error, step_marker, steps, version, summary, created_ns, finished_ns,"
    "  opportunities, opportunities_version, fold, lease_owner, lease_ns, progress, built)"
    "  SELECT id, job, status, error, step_marker, steps, version, summary, created_ns, finished_ns,"
    "  opportunities, opportunities_version, fold, lease_owner, lease_ns, progress, built FROM models;"
    "DROP TABLE models;"
    "ALTER TABLE models10 RENAME TO models;"
    "CREATE INDEX models_job ON models(job);"
    "CREATE INDEX models_built ON models(built);",
};

/* PostgreSQL catalogs start at version PG_BASE_VERSION, created whole by
 * pg_base: the tables above as migrations 1 to PG_BASE_VERSION leave them,
 * in PostgreSQL's types (BIGINT nanoseconds, DOUBLE PRECISION, an identity
 * column for the ledger's ids). A new schema version needs its PostgreSQL
 * migration too: pg_migrations[i] takes a PostgreSQL catalog from version
 * PG_BASE_VERSION + i to the next. */
#define PG_BASE_VERSION 8
static const char *const pg_migrations[] = {
    /* 9: as SQLite's 9 */
    "ALTER TABLE models ADD COLUMN lease_owner TEXT, ADD COLUMN lease_ns BIGINT,"
    " ADD COLUMN progress DOUBLE PRECISION, ADD COLUMN built TEXT REFERENCES blobs(sha256);"
    "CREATE INDEX models_built ON models(built);",
    /* 10: as SQLite's 10 (pg_base's CHECK has PostgreSQL's default name) */
    "ALTER TABLE models DROP CONSTRAINT models_status_check,"
    " ADD CONSTRAINT models_status_check CHECK(status IN ('building', 'ready', 'failed', 'interrupted'));",
};
_Static_assert(STORE_SCHEMA_VERSION == PG_BASE_VERSION + sizeof pg_migrations / sizeof pg_migrations[0],
               "a schema version after PG_BASE_VERSION needs its PostgreSQL migration in pg_migrations");
/* the key of the advisory lock the migration holds */
#define PG_MIGRATION_LOCK "7310292067"
static const char pg_base[] =
    "CREATE TABLE jobs("
    "  id TEXT PRIMARY KEY,"
    "  description TEXT,"
    "  created_ns BIGINT NOT NULL,"
    "  updated_ns BIGINT NOT NULL,"
    "  owner TEXT);"
    "CREATE INDEX jobs_owner ON jobs(owner);"
    "CREATE TABLE blobs("
    "  sha256 TEXT PRIMARY KEY,"
    "  bytes BIGINT NOT NULL,"
    "  created_ns BIGINT NOT NULL);"
    "CREATE TABLE traces("
    "  job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    "  rank BIGINT NOT NULL,"
    "  sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    "  bytes BIGINT NOT NULL,"
    "  events BIGINT NOT NULL,"
    "  steps BIGINT NOT NULL,"
    "  uploaded_ns BIGINT NOT NULL,"
    "  PRIMARY KEY(job, rank));"
    "CREATE INDEX traces_sha256 ON traces(sha256);"
    "CREATE TABLE models("
    "  id TEXT PRIMARY KEY,"
    "  job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    "  status TEXT NOT NULL CHECK(status IN ('building', 'ready', 'failed')),"
    "  error TEXT,"
    "  step_marker TEXT,"
    "  steps TEXT,"
    "  version TEXT NOT NULL,"
    "  summary TEXT,"
    "  created_ns BIGINT NOT NULL,"
    "  finished_ns BIGINT,"
    "  opportunities TEXT,"
    "  opportunities_version TEXT,"
    "  fold BIGINT);"
    "CREATE INDEX models_job ON models(job);"
    "CREATE TABLE model_traces("
    "  model TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,"
    "  rank BIGINT NOT NULL,"
    "  sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    "  PRIMARY KEY(model, rank));"
    "CREATE INDEX model_traces_sha256 ON model_traces(sha256);"
    "CREATE TABLE tokens("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  scope TEXT NOT NULL CHECK(scope IN ('read', 'write', 'admin')),"
    "  hash TEXT NOT NULL UNIQUE,"
    "  created_ns BIGINT NOT NULL,"
    "  revoked_ns BIGINT);"
    "CREATE TABLE validations("
    "  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    "  model TEXT,"
    "  kind TEXT NOT NULL CHECK(kind IN ('replay', 'whatif', 'estimate')),"
    "  spec TEXT,"
    "  set_json TEXT,"
    "  measured_ms DOUBLE PRECISION NOT NULL,"
    "  predicted_ms DOUBLE PRECISION,"
    "  source TEXT,"
    "  run_at TEXT,"
    "  version TEXT NOT NULL,"
    "  calibration TEXT,"
    "  in_sample BIGINT NOT NULL DEFAULT 0,"
    "  created_ns BIGINT NOT NULL,"
    "  owner TEXT);"
    "CREATE INDEX validations_model ON validations(model);"
    "CREATE INDEX validations_owner ON validations(owner);"
    "CREATE TABLE calibrations("
    "  name TEXT PRIMARY KEY,"
    "  gpu TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  model TEXT,"
    "  sha256 TEXT NOT NULL,"
    "  document TEXT NOT NULL,"
    "  report TEXT,"
    "  created_ns BIGINT NOT NULL);"
    "CREATE TABLE plans("
    "  id TEXT PRIMARY KEY,"
    "  request TEXT NOT NULL,"
    "  model TEXT,"
    "  state TEXT NOT NULL CHECK(state IN ('running', 'interrupted', 'done', 'failed', 'cancelled')),"
    "  document TEXT,"
    "  error TEXT,"
    "  version TEXT NOT NULL,"
    "  done BIGINT NOT NULL DEFAULT 0,"
    "  total BIGINT NOT NULL DEFAULT 0,"
    "  created_ns BIGINT NOT NULL,"
    "  finished_ns BIGINT NOT NULL,"
    "  owner TEXT);"
    "CREATE INDEX plans_owner ON plans(owner);"
    "CREATE TABLE experiments("
    "  id TEXT PRIMARY KEY,"
    "  baseline TEXT NOT NULL,"
    "  variant TEXT NOT NULL,"
    "  hypothesis TEXT,"
    "  external_id TEXT,"
    "  state TEXT NOT NULL CHECK(state IN ('open', 'closed')),"
    "  inputs TEXT,"
    "  verdict TEXT,"
    "  bank TEXT,"
    "  created_ns BIGINT NOT NULL,"
    "  decided_ns BIGINT,"
    "  closed_ns BIGINT,"
    "  owner TEXT);"
    "CREATE INDEX experiments_external ON experiments(external_id);"
    "CREATE INDEX experiments_owner ON experiments(owner);";

static int newer_schema(int64_t version, struct sc_error *err)
{
    return sc_error_set(err, SC_EINVAL, "catalog schema version %lld is newer than this stepcastd (%d)",
                        (long long)version, STORE_SCHEMA_VERSION);
}

/* SQLite: SC_OK when no row names a missing parent after migration to
 * `version` (PRAGMA foreign_key_check finds none). */
static int foreign_keys_met(struct conn *s, int64_t version, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = sqldb_prepare(s->db, "PRAGMA foreign_key_check", &st, err);
    if (rc)
        return rc;
    int r = sqldb_step(st);
    if (r == SQLDB_ROW)
        rc = sc_error_set(err, SC_EINTERNAL, "migration to schema %lld: table %s names a missing row of %s",
                          (long long)version, sqldb_column_text(st, 0), sqldb_column_text(st, 2));
    else if (r != SQLDB_DONE)
        rc = conn_fail(s, err, "PRAGMA foreign_key_check");
    sqldb_finalize(st);
    return rc;
}

/* SQLite: the version in PRAGMA user_version, each migration in its own
 * transaction (the file is this daemon's alone: dir_lock.h). */
static int migrate_sqlite(struct conn *s, struct sc_error *err)
{
    int64_t version = 0;
    int rc = conn_query_int(s, "PRAGMA user_version", &version, err);
    if (rc)
        return rc;
    if (version > STORE_SCHEMA_VERSION)
        return newer_schema(version, err);
    if (version == STORE_SCHEMA_VERSION)
        return SC_OK;
    /* foreign keys off while a migration builds a table again (its DROP
     * would delete the rows that name it), each checked before its commit;
     * the pragma is only heard outside a transaction */
    if ((rc = sqldb_exec(s->db, "PRAGMA foreign_keys = OFF", err)))
        return rc;
    for (; version < STORE_SCHEMA_VERSION && rc == SC_OK; version++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %lld", (long long)version + 1);
        if ((rc = sqldb_begin(s->db, err)))
            break;
        rc = sqldb_exec(s->db, migrations[version], err);
        if (rc == SC_OK)
            rc = sqldb_exec(s->db, bump, err);
        if (rc == SC_OK)
            rc = foreign_keys_met(s, version + 1, err);
        rc = conn_end(s, rc, err);
    }
    int on = sqldb_exec(s->db, "PRAGMA foreign_keys = ON", err);
    return rc ? rc : on;
}

/* PostgreSQL: the version in table stepcast_schema, the whole migration
 * one transaction under an advisory lock, so that daemons starting at
 * once on one database migrate it once, one after the other. */
static int migrate_pg(struct conn *s, struct sc_error *err)
{
    int64_t version = 0;
    char bump[96];
    int rc = sqldb_begin(s->db, err);
    if (rc)
        return rc;
    rc = sqldb_exec(s->db, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK ");"
                 "CREATE TABLE IF NOT EXISTS stepcast_schema(version BIGINT NOT NULL)", err);
    if (rc == SC_OK)
        rc = conn_query_int(s, "SELECT COALESCE(MAX(version), 0) FROM stepcast_schema", &version, err);
    if (rc == SC_OK && version > STORE_SCHEMA_VERSION)
        rc = newer_schema(version, err);
    if (rc == SC_OK && version < PG_BASE_VERSION) {
        rc = sqldb_exec(s->db, pg_base, err);
        version = PG_BASE_VERSION;
    }
    for (; rc == SC_OK && version < STORE_SCHEMA_VERSION; version++)
        rc = sqldb_exec(s->db, pg_migrations[version - PG_BASE_VERSION], err);
    snprintf(bump, sizeof bump, "DELETE FROM stepcast_schema; INSERT INTO stepcast_schema VALUES(%lld)",
             (long long)version);
    if (rc == SC_OK)
        rc = sqldb_exec(s->db, bump, err);
    return conn_end(s, rc, err);
}

/* The first connection's catalog brought to this build's schema. */
static int migrate(struct conn *s, struct sc_error *err)
{
    return conn_is_pg(s) ? migrate_pg(s, err) : migrate_sqlite(s, err);
}

int store_open(const char *url, size_t connections, struct store **out, struct sc_error *err)
{
    return store_pool_open(url, connections, migrate, out, err);
}

/* SQLite: integrity_check and foreign_key_check. PostgreSQL enforces the
 * foreign keys itself and checks its pages: the catalog must answer, at
 * this build's schema version. */
static int check(struct conn *s, struct sc_error *err)
{
    static const char *const checks[] = {"PRAGMA integrity_check", "PRAGMA foreign_key_check"};
    int rc = SC_OK;
    if (conn_is_pg(s)) {
        int64_t version = 0;
        rc = conn_query_int(s, "SELECT COALESCE(MAX(version), 0) FROM stepcast_schema", &version, err);
        if (rc == SC_OK && version != STORE_SCHEMA_VERSION)
            rc = sc_error_set(err, SC_EINTERNAL, "schema version %lld, not %d", (long long)version,
                              STORE_SCHEMA_VERSION);
        return rc;
    }
    for (size_t i = 0; i < 2 && rc == SC_OK; i++) {
        struct sqldb_stmt *st;
        if ((rc = sqldb_prepare(s->db, checks[i], &st, err)))
            break;
        while (rc == SC_OK && sqldb_step(st) == SQLDB_ROW) {
            const char *t = sqldb_column_text(st, 0);
            if (i == 0 && t && strcmp(t, "ok") == 0)
                continue;
            rc = sc_error_set(err, SC_EINTERNAL, "%s: %s", checks[i], t ? t : "violation");
        }
        sqldb_finalize(st);
    }
    return rc;
}

int store_check(struct store *pool, struct sc_error *err)
{
    LOCKED(pool, check(s, err));
}
