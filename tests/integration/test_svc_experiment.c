/* tests/integration/test_svc_experiment.c: experiments against a real
 * stepcastd. One is created while its runs' models are still building,
 * and the daemon is killed (SIGKILL) before any verdict; restarted on the
 * same data directory it resumes the experiment from the store: the
 * verdict comes once the requeued builds are done, is kept with its
 * inputs' digest and not computed again on later reads, but is when an
 * input changes. Closed, the winning variant banks its saving at the
 * baseline job's world size (distributedInfo), steps a day and price. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/pg_server.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* A gentrace run of two ranks and eight steps in <tmp>/name. */
static void gen_run(const char *name, const char *seed, const char *gpu_scale, char dir[4096])
{
    const char *args[] = {"--ranks", "2", "--steps", "8", "--seed", seed, "--gpu-scale", gpu_scale, NULL};
    svc_gentrace(name, args, dir);
}

static void put_run(const struct svc_daemon *d, const char *job, const char *dir)
{
    char file[4200];
    for (int r = 0; r < 2; r++) {
        snprintf(file, sizeof file, "%s/rank%d.json.gz", dir, r);
        svc_put_trace_file(d, job, r, file);
    }
}

/* GET the experiment until it is no longer pending (a minute at most). */
static json_t *wait_decided(const struct svc_daemon *d, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    for (int i = 0; i < 600; i++) {
        struct svc_resp r;
        if (svc_admin(d, "GET", path, NULL, &r) != 200) {
            svc_resp_release(&r);
            return NULL;
        }
        json_t *doc = json_loads(r.body ? r.body : "", 0, NULL);
        svc_resp_release(&r);
        if (!doc || strcmp(json_string_value(json_object_get(doc, "state")), "pending"))
            return doc;
        json_decref(doc);
        usleep(100000);
    }
    return NULL;
}

