/* daemon/sqldb.c: one SQL connection on SQLite or PostgreSQL (sqldb.h).
 *
 * Each function dispatches on the engine. On PostgreSQL parameters are
 * sent as text and results read as text (libpq's text format), which the
 * column getters convert; a statement is a named server-side prepared
 * statement, prepared again when the connection was reset. */
#include "daemon/sqldb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "common/banned.h"

/* more than any statement of the catalog has */
#define SQLDB_MAX_PARAMS 64
/* PostgreSQL's type text (pg_type.oid, fixed since its first release) */
#define PG_TEXT_OID 25

struct sqldb {
    enum sqldb_kind kind;
    sqlite3 *lite;
    PGconn *pg;
    unsigned generation;  /* PostgreSQL: bumped on each reset */
    unsigned next_name;   /* PostgreSQL: names of prepared statements */
    int in_txn;
    int64_t changes;
    enum sc_status status;
    char msg[512];
};

struct sqldb_stmt {
    struct sqldb *db;
    sqlite3_stmt *lite;
    /* PostgreSQL */
    char name[24];
    char *sql;        /* with $n parameters */
    int n_params;
    Oid types[SQLDB_MAX_PARAMS]; /* of the parameters, 0: the server infers it */
    char **params;    /* n_params text values (malloc'd), NULL for SQL NULL */
    int oom;          /* a bind ran out of memory */
    unsigned prepared; /* the generation it is prepared in, 0: not */
    PGresult *res;
    int row, n_rows;
};

static void set_failure(struct sqldb *db, enum sc_status st, const char *msg)
{
    db->status = st;
    snprintf(db->msg, sizeof db->msg, "%s", msg ? msg : "unknown error");
    db->msg[strcspn(db->msg, "\n")] = '\0';
}

static void lite_failure(struct sqldb *db)
{
    int code = sqlite3_errcode(db->lite);
    set_failure(db, code == SQLITE_NOMEM ? SC_ENOMEM : code == SQLITE_CONSTRAINT ? SC_EEXIST
                    : code == SQLITE_FULL ? SC_ENOSPC : SC_EIO,
                sqlite3_errmsg(db->lite));
}

/* From the SQLSTATE of a failed result (NULL: the connection's error). */
static void pg_failure(struct sqldb *db, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(db->pg);
    enum sc_status st = SC_EIO;
    if (PQstatus(db->pg) == CONNECTION_BAD || (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3))))
        st = SC_EUNAVAILABLE; /* connection lost, server shutting down or restarting */
    else if (state && !strncmp(state, "23", 2))
        st = SC_EEXIST; /* integrity constraint violation */
    else if (state && !strcmp(state, "53100"))
        st = SC_ENOSPC; /* disk_full */
    else if (state && !strcmp(state, "53200"))
        st = SC_ENOMEM; /* out_of_memory */
    set_failure(db, st, msg);
}

static int fail_err(struct sqldb *db, struct sc_error *err)
{
    return sc_error_set(err, db->status, "catalog: %s", db->msg);
}

enum sqldb_kind sqldb_kind(const struct sqldb *db)
{
    return db->kind;
}

int64_t sqldb_changes(const struct sqldb *db)
{
    return db->changes;
}

enum sc_status sqldb_status(const struct sqldb *db)
{
    return db->status;
}

const char *sqldb_errmsg(const struct sqldb *db)
{
    return db->msg;
}

/* ---- opening ---- */

