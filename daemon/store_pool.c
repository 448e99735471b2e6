/* daemon/store_pool.c: the catalog's connections (store_pool.h): the pool
 * that a function of the catalog takes a connection from, and the helpers
 * that run the catalog's numbered statements (store_sql.h) on one. */
#include "daemon/store_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "daemon/sqldb.h"
#include "common/banned.h"

struct conn *conn_take(struct store *pool, int want)
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

void conn_give(struct conn *c)
{
    struct store *pool = c->pool;
    pthread_mutex_lock(&pool->mu);
    c->busy = 0;
    pthread_cond_broadcast(&pool->freed);
    pthread_mutex_unlock(&pool->mu);
}

int conn_is_pg(const struct conn *s)
{
    return sqldb_kind(s->db) == SQLDB_POSTGRESQL;
}

int store_pool_open(const char *url, size_t connections, int (*first)(struct conn *s, struct sc_error *err),
                    struct store **out, struct sc_error *err)
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
        rc = first(s, err);
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

int conn_fail(struct conn *s, struct sc_error *err, const char *what)
{
    return sc_error_set(err, sqldb_status(s->db), "catalog: %s: %s", what, sqldb_errmsg(s->db));
}

int conn_prep(struct conn *s, enum store_stmt q, struct sqldb_stmt **st, struct sc_error *err)
{
    int rc;
    if (!s->st[q] && (rc = sqldb_prepare(s->db, store_sql[q], &s->st[q], err)))
        return rc;
    *st = s->st[q];
    return SC_OK;
}

int conn_run(struct conn *s, struct sqldb_stmt *st, struct sc_error *err, const char *what)
{
    int r = sqldb_step(st);
    int rc = r == SQLDB_DONE || r == SQLDB_ROW ? SC_OK : conn_fail(s, err, what);
    sqldb_reset(st);
    return rc;
}

char *store_col_dup(struct sqldb_stmt *st, int i)
{
    const char *t = sqldb_column_text(st, i);
    return t ? strdup(t) : NULL;
}

void store_col_copy(struct sqldb_stmt *st, int i, char *out, size_t n)
{
    const char *t = sqldb_column_text(st, i);
    snprintf(out, n, "%s", t ? t : "");
}

int conn_end(struct conn *s, int rc, struct sc_error *err)
{
    if (rc == SC_OK)
        return sqldb_commit(s->db, err);
    sqldb_rollback(s->db);
    return rc;
}

int conn_query_int(struct conn *s, const char *q, int64_t *v, struct sc_error *err)
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

int conn_exists(struct conn *s, enum store_stmt q, const char *key, int *yes, struct sc_error *err)
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

int conn_names(struct conn *s, enum store_stmt q, const char *key, struct store_names *out,
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

int conn_count(struct conn *s, enum store_stmt q, const char *key, int64_t *n, struct sc_error *err)
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

int conn_one_row(struct conn *s, struct sqldb_stmt *st, store_row_fn read, void *row, const char *what,
                 struct sc_error *err)
{
    int r = sqldb_step(st), rc = SC_OK;
    if (r == SQLDB_ROW)
        read(st, row);
    else
        rc = r == SQLDB_DONE ? SC_ENOTFOUND : conn_fail(s, err, what);
    sqldb_reset(st);
    return rc;
}

int conn_page_rows(struct conn *s, enum store_stmt q, const char *key, const struct api_page *pg, int *more,
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

int conn_all_rows(struct conn *s, enum store_stmt q, const char *key, store_row_fn read, size_t size,
                  void (*release)(void *v, size_t n), void **out, size_t *n, const char *what,
                  struct sc_error *err)
{
    return conn_page_rows(s, q, key, NULL, NULL, read, size, release, out, n, what, err);
}
