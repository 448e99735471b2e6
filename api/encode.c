/* api/encode.c: resources as JSON (encode.h). */
#include "api/encode.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/inspect_json.h"
#include "api/json_reply.h"
#include "api/page.h"
#include "api/replay_json.h"
#include "api/timeline_json.h"
#include "estimator/interchange/chakra_export.h"
#include "model/archive.h"
#include "model/job.h"
#include "model/trace.h"
#include "common/banned.h"

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* A stored JSON text of our own making, or null. */
static json_t *parsed(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

static json_t *job_json(const void *row)
{
    const struct api_job *j = row;
    json_t *o = j->description ? json_loads(j->description, 0, NULL) : NULL;
    if (!o || !json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    if (o && json_object_update_new(o, json_pack("{s:s, s:o, s:o, s:I, s:I, s:I}", "id", j->id,
                                                 "created", api_json_time(j->created_ns),
                                                 "updated", api_json_time(j->updated_ns),
                                                 "n_ranks", (json_int_t)j->n_traces,
                                                 "trace_bytes", (json_int_t)j->trace_bytes,
                                                 "n_models", (json_int_t)j->n_models))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *trace_json(const char *job, const struct api_trace *t)
{
    json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:o}", "rank", (json_int_t)t->rank, "sha256",
                          t->sha256, "bytes", (json_int_t)t->bytes, "events",
                          (json_int_t)t->events, "steps", (json_int_t)t->steps, "uploaded",
                          api_json_time(t->uploaded_ns));
    if (o && job)
        json_object_set_new(o, "job", json_string(job));
    return o;
}

static json_t *model_json(const void *row)
{
    const struct api_model *m = row;
    return json_pack("{s:s, s:s, s:s, s:f, s:b, s:o, s:s, s:I, s:{s:o, s:o, s:o}, s:o, s:o, s:o}", "id",
                     m->id, "job", m->job, "status", api_model_status_name(m->status), "progress",
                     m->progress, "queued", m->queued, "error", str_or_null(m->error), "version", m->version, "n_ranks",
                     (json_int_t)m->n_ranks, "options", "step_marker", str_or_null(m->step_marker),
                     "steps", str_or_null(m->steps), "fold", m->fold < 0 ? json_null() : json_boolean(m->fold),
                     "created", api_json_time(m->created_ns),
                     "finished", api_json_time(m->finished_ns), "summary", parsed(m->summary));
}

static json_t *token_json(const void *row)
{
    const struct api_token *t = row;
    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "id", t->id, "name", t->name, "scope",
                     api_scope_name(t->scope), "created", api_json_time(t->created_ns), "revoked",
                     api_json_time(t->revoked_ns));
}

/* [each(row)...] over n rows of `size` bytes; NULL when out of memory.
 * With `skipped`, a row that each() cannot render (a string that is not
 * UTF-8, a number JSON has no text for: stored before it was checked) is
 * left out and counted there; without, it fails the whole array. */
static json_t *array_of(const void *rows, size_t n, size_t size, json_t *(*each)(const void *row), size_t *skipped)
{
    json_t *a = json_array();
    assert(rows || n == 0);
    for (size_t i = 0; a && i < n; i++) {
        json_t *o = each((const char *)rows + i * size);
        if (!o && skipped) {
            ++*skipped;
        } else if (json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* Set o[key] to a (stolen); o is dropped (NULL) when either is missing. */
static json_t *with(json_t *o, const char *key, json_t *a)
{
    if (!o || !a || json_object_set_new(o, key, a)) {
        json_decref(o);
        json_decref(a);
        return NULL;
    }
    return o;
}

/* The members of a job (GET /v1/jobs/{job}). */
static json_t *job_trace_json(const void *row)
{
    return trace_json(NULL, row);
}

static json_t *job_model_json(const void *row)
{
    const struct api_model *m = row;
    return json_pack("{s:s, s:s, s:o}", "id", m->id, "status", api_model_status_name(m->status),
                     "created", api_json_time(m->created_ns));
}

int api_reply_job(struct api_reply *r, unsigned status, const struct api_job *j,
                  const struct api_trace *traces, size_t n_traces, const struct api_model *models,
                  size_t n_models)
{
    json_t *o = job_json(j);
    if (traces)
        o = with(o, "traces", array_of(traces, n_traces, sizeof *traces, job_trace_json, NULL));
    if (models)
        o = with(o, "models", array_of(models, n_models, sizeof *models, job_model_json, NULL));
    return api_reply_json(r, status, o);
}

int api_reply_jobs(struct api_reply *r, const struct api_job *v, size_t n, struct api_list_meta *m)
{
    return api_reply_json(r, 200, api_list_doc("jobs", array_of(v, n, sizeof *v, job_json, &m->skipped), m));
}

int api_reply_trace(struct api_reply *r, unsigned status, const char *job, const struct api_trace *t)
{
    return api_reply_json(r, status, trace_json(job, t));
}

int api_reply_model(struct api_reply *r, unsigned status, const struct api_model *m)
{
    return api_reply_json(r, status, model_json(m));
}

int api_reply_model_accepted(struct api_reply *r, const struct api_model *m)
{
    json_t *o = model_json(m);
    if (o)
        json_object_set_new(o, "model", json_string(m->id));
    return api_reply_json(r, 202, o);
}

int api_reply_models(struct api_reply *r, const struct api_model *v, size_t n, struct api_list_meta *m)
{
    return api_reply_json(r, 200, api_list_doc("models", array_of(v, n, sizeof *v, model_json, &m->skipped), m));
}

int api_reply_token(struct api_reply *r, unsigned status, const struct api_token *t,
                    const char *secret)
{
    json_t *o = token_json(t);
    if (o && secret)
        json_object_set_new(o, "token", json_string(secret));
    return api_reply_json(r, status, o);
}

int api_reply_tokens(struct api_reply *r, const struct api_token *v, size_t n, struct api_list_meta *m)
{
    return api_reply_json(r, 200, api_list_doc("tokens", array_of(v, n, sizeof *v, token_json, &m->skipped), m));
}

int api_reply_deleted(struct api_reply *r, const char *kind, const char *id, size_t models,
                      size_t blobs)
{
    return api_reply_json(r, 200, json_pack("{s:s, s:s, s:I, s:I}", "deleted", kind, "id", id,
                                            "models", (json_int_t)models, "blobs_freed",
                                            (json_int_t)blobs));
}

int api_reply_health(struct api_reply *r, unsigned status, const struct api_health *h)
{
    return api_reply_json(r, status,
                          json_pack("{s:s, s:s, s:f, s:i, s:{s:i, s:i}, s:b, s:I, s:{s:s, s:b}}", "status",
                                    h->status, "version", STEPCAST_VERSION, "uptime_s", h->uptime_s,
                                    "schema", h->schema, "builds", "running",
                                    (int)h->builds_running, "queued", (int)h->builds_queued,
                                    "disk_full", h->disk_full, "disk_free_bytes",
                                    (json_int_t)h->disk_free_bytes, "store", "engine", h->store,
                                    "reachable", h->store_reachable));
}

int api_reply_replay(struct api_reply *r, enum api_op op, const struct model_replay *rp, int rank)
{
    if (op == API_OP_TIMELINE) { /* spaced as the PyTorch profiler writes it */
        json_t *doc = api_timeline_json(rp, rank);
        if (!doc)
            return api_fail(r, API_E_NOT_FOUND, "the model has no rank %d", rank);
        char *body = json_dumps(doc, API_TIMELINE_DUMP_FLAGS);
        json_decref(doc);
        if (!body)
            return api_fail(r, API_E_UNAVAILABLE, "out of memory");
        api_reply_take(r, 200, "application/json", body, strlen(body));
        return SC_OK;
    }
    return api_reply_json(r, 200, op == API_OP_CRITICAL_PATH ? api_critical_path_json(rp) : api_replay_json(rp));
}

int api_reply_chakra(struct api_reply *r, const struct model_graph *g, const struct model_replay *rp,
                     const struct model_replay_opts *ro, const char *prefix)
{
    struct est_chakra_out o;
    struct model_tar_file *files = NULL;
    unsigned char *tar = NULL;
    size_t len = 0;
    struct sc_error err;
    int rc = chakra_export(g, rp, ro, prefix, &o, &err);
    if (rc == SC_OK && !(files = calloc(o.n_files ? o.n_files : 1, sizeof *files)))
        rc = sc_error_set(&err, SC_ENOMEM, "out of memory");
    for (size_t k = 0; rc == SC_OK && k < o.n_files; k++)
        files[k] = (struct model_tar_file){o.files[k].name, o.files[k].body.data, o.files[k].body.n};
    if (rc == SC_OK)
        rc = model_archive_tar(files, o.n_files, &tar, &len, &err);
    free(files);
    chakra_out_release(&o);
    if (rc)
        return api_fail_status(r, &err, API_E_BAD_REQUEST);
    api_reply_take(r, 200, "application/x-tar", (char *)tar, len);
    return SC_OK;
}

static json_t *rank_summary(const struct model_trace *t, int rank)
{
    json_t *steps = json_array();
    for (size_t i = 0; steps && i < t->n_steps; i++) {
        const struct model_step *s = &t->steps[i];
        json_array_append_new(steps, json_pack("{s:s, s:I, s:o, s:b}", "name", model_str(t, s->name),
                                               "number", (json_int_t)s->number, "duration_ms",
                                               api_json_ms(s->end - s->start), "partial",
                                               s->partial));
    }
    return json_pack("{s:i, s:I, s:I, s:o}", "rank", rank, "entries", (json_int_t)t->n_entries,
                     "events", (json_int_t)t->n_complete, "steps", steps);
}

int api_model_summary(const struct model_job *job, char **text, struct sc_error *err)
{
    json_t *ranks = json_array();
    uint64_t events = 0;
    for (size_t i = 0; ranks && i < job->n_ranks; i++) {
        events += job->ranks[i]->n_complete;
        if (json_array_append_new(ranks, rank_summary(job->ranks[i], job->rank_ids[i]))) {
            json_decref(ranks);
            ranks = NULL;
        }
    }
    int64_t world = 0; /* distributedInfo's, the first rank that gives it */
    for (size_t i = 0; i < job->n_ranks && !world; i++)
        world = job->ranks[i]->world_size > 0 ? job->ranks[i]->world_size : 0;
    json_t *doc = ranks ? json_pack("{s:s, s:I, s:o, s:I, s:o}", "stepcast_version", STEPCAST_VERSION,
                                    "n_ranks", (json_int_t)job->n_ranks, "world_size",
                                    world ? json_integer(world) : json_null(), "events", (json_int_t)events,
                                    "ranks", ranks)
                        : NULL;
    *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(doc);
    return *text ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
}
