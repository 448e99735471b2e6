/* daemon/h_experiments.c: experiments (api/ops.def): a baseline job against
 * a variant job, the A/B verdict of their runs kept in the store.
 *
 * An experiment names jobs, not models: its runs are each job's newest
 * ready model, so traces that arrive later (a run reconciled by its
 * external id) are taken up when their model is built. The verdict is
 * computed when the experiment is read (shown or listed) and both models
 * are ready, then kept with the digest of its inputs (each model's
 * traces' SHA-256 by rank, its build options, this stepcast's version):
 * it is computed again only when that digest changes, and a restarted
 * daemon, which requeues the builds it was running, resumes each open
 * experiment from the store with nothing held in memory. Closing an
 * experiment whose variant reads faster and survives banks its saving:
 * (baseline's center - variant's) x world size x steps a day, in GPU-hours
 * a day and dollars at the baseline job's cadence (api/job_cadence.h). */
#include "daemon/h_experiments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <time.h>

#include "api/json_reply.h"
#include "api/job_cadence.h"
#include "api/request.h"
#include "daemon/digest.h"
#include "daemon/experiment_doc.h"
#include "daemon/store.h"
#include "model/ab.h"
#include "daemon/dispatch.h"
#include "daemon/h_models.h"
#include "daemon/h_shared.h"
#include "common/banned.h"

/* The newest ready model of job into id; 0 when it has one. */
static int newest_ready(struct svc *s, const char *job, char id[API_ID_MAX])
{
    struct api_model *v = NULL;
    struct sc_error err;
    size_t n = 0;
    int64_t newest = -1;
    id[0] = '\0';
    if (store_model_list(s->store, job, NULL, &v, &n, NULL, &err))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (v[i].status == API_MODEL_READY && v[i].created_ns > newest) {
            newest = v[i].created_ns;
            snprintf(id, API_ID_MAX, "%s", v[i].id);
        }
    api_models_free(v, n);
    return id[0] ? 0 : -1;
}

/* Feed model id's inputs to d: build options and traces by rank. */
static int digest_model(struct svc *s, struct digest *d, const char *id, struct sc_error *err)
{
    struct api_model m;
    struct api_trace *t = NULL;
    size_t n = 0;
    char line[256];
    int rc;
    if ((rc = store_model_get(s->store, id, &m, err)))
        return rc;
    snprintf(line, sizeof line, "model marker=%s steps=%s%s\n", m.step_marker ? m.step_marker : "",
             m.steps ? m.steps : "", m.fold < 0 ? "" : m.fold ? " fold=1" : " fold=0");
    api_model_release(&m);
    if ((rc = digest_update(d, line, strlen(line), err)) || (rc = store_model_traces(s->store, id, &t, &n, err)))
        return rc;
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        snprintf(line, sizeof line, "%lld %s\n", (long long)t[i].rank, t[i].sha256);
        rc = digest_update(d, line, strlen(line), err);
    }
    free(t);
    return rc;
}

/* The digest of a verdict's inputs: models a and b. */
static int inputs_digest(struct svc *s, const char *a, const char *b, char hex[DIGEST_HEX_LEN + 1],
                         struct sc_error *err)
{
    struct digest d;
    int rc;
    if ((rc = digest_init(&d, err)))
        return rc;
    if ((rc = digest_update(&d, "stepcast " STEPCAST_VERSION "\n", strlen("stepcast " STEPCAST_VERSION "\n"), err)) ||
        (rc = digest_model(s, &d, a, err)) || (rc = digest_model(s, &d, b, err)) ||
        (rc = digest_final(&d, hex, err))) {
        digest_release(&d);
        return rc;
    }
    return SC_OK;
}

/* Bring an open experiment's verdict up to date with its inputs; *why
 * says what it waits for (static text, or NULL). An error of the A/B
 * itself (too few steps) goes to problem (its message). 1 when the A/B
 * must be computed, on an HTTP thread: the request is deferred
 * (svc_defer). */
static int settle(struct svc *s, struct store_experiment *e, const char **why, char problem[256])
{
    char a[API_ID_MAX], b[API_ID_MAX], hex[DIGEST_HEX_LEN + 1], *inputs;
    struct model_ab_opts o;
    struct api_reply r = {0};
    struct sc_error err;
    int rc;
    *why = NULL;
    problem[0] = '\0';
    if (e->closed)
        return 0;
    if (newest_ready(s, e->baseline, a) || newest_ready(s, e->variant, b)) {
        *why = "a built model of each job";
        return 0;
    }
    if (inputs_digest(s, a, b, hex, &err)) {
        snprintf(problem, 256, "%s", err.msg);
        return 0;
    }
    if (e->inputs && strcmp(e->inputs, hex) == 0)
        return 0; /* decided on these inputs: never again */
    model_ab_opts_default(&o);
    if ((rc = h_ab_answer(s, a, b, &o, &r)) == H_DEFERRED)
        return 1;
    if (rc == SC_OK && r.status == 200) {
        char *verdict = strndup(r.body, r.len);
        int64_t now = store_now_ns();
        inputs = strdup(hex);
        if (verdict && inputs && store_experiment_decide(s->store, e->id, hex, verdict, now, &err) == SC_OK) {
            free(e->inputs), free(e->verdict);
            e->inputs = inputs, e->verdict = verdict;
            e->decided_ns = now;
            inputs = verdict = NULL;
        }
        free(inputs), free(verdict);
    } else if (r.status == 409) {
        *why = "a built model of each job";
    } else {
        snprintf(problem, 256, "%.*s", (int)(r.len < 255 ? r.len : 255), r.body ? r.body : "");
    }
    api_reply_release(&r);
    return 0;
}

