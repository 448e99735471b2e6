/* daemon/built.c: building a model from its traces, and its memo of
 * answers (built.h).
 *
 * Answers are memoised per model under the key the handler gives (the
 * query's name and parameters), up to a byte budget fixed when the model is
 * built (so the cache can count it): a cached model answers a repeated
 * query with a copy. */
#include "daemon/built.h"

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hugepage.h"
#include "common/pool.h"
#include "common/vec.h"
#include "daemon/blobs.h"
#include "estimator/calibrate/calibrate.h"
#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

#define MEMO_MAX 32
#define MEMO_MIN_BYTES (1u << 20)
#define MEMO_MAX_BYTES (64u << 20)

struct memo {
    char key[BUILT_MEMO_KEY_MAX];
    char *body; /* from malloc */
    size_t len;
    const char *content_type;
};

struct built_model {
    char id[API_ID_MAX];
    struct est_traced_model *model; /* its traces shed to headers (estimator/model_open.h) */
    /* what it was built from, to read the traces again (a calibration) */
    struct api_trace *traces;
    size_t n_traces;
    struct model_load_opts load;
    char *step_marker; /* load.step_marker's own copy */
    /* its calibration samples, read once on a calibration's need
     * (built_model_calib_samples) and kept; calib_mu orders that read */
    pthread_mutex_t calib_mu;
    struct calib_acc *calib;
    size_t bytes;      /* job + graph + memo budget */
    size_t memo_cap;   /* bytes the memo may hold */
    pthread_mutex_t mu;
    struct memo memo[MEMO_MAX];
    size_t n_memo, memo_bytes; /* memo[0] is the oldest */
};

/* The reader names a trace by its file, and a model's error is shown to API
 * clients: name the blob by its hash there instead, keeping the server's
 * paths to itself. */
static void name_by_hash(struct sc_error *err, const char *path, const char *sha)
{
    char *at = strstr(err->msg, path), rest[sizeof err->msg];
    if (at) {
        snprintf(rest, sizeof rest, "%s", at + strlen(path));
        snprintf(at, sizeof err->msg - (size_t)(at - err->msg), "%s%s", sha, rest);
    }
}

/* Trace files read from blobs since the process started (built_trace_reads). */
static atomic_ullong trace_reads;

uint64_t built_trace_reads(void)
{
    return atomic_load(&trace_reads);
}

int built_load_trace(struct blob_store *bs, const struct api_trace *tr, const struct model_load_opts *opts,
                     struct model_trace **out, struct sc_error *err)
{
    char path[PATH_MAX];
    atomic_fetch_add(&trace_reads, 1);
    blob_path(bs, tr->sha256, path, sizeof path);
    int rc = model_trace_load_file(path, opts, out, err);
    if (rc) {
        name_by_hash(err, path, tr->sha256);
        sc_error_prefix(err, "rank %lld", (long long)tr->rank);
    }
    return rc;
}

/* A model's traces as blob files: their paths and the ranks they were
 * uploaded as, for est_model_open and model_job_load_each. */
struct blob_files {
    char (*paths)[PATH_MAX];
    const char **pv;
    int64_t *ranks;
};

static void blob_files_release(struct blob_files *f)
{
    free(f->paths);
    free(f->pv);
    free(f->ranks);
}

static int blob_files(struct blob_store *bs, const struct api_trace *traces, size_t n, struct blob_files *f,
                      struct sc_error *err)
{
    f->paths = calloc(n ? n : 1, sizeof *f->paths);
    f->pv = calloc(n ? n : 1, sizeof *f->pv);
    f->ranks = calloc(n ? n : 1, sizeof *f->ranks);
    if (!f->paths || !f->pv || !f->ranks) {
        blob_files_release(f);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        blob_path(bs, traces[i].sha256, f->paths[i], sizeof f->paths[i]);
        f->pv[i] = f->paths[i];
        f->ranks[i] = traces[i].rank;
    }
    return SC_OK;
}

/* An error naming one of the files: named by the blob's hash instead, after
 * "rank N: ". */
static void name_failed(struct sc_error *err, const struct blob_files *f, const struct api_trace *traces, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(err->msg, f->paths[i])) {
            name_by_hash(err, f->paths[i], traces[i].sha256);
            sc_error_prefix(err, "rank %lld", (long long)traces[i].rank);
            return;
        }
}

struct build_progress {
    built_progress_fn fn;
    void *ctx;
    size_t n;
    pthread_mutex_t mu;
    size_t done; /* the most ranks reported built (calls may come out of order) */
};

