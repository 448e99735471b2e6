/* daemon/store_schema.h: the catalog's schema (store.h): its version,
 * created or migrated forward when the catalog opens, and checked.
 *
 * SQLite keeps the version in PRAGMA user_version and runs each migration
 * in its own transaction; PostgreSQL keeps it in table stepcast_schema and
 * migrates in one transaction under an advisory lock, so that daemons
 * starting at once migrate it once. A newer schema than this build knows
 * is refused. */
#ifndef DAEMON_STORE_SCHEMA_H
#define DAEMON_STORE_SCHEMA_H

#include <stddef.h>

#include "common/error.h"

#define STORE_SCHEMA_VERSION 10

struct store;

/* Open or create the catalog of a store URL (sqlite:PATH or
 * postgresql://...) and migrate it. PostgreSQL: a pool of `connections`
 * connections (at least 1); SQLite: one. Closed with store_close
 * (store_pool.h). */
int store_open(const char *url, size_t connections, struct store **out, struct sc_error *err);

/* SQLite: PRAGMA integrity_check and foreign_key_check; PostgreSQL (which
 * enforces foreign keys itself): the schema is this build's. SC_OK, or
 * SC_EINTERNAL with what was found. */
int store_check(struct store *s, struct sc_error *err);

#endif
