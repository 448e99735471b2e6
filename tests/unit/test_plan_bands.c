/* tests/unit/test_plan_bands.c: the error bands (estimator/plan/bands.h) and
 * the planner at a risk (plan.h): the compiled-in file parses, the reader
 * refuses what is not a bands file naming the field, quantiles
 * interpolate, a row beyond what was validated is marked with the reason,
 * a region the estimator is optimistic about sinks at risk 0.9 while the
 * pruned search still equals brute force, the top row is estimated again
 * at kernel detail, and the ledger's entries of a region take precedence
 * over the file's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ledger.h"
#include "api/plan_json.h"
#include "estimator/plan/bands.h"
#include "estimator/plan/plan.h"
#include "tests/check.h"
#include "common/banned.h"

/* One region of a bands file: every quantile `e`, or the spread given. */
#define REGION(gpu, model, sharding, q05, q10, q25, q50, q75, q90, q95, mfu, max_gpus)                          \
    "{\"gpu\":\"" gpu "\",\"model\":\"" model "\",\"sharding\":\"" sharding "\",\"rows\":100,"                    \
    "\"error\":{\"p05\":" #q05 ",\"p10\":" #q10 ",\"p25\":" #q25 ",\"p50\":" #q50 ",\"p75\":" #q75 ",\"p90\":" #q90 \
    ",\"p95\":" #q95 "},\"best_mfu\":{" mfu "},\"max_gpus\":" #max_gpus ",\"source\":\"test\"}"
#define BANDS(...) "{\"format\":\"stepcast-bands\",\"version\":1,\"regions\":[" __VA_ARGS__ "]}"

static void parse(const char *text, struct est_bands *b)
{
    struct sc_error err;
    int rc = plan_bands_parse(text, strlen(text), b, &err);
    if (rc)
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(rc == SC_OK);
}

TEST(plan_bands_builtin_file_parses)
{
    const struct est_bands *b = plan_bands_builtin();
    const struct est_band *a100 = plan_bands_find(b, "a100-sxm4-80gb", EST_MODEL_DENSE, EST_SHARDING_NONE);
    REQUIRE(a100);
    CHECK(a100->rows >= 1000); /* make validate's rows */
    CHECK_EQ_INT(a100->max_gpus, 8);
    CHECK(a100->best_mfu[HW_FP16] > 0.2 && a100->best_mfu[HW_FP16] < 1);
    CHECK(a100->error[0] < 0 && a100->error[EST_BAND_LEVELS - 1] > 0);
    for (int k = 1; k < EST_BAND_LEVELS; k++)
        CHECK(a100->error[k] >= a100->error[k - 1]);
    CHECK(plan_bands_find(b, "a100-sxm4-80gb", EST_MODEL_MOE, EST_SHARDING_NONE) == NULL);
    /* written again, it reads the same */
    char *text = plan_bands_text(b);
    struct est_bands again;
    REQUIRE(text);
    parse(text, &again);
    CHECK_EQ_INT(again.n, b->n);
    CHECK_NEAR(again.regions[0].error[3], b->regions[0].error[3], 1e-6);
    free(text);
    plan_bands_release(&again);
}

TEST(plan_bands_reader_refuses_naming_the_field)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"[]", "must be a JSON object"},
        {"{\"format\":\"x\",\"version\":1,\"regions\":[]}", "format:"},
        {"{\"format\":\"stepcast-bands\",\"version\":2,\"regions\":[]}", "version:"},
        {"{\"format\":\"stepcast-bands\",\"version\":1,\"regions\":[],\"extra\":1}", "extra: unknown key"},
        {BANDS(REGION("nosuch-gpu", "dense", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "", 8)), "regions[0].gpu:"},
        {BANDS(REGION("h100-sxm", "sparse", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "", 8)), "regions[0].model:"},
        {BANDS(REGION("h100-sxm", "dense", "zero9", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "", 8)), "regions[0].sharding:"},
        {BANDS(REGION("h100-sxm", "dense", "none", -0.1, -0.2, 0, 0, 0, 0.1, 0.1, "", 8)), "error.p10: below p05"},
        {BANDS(REGION("h100-sxm", "dense", "none", -1, -0.2, 0, 0, 0, 0.1, 0.1, "", 8)), "error.p05:"},
        {BANDS(REGION("h100-sxm", "dense", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "\"bf16\":1.5", 8)),
         "best_mfu.bf16:"},
        {BANDS(REGION("h100-sxm", "dense", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "\"int3\":0.5", 8)), "best_mfu"},
        {BANDS(REGION("h100-sxm", "dense", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "", 0)), "regions[0].max_gpus:"},
        {BANDS(REGION("h100-sxm", "dense", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "", 8) ","
                   REGION("h100-sxm", "dense", "none", -0.1, -0.1, 0, 0, 0, 0.1, 0.1, "", 8)),
         "regions[1]: h100-sxm, dense, none is given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct est_bands b;
        struct sc_error err;
        CHECK_EQ_INT(plan_bands_parse(bad[i].text, strlen(bad[i].text), &b, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i].says);
        CHECK(b.regions == NULL && b.n == 0);
    }
}

