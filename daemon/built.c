/* daemon/built.c: building a model from its traces; queries on it (built.h). */
#include "daemon/built.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/blobs.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

struct built_model {
    char id[API_ID_MAX];
    struct model_job *job;
    size_t bytes;
};

/* What a trace's tables hold in memory. */
static size_t trace_bytes(const struct model_trace *t)
{
    return sizeof *t + t->cap_events * sizeof *t->events + t->cap_infos * sizeof *t->infos +
           t->cap_colls * sizeof *t->colls + t->cap_syncs * sizeof *t->syncs +
           t->cap_flows * sizeof *t->flows + t->cap_tracks * sizeof *t->tracks +
           t->cap_cats * sizeof *t->cats + t->cap_devices * sizeof *t->devices +
           t->cap_pgs * sizeof *t->pgs + t->n_steps * sizeof *t->steps +
           (t->n_track_slots + t->n_cat_slots) * sizeof(uint32_t) + t->strings.arena.bytes +
           t->strings.cap * sizeof *t->strings.strs + t->strings.nslots * sizeof(uint32_t);
}

int built_model_build(const char *id, const struct api_trace *traces, size_t n,
                      struct blob_store *bs, const struct model_load_opts *opts,
                      built_progress_fn progress, void *progress_ctx, struct built_model **out,
                      struct sc_error *err)
{
    struct model_trace **loaded = calloc(n ? n : 1, sizeof *loaded);
    struct built_model *m = calloc(1, sizeof *m);
    int rc = SC_OK;

    *out = NULL;
    if (!loaded || !m) {
        free(loaded);
        free(m);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    snprintf(m->id, sizeof m->id, "%s", id);
    m->bytes = sizeof *m;
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        char path[PATH_MAX];
        blob_path(bs, traces[i].sha256, path, sizeof path);
        if ((rc = model_trace_load_file(path, opts, &loaded[i], err))) {
            sc_error_prefix(err, "rank %lld", (long long)traces[i].rank);
            break;
        }
        loaded[i]->rank = traces[i].rank; /* the rank it was uploaded as */
        m->bytes += trace_bytes(loaded[i]);
        if (progress)
            progress(progress_ctx, (double)(i + 1) / (double)(n + 1));
    }
    if (rc == SC_OK)
        rc = model_job_from_traces(loaded, n, &m->job, err);
    else
        for (size_t i = 0; i < n; i++)
            model_trace_free(loaded[i]);
    free(loaded);
    if (rc) {
        built_model_free(m);
        return rc;
    }
    if (progress)
        progress(progress_ctx, 1.0);
    *out = m;
    return SC_OK;
}

void built_model_free(struct built_model *m)
{
    if (!m)
        return;
    model_job_free(m->job);
    free(m);
}

size_t built_model_bytes(const struct built_model *m)
{
    return m->bytes;
}

const struct model_job *built_model_job(const struct built_model *m)
{
    return m->job;
}

int built_model_query(struct built_model *m, enum api_op op, const char *const *keys,
                      const char *const *values, size_t n, struct api_reply *r, int *memo_hit)
{
    (void)keys;
    (void)values;
    (void)n;
    *memo_hit = 0;
    return api_fail(r, API_E_NOT_IMPLEMENTED, "%s on model '%s': the replay is not in this build yet",
                    api_op_info(op)->id, m->id);
}
