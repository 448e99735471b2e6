/* tests/integration/test_svc_ab.c: POST /v1/ab and `stepcast --server URL
 * ab --model A --other B` against a real stepcastd: two gentrace runs, the
 * second with its GPU work 1.3x longer, built into models; the server's
 * document is the local `stepcast ab --json`'s, the verdict `slower`; bad
 * requests are refused with what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

/* A gentrace run of two ranks and eight steps in <tmp>/name; its rank
 * files into files[0..2). */
static void gen_run(const char *name, const char *seed, const char *gpu_scale, char dir[4096], char files[2][4200])
{
    const char *args[] = {"--ranks", "2", "--steps", "8", "--seed", seed, "--gpu-scale", gpu_scale, NULL};
    svc_gentrace(name, args, dir);
    for (int r = 0; r < 2; r++)
        snprintf(files[r], 4200, "%s/rank%d.json.gz", dir, r);
}

static json_t *run_json(char **argv)
{
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    json_t *doc = json_loads(out ? out : "", 0, NULL);
    free(out);
    return doc;
}

TEST(svc_ab_over_built_models)
{
    struct svc_daemon d;
    struct svc_resp r;
    char da[4096], db[4096], fa[2][4200], fb[2][4200], body[512], stepcast[4096];
    gen_run("ab_a", "1", "1", da, fa);
    gen_run("ab_b", "2", "1.3", db, fb);
    snprintf(stepcast, sizeof stepcast, "%s", th_build_path("stepcast"));
    svc_start(&d, NULL, NULL, NULL);
    const char *pa[] = {fa[0], fa[1]}, *pb[] = {fb[0], fb[1]};
    char *ma = svc_model_of_files(&d, "base", 0, pa, 2), *mb = svc_model_of_files(&d, "variant", 0, pb, 2);

    /* the server's document is the local one */
    snprintf(body, sizeof body, "{\"a\":\"%s\",\"b\":\"%s\",\"seed\":7}", ma, mb);
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/ab", body, &r), 200);
    json_t *http = json_loads(r.body ? r.body : "", 0, NULL);
    svc_resp_release(&r);
    char *local_argv[] = {stepcast, "ab", "--json", "--seed", "7", da, db, NULL};
    json_t *local = run_json(local_argv);
    REQUIRE(http && local);
    CHECK(json_equal(http, local));
    CHECK_STREQ(json_string_value(json_object_get(http, "verdict")), "slower");
    CHECK(json_number_value(json_array_get(json_object_get(http, "ci95_ms"), 0)) > 0);
    /* the samples compared: one a step, each run's center among them */
    for (const char *run = "a"; run; run = *run == 'a' ? "b" : NULL) {
        const json_t *v = json_object_get(json_object_get(http, "samples_ms"), run);
        double center = json_number_value(json_object_get(json_object_get(http, "center_ms"), run)), lo = 1e300,
               hi = 0;
        CHECK_EQ_INT((long long)json_array_size(v),
                     json_integer_value(json_object_get(json_object_get(http, "steps"), run)));
        for (size_t i = 0; i < json_array_size(v); i++) {
            double x = json_number_value(json_array_get(v, i));
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
        CHECK(lo > 0 && lo <= center && center <= hi);
    }
    json_decref(local);
    /* asked again: the same answer, from the memo */
    CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/ab", body, &r), 200);
    json_t *again = json_loads(r.body ? r.body : "", 0, NULL);
    CHECK(again && json_equal(http, again));
    json_decref(again);
    svc_resp_release(&r);

    /* the command line's remote form, with the options sent along */
    setenv("STEPCAST_TOKEN", SVC_ADMIN, 1);
    char *remote_argv[] = {stepcast, "--server", d.url, "ab", "--json", "--seed", "7", "--model", ma, "--other", mb,
                           NULL};
    json_t *remote = run_json(remote_argv);
    CHECK(remote && json_equal(http, remote));
    json_decref(remote);
    char *plain_argv[] = {stepcast, "--server", d.url, "ab", "--model", mb, "--other", ma, "--min-effect", "50", NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(plain_argv, &out, NULL), 0);
    CHECK_CONTAINS(out ? out : "", "verdict, B against A: no_change"); /* faster, by less than 50% */
    free(out);
    char *mixed_argv[] = {stepcast, "--server", d.url, "ab", "--model", ma, da, NULL};
    CHECK_EQ_INT(th_run(mixed_argv, NULL, NULL), 2);
    unsetenv("STEPCAST_TOKEN");
    json_decref(http);

    /* refused: what is wrong is said */
    static const struct {
        const char *body;
        long status;
        const char *says;
    } bad[] = {
        {"{\"a\":\"m-none\",\"b\":\"m-none\"}", 404, "m-none"},
        {"{\"b\":\"x\"}", 400, "'a' and 'b' must be model ids"},
        {"{\"a\":\"x\",\"b\":\"y\",\"refutations\":6}", 400, "'refutations'"},
        {"{\"a\":\"x\",\"b\":\"y\",\"min_effect_pct\":0}", 400, "'min_effect_pct'"},
        {"{\"a\":\"x\",\"b\":\"y\",\"seed\":-1}", 400, "'seed'"},
        {"{\"a\":\"x\",\"b\":\"y\",\"other\":\"z\"}", 400, "unknown field 'other'"},
        {"{\"a\":\"../x\",\"b\":\"y\"}", 400, "model ids"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_INT(svc_admin(&d, "POST", "/v1/ab", bad[i].body, &r), bad[i].status);
        CHECK_CONTAINS(r.body ? r.body : "", bad[i].says);
        svc_resp_release(&r);
    }
    free(ma);
    free(mb);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
