/* model/job.c: expanding paths into per-rank traces and loading them (job.h). */
#include "model/job.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/vec.h"
#include "model/stream.h"
#include "common/banned.h"

struct path_list {
    char **v;
    size_t n, cap;
};

static int path_add(struct path_list *l, const char *dir, const char *name)
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

static void path_list_release(struct path_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Regular, non-hidden files of a directory, in name order. */
static int expand_dir(const char *dir, struct path_list *l, struct sc_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t first = l->n;
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
        if (path_add(l, dir, de->d_name)) {
            closedir(d);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
    }
    closedir(d);
    if (l->n == first)
        return sc_error_set(err, SC_ENOTFOUND, "directory '%s' holds no trace files", dir);
    sc_sort(l->v + first, l->n - first, sizeof *l->v, cmp_str);
    return SC_OK;
}

/* Whether a file (after gzip) starts with a tar header. */
static int is_tar(const char *path, int *yes, struct sc_error *err)
{
    struct model_stream *f, *d;
    unsigned char h[512];
    size_t got = 0;
    int rc;
    *yes = 0;
    if ((rc = model_stream_open_file(path, &f, err)))
        return rc;
    if ((rc = model_stream_open_decoded(f, 1, &d, err)))
        return rc;
    while (got < sizeof h) {
        ssize_t r = model_stream_read(d, h + got, sizeof h - got, err);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    model_stream_close(d);
    if (got == sizeof h) {
        unsigned sum = 0, want = 0;
        for (int i = 0; i < 512; i++)
            sum += (i >= 148 && i < 156) ? ' ' : h[i];
        for (int i = 148; i < 156 && h[i] >= '0' && h[i] <= '7'; i++)
            want = want * 8 + (unsigned)(h[i] - '0');
        *yes = sum == want && memcmp(h + 257, "ustar", 5) == 0;
    }
    return SC_OK;
}

struct loaded {
    struct model_trace **v;
    size_t n, cap;
};

static int loaded_add(struct loaded *l, struct model_trace *t)
{
    if (sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return -1;
    l->v[l->n++] = t;
    return 0;
}

static int load_tar(const char *path, const struct model_load_opts *opts, struct loaded *out,
                    struct sc_error *err)
{
    struct model_stream *f, *d;
    struct model_tar *tar;
    int rc;
    if ((rc = model_stream_open_file(path, &f, err)))
        return rc;
    if ((rc = model_stream_open_decoded(f, 1, &d, err)))
        return rc;
    if ((rc = model_tar_open(d, &tar, err))) {
        model_stream_close(d);
        return rc;
    }
    struct path_list names = {0};
    struct loaded mine = {0};
    for (;;) {
        const char *name;
        struct model_stream *m;
        struct model_trace *t;
        char label[4096 + 64];
        if ((rc = model_tar_next(tar, &name, &m, err))) {
            sc_error_prefix(err, "'%s'", path);
            break;
        }
        if (!m)
            break;
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        if (base[0] == '.' || base[0] == '\0')
            continue;
        snprintf(label, sizeof label, "%s:%s", path, name);
        if ((rc = model_trace_read(m, label, opts, &t, err)))
            break;
        if (path_add(&names, NULL, name) || loaded_add(&mine, t)) {
            model_trace_free(t);
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            break;
        }
    }
    model_tar_free(tar);
    model_stream_close(d);
    if (rc == SC_OK && mine.n == 0)
        rc = sc_error_set(err, SC_ENOTFOUND, "archive '%s' holds no trace files", path);
    if (rc == SC_OK) {
        /* archive members rank in name order */
        for (size_t i = 1; i < mine.n; i++)
            for (size_t j = i; j > 0 && strcmp(names.v[j - 1], names.v[j]) > 0; j--) {
                char *s = names.v[j];
                names.v[j] = names.v[j - 1];
                names.v[j - 1] = s;
                struct model_trace *t = mine.v[j];
                mine.v[j] = mine.v[j - 1];
                mine.v[j - 1] = t;
            }
        for (size_t i = 0; i < mine.n && rc == SC_OK; i++) {
            if (loaded_add(out, mine.v[i]))
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            else
                mine.v[i] = NULL;
        }
    }
    for (size_t i = 0; i < mine.n; i++)
        model_trace_free(mine.v[i]);
    free(mine.v);
    path_list_release(&names);
    return rc;
}

/* ---- parallel loads of plain files ---- */

struct pool {
    char **paths;
    size_t n;
    const struct model_load_opts *opts;
    struct model_trace **traces;
    struct sc_error *errs;
    int *rcs;
    atomic_size_t next;
    atomic_int failed;
};

static void *pool_worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n || atomic_load(&p->failed))
            return NULL;
        p->rcs[i] = model_trace_load_file(p->paths[i], p->opts, &p->traces[i], &p->errs[i]);
        if (p->rcs[i])
            atomic_store(&p->failed, 1);
    }
}

