/* daemon/h_jobs.c: jobs and trace uploads (api/ops.def).
 *
 * An upload reaches h_trace_put() already on disk: the HTTP layer streamed
 * the body into a blob writer (a temp file, hashed as it arrived). Here it
 * is validated by the trace reader from the file on a worker of the
 * request pool (workers.h: the HTTP threads stay free while large uploads
 * are read; a rejected upload costs no fsync), fsync'd, and, unless the rank already holds these bytes or
 * other ones, renamed into the blob store and committed; the reply goes out
 * only after the commit. */
#include "daemon/h_jobs.h"

#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "daemon/blobs.h"
#include "daemon/builder.h"
#include "daemon/cache.h"
#include "daemon/config.h"
#include "daemon/failpoint.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/store.h"
#include "daemon/store_blob.h"
#include "daemon/store_pool.h"
#include "model/chakra_read.h"
#include "model/stream.h"
#include "model/trace.h"
#include "daemon/dispatch.h"
#include "daemon/h_shared.h"
#include "common/banned.h"

static int unlink_blob(void *blobs, const char *sha, struct sc_error *err)
{
    return blob_remove(blobs, sha, err);
}

/* Each freed blob is unlinked under the lock on its digest, unless another
 * replica has committed a row naming it since (store_blob_remove). */
void h_remove_blobs(struct svc *s, const struct store_names *freed)
{
    for (size_t i = 0; i < freed->n; i++) {
        struct sc_error err;
        if (store_blob_remove(s->store, freed->v[i], unlink_blob, s->blobs, &err))
            log_warn("store", "event=blob_remove_failed sha256=%s msg=\"%s\"", freed->v[i], err.msg);
    }
}

