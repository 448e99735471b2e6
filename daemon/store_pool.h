/* daemon/store_pool.h: the catalog's connections (store.h), and the helpers
 * its files (store*.c) run statements with.
 *
 * The catalog is a pool of connections to one store URL: a function of the
 * catalog takes a free connection (LOCKED), runs its transaction on it and
 * gives it back. Each connection prepares a statement of store_sql.h on
 * its first use and keeps it. The pool has its own file so that the schema
 * (store_schema.c), the blob rows (store_blob.c) and the records (store.c)
 * share one way to the database. Callers outside the catalog use the
 * functions of the first part only; the second is for store*.c. */
#ifndef DAEMON_STORE_POOL_H
#define DAEMON_STORE_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "api/page.h"
#include "api/resources.h"
#include "common/error.h"
#include "daemon/store_sql.h"

#define STORE_NAME_MAX API_ID_MAX

struct store;
struct sqldb;
struct sqldb_stmt;

/* A growing list of names (ids or hashes). */
struct store_names {
    char (*v)[STORE_NAME_MAX];
    size_t n, cap;
};
void store_names_release(struct store_names *l);

void store_close(struct store *s); /* NULL-safe */
int store_is_postgresql(const struct store *s);
/* Does the catalog answer? SC_OK, or why not (PostgreSQL down). */
int store_ping(struct store *s, struct sc_error *err);

/* For a module that keeps its own statements over the catalog (the build
 * queue, build_queue.h): a connection of the pool, its own until
 * store_db_release(s, db). Its statements are its own to prepare and
 * finalize before the release. */
struct sqldb *store_db_hold(struct store *s);
void store_db_release(struct store *s, struct sqldb *db);

/* ---- for the catalog's files (store*.c) ---- */

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

/* A pool of `connections` connections to url (SQLite: one), first(s) run
 * on the first before the others open (the migration, store_schema.c). */
int store_pool_open(const char *url, size_t connections, int (*first)(struct conn *s, struct sc_error *err),
                    struct store **out, struct sc_error *err);

/* A free connection (want: ANY_CONN, or that one), marked busy. */
struct conn *conn_take(struct store *pool, int want);
void conn_give(struct conn *c);

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

int conn_is_pg(const struct conn *s);
/* err set to the connection's last failure, "catalog: what: ..." */
int conn_fail(struct conn *s, struct sc_error *err, const char *what);
/* Statement q, prepared on first use and kept. */
int conn_prep(struct conn *s, enum store_stmt q, struct sqldb_stmt **st, struct sc_error *err);
/* sqldb_step to completion, for statements without rows. */
int conn_run(struct conn *s, struct sqldb_stmt *st, struct sc_error *err, const char *what);
/* COMMIT when rc is OK, else ROLLBACK; returns the first failure. */
int conn_end(struct conn *s, int rc, struct sc_error *err);
/* The one integer of a query without parameters into *v (a statement
 * prepared for this call only). */
int conn_query_int(struct conn *s, const char *q, int64_t *v, struct sc_error *err);

/* Column i of the current row: a copy (NULL for SQL NULL), or into out. */
char *store_col_dup(struct sqldb_stmt *st, int i);
void store_col_copy(struct sqldb_stmt *st, int i, char *out, size_t n);

/* Does statement q with ?1 = key find a row? */
int conn_exists(struct conn *s, enum store_stmt q, const char *key, int *yes, struct sc_error *err);
/* The first column of every row of q (?1 = key, unless NULL), added to out. */
int conn_names(struct conn *s, enum store_stmt q, const char *key, struct store_names *out,
               struct sc_error *err);
/* The one integer of q (?1 = key, unless NULL). */
int conn_count(struct conn *s, enum store_stmt q, const char *key, int64_t *n, struct sc_error *err);

/* Reads the current row of a statement into one element of a result. */
typedef void (*store_row_fn)(struct sqldb_stmt *st, void *row);
/* The one row of the bound statement st into *row, then st is done:
 * SC_ENOTFOUND with err untouched when there is none, for the caller to say
 * what is missing. */
int conn_one_row(struct conn *s, struct sqldb_stmt *st, store_row_fn read, void *row, const char *what,
                 struct sc_error *err);
/* The rows of q (?1 bound to key when given) into a new array of zeroed
 * elements of `size` bytes; with pg, one page of a list (?7 to ?9,
 * store_sql.c): *more says whether rows follow it. On failure the rows
 * read so far are given to release. */
int conn_page_rows(struct conn *s, enum store_stmt q, const char *key, const struct api_page *pg, int *more,
                   store_row_fn read, size_t size, void (*release)(void *v, size_t n), void **out, size_t *n,
                   const char *what, struct sc_error *err);
/* Every row of q: conn_page_rows without a page. */
int conn_all_rows(struct conn *s, enum store_stmt q, const char *key, store_row_fn read, size_t size,
                  void (*release)(void *v, size_t n), void **out, size_t *n, const char *what,
                  struct sc_error *err);

#endif
