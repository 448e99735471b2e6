/* daemon/migrate.c: a catalog and its blobs copied to another store
 * (migrate.h). The tables and their columns are read from the SQLite
 * source's own schema, so a table added by a later schema version is
 * copied with no change here. */
#include "daemon/migrate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/blobs.h"
#include "daemon/digest.h"
#include "daemon/sqldb.h"
#include "daemon/service.h"
#include "daemon/store_pool.h"
#include "daemon/store_schema.h"
#include "common/banned.h"

#define MAX_TABLES 64
#define MAX_COLS 64
#define NAME_MAX_LEN 64

struct table {
    char name[NAME_MAX_LEN];
    char cols[MAX_COLS][NAME_MAX_LEN];
    int real[MAX_COLS]; /* a REAL column: copied as %.17g text, exactly */
    int n_cols, placed; /* placed: in the order already */
};

struct copy {
    struct sqldb *src, *dst;
    struct table t[MAX_TABLES];
    int n, order[MAX_TABLES];
};

static int db_fail(struct sqldb *db, struct sc_error *err, const char *what)
{
    return sc_error_set(err, sqldb_status(db), "%s: %s", what, sqldb_errmsg(db));
}

/* Each row of sql (?1 = key, when given) to fn; stops at its failure. */
static int each_row(struct sqldb *db, const char *sql, const char *key, int (*fn)(void *, struct sqldb_stmt *),
                    void *ctx, struct sc_error *err)
{
    struct sqldb_arg a[] = {SQLDB_T(key)};
    return sqldb_each_row(db, sql, a, key ? 1 : 0, fn, ctx, NULL, sql, err);
}

static int add_table(void *ctx, struct sqldb_stmt *st)
{
    struct copy *c = ctx;
    if (c->n == MAX_TABLES)
        return SC_ELIMIT;
    snprintf(c->t[c->n++].name, NAME_MAX_LEN, "%s", sqldb_column_text(st, 0));
    return SC_OK;
}

static int add_column(void *ctx, struct sqldb_stmt *st)
{
    struct table *t = ctx;
    const char *type = sqldb_column_text(st, 1);
    if (t->n_cols == MAX_COLS)
        return SC_ELIMIT;
    t->real[t->n_cols] = type && (strstr(type, "REAL") || strstr(type, "DOUBLE"));
    snprintf(t->cols[t->n_cols++], NAME_MAX_LEN, "%s", sqldb_column_text(st, 0));
    return SC_OK;
}

struct parents {
    struct copy *c;
    const char *child;
    int all_placed;
};

static int parent_placed(void *ctx, struct sqldb_stmt *st)
{
    struct parents *p = ctx;
    const char *parent = sqldb_column_text(st, 0);
    for (int i = 0; parent && i < p->c->n; i++)
        if (!strcmp(p->c->t[i].name, parent) && strcmp(parent, p->child) && !p->c->t[i].placed)
            p->all_placed = 0;
    return SC_OK;
}

/* The source's tables, their columns, and an order with each table after
 * the tables its foreign keys name. */
static int read_schema(struct copy *c, struct sc_error *err)
{
    int rc = each_row(c->src, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                              " ORDER BY name", NULL, add_table, c, err);
    for (int i = 0; rc == SC_OK && i < c->n; i++)
        rc = each_row(c->src, "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid", c->t[i].name, add_column,
                      &c->t[i], err);
    if (rc == SC_ELIMIT)
        return sc_error_set(err, rc, "the source has more than %d tables or columns", MAX_TABLES);
    for (int k = 0; rc == SC_OK && k < c->n; k++) {
        int found = -1;
        for (int i = 0; rc == SC_OK && found < 0 && i < c->n; i++) {
            struct parents p = {c, c->t[i].name, 1};
            if (c->t[i].placed)
                continue;
            rc = each_row(c->src, "SELECT \"table\" FROM pragma_foreign_key_list(?1)", c->t[i].name, parent_placed,
                          &p, err);
            if (p.all_placed)
                found = i;
        }
        if (rc == SC_OK && found < 0)
            return sc_error_set(err, SC_EINVAL, "the source's foreign keys form a cycle");
        if (rc == SC_OK) {
            c->t[found].placed = 1;
            c->order[k] = found;
        }
    }
    return rc;
}

