/* daemon/h_estimate.c: estimation over HTTP (api/ops.def): estimates of
 * specs, the hardware profiles, and calibrations (named cluster profiles
 * kept in the catalog, made from nccl-tests outputs, GEMM microbenchmark
 * tables or a built model's traces).
 *
 * A spec's cluster.profile names a calibration here (not a file). An
 * estimate is memoised (s->answers) under a digest of the canonical spec,
 * the level of detail, the calibration's document hash, the stepcast
 * version and the ledger's changes since start (its band): a new
 * calibration under the same name, a new build or a new ledger entry never
 * serves a stale answer. Each estimate not memoised is admitted first under
 * the daemon's memory budget (admission.h) by the size of its graph,
 * predicted before it is built (synth_size): 413 when it could never
 * fit, 429 with Retry-After while other work holds the budget. */
#include "daemon/h_estimate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/estimate_json.h"
#include "api/hardware_json.h"
#include "api/json_reply.h"
#include "api/ledger.h"
#include "daemon/admission.h"
#include "daemon/builder.h"
#include "daemon/built.h"
#include "daemon/cache.h"
#include "daemon/digest.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "estimator/calibrate/calibrate.h"
#include "estimator/synth/estimate.h"
#include "estimator/spec/hf_config.h"
#include "estimator/request_resolve.h"
#include "estimator/plan/plan.h"
#include "model/graph.h"
#include "model/job.h"
#include "daemon/dispatch.h"
#include "daemon/h_models.h"
#include "daemon/h_shared.h"
#include "daemon/store.h"
#include "common/banned.h"

void h_spec_release(struct h_spec *h)
{
    free(h->canonical);
    h->canonical = NULL;
}

/* The catalog lookup of a spec's cluster.profile
 * (estimator/request_resolve.h): the calibration of that name. */
static int find_calibration(void *ctx, const char *name, struct est_profile_found *found, struct sc_error *err)
{
    struct svc *s = ctx;
    struct api_calibration c;
    int rc;
    if (!api_id_valid(name))
        return sc_error_set(err, SC_EINVAL, "cluster.profile: '%.64s' is not a calibration name", name);
    if ((rc = store_calibration_get(s->store, name, &c, err)))
        return rc == SC_ENOTFOUND ? sc_error_set(err, SC_ENOTFOUND, "cluster.profile: no calibration '%s' (GET "
                                                 "/v1/calibrations lists them)", name)
                                  : rc;
    found->len = strlen(c.document);
    if ((found->document = malloc(found->len + 1)))
        memcpy(found->document, c.document, found->len + 1);
    snprintf(found->label, sizeof found->label, "%s@%.12s", c.name, c.sha256);
    snprintf(found->sha256, sizeof found->sha256, "%s", c.sha256);
    api_calibration_release(&c);
    return found->document ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
}

int h_spec_load(struct svc *s, const char *text, size_t len, struct est_spec_given *given, struct h_spec *h,
                struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    struct est_profile_lookup catalog = {find_calibration, s};
    struct est_request req;
    struct sc_error err;
    int rc;
    memset(h, 0, sizeof *h);
    if ((rc = api_json_precheck(text, len, &lim, r)))
        return rc;
    if (est_request_resolve(text, len, given ? EST_REQUEST_TEMPLATE : 0, &catalog, &req, &err))
        return req.fault == EST_REQUEST_LOOKUP ? api_fail_status(r, &err, API_E_INTERNAL)
                                               : api_fail(r, API_E_INVALID_SPEC, "%s", err.msg);
    h->spec = req.spec;
    h->hw = req.hw;
    h->costs = req.costs;
    h->canonical = req.canonical; /* taken */
    req.canonical = NULL;
    snprintf(h->calibration, sizeof h->calibration, "%s", req.profile.label);
    snprintf(h->calib_sha, sizeof h->calib_sha, "%s", req.profile.sha256);
    if (given)
        *given = req.given;
    est_request_release(&req);
    return SC_OK;
}

int h_estimate_admitted(struct svc *s, const struct h_spec *h, enum est_detail d, struct est_estimate *e, int *busy,
                        struct sc_error *err)
{
    struct est_synth_size size;
    char what[160];
    int rc;
    *busy = 0;
    memset(e, 0, sizeof *e);
    if ((rc = synth_size(&h->spec, h->hw, &h->costs, d, &size, err)))
        return rc;
    uint64_t need = admission_bytes(size.bytes);
    snprintf(what, sizeof what, "the estimate (%s detail, %lld tasks)", synth_detail_name(d), (long long)size.tasks);
    switch (admission_try(s->admission, need, what, err)) {
    case ADMISSION_OK: break;
    case ADMISSION_BUSY: *busy = 1; return SC_ELIMIT;
    case ADMISSION_NEVER: return SC_ELIMIT;
    }
    rc = synth_estimate(&h->spec, h->hw, &h->costs, d, e, err);
    admission_release(s->admission, need);
    return rc;
}

