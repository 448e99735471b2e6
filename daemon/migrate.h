/* daemon/migrate.h: stepcastd --migrate, a catalog and its blobs copied
 * from one store to another (SQLite to PostgreSQL, as deployment.md
 * says).
 *
 * Both ends are opened as a daemon opens them (store.h: created or
 * migrated to this build's schema version, refused when newer); the
 * target's catalog must be empty, so the copy is all or nothing (one
 * transaction) and a second run refuses with a clear message. Every table
 * is copied row by row, parents first, numbers exactly; the blobs the
 * catalog names are copied from the source's data directory (the folder
 * of its SQLite file) into the target's (--data-dir) through the blob
 * store (blobs.h), each re-hashed on the way. Run it with no daemon on
 * either end. */
#ifndef DAEMON_MIGRATE_H
#define DAEMON_MIGRATE_H

#include <stdio.h>

#include "common/error.h"

/* Copy catalog `from` (sqlite:PATH) and its blobs into catalog `to`
 * (postgresql://..., or another sqlite:PATH) and data directory
 * to_data_dir (its blobs into to_blobs: --blobs, NULL or "" for
 * <to_data_dir>/blobs); what it did, table by table, to report. */
int migrate_run(const char *from, const char *to, const char *to_data_dir, const char *to_blobs, FILE *report,
                struct sc_error *err);

#endif
