/* tests/integration/test_svc_whatif.c: what-ifs as users run them: `stepcast
 * whatif` on a real trace (exit statuses and messages naming the field),
 * and POST /v1/models/{id}/whatif on the same trace uploaded to the daemon
 * with its job's config, equal to the command line's document (local and
 * remote), memoised, refused with the field named, and recorded in the
 * ledger. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

#define CONTROL "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz"

TEST(cli_whatif_documents_and_errors)
{
    char trace[4096];
    if (!th_shared_traces())
        SKIP("../shared/traces is absent");
    snprintf(trace, sizeof trace, "%s", th_shared_path(CONTROL));
    unsetenv("STEPCAST_SERVER"); /* here: the local command */
    static const char cfg[] = "{\"tp\":1,\"pp\":1,\"dp\":8}";
    char *cfg_path = strdup(th_write_file("whatif-control.json", cfg, strlen(cfg)));
    char *stepcast = strdup(th_build_path("stepcast"));
    char *argv[] = {stepcast, "whatif", "--config", cfg_path, "--set", "dp=2,gpu=v100-sxm2-16gb", "--json",
                    trace, NULL};
    char *out = th_run_expect(argv, 0, "\"from_models_ms\"", NULL);
    json_t *doc = json_loads(out ? out : "", 0, NULL);
    CHECK(json_is_array(json_object_get(doc, "steps")));
    CHECK_STREQ(json_string_value(json_object_get(json_object_get(doc, "target"), "gpu")), "v100-sxm2-16gb");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "target"), "dp")), 2);
    CHECK(json_is_null(json_object_get(doc, "memory_gb_per_gpu")) && json_is_null(json_object_get(doc, "fits")));
    CHECK(json_array_size(json_object_get(doc, "models_used")) >= 1);
    json_decref(doc);
    free(out);
    /* the text view says where the time comes from */
    char *text[] = {stepcast, "whatif", "--config", cfg_path, "--set", "gpu=h100-sxm", trace, NULL};
    free(th_run_expect(text, 0, "from measured durations", NULL));
    char *bad_set[] = {stepcast, "whatif", "--config", cfg_path, "--set", "dp=two", trace, NULL};
    free(th_run_expect(bad_set, 2, NULL, "set.dp"));
    char *no_cfg[] = {stepcast, "whatif", "--set", "dp=2", trace, NULL};
    free(th_run_expect(no_cfg, 2, NULL, "--config"));
    static const char wrong[] = "{\"tp\":1,\"pp\":1,\"dp\":4}";
    char *wrong_path = strdup(th_write_file("whatif-wrong.json", wrong, strlen(wrong)));
    char *contra[] = {stepcast, "whatif", "--config", wrong_path, trace, NULL};
    free(th_run_expect(contra, 2, NULL, "world size"));
    char *compare[] = {stepcast, "whatif", "--config", cfg_path, "--compare-synth", trace, NULL};
    free(th_run_expect(compare, 2, NULL, "lacks layers, hidden, heads or seq"));
    char *inspect[] = {stepcast, "inspect", "--config", cfg_path, trace, NULL};
    free(th_run_expect(inspect, 0, "data-parallel", NULL));
    /* the description's schedule, shown as given or defaulted */
    free(th_run_expect(inspect, 0, "schedule 1f1b, vpp 1", NULL));
    static const char vpp_bad[] = "{\"tp\":1,\"pp\":1,\"dp\":8,\"schedule\":\"interleaved\",\"vpp\":2}";
    char *vpp_path = strdup(th_write_file("whatif-vpp.json", vpp_bad, strlen(vpp_bad)));
    char *inspect_bad[] = {stepcast, "inspect", "--config", vpp_path, trace, NULL};
    free(th_run_expect(inspect_bad, 2, NULL, "vpp: 2 virtual stages need pp > 1"));
    char *inspect_json[] = {stepcast, "inspect", "--json", "--config", cfg_path, trace, NULL};
    out = th_run_expect(inspect_json, 0, NULL, NULL);
    doc = json_loads(out ? out : "", 0, NULL);
    json_t *pipe = json_object_get(json_object_get(doc, "structure"), "pipeline");
    CHECK_STREQ(json_string_value(json_object_get(pipe, "schedule")), "1f1b");
    CHECK_EQ_INT(json_integer_value(json_object_get(pipe, "vpp")), 1);
    json_decref(doc);
    free(out);
    free(vpp_path);
    free(wrong_path);
    free(cfg_path);
    free(stepcast);
}