int h_estimate_fail(int busy, const struct sc_error *err, struct api_reply *r)
{
    if (busy)
        return api_fail(r, API_E_BUSY, "%s", err->msg);
    return api_fail_status(r, err, API_E_UNPROCESSABLE);
}

/* A memoised answer: one block, freed with free(). */
struct answer {
    size_t len;
    char body[];
};

struct estimate_ctx {
    struct svc *s;
    const struct h_spec *h;
    enum est_detail detail;
    int busy; /* refused for now: the memory budget is taken */
};

/* cache_load_fn: the estimate, rendered. */
static int load_estimate(void *ctx, const char *key, void **value, size_t *bytes, struct sc_error *err)
{
    struct estimate_ctx *c = ctx;
    struct est_estimate e;
    struct ledger_band band;
    size_t len;
    int rc;
    (void)key;
    if ((rc = h_estimate_admitted(c->s, c->h, c->detail, &e, &c->busy, err)))
        return rc;
    h_ledger_band(c->s, API_LEDGER_ESTIMATE, &band);
    char *text = api_estimate_text(&e, &band, &len);
    synth_estimate_release(&e);
    struct answer *a = text ? malloc(sizeof *a + len + 1) : NULL;
    if (a) {
        a->len = len;
        memcpy(a->body, text, len + 1);
    }
    free(text);
    if (!a)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    *value = a;
    *bytes = sizeof *a + len + 1;
    return SC_OK;
}

/* The memo's key: what the answer depends on, hashed. */
static int estimate_key(struct svc *s, const struct h_spec *h, enum est_detail d, char key[DIGEST_HEX_LEN + 1],
                        struct sc_error *err)
{
    char head[256];
    struct digest g;
    int n = snprintf(head, sizeof head, "%s|%s|%s|%ld|", STEPCAST_VERSION, h->calib_sha, synth_detail_name(d),
                     (long)atomic_load(&s->ledger_changes));
    int rc = digest_init(&g, err);
    if (!rc && !(rc = digest_update(&g, head, (size_t)n, err)) &&
        !(rc = digest_update(&g, h->canonical, strlen(h->canonical), err)))
        rc = digest_final(&g, key, err);
    digest_release(&g);
    return rc;
}

void h_estimate(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *detail = api_query_str(&q->query, "detail");
    enum est_detail d = EST_DETAIL_STAGE;
    struct estimate_ctx ctx;
    struct cache_entry *e;
    struct sc_error err;
    struct h_spec h;
    char key[DIGEST_HEX_LEN + 1];
    int hit = 0, rc;

    if (detail && synth_detail_parse(detail, &d, &err)) {
        api_fail(r, API_E_BAD_REQUEST, "detail: %s", err.msg);
        return;
    }
    if (h_spec_load(s, q->body, q->body_len, NULL, &h, r)) {
        h_spec_release(&h);
        return;
    }
    ctx = (struct estimate_ctx){s, &h, d, 0};
    if ((rc = estimate_key(s, &h, d, key, &err)) == SC_OK &&
        (rc = cache_get(s->answers, key, NULL, NULL, &e, &hit, &err)) == SC_ENOTFOUND) {
        if (svc_defer()) { /* not memoised: estimated on a worker */
            h_spec_release(&h);
            return;
        }
        rc = cache_get(s->answers, key, load_estimate, &ctx, &e, &hit, &err);
    }
    if (rc) {
        h_estimate_fail(ctx.busy, &err, r);
    } else {
        const struct answer *a = cache_value(e);
        char *body = malloc(a->len + 1);
        if (body) {
            memcpy(body, a->body, a->len + 1);
            api_reply_take(r, 200, "application/json", body, a->len);
        } else {
            api_fail(r, API_E_UNAVAILABLE, "out of memory");
        }
        cache_release(s->answers, e);
        metrics_memo(s->metrics, hit);
    }
    h_spec_release(&h);
}

void h_hardware(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    (void)s;
    if (q->op == API_OP_HARDWARE_GET)
        api_reply_hardware(r, q->params.id);
    else
        api_reply_hardware_list(r);
}

