/* daemon/sqldb.h: one SQL connection, on SQLite or on PostgreSQL.
 *
 * The catalog (store.c) runs the same statements on both engines through
 * this layer, so its logic exists once. It opens a store URL:
 *
 *   sqlite:PATH              a SQLite file, in WAL mode, synchronous=FULL,
 *                            foreign keys on (the embedded default)
 *   postgresql://...         a libpq connection URI (postgres://... too);
 *                            for a Unix socket: postgresql:///DB?host=/DIR
 *
 * Statements are written with SQLite's numbered parameters (?1, ?2, ...),
 * rewritten to $1, $2, ... for PostgreSQL, and use SQL both engines take
 * (ON CONFLICT ... DO NOTHING / DO UPDATE, RETURNING). PostgreSQL types a
 * parameter where it is first used: write "model = ?1 OR ?1 IS NULL", not
 * the other way round (one used only with IS NULL, or not at all, is text). What differs is
 * here: how a transaction begins, what a failure means, the connection's
 * settings; and in store.c's schema, kept once per engine.
 *
 * On PostgreSQL, a statement is prepared on the server on its first run
 * and again after the connection was re-established: a connection found
 * broken outside a transaction is reset before the next statement; inside
 * a transaction every statement fails until the rollback.
 *
 * Not thread-safe: one thread at a time per connection (store.c's pool
 * hands each connection to one thread at a time). */
#ifndef DAEMON_SQLDB_H
#define DAEMON_SQLDB_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum sqldb_kind { SQLDB_SQLITE, SQLDB_POSTGRESQL };

/* sqldb_step's answers */
enum { SQLDB_DONE = 0, SQLDB_ROW = 1, SQLDB_ERROR = -1 };

struct sqldb;
struct sqldb_stmt;

int sqldb_open(const char *url, struct sqldb **out, struct sc_error *err);
void sqldb_close(struct sqldb *db); /* NULL-safe; finalize the statements first */
enum sqldb_kind sqldb_kind(const struct sqldb *db);

/* Run one or more statements without parameters or rows. */
int sqldb_exec(struct sqldb *db, const char *sql, struct sc_error *err);
/* BEGIN (SQLite: BEGIN IMMEDIATE, the write lock at once), COMMIT, ROLLBACK. */
int sqldb_begin(struct sqldb *db, struct sc_error *err);
int sqldb_commit(struct sqldb *db, struct sc_error *err);
void sqldb_rollback(struct sqldb *db);

int sqldb_prepare(struct sqldb *db, const char *sql, struct sqldb_stmt **out, struct sc_error *err);
void sqldb_finalize(struct sqldb_stmt *st); /* NULL-safe */

/* Parameters count from 1; text NULL binds SQL NULL. */
void sqldb_bind_text(struct sqldb_stmt *st, int i, const char *v);
void sqldb_bind_int64(struct sqldb_stmt *st, int i, int64_t v);
void sqldb_bind_double(struct sqldb_stmt *st, int i, double v);

/* The next row: SQLDB_ROW, SQLDB_DONE, or SQLDB_ERROR (sqldb_status and
 * sqldb_errmsg say what). The first step runs the statement. */
int sqldb_step(struct sqldb_stmt *st);
/* Forget the results and the bindings, to run the statement again. */
void sqldb_reset(struct sqldb_stmt *st);

/* Columns of the current row, from 0; text NULL for SQL NULL. */
const char *sqldb_column_text(struct sqldb_stmt *st, int i);
int64_t sqldb_column_int64(struct sqldb_stmt *st, int i);
double sqldb_column_double(struct sqldb_stmt *st, int i);

/* A parameter of sqldb_each_row: text (NULL binds SQL NULL), an integer
 * or a real. */
struct sqldb_arg {
    char kind; /* 't', 'i', 'd' */
    const char *t;
    int64_t i;
    double d;
};
#define SQLDB_T(v) {'t', (v), 0, 0}
#define SQLDB_I(v) {'i', NULL, (v), 0}
#define SQLDB_D(v) {'d', NULL, 0, (v)}

/* Prepare sql, bind a[0..na) to ?1, ?2, ..., and call row(ctx, st) (when
 * not NULL) for each row, stopping at its first answer other than SC_OK,
 * which is returned; *rows (when not NULL) gets how many rows were read.
 * A failing statement sets err to "what: the engine's message". The
 * statement is prepared for this call only and finalized. */
int sqldb_each_row(struct sqldb *db, const char *sql, const struct sqldb_arg *a, size_t na,
                   int (*row)(void *ctx, struct sqldb_stmt *st), void *ctx, int64_t *rows, const char *what,
                   struct sc_error *err);

/* Rows the last INSERT, UPDATE or DELETE changed. */
int64_t sqldb_changes(const struct sqldb *db);
/* The last failure: SC_EEXIST for a constraint, SC_ENOSPC for a full
 * disk, SC_ENOMEM, SC_EUNAVAILABLE when PostgreSQL does not answer,
 * SC_EIO otherwise; and the engine's message. */
enum sc_status sqldb_status(const struct sqldb *db);
const char *sqldb_errmsg(const struct sqldb *db);

#endif
