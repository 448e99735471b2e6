/* daemon/store_sql.c: the text of every statement of the catalog
 * (store_sql.h), in the SQL both SQLite and PostgreSQL run: lists page with
 * `LIMIT COALESCE(?9, ...)`, optional filters read `x = ?1 OR ?1 IS NULL`,
 * inserts that need their id say `RETURNING id`. */
#include "daemon/store_sql.h"

#include "common/banned.h"

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

const char *const store_sql[Q_COUNT] = {
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
    /* PostgreSQL only: advisory locks of class ?1 on a text key (replicas, store.c) */
    [Q_PG_XACT_LOCK] = "SELECT pg_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(?2))",
    /* a blob's digest: the one-key space, which no two-key lock shares */
    [Q_PG_PLAN_CLAIM] = "SELECT CAST(pg_try_advisory_lock(CAST(?1 AS INTEGER), hashtext(?2)) AS INTEGER)",
    [Q_PG_PLAN_UNCLAIM] = "SELECT pg_advisory_unlock(CAST(?1 AS INTEGER), hashtext(?2))",
    [Q_PG_PLANS_INTERRUPT] = "UPDATE plans SET state = 'interrupted' WHERE state = 'running'"
                             " AND pg_try_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(id))",
    [Q_PLAN_STATE] = "SELECT state FROM plans WHERE id = ?1",
};