/* The experiment as the API shows it, settled first; NULL with *deferred
 * set when settling it deferred the request, NULL alone when it cannot be
 * rendered. */
static json_t *experiment_json(struct svc *s, struct store_experiment *e, int *deferred)
{
    const char *why;
    char problem[256];
    if ((*deferred = settle(s, e, &why, problem)))
        return NULL;
    json_t *doc = h_experiment_doc(e);
    if (doc && why)
        json_object_set_new(doc, "waiting_for", json_string(why));
    if (doc && problem[0])
        json_object_set_new(doc, "error", json_string(problem));
    return doc;
}

void h_experiment_create(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct api_experiment_req req;
    struct store_experiment e;
    struct sc_error err;
    char rnd[24];
    /* made on a worker: its verdict may be computed at once, after it is stored */
    if (svc_defer() || api_decode_experiment(q->body, q->body_len, &lim, &req, r))
        return;
    memset(&e, 0, sizeof e);
    if (digest_random_hex(8, rnd, sizeof rnd, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    snprintf(e.id, sizeof e.id, "e-%s", rnd);
    snprintf(e.baseline, sizeof e.baseline, "%s", req.baseline);
    snprintf(e.variant, sizeof e.variant, "%s", req.variant);
    snprintf(e.external_id, sizeof e.external_id, "%s", req.external_id);
    e.hypothesis = req.hypothesis[0] ? req.hypothesis : NULL;
    e.created_ns = store_now_ns();
    snprintf(e.owner, sizeof e.owner, "%s", q->caller.id);
    if (store_experiment_create(s->store, &e, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    e.hypothesis = NULL; /* not ours */
    struct store_experiment made;
    if (store_experiment_get(s->store, e.id, &made, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    snprintf(r->location, sizeof r->location, "/v1/experiments/%s", e.id);
    int deferred; /* never: made on a worker */
    api_reply_json(r, 201, experiment_json(s, &made, &deferred));
    store_experiment_release(&made);
}

void h_experiments_list(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *external = api_query_str(&q->query, "external_id");
    struct store_experiment *v = NULL;
    struct api_list_meta m = {0};
    struct api_page pg;
    struct sc_error err;
    char next[API_PAGE_CURSOR_MAX];
    size_t n = 0;
    int more;
    if (h_page(q, &pg, r))
        return;
    if (store_experiment_list(s->store, external, &pg, &v, &n, &more, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (more) {
        api_page_cursor(v[n - 1].created_ns, v[n - 1].id, next);
        m.next_cursor = next;
    }
    json_t *list = json_array();
    int deferred = 0;
    for (size_t i = 0; list && !deferred && i < n; i++) {
        json_t *e = experiment_json(s, &v[i], &deferred);
        if (e)
            json_array_append_new(list, e);
        else if (!deferred)
            m.skipped++;
    }
    store_experiments_free(v, n);
    if (deferred) {
        json_decref(list);
        return;
    }
    api_reply_json(r, 200, api_list_doc("experiments", list, &m));
    h_page_skipped("experiments", &m);
}

void h_experiment_get(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct store_experiment e;
    struct sc_error err;
    if (store_experiment_get(s->store, q->params.id, &e, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    int deferred;
    json_t *doc = experiment_json(s, &e, &deferred);
    if (!deferred)
        api_reply_json(r, 200, doc);
    store_experiment_release(&e);
}

/* The saving a decided experiment banks when it closes (JSON text, from
 * malloc), or NULL when its variant did not win: faster, and surviving. */
static char *bank_of(struct svc *s, const struct store_experiment *e)
{
    json_t *v = h_doc_or_null(e->verdict);
    char *text = NULL, model[API_ID_MAX], month[8] = "";
    const char *verdict = json_string_value(json_object_get(v, "verdict"));
    if (!json_is_object(v) || !verdict || strcmp(verdict, "faster") ||
        !json_is_true(json_object_get(v, "survives"))) {
        json_decref(v);
        return NULL;
    }
    double base_ms = json_number_value(json_object_get(json_object_get(v, "center_ms"), "a")),
           saving_ms = -json_number_value(json_object_get(v, "difference_ms"));
    json_decref(v);
    struct api_job job;
    struct api_model m;
    struct api_job_cadence c;
    struct sc_error err;
    memset(&job, 0, sizeof job);
    memset(&m, 0, sizeof m);
    store_job_get(s->store, e->baseline, &job, &err); /* a job deleted since: no description */
    if (newest_ready(s, e->baseline, model) == 0)
        store_model_get(s->store, model, &m, &err);
    api_job_cadence_of(job.description, m.summary, base_ms, &c);
    api_model_release(&m);
    api_job_release(&job);
    double hours = api_job_gpu_hours_per_day(&c, saving_ms);
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(month, sizeof month, "%Y-%m", &tm);
    json_t *bank = json_pack("{s:f, s:o, s:o, s:s, s:o}", "saving_ms_per_step", saving_ms, "gpu_hours_per_day",
                             hours >= 0 ? json_real(hours) : json_null(), "usd_per_day",
                             hours >= 0 && c.gpu_hour_usd >= 0 ? json_real(hours * c.gpu_hour_usd) : json_null(),
                             "month", month, "cadence", api_job_cadence_json(&c));
    if (bank && hours < 0)
        json_object_set_new(bank, "note",
                            json_string("the baseline job has no world size or steps a day (PUT /v1/jobs/{job}: "
                                        "steps_per_day or runtime_hours, config): saved per step only"));
    text = bank ? json_dumps(bank, JSON_COMPACT) : NULL;
    json_decref(bank);
    return text;
}

void h_experiment_close(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct store_experiment e;
    struct sc_error err;
    const char *why;
    char problem[256], *bank;
    int deferred; /* never: settled above */
    if (store_experiment_get(s->store, q->params.id, &e, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (e.closed) {
        api_fail(r, API_E_CONFLICT, "experiment '%s' is closed already", e.id);
        store_experiment_release(&e);
        return;
    }
    if (settle(s, &e, &why, problem)) {
        store_experiment_release(&e);
        return;
    }
    bank = bank_of(s, &e);
    if (store_experiment_close(s->store, e.id, bank, &err)) {
        api_fail_status(r, &err, API_E_CONFLICT);
    } else {
        store_experiment_release(&e);
        if (store_experiment_get(s->store, q->params.id, &e, &err) == SC_OK)
            api_reply_json(r, 200, experiment_json(s, &e, &deferred));
        else
            api_fail_status(r, &err, API_E_INTERNAL);
    }
    free(bank);
    store_experiment_release(&e);
}

json_t *h_experiments_bank_json(struct svc *s)
{
    struct store_experiment *v = NULL;
    struct sc_error err;
    size_t n = 0;
    json_t *groups = json_object(), *list = json_array();
    if (!groups || !list || store_experiment_list(s->store, NULL, NULL, &v, &n, NULL, &err)) {
        json_decref(groups);
        json_decref(list);
        return json_null();
    }
    for (size_t i = 0; i < n; i++) {
        json_t *bank = v[i].bank ? json_loads(v[i].bank, 0, NULL) : NULL, *g;
        if (!json_is_object(bank)) {
            json_decref(bank);
            continue;
        }
        const char *team = json_string_value(json_object_get(json_object_get(bank, "cadence"), "team")),
                   *month = json_string_value(json_object_get(bank, "month"));
        const json_t *hours = json_object_get(bank, "gpu_hours_per_day"), *usd = json_object_get(bank, "usd_per_day");
        char key[300];
        snprintf(key, sizeof key, "%s\n%s", team ? team : "", month ? month : "");
        if (!(g = json_object_get(groups, key))) {
            g = json_pack("{s:o, s:s, s:i, s:f, s:f, s:i}", "team", team ? json_string(team) : json_null(), "month",
                          month ? month : "", "experiments", 0, "gpu_hours_per_day", 0.0, "usd_per_day", 0.0,
                          "per_step_only", 0);
            if (!g || json_object_set_new(groups, key, g) || json_array_append(list, g)) {
                json_decref(bank);
                break;
            }
        }
        json_object_set_new(g, "experiments", json_integer(json_integer_value(json_object_get(g, "experiments")) + 1));
        if (json_is_number(hours))
            json_object_set_new(g, "gpu_hours_per_day", json_real(json_number_value(json_object_get(
                                                                      g, "gpu_hours_per_day")) +
                                                                  json_number_value(hours)));
        else
            json_object_set_new(g, "per_step_only",
                                json_integer(json_integer_value(json_object_get(g, "per_step_only")) + 1));
        if (json_is_number(usd))
            json_object_set_new(g, "usd_per_day", json_real(json_number_value(json_object_get(g, "usd_per_day")) +
                                                            json_number_value(usd)));
        json_decref(bank);
    }
    store_experiments_free(v, n);
    json_decref(groups);
    return json_pack("{s:o, s:s}", "by_team_and_month", list,
                     "method", "closed winning experiments' savings (POST /v1/experiments/{id}/close), summed per "
                               "baseline team and month closed; per_step_only counts those whose job gives no "
                               "world size or steps a day");
}
