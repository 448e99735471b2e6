/* tests/golden/test_golden_ab.c: `stepcast ab` on HTA's control and test
 * runs (../shared/traces/HolisticTraceAnalysis/tests/data/trace_diff): the
 * test run is slower, its interval above zero, and the verdict survives;
 * each run against itself reads neither faster nor slower; diff's parts
 * come with their intervals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static json_t *ab(const char *a, const char *b)
{
    char pa[4096], pb[4096];
    snprintf(pa, sizeof pa, "%s", th_shared_path(a));
    snprintf(pb, sizeof pb, "%s", th_shared_path(b));
    char *argv[] = {(char *)th_build_path("stepcast"), "ab", "--json", pa, pb, NULL};
    char *out = th_run_expect(argv, 0, "\"verdict\"", NULL);
    json_t *doc = json_loads(out ? out : "", 0, NULL);
    free(out);
    return doc;
}

#define CONTROL "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz"
#define TEST_RUN "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz"

TEST(golden_ab_control_against_test)
{
    json_t *d = ab(CONTROL, TEST_RUN);
    REQUIRE(d != NULL);
    CHECK_STREQ(json_string_value(json_object_get(d, "verdict")), "slower");
    CHECK(json_number_value(json_array_get(json_object_get(d, "ci95_ms"), 0)) > 0);
    CHECK(json_is_true(json_object_get(d, "survives")));
    /* each run's center among its steps (the traces' README: control 75.5
     * to 81.1 ms, test 82.0 to 166.4 ms), six steps each */
    double ca = json_number_value(json_object_get(json_object_get(d, "center_ms"), "a")),
           cb = json_number_value(json_object_get(json_object_get(d, "center_ms"), "b"));
    CHECK(ca >= 75.5 && ca <= 81.1);
    CHECK(cb >= 82.0 && cb <= 166.4);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(d, "steps"), "a")), 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(d, "steps"), "b")), 6);
    /* the attribution: diff's parts, summing to diff's difference of mean
     * steps, each inside its own interval */
    char pa[4096], pb[4096];
    snprintf(pa, sizeof pa, "%s", th_shared_path(CONTROL));
    snprintf(pb, sizeof pb, "%s", th_shared_path(TEST_RUN));
    char *argv[] = {(char *)th_build_path("stepcast"), "diff", "--json", pa, pb, NULL};
    char *out = th_run_expect(argv, 0, "\"attribution\"", NULL);
    json_t *diff = json_loads(out ? out : "", 0, NULL), *part;
    free(out);
    REQUIRE(diff != NULL);
    const json_t *parts = json_object_get(d, "attribution");
    CHECK_EQ_INT(json_array_size(parts), json_object_size(json_object_get(diff, "attribution")));
    double sum = 0;
    size_t i;
    json_array_foreach(parts, i, part) {
        const char *category = json_string_value(json_object_get(part, "category"));
        double ms = json_number_value(json_object_get(part, "ms")),
               lo = json_number_value(json_array_get(json_object_get(part, "ci95_ms"), 0)),
               hi = json_number_value(json_array_get(json_object_get(part, "ci95_ms"), 1));
        CHECK_NEAR(ms, json_number_value(json_object_get(json_object_get(diff, "attribution"), category ? category : "")),
                   1e-6);
        CHECK(lo <= ms + 1e-6 && ms <= hi + 1e-6);
        sum += ms;
    }
    CHECK_NEAR(sum, json_number_value(json_object_get(diff, "difference_ms")), 1e-3);
    json_decref(diff);
    json_decref(d);
    /* and the other way round: faster */
    d = ab(TEST_RUN, CONTROL);
    CHECK_STREQ(json_string_value(json_object_get(d, "verdict")), "faster");
    json_decref(d);
}

TEST(golden_ab_each_run_against_itself)
{
    static const char *const runs[] = {CONTROL, TEST_RUN};
    for (size_t i = 0; i < 2; i++) {
        json_t *d = ab(runs[i], runs[i]);
        REQUIRE(d != NULL);
        const char *v = json_string_value(json_object_get(d, "verdict"));
        CHECK(v && strcmp(v, "faster") && strcmp(v, "slower"));
        json_decref(d);
    }
}
