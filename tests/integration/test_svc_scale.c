/* tests/integration/test_svc_scale.c: the daemon builds a many-rank job
 * from uploads the way `make bench` builds a 512-rank one (bench_scale.sh),
 * at a size `make check` can afford: ranks uploaded over HTTP, built on
 * all cores keeping only the traces' headers, and the replay the same as
 * the command line's on the same files, before and after a restart (the
 * model then comes back from its stored traces). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/job.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

#define RANKS 16

static json_t *replay_http(const struct svc_daemon *d, const char *model)
{
    char path[256];
    struct svc_resp r;
    snprintf(path, sizeof path, "/v1/models/%s/replay", model);
    CHECK_EQ_INT(svc_admin(d, "GET", path, NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    svc_resp_release(&r);
    CHECK(doc != NULL);
    return doc;
}

/* Upload dir's rank<r>.json files as ranks 0..n-1 of job. */
static void upload_n_ranks(const struct svc_daemon *d, const char *job, const char *dir, int n)
{
    for (int i = 0; i < n; i++) {
        char file[4300];
        snprintf(file, sizeof file, "%s/rank%d.json", dir, i);
        svc_put_trace_file(d, job, i, file);
    }
}

static void upload_ranks(const struct svc_daemon *d, const char *job, const char *dir)
{
    upload_n_ranks(d, job, dir, RANKS);
}

TEST(svc_builds_a_many_rank_job_from_uploads_as_the_cli_replays_it)
{
    static const char *const gen[] = {"--steps", "4", "--layers", "8", NULL};
    char dir[4096], path[4400];
    struct svc_daemon d;
    struct svc_resp r;
    th_gentrace_dir(RANKS, gen, dir, sizeof dir);
    svc_start(&d, NULL, NULL, NULL);
    upload_ranks(&d, "scale", dir);
    char *model = svc_build_model(&d, "scale", NULL);

    /* the summary counts every event although the model keeps none */
    struct model_job *job = th_gentrace_job(1, gen); /* one rank's count, for scale */
    long long events = 0;
    snprintf(path, sizeof path, "/v1/models/%s", model);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
    json_t *doc = json_loads(r.body, 0, NULL), *summary = json_object_get(doc, "summary");
    CHECK_EQ_INT(json_integer_value(json_object_get(summary, "n_ranks")), RANKS);
    events = json_integer_value(json_object_get(summary, "events"));
    CHECK(job && events > (long long)job->ranks[0]->n_events * (RANKS - 1));
    json_decref(doc);
    svc_resp_release(&r);
    model_job_free(job);

    char *stepcast = strdup(th_build_path("stepcast"));
    char *argv[] = {stepcast, "replay", "--json", dir, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    json_t *cli = json_loads(out ? out : "", 0, NULL);
    free(out);
    CHECK(cli != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(cli, "steps")), RANKS * 4);
    for (int pass = 0; pass < 2; pass++) { /* before and after a restart */
        json_t *http = replay_http(&d, model);
        if (!json_equal(http, cli))
            sc_check_fail(__FILE__, __LINE__, "pass %d: the daemon's replay differs from the CLI's", pass);
        json_decref(http);
        if (pass == 0) {
            CHECK_EQ_INT(svc_stop(&d), 0);
            svc_start(&d, d.data, NULL, NULL);
        }
    }
    json_decref(cli);
    free(stepcast);
    free(model);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The model's fold option (POST /v1/jobs/{job}/models {"fold":...}) as
 * the command line's --fold and --no-fold: the same replay, kept across a
 * restart; anything but a boolean is refused. */
TEST(svc_builds_folded_and_unfolded_as_the_cli_replays_them)
{
    static const char *const gen[] = {"--steps", "3", "--layers", "6", "--slow-rank", "3", "--slow-factor", "1.5",
                                      NULL};
    static const char *const bodies[2] = {"{\"fold\":false}", "{\"fold\":true}"};
    static const char *const flags[2] = {"--no-fold", "--fold"};
    char dir[4096], path[4400];
    struct svc_daemon d;
    struct svc_resp r;
    char *model[2];
    json_t *cli[2];
    th_gentrace_dir(RANKS, gen, dir, sizeof dir);
    svc_start(&d, NULL, NULL, NULL);
    upload_ranks(&d, "fold", dir);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/jobs/fold/models", "{\"fold\":\"yes\"}", &r), 400);
    CHECK_CONTAINS(r.body, "'fold' must be a boolean");
    svc_resp_release(&r);
    char *stepcast = strdup(th_build_path("stepcast"));
    for (int k = 0; k < 2; k++) {
        model[k] = svc_build_model(&d, "fold", bodies[k]);
        snprintf(path, sizeof path, "/v1/models/%s", model[k]);
        CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, &r), 200);
        json_t *doc = json_loads(r.body, 0, NULL);
        CHECK(json_is_boolean(json_object_get(json_object_get(doc, "options"), "fold")));
        CHECK_EQ_INT(json_is_true(json_object_get(json_object_get(doc, "options"), "fold")), k);
        json_decref(doc);
        svc_resp_release(&r);
        char *argv[] = {stepcast, "replay", "--json", (char *)flags[k], dir, NULL};
        char *out = NULL;
        CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
        cli[k] = json_loads(out ? out : "", 0, NULL);
        free(out);
        REQUIRE(cli[k] != NULL);
    }
    json_t *folding = json_object_get(cli[1], "folding");
    CHECK(json_object_get(cli[0], "folding") == NULL && folding != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(folding, "ranks")), RANKS);
    CHECK(json_integer_value(json_object_get(folding, "representatives")) < RANKS);
    for (int pass = 0; pass < 2; pass++) { /* before and after a restart */
        for (int k = 0; k < 2; k++) {
            json_t *http = replay_http(&d, model[k]);
            if (!json_equal(http, cli[k]))
                sc_check_fail(__FILE__, __LINE__, "pass %d: the daemon's %s replay differs from the CLI's", pass,
                              flags[k]);
            json_decref(http);
        }
        if (pass == 0) {
            CHECK_EQ_INT(svc_stop(&d), 0);
            svc_start(&d, d.data, NULL, NULL);
        }
    }
    for (int k = 0; k < 2; k++) {
        json_decref(cli[k]);
        free(model[k]);
    }
    free(stepcast);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* Model `id`'s build under the daemon's budget: its status once built,
 * and the MiB its refusal said it needed (-1: none said). */
