/* daemon/build_queue.c: the build queue in the catalog (build_queue.h).
 * Its statements run on both engines through sqldb.h, prepared per call
 * (a queue is polled about once a second, not per request). */
#include "daemon/build_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/blobs.h"
#include "daemon/sqldb.h"
#include "daemon/store.h"
#include "daemon/store_blob.h"
#include "daemon/store_pool.h"
#include "common/banned.h"

#define NS_PER_S INT64_C(1000000000)

#define T(v) SQLDB_T(v)
#define I(v) SQLDB_I(v)
#define D(v) SQLDB_D(v)

typedef int (*row_fn)(void *ctx, struct sqldb_stmt *st);

/* what a failing statement of the queue names (sqldb_each_row) */
#define BQ_WHAT "catalog: build queue"

/* sqldb_each_row with the store taken and given back around it. */
static int held(struct store *s, const char *q, const struct sqldb_arg *a, size_t na, row_fn row, void *ctx,
                int64_t *rows, struct sc_error *err)
{
    struct sqldb *db = store_db_hold(s);
    int rc = sqldb_each_row(db, q, a, na, row, ctx, rows, BQ_WHAT, err);
    store_db_release(s, db);
    return rc;
}

static void copy_text(struct sqldb_stmt *st, int i, char *out, size_t n)
{
    const char *t = sqldb_column_text(st, i);
    snprintf(out, n, "%s", t ? t : "");
}

static int read_id(void *ctx, struct sqldb_stmt *st)
{
    copy_text(st, 0, ctx, API_ID_MAX);
    return SC_OK;
}

static int read_sha(void *ctx, struct sqldb_stmt *st)
{
    copy_text(st, 0, ctx, DIGEST_HEX_LEN + 1);
    return SC_OK;
}

int bq_claim(struct store *s, const char *owner, char id[API_ID_MAX], struct sc_error *err)
{
    static const char head[] =
        "UPDATE models SET lease_owner = ?1, lease_ns = ?2, progress = 0 WHERE id = ("
        "SELECT id FROM models WHERE status = 'building' AND (lease_ns IS NULL OR lease_ns < ?3)"
        " ORDER BY created_ns, id LIMIT 1";
    char q[512];
    int64_t now = store_now_ns(), rows = 0;
    struct sqldb_arg a[] = {T(owner), I(now + BQ_LEASE_S * NS_PER_S), I(now)};
    struct sqldb *db = store_db_hold(s);
    snprintf(q, sizeof q, "%s%s) RETURNING id", head,
             sqldb_kind(db) == SQLDB_POSTGRESQL ? " FOR UPDATE SKIP LOCKED" : "");
    id[0] = '\0';
    int rc = sqldb_each_row(db, q, a, 3, read_id, id, &rows, BQ_WHAT, err);
    store_db_release(s, db);
    return rc ? -1 : rows > 0 && id[0];
}

int bq_renew(struct store *s, const char *id, const char *owner, double progress, int *kept,
             struct sc_error *err)
{
    struct sqldb_arg a[] = {T(id), T(owner), I(store_now_ns() + BQ_LEASE_S * NS_PER_S), D(progress)};
    int64_t rows = 0;
    int rc = held(s,
                  "UPDATE models SET lease_ns = ?3, progress = ?4"
                  " WHERE id = ?1 AND lease_owner = ?2 AND status = 'building' RETURNING id",
                  a, 4, NULL, NULL, &rows, err);
    *kept = rc == SC_OK && rows > 0;
    return rc;
}

int bq_held(struct store *s, const char *id, const char *owner, int *kept, struct sc_error *err)
{
    struct sqldb_arg a[] = {T(id), T(owner)};
    int64_t rows = 0;
    int rc = held(s, "SELECT 1 FROM models WHERE id = ?1 AND lease_owner = ?2 AND status = 'building'", a, 2,
                  NULL, NULL, &rows, err);
    *kept = rc == SC_OK && rows > 0;
    return rc;
}

int bq_interrupt(struct store *s, const char *id, const char *owner, double progress, const char *error,
                 int *kept, struct sc_error *err)
{
    struct sqldb_arg a[] = {T(id), T(owner), D(progress), T(error), I(store_now_ns())};
    int64_t rows = 0;
    int rc = held(s,
                  "UPDATE models SET status = 'interrupted', progress = ?3, error = ?4, finished_ns = ?5,"
                  " lease_owner = NULL, lease_ns = NULL"
                  " WHERE id = ?1 AND lease_owner = ?2 AND status = 'building' RETURNING id",
                  a, 5, NULL, NULL, &rows, err);
    *kept = rc == SC_OK && rows > 0;
    return rc;
}

