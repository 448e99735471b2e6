/* tests/integration/test_svc_replay.c: the real traces through the
 * service: the 8 DLRM ranks and a gzip HTA trace uploaded over HTTP, built,
 * and their replay, critical path and timeline compared with what the
 * local command line computes from the same files; then again after a
 * restart, when the models come back from their stored traces. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* The document the local CLI prints for argv. */
static json_t *cli_json(char **argv)
{
    char *out = NULL, *err = NULL;
    int rc = th_run(argv, &out, &err);
    json_t *doc = rc == 0 ? json_loads(out, 0, NULL) : NULL;
    if (!doc)
        fprintf(stderr, "%s %s: exit %d: %s\n", argv[0], argv[1], rc, err ? err : "");
    free(out);
    free(err);
    return doc;
}


struct fixture {
    char dlrm_dir[4096];
    char hta[4096];
    char *files[8];
};

static void extract(struct fixture *f)
{
    char tar[4096]; /* th_shared_path() answers in one static buffer */
    snprintf(tar, sizeof tar, "%s", th_shared_path("param/et_replay/tests/inputs/dlrm_kineto.tar.gz"));
    snprintf(f->hta, sizeof f->hta, "%s",
             th_shared_path("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"));
    snprintf(f->dlrm_dir, sizeof f->dlrm_dir, "%s/dlrm", th_tmpdir());
    mkdir(f->dlrm_dir, 0755);
    char *argv[] = {"/bin/tar", "-xzf", tar, "-C", f->dlrm_dir, NULL};
    CHECK_EQ_INT(th_run(argv, NULL, NULL), 0);
    snprintf(f->dlrm_dir + strlen(f->dlrm_dir), sizeof f->dlrm_dir - strlen(f->dlrm_dir), "/dlrm_kineto");
    struct dirent **names;
    int n = scandir(f->dlrm_dir, &names, NULL, alphasort), k = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.' && k < 8) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", f->dlrm_dir, names[i]->d_name);
            f->files[k++] = strdup(p);
        }
        free(names[i]);
    }
    free(names);
    CHECK_EQ_INT(k, 8);
}