static void on_rank_built(void *ctx, size_t built)
{
    struct build_progress *p = ctx;
    pthread_mutex_lock(&p->mu);
    if (built > p->done) {
        p->done = built;
        p->fn(p->ctx, (double)built / (double)(p->n + 1));
    }
    pthread_mutex_unlock(&p->mu);
}

int built_model_assemble(const char *id, const struct api_trace *traces, size_t n,
                         const struct model_load_opts *opts, struct est_traced_model *model,
                         struct built_model **out, struct sc_error *err)
{
    struct built_model *m = calloc(1, sizeof *m);
    size_t data;
    *out = NULL;
    if (!m || !(m->traces = malloc((n ? n : 1) * sizeof *m->traces)) ||
        (opts->step_marker && !(m->step_marker = strdup(opts->step_marker)))) {
        if (m)
            free(m->traces);
        free(m);
        est_model_close(model);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    snprintf(m->id, sizeof m->id, "%s", id);
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->calib_mu, NULL);
    m->load = *opts;
    m->load.step_marker = m->step_marker;
    memcpy(m->traces, traces, n * sizeof *traces);
    m->n_traces = n;
    m->model = model;
    data = est_model_bytes(m->model);
    m->memo_cap = data / 2 < MEMO_MIN_BYTES ? MEMO_MIN_BYTES
                  : data / 2 > MEMO_MAX_BYTES ? MEMO_MAX_BYTES : data / 2;
    m->bytes = sizeof *m + data + m->memo_cap;
    *out = m;
    return SC_OK;
}

int built_model_build(const char *id, const struct api_trace *traces, size_t n,
                      struct blob_store *bs, const struct model_load_opts *opts,
                      const struct model_graph_opts *graph_opts, built_progress_fn progress,
                      void *progress_ctx, struct built_model **out, struct sc_error *err)
{
    struct build_progress bp = {progress, progress_ctx, n, PTHREAD_MUTEX_INITIALIZER, 0};
    struct blob_files f = {0};
    struct est_traced_model *model = NULL;
    int rc;

    *out = NULL;
    if (!n) /* its job's traces were deleted while the build waited */
        return sc_error_set(err, SC_ENOTFOUND, "model %s has no traces left to build from (its job was deleted)",
                            id);
    /* ranks load and build on all cores; each trace keeps only its header
     * once its rank's part of the graph is found, and the notes a what-if
     * reads of it */
    struct est_model_options mo = {.load = *opts, .graph = *graph_opts, .keep = EST_KEEP_NOTES};
    if ((rc = blob_files(bs, traces, n, &f, err)) == SC_OK) {
        mo.ranks = f.ranks; /* the ranks they were uploaded as */
        atomic_fetch_add(&trace_reads, n);
        if ((rc = est_model_open((const char *const *)f.pv, n, &mo, progress ? on_rank_built : NULL, &bp, &model,
                                 err)))
            name_failed(err, &f, traces, n);
    }
    blob_files_release(&f);
    pthread_mutex_destroy(&bp.mu);
    sc_heap_trim(); /* what the build freed: the daemon lives on */
    if (rc)
        return rc;
    if ((rc = built_model_assemble(id, traces, n, opts, model, out, err)))
        return rc;
    if (progress)
        progress(progress_ctx, 1.0);
    return SC_OK;
}

const struct api_trace *built_model_traces(const struct built_model *m, size_t *n)
{
    *n = m->n_traces;
    return m->traces;
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

int built_model_estimate(const struct api_trace *traces, size_t n, struct blob_store *bs,
                         const struct model_load_opts *opts, const struct model_graph_opts *go,
                         struct built_estimate *out, struct sc_error *err)
{
    struct model_load_opts counting = *opts;
    uint64_t sum = 0, loading = 0, held = 0, *each = calloc(n ? n : 1, sizeof *each);
    counting.count_only = 1;
    memset(out, 0, sizeof *out);
    if (!each)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (traces[i].events >= 0) {
            each[i] = (uint64_t)traces[i].events;
        } else {
            struct model_trace *t;
            int rc = built_load_trace(bs, &traces[i], &counting, &t, err);
            if (rc) {
                free(each);
                return rc;
            }
            each[i] = t->n_entries;
            model_trace_free(t);
        }
        sum += each[i];
    }
    /* the largest traces are the ones that may be loading at once, and,
     * folded, those the representatives are counted as */
    sc_sort(each, n, sizeof *each, cmp_desc);
    for (size_t i = 0; i < n && i < sc_pool_threads(0); i++)
        loading += each[i];
    size_t reps = go && n > go->fold_over ? (go->fold_over > BUILT_FOLD_REPS ? go->fold_over : BUILT_FOLD_REPS) : n;
    if (reps < n) {
        for (size_t i = 0; i < reps; i++)
            held += each[i];
        out->reps_max = reps;
    } else
        held = sum;
    free(each);
    out->events = sum;
    out->held_events = held;
    out->bytes = BUILT_BYTES_FIXED + held * BUILT_BYTES_PER_EVENT + loading * BUILT_BYTES_PER_LOADING_EVENT +
                 (out->reps_max ? (uint64_t)n * BUILT_BYTES_PER_FOLDED_RANK : 0);
    return SC_OK;
}

