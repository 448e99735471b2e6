/* model/job.c: expanding paths into per-rank traces and loading them (job.h). */
#include "model/job.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/pool.h"
#include "common/vec.h"
#include "model/archive.h"
#include "model/stream.h"
#include "common/banned.h"

/* ---- what TRACE... names ---- */

static int paths_add(struct model_paths *l, const char *dir, const char *name)
{
    size_t need = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *p = malloc(need);
    if (!p || sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        free(p);
        return -1;
    }
    if (dir)
        snprintf(p, need, "%s/%s", dir, name);
    else
        snprintf(p, need, "%s", name);
    l->v[l->n++] = p;
    return 0;
}

void model_paths_release(struct model_paths *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int model_job_dir_files(const char *dir, struct model_paths *out, struct sc_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t first = out->n;
    if (!d)
        return sc_error_set(err, SC_EIO, "cannot read directory '%s'", dir);
    while ((de = readdir(d))) {
        struct stat st;
        char path[4096];
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) || !S_ISREG(st.st_mode))
            continue;
        if (paths_add(out, dir, de->d_name)) {
            closedir(d);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
    }
    closedir(d);
    if (out->n == first)
        return sc_error_set(err, SC_ENOTFOUND, "directory '%s' holds no trace files", dir);
    sc_sort(out->v + first, out->n - first, sizeof *out->v, cmp_str);
    return SC_OK;
}

int model_job_each_member(const char *path, model_member_fn fn, void *ctx, struct sc_error *err)
{
    struct model_archive *a;
    size_t seen = 0;
    int rc;
    if ((rc = model_archive_open_file(path, &a, err)))
        return rc;
    for (;;) {
        const char *name;
        struct model_stream *m;
        char label[4096 + 64];
        if ((rc = model_archive_next(a, &name, &m, err)) || !m)
            break;
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        if (base[0] == '.' || base[0] == '\0')
            continue;
        if (seen == MODEL_MAX_RANKS) {
            rc = sc_error_set(err, SC_ELIMIT, "archive '%s' holds more than %u trace files", path,
                              MODEL_MAX_RANKS);
            break;
        }
        snprintf(label, sizeof label, "%s:%s", path, name);
        if ((rc = fn(ctx, name, label, m, err)))
            break;
        seen++;
    }
    model_archive_free(a);
    if (rc == SC_OK && seen == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "archive '%s' holds no trace files", path);
    return rc;
}

/* ---- archives ---- */

/* A trace just loaded: handed to the caller's function, if any. */
static int visit(const struct model_job_each *each, struct model_trace *t, struct sc_error *err)
{
    return each && each->fn ? each->fn(each->ctx, t, err) : SC_OK;
}

/* An archive is one stream, read one member after another; its members'
 * bytes (as stored: a gzip'd member stays compressed) are gathered into
 * batches of up to TAR_BATCH_BYTES and parsed on all cores. A member
 * larger than that is parsed as it is read, after the batch before it. */
#define TAR_BATCH_BYTES ((size_t)128 << 20)

struct member {
    char *name;           /* as stored (members are ranked in name order) */
    char *label;          /* "ARCHIVE:name", for messages */
    unsigned char *bytes; /* while it waits in the batch */
    size_t n;
    struct model_trace *t;
};

struct members {
    const struct model_load_opts *opts;
    const struct model_job_each *each;
    unsigned threads;
    struct member *v;
    size_t n, cap;
    size_t batch, batch_bytes; /* the batch: v[batch..n) */
};

static int parse_member(void *ctx, size_t i, struct sc_error *err)
{
    struct members *l = ctx;
    struct member *m = &l->v[l->batch + i];
    int rc = model_trace_load_mem(m->bytes, m->n, m->label, l->opts, &m->t, err);
    free(m->bytes);
    m->bytes = NULL;
    return rc ? rc : visit(l->each, m->t, err);
}

/* Parse the batch; the first failure in archive order is reported. */
static int flush_batch(struct members *l, struct sc_error *err)
{
    int rc = sc_parallel_for(l->n - l->batch, l->threads, parse_member, l, err);
    for (size_t i = l->batch; i < l->n; i++) { /* those a failure left unparsed */
        free(l->v[i].bytes);
        l->v[i].bytes = NULL;
    }
    l->batch = l->n;
    l->batch_bytes = 0;
    return rc;
}

/* Parse the batch before the member just added, which is left out of it
 * and of the next batch. */
static int flush_before_last(struct members *l, struct sc_error *err)
{
    l->n--;
    int rc = flush_batch(l, err);
    l->n++;
    l->batch = l->n;
    return rc;
}

