/* tests/integration/test_svc_fleet.c: GET /v1/fleet and `stepcast fleet`
 * against a real stepcastd: four jobs of known world size (distributedInfo:
 * two of them traced on 2 of their 4 ranks) and steps a day rank in their
 * true order of wasted GPU-hours a day, whose figures follow the issue's
 * formula; a job without steps a day ranks after them, per step, saying
 * so; tags and the time window filter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

static void gen_run(const char *name, const char *ranks, const char *seed, char dir[4096])
{
    const char *args[] = {"--ranks", ranks, "--steps", "6", "--seed", seed, "--slow-rank", "1", "--slow-factor", "1.5",
                          NULL};
    svc_gentrace(name, args, dir);
}

/* Job `job` with its description, ranks 0 and 1 of the run in dir, built. */
static void job_of(const struct svc_daemon *d, const char *job, const char *description, const char *dir)
{
    char path[128], file[4200];
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    CHECK_EQ_INT(svc_admin(d, "PUT", path, description, NULL), 201);
    for (int r = 0; r < 2; r++) {
        snprintf(file, sizeof file, "%s/rank%d.json.gz", dir, r);
        svc_put_trace_file(d, job, r, file);
    }
    free(svc_build_model(d, job, NULL));
}

static json_t *fleet(const struct svc_daemon *d, const char *query)
{
    struct svc_resp r;
    char path[256];
    snprintf(path, sizeof path, "/v1/fleet%s", query);
    CHECK_EQ_INT(svc_admin(d, "GET", path, NULL, &r), 200);
    json_t *doc = json_loads(r.body ? r.body : "", 0, NULL);
    svc_resp_release(&r);
    return doc;
}

