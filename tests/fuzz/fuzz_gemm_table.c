/* tests/fuzz/fuzz_gemm_table.c: libFuzzer target for the GEMM
 * microbenchmark table reader and the fit that follows it in `stepcast
 * calibrate gemms`.
 *
 * Arbitrary bytes go to calib_gemm_table_parse; what parses is checked and
 * fitted on an A100's profile, each dtype's ceiling too. Anything but a clean success or a clean
 * error is a bug. */
#include <stddef.h>
#include <stdint.h>

#include "estimator/calibrate/gemm_table.h"
#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gemm_samples s = {0};
    struct sc_error err;
    char device[96];
    const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-80gb");
    if (hw && calib_gemm_table_parse((const char *)data, size, &s, device, sizeof device, &err) == SC_OK) {
        struct kernel_params p, fitted;
        struct estimate_check c;
        struct gemm_fit fit;
        cost_kernel_params_default(&p);
        (void)calib_gemm_samples_check(&p, hw, s.v, s.n, &c, &err);
        unsigned own;
        if (calib_gemm_samples_fit(&p, hw, s.v, s.n, &fitted, &fit, &err) == SC_OK)
            (void)calib_gemm_samples_fit_dtypes(&fitted, hw, s.v, s.n, &fitted, &own, &err);
    }
    calib_gemm_samples_release(&s);
    return 0;
}