/* Up to `max` bytes of a stream into *out (from malloc); *whole says
 * whether that was all of it. */
static int read_some(struct model_stream *in, size_t max, unsigned char **out, size_t *n, int *whole,
                     struct sc_error *err)
{
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    *whole = 0;
    for (;;) {
        if (len == cap) {
            if (cap >= max)
                break;
            size_t want = cap ? (cap * 2 < max ? cap * 2 : max) : (max < (1u << 20) ? max : (1u << 20));
            unsigned char *p = realloc(buf, want);
            if (!p) {
                free(buf);
                return sc_error_set(err, SC_ENOMEM, "out of memory");
            }
            buf = p;
            cap = want;
        }
        ssize_t r = model_stream_read(in, buf + len, cap - len, err);
        if (r < 0) {
            free(buf);
            return err->code ? err->code : SC_EIO;
        }
        if (r == 0) {
            *whole = 1;
            break;
        }
        len += (size_t)r;
    }
    *out = buf;
    *n = len;
    return SC_OK;
}

static int load_member(void *ctx, const char *name, const char *label, struct model_stream *in,
                       struct sc_error *err)
{
    struct members *l = ctx;
    struct member *m;
    int whole, rc;
    if (sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    m = &l->v[l->n];
    memset(m, 0, sizeof *m);
    if (!(m->name = strdup(name)) || !(m->label = strdup(label))) {
        free(m->name);
        free(m->label);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    l->n++;
    if ((rc = read_some(in, TAR_BATCH_BYTES, &m->bytes, &m->n, &whole, err))) {
        struct sc_error first;
        int before = flush_before_last(l, &first); /* not read: the members before it come first */
        if (before)
            *err = first;
        return before ? before : rc;
    }
    if (whole) {
        l->batch_bytes += m->n;
        return l->batch_bytes >= TAR_BATCH_BYTES ? flush_batch(l, err) : SC_OK;
    }
    /* too large for a batch: the batch before it, then this one as it streams */
    unsigned char *head = m->bytes;
    size_t n = m->n;
    struct model_stream *s = NULL;
    m->bytes = NULL;
    rc = flush_before_last(l, err);
    if (rc == SC_OK && (rc = model_stream_open_mem_then(head, n, in, &s, err)) == SC_OK)
        rc = model_trace_read(s, label, l->opts, &m->t, err);
    model_stream_close(s);
    free(head);
    return rc ? rc : visit(l->each, m->t, err);
}

static int cmp_member(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->name, ((const struct member *)b)->name);
}

/* The traces of an archive, in member name order, appended to out[*n..]
 * (room for them made with sc_vec_reserve on *cap). */
static int load_tar(const char *path, const struct model_load_opts *opts, unsigned threads,
                    const struct model_job_each *each, struct model_trace ***out, size_t *n, size_t *cap,
                    struct sc_error *err)
{
    struct members l = {.opts = opts, .each = each, .threads = threads};
    int rc = model_job_each_member(path, load_member, &l, err);
    struct sc_error first;
    int before = flush_batch(&l, &first); /* what is left; its errors come before the archive's */
    if (before) {
        rc = before;
        *err = first;
    }
    if (rc == SC_OK && sc_vec_reserve((void **)out, cap, *n + l.n, sizeof **out))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    sc_sort(l.v, l.n, sizeof *l.v, cmp_member);
    for (size_t i = 0; i < l.n; i++) {
        if (rc == SC_OK)
            (*out)[(*n)++] = l.v[i].t;
        else
            model_trace_free(l.v[i].t);
        free(l.v[i].name);
        free(l.v[i].label);
    }
    free(l.v);
    return rc;
}

/* ---- parallel loads of plain files ---- */

struct file_loads {
    char **paths;
    const int64_t *ranks; /* per path, or NULL */
    const struct model_load_opts *opts;
    const struct model_job_each *each;
    struct model_trace **traces;
};

static int load_one(void *ctx, size_t i, struct sc_error *err)
{
    struct file_loads *l = ctx;
    int rc = model_trace_load_file(l->paths[i], l->opts, &l->traces[i], err);
    if (rc == SC_OK && l->ranks && l->ranks[i] >= 0)
        l->traces[i]->rank = l->ranks[i];
    return rc ? rc : visit(l->each, l->traces[i], err);
}

static int cmp_rank(const void *a, const void *b)
{
    const struct model_trace *x = *(struct model_trace *const *)a;
    const struct model_trace *y = *(struct model_trace *const *)b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int model_job_from_traces(struct model_trace **traces, size_t n, struct model_job **out,
                          struct sc_error *err)
{
    struct model_job *j = calloc(1, sizeof *j);
    int rc = SC_OK;
    *out = NULL;
    if (!j || !(j->ranks = calloc(n ? n : 1, sizeof *j->ranks)) ||
        !(j->rank_ids = calloc(n ? n : 1, sizeof *j->rank_ids))) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto fail;
    }
    if (n > MODEL_MAX_RANKS) {
        rc = sc_error_set(err, SC_ELIMIT, "%zu traces: more than the limit of %u ranks", n,
                          MODEL_MAX_RANKS);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if (traces[i]->rank < 0)
            traces[i]->rank = (int64_t)i; /* no distributedInfo.rank: file order */
        j->ranks[i] = traces[i];
        traces[i] = NULL;
    }
    j->n_ranks = n;
    sc_sort(j->ranks, n, sizeof *j->ranks, cmp_rank);
    for (size_t i = 0; i < n; i++) {
        j->rank_ids[i] = (int)j->ranks[i]->rank;
        if (i && j->ranks[i]->rank == j->ranks[i - 1]->rank) {
            rc = sc_error_set(err, SC_EINVAL, "'%s' and '%s' are both rank %lld",
                              j->ranks[i - 1]->source, j->ranks[i]->source,
                              (long long)j->ranks[i]->rank);
            goto fail;
        }
    }
    *out = j;
    return SC_OK;
fail:
    for (size_t i = 0; i < n; i++)
        model_trace_free(traces[i]);
    model_job_free(j);
    return rc;
}

void model_job_free(struct model_job *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n_ranks; i++)
        model_trace_free(j->ranks[i]);
    free(j->ranks);
    free(j->rank_ids);
    free(j);
}