void built_model_free(struct built_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_memo; i++)
        free(m->memo[i].body);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->calib_mu);
    calib_acc_free(m->calib);
    est_model_close(m->model);
    free(m->traces);
    free(m->step_marker);
    free(m);
}

/* The samples of m's traces, read from their blobs in rank order (the
 * order the catalog gives a model's traces in, and its blob keeps). */
static int calib_read(struct built_model *m, struct blob_store *bs, struct calib_acc **out, struct sc_error *err)
{
    struct calib_acc *a = calib_acc_new();
    int rc = a ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == SC_OK && i < m->n_traces; i++) {
        struct model_trace *t;
        assert(i == 0 || m->traces[i - 1].rank < m->traces[i].rank);
        if ((rc = built_load_trace(bs, &m->traces[i], &m->load, &t, err)) == SC_OK) {
            rc = calib_acc_add(a, t, err);
            model_trace_free(t);
        }
    }
    if (rc) {
        calib_acc_free(a);
        a = NULL;
    }
    *out = a;
    return rc;
}

int built_model_calib_samples(struct built_model *m, struct blob_store *bs, const struct calib_acc **out,
                              size_t *added, struct sc_error *err)
{
    int rc = SC_OK;
    *added = 0;
    pthread_mutex_lock(&m->calib_mu);
    if (!m->calib && (rc = calib_read(m, bs, &m->calib, err)) == SC_OK)
        *added = calib_acc_bytes(m->calib);
    *out = m->calib; /* published under calib_mu, never changed after */
    pthread_mutex_unlock(&m->calib_mu);
    return rc;
}

int built_model_has_calib_samples(struct built_model *m)
{
    pthread_mutex_lock(&m->calib_mu);
    int kept = m->calib != NULL;
    pthread_mutex_unlock(&m->calib_mu);
    return kept;
}

double built_model_calib_read_bytes(const struct built_model *m)
{
    const struct model_job *job = est_model_job(m->model);
    double most = 0;
    for (size_t i = 0; i < job->n_ranks; i++)
        if ((double)job->ranks[i]->n_complete > most)
            most = (double)job->ranks[i]->n_complete;
    return most * BUILT_BYTES_PER_LOADING_EVENT;
}

size_t built_model_bytes(const struct built_model *m)
{
    return m->bytes;
}

const struct est_traced_model *built_model_opened(const struct built_model *m)
{
    return m->model;
}

static int copy_reply(struct api_reply *r, unsigned status, const char *ctype, const char *body,
                      size_t len)
{
    char *b = malloc(len + 1);
    if (!b)
        return api_fail(r, API_E_UNAVAILABLE, "out of memory");
    memcpy(b, body, len);
    b[len] = '\0';
    api_reply_take(r, status, ctype, b, len);
    return SC_OK;
}

int built_memo_get(struct built_model *m, const char *key, struct api_reply *r)
{
    int found = 0;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n_memo && !found; i++)
        if (strcmp(m->memo[i].key, key) == 0) {
            found = 1;
            copy_reply(r, 200, m->memo[i].content_type, m->memo[i].body, m->memo[i].len);
        }
    pthread_mutex_unlock(&m->mu);
    return found;
}

void built_memo_put(struct built_model *m, const char *key, const struct api_reply *r)
{
    char *copy;
    if (r->len > m->memo_cap / 4 || !(copy = malloc(r->len + 1)))
        return;
    memcpy(copy, r->body, r->len);
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n_memo; i++)
        if (strcmp(m->memo[i].key, key) == 0) { /* another request got here first */
            pthread_mutex_unlock(&m->mu);
            free(copy);
            return;
        }
    while (m->n_memo && (m->n_memo == MEMO_MAX || m->memo_bytes + r->len > m->memo_cap)) {
        m->memo_bytes -= m->memo[0].len; /* the oldest */
        free(m->memo[0].body);
        memmove(&m->memo[0], &m->memo[1], --m->n_memo * sizeof m->memo[0]);
    }
    struct memo *e = &m->memo[m->n_memo++];
    snprintf(e->key, sizeof e->key, "%s", key);
    e->body = copy;
    e->len = r->len;
    e->content_type = r->content_type;
    m->memo_bytes += r->len;
    pthread_mutex_unlock(&m->mu);
}