/* A spec's model from a Hugging Face config.json: {"model":{...},
 * "seq_from": the config field the sequence length came from, or null
 * when ?seq gave it}. */
void h_spec_from_hf(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct api_body_limits lim = h_body_limits(s);
    const char *seq_from = NULL;
    struct est_model model;
    struct sc_error err;
    long long seq = api_query_int(&q->query, "seq"); /* 0: the config's */
    if (api_json_precheck(q->body, q->body_len, &lim, r))
        return;
    if (spec_model_from_hf(q->body, q->body_len, seq, &model, &seq_from, &err)) {
        api_fail(r, err.code == SC_ENOMEM ? API_E_UNAVAILABLE : err.code == SC_EPARSE ? API_E_BAD_REQUEST
                                                                                : API_E_UNPROCESSABLE,
                 "%s", err.msg);
        return;
    }
    char *text = spec_model_json(&model);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (doc && json_object_set_new(doc, "seq_from", seq ? json_null() : json_string(seq_from))) {
        json_decref(doc);
        doc = NULL;
    }
    api_reply_json(r, 200, doc);
}

/* Make a calibration: run `make` with a report stream in memory, store
 * the profile it made as calibration `name` and answer with it. */
typedef int (*calib_fn)(void *ctx, FILE *report, char **doc, struct sc_error *err);

static void make_calibration(struct svc *s, const char *name, const char *source, const char *model,
                             calib_fn make, void *ctx, struct api_reply *r)
{
    struct api_calibration c;
    struct cluster_profile prof;
    struct sc_error err;
    size_t report_len = 0;
    int created = 0, rc;
    FILE *report;
    memset(&c, 0, sizeof c);
    memset(&prof, 0, sizeof prof);
    cost_kernel_params_default(&prof.kernel); /* what the document leaves out */
    if (!(report = open_memstream(&c.report, &report_len))) {
        api_fail(r, API_E_UNAVAILABLE, "out of memory");
        return;
    }
    rc = make(ctx, report, &c.document, &err);
    fclose(report);
    if (rc) {
        api_fail(r, rc == SC_ENOMEM ? API_E_UNAVAILABLE : API_E_UNPROCESSABLE, "%s", err.msg);
    } else if ((rc = calib_cluster_profile_parse(c.document, strlen(c.document), &prof, &err)) ||
               (rc = digest_hex(c.document, strlen(c.document), c.sha256, &err))) {
        api_fail_status(r, &err, API_E_INTERNAL);
    } else {
        snprintf(c.name, sizeof c.name, "%s", name);
        snprintf(c.gpu, sizeof c.gpu, "%s", prof.gpu);
        snprintf(c.source, sizeof c.source, "%s", source);
        snprintf(c.model, sizeof c.model, "%s", model ? model : "");
        if ((rc = store_calibration_put(s->store, &c, &created, &err)) == SC_OK) {
            log_info("calibration", "name=%s gpu=%s source=%s sha256=%.12s event=%s", c.name, c.gpu, c.source,
                     c.sha256, created ? "created" : "replaced");
            api_reply_calibration(r, created ? 201 : 200, &c);
        } else {
            api_fail_status(r, &err, rc == SC_ENOSPC ? API_E_NO_SPACE : API_E_INTERNAL);
        }
    }
    api_calibration_release(&c);
}

struct nccl_ctx {
    const struct svc_request *q;
    const struct calib_opts *o;
};

/* The body: one nccl-tests output. */
static int calib_nccl_body(void *ctx, FILE *report, char **doc, struct sc_error *err)
{
    struct nccl_ctx *c = ctx;
    const char *text = c->q->body, *label = "nccl-tests output";
    size_t len = c->q->body_len;
    struct calib_files body = {&text, &len, &label, 1};
    return calib_files(&body, NULL, c->o, report, doc, err);
}

void h_calibration_nccl(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct calib_opts o = {.gpu = api_query_str(&q->query, "gpu"), .kind = MODEL_COLL_UNKNOWN,
                           .ranks = (int)api_query_int(&q->query, "ranks"),
                           .nodes = (int)api_query_int(&q->query, "nodes")};
    const char *name = api_query_str(&q->query, "name"), *kind = api_query_str(&q->query, "kind");
    if (kind)
        o.kind = cost_coll_kind_from_name(kind);
    if (!q->body_len) {
        api_fail(r, API_E_BAD_REQUEST, "the body is empty: send the output of one nccl-tests run");
        return;
    }
    struct nccl_ctx c = {q, &o};
    make_calibration(s, name, "nccl-tests", NULL, calib_nccl_body, &c, r);
}