TEST(plan_bands_quantiles_and_risk)
{
    struct est_bands b;
    struct sc_error err;
    parse(BANDS(REGION("h100-sxm", "dense", "fsdp", -0.4, -0.3, -0.2, -0.1, 0, 0.1, 0.2, "\"bf16\":0.5", 64)), &b);
    const struct est_band *r = &b.regions[0];
    CHECK_NEAR(plan_band_error_at(r, 0.5), -0.1, 1e-12);
    CHECK_NEAR(plan_band_error_at(r, 0.175), -0.25, 1e-12); /* halfway from p10 to p25 */
    CHECK_NEAR(plan_band_error_at(r, 0.0), -0.4, 1e-12);    /* below p05: p05 */
    CHECK_NEAR(plan_band_error_at(r, 0.99), 0.2, 1e-12);
    /* optimistic at p10 by 30%: at risk 0.9 the measured time would be
     * est / 0.7; the median, est / 0.9 */
    CHECK_NEAR(plan_band_at_risk(r, 0.9, 70), 100, 1e-9);
    CHECK_NEAR(plan_band_at_risk(r, 0.5, 90), 100, 1e-9);
    CHECK_NEAR(plan_band_at_risk(NULL, 0.9, 70), 70, 0);
    CHECK(plan_band_at_risk(r, 1, 60) > plan_band_at_risk(r, 0.9, 60));
    CHECK_EQ_INT(plan_risk_check(0.49, "risk", &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "risk: ");
    CHECK_EQ_INT(plan_risk_check(1.01, "--risk", &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "--risk: ");
    CHECK_EQ_INT(plan_risk_check(NAN, "risk", &err), SC_EINVAL);
    CHECK_EQ_INT(plan_risk_check(0.5, "risk", &err), SC_OK);
    CHECK_EQ_INT(plan_risk_check(1, "risk", &err), SC_OK);
    /* the plan request's field */
    struct est_plan_request req;
    char *spec = NULL;
    static const char body[] = "{\"spec\":{},\"gpus\":8,\"risk\":0.3}";
    CHECK_EQ_INT(api_plan_request_decode(body, strlen(body), &req, &spec, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "risk: ");
    static const char body2[] = "{\"spec\":{},\"gpus\":8,\"risk\":0.9}";
    CHECK_EQ_INT(api_plan_request_decode(body2, strlen(body2), &req, &spec, &err), SC_OK);
    CHECK_NEAR(req.risk, 0.9, 0);
    free(spec);
    plan_bands_release(&b);
}

TEST(plan_bands_marks_extrapolated_rows)
{
    static const char spec[] = "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                               "\"parallel\":{\"global_batch\":32,\"dp\":16},\"cluster\":{\"gpu\":\"h100-sxm\"},"
                               "\"options\":{\"zero_stage\":1}}";
    struct est_bands b;
    struct est_spec s;
    struct est_estimate e = {0};
    struct est_band_view v;
    struct sc_error err;
    REQUIRE(spec_load(spec, strlen(spec), &s, NULL, &err) == SC_OK);
    parse(BANDS(REGION("h100-sxm", "dense", "distributed_optimizer", -0.2, -0.1, 0, 0, 0, 0.1, 0.2, "\"bf16\":0.4",
                       16)),
          &b);
    e.step_ms = 100;
    e.mfu = 0.45; /* under 0.4 / (1 - 0.2) = 0.5 */
    plan_band_view_of(&b, &s, &e, 0.9, &v);
    CHECK(v.band == &b.regions[0]);
    CHECK_EQ_INT(v.extrapolated, 0);
    CHECK_STREQ(v.reason, "");
    CHECK_NEAR(v.step_ms, 100 / 0.9, 1e-9);
    e.mfu = 0.55; /* above what the band accounts for */
    plan_band_view_of(&b, &s, &e, 0.9, &v);
    CHECK_EQ_INT(v.extrapolated, 1);
    CHECK_CONTAINS(v.reason, "MFU 55.0% above the best measured 40.0%");
    e.mfu = 0.3;
    s.parallel.dp = 32; /* more GPUs than validated */
    plan_band_view_of(&b, &s, &e, 0.9, &v);
    CHECK_EQ_INT(v.extrapolated, 1);
    CHECK_CONTAINS(v.reason, "32 GPUs, above the 16 of the largest validated row");
    s.parallel.dp = 16;
    s.options.dtype = HW_FP8; /* no validated row in the dtype */
    plan_band_view_of(&b, &s, &e, 0.9, &v);
    CHECK_CONTAINS(v.reason, "no validated row in fp8");
    s.options.dtype = HW_BF16;
    s.options.zero_stage = 3; /* another region: no band */
    plan_band_view_of(&b, &s, &e, 0.9, &v);
    CHECK(v.band == NULL);
    CHECK_EQ_INT(v.extrapolated, 1);
    CHECK_CONTAINS(v.reason, "no validated row of h100-sxm, dense, sharding fsdp");
    CHECK_NEAR(v.step_ms, 100, 0); /* ranked by the estimate */
    plan_bands_release(&b);
}

/* 16 H100, a small dense model: ZeRO-3 layouts are among the best. */
static const char dense[] = "{\"model\":{\"layers\":6,\"hidden\":1024,\"heads\":16,\"seq\":2048,\"vocab\":32000},"
                            "\"parallel\":{\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"}}";

struct fixture {
    struct est_plan_request req;
    struct est_plan_estimator est;
    struct est_plan_evaluator ev;
};

static void setup(struct fixture *f, size_t top)
{
    struct sc_error err;
    memset(f, 0, sizeof *f);
    REQUIRE(plan_parse_spec(dense, strlen(dense), &f->req, &err) == SC_OK);
    REQUIRE(spec_check_gpu(&f->req.spec, &f->est.hw, &err) == SC_OK);
    calib_costs_default(f->est.hw, &f->req.spec, &f->est.costs);
    plan_evaluator_estimate(&f->est, &f->ev);
    f->req.gpus = 16;
    f->req.top = top;
}

static size_t zero3_rows(const struct est_plan *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && i < p->n_rows; i++)
        k += p->rows[i].spec.options.zero_stage == 3;
    return k;
}