TEST(svc_whatif_equals_cli_memoised_and_refused_with_the_field)
{
    struct svc_daemon d;
    struct svc_resp r;
    char trace[4096], path[256], body[256];
    if (!th_shared_traces())
        SKIP("../shared/traces is absent");
    snprintf(trace, sizeof trace, "%s", th_shared_path(CONTROL));
    svc_start(&d, NULL, NULL, NULL);
    char *model = svc_model_of_files(&d, "ctl", 3, (const char *const[]){trace}, 1);
    snprintf(path, sizeof path, "/v1/models/%s/whatif", model);

    /* no config yet: 422 saying what to give */
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":2}}", &r), 422);
    CHECK_CONTAINS(r.body, "config");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/ctl", "{\"config\":{\"tp\":1,\"pp\":1,\"dp\":8,\"zero\":1}}", NULL),
                 200);

    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":2,\"gpu\":\"v100-sxm2-16gb\"}}", &r), 200);
    json_t *http = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    /* the ledger holds no what-if yet: the band says how many it needs */
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(http, "band"), "needed")), 10);
    json_t *remote_http = json_deep_copy(http);
    json_object_del(http, "band");
    static const char cfg[] = "{\"tp\":1,\"pp\":1,\"dp\":8}";
    char *cfg_path = strdup(th_write_file("whatif-svc.json", cfg, strlen(cfg)));
    char *argv[] = {(char *)th_build_path("stepcast"), "whatif", "--config", cfg_path, "--set",
                    "dp=2,gpu=v100-sxm2-16gb", "--json", trace, NULL};
    char *out = th_run_expect(argv, 0, NULL, NULL);
    json_t *cli = json_loads(out ? out : "", 0, NULL);
    CHECK(http && cli && json_equal(http, cli));
    double step_ms = json_number_value(json_object_get(http, "step_ms"));
    json_decref(cli);
    free(out);
    free(cfg_path);

    /* the remote command line: the server's document, or its tables */
    setenv("STEPCAST_SERVER", d.url, 1);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *remote[] = {(char *)th_build_path("stepcast"), "whatif", "--model", model, "--set",
                      "dp=2,gpu=v100-sxm2-16gb", "--json", NULL};
    out = th_run_expect(remote, 0, NULL, NULL);
    cli = json_loads(out ? out : "", 0, NULL);
    CHECK(cli && json_equal(remote_http, cli)); /* the server's document, band and all */
    json_decref(cli);
    json_decref(remote_http);
    free(out);
    char *remote_text[] = {(char *)th_build_path("stepcast"), "whatif", "--model", model, "--set", "gpu=h100-sxm",
                           NULL};
    free(th_run_expect(remote_text, 0, "from measured durations", NULL));
    char *remote_bad[] = {(char *)th_build_path("stepcast"), "whatif", "--model", model, "--set", "pp=4", NULL};
    free(th_run_expect(remote_bad, 2, NULL, "set.pp"));
    unsetenv("STEPCAST_SERVER");
    unsetenv("STEPCAST_TOKEN");
    json_decref(http);

    /* asked again: from the memo */
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"gpu\":\"v100-sxm2-16gb\",\"dp\":2}}", NULL), 200);
    svc_admin(&d, "GET", "/metrics", NULL, &r);
    CHECK_CONTAINS(r.body, "stepcast_query_memo_total{replica=\"" SVC_REPLICA "\",result=\"hit\"} "); /* the metric is there */
    CHECK(!strstr(r.body, "stepcast_query_memo_total{replica=\"" SVC_REPLICA "\",result=\"hit\"} 0\n"));
    svc_resp_release(&r);

    /* refused, the field named */
    static const char *const bad[][2] = {
        {"{\"set\":{\"dp\":0}}", "set.dp"},          {"{\"set\":{\"gpu\":\"tpu\"}}", "set.gpu"},
        {"{\"set\":{\"tpp\":2}}", "set.tpp"},        {"{\"set\":{\"pp\":2}}", "set.pp"},
        {"{\"set\":{\"layers\":8}}", "set.layers"}, {"{\"sett\":{}}", "sett"},
        {"{\"set\":{\"vpp\":2}}", "set.vpp"},          {"{\"set\":{\"schedule\":\"gpipe\"}}", "set.schedule"},
        {"[]", "set"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(svc_admin(&d, "POST", path, bad[i][0], &r), 400);
        CHECK_CONTAINS(r.body, bad[i][1]);
        svc_resp_release(&r);
    }
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/models/m-nonesuch/whatif", "{\"set\":{}}", NULL), 404);

    /* the ledger records what-ifs with this prediction */
    snprintf(body, sizeof body,
             "{\"model\":\"%s\",\"set\":{\"dp\":2,\"gpu\":\"v100-sxm2-16gb\"},\"measured_step_ms\":114.69}", model);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/validations", body, &r), 201);
    CHECK_STREQ(svc_json_str(r.body, "kind"), "whatif");
    json_t *entry = json_loads(r.body, 0, NULL);
    CHECK_NEAR(json_number_value(json_object_get(entry, "predicted_step_ms")), step_ms, 1e-6);
    /* the change it priced is kept with it, in the answer and in the list */
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(entry, "set"), "dp")), 2);
    json_decref(entry);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations?kind=whatif", NULL, &r), 200);
    json_t *listed = json_loads(r.body, 0, NULL);
    json_t *first_set = json_object_get(json_array_get(json_object_get(listed, "entries"), 0), "set");
    CHECK_STREQ(json_string_value(json_object_get(first_set, "gpu")), "v100-sxm2-16gb");
    json_decref(listed);
    svc_resp_release(&r);
    /* ten out-of-sample what-ifs, measured at known ratios of the
     * prediction: what-ifs now carry the band of their 10th and 90th
     * percentiles (the memo is keyed on the ledger's changes) */
    static const double ratio[9] = {0.90, 1.05, 1.20, 0.95, 1.10, 1.30, 0.85, 1.15, 1.00};
    for (int k = 0; k < 9; k++) {
        snprintf(body, sizeof body,
                 "{\"model\":\"%s\",\"set\":{\"dp\":2,\"gpu\":\"v100-sxm2-16gb\"},\"measured_step_ms\":%.9f}",
                 model, step_ms * ratio[k]);
        CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/validations", body, NULL), 201);
    }
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":2,\"gpu\":\"v100-sxm2-16gb\"}}", &r), 200);
    json_t *banded = json_loads(r.body, 0, NULL), *band = json_object_get(banded, "band");
    svc_resp_release(&r);
    /* ratios, sorted with the first entry's (114.69 / step_ms): the band's
     * ends interpolate between the 1st and 2nd, and the 9th and 10th */
    double all[10], first = 114.69 / step_ms;
    all[0] = first;
    memcpy(all + 1, ratio, sizeof ratio);
    for (int i = 1; i < 10; i++)
        for (int j = i; j > 0 && all[j - 1] > all[j]; j--) {
            double t = all[j];
            all[j] = all[j - 1];
            all[j - 1] = t;
        }
    CHECK_EQ_INT(json_integer_value(json_object_get(band, "entries")), 10);
    CHECK_STREQ(json_string_value(json_object_get(band, "kind")), "whatif");
    CHECK_NEAR(json_number_value(json_object_get(band, "lo_ms")), step_ms * (all[0] + 0.9 * (all[1] - all[0])),
               step_ms * 1e-6);
    CHECK_NEAR(json_number_value(json_object_get(band, "hi_ms")), step_ms * (all[8] + 0.1 * (all[9] - all[8])),
               step_ms * 1e-6);
    json_decref(banded);
    CHECK_EQ_INT(svc_stop(&d), 0);
    free(model);
}