static int load_files(char **paths, size_t n, const struct model_load_opts *opts,
                      unsigned threads, struct model_trace **traces, struct sc_error *err)
{
    struct pool p = {.paths = paths, .n = n, .opts = opts, .traces = traces};
    pthread_t tid[64];
    unsigned nt = threads, started = 0;
    int rc = SC_OK;

    if (nt == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nt = c > 0 ? (unsigned)c : 1;
    }
    if (nt > 64)
        nt = 64;
    if (nt > n)
        nt = (unsigned)n;
    p.errs = calloc(n, sizeof *p.errs);
    p.rcs = calloc(n, sizeof *p.rcs);
    if (!p.errs || !p.rcs) {
        free(p.errs);
        free(p.rcs);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, 0);
    for (unsigned i = 1; i < nt; i++)
        if (pthread_create(&tid[started], NULL, pool_worker, &p) == 0)
            started++;
    pool_worker(&p);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    for (size_t i = 0; i < n; i++)
        if (p.rcs[i]) { /* the first failure in path order */
            if (err)
                *err = p.errs[i];
            rc = p.rcs[i];
            break;
        }
    free(p.errs);
    free(p.rcs);
    return rc;
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

int model_job_load(const char *const *paths, size_t n, const struct model_load_opts *opts,
                   unsigned threads, struct model_job **out, struct sc_error *err)
{
    struct path_list files = {0};
    struct loaded all = {0};
    int rc = SC_OK;

    *out = NULL;
    if (n == 0)
        return sc_error_set(err, SC_EINVAL, "no trace given");
    /* expand each path, loading archives in place so ranks keep their order */
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        struct stat st;
        int tar = 0;
        if (stat(paths[i], &st))
            rc = sc_error_set(err, SC_ENOTFOUND, "cannot open '%s': no such file", paths[i]);
        else if (S_ISDIR(st.st_mode))
            rc = expand_dir(paths[i], &files, err);
        else if ((rc = is_tar(paths[i], &tar, err)) == SC_OK && !tar && path_add(&files, NULL, paths[i]))
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        if (rc == SC_OK && tar) {
            /* flush the plain files before it, then the archive's members */
            size_t base = all.n;
            if (sc_vec_reserve((void **)&all.v, &all.cap, all.n + files.n, sizeof *all.v)) {
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
                break;
            }
            if (files.n)
                memset(all.v + base, 0, files.n * sizeof *all.v);
            all.n += files.n;
            if (files.n)
                rc = load_files(files.v, files.n, opts, threads, all.v + base, err);
            path_list_release(&files);
            memset(&files, 0, sizeof files);
            if (rc == SC_OK)
                rc = load_tar(paths[i], opts, &all, err);
        }
    }
    if (rc == SC_OK && files.n) {
        size_t base = all.n;
        if (sc_vec_reserve((void **)&all.v, &all.cap, all.n + files.n, sizeof *all.v)) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        } else {
            memset(all.v + base, 0, files.n * sizeof *all.v);
            all.n += files.n;
            rc = load_files(files.v, files.n, opts, threads, all.v + base, err);
        }
    }
    path_list_release(&files);
    if (rc == SC_OK) {
        rc = model_job_from_traces(all.v, all.n, out, err);
        free(all.v);
        return rc;
    }
    for (size_t i = 0; i < all.n; i++)
        model_trace_free(all.v[i]);
    free(all.v);
    return rc;
}
