/* tests/fuzz/fuzz_chakra.c: libFuzzer target for the Chakra ET reader.
 *
 * Feeds arbitrary bytes to model/chakra_read.h with small limits, as an
 * .et file given to replay or uploaded is read: frames, messages, node
 * ids, dependencies, attributes of any type. Anything but a clean success
 * or a clean error is a bug. */
#include <stddef.h>
#include <stdint.h>

#include "model/chakra_read.h"
#include "tests/fuzz/fuzz_limits.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model_load_opts o;
    struct model_et_rank *r = NULL;
    struct sc_error err;

    fuzz_load_opts(&o);
    if (model_et_read_mem(data, size, "fuzz", &o.limits, &r, &err) == SC_OK)
        model_et_rank_free(r);
    return 0;
}
