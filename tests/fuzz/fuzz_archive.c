/* tests/fuzz/fuzz_archive.c: libFuzzer target for tar archive reading.
 *
 * Feeds arbitrary bytes to model/archive.h (any tar format, any
 * compression) and each member to the trace reader with small limits, as
 * a job's archive is read. Anything but a clean success or a clean error
 * is a bug. */
#include <stddef.h>
#include <stdint.h>

#include "model/archive.h"
#include "model/trace.h"
#include "tests/fuzz/fuzz_limits.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model_archive *a;
    struct model_load_opts o;
    struct sc_error err;

    fuzz_load_opts(&o);
    if (model_archive_open_mem(data, size, "fuzz", &a, &err) != SC_OK)
        return 0;
    for (int members = 0; members < 64; members++) {
        const char *name;
        struct model_stream *m;
        struct model_trace *t = NULL;
        if (model_archive_next(a, &name, &m, &err) != SC_OK || !m)
            break;
        if (model_trace_read(m, name, &o, &t, &err) == SC_OK)
            model_trace_free(t);
    }
    model_archive_free(a);
    return 0;
}