static const char *built_or_refused(const struct svc_daemon *d, const char *id, double *mib)
{
    char path[256];
    struct svc_resp r;
    const char *status = svc_wait_model(d, id, 300);
    snprintf(path, sizeof path, "/v1/models/%s", id);
    CHECK_EQ_INT(svc_admin(d, "GET", path, NULL, &r), 200);
    const char *at = strstr(r.body, "needs an estimated ");
    *mib = at ? strtod(at + strlen("needs an estimated "), NULL) : -1;
    svc_resp_release(&r);
    return status;
}

/* A job of 128 alike ranks (over MODEL_FOLD_OVER) is built folded, and the
 * build's admission counts the ranks as folded (daemon/built.h): under a
 * budget between the folded and the unfolded predictions the folded
 * build is admitted and built, the same job unfolded is refused as never
 * fitting, and the daemon's peak resident memory stays within the folded
 * prediction. Before, every event counted, and the folded build was
 * refused too (bench_scale.sh passed --memory-budget 1T). */
TEST(svc_folded_build_admitted_by_its_representatives)
{
    enum { N = 128 };
    static const char *const gen[] = {"--steps", "8", "--layers", "48", NULL};
    static const char *const tiny[] = {"--memory-budget", "1M", NULL};
    char dir[4096], budget[64];
    struct svc_daemon d;
    double folded = -1, unfolded = -1;
    th_gentrace_dir(N, gen, dir, sizeof dir);
    svc_start(&d, NULL, tiny, NULL);
    upload_n_ranks(&d, "many", dir, N);
    /* the predictions, read from the refusals under a budget of 1 MiB */
    char *m0 = svc_request_model(&d, "many", NULL), *m1 = svc_request_model(&d, "many", "{\"fold\":false}");
    CHECK_STREQ(built_or_refused(&d, m0, &folded), "failed");
    CHECK_STREQ(built_or_refused(&d, m1, &unfolded), "failed");
    fprintf(stderr, "  %d ranks: predicted %.1f MiB folded, %.1f MiB unfolded\n", N, folded, unfolded);
    REQUIRE(folded > 0 && unfolded > folded * 1.25);
    CHECK_EQ_INT(svc_stop(&d), 0);
    snprintf(budget, sizeof budget, "%.0fM", (folded + unfolded) / 2);
    const char *const args[] = {"--memory-budget", budget, NULL};
    svc_start(&d, d.data, args, NULL);
    long long before = svc_peak_rss(&d);
    char *m2 = svc_request_model(&d, "many", NULL), *m3 = svc_request_model(&d, "many", "{\"fold\":false}");
    double mib = 0;
    CHECK_STREQ(built_or_refused(&d, m2, &mib), "ready");
    long long peak = svc_peak_rss(&d);
    CHECK_STREQ(built_or_refused(&d, m3, &mib), "failed");
    CHECK(mib > 0); /* refused as never fitting, not failed otherwise */
    fprintf(stderr, "  budget %s: folded built, peak RSS %.1f MiB (%.1f before); unfolded refused\n", budget,
            (double)peak / 1048576.0, (double)before / 1048576.0);
#if !defined(__SANITIZE_ADDRESS__)
    CHECK((double)(peak - before) / 1048576.0 <= folded);
#endif
    free(m0);
    free(m1);
    free(m2);
    free(m3);
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* A build of `job` on d: its peak resident memory (the daemon's VmHWM
 * during the build less before it) against the estimate its admission
 * counted (event=start estimate=N; daemon/built.h), printed; the
 * estimate. */
static double build_growth(struct svc_daemon *d, const char *job, const char *what, long long *growth)
{
    long long before = svc_peak_rss(d);
    char *id = svc_build_model(d, job, NULL);
    *growth = svc_peak_rss(d) - before;
    char *log = th_read_file(d->log, NULL), start[160];
    snprintf(start, sizeof start, "model=%s job=%s event=start", id ? id : "-", job);
    const char *at = log ? strstr(log, start) : NULL;
    at = at ? strstr(at, "estimate=") : NULL;
    double estimate = at ? strtod(at + strlen("estimate="), NULL) : 0;
    fprintf(stderr, "  %s: the build grew the daemon by %.1f MiB, estimated %.1f MiB\n", what,
            (double)*growth / 1048576.0, estimate / 1048576.0);
    free(log);
    free(id);
    return estimate;
}

/* An unfolded build's peak resident memory (the daemon's VmHWM during the
 * build less before it) within the estimate its admission counted
 * (event=start estimate=N; daemon/built.h): a gentrace job of 16 ranks and
 * 0.2 million events, large enough that the bytes per event, not the
 * fixed part, make the estimate. The notes a what-if reads of the traces,
 * taken at the build, had pushed it 8% past an estimate that left them
 * out, while the model's blob grew by doubling and was sealed into a
 * copy; the blob streamed to its file took it from 18.4 to 14.4 MiB. */
TEST(svc_unfolded_build_within_its_estimate)
{
    static const char *const gen[] = {"--steps", "48", NULL};
    char dir[4096], what[64];
    struct svc_daemon d;
    long long growth;
    th_gentrace_dir(RANKS, gen, dir, sizeof dir);
    svc_start(&d, NULL, NULL, NULL);
    upload_ranks(&d, "sized", dir);
    snprintf(what, sizeof what, "%d ranks", RANKS);
    double estimate = build_growth(&d, "sized", what, &growth);
    CHECK(estimate > 8 * 1048576.0); /* more than the fixed part */
#if !defined(__SANITIZE_ADDRESS__)
    CHECK((double)growth <= estimate);
#endif
    CHECK_EQ_INT(svc_stop(&d), 0);
}

/* The same on real traces of ../shared, each built by a daemon of its own:
 * HTA's control step (one rank of 34.8 MB, loading whole) and its NCCL
 * trace. */
TEST(svc_build_of_real_traces_within_its_estimate)
{
    static const struct {
        const char *path;
        int rank; /* its distributedInfo's */
    } traces[] = {{"HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz", 3},
                  {"HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz", 0}};
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        const char *path = th_shared_path(traces[i].path);
        char data[4200];
        struct svc_daemon d;
        long long growth;
        snprintf(data, sizeof data, "%s/real%zu", th_tmpdir(), i);
        svc_start(&d, data, NULL, NULL);
        svc_put_trace_file(&d, "real", traces[i].rank, path);
        double estimate = build_growth(&d, "real", strrchr(traces[i].path, '/') + 1, &growth);
        CHECK(estimate > 0);
#if !defined(__SANITIZE_ADDRESS__)
        CHECK((double)growth <= estimate);
#endif
        CHECK_EQ_INT(svc_stop(&d), 0);
    }
}