int bq_resume(struct store *s, const char *id, struct sc_error *err)
{
    struct sqldb_arg a[] = {T(id)};
    int64_t rows = 0;
    int rc = held(s,
                  "UPDATE models SET status = 'building', error = NULL, finished_ns = NULL, progress = 0,"
                  " lease_owner = NULL, lease_ns = NULL WHERE id = ?1 AND status = 'interrupted' RETURNING id",
                  a, 1, NULL, NULL, &rows, err);
    return rc ? -1 : rows > 0;
}

int bq_unresume(struct store *s, const struct api_model *was, struct sc_error *err)
{
    struct sqldb_arg a[] = {T(was->id), D(was->progress), T(was->error), I(was->finished_ns)};
    return held(s,
                "UPDATE models SET status = 'interrupted', progress = ?2, error = ?3, finished_ns = ?4"
                " WHERE id = ?1 AND status = 'building' AND lease_owner IS NULL RETURNING id",
                a, 4, NULL, NULL, NULL, err);
}

int bq_release(struct store *s, const char *id, const char *owner, struct sc_error *err)
{
    struct sqldb_arg a[] = {T(id), T(owner)};
    return held(s,
                "UPDATE models SET lease_owner = NULL, lease_ns = NULL, progress = 0"
                " WHERE id = ?1 AND lease_owner = ?2 AND status = 'building' RETURNING id",
                a, 2, NULL, NULL, NULL, err);
}

int bq_release_all(struct store *s, const char *owner, struct sc_error *err)
{
    struct sqldb_arg a[] = {T(owner)};
    return held(s,
                "UPDATE models SET lease_owner = NULL, lease_ns = NULL, progress = 0"
                " WHERE lease_owner = ?1 AND status = 'building' RETURNING id",
                a, 1, NULL, NULL, NULL, err);
}

int bq_finish(struct store *s, const char *id, const char *owner, enum api_model_status status,
              const char *error, const char *summary, const char *built, uint64_t bytes, bq_place_fn place,
              void *pctx, int *kept, struct sc_error *err)
{
    int64_t now = store_now_ns(), rows = 0;
    struct sqldb_arg blob[] = {T(built), I((int64_t)bytes), I(now)};
    struct sqldb_arg a[] = {T(id),      T(owner), T(api_model_status_name(status)), T(error), T(summary),
                      I(now),     T(built)};
    struct sqldb *db = store_db_hold(s);
    int rc = sqldb_begin(db, err);
    *kept = 0;
    if (rc == SC_OK && built && (rc = store_digest_lock(db, built, err)) == SC_OK && place)
        rc = place(pctx, err);
    if (rc == SC_OK && built)
        rc = sqldb_each_row(db,
                            "INSERT INTO blobs(sha256, bytes, created_ns) VALUES(?1, ?2, ?3)"
                            " ON CONFLICT(sha256) DO NOTHING",
                            blob, 3, NULL, NULL, NULL, BQ_WHAT, err);
    if (rc == SC_OK)
        rc = sqldb_each_row(db,
                            "UPDATE models SET status = ?3, error = ?4, summary = ?5, finished_ns = ?6, built = ?7,"
                            " lease_owner = NULL, lease_ns = NULL, progress = 1"
                            " WHERE id = ?1 AND lease_owner = ?2 AND status = 'building' RETURNING id",
                            a, 7, NULL, NULL, &rows, BQ_WHAT, err);
    if (rc == SC_OK && rows > 0) {
        rc = sqldb_commit(db, err);
        *kept = rc == SC_OK;
    } else
        sqldb_rollback(db); /* the lease is gone: nor is the blob's row wanted */
    store_db_release(s, db);
    return rc;
}

struct progress_row {
    double fraction;
    int queued;
};

static int read_progress(void *ctx, struct sqldb_stmt *st)
{
    struct progress_row *p = ctx;
    p->fraction = sqldb_column_double(st, 0);
    p->queued = sqldb_column_int64(st, 1) != 0;
    return SC_OK;
}

int bq_progress(struct store *s, const char *id, double *fraction, int *queued, struct sc_error *err)
{
    struct progress_row p = {0, 0};
    struct sqldb_arg a[] = {T(id), I(store_now_ns())};
    int64_t rows = 0;
    int rc = held(s,
                  "SELECT COALESCE(progress, 0),"
                  " CASE WHEN lease_ns IS NULL OR lease_ns < ?2 THEN 1 ELSE 0 END"
                  " FROM models WHERE id = ?1 AND status = 'building'",
                  a, 2, read_progress, &p, &rows, err);
    *fraction = p.fraction;
    *queued = p.queued;
    return rc ? -1 : rows > 0;
}