TEST(plan_risk_sinks_an_optimistic_region)
{
    /* the same band everywhere but FSDP, whose estimates have been 30%
     * optimistic at p10 */
    static const char text[] = BANDS(
        REGION("h100-sxm", "dense", "none", -0.05, 0, 0, 0, 0, 0.05, 0.1, "\"bf16\":0.6", 16) ","
        REGION("h100-sxm", "dense", "distributed_optimizer", -0.05, 0, 0, 0, 0, 0.05, 0.1, "\"bf16\":0.6", 16) ","
        REGION("h100-sxm", "dense", "fsdp", -0.35, -0.3, -0.2, 0, 0, 0.05, 0.1, "\"bf16\":0.6", 16));
    struct est_bands b;
    struct fixture f;
    struct est_plan plain, median, risky, brute;
    struct sc_error err;
    const size_t top = 20;
    parse(text, &b);
    setup(&f, top);
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &plain, &err) == SC_OK);
    f.req.bands = &b;
    f.req.risk = 0.5; /* every p50 is 0: the same order */
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &median, &err) == SC_OK);
    f.req.risk = 0.9;
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &risky, &err) == SC_OK);
    REQUIRE(plain.n_rows == top && median.n_rows == top && risky.n_rows == top);
    CHECK_EQ_INT(plain.banded, 0);
    CHECK_EQ_INT(risky.banded, 1);
    CHECK_NEAR(risky.risk, 0.9, 0);
    size_t before = zero3_rows(&plain, 5), after = zero3_rows(&risky, 5);
    CHECK(before >= 2);
    CHECK(after < before);
    for (size_t i = 0; i < top; i++) {
        CHECK(median.rows[i].estimate.step_ms == plain.rows[i].estimate.step_ms);
        const struct est_plan_row *r = &risky.rows[i];
        double factor = r->spec.options.zero_stage == 3 ? 1 / 0.7 : 1;
        CHECK_NEAR(r->objective, r->estimate.step_ms * factor, 1e-9 * r->objective);
        CHECK_NEAR(r->band.step_ms, r->objective, 1e-9 * r->objective);
        CHECK(r->band.band != NULL);
        CHECK(i == 0 || risky.rows[i - 1].objective <= r->objective);
    }
    /* pruning at a risk still finds the brute force's best */
    struct est_plan_evaluator all = f.ev;
    all.bound = NULL;
    all.refine = NULL;
    all.detail = NULL;
    REQUIRE(plan_run(&f.req, &all, NULL, NULL, &brute, &err) == SC_OK);
    CHECK_EQ_INT(brute.pruned, 0);
    CHECK(risky.pruned > 0);
    for (size_t i = 0; i < top; i++) {
        CHECK(brute.rows[i].objective == risky.rows[i].objective);
        CHECK(memcmp(&brute.rows[i].spec.options, &risky.rows[i].spec.options, sizeof brute.rows[i].spec.options) ==
              0);
    }
    /* a risk out of range names the field */
    f.req.risk = 0.4;
    struct est_plan none;
    CHECK_EQ_INT(plan_run(&f.req, &f.ev, NULL, NULL, &none, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "risk: ");
    plan_release(&plain);
    plan_release(&median);
    plan_release(&risky);
    plan_release(&brute);
    plan_bands_release(&b);
}

