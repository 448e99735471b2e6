/* daemon/store_blob.h: the catalog's blob rows (store.h).
 *
 * A `blobs` row names a file of the blob store (blobs.h) by its SHA-256;
 * traces and model_traces point at blob rows. A blob row exists only while
 * something points at it: every function of the catalog that drops
 * references deletes the rows left unreferenced (store_blob_gc) in the
 * same transaction and hands their names back (`freed`) for the caller to
 * unlink after the commit, under the lock on their digest. */
#ifndef DAEMON_STORE_BLOB_H
#define DAEMON_STORE_BLOB_H

#include <stdint.h>

#include "common/error.h"
#include "daemon/store_pool.h"

/* What the store calls to put a blob's file in place, or to unlink it,
 * inside the transaction that holds the lock on its digest. */
typedef int (*store_blob_fn)(void *ctx, const char *sha, struct sc_error *err);
/* Unlink a blob freed by a delete (`freed`, store.h) with unlink_file,
 * unless a row names it again: another replica committed the same
 * content since. The removal and trace_put's placing and commit are
 * serialised per digest, on every replica (a PostgreSQL advisory lock). */
int store_blob_remove(struct store *s, const char *sha, store_blob_fn unlink_file, void *ctx,
                      struct sc_error *err);
/* Every blob row, for sweeps and checks. */
int store_blob_list(struct store *s, struct store_names *out, struct sc_error *err);

struct store_totals {
    int64_t jobs, models, blobs, blob_bytes;
};
int store_totals(struct store *s, struct store_totals *t, struct sc_error *err);

/* Inside a transaction on db: the lock on blob sha's digest, held until
 * it ends. Whoever puts a blob's file in place and commits its row, and
 * whoever removes a file no row names any more, takes it first, so no
 * replica removes a file another has just committed a row for. On
 * PostgreSQL a transaction-scoped advisory lock on the digest's first 64
 * bits; on SQLite nothing (one daemon per catalog, whose writes are
 * serial). */
int store_digest_lock(struct sqldb *db, const char *sha, struct sc_error *err);

/* In the transaction open on s: delete the blob rows nothing names any
 * more, their names added to freed (store*.c). */
int store_blob_gc(struct conn *s, struct store_names *freed, struct sc_error *err);

#endif