/* The body: one GEMM microbenchmark table. */
static int calib_gemms_body(void *ctx, FILE *report, char **doc, struct sc_error *err)
{
    const struct svc_request *q = ctx;
    const char *text = q->body, *label = "GEMM table";
    size_t len = q->body_len;
    struct calib_files body = {&text, &len, &label, 1};
    struct calib_opts o = {.gpu = api_query_str(&q->query, "gpu"), .kind = MODEL_COLL_UNKNOWN};
    return calib_files(NULL, &body, &o, report, doc, err);
}

void h_calibration_gemms(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *name = api_query_str(&q->query, "name");
    if (!q->body_len) {
        api_fail(r, API_E_BAD_REQUEST, "the body is empty: send one GEMM microbenchmark table");
        return;
    }
    make_calibration(s, name, "gemm-bench", NULL, calib_gemms_body, q, r);
}

struct samples_ctx {
    const struct calib_acc *samples; /* the model's, as it keeps them once read */
    const char *gpu;
};

/* The calibration samples of e's built model (built_model_calib_samples):
 * read from its traces' blobs once, a trace at a time, on the model's
 * first calibration, admitted first by the size of that read (413, 429),
 * then kept and counted by the cache. On failure the reply in r and its
 * status (422 for traces that cannot be calibrated together). *out is
 * valid while e is held. */
static int model_samples(struct svc *s, struct cache_entry *e, const struct calib_acc **out, struct api_reply *r)
{
    struct built_model *m = cache_value(e);
    struct sc_error err;
    size_t added;
    uint64_t need = 0;
    if (!built_model_has_calib_samples(m)) {
        need = admission_bytes(built_model_calib_read_bytes(m));
        int rc = h_admit(s, need, "reading the model's traces for their samples", r);
        if (rc)
            return rc;
    }
    int rc = built_model_calib_samples(m, s->blobs, out, &added, &err);
    if (need)
        admission_release(s->admission, need);
    if (rc)
        return api_fail_status(r, &err, API_E_UNPROCESSABLE);
    if (added)
        cache_charge(s->cache, e, added);
    return SC_OK;
}

/* calib_fn: the model's samples fitted for the GPU asked. */
static int calib_samples(void *ctx, FILE *report, char **doc, struct sc_error *err)
{
    struct samples_ctx *c = ctx;
    return calib_acc_finish(c->samples, c->gpu, report, doc, err);
}

void h_model_calibration(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    const char *name = api_query_str(&q->query, "name");
    struct api_model m;
    struct cache_entry *e;
    const struct calib_acc *samples;
    struct sc_error err;
    int rc;
    if (svc_defer()) /* it reads the model's traces (once for the model) */
        return;
    if ((rc = store_model_get(s->store, q->params.id, &m, &err))) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (m.status != API_MODEL_READY) {
        api_fail(r, API_E_NOT_READY, "model '%s' is %s", q->params.id, api_model_status_name(m.status));
        api_model_release(&m);
        return;
    }
    api_model_release(&m);
    if (h_ready_model(s, q->params.id, &e, r))
        return;
    if (model_samples(s, e, &samples, r) == SC_OK) {
        struct samples_ctx c = {samples, api_query_str(&q->query, "gpu")};
        make_calibration(s, name, "traces", q->params.id, calib_samples, &c, r);
    }
    cache_release(s->cache, e);
}

void h_calibrations(struct svc *s, struct svc_request *q, struct api_reply *r)
{
    struct sc_error err;
    if (q->op == API_OP_CALIBRATION_GET) {
        struct api_calibration c;
        if (store_calibration_get(s->store, q->params.id, &c, &err))
            api_fail_status(r, &err, API_E_INTERNAL);
        else
            api_reply_calibration(r, 200, &c);
        api_calibration_release(&c);
        return;
    }
    struct api_list_meta m = {0};
    struct api_calibration *v;
    struct api_page pg;
    char next[API_PAGE_CURSOR_MAX];
    size_t n;
    int more;
    if (h_page(q, &pg, r))
        return;
    if (store_calibration_list(s->store, &pg, &v, &n, &more, &err)) {
        api_fail_status(r, &err, API_E_INTERNAL);
        return;
    }
    if (more) {
        api_page_cursor(0, v[n - 1].name, next);
        m.next_cursor = next;
    }
    api_reply_calibrations(r, v, n, &m);
    h_page_skipped("calibrations", &m);
    api_calibrations_free(v, n);
}
