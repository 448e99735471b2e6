/* daemon/service.c: opening, checking and closing the service; dispatch
 * of requests to the handlers (service.h). */
#include "daemon/service.h"
#include "daemon/plans.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/openapi.h"
#include "daemon/admission.h"
#include "daemon/auth.h"
#include "daemon/blobs.h"
#include "daemon/build_queue.h"
#include "daemon/builder.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/check_rows.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/model_blob.h"
#include "daemon/store.h"
#include "daemon/store_blob.h"
#include "daemon/store_pool.h"
#include "daemon/store_schema.h"
#include "model/trace.h"
#include "common/banned.h"

static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* keep() of blob_sweep: is sha one of the (sorted) catalog rows? */
static int in_catalog(void *ctx, const char *sha)
{
    const struct store_names *rows = ctx;
    return rows->n && bsearch(sha, rows->v, rows->n, sizeof *rows->v, cmp_name) != NULL;
}

/* Remove temp files and blobs no row names; count rows whose blob is gone. */
static int sweep(struct svc *s, struct sc_error *err)
{
    struct store_names rows = {0};
    struct blob_sweep_stats st;
    size_t missing = 0;
    int rc = store_blob_list(s->store, &rows, err);
    if (rc == SC_OK)
        rc = blob_sweep(s->blobs, in_catalog, &rows, 0, NULL, &st, err);
    for (size_t i = 0; rc == SC_OK && i < rows.n; i++) {
        char p[PATH_MAX];
        struct stat sb;
        blob_path(s->blobs, rows.v[i], p, sizeof p);
        if (stat(p, &sb))
            missing++;
    }
    if (rc == SC_OK) {
        log_info("store", "event=sweep blobs=%llu blob_bytes=%llu removed_temp=%llu removed_orphans=%llu",
                 (unsigned long long)st.kept, (unsigned long long)st.kept_bytes,
                 (unsigned long long)st.temp_files, (unsigned long long)st.orphans);
        if (missing)
            log_error("store", "event=missing_blobs count=%zu msg=\"catalog rows name blobs that are "
                               "gone; run stepcastd --check\"", missing);
        uint64_t free_bytes;
        blob_reserve_keep(s->blobs);
        if (blob_store_disk_full(s->blobs, &free_bytes) == 1)
            log_warn("store", "event=disk_full free_bytes=%llu msg=\"reads are served; writes get 507 "
                              "until space is freed (DELETE works)\"", (unsigned long long)free_bytes);
    }
    store_names_release(&rows);
    return rc;
}

/* cache_free_fn: calling built_model_free through a cast to another
 * function type would be undefined behaviour. */
static void free_built(void *m)
{
    built_model_free(m);
}

/* Open the catalog. On a full disk SQLite cannot create its log and
 * shared-memory files: the reserve (blobs.h) makes the room for them. */
static int open_catalog(struct svc *s, const char *path, struct sc_error *err)
{
    size_t conns = (size_t)s->cfg->store_connections;
    int rc = store_open(path, conns, &s->store, err);
    if (rc && blob_reserve_release(s->blobs)) {
        log_warn("store", "event=reserve_released msg=\"the catalog did not open (%s); trying again "
                          "with the reserve's space\"", err->msg);
        rc = store_open(path, conns, &s->store, err);
    }
    return rc;
}

/* The details of a failure on the server's side, for its log. */
static void log_server_error(const struct sc_error *err)
{
    char q[600];
    log_error("handler", "status=%s msg=\"%s\"", sc_status_name(err->code), log_quote(err->msg, q, sizeof q));
}

