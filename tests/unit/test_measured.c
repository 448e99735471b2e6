/* tests/unit/test_measured.c: the measured-steps table of `make validate`
 * and `ledger import` (plan_measured_parse): the shared file's layout read,
 * and each malformed row refused with its line and column named; and the
 * fits on such rows the same with a memo of their estimates (est_memo). */
#include <stdlib.h>
#include <string.h>

#include "estimator/plan/validation.h"
#include "tests/check.h"
#include "common/banned.h"

TEST(measured_rows_read_and_malformed_ones_named)
{
    static const char good[] = "\xEF\xBB\xBF# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
                               "sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
                               "iteration time (ms)\r\n"
                               "2,16,8,1024,16,24,1024,1,1,2,372.160408\r\n"
                               "\r\n"
                               "8,32,4,1024,16,24,1024,2,2,2,219.732754";
    struct est_measured *rows = NULL;
    size_t n = 0;
    struct sc_error err;
    CHECK_EQ_INT(plan_measured_parse(good, strlen(good), &rows, &n, &err), SC_OK);
    REQUIRE(n == 2);
    CHECK_EQ_INT(rows[0].pp, 2);
    CHECK_NEAR(rows[0].step_ms, 372.160408, 0);
    CHECK_EQ_INT(rows[1].tp, 2);
    CHECK_EQ_INT((long long)rows[1].line, 4);
    free(rows);

    static const struct {
        const char *text, *says;
    } bad[] = {
        {"2,16,8,1024,16,24,1024,1,1,2\n", "line 1: pipeline parallelism: expected 11"},
        {"2,16,8,1024,16,24,1024,1,1,2,3,4\n", "line 1: iteration time: expected 11"},
        {"# h\n2,16,,1024,16,24,1024,1,1,2,3\n", "line 2: micro batch: expected 11"},
        {"2,16,8,1024.5,16,24,1024,1,1,2,3\n", "line 1: hidden size: '1024.5' is not a positive whole number"},
        {"2,16,8,1024,16,24,1024,1,1,2,-3\n", "line 1: iteration time: '-3' is not a positive number"},
        {"4,16,8,1024,16,24,1024,1,1,2,3\n", "line 1: 4 GPUs are not tp x dp x pp = 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(plan_measured_parse(bad[i].text, strlen(bad[i].text), &rows, &n, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i].says);
        CHECK(rows == NULL && n == 0);
    }
}

/* A fit with a memo (est_runs.memo) is the fit without: the same costs
 * and score. A second fit from the same start makes no estimate: each
 * comes from the memo. */
TEST(measured_fit_with_a_memo_is_the_fit_without)
{
    static const char text[] = "2,16,8,1024,16,24,1024,1,1,2,372.160408\n"
                               "8,32,4,1024,16,24,1024,2,2,2,219.732754\n"
                               "4,32,4,2048,16,24,1024,2,2,1,640.5\n"
                               "8,64,8,1024,16,24,2048,4,2,1,301.25\n"
                               "4,16,2,2048,32,24,2048,1,2,2,812.0\n"
                               "8,32,4,2048,16,24,1024,8,1,1,288.4\n";
    struct est_measured *rows = NULL;
    size_t n = 0;
    struct sc_error err;
    REQUIRE(plan_measured_parse(text, strlen(text), &rows, &n, &err) == SC_OK && n == 6);
    struct est_spec specs[6];
    const struct hw_profile *hws[6];
    double step_ms[6];
    size_t lines[6];
    for (size_t i = 0; i < n; i++) {
        REQUIRE(plan_measured_spec(&rows[i], "a100-sxm4-80gb", "fp16", "unfused", &specs[i], &hws[i], &err) == SC_OK);
        step_ms[i] = rows[i].step_ms;
        lines[i] = rows[i].line;
    }
    struct est_costs start, plain, memo1, memo2;
    calib_costs_base(hws[0], &specs[0], &start);
    struct est_runs runs = {n, specs, hws, step_ms, lines, NULL, NULL};
    struct est_score s0, s1, s2;
    size_t e0 = 0, e1 = 0, e2 = 0;
    plain = start;
    REQUIRE(plan_fit(&runs, NULL, &plain, EST_FIT_ALL, 1, 12, EST_DETAIL_STAGE, &s0, &e0, &err) == SC_OK);
    REQUIRE((runs.memo = plan_memo_new(n)) != NULL);
    memo1 = start;
    REQUIRE(plan_fit(&runs, NULL, &memo1, EST_FIT_ALL, 1, 12, EST_DETAIL_STAGE, &s1, &e1, &err) == SC_OK);
    size_t hits = plan_memo_hits(runs.memo);
    memo2 = start;
    REQUIRE(plan_fit(&runs, NULL, &memo2, EST_FIT_ALL, 1, 12, EST_DETAIL_STAGE, &s2, &e2, &err) == SC_OK);
    CHECK(memcmp(&plain, &memo1, sizeof plain) == 0);
    CHECK(memcmp(&plain, &memo2, sizeof plain) == 0);
    CHECK_NEAR(s1.mape, s0.mape, 0);
    CHECK_NEAR(s1.max_ape, s0.max_ape, 0);
    CHECK_NEAR(s2.bias, s0.bias, 0);
    CHECK_EQ_INT(e1, e0);
    CHECK(e0 > 10);
    CHECK(hits >= n); /* the best point, scored again */
    CHECK_EQ_INT(plan_memo_hits(runs.memo) - hits, e2 * n);
    plan_memo_free(runs.memo);
    free(rows);
}
