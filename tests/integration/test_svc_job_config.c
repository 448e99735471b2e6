/* tests/integration/test_svc_job_config.c: `stepcast job config` against a
 * real stepcastd: a job's description set from a file (its hardware and
 * free-text description kept, or the latter replaced by --description), refused before it is sent when the file is wrong, a
 * what-if answered from it; and the sample job's shipped description
 * (data/sample-config.json) on the sample's traces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* build/stepcast --server URL job config ARGS...; stdout and stderr into
 * *out / *err (from malloc). */
static int job_config(const struct svc_daemon *d, char **out, char **err, const char *a1, const char *a2,
                      const char *a3, const char *a4)
{
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", th_build_path("stepcast"));
    char *argv[] = {bin, "job", "config", "--server", (char *)d->url, (char *)a1, (char *)a2, (char *)a3, (char *)a4,
                    NULL};
    return th_run(argv, out, err);
}

TEST(svc_job_config_sets_a_jobs_description)
{
    static const char *const ranks[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                        "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
    struct svc_daemon d;
    struct svc_resp r;
    char *out = NULL, *err = NULL, path[600];
    static const char good[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":8,\"zero_stage\":1,"
                               "\"sequence_parallel\":false,\"moe\":{\"experts\":4,\"top_k\":1}}";
    static const char bad[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"moe\":{\"top_k\":0}}";
    static const char two[] = "{\"tp\":1,\"pp\":1,\"dp\":2}";
    char good_path[4096], bad_path[4096], two_path[4096];
    snprintf(good_path, sizeof good_path, "%s", th_write_file("good.json", good, strlen(good)));
    snprintf(bad_path, sizeof bad_path, "%s", th_write_file("bad.json", bad, strlen(bad)));
    snprintf(two_path, sizeof two_path, "%s", th_write_file("two.json", two, strlen(two)));
    svc_start(&d, NULL, NULL, NULL);
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);

    /* a job's hardware and description stay; its config is the file's */
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/j", "{\"hardware\":\"a100\",\"description\":\"four ranks\"}", NULL),
                 201);
    CHECK_EQ_INT(job_config(&d, &out, &err, "--job", "j", good_path, NULL), 0);
    CHECK_CONTAINS(out, "job j: config {\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":8,\"zero_stage\":1,"
                        "\"sequence_parallel\":false,\"moe\":{\"experts\":4,\"top_k\":1}} (replaced)");
    free(out);
    free(err);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"config\":{\"dp\":4,\"layers\":8,\"moe\":{\"experts\":4,\"top_k\":1},\"pp\":1,"
                           "\"sequence_parallel\":false,\"tp\":1,\"zero_stage\":1}");
    CHECK_CONTAINS(r.body, "\"hardware\":\"a100\"");
    CHECK_CONTAINS(r.body, "\"description\":\"four ranks\"");
    svc_resp_release(&r);

    /* --description replaces the job's free text, the hardware stays */
    CHECK_EQ_INT(job_config(&d, NULL, NULL, "--job", "j", "--description=<b>synthetic</b> ranks", good_path), 0);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"description\":\"<b>synthetic</b> ranks\"");
    CHECK_CONTAINS(r.body, "\"hardware\":\"a100\"");
    svc_resp_release(&r);

    /* a job that does not exist yet is made; --json prints the job */
    CHECK_EQ_INT(job_config(&d, &out, NULL, "--job", "new", "--json", good_path), 0);
    CHECK_CONTAINS(out, "\"id\": \"new\"");
    free(out);

    /* a wrong file is refused naming the key, and nothing is sent */
    CHECK_EQ_INT(job_config(&d, NULL, &err, "--job", "j", bad_path, NULL), 2);
    CHECK_CONTAINS(err, "moe.top_k: 0 is out of range (1 to ");
    free(err);
    CHECK_EQ_INT(job_config(&d, NULL, &err, "--job", "j", NULL, NULL), 2);
    free(err);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/j", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"zero_stage\":1");
    svc_resp_release(&r);

    /* over HTTP a config's moe and mla are objects of integers */
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/x", "{\"config\":{\"tp\":1,\"moe\":{\"experts\":\"8\"}}}", &r), 400);
    CHECK_CONTAINS(r.body, "config.moe.experts");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/x", "{\"config\":{\"tp\":1,\"mla\":{\"kv_lora_rank\":[512]}}}", &r), 400);
    CHECK_CONTAINS(r.body, "config.mla.kv_lora_rank must be an integer");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/x",
                           "{\"config\":{\"tp\":1,\"pp\":1,\"dp\":8,\"mla\":{\"kv_lora_rank\":512,"
                           "\"q_lora_rank\":1536}}}",
                           &r),
                 201);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/jobs/x", NULL, &r), 200);
    CHECK_CONTAINS(r.body, "\"mla\":{\"kv_lora_rank\":512,\"q_lora_rank\":1536}");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "PUT", "/v1/jobs/x", "{\"config\":{\"tp\":1,\"gpus\":{\"a\":1}}}", &r), 400);
    CHECK_CONTAINS(r.body, "config.gpus must be a number");
    svc_resp_release(&r);

    /* the sample job with its shipped description: a what-if answers */
    char *model = svc_model_of_files(&d, "sample", 0, ranks, 4);
    snprintf(path, sizeof path, "/v1/models/%s/whatif", model);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":8}}", &r), 422);
    CHECK_CONTAINS(r.body, "the job has no config");
    svc_resp_release(&r);
    CHECK_EQ_INT(job_config(&d, NULL, NULL, "--job", "sample", "data/sample-config.json", NULL), 0);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":8,\"moe\":{\"experts\":0}}}", &r), 400);
    CHECK_CONTAINS(r.body, "set.moe.experts: 0 is out of range (1 to ");
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":8}}", &r), 200);
    CHECK_CONTAINS(r.body, "\"target\":{\"tp\":1,\"pp\":1,\"dp\":8,\"layers\":8");
    svc_resp_release(&r);
    /* a description the traces contradict is the job's error */
    CHECK_EQ_INT(job_config(&d, NULL, NULL, "--job", "sample", two_path, NULL), 0);
    CHECK_EQ_INT(svc_admin(&d, "POST", path, "{\"set\":{\"dp\":8}}", &r), 422);
    CHECK_CONTAINS(r.body, "world size");
    svc_resp_release(&r);
    free(model);
    unsetenv("STEPCAST_TOKEN");
    svc_stop(&d);
}