int svc_open(struct svc *s, const struct daemon_config *cfg, struct sc_error *err)
{
    char path[PATH_MAX], blobs[PATH_MAX];
    int rc;

    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->started = metrics_clock();
    api_set_server_error_hook(log_server_error);
    pthread_mutex_init(&s->blob_mu, NULL);
    pthread_mutex_init(&s->publish_mu, NULL);
    model_load_opts_default(&s->load);
    s->load.limits.max_events = (uint64_t)cfg->max_events;
    svc_store_url(cfg->store, cfg->data_dir, path, sizeof path);
    int shared = svc_blobs_dir(cfg->blobs, cfg->data_dir, blobs, sizeof blobs);
    if ((rc = blob_store_open(blobs, cfg->data_dir, shared, &s->blobs, err)) ||
        (rc = open_catalog(s, path, err)) || (rc = sweep(s, err)) ||
        (rc = auth_bootstrap(s->store, cfg, err)) ||
        (rc = cache_new((size_t)cfg->cache_bytes, free_built, &s->cache, err)) ||
        (rc = cache_new(SVC_ANSWERS_BYTES, free, &s->answers, err)) || (rc = plans_new(s->store, (int)cfg->heavy_nice, &s->plans, err)) ||
        (rc = bq_replica_name(cfg->data_dir, s->replica, err)) ||
        (rc = metrics_new(cfg->replica_name[0] ? cfg->replica_name : s->replica, &s->metrics, err)) || (rc = api_openapi_text(&s->openapi, err)) ||
        (rc = admission_new((uint64_t)cfg->memory_budget, &s->admission, err)))
        goto fail;
    s->openapi_len = strlen(s->openapi);
    store_set_max_owned(s->store, cfg->max_stored_per_token);
    /* builds this replica's previous run had taken go back to the queue */
    if ((rc = bq_release_all(s->store, s->replica, err)))
        goto fail;
    struct builder_env env = {s->store, s->blobs,     s->cache,           s->metrics, &s->load,
                              &s->publish_mu, s->admission, (int)cfg->heavy_nice, s->replica};
    if ((rc = builder_start(&env, (unsigned)cfg->build_workers, (size_t)cfg->max_queued_builds,
                            &s->builder, err)))
        goto fail;
    log_info("build", "event=queue replica=%s", s->replica);
    return SC_OK;
fail:
    svc_stop_builds(s, 0);
    svc_close(s);
    return rc;
}

int svc_drain_plans(struct svc *s, double timeout_s)
{
    return plans_drain(s->plans, timeout_s);
}

int svc_stop_builds(struct svc *s, double timeout_s)
{
    return s->builder ? builder_stop(s->builder, timeout_s) : 1;
}

void svc_close(struct svc *s)
{
    plans_free(s->plans);
    builder_free(s->builder);
    admission_free(s->admission);
    cache_free(s->cache);
    cache_free(s->answers);
    metrics_free(s->metrics);
    store_close(s->store);
    blob_store_free(s->blobs);
    free(s->openapi);
    pthread_mutex_destroy(&s->blob_mu);
    pthread_mutex_destroy(&s->publish_mu);
    memset(s, 0, sizeof *s);
}


void svc_store_url(const char *cfg_store, const char *data_dir, char *out, size_t n)
{
    if (cfg_store && *cfg_store)
        snprintf(out, n, "%s", cfg_store);
    else
        snprintf(out, n, "sqlite:%s/catalog.db", data_dir);
}

int svc_blobs_dir(const char *cfg_blobs, const char *data_dir, char *out, size_t n)
{
    if (cfg_blobs && *cfg_blobs) {
        snprintf(out, n, "%s", cfg_blobs);
        return 1;
    }
    snprintf(out, n, "%s/blobs", data_dir);
    return 0;
}

/* ---- stepcastd --check ---- */

/* Each built model's blob loads and its graph passes model_graph_check
 * (model_blob_read runs it). */
