/* tests/fuzz/fuzz_model_blob.c: libFuzzer target for the reader of built
 * models' blobs (daemon/model_blob.h).
 *
 * The input is a payload: it is sealed with a valid header and checksum
 * first (model_blob_seal), so the fuzzer reaches the payload's parser and
 * checks instead of stopping at the checksum. Anything but a clean model
 * or a clean SC_EINVAL / SC_ENOMEM is a bug; a model read is freed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/built.h"
#include "daemon/model_blob.h"
#include "model/trace.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model_load_opts lo;
    struct built_model *m = NULL;
    struct sc_error err;
    void *blob = NULL;
    size_t n = 0;
    model_load_opts_default(&lo);
    if (model_blob_seal(data, size, &blob, &n, &err))
        return 0;
    int rc = model_blob_read(blob, n, "m-fuzz", &lo, &m, &err);
    if (rc != SC_OK && rc != SC_EINVAL && rc != SC_ENOMEM)
        abort();
    if ((rc == SC_OK) != (m != NULL))
        abort();
    built_model_free(m);
    free(blob);
    return 0;
}