void h_jobs_list(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_list_meta m = {0};
    struct api_job *v;
    struct api_page pg;
    struct sc_error err;
    char next[API_PAGE_CURSOR_MAX];
    size_t n;
    int more;
    if (h_page(q, &pg, r))
        return;
    if (store_job_list(s->store, &pg, &v, &n, &more, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (more) {
        api_page_cursor(0, v[n - 1].id, next);
        m.next_cursor = next;
    }
    api_reply_jobs(r, v, n, &m);
    h_page_skipped("jobs", &m);
    api_jobs_free(v, n);
}

void h_job_put(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct api_job job;
    struct sc_error err;
    char *desc = NULL;
    int created = 0;
    if (api_decode_job(q->body, q->body_len, &lim, &desc, r))
        return;
    if (store_job_put(s->store, q->params.job, desc, q->caller.id, &created, &err) ||
        store_job_get(s->store, q->params.job, &job, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
    } else {
        api_reply_job(r, created ? 201 : 200, &job, NULL, 0, NULL, 0);
        api_job_release(&job);
    }
    free(desc);
}

void h_job_get(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_job job;
    struct api_trace *traces = NULL;
    struct api_model *models = NULL;
    size_t nt = 0, nm = 0;
    struct sc_error err;
    if (store_job_get(s->store, q->params.job, &job, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (store_trace_list(s->store, job.id, &traces, &nt, &err) ||
        store_model_list(s->store, job.id, NULL, &models, &nm, NULL, &err))
        api_fail_status(r, &err, API_E_INTERNAL);
    else /* none is an empty list, not an absent one */
        api_reply_job(r, 200, &job, traces ? traces : (struct api_trace[1]){0}, nt,
                      models ? models : (struct api_model[1]){0}, nm);
    free(traces);
    api_models_free(models, nm);
    api_job_release(&job);
}

void h_job_delete(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct store_names models = {0}, freed = {0};
    struct sc_error err;
    int rc;
    pthread_mutex_lock(&s->blob_mu);
    pthread_mutex_lock(&s->publish_mu);
    rc = store_job_delete(s->store, q->params.job, &models, &freed, &err);
    if (rc == SC_ENOSPC && blob_reserve_release(s->blobs)) { /* a full disk: what the reserve is for */
        store_names_release(&models);
        store_names_release(&freed);
        rc = store_job_delete(s->store, q->params.job, &models, &freed, &err);
    }
    for (size_t i = 0; rc == SC_OK && i < models.n; i++) {
        cache_remove(s->cache, models.v[i]);
        builder_cancel(s->builder, models.v[i]); /* another replica's stops when it finds its lease gone */
    }
    pthread_mutex_unlock(&s->publish_mu);
    if (rc == SC_OK) {
        fp_hit("delete.after_commit");
        h_remove_blobs(s, &freed);
        blob_reserve_keep(s->blobs);
    }
    pthread_mutex_unlock(&s->blob_mu);
    if (rc)
        api_fail_status(r, &err, API_E_INTERNAL);
    else {
        log_info("store", "event=job_deleted job=%s models=%zu blobs_freed=%zu", q->params.job,
                 models.n, freed.n);
        api_reply_deleted(r, "job", q->params.job, models.n, freed.n);
    }
    store_names_release(&models);
    store_names_release(&freed);
}

/* A Chakra ET file received: read whole (one rank's nodes); its nodes
 * count as its events, and it is one step. */
static int validate_et(struct svc *s, struct svc_request *q, struct api_trace *rec, struct api_reply *r)
{
    struct model_et_rank *et = NULL;
    struct sc_error err;
    int rc = model_et_read_file(blob_writer_path(q->upload), &s->load.limits, &et, &err);
    if (rc)
        return api_fail_status(r, &err, API_E_INVALID_TRACE);
    if (et->rank >= 0 && et->rank != q->params.rank)
        rc = api_fail(r, API_E_UNPROCESSABLE, "the Chakra ET is rank %d (its GlobalMetadata) but was sent as rank %lld",
                      et->rank, (long long)q->params.rank);
    rec->events = (int64_t)et->n_nodes;
    rec->steps = 1;
    model_et_rank_free(et);
    return rc;
}

/* Load the received file with the reader: the trace's counts, or an error
 * reply naming the byte offset or event. */
static int validate(struct svc *s, struct svc_request *q, struct api_trace *rec, struct api_reply *r)
{
    struct model_stream *in;
    struct model_trace *t = NULL;
    struct sc_error err;
    int et = 0;
    if (model_et_is_et(blob_writer_path(q->upload), &et, &err) == SC_OK && et)
        return validate_et(s, q, rec, r);
    int rc = model_stream_open_file(blob_writer_path(q->upload), &in, &err);
    if (rc == SC_OK) {
        struct model_load_opts counting = s->load; /* memory bounded whatever the event count */
        counting.count_only = 1;
        rc = model_trace_read(in, "trace", &counting, &t, &err);
        model_stream_close(in);
    }
    if (rc && err.code == SC_ENUMERIC) /* a number out of range: as invalid as a bad byte */
        return api_fail(r, API_E_INVALID_TRACE, "%s", err.msg);
    if (rc)
        return api_fail_status(r, &err, API_E_INVALID_TRACE);
    if (t->rank >= 0 && t->rank != q->params.rank)
        rc = api_fail(r, API_E_UNPROCESSABLE,
                      "the trace is rank %lld (distributedInfo.rank) but was sent as rank %lld",
                      (long long)t->rank, (long long)q->params.rank);
    rec->events = (int64_t)t->n_entries;
    rec->steps = (int64_t)t->n_steps;
    model_trace_free(t);
    return rc;
}

/* The received file renamed into the blob store, when no row names its
 * blob yet (store_trace_put calls it under the lock on its digest). */
static int place_upload(void *upload, const char *sha, struct sc_error *err)
{
    (void)sha;
    int rc = blob_writer_commit(upload, err);
    if (rc == SC_OK)
        fp_hit("upload.after_rename");
    return rc;
}

/* With blob_mu held: decide against the rank's current trace, then put the
 * blob in place, commit and answer with the record committed. *result says
 * what happened. */
static int commit_trace(struct svc *s, struct svc_request *q, struct api_trace *rec, int replace,
                        enum metrics_upload *result, struct api_reply *r)
{
    struct store_names freed = {0};
    struct api_trace cur;
    struct sc_error err;
    int rc;

    rc = store_trace_get(s->store, q->params.job, q->params.rank, &cur, &err);
    if (rc == SC_OK && strcmp(cur.sha256, rec->sha256) == 0) {
        *result = METRICS_UPLOAD_IDENTICAL;
        *rec = cur;
        return api_reply_trace(r, 200, q->params.job, &cur);
    }
    if (rc == SC_OK && !replace)
        return api_fail(r, API_E_CONFLICT,
                        "rank %lld of job '%s' already has another trace (sha256 %s); "
                        "send ?replace=true to replace it",
                        (long long)q->params.rank, q->params.job, cur.sha256);
    if (rc != SC_OK && rc != SC_ENOTFOUND)
        return api_fail_status(r, &err, API_E_INTERNAL);
    if (rc == SC_ENOTFOUND && (rc = store_job_room(s->store, q->params.job, q->caller.id, &err)))
        return api_fail_status(r, &err, API_E_INTERNAL);
    if ((rc = store_trace_put(s->store, q->params.job, rec, q->caller.id, place_upload, q->upload, &freed, &err)))
        return api_fail_status(r, &err, API_E_INTERNAL);
    fp_hit("upload.after_commit");
    h_remove_blobs(s, &freed);
    store_names_release(&freed);
    *result = METRICS_UPLOAD_CREATED;
    return api_reply_trace(r, 201, q->params.job, rec);
}

void h_trace_put(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    enum metrics_upload result = METRICS_UPLOAD_REJECTED;
    struct api_trace rec;
    struct sc_error err;
    int replace = (int)api_query_int(&q->query, "replace");

    memset(&rec, 0, sizeof rec);
    rec.rank = q->params.rank;
    rec.bytes = (int64_t)blob_writer_bytes(q->upload);
    if (rec.bytes == 0) {
        api_fail(r, API_E_INVALID_TRACE, "the body is empty; send a Kineto trace (JSON or gzip)");
        goto done;
    }
    /* reading every event takes seconds for a large trace: on a worker
     * (heavy-requests), so HTTP threads stay free while uploads are
     * checked; the received file waits with the request */
    if (svc_defer())
        return;
    if (validate(s, q, &rec, r))
        goto done;
    if (blob_writer_finish(q->upload, rec.sha256, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        goto done;
    }
    fp_hit("upload.after_fsync");
    pthread_mutex_lock(&s->blob_mu);
    commit_trace(s, q, &rec, replace, &result, r);
    pthread_mutex_unlock(&s->blob_mu);
done:
    /* the temp file is gone (renamed into place, or removed) before the
     * answer goes out, so a client that reads it finds no leftover */
    blob_writer_free(q->upload);
    q->upload = NULL;
    metrics_upload(s->metrics, (uint64_t)rec.bytes, result);
    log_info("upload", "job=%s rank=%lld bytes=%lld sha256=%.16s result=%s events=%lld", q->params.job,
             (long long)q->params.rank, (long long)rec.bytes,
             rec.sha256[0] ? rec.sha256 : "-",
             result == METRICS_UPLOAD_CREATED ? "created"
             : result == METRICS_UPLOAD_IDENTICAL ? "identical" : "rejected",
             (long long)rec.events);
}

void h_trace_get(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_trace t;
    struct sc_error err;
    if (store_trace_get(s->store, q->params.job, q->params.rank, &t, &err))
        api_fail_status(r, &err, API_E_INTERNAL);
    else
        api_reply_trace(r, 200, q->params.job, &t);
}
