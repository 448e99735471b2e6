/* daemon/store_blob.c: the catalog's blob rows (store_blob.h): the lock on
 * a digest that replicas share, the removal of a freed blob's file under
 * it, the sweep of rows nothing names, and the totals. The files are the
 * blob store's (blobs.h); these are the rows that say which are live. */
#include "daemon/store_blob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sqldb.h"
#include "common/banned.h"

/* One lock per digest (store_digest_lock, store_blob.h): a blob's file goes
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

int store_blob_gc(struct conn *s, struct store_names *freed, struct sc_error *err)
{
    return conn_names(s, Q_BLOB_GC, NULL, freed, err);
}