static void experiment_survives_sigkill_and_banks(void)
{
    struct svc_daemon d;
    struct svc_resp r;
    char base[4096], var[4096], var2[4096], stepcast[4096], *out = NULL;
    gen_run("exp_base", "1", "1", base);
    gen_run("exp_var", "2", "0.7", var);
    gen_run("exp_var2", "3", "0.6", var2);
    snprintf(stepcast, sizeof stepcast, "%s", th_build_path("stepcast"));
    svc_start(&d, NULL, NULL, NULL);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/base",
                           "{\"steps_per_day\":10000,\"gpu_hour_usd\":2.5,\"tags\":{\"team\":\"infra\"}}", NULL),
                 201);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/base", "{\"runtime_hours\":25}", &r), 422);
    CHECK_CONTAINS(r.body ? r.body : "", "runtime_hours");
    svc_resp_release(&r);
    put_run(&d, "base", base);
    put_run(&d, "var", var);

    /* submitted while nothing is built: pending, then killed */
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *create[] = {stepcast,     "--server", d.url,    "experiment",   "create",     "--baseline", "base",
                      "--variant",  "var",      "--hypothesis", "fewer kernels", "--external-id", "sched-42", NULL};
    CHECK_EQ_INT(th_run(create, &out, NULL), 0);
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)strcspn(out ? out : "", "\n"), out ? out : "");
    free(out);
    CHECK(strncmp(id, "e-", 2) == 0);
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    CHECK_STREQ(svc_json_str(r.body, "state"), "pending");
    svc_resp_release(&r);
    free(svc_request_model(&d, "base", NULL));
    free(svc_request_model(&d, "var", NULL));
    svc_kill9(&d);

    /* restarted: the builds requeued, the experiment resumed */
    svc_start(&d, d.data, NULL, NULL);
    json_t *e = wait_decided(&d, id);
    REQUIRE(e != NULL);
    CHECK_STREQ(json_string_value(json_object_get(e, "state")), "decided");
    CHECK_STREQ(json_string_value(json_object_get(e, "external_id")), "sched-42");
    const json_t *v = json_object_get(e, "verdict");
    CHECK_STREQ(json_string_value(json_object_get(v, "verdict")), "faster");
    CHECK(json_array_size(json_object_get(v, "attribution")) > 0);
    json_int_t decided = json_integer_value(json_object_get(e, "decided_ns"));
    const char *inputs = json_string_value(json_object_get(e, "inputs"));
    CHECK(decided > 0 && inputs && strlen(inputs) == 64);
    /* read again, and listed by its external id: the same verdict, not recomputed */
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/experiments?external_id=sched-42", NULL, &r), 200);
    json_t *list = json_loads(r.body ? r.body : "", 0, NULL);
    svc_resp_release(&r);
    json_t *again = json_array_get(json_object_get(list, "experiments"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(list, "experiments")), 1);
    CHECK(json_equal(again, e));
    json_decref(list);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/experiments?external_id=none", NULL, &r), 200);
    CHECK_CONTAINS(r.body ? r.body : "", "\"experiments\":[]");
    svc_resp_release(&r);

    /* an input changes (the variant's rank 1 and a new model): computed again */
    char file[4200];
    snprintf(file, sizeof file, "%s/rank1.json.gz", var2);
    struct svc_opts o = {.token = SVC_ADMIN, .file = file};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/var/ranks/1/trace?replace=true", &o, &r), 201);
    svc_resp_release(&r);
    free(svc_build_model(&d, "var", NULL));
    json_t *e2 = wait_decided(&d, id);
    REQUIRE(e2 != NULL);
    CHECK(json_integer_value(json_object_get(e2, "decided_ns")) > decided);
    CHECK(strcmp(json_string_value(json_object_get(e2, "inputs")), inputs) != 0);
    json_decref(e);

    /* closed: the saving banked at the baseline's cadence */
    char *close[] = {stepcast, "--server", d.url, "experiment", "close", "--json", id, NULL};
    CHECK_EQ_INT(th_run(close, &out, NULL), 0);
    json_t *closed = json_loads(out ? out : "", 0, NULL);
    free(out);
    REQUIRE(closed != NULL);
    CHECK_STREQ(json_string_value(json_object_get(closed, "state")), "closed");
    const json_t *bank = json_object_get(closed, "bank");
    double saving = -json_number_value(json_object_get(json_object_get(e2, "verdict"), "difference_ms"));
    CHECK(saving > 0);
    CHECK_NEAR(json_number_value(json_object_get(bank, "saving_ms_per_step")), saving, 1e-9);
    double hours = saving / 3.6e6 * 2 * 10000; /* world size 2 (distributedInfo), 10,000 steps a day */
    CHECK_NEAR(json_number_value(json_object_get(bank, "gpu_hours_per_day")), hours, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(bank, "usd_per_day")), hours * 2.5, 1e-9);
    CHECK_STREQ(json_string_value(json_object_get(json_object_get(bank, "cadence"), "team")), "infra");
    /* the ledger's bank: per team and month */
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations", NULL, &r), 200);
    json_t *ledger = json_loads(r.body ? r.body : "", 0, NULL);
    svc_resp_release(&r);
    const json_t *group = json_array_get(json_object_get(json_object_get(ledger, "bank"), "by_team_and_month"), 0);
    CHECK_STREQ(json_string_value(json_object_get(group, "team")), "infra");
    CHECK_STREQ(json_string_value(json_object_get(group, "month")), json_string_value(json_object_get(bank, "month")));
    CHECK_EQ_INT(json_integer_value(json_object_get(group, "experiments")), 1);
    CHECK_NEAR(json_number_value(json_object_get(group, "gpu_hours_per_day")), hours, 1e-9);
    json_decref(ledger);
    json_decref(closed);
    json_decref(e2);
    char *ledger_argv[] = {stepcast, "--server", d.url, "ledger", "list", NULL};
    CHECK_EQ_INT(th_run(ledger_argv, &out, NULL), 0);
    CHECK_CONTAINS(out ? out : "", "banked by team infra in ");
    free(out);
    char *show[] = {stepcast, "--server", d.url, "experiment", "show", id, NULL};
    CHECK_EQ_INT(th_run(show, &out, NULL), 0);
    CHECK_CONTAINS(out ? out : "", "GPU-hours a day (summed over ranks)");
    free(out);

    /* refused */
    char close_path[160];
    snprintf(close_path, sizeof close_path, "/v1/experiments/%s/close", id);
    CHECK_EQ_INT(svc_admin(&d, "POST", close_path, NULL, &r), 409);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/experiments/e-none", NULL, &r), 404);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/experiments", "{\"baseline\":\"base\"}", &r), 400);
    CHECK_CONTAINS(r.body ? r.body : "", "'baseline' and 'variant' must be job ids");
    svc_resp_release(&r);
    unsetenv("STEPCAST_TOKEN");
    CHECK_EQ_INT(svc_stop(&d), 0);
}

TEST(svc_experiment_survives_sigkill_and_banks)
{
    experiment_survives_sigkill_and_banks();
}

TEST(svc_pg_experiment_survives_sigkill_and_banks)
{
    pg_server_use();
    experiment_survives_sigkill_and_banks();
}