static int open_sqlite(struct sqldb *db, const char *path, struct sc_error *err)
{
    static const char *const settings[] = {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL",
                                           "PRAGMA foreign_keys = ON"};
    db->kind = SQLDB_SQLITE;
    if (sqlite3_open_v2(path, &db->lite, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return sc_error_set(err, SC_EIO, "cannot open catalog '%s': %s", path,
                            db->lite ? sqlite3_errmsg(db->lite) : "out of memory");
    sqlite3_busy_timeout(db->lite, 10000);
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        int rc = sqldb_exec(db, settings[i], err);
        if (rc)
            return rc;
    }
    return SC_OK;
}

static int open_pg(struct sqldb *db, const char *url, struct sc_error *err)
{
    db->kind = SQLDB_POSTGRESQL;
    db->pg = PQconnectdb(url);
    if (!db->pg)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (PQstatus(db->pg) != CONNECTION_OK) {
        set_failure(db, SC_EUNAVAILABLE, PQerrorMessage(db->pg));
        return sc_error_set(err, SC_EUNAVAILABLE, "cannot connect to the catalog's PostgreSQL: %s", db->msg);
    }
    db->generation = 1;
    /* warnings such as "there is no transaction in progress" are not
     * failures, and are not printed on stderr */
    return sqldb_exec(db, "SET client_min_messages = error", err);
}

int sqldb_open(const char *url, struct sqldb **out, struct sc_error *err)
{
    struct sqldb *db = calloc(1, sizeof *db);
    int rc;
    *out = NULL;
    if (!db)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (!strncmp(url, "sqlite:", 7) && url[7])
        rc = open_sqlite(db, url + 7, err);
    else if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11))
        rc = open_pg(db, url, err);
    else
        rc = sc_error_set(err, SC_EINVAL, "store '%s': expected sqlite:PATH or postgresql://...", url);
    if (rc) {
        sqldb_close(db);
        return rc;
    }
    *out = db;
    return SC_OK;
}

void sqldb_close(struct sqldb *db)
{
    if (!db)
        return;
    sqlite3_close(db->lite);
    if (db->pg)
        PQfinish(db->pg);
    free(db);
}

/* PostgreSQL: a broken connection is reset, outside a transaction only
 * (a reset inside one would run its remaining statements without it). */
static int pg_usable(struct sqldb *db)
{
    if (PQstatus(db->pg) == CONNECTION_OK)
        return 1;
    if (db->in_txn) {
        set_failure(db, SC_EUNAVAILABLE, "the connection to PostgreSQL was lost in a transaction");
        return 0;
    }
    PQreset(db->pg);
    if (PQstatus(db->pg) != CONNECTION_OK) {
        set_failure(db, SC_EUNAVAILABLE, PQerrorMessage(db->pg));
        return 0;
    }
    db->generation++;
    return 1;
}

/* PostgreSQL: after a failure, whether the connection was lost outside a
 * transaction and is back (reset): then the statement may run again once.
 * (A server restart breaks every connection; the next statement finds it.) */
static int pg_again(struct sqldb *db)
{
    return PQstatus(db->pg) == CONNECTION_BAD && !db->in_txn && pg_usable(db);
}

/* ---- statements without parameters ---- */

int sqldb_exec(struct sqldb *db, const char *sql, struct sc_error *err)
{
    if (db->kind == SQLDB_SQLITE) {
        char *msg = NULL;
        if (sqlite3_exec(db->lite, sql, NULL, NULL, &msg) == SQLITE_OK)
            return SC_OK;
        lite_failure(db);
        if (msg)
            set_failure(db, db->status, msg);
        sqlite3_free(msg);
        return fail_err(db, err);
    }
    if (!pg_usable(db))
        return fail_err(db, err);
    for (int attempt = 0;; attempt++) {
        PGresult *res = PQexec(db->pg, sql);
        ExecStatusType s = PQresultStatus(res);
        int ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
        if (!ok)
            pg_failure(db, res);
        PQclear(res);
        if (ok)
            return SC_OK;
        if (attempt || !pg_again(db))
            return fail_err(db, err);
    }
}

int sqldb_begin(struct sqldb *db, struct sc_error *err)
{
    int rc = sqldb_exec(db, db->kind == SQLDB_SQLITE ? "BEGIN IMMEDIATE" : "BEGIN", err);
    db->in_txn = rc == SC_OK;
    return rc;
}

int sqldb_commit(struct sqldb *db, struct sc_error *err)
{
    int rc = sqldb_exec(db, "COMMIT", err);
    if (rc)
        sqldb_rollback(db);
    db->in_txn = 0;
    return rc;
}

void sqldb_rollback(struct sqldb *db)
{
    sqldb_exec(db, "ROLLBACK", NULL);
    db->in_txn = 0;
}

/* ---- prepared statements ---- */