struct counts_row {
    int64_t all, waiting;
};

static int read_counts(void *ctx, struct sqldb_stmt *st)
{
    struct counts_row *c = ctx;
    c->all = sqldb_column_int64(st, 0);
    c->waiting = sqldb_column_int64(st, 1);
    return SC_OK;
}

int bq_counts(struct store *s, int64_t *all, int64_t *waiting, struct sc_error *err)
{
    struct counts_row c = {0, 0};
    struct sqldb_arg a[] = {I(store_now_ns())};
    int rc = held(s,
                  "SELECT COUNT(*), COALESCE(SUM(CASE WHEN lease_ns IS NULL OR lease_ns < ?1 THEN 1 ELSE 0 END), 0)"
                  " FROM models WHERE status = 'building'",
                  a, 1, read_counts, &c, NULL, err);
    *all = c.all;
    *waiting = c.waiting;
    return rc;
}

int bq_built_blob(struct store *s, const char *id, char sha[DIGEST_HEX_LEN + 1], struct sc_error *err)
{
    struct sqldb_arg a[] = {T(id)};
    int64_t rows = 0;
    sha[0] = '\0';
    int rc = held(s, "SELECT built FROM models WHERE id = ?1 AND status = 'ready' AND built IS NOT NULL", a, 1,
                  read_sha, sha, &rows, err);
    return rc ? -1 : rows > 0 && sha[0];
}

struct built_rows {
    char (*ids)[API_ID_MAX];
    char (*shas)[DIGEST_HEX_LEN + 1];
    size_t n, cap;
};

static int read_built(void *ctx, struct sqldb_stmt *st)
{
    struct built_rows *b = ctx;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        void *i = realloc(b->ids, cap * sizeof *b->ids), *h = i ? realloc(b->shas, cap * sizeof *b->shas) : NULL;
        if (i)
            b->ids = i;
        if (h)
            b->shas = h;
        if (!i || !h)
            return SC_ENOMEM;
        b->cap = cap;
    }
    copy_text(st, 0, b->ids[b->n], API_ID_MAX);
    copy_text(st, 1, b->shas[b->n], DIGEST_HEX_LEN + 1);
    b->n++;
    return SC_OK;
}

int bq_built_blobs(struct store *s, char (**ids)[API_ID_MAX], char (**shas)[DIGEST_HEX_LEN + 1],
                   size_t *n, struct sc_error *err)
{
    struct built_rows b = {0};
    int rc = held(s, "SELECT id, built FROM models WHERE built IS NOT NULL ORDER BY id", NULL, 0, read_built, &b,
                  NULL, err);
    if (rc == SC_ENOMEM)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    if (rc) {
        free(b.ids);
        free(b.shas);
        b.ids = NULL;
        b.shas = NULL;
        b.n = 0;
    }
    *ids = b.ids;
    *shas = b.shas;
    *n = b.n;
    return rc;
}

int bq_replica_name(const char *data_dir, char out[BQ_OWNER_MAX], struct sc_error *err)
{
    char path[PATH_MAX], host[64] = "", rnd[DIGEST_HEX_LEN + 1], buf[BQ_OWNER_MAX];
    ssize_t k;
    int fd;
    snprintf(path, sizeof path, "%s/replica", data_dir);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        k = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[k > 0 ? k : 0] = '\0';
        buf[strcspn(buf, "\r\n")] = '\0';
        if (buf[0]) {
            snprintf(out, BQ_OWNER_MAX, "%s", buf);
            return SC_OK;
        }
    }
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++) /* a name /metrics' replica label carries unescaped */
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *c))
            *c = '_';
    int rc = digest_random_hex(6, rnd, sizeof rnd, err);
    if (rc)
        return rc;
    snprintf(out, BQ_OWNER_MAX, "%.40s-%s", host[0] ? host : "replica", rnd);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        return sc_error_set(err, SC_EIO, "cannot create '%s': %s", path, strerror(errno));
    size_t len = strlen(out);
    k = write(fd, out, len);
    rc = (k == (ssize_t)len && fsync(fd) == 0) ? SC_OK
                                               : sc_error_set(err, SC_EIO, "cannot write '%s': %s", path, strerror(errno));
    close(fd);
    return rc == SC_OK ? blob_fsync_dir(data_dir, err) : rc;
}
