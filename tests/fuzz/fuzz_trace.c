/* tests/fuzz/fuzz_trace.c: libFuzzer target for the trace reader.
 *
 * Feeds arbitrary bytes (plain JSON or gzip) to model_trace_load_mem with
 * small limits (half of them lean, as inspect and replays read) and, when
 * it loads, runs the per-rank analysis over it and takes the notes a
 * what-if reads of it (the spans of module calls, FSDP's units, hooks and
 * the optimizer's step around each call).
 * Anything but a clean success or a clean error is a bug. */
#include <stddef.h>
#include <stdint.h>

#include "estimator/whatif/trace_notes.h"
#include "model/inspect.h"
#include "model/trace.h"
#include "tests/fuzz/fuzz_limits.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model_load_opts o;
    struct model_trace *t = NULL;
    struct sc_error err;

    fuzz_load_opts(&o);
    if (size && data[0] == 'M') /* some inputs exercise the marker mode */
        o.step_marker = "aten::";
    o.lean = size && data[size - 1] % 2; /* half are read as inspect and replays read */
    if (model_trace_load_mem(data, size, "fuzz", &o, &t, &err) == SC_OK) {
        struct model_inspect *in = NULL;
        struct trace_notes notes;
        if (model_inspect_trace(t, &in, &err) == SC_OK)
            model_inspect_free(in);
        if (trace_notes_of_trace(t, &notes, &err) == SC_OK)
            trace_notes_release(&notes);
        model_trace_free(t);
    }
    o.count_only = 1; /* as uploads are checked */
    t = NULL;
    if (model_trace_load_mem(data, size, "fuzz", &o, &t, &err) == SC_OK)
        model_trace_free(t);
    return 0;
}
