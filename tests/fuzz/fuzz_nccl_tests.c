/* tests/fuzz/fuzz_nccl_tests.c: libFuzzer target for the nccl-tests output
 * reader and the fit that follows it in `stepcast calibrate nccl-tests`.
 *
 * Arbitrary bytes go to calib_nct_parse (the first byte picks a file-name hint,
 * so runs without a collective line are fitted too); what parses is fitted.
 * Anything but a clean success or a clean error is a bug. */
#include <stddef.h>
#include <stdint.h>

#include "estimator/costs/collective_model.h"
#include "estimator/calibrate/coll_fit.h"
#include "estimator/calibrate/nccl_tests.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const hints[] = {NULL, "all_reduce.txt", "x-all_gather-y", "alltoall",
                                        "sendrecv_perf", "reduce_scatter", "broadcast", "reduce"};
    struct nct_run run;
    struct sc_error err;
    const char *hint = size ? hints[data[0] % (sizeof hints / sizeof hints[0])] : NULL;

    if (calib_nct_parse((const char *)data, size, hint, &run, &err) == SC_OK) {
        struct coll_fit fits[COLL_FIT_RANGES];
        size_t n;
        if (run.ranks < 2)
            run.ranks = 8;
        (void)calib_coll_fit_run(&run, fits, &n, &err);
        calib_nct_run_release(&run);
    }
    return 0;
}
