/* tests/unit/test_measured.c: the measured-steps table of `make validate`
 * and `ledger import` (est_measured_parse): the shared file's layout read,
 * and each malformed row refused with its line and column named. */
#include <stdlib.h>
#include <string.h>

#include "estimator/validation.h"
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
    CHECK_EQ_INT(est_measured_parse(good, strlen(good), &rows, &n, &err), SC_OK);
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
        CHECK_EQ_INT(est_measured_parse(bad[i].text, strlen(bad[i].text), &rows, &n, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i].says);
        CHECK(rows == NULL && n == 0);
    }
}