/* Load the plain files gathered so far into all[*n..], then forget them. */
static int flush_files(struct model_paths *files, const int64_t *ranks, const struct model_load_opts *opts,
                       unsigned threads, const struct model_job_each *each, struct model_trace ***all,
                       size_t *n, size_t *cap, struct sc_error *err)
{
    int rc = SC_OK;
    if (!files->n)
        return SC_OK;
    if (sc_vec_reserve((void **)all, cap, *n + files->n, sizeof **all))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    if (rc == SC_OK) {
        struct file_loads l = {files->v, ranks, opts, each, *all + *n};
        memset(*all + *n, 0, files->n * sizeof **all);
        *n += files->n;
        rc = sc_parallel_for(files->n, threads, load_one, &l, err);
    }
    model_paths_release(files);
    return rc;
}

int model_job_load(const char *const *paths, size_t n, const struct model_load_opts *opts,
                   unsigned threads, struct model_job **out, struct sc_error *err)
{
    return model_job_load_each(paths, n, NULL, opts, threads, NULL, out, err);
}

int model_job_load_each(const char *const *paths, size_t n, const int64_t *ranks,
                        const struct model_load_opts *opts, unsigned threads,
                        const struct model_job_each *each, struct model_job **out, struct sc_error *err)
{
    struct model_paths files = {0};
    struct model_trace **all = NULL;
    size_t n_all = 0, cap_all = 0;
    int rc = SC_OK;

    *out = NULL;
    if (n == 0)
        return sc_error_set(err, SC_EINVAL, "no trace given");
    if (ranks) { /* every path a plain file of its own rank: loaded together */
        for (size_t i = 0; i < n && rc == SC_OK; i++)
            if (paths_add(&files, NULL, paths[i]))
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        n = 0;
    }
    /* expand each path, loading archives in place so ranks keep their order */
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        struct stat st;
        int tar = 0;
        if (stat(paths[i], &st))
            rc = sc_error_set(err, SC_ENOTFOUND, "cannot open '%s': no such file", paths[i]);
        else if (S_ISDIR(st.st_mode))
            rc = model_job_dir_files(paths[i], &files, err);
        else if ((rc = model_archive_is_tar(paths[i], &tar, err)) == SC_OK && !tar &&
                 paths_add(&files, NULL, paths[i]))
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        if (rc == SC_OK && tar &&
            (rc = flush_files(&files, NULL, opts, threads, each, &all, &n_all, &cap_all, err)) == SC_OK)
            rc = load_tar(paths[i], opts, threads, each, &all, &n_all, &cap_all, err);
    }
    if (rc == SC_OK)
        rc = flush_files(&files, ranks, opts, threads, each, &all, &n_all, &cap_all, err);
    model_paths_release(&files);
    if (rc == SC_OK) {
        rc = model_job_from_traces(all, n_all, out, err);
        free(all);
        return rc;
    }
    for (size_t i = 0; i < n_all; i++)
        model_trace_free(all[i]);
    free(all);
    return rc;
}
