/* daemon/store.c: the catalog (store.h), on SQLite or PostgreSQL.
 *
 * Every statement is written once and runs on both engines (sqldb.h); the
 * schema is kept once per engine: SQLite's as its migrations from version
 * 1, PostgreSQL's whole at the version its support began (pg_base).
 * Statements are prepared once and reused: the
 * token lookup runs on every request. Each public function takes a
 * connection of the pool (struct store, below), runs its statements inside
 * one transaction where it writes, resets what it used and gives the
 * connection back. */
#include "daemon/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/ledger.h"
#include "common/vec.h"
#include "daemon/failpoint.h"
#include "daemon/sqldb.h"
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
/* PostgreSQL: classes of the advisory locks on (class, hashtext(key))
 * that serialise replicas (the two-key space, apart from the one above) */
enum { PG_LOCK_OWNER = 7310, PG_LOCK_ADMINS = 7311, PG_LOCK_PLAN = 7312 };
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

enum stmt {
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

#define JOB_COLS                                                                   \
    "j.id, j.description, j.created_ns, j.updated_ns,"                             \
    " (SELECT COUNT(*) FROM traces t WHERE t.job = j.id),"                         \
    " (SELECT COALESCE(SUM(bytes), 0) FROM traces t WHERE t.job = j.id),"          \
    " (SELECT COUNT(*) FROM models m WHERE m.job = j.id)"
/* `summary`: the column, or NULL where lists leave it out */
#define MODEL_COLS(summary)                                                        \
    "m.id, m.job, m.status, m.error, m.step_marker, m.steps, m.version, " summary "," \
    " m.created_ns, COALESCE(m.finished_ns, 0),"                                   \
    " (SELECT COUNT(*) FROM model_traces x WHERE x.model = m.id), COALESCE(m.fold, -1),"  \
    " COALESCE(m.progress, 0)"
#define TOKEN_COLS "id, name, scope, created_ns, COALESCE(revoked_ns, 0)"
#define CALIB_COLS "name, gpu, source, model, sha256, created_ns"
#define VALID_COLS                                                                 \
    "id, model, kind, spec, set_json, measured_ms, COALESCE(predicted_ms, 0), source, run_at," \
    " version, calibration, in_sample, created_ns"

#define EXP_COLS                                                                   \
    "id, baseline, variant, hypothesis, external_id, state, inputs, verdict, bank, created_ns," \
    " COALESCE(decided_ns, 0), COALESCE(closed_ns, 0)"

/* Pages of lists (api/page.h): ?7 and ?8 the key of the last row of the
 * page before (NULL: from the first row), ?9 how many rows (NULL: all). */
/* (the largest BIGINT for all: LIMIT -1 is SQLite's only) */
#define PAGE_LIMIT " LIMIT COALESCE(?9, 9223372036854775807)"
/* (created_ns, id) > (?7, ?8), spelt out, and each parameter's first use
 * one that tells its type: PostgreSQL infers none from a row comparison or
 * from IS NULL */
#define AFTER_NS_ID(t)                                                             \
    "(" t "created_ns > ?7 OR (" t "created_ns = ?7 AND " t "id > ?8) OR ?7 IS NULL)"

static const char *const sql[Q_COUNT] = {
    [Q_BLOB_EXISTS] = "SELECT 1 FROM blobs WHERE sha256 = ?1",
    [Q_BLOB_LIST] = "SELECT sha256 FROM blobs ORDER BY sha256",
    [Q_BLOB_TOTALS] = "SELECT (SELECT COUNT(*) FROM jobs), (SELECT COUNT(*) FROM models),"
                      " COUNT(*), COALESCE(SUM(bytes), 0) FROM blobs",
    [Q_BLOB_INSERT] = "INSERT INTO blobs(sha256, bytes, created_ns) VALUES(?1, ?2, ?3)"
                      " ON CONFLICT(sha256) DO NOTHING",
    [Q_BLOB_GC] = "DELETE FROM blobs WHERE"
                  " NOT EXISTS (SELECT 1 FROM traces t WHERE t.sha256 = blobs.sha256) AND"
                  " NOT EXISTS (SELECT 1 FROM model_traces m WHERE m.sha256 = blobs.sha256) AND"
                  " NOT EXISTS (SELECT 1 FROM models b WHERE b.built = blobs.sha256)"
                  " RETURNING sha256",
    [Q_JOB_EXISTS] = "SELECT 1 FROM jobs WHERE id = ?1",
    [Q_JOB_UPSERT] = "INSERT INTO jobs(id, description, created_ns, updated_ns, owner) VALUES(?1, ?2, ?3, ?3, ?4)"
                     " ON CONFLICT(id) DO UPDATE SET description = excluded.description,"
                     " updated_ns = excluded.updated_ns",
    [Q_JOB_TOUCH] = "INSERT INTO jobs(id, description, created_ns, updated_ns, owner) VALUES(?1, NULL, ?2, ?2, ?3)"
                    " ON CONFLICT(id) DO UPDATE SET updated_ns = excluded.updated_ns",
    [Q_JOB_GET] = "SELECT " JOB_COLS " FROM jobs j WHERE j.id = ?1",
    [Q_JOB_LIST] = "SELECT " JOB_COLS " FROM jobs j WHERE (?7 IS NULL OR j.id > ?8) ORDER BY j.id" PAGE_LIMIT,
    [Q_JOB_DELETE] = "DELETE FROM jobs WHERE id = ?1",
    [Q_JOB_MODELS] = "SELECT id FROM models WHERE job = ?1 ORDER BY id",
    [Q_TRACE_GET] = "SELECT rank, sha256, bytes, events, steps, uploaded_ns FROM traces"
                    " WHERE job = ?1 AND rank = ?2",
    [Q_TRACE_LIST] = "SELECT rank, sha256, bytes, events, steps, uploaded_ns FROM traces"
                     " WHERE job = ?1 ORDER BY rank",
    [Q_TRACE_UPSERT] = "INSERT INTO traces(job, rank, sha256, bytes, events, steps, uploaded_ns)"
                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(job, rank) DO UPDATE SET"
                       " sha256 = excluded.sha256, bytes = excluded.bytes, events = excluded.events,"
                       " steps = excluded.steps, uploaded_ns = excluded.uploaded_ns",
    [Q_TRACE_COUNT] = "SELECT COUNT(*) FROM traces WHERE job = ?1",
    [Q_MODEL_INSERT] = "INSERT INTO models(id, job, status, step_marker, steps, version, created_ns, fold)"
                       " VALUES(?1, ?2, 'building', ?3, ?4, ?5, ?6, NULLIF(?7, -1))",
    [Q_MODEL_PIN] = "INSERT INTO model_traces(model, rank, sha256)"
                    " SELECT ?1, rank, sha256 FROM traces WHERE job = ?2",
    [Q_MODEL_GET] = "SELECT " MODEL_COLS("m.summary") " FROM models m WHERE m.id = ?1",
    [Q_MODEL_LIST] = "SELECT " MODEL_COLS("NULL") " FROM models m WHERE " AFTER_NS_ID("m.")
                     " ORDER BY m.created_ns, m.id" PAGE_LIMIT,
    [Q_MODEL_LIST_JOB] = "SELECT " MODEL_COLS("NULL") " FROM models m WHERE m.job = ?1 AND " AFTER_NS_ID("m.")
                         " ORDER BY m.created_ns, m.id" PAGE_LIMIT,
    /* events: as counted when the blob was uploaded, -1 when no rank
     * holds that blob any more */
    [Q_MODEL_TRACES] = "SELECT x.rank, x.sha256, b.bytes,"
                       " COALESCE((SELECT t.events FROM traces t WHERE t.sha256 = x.sha256 LIMIT 1), -1)"
                       " FROM model_traces x"
                       " JOIN blobs b ON b.sha256 = x.sha256 WHERE x.model = ?1 ORDER BY x.rank",
    [Q_MODEL_DELETE] = "DELETE FROM models WHERE id = ?1",
    [Q_MODEL_OPP_GET] = "SELECT opportunities FROM models"
                        " WHERE id = ?1 AND opportunities_version = ?2 AND opportunities IS NOT NULL",
    [Q_MODEL_OPP_PUT] = "UPDATE models SET opportunities = ?3, opportunities_version = ?2"
                        " WHERE id = ?1 AND status = 'ready'",
    [Q_TOKEN_INSERT] = "INSERT INTO tokens(id, name, scope, hash, created_ns) VALUES(?1, ?2, ?3, ?4, ?5)",
    [Q_TOKEN_LOOKUP] = "SELECT " TOKEN_COLS " FROM tokens WHERE hash = ?1",
    [Q_TOKEN_LIST] = "SELECT " TOKEN_COLS " FROM tokens WHERE " AFTER_NS_ID("") " ORDER BY created_ns, id"
                     PAGE_LIMIT,
    [Q_TOKEN_GET] = "SELECT " TOKEN_COLS " FROM tokens WHERE id = ?1",
    [Q_TOKEN_REVOKE] = "UPDATE tokens SET revoked_ns = ?2 WHERE id = ?1 AND revoked_ns IS NULL",
    [Q_TOKEN_ADMINS] = "SELECT COUNT(*) FROM tokens WHERE scope = 'admin' AND revoked_ns IS NULL",
    [Q_CALIB_PUT] = "INSERT INTO calibrations(name, gpu, source, model, sha256, document, report, created_ns)"
                    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(name) DO UPDATE SET"
                    " gpu = excluded.gpu, source = excluded.source, model = excluded.model,"
                    " sha256 = excluded.sha256, document = excluded.document, report = excluded.report,"
                    " created_ns = excluded.created_ns",
    [Q_CALIB_GET] = "SELECT " CALIB_COLS ", document, report FROM calibrations WHERE name = ?1",
    [Q_CALIB_LIST] = "SELECT " CALIB_COLS ", NULL, NULL FROM calibrations WHERE (?7 IS NULL OR name > ?8)"
                     " ORDER BY name" PAGE_LIMIT,
    [Q_CALIB_EXISTS] = "SELECT 1 FROM calibrations WHERE name = ?1",
    [Q_VALID_INSERT] = "INSERT INTO validations(model, kind, spec, set_json, measured_ms, predicted_ms, source,"
                       " run_at, version, calibration, in_sample, created_ns, owner)"
                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING id",
    [Q_VALID_LIST] = "SELECT " VALID_COLS " FROM validations WHERE (model = ?1 OR ?1 IS NULL)"
                     " AND (kind = ?2 OR ?2 IS NULL) AND (id > ?7 OR ?7 IS NULL) ORDER BY id" PAGE_LIMIT,
    /* what MAPEs and bands read: of the texts only the model's id and run_at */
    [Q_VALID_SUMMARY] = "SELECT id, model, kind, NULL, NULL, measured_ms, COALESCE(predicted_ms, 0), NULL, run_at,"
                        " '', NULL, in_sample, created_ns FROM validations WHERE (model = ?1 OR ?1 IS NULL)"
                        " AND (kind = ?2 OR ?2 IS NULL) ORDER BY id",
    [Q_VALID_DELETE] = "DELETE FROM validations WHERE id = ?1",
    [Q_PLAN_PUT] = "INSERT INTO plans(id, request, state, document, error, version, created_ns, finished_ns, model,"
                   " done, total, owner) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULLIF(?9, ''), ?10, ?11, ?12)"
                   " ON CONFLICT(id) DO UPDATE SET state = excluded.state, document = excluded.document,"
                   " error = excluded.error, version = excluded.version, finished_ns = excluded.finished_ns,"
                   " done = excluded.done, total = excluded.total",
    [Q_PLAN_GET] = "SELECT id, request, state, document, error, version, created_ns, finished_ns,"
                   " COALESCE(model, ''), done, total, COALESCE(owner, '') FROM plans WHERE id = ?1",
    [Q_PLAN_PROGRESS] = "UPDATE plans SET done = ?2, total = ?3 WHERE id = ?1 AND state = 'running'",
    [Q_PLAN_INTERRUPT] = "UPDATE plans SET state = 'interrupted' WHERE state = 'running'",
    [Q_PLAN_INTERRUPTED] = "SELECT id FROM plans WHERE state = 'interrupted' AND request = ?1"
                           " AND COALESCE(model, '') = ?2 ORDER BY created_ns, id LIMIT 1",
    [Q_PLAN_DELETE] = "DELETE FROM plans WHERE id = ?1",
    [Q_EXP_INSERT] = "INSERT INTO experiments(id, baseline, variant, hypothesis, external_id, state, created_ns,"
                     " owner) VALUES(?1, ?2, ?3, ?4, ?5, 'open', ?6, ?7)",
    [Q_EXP_GET] = "SELECT " EXP_COLS " FROM experiments WHERE id = ?1",
    [Q_EXP_LIST] = "SELECT " EXP_COLS " FROM experiments WHERE (external_id = ?1 OR ?1 IS NULL) AND "
                   AFTER_NS_ID("") " ORDER BY created_ns, id" PAGE_LIMIT,
    [Q_EXP_DECIDE] = "UPDATE experiments SET inputs = ?2, verdict = ?3, decided_ns = ?4"
                     " WHERE id = ?1 AND state = 'open'",
    [Q_EXP_CLOSE] = "UPDATE experiments SET state = 'closed', bank = ?2, closed_ns = ?3"
                    " WHERE id = ?1 AND state = 'open'",
    [Q_OWNED] = "SELECT (SELECT COUNT(*) FROM jobs WHERE owner = ?1) + (SELECT COUNT(*) FROM validations"
                " WHERE owner = ?1) + (SELECT COUNT(*) FROM plans WHERE owner = ?1) +"
                " (SELECT COUNT(*) FROM experiments WHERE owner = ?1)",
    /* PostgreSQL only: advisory locks of class ?1 on a text key (replicas, below) */
    [Q_PG_XACT_LOCK] = "SELECT pg_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(?2))",
    /* a blob's digest: the one-key space, which no two-key lock shares */
    [Q_PG_PLAN_CLAIM] = "SELECT CAST(pg_try_advisory_lock(CAST(?1 AS INTEGER), hashtext(?2)) AS INTEGER)",
    [Q_PG_PLAN_UNCLAIM] = "SELECT pg_advisory_unlock(CAST(?1 AS INTEGER), hashtext(?2))",
    [Q_PG_PLANS_INTERRUPT] = "UPDATE plans SET state = 'interrupted' WHERE state = 'running'"
                             " AND pg_try_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(id))",
    [Q_PLAN_STATE] = "SELECT state FROM plans WHERE id = ?1",
};

/* One connection of the pool, with its own prepared statements. */
struct conn {
    struct store *pool;
    struct sqldb *db;
    struct sqldb_stmt *st[Q_COUNT];
    int busy;
};

/* The pool: a public function takes a free connection (waiting for one),
 * runs its transaction on it and gives it back. SQLite has one
 * connection (one writer: BEGIN IMMEDIATE); PostgreSQL store-connections.
 * Plan claims are session locks: they are taken and released on
 * connection PLAN_CONN. */
struct store {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    struct conn *conns;
    size_t n;
    int64_t max_owned; /* rows one token may store (store_set_max_owned), 0: any */
};

#define ANY_CONN (-1)
#define PLAN_CONN 0

/* A free connection (want: ANY_CONN, or that one), marked busy. */
static struct conn *conn_take(struct store *pool, int want)
{
    struct conn *c = NULL;
    pthread_mutex_lock(&pool->mu);
    while (!c) {
        for (size_t i = 0; i < pool->n && !c; i++)
            if (!pool->conns[i].busy && (want == ANY_CONN || (size_t)want == i))
                c = &pool->conns[i];
        if (!c)
            pthread_cond_wait(&pool->freed, &pool->mu);
    }
    c->busy = 1;
    pthread_mutex_unlock(&pool->mu);
    return c;
}

static void conn_give(struct conn *c)
{
    struct store *pool = c->pool;
    pthread_mutex_lock(&pool->mu);
    c->busy = 0;
    pthread_cond_broadcast(&pool->freed);
    pthread_mutex_unlock(&pool->mu);
}

static int conn_is_pg(const struct conn *s)
{
    return sqldb_kind(s->db) == SQLDB_POSTGRESQL;
}

/* The body of a public function: expr run on a connection s of pool
 * (ANY_CONN, or connection `want`). */
#define LOCKED_ON(pool, want, expr)                                                \
    do {                                                                           \
        struct conn *s = conn_take((pool), (want));                                \
        int rc_ = (expr);                                                          \
        conn_give(s);                                                              \
        return rc_;                                                                \
    } while (0)
#define LOCKED(pool, expr) LOCKED_ON(pool, ANY_CONN, expr)

int64_t store_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void store_names_release(struct store_names *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int names_add(struct store_names *l, const char *s, struct sc_error *err)
{
    if (sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    snprintf(l->v[l->n++], STORE_NAME_MAX, "%s", s);
    return SC_OK;
}

static int conn_fail(struct conn *s, struct sc_error *err, const char *what)
{
    return sc_error_set(err, sqldb_status(s->db), "catalog: %s: %s", what, sqldb_errmsg(s->db));
}

/* Statement q, prepared on first use and kept. */
static int conn_prep(struct conn *s, enum stmt q, struct sqldb_stmt **st, struct sc_error *err)
{
    int rc;
    if (!s->st[q] && (rc = sqldb_prepare(s->db, sql[q], &s->st[q], err)))
        return rc;
    *st = s->st[q];
    return SC_OK;
}

/* sqldb_step to completion, for statements without rows. */
static int conn_run(struct conn *s, struct sqldb_stmt *st, struct sc_error *err, const char *what)
{
    int r = sqldb_step(st);
    int rc = r == SQLDB_DONE || r == SQLDB_ROW ? SC_OK : conn_fail(s, err, what);
    sqldb_reset(st);
    return rc;
}

static char *store_col_dup(struct sqldb_stmt *st, int i)
{
    const char *t = sqldb_column_text(st, i);
    return t ? strdup(t) : NULL;
}

static void store_col_copy(struct sqldb_stmt *st, int i, char *out, size_t n)
{
    const char *t = sqldb_column_text(st, i);
    snprintf(out, n, "%s", t ? t : "");
}

/* COMMIT when rc is OK, else ROLLBACK; returns the first failure. */
static int conn_end(struct conn *s, int rc, struct sc_error *err)
{
    if (rc == SC_OK)
        return sqldb_commit(s->db, err);
    sqldb_rollback(s->db);
    return rc;
}

/* The one integer of a query without parameters into *v (a statement
 * prepared for this call only). */
static int conn_query_int(struct conn *s, const char *q, int64_t *v, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = sqldb_prepare(s->db, q, &st, err);
    if (rc)
        return rc;
    rc = sqldb_step(st) == SQLDB_ROW ? SC_OK : conn_fail(s, err, q);
    *v = rc == SC_OK ? sqldb_column_int64(st, 0) : 0;
    sqldb_finalize(st);
    return rc;
}

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

int store_open(const char *url, size_t connections, struct store **out, struct sc_error *err)
{
    struct store *pool = calloc(1, sizeof *pool);
    int rc;
    *out = NULL;
    if (!pool || !(pool->conns = calloc(connections ? connections : 1, sizeof *pool->conns))) {
        free(pool);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->freed, NULL);
    pool->conns[0].pool = pool;
    pool->n = 1;
    struct conn *s = &pool->conns[0];
    rc = sqldb_open(url, &s->db, err);
    if (rc == SC_OK)
        rc = conn_is_pg(s) ? migrate_pg(s, err) : migrate_sqlite(s, err);
    /* SQLite: one connection, its one writer */
    for (size_t i = 1; rc == SC_OK && conn_is_pg(s) && i < connections; i++) {
        pool->conns[i].pool = pool;
        rc = sqldb_open(url, &pool->conns[i].db, err);
        pool->n += rc == SC_OK;
    }
    if (rc) {
        if (s->db)
            sc_error_prefix(err, "'%s'", url);
        store_close(pool);
        return rc;
    }
    *out = pool;
    return SC_OK;
}

void store_close(struct store *pool)
{
    if (!pool)
        return;
    for (size_t k = 0; k < pool->n; k++) {
        for (int i = 0; i < Q_COUNT; i++)
            sqldb_finalize(pool->conns[k].st[i]);
        sqldb_close(pool->conns[k].db);
    }
    pthread_cond_destroy(&pool->freed);
    pthread_mutex_destroy(&pool->mu);
    free(pool->conns);
    free(pool);
}

int store_is_postgresql(const struct store *pool)
{
    return conn_is_pg(&pool->conns[0]);
}

int store_ping(struct store *pool, struct sc_error *err)
{
    int64_t one;
    LOCKED(pool, conn_query_int(s, "SELECT 1", &one, err));
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

/* ---- helpers run on a connection taken ---- */

static int conn_exists(struct conn *s, enum stmt q, const char *key, int *yes, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, q, &st, err);
    if (rc)
        return rc;
    sqldb_bind_text(st, 1, key);
    int r = sqldb_step(st);
    *yes = r == SQLDB_ROW;
    rc = r == SQLDB_ROW || r == SQLDB_DONE ? SC_OK : conn_fail(s, err, "lookup");
    sqldb_reset(st);
    return rc;
}

static int conn_names(struct conn *s, enum stmt q, const char *key, struct store_names *out,
                       struct sc_error *err)
{
    struct sqldb_stmt *st;
    int r, rc = conn_prep(s, q, &st, err);
    if (rc)
        return rc;
    if (key)
        sqldb_bind_text(st, 1, key);
    while (rc == SC_OK && (r = sqldb_step(st)) == SQLDB_ROW)
        rc = names_add(out, sqldb_column_text(st, 0), err);
    if (rc == SC_OK && r != SQLDB_DONE)
        rc = conn_fail(s, err, "query");
    sqldb_reset(st);
    return rc;
}

static int store_blob_gc(struct conn *s, struct store_names *freed, struct sc_error *err)
{
    return conn_names(s, Q_BLOB_GC, NULL, freed, err);
}

static int conn_count(struct conn *s, enum stmt q, const char *key, int64_t *n, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, q, &st, err);
    if (rc)
        return rc;
    if (key)
        sqldb_bind_text(st, 1, key);
    rc = sqldb_step(st) == SQLDB_ROW ? SC_OK : conn_fail(s, err, "count");
    *n = rc == SC_OK ? sqldb_column_int64(st, 0) : 0;
    sqldb_reset(st);
    return rc;
}

/* Reads the current row of a statement into one element of a result. */
typedef void (*store_row_fn)(struct sqldb_stmt *st, void *row);

/* The one row of the bound statement st into *row, then st is done:
 * SC_ENOTFOUND with err untouched when there is none, for the caller to say
 * what is missing. */
static int conn_one_row(struct conn *s, struct sqldb_stmt *st, store_row_fn read, void *row,
                   const char *what, struct sc_error *err)
{
    int r = sqldb_step(st), rc = SC_OK;
    if (r == SQLDB_ROW)
        read(st, row);
    else
        rc = r == SQLDB_DONE ? SC_ENOTFOUND : conn_fail(s, err, what);
    sqldb_reset(st);
    return rc;
}

/* Every row of statement q (with ?1 = key, unless NULL) into a new array of
 * zeroed elements of `size` bytes. On failure the rows read so far are
 * given to release. */
/* The rows of q (?1 bound to key when given); with pg, one page of a
 * list (?7 to ?9, sql[] above): *more says whether rows follow it. */
static int conn_page_rows(struct conn *s, enum stmt q, const char *key, const struct api_page *pg, int *more,
                     store_row_fn read, size_t size, void (*release)(void *v, size_t n), void **out, size_t *n,
                     const char *what, struct sc_error *err)
{
    struct sqldb_stmt *st;
    char *v = NULL;
    size_t cap = 0, k = 0;
    int r, rc = conn_prep(s, q, &st, err);
    *out = NULL;
    *n = 0;
    if (more)
        *more = 0;
    if (rc)
        return rc;
    if (key)
        sqldb_bind_text(st, 1, key);
    if (pg && pg->has_after) {
        sqldb_bind_int64(st, 7, pg->after_num);
        sqldb_bind_text(st, 8, pg->after_id);
    }
    if (pg)
        sqldb_bind_int64(st, 9, (int64_t)pg->limit + 1); /* one more: is there a next page? */
    while ((r = sqldb_step(st)) == SQLDB_ROW) {
        if (pg && k == pg->limit) {
            *more = 1;
            r = SQLDB_DONE;
            break;
        }
        if (sc_vec_reserve((void **)&v, &cap, k + 1, size)) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            break;
        }
        memset(v + k * size, 0, size);
        read(st, v + k++ * size);
    }
    if (rc == SC_OK && r != SQLDB_DONE)
        rc = conn_fail(s, err, what);
    sqldb_reset(st);
    if (rc) {
        release(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return SC_OK;
}

static int conn_all_rows(struct conn *s, enum stmt q, const char *key, store_row_fn read, size_t size,
                    void (*release)(void *v, size_t n), void **out, size_t *n, const char *what, struct sc_error *err)
{
    return conn_page_rows(s, q, key, NULL, NULL, read, size, release, out, n, what, err);
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

/* ---- blobs ---- */

/* One lock per digest (store_digest_lock, store.h): a blob's file goes
 * into place and its row is committed (trace_put, and a build's bq_finish)
 * under the lock on its digest, and a freed blob's
 * file is unlinked (store_blob_remove) under the same lock once no row
 * names it. So no replica unlinks a file whose row another replica has
 * just committed again for the same content. On PostgreSQL: a
 * transaction-scoped advisory lock keyed on the digest's first 64 bits;
 * on SQLite (one daemon per catalog, dir_lock.h) BEGIN IMMEDIATE and the
 * mutex hold the whole catalog already. */
int store_digest_lock(struct sqldb *db, const char *sha, struct sc_error *err)
{
    char head[17];
    uint64_t u;
    int64_t key;
    if (sqldb_kind(db) != SQLDB_POSTGRESQL)
        return SC_OK;
    snprintf(head, sizeof head, "%.16s", sha);
    u = strtoull(head, NULL, 16);
    memcpy(&key, &u, sizeof key);
    struct sqldb_arg a[] = {SQLDB_I(key)};
    return sqldb_each_row(db, "SELECT pg_advisory_xact_lock(CAST(?1 AS BIGINT))", a, 1, NULL, NULL, NULL,
                          "catalog: lock blob", err);
}

static int blob_remove(struct conn *s, const char *sha, store_blob_fn unlink_file, void *ctx,
                       struct sc_error *err)
{
    int yes = 0, rc = sqldb_begin(s->db, err);
    if (rc)
        return rc;
    if ((rc = store_digest_lock(s->db, sha, err)) == SC_OK &&
        (rc = conn_exists(s, Q_BLOB_EXISTS, sha, &yes, err)) == SC_OK && !yes)
        rc = unlink_file(ctx, sha, err);
    return conn_end(s, rc, err);
}

int store_blob_remove(struct store *pool, const char *sha, store_blob_fn unlink_file, void *ctx,
                      struct sc_error *err)
{
    LOCKED(pool, blob_remove(s, sha, unlink_file, ctx, err));
}

int store_blob_list(struct store *pool, struct store_names *out, struct sc_error *err)
{
    LOCKED(pool, conn_names(s, Q_BLOB_LIST, NULL, out, err));
}

static int totals(struct conn *s, struct store_totals *t, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = conn_prep(s, Q_BLOB_TOTALS, &st, err);
    memset(t, 0, sizeof *t);
    if (rc)
        return rc;
    rc = sqldb_step(st) == SQLDB_ROW ? SC_OK : conn_fail(s, err, "totals");
    if (rc == SC_OK) {
        t->jobs = sqldb_column_int64(st, 0);
        t->models = sqldb_column_int64(st, 1);
        t->blobs = sqldb_column_int64(st, 2);
        t->blob_bytes = sqldb_column_int64(st, 3);
    }
    sqldb_reset(st);
    return rc;
}

int store_totals(struct store *pool, struct store_totals *t, struct sc_error *err)
{
    LOCKED(pool, totals(s, t, err));
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
    if ((rc = conn_exists(s, Q_JOB_EXISTS, id, &yes, err)) == SC_OK && (yes || (rc = owner_room(s, owner, 1, err)) == SC_OK)) {
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
    LOCKED(pool, conn_page_rows(s, Q_JOB_LIST, NULL, pg, more, read_job, sizeof **out, release_jobs, (void **)out, n,
                        "list jobs", err));
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

struct sqldb *store_db_hold(struct store *pool)
{
    return conn_take(pool, ANY_CONN)->db;
}

void store_db_release(struct store *pool, struct sqldb *db)
{
    for (size_t i = 0; i < pool->n; i++)
        if (pool->conns[i].db == db)
            conn_give(&pool->conns[i]);
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

static int token_one(struct conn *s, enum stmt q, const char *key, struct api_token *out,
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
    LOCKED(pool, conn_page_rows(s, Q_TOKEN_LIST, NULL, pg, more, read_token, sizeof **out, release_plain, (void **)out, n,
                        "list tokens", err));
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
    LOCKED(pool, conn_page_rows(s, Q_CALIB_LIST, NULL, pg, more, read_calibration, sizeof **out, release_calibrations,
                        (void **)out, n, "list calibrations", err));
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

static int validation_list(struct conn *s, enum stmt q, const char *model, const char *kind,
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
static int plan_lock(struct conn *s, enum stmt q, const char *id, int64_t *v, struct sc_error *err)
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
    LOCKED(pool, conn_page_rows(s, Q_EXP_LIST, external_id, pg, more, read_experiment, sizeof **out, release_experiments,
                        (void **)out, n, "list experiments", err));
}

/* One UPDATE of an open experiment: ?1 its id, ?2 text, ?3 a time (decide
 * also ?2 inputs, ?3 verdict, ?4 the time). */
static int experiment_update(struct conn *s, enum stmt q, const char *id, const char *a, const char *b, int64_t ns,
                             struct sc_error *err)
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