TEST(svc_replay_over_http_equals_cli)
{
    struct fixture f = {0};
    struct svc_daemon d;
    char path[256];
    char *stepcast = strdup(th_build_path("stepcast"));
    extract(&f);
    svc_start(&d, NULL, NULL, NULL);
    char *dlrm = svc_model_of_files(&d, "dlrm", 0, (const char *const *)f.files, 8);
    char *hta = svc_model_of_files(&d, "hta", 0, (const char *const[]){f.hta}, 1);

    json_t *fleet_before = NULL;
    for (int pass = 0; pass < 2; pass++) { /* before and after a restart */
        if (pass == 1) {
            /* the opportunities found before the restart were kept: the
             * fleet's ranking and a model's answer come without loading
             * any model (no cache miss), the same as before */
            json_t *again = svc_admin_json(&d, "/v1/opportunities");
            CHECK(fleet_before && again && json_equal(again, fleet_before));
            json_decref(again);
            snprintf(path, sizeof path, "/v1/models/%s/opportunities", dlrm);
            char *opp_kept[] = {stepcast, "opportunities", "--json", f.dlrm_dir, NULL};
            svc_check_same_json(svc_admin_json(&d, path), cli_json(opp_kept), "dlrm opportunities kept");
            struct svc_resp m;
            svc_admin(&d, "GET", "/metrics", NULL, &m);
            CHECK_CONTAINS(m.body, "stepcast_model_cache_misses_total{replica=\"" SVC_REPLICA "\"} 0\n");
            svc_resp_release(&m);
        }
        char *dlrm_argv[16] = {stepcast, "replay", "--json", f.dlrm_dir, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/replay", dlrm);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(dlrm_argv), "dlrm replay");
        char *hta_argv[] = {stepcast, "replay", "--json", f.hta, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/replay", hta);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(hta_argv), "hta replay");
        char *scaled[] = {stepcast, "replay", "--json", "--scale", "gpu=2", "--scale", "gpu@3=1.5",
                          f.dlrm_dir, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/replay?scale=gpu=2&scale=gpu%%403=1.5", dlrm);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(scaled), "dlrm replay scaled");
        char *kept[] = {stepcast, "replay", "--json", "--keep-unexplained", f.hta, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/replay?keep_unexplained=true", hta);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(kept), "hta replay keeping unexplained waits");
        /* one rank of two: its collectives kept for the untraced peer are
         * split (their sizes given) over HTTP as by the CLI */
        char *hta_comm[] = {stepcast, "replay", "--json", "--scale", "comm=0", f.hta, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/replay?scale=comm=0", hta);
        json_t *hc = svc_admin_json(&d, path), *used = json_array_get(json_object_get(hc, "models_used"), 0);
        CHECK_STREQ(json_string_value(json_object_get(used, "model")), "collective_model");
        CHECK(json_integer_value(json_object_get(used, "tasks")) > 0);
        svc_check_same_json(hc, cli_json(hta_comm), "hta replay, comm=0");
        char *hta_opp[] = {stepcast, "opportunities", "--json", f.hta, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/opportunities", hta);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(hta_opp), "hta opportunities");
        char *cp[] = {stepcast, "critical-path", "--json", f.dlrm_dir, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/critical-path", dlrm);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(cp), "dlrm critical path");
        char *opp[] = {stepcast, "opportunities", "--json", f.dlrm_dir, NULL};
        snprintf(path, sizeof path, "/v1/models/%s/opportunities", dlrm);
        svc_check_same_json(svc_admin_json(&d, path), cli_json(opp), "dlrm opportunities");
        json_t *fleet = svc_admin_json(&d, "/v1/opportunities?top=1"), *jobs = json_object_get(fleet, "jobs");
        json_t *all = svc_admin_json(&d, "/v1/opportunities"), *every = json_object_get(all, "jobs");
        if (pass == 0)
            fleet_before = json_incref(all);
        CHECK_EQ_INT(json_array_size(jobs), 1);
        CHECK_EQ_INT(json_array_size(every), 2); /* both models, best first */
        CHECK(json_equal(json_array_get(jobs, 0), json_array_get(every, 0)));
        CHECK(json_number_value(json_object_get(json_array_get(every, 0), "gpu_ms_per_step")) >=
              json_number_value(json_object_get(json_array_get(every, 1), "gpu_ms_per_step")));
        json_decref(fleet);
        json_decref(all);
        char *diff[] = {stepcast, "diff", "--json", f.hta, f.dlrm_dir, NULL}, body[128];
        struct svc_resp dr;
        snprintf(path, sizeof path, "/v1/models/%s/diff", hta);
        snprintf(body, sizeof body, "{\"other\":\"%s\"}", dlrm);
        CHECK_EQ_INT(svc_admin(&d, "POST", path, body, &dr), 200);
        svc_check_same_json(json_loads(dr.body, 0, NULL), cli_json(diff), "hta against dlrm diff");
        svc_resp_release(&dr);
        snprintf(path, sizeof path, "/v1/models/%s/timeline?rank=3", dlrm);
        json_t *tl = svc_admin_json(&d, path);
        CHECK(json_array_size(json_object_get(tl, "traceEvents")) > 1000);
        json_decref(tl);
        if (pass == 1)
            break;
        CHECK_EQ_INT(svc_stop(&d), 0);
        svc_start(&d, d.data, NULL, NULL);
    }
    struct svc_resp r;
    snprintf(path, sizeof path, "/v1/models/%s/timeline?rank=99", dlrm);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 404);
    svc_resp_release(&r);
    snprintf(path, sizeof path, "/v1/models/%s/timeline", dlrm);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 400);
    snprintf(path, sizeof path, "/v1/models/%s/replay?scale=disk=2", dlrm);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 400);
    CHECK_STREQ(svc_error_code(&r), "bad_request");
    svc_resp_release(&r);
    snprintf(path, sizeof path, "/v1/models/%s/replay?scale=gpu%%4099=2", dlrm);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 400);
    svc_resp_release(&r);
    snprintf(path, sizeof path, "/v1/models/%s/diff", dlrm);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"other\":\"m-nosuchmodel\"}", &r), 404);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"other\":\"../x\"}", &r), 400);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"another\":1}", &r), 400);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/opportunities?top=0", NULL, &r), 400);
    svc_resp_release(&r);
    snprintf(path, sizeof path, "/v1/models/%s/replay?keep_unexplained=maybe", dlrm);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 400);
    CHECK_CONTAINS(r.body, "keep_unexplained");
    svc_resp_release(&r);
    /* repeated queries come from the model's memo; the metrics count both */
    snprintf(path, sizeof path, "/v1/models/%s/replay", dlrm);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 200);
    svc_admin(&d, "GET", "/metrics", NULL, &r);
    CHECK_CONTAINS(r.body, "stepcast_query_memo_total{replica=\"" SVC_REPLICA "\",result=\"hit\"} ");
    CHECK(!strstr(r.body, "stepcast_query_memo_total{replica=\"" SVC_REPLICA "\",result=\"hit\"} 0\n"));
    CHECK(!strstr(r.body, "stepcast_model_cache_hits_total{replica=\"" SVC_REPLICA "\"} 0\n"));
    svc_resp_release(&r);
    json_decref(fleet_before);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    for (int i = 0; i < 8; i++)
        free(f.files[i]);
    free(dlrm);
    free(hta);
    free(stepcast);
}

TEST(svc_build_options_and_not_ready)
{
    struct svc_daemon d;
    struct svc_resp r;
    char path[256];
    const char *linear = th_shared_path("param/et_replay/tests/inputs/linear_kineto.json.gz");
    svc_start(&d, NULL, NULL, NULL);
    svc_put_trace_file(&d, "linear", 0, linear);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/linear/models", "{\"steps\":\"9-2\"}", &r), 400);
    svc_resp_release(&r);
    char *id = svc_request_model(&d, "linear", "{\"step_marker\":\"Optimizer.step\",\"steps\":\"3-5\"}");
    snprintf(path, sizeof path, "/v1/models/%s/replay", id);
    svc_admin(&d, "GET", path, NULL, &r); /* ready already, or not yet */
    CHECK(r.status == 200 || (r.status == 409 && !strcmp(svc_error_code(&r), "not_ready")));
    svc_resp_release(&r);
    CHECK_STREQ(svc_wait_model(&d, id, 120), "ready");
    json_t *doc = svc_admin_json(&d, path);
    json_t *steps = json_object_get(doc, "steps");
    CHECK(json_array_size(steps) >= 1 && json_array_size(steps) <= 3);
    json_decref(doc);
    char *stepcast = strdup(th_build_path("stepcast"));
    char *argv[] = {stepcast, "replay", "--json", "--step-marker", "Optimizer.step", "--steps", "3-5",
                    (char *)linear, NULL};
    svc_check_same_json(svc_admin_json(&d, path), cli_json(argv), "linear replay with marker and steps");
    free(stepcast);
    free(id);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