TEST(svc_fleet_ranks_jobs_by_wasted_gpu_hours)
{
    struct svc_daemon d;
    struct svc_resp r;
    char two[4096], four[4096];
    gen_run("fleet2", "2", "5", two);
    gen_run("fleet4", "4", "6", four); /* traced on ranks 0 and 1 only */
    svc_start(&d, NULL, NULL, NULL);
    /* true order: w4 x 4 x 1e5 > w2 x 2 x 1e5 > w4 x 4 x 1e4 > w2 x 2 x 5e3,
     * for any per-rank waste w4 between w2 / 2 and 5 w2 (j4: 90 s a day at
 * its step of about 18 ms) */
    job_of(&d, "j3", "{\"steps_per_day\":10000,\"gpu_hour_usd\":2,\"tags\":{\"team\":\"a\"}}", four);
    job_of(&d, "j1", "{\"steps_per_day\":100000,\"gpu_hour_usd\":2,\"tags\":{\"team\":\"a\"}}", four);
    job_of(&d, "j4", "{\"runtime_hours\":0.025,\"tags\":{\"team\":\"b\"}}", two); /* 90 s a day: ~5,000 steps */
    job_of(&d, "j2", "{\"steps_per_day\":100000,\"tags\":{\"team\":\"b\"}}", two);
    job_of(&d, "j5", "{\"tags\":{\"team\":\"b\"}}", two);

    json_t *doc = fleet(&d, "");
    REQUIRE(doc != NULL);
    const json_t *jobs = json_object_get(doc, "jobs");
    static const char *const order[] = {"j1", "j2", "j3", "j4", "j5"};
    CHECK_EQ_INT(json_array_size(jobs), 5);
    for (size_t i = 0; i < 5; i++) {
        const json_t *j = json_array_get(jobs, i);
        CHECK_STREQ(json_string_value(json_object_get(j, "job")), order[i]);
        CHECK_EQ_INT(json_integer_value(json_object_get(j, "rank")), (long long)i + 1);
    }
    for (size_t i = 0; i < 4; i++) { /* the formula, each figure labelled */
        const json_t *j = json_array_get(jobs, i);
        double waste = json_number_value(json_object_get(j, "waste_ms_per_step_per_rank")),
               world = (double)json_integer_value(json_object_get(j, "world_size")),
               steps = json_number_value(json_object_get(j, "steps_per_day"));
        CHECK(waste > 0);
        CHECK_EQ_INT((long long)world, i % 2 ? 2 : 4);
        CHECK_STREQ(json_string_value(json_object_get(j, "world_size_from")), "distributedInfo");
        CHECK_NEAR(json_number_value(json_object_get(j, "wasted_gpu_hours_per_day_summed")),
                   waste / 3.6e6 * world * steps, 1e-9);
        CHECK_STREQ(json_string_value(json_object_get(j, "ranked_by")), "wasted_gpu_hours_per_day_summed");
    }
    { /* the waste by kind: each resource's actionable savings alone, and its share */
        const json_t *j = json_array_get(jobs, 0), *kinds = json_object_get(j, "waste_by_kind"), *k, *o;
        char path[128];
        snprintf(path, sizeof path, "/v1/models/%s/opportunities", json_string_value(json_object_get(j, "model")));
        REQUIRE(svc_admin(&d, "GET", path, NULL, &r) == 200);
        json_t *opp = json_loads(r.body ? r.body : "", 0, NULL);
        svc_resp_release(&r);
        double shares = 0;
        size_t i, n;
        CHECK(json_array_size(kinds) >= 2);
        json_array_foreach(kinds, i, k) {
            const char *kind = json_string_value(json_object_get(k, "kind"));
            double alone = 0;
            json_array_foreach(json_object_get(opp, "opportunities"), n, o) {
                const char *change = json_string_value(json_object_get(o, "change"));
                double saving = json_number_value(json_object_get(o, "saving_ms"));
                if (!strcmp(json_string_value(json_object_get(o, "resource")), kind) && strcmp(change, "comm=0") &&
                    strcmp(change, "unexplained=0") && saving > 0)
                    alone += saving;
            }
            CHECK_NEAR(json_number_value(json_object_get(k, "alone_ms_per_step_per_rank")), alone, 1e-9);
            CHECK(strcmp(kind, "unexplained"));
            shares += json_number_value(json_object_get(k, "share"));
        }
        CHECK_NEAR(shares, 1, 1e-9);
        json_decref(opp);
    }
    const json_t *j2 = json_array_get(jobs, 1), *j1 = json_array_get(jobs, 0), *j4 = json_array_get(jobs, 3),
                 *j5 = json_array_get(jobs, 4);
    CHECK_STREQ(json_string_value(json_object_get(j4, "steps_per_day_from")), "runtime_hours");
    CHECK_NEAR(json_number_value(json_object_get(j4, "steps_per_day")),
               0.025 * 3.6e6 / json_number_value(json_object_get(j4, "step_ms_per_rank")), 1e-6);
    CHECK_NEAR(json_number_value(json_object_get(j1, "wasted_usd_per_day")),
               2 * json_number_value(json_object_get(j1, "wasted_gpu_hours_per_day_summed")), 1e-9);
    CHECK(json_is_null(json_object_get(j2, "wasted_usd_per_day")));
    CHECK_STREQ(json_string_value(json_object_get(j5, "ranked_by")), "wasted_gpu_ms_per_step_summed");
    CHECK(json_is_null(json_object_get(j5, "wasted_gpu_hours_per_day_summed")));
    CHECK_CONTAINS(json_string_value(json_object_get(j5, "note")), "ranked per step");
    CHECK(json_is_array(json_object_get(doc, "needs_tracing_of_more_ranks")));
    json_decref(doc);

    /* filters */
    doc = fleet(&d, "?tag=team:b&top=2");
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 2);
    CHECK_STREQ(json_string_value(json_object_get(json_array_get(json_object_get(doc, "jobs"), 0), "job")), "j2");
    CHECK_STREQ(json_string_value(json_object_get(json_array_get(json_object_get(doc, "jobs"), 1), "job")), "j4");
    json_decref(doc);
    doc = fleet(&d, "?until=2000-01-01");
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 0);
    json_decref(doc);
    doc = fleet(&d, "?since=2000-01-01");
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "jobs")), 5);
    json_decref(doc);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/fleet?since=yesterday", NULL, &r), 400);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/fleet?tag=team", NULL, &r), 400);
    svc_resp_release(&r);

    /* the command line */
    char bin[4096], *out = NULL;
    snprintf(bin, sizeof bin, "%s", th_build_path("stepcast"));
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *argv[] = {bin, "--server", d.url, "fleet", "--top", "3", NULL};
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    CHECK_CONTAINS(out ? out : "", "waste GPU-h/day (sum)");
    CHECK(out && strstr(out, "j1") && strstr(out, "j3") && !strstr(out, "j4"));
    free(out);
    unsetenv("STEPCAST_TOKEN");
    CHECK_EQ_INT(svc_stop(&d), 0);
}
