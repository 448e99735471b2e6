/* model/inspect.h: what a trace holds and what it lacks for a replay.
 *
 * The facts `stepcast inspect` reports per rank, computed from the event
 * tables: threads and streams with their work, collectives with their sizes
 * where known, and the gaps a replay has to work around (no flows, no
 * cuda_sync events, no collective sizes, a sampled trace, ...). Rendering
 * (text in clients/, JSON in api/) reads this structure and nothing else. */
#ifndef MODEL_INSPECT_H
#define MODEL_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct model_trace;

struct model_inspect_stream {
    uint32_t track;
    int64_t device, stream;
    uint64_t kernels, comm_kernels, memcpys, memsets;
    int64_t busy_ns; /* union of kernel, copy and set intervals */
};

struct model_inspect_thread {
    uint32_t track;
    uint64_t events, cpu_ops, runtime_calls;
    int64_t busy_ns; /* union of CPU op, Python and runtime intervals */
};

struct model_inspect_coll {
    char name[32];        /* "allreduce", ... or the name as written */
    uint64_t kernels;     /* communication kernels */
    uint64_t cpu_ops;     /* record_param_comms ops with collective args */
    uint64_t sized;       /* of both, with a known message size */
    int64_t min_nelems, max_nelems; /* over the sized ones, or -1 */
    int64_t total_bytes;  /* sum of sizes x dtype over kernels, or -1 */
    uint32_t dtype;       /* a dtype seen, string id, or MODEL_NONE */
    int64_t kernel_ns;    /* total kernel time */
};

/* Gaps a replay works around; see model_inspect_lack_name(). */
enum {
    MODEL_LACK_FLOWS = 1u << 0,             /* no launch flows (ac2g) */
    MODEL_LACK_CUDA_SYNC = 1u << 1,         /* no cuda_sync events: waits are inferred */
    MODEL_LACK_COLL_SIZES = 1u << 2,        /* collectives without message sizes */
    MODEL_LACK_SAMPLED = 1u << 3,           /* events were filtered out */
    MODEL_LACK_STEPS = 1u << 4,             /* no ProfilerStep (or marker) */
    MODEL_LACK_DEVICE_PROPERTIES = 1u << 5, /* no deviceProperties */
    MODEL_LACK_CORRELATION = 1u << 6,       /* GPU work without correlation ids */
    MODEL_LACK_TIME_ANCHOR = 1u << 7,       /* relative ts without baseTimeNanoseconds */
    MODEL_LACK_COUNT = 8
};

const char *model_inspect_lack_name(unsigned bit_index);
const char *model_inspect_lack_text(unsigned bit_index);

struct model_inspect {
    uint32_t gpu_name;  /* of the device the GPU work ran on, or MODEL_NONE */
    struct model_inspect_stream *streams;
    size_t n_streams;
    struct model_inspect_thread *threads;
    size_t n_threads;
    struct model_inspect_coll *colls;
    size_t n_colls;
    uint64_t kernels, memcpys, memsets, runtime_calls;
    uint64_t gpu_without_launch;  /* GPU events whose launch is not in the trace */
    uint64_t launch_without_gpu;  /* launch calls whose GPU event is not */
    unsigned lacks;               /* MODEL_LACK_* */
};

int model_inspect_trace(const struct model_trace *t, struct model_inspect **out,
                        struct sc_error *err);
void model_inspect_free(struct model_inspect *in); /* NULL-safe */

#endif