TEST(plan_top_row_at_kernel_detail)
{
    struct fixture f;
    struct est_plan p;
    struct sc_error err;
    struct est_bands none = {0};
    setup(&f, 3);
    f.req.bands = &none;
    REQUIRE(plan_run(&f.req, &f.ev, NULL, NULL, &p, &err) == SC_OK);
    REQUIRE(p.n_rows == 3);
    CHECK_EQ_INT(p.rows[0].has_kernel, 1);
    CHECK_EQ_INT(p.rows[1].has_kernel, 0);
    CHECK_EQ_INT(p.rows[2].has_kernel, 0);
    /* kernel detail keeps every kernel as a task; the step agrees (README:
     * the details agree within 1%) */
    CHECK(p.rows[0].kernel.tasks > p.rows[0].estimate.tasks);
    CHECK_NEAR(p.rows[0].kernel.step_ms, p.rows[0].estimate.step_ms, 0.01 * p.rows[0].estimate.step_ms);
    /* bands without the region: every row is extrapolated, ranked by its estimate */
    for (size_t i = 0; i < p.n_rows; i++) {
        CHECK_EQ_INT(p.rows[i].band.extrapolated, 1);
        CHECK(p.rows[i].objective == p.rows[i].estimate.step_ms);
    }
    json_t *doc = api_plan_json(&p), *row0 = json_array_get(json_object_get(doc, "top"), 0);
    REQUIRE(doc && row0);
    CHECK(json_is_object(json_object_get(row0, "kernel")));
    CHECK(json_is_null(json_object_get(row0, "band")));
    CHECK(json_is_true(json_object_get(row0, "extrapolated")));
    CHECK_CONTAINS(json_string_value(json_object_get(row0, "extrapolated_because")), "no validated row of h100-sxm");
    CHECK(json_object_get(json_array_get(json_object_get(doc, "top"), 1), "kernel") == NULL);
    json_decref(doc);
    plan_release(&p);
}

/* An estimate entry of the ledger: spec text, predicted and measured. */
static void entry(struct api_validation *v, const char *spec, double predicted, double measured, int in_sample)
{
    memset(v, 0, sizeof *v);
    v->kind = API_LEDGER_ESTIMATE;
    v->spec = strdup(spec);
    v->predicted_ms = predicted;
    v->measured_ms = measured;
    v->in_sample = in_sample;
}

TEST(plan_bands_ledger_takes_precedence)
{
    static const char h100[] = "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                               "\"parallel\":{\"global_batch\":64,\"dp\":64},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    static const char a100[] = "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":2048},"
                               "\"parallel\":{\"global_batch\":16,\"dp\":16},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
                               "\"options\":{\"dtype\":\"fp16\"}}";
    struct api_validation v[2 * LEDGER_BAND_MIN];
    struct est_bands out;
    struct sc_error err;
    size_t n = 0;
    for (int i = 0; i < LEDGER_BAND_MIN; i++) /* enough: 20% optimistic */
        entry(&v[n++], h100, 80, 100, 0);
    entry(&v[n++], h100, 100, 100, 1); /* in-sample: left out */
    for (int i = 0; i < LEDGER_BAND_MIN - 1; i++)
        entry(&v[n++], a100, 50, 100, 0); /* one too few: the file's band stays */
    REQUIRE(n <= sizeof v / sizeof v[0]);
    const struct est_bands *file = plan_bands_builtin();
    REQUIRE(ledger_bands_merge(v, n, file, &out, &err) == SC_OK);
    const struct est_band *h = plan_bands_find(&out, "h100-sxm", EST_MODEL_DENSE, EST_SHARDING_NONE);
    const struct est_band *a = plan_bands_find(&out, "a100-sxm4-80gb", EST_MODEL_DENSE, EST_SHARDING_NONE);
    REQUIRE(h && a);
    CHECK_EQ_INT(out.n, file->n + 1);
    CHECK_EQ_INT(h->rows, LEDGER_BAND_MIN);
    CHECK_NEAR(h->error[0], -0.2, 1e-12);
    CHECK_NEAR(h->error[EST_BAND_LEVELS - 1], -0.2, 1e-12);
    CHECK_EQ_INT(h->max_gpus, 64);
    CHECK(h->best_mfu[HW_BF16] > 0);
    CHECK_CONTAINS(h->source, "the ledger");
    const struct est_band *fa = plan_bands_find(file, "a100-sxm4-80gb", EST_MODEL_DENSE, EST_SHARDING_NONE);
    CHECK(memcmp(a, fa, sizeof *a) == 0);
    plan_bands_release(&out);
    for (size_t i = 0; i < n; i++)
        api_validation_release(&v[i]);
}