static int check_built(struct store *st, struct blob_store *bs, FILE *report, size_t *bad, struct sc_error *err)
{
    char (*ids)[API_ID_MAX] = NULL;
    char (*shas)[DIGEST_HEX_LEN + 1] = NULL;
    struct model_load_opts lo;
    size_t n = 0, ok = 0, stale = 0;
    int rc = bq_built_blobs(st, &ids, &shas, &n, err);
    model_load_opts_default(&lo);
    for (size_t i = 0; rc == SC_OK && i < n; i++) {
        struct built_model *m = NULL;
        struct sc_error e;
        void *p = NULL;
        size_t len = 0;
        int r = blob_get(bs, shas[i], SIZE_MAX / 2, &p, &len, &e);
        if (r == SC_OK && model_blob_stale(p, len)) {
            fprintf(report, "model %s: blob %s: an earlier format, built again from its traces on first use\n",
                    ids[i], shas[i]);
            stale++;
            free(p);
            continue;
        }
        if (r == SC_OK)
            r = model_blob_read(p, len, ids[i], &lo, &m, &e);
        free(p);
        built_model_free(m);
        if (r) {
            fprintf(report, "model %s: blob %s: %s\n", ids[i], shas[i], e.msg);
            ++*bad;
        } else
            ok++;
    }
    if (rc == SC_OK)
        fprintf(report, "built models: %zu of %zu blobs load, their graphs checked; %zu of an earlier format\n",
                ok, n, stale);
    free(ids);
    free(shas);
    return rc;
}

int svc_check(const char *data_dir, const char *store, const char *blobs, FILE *report,
              struct sc_error *err)
{
    char path[PATH_MAX], dir[PATH_MAX];
    struct store *st = NULL;
    struct blob_store *bs = NULL;
    struct store_names rows = {0};
    struct blob_sweep_stats sw;
    struct sc_error e;
    uint64_t bytes, total = 0;
    size_t bad = 0;
    int rc;

    svc_store_url(store, data_dir, path, sizeof path);
    if (!strncmp(path, "sqlite:", 7) && access(path + 7, F_OK)) /* a check creates nothing */
        return sc_error_set(err, SC_ENOTFOUND, "no store in '%s': there is no %s", data_dir, path + 7);
    int shared = svc_blobs_dir(blobs, data_dir, dir, sizeof dir);
    if ((rc = store_open(path, 1, &st, err)) || (rc = blob_store_open(dir, data_dir, shared, &bs, err)))
        goto out;
    if (store_check(st, &e)) {
        fprintf(report, "catalog: %s\n", e.msg);
        bad++;
    } else {
        fprintf(report, "catalog: %s\n", store_is_postgresql(st)
                                              ? "PostgreSQL answers, schema version ok (it enforces foreign keys)"
                                              : "integrity_check ok, foreign keys ok");
    }
    if ((rc = store_blob_list(st, &rows, err)))
        goto out;
    for (size_t i = 0; i < rows.n; i++) {
        if (blob_verify(bs, rows.v[i], &bytes, &e)) {
            fprintf(report, "blob %s: %s\n", rows.v[i], e.msg);
            bad++;
        }
        total += bytes;
    }
    fprintf(report, "blobs: %zu rows, %llu bytes verified\n", rows.n, (unsigned long long)total);
    /* what a crash leaves (temp files, blobs no row names) is harmless
     * and removed by the next start: listed, not an inconsistency */
    if ((rc = blob_sweep(bs, in_catalog, &rows, 1, report, &sw, err)))
        goto out;
    fprintf(report, "leftovers: %llu temp files, %llu blobs no row names\n",
            (unsigned long long)sw.temp_files, (unsigned long long)sw.orphans);
    if ((rc = check_built(st, bs, report, &bad, err)) || (rc = svc_check_rows(st, report, &bad, err)))
        goto out;
    fprintf(report, "%s\n", bad ? "INCONSISTENT" : "consistent");
    if (bad)
        rc = sc_error_set(err, SC_EINTERNAL, "the data directory '%s' is not consistent", data_dir);
out:
    store_names_release(&rows);
    store_close(st);
    blob_store_free(bs);
    return rc;
}