/* ?N -> $N outside quoted strings; the number of parameters into *n.
 * PostgreSQL infers a parameter's type from where it is used, except where
 * it is only tested with IS NULL (an optional filter, "?7 IS NULL OR ...")
 * or not used at all (a list's statement that takes ?7 to ?9 only): those
 * are typed text in types[] (0 elsewhere: inferred). */
static char *pg_sql(const char *sql, int *n, Oid types[SQLDB_MAX_PARAMS])
{
    char *out = strdup(sql), quote = 0;
    int used[SQLDB_MAX_PARAMS] = {0}; /* bit 1: IS NULL, bit 2: elsewhere */
    *n = 0;
    if (!out)
        return NULL;
    for (char *p = out; *p; p++) {
        if (quote) {
            quote = *p == quote ? 0 : quote;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (*p == '?') {
            char *end;
            long k = strtol(p + 1, &end, 10);
            *p = '$';
            if (k < 1 || k > SQLDB_MAX_PARAMS)
                continue;
            *n = k > *n ? (int)k : *n;
            used[k - 1] |= strncmp(end, " IS NULL", 8) ? 2 : 1;
        }
    }
    for (int i = 0; i < SQLDB_MAX_PARAMS; i++)
        types[i] = used[i] & 2 ? 0 : PG_TEXT_OID;
    return out;
}

int sqldb_prepare(struct sqldb *db, const char *sql, struct sqldb_stmt **out, struct sc_error *err)
{
    struct sqldb_stmt *st = calloc(1, sizeof *st);
    *out = NULL;
    if (!st)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    st->db = db;
    if (db->kind == SQLDB_SQLITE) {
        if (sqlite3_prepare_v3(db->lite, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->lite, NULL) != SQLITE_OK) {
            lite_failure(db);
            free(st);
            return sc_error_set(err, db->status, "catalog: prepare: %s", db->msg);
        }
    } else {
        st->sql = pg_sql(sql, &st->n_params, st->types);
        st->params = st->n_params ? calloc((size_t)st->n_params, sizeof *st->params) : NULL;
        if (!st->sql || (st->n_params && !st->params)) {
            sqldb_finalize(st);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        snprintf(st->name, sizeof st->name, "s%u", ++db->next_name);
    }
    *out = st;
    return SC_OK;
}

void sqldb_reset(struct sqldb_stmt *st)
{
    if (!st)
        return;
    if (st->lite) {
        sqlite3_reset(st->lite);
        sqlite3_clear_bindings(st->lite);
        return;
    }
    PQclear(st->res);
    st->res = NULL;
    for (int i = 0; i < st->n_params; i++) {
        free(st->params[i]);
        st->params[i] = NULL;
    }
    st->oom = 0;
}

void sqldb_finalize(struct sqldb_stmt *st)
{
    if (!st)
        return;
    if (st->lite) {
        sqlite3_finalize(st->lite);
    } else {
        sqldb_reset(st);
        /* deallocated with the session; the name is never reused */
        free(st->params);
        free(st->sql);
    }
    free(st);
}

/* PostgreSQL: parameter i (from 1) set to a copy of v (NULL: SQL NULL). */
static void pg_bind(struct sqldb_stmt *st, int i, const char *v)
{
    if (i < 1 || i > st->n_params)
        return; /* the statement has no such parameter: as SQLite, ignored */
    free(st->params[i - 1]);
    st->params[i - 1] = NULL;
    if (v && !(st->params[i - 1] = strdup(v)))
        st->oom = 1;
}

void sqldb_bind_text(struct sqldb_stmt *st, int i, const char *v)
{
    if (!st->lite)
        pg_bind(st, i, v);
    else if (v)
        sqlite3_bind_text(st->lite, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st->lite, i);
}

void sqldb_bind_int64(struct sqldb_stmt *st, int i, int64_t v)
{
    char buf[32];
    if (st->lite) {
        sqlite3_bind_int64(st->lite, i, v);
        return;
    }
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    pg_bind(st, i, buf);
}

void sqldb_bind_double(struct sqldb_stmt *st, int i, double v)
{
    char buf[40];
    if (st->lite) {
        sqlite3_bind_double(st->lite, i, v);
        return;
    }
    snprintf(buf, sizeof buf, "%.17g", v);
    pg_bind(st, i, buf);
}

static int pg_run_once(struct sqldb_stmt *st)
{
    struct sqldb *db = st->db;
    if (st->oom) {
        set_failure(db, SC_ENOMEM, "out of memory");
        return SQLDB_ERROR;
    }
    if (!pg_usable(db))
        return SQLDB_ERROR;
    if (st->prepared != db->generation) {
        PGresult *p = PQprepare(db->pg, st->name, st->sql, st->n_params, st->types);
        int ok = PQresultStatus(p) == PGRES_COMMAND_OK;
        if (!ok)
            pg_failure(db, p);
        PQclear(p);
        if (!ok)
            return SQLDB_ERROR;
        st->prepared = db->generation;
    }
    PQclear(st->res);
    st->res = PQexecPrepared(db->pg, st->name, st->n_params, (const char *const *)st->params, NULL, NULL, 0);
    ExecStatusType s = PQresultStatus(st->res);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        pg_failure(db, st->res);
        return SQLDB_ERROR;
    }
    const char *n = PQcmdTuples(st->res);
    db->changes = n && *n ? strtoll(n, NULL, 10) : 0;
    st->n_rows = PQntuples(st->res);
    st->row = -1;
    return SQLDB_DONE;
}

static int pg_run(struct sqldb_stmt *st)
{
    int r = pg_run_once(st);
    if (r == SQLDB_ERROR && pg_again(st->db))
        r = pg_run_once(st);
    return r;
}

int sqldb_step(struct sqldb_stmt *st)
{
    if (st->lite) {
        int r = sqlite3_step(st->lite);
        if (r == SQLITE_ROW)
            return SQLDB_ROW;
        if (r == SQLITE_DONE) {
            st->db->changes = sqlite3_changes(st->db->lite);
            return SQLDB_DONE;
        }
        lite_failure(st->db);
        return SQLDB_ERROR;
    }
    if (!st->res && pg_run(st) == SQLDB_ERROR)
        return SQLDB_ERROR;
    if (PQresultStatus(st->res) != PGRES_TUPLES_OK && PQresultStatus(st->res) != PGRES_COMMAND_OK)
        return SQLDB_ERROR; /* stepped again after a failure */
    return ++st->row < st->n_rows ? SQLDB_ROW : SQLDB_DONE;
}

int sqldb_each_row(struct sqldb *db, const char *sql, const struct sqldb_arg *a, size_t na,
                   int (*row)(void *ctx, struct sqldb_stmt *st), void *ctx, int64_t *rows, const char *what,
                   struct sc_error *err)
{
    struct sqldb_stmt *st;
    int r = SQLDB_DONE, rc = sqldb_prepare(db, sql, &st, err);
    if (rows)
        *rows = 0;
    if (rc)
        return rc;
    for (size_t k = 0; k < na; k++) {
        if (a[k].kind == 't')
            sqldb_bind_text(st, (int)k + 1, a[k].t);
        else if (a[k].kind == 'i')
            sqldb_bind_int64(st, (int)k + 1, a[k].i);
        else
            sqldb_bind_double(st, (int)k + 1, a[k].d);
    }
    while (rc == SC_OK && (r = sqldb_step(st)) == SQLDB_ROW) {
        if (rows)
            ++*rows;
        if (row)
            rc = row(ctx, st);
    }
    if (rc == SC_OK && r != SQLDB_DONE)
        rc = sc_error_set(err, sqldb_status(db), "%s: %s", what, sqldb_errmsg(db));
    sqldb_finalize(st);
    return rc;
}

const char *sqldb_column_text(struct sqldb_stmt *st, int i)
{
    if (st->lite)
        return (const char *)sqlite3_column_text(st->lite, i);
    if (!st->res || st->row < 0 || st->row >= st->n_rows || i >= PQnfields(st->res) ||
        PQgetisnull(st->res, st->row, i))
        return NULL;
    return PQgetvalue(st->res, st->row, i);
}

int64_t sqldb_column_int64(struct sqldb_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_column_int64(st->lite, i);
    const char *t = sqldb_column_text(st, i);
    return t ? strtoll(t, NULL, 10) : 0;
}

double sqldb_column_double(struct sqldb_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_column_double(st->lite, i);
    const char *t = sqldb_column_text(st, i);
    return t ? strtod(t, NULL) : 0;
}