/* The one integer of sql on db. */
static int one_int(struct sqldb *db, const char *sql, int64_t *v, struct sc_error *err)
{
    struct sqldb_stmt *st;
    int rc = sqldb_prepare(db, sql, &st, err);
    if (rc)
        return rc;
    rc = sqldb_step(st) == SQLDB_ROW ? SC_OK : db_fail(db, err, sql);
    *v = rc == SC_OK ? sqldb_column_int64(st, 0) : 0;
    sqldb_finalize(st);
    return rc;
}

static int target_empty(struct copy *c, struct sc_error *err)
{
    for (int i = 0; i < c->n; i++) {
        char sql[160];
        int64_t rows = 0;
        int rc;
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s", c->t[i].name);
        if ((rc = one_int(c->dst, sql, &rows, err)))
            return rc;
        if (rows)
            return sc_error_set(err, SC_EEXIST,
                                "the target catalog is not empty (table %s has %lld rows): --migrate copies into an "
                                "empty database only; nothing was copied",
                                c->t[i].name, (long long)rows);
    }
    return SC_OK;
}

struct rows {
    struct sqldb *dst;
    struct sqldb_stmt *insert;
    int n_cols;
    int64_t copied;
    struct sc_error *err;
};

static int insert_row(void *ctx, struct sqldb_stmt *st)
{
    struct rows *r = ctx;
    for (int i = 0; i < r->n_cols; i++)
        sqldb_bind_text(r->insert, i + 1, sqldb_column_text(st, i));
    int s = sqldb_step(r->insert);
    sqldb_reset(r->insert);
    if (s == SQLDB_ERROR)
        return db_fail(r->dst, r->err, "insert");
    r->copied++;
    return SC_OK;
}

/* After explicit ids, an identity column's sequence goes on after them
 * (PostgreSQL). */
static int follow_identity(struct copy *c, const struct table *t, struct sc_error *err)
{
    for (int i = 0; i < t->n_cols; i++) {
        char sql[512];
        int64_t yes = 0;
        int rc;
        snprintf(sql, sizeof sql, "SELECT CAST(pg_get_serial_sequence('%s', '%s') IS NOT NULL AS INTEGER)", t->name,
                 t->cols[i]);
        if ((rc = one_int(c->dst, sql, &yes, err)))
            return rc;
        if (!yes)
            continue;
        snprintf(sql, sizeof sql, "SELECT setval(pg_get_serial_sequence('%s', '%s'), COALESCE(MAX(%s), 0) + 1, false)"
                 " FROM %s", t->name, t->cols[i], t->cols[i], t->name);
        if ((rc = sqldb_exec(c->dst, sql, err)))
            return rc;
    }
    return SC_OK;
}

static int copy_table(struct copy *c, const struct table *t, FILE *report, struct sc_error *err)
{
    char select[4096] = "SELECT ", insert[4096];
    size_t ns = strlen(select);
    int ni = snprintf(insert, sizeof insert, "INSERT INTO \"%s\"(", t->name), rc;
    for (int i = 0; i < t->n_cols; i++) {
        const char *col = t->cols[i], *sep = i ? ", " : "";
        if (t->real[i])
            ns += (size_t)snprintf(select + ns, sizeof select - ns,
                                   "%sCASE WHEN \"%s\" IS NULL THEN NULL ELSE printf('%%.17g', \"%s\") END", sep, col, col);
        else
            ns += (size_t)snprintf(select + ns, sizeof select - ns, "%s\"%s\"", sep, col);
        ni += snprintf(insert + ni, sizeof insert - (size_t)ni, "%s\"%s\"", sep, col);
    }
    snprintf(select + ns, sizeof select - ns, " FROM \"%s\"", t->name);
    ni += snprintf(insert + ni, sizeof insert - (size_t)ni, ") VALUES(");
    for (int i = 0; i < t->n_cols; i++)
        ni += snprintf(insert + ni, sizeof insert - (size_t)ni, "%s?%d", i ? ", " : "", i + 1);
    snprintf(insert + ni, sizeof insert - (size_t)ni, ")");
    struct rows r = {c->dst, NULL, t->n_cols, 0, err};
    if ((rc = sqldb_prepare(c->dst, insert, &r.insert, err)))
        return rc;
    rc = each_row(c->src, select, NULL, insert_row, &r, err);
    sqldb_finalize(r.insert);
    if (rc == SC_OK && sqldb_kind(c->dst) == SQLDB_POSTGRESQL)
        rc = follow_identity(c, t, err);
    if (rc) {
        sc_error_prefix(err, "table %s", t->name);
        return rc;
    }
    fprintf(report, "table %s: %lld rows\n", t->name, (long long)r.copied);
    return SC_OK;
}

