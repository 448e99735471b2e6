/* tests/fuzz/fuzz_cluster_profile.c: libFuzzer target for the cluster
 * profile reader (what a spec's cluster.profile names and `stepcast
 * calibrate` writes).
 *
 * Arbitrary bytes go to calib_cluster_profile_parse over an A100's defaults; what
 * parses must be a valid collective model that prices every kind, inside a
 * domain (where a kind's lines apply) and across two, with a finite time
 * that grows with the size. Anything but a clean success or a clean error
 * is a bug. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/cluster_profile.h"
#include "estimator/costs/hardware.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum model_coll_op kinds[] = {MODEL_COLL_ALLREDUCE, MODEL_COLL_ALLGATHER, MODEL_COLL_REDUCESCATTER,
                                               MODEL_COLL_ALLTOALL,  MODEL_COLL_BROADCAST, MODEL_COLL_REDUCE,
                                               MODEL_COLL_SENDRECV};
    struct cluster_profile p;
    struct sc_error err;
    memset(&p, 0, sizeof p);
    cost_coll_params_from_hw(cost_hw_profile_find("a100-sxm4-80gb"), &p.coll);
    cost_kernel_params_default(&p.kernel);
    if (calib_cluster_profile_parse((const char *)data, size, &p, &err) != SC_OK)
        return 0;
    if (cost_coll_params_valid(&p.coll, &err) || (p.has_kernel && cost_kernel_params_check(&p.kernel, &err)))
        abort(); /* parsed, yet not usable */
    static const struct coll_group groups[] = {{2, 2}, {8, 8}, {16, 8}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            double before = 0;
            for (int b = 0; b <= 36; b += 3) {
                struct coll_estimate e;
                if (cost_coll_estimate(&p.coll, kinds[k], &groups[g], ldexp(1, b), &e, &err) != SC_OK ||
                    !isfinite(e.time_us) || e.time_us < before)
                    abort();
                before = e.time_us;
            }
        }
    return 0;
}
