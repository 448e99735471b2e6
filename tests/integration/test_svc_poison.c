/* tests/integration/test_svc_poison.c: numbers that no measurement gives
 * (kernel times of 1e300 us, subnormal bandwidths and step times) are
 * refused on the way in, so no stored row poisons the routes that read it
 * (an estimate naming such a calibration, a list of the ledger). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"
#include "common/banned.h"

static void expect_refused(const struct svc_daemon *d, const char *path, const char *body, const char *says)
{
    struct svc_resp r;
    long st = svc_admin(d, "POST", path, body, &r);
    if (st < 400 || st >= 500)
        sc_check_fail(__FILE__, __LINE__, "POST %s: want a 4xx, got %ld %s", path, st, r.body);
    CHECK_CONTAINS(r.body, says);
    svc_resp_release(&r);
}

TEST(svc_poison_refused_on_the_way_in)
{
    struct svc_daemon d;
    struct svc_resp r;
    svc_start(&d, NULL, NULL, NULL);
    /* a GEMM table of kernel times 1e300 us was stored, and every estimate
     * naming it failed with "a negative duration or gap" */
    expect_refused(&d, "/v1/calibrations/gemms?name=absurd&gpu=h100-sxm",
                   "dtype,batch,m,n,k,us\nbf16,1,4096,4096,4096,1e300\n", "1e300");
    expect_refused(&d, "/v1/calibrations/gemms?name=tiny&gpu=h100-sxm",
                   "dtype,batch,m,n,k,us\nbf16,1,4096,4096,4096,1e-320\n", "1e-320");
    /* an nccl-tests row of a time past 1,000 s */
    expect_refused(&d, "/v1/calibrations/nccl-tests?name=slow&gpu=h100-sxm&kind=all_reduce&ranks=8",
                   "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
                   "     1048576        262144     float     sum      -1    1e300    0.00    0.00      0\n",
                   "outside");
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/calibrations", NULL, &r), 200);
    CHECK(!strstr(r.body, "absurd") && !strstr(r.body, "tiny") && !strstr(r.body, "slow"));
    svc_resp_release(&r);
    /* a step time of 1e-320 ms was stored and every GET of the ledger was
     * 503 from then on */
    expect_refused(&d, "/v1/validations",
                   "{\"spec\":{\"model\":{\"layers\":2,\"hidden\":256,\"heads\":4,\"seq\":256},"
                   "\"cluster\":{\"gpu\":\"h100-sxm\"}},\"measured_step_ms\":1e-320,\"source\":\"t\"}",
                   "measured_step_ms");
    CHECK_EQ_INT(svc_admin(&d, "GET", "/v1/validations", NULL, &r), 200);
    svc_resp_release(&r);
    CHECK_EQ_INT(svc_stop(&d), 0);
}