struct blobs_copy {
    struct blob_store *from, *to;
    int64_t n, bytes;
    struct sc_error *err;
};

/* One blob, re-hashed on its way into the target's blob store. */
static int copy_blob(void *ctx, struct sqldb_stmt *st)
{
    struct blobs_copy *b = ctx;
    const char *sha = sqldb_column_text(st, 0);
    char path[4200], got[DIGEST_HEX_LEN + 1], buf[1 << 16];
    struct blob_writer *w = NULL;
    size_t k;
    int rc;
    blob_path(b->from, sha, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return sc_error_set(b->err, SC_ENOTFOUND, "blob %s: cannot read '%s': %s", sha, path, strerror(errno));
    rc = blob_writer_new(b->to, &w, b->err);
    while (rc == SC_OK && (k = fread(buf, 1, sizeof buf, f)) > 0)
        rc = blob_writer_write(w, buf, k, b->err);
    if (rc == SC_OK && ferror(f))
        rc = sc_error_set(b->err, SC_EIO, "cannot read '%s'", path);
    fclose(f);
    if (rc == SC_OK && (rc = blob_writer_finish(w, got, b->err)) == SC_OK && strcmp(got, sha))
        rc = sc_error_set(b->err, SC_EINVAL, "blob %s: its content hashes to %s", sha, got);
    if (rc == SC_OK) {
        b->bytes += (int64_t)blob_writer_bytes(w);
        rc = blob_writer_commit(w, b->err);
    }
    blob_writer_free(w);
    b->n += rc == SC_OK;
    return rc;
}

/* The data directory a sqlite:PATH catalog lives in. */
static void source_dir(const char *from, char *out, size_t n)
{
    const char *path = from + strlen("sqlite:");
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else
        snprintf(out, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

int migrate_run(const char *from, const char *to, const char *to_data_dir, const char *to_blobs, FILE *report,
                struct sc_error *err)
{
    struct copy *c = calloc(1, sizeof *c);
    struct store *ends[2] = {NULL, NULL};
    struct blobs_copy b = {NULL, NULL, 0, 0, err};
    char dir[4200], from_blobs[4300], into[4300];
    int rc;
    if (!c)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (strncmp(from, "sqlite:", 7)) {
        free(c);
        return sc_error_set(err, SC_EINVAL, "--from: '%s' is not sqlite:PATH", from);
    }
    /* each end opened as a daemon opens it: its schema created or migrated
     * to this build's version, refused when newer */
    if ((rc = store_open(from, 1, &ends[0], err)) || (rc = store_open(to, 1, &ends[1], err)))
        goto out;
    fprintf(report, "schema version %d at both ends\n", STORE_SCHEMA_VERSION);
    if ((rc = sqldb_open(from, &c->src, err)) || (rc = sqldb_open(to, &c->dst, err)) ||
        (rc = read_schema(c, err)) || (rc = target_empty(c, err)))
        goto out;
    source_dir(from, dir, sizeof dir);
    svc_blobs_dir(NULL, dir, from_blobs, sizeof from_blobs);
    int shared = svc_blobs_dir(to_blobs, to_data_dir, into, sizeof into);
    if ((rc = blob_store_open(from_blobs, dir, 0, &b.from, err)) ||
        (rc = blob_store_open(into, to_data_dir, shared, &b.to, err)) ||
        (rc = each_row(c->src, "SELECT sha256 FROM blobs ORDER BY sha256", NULL, copy_blob, &b, err)))
        goto out;
    fprintf(report, "blobs: %lld files, %lld bytes, from %s into %s\n", (long long)b.n, (long long)b.bytes,
            from_blobs, into);
    if ((rc = sqldb_begin(c->dst, err)))
        goto out;
    for (int k = 0; rc == SC_OK && k < c->n; k++)
        rc = copy_table(c, &c->t[c->order[k]], report, err);
    if (rc == SC_OK)
        rc = sqldb_commit(c->dst, err);
    else
        sqldb_rollback(c->dst);
    if (rc == SC_OK)
        fprintf(report, "migrated: %d tables\n", c->n);
out:
    blob_store_free(b.from);
    blob_store_free(b.to);
    sqldb_close(c->src);
    sqldb_close(c->dst);
    store_close(ends[0]);
    store_close(ends[1]);
    free(c);
    return rc;
}
