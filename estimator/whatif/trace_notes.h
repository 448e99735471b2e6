/* estimator/whatif/trace_notes.h: what a what-if reads of a rank's trace
 * beyond its graph, taken once while the trace is whole.
 *
 * A what-if recovers a traced job's structure (structure.h) and re-times
 * its GEMMs for another GPU (whatif.c) from the trace's events: the
 * module annotations, autograd engine and gradient hooks around each
 * runtime call, the operators the profiler recorded in a call's host gap,
 * a communication kernel's arguments, a GEMM kernel's shape from the op
 * that launched it. A built model sheds its traces to their headers once
 * its graph is found (model_graph_build_paths), so those events are gone
 * by the time a what-if is asked: its notes keep, per rank, exactly what
 * the what-if reads of them, so that a model's traces are read once in
 * all (a few tens of bytes per runtime call, GEMM and collective kernel,
 * and 8 per recorded operator).
 *
 * Notes are a pure function of one whole trace: whatif_notes_of_trace is
 * called by the build for each rank whose part the graph keeps, before
 * the trace is shed, and by whatif_notes_of_graph for a graph whose traces
 * are still whole. Arrays are sorted by event index (the task's
 * model_task_src.event), so a task finds its notes by binary search. */
#ifndef ESTIMATOR_TRACE_NOTES_H
#define ESTIMATOR_TRACE_NOTES_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/kernel_model.h"

struct model_graph;
struct model_trace;

/* A runtime or driver call of the trace (the events a traced graph's CPU
 * tasks are). */
struct trace_call_note {
    uint32_t event;   /* its index in the trace's events */
    uint32_t track;   /* its thread */
    int64_t at;       /* its start less the trace's first_ts, ns */
    int32_t layer;    /* the layer of the innermost module annotation around it
                         ("nn.Module: <Class>Layer_<N>"), or of the FSDP2 unit
                         ("blocks.<N>") whose forward or backward it is in; -1 */
    int8_t backward;  /* 1 inside an autograd engine function, else 0 */
    int8_t hook;      /* enum trace_hook of the innermost hook span around it, or -1 */
};

/* The hooks that launch data-parallel collectives (structure.h), and the
 * optimizer's step. */
enum trace_hook { TRACE_HOOK_GRADS, TRACE_HOOK_FSDP_GRADS, TRACE_HOOK_FSDP_PARAMS, TRACE_HOOK_DDP_BUFFERS,
                  TRACE_HOOK_OPTIMIZER };

/* A communication kernel whose arguments give its collective. */
struct trace_coll_note {
    uint32_t event;
    int32_t group_size;  /* "Group size", or -1 */
    int32_t dtype_bytes; /* of "dtype", 0 when unknown */
    int64_t in_nelems, out_nelems; /* -1 when absent */
};

/* A kernel launched by a GEMM op whose shape the trace records
 * (calibrate/gemm_samples.h). */
struct trace_gemm_note {
    uint32_t event;
    struct gemm_shape shape;
};

/* One rank's notes. */
struct trace_notes {
    struct trace_call_note *calls; /* every runtime and driver call, by event */
    size_t n_calls;
    struct trace_coll_note *colls; /* by event */
    size_t n_colls;
    struct trace_gemm_note *gemms; /* by event */
    size_t n_gemms;
    /* the recorded operators (cpu_op events) on threads numbered up to
     * 0xffff, each (track << 48 | its start less first_ts), sorted */
    int64_t *op_keys;
    size_t n_op_keys;
    double ops_busy_ns;      /* the host's time inside operators, less its waits on the GPU (structure.h) */
    int32_t module_layers;   /* the most layers the module annotations and FSDP units show (0: none) */
    uint8_t unit_layers;     /* FSDP2's units place the backward's work in its layers too */
    uint8_t has_autograd;    /* the trace records the autograd engine's functions */
    uint8_t has_hooks;       /* ... a gradient or FSDP hook */
    uint64_t inductor_kernels;  /* kernels torch.compile generated ("triton_...") */
    uint64_t compiled_regions;  /* CompiledFunction / Torch-Compiled Region spans */
};

/* The notes of whole trace t into *out (released with trace_notes_release,
 * also on failure). SC_ENOMEM. */
int trace_notes_of_trace(const struct model_trace *t, struct trace_notes *out, struct sc_error *err);
void trace_notes_release(struct trace_notes *n);
/* Bytes n holds (for the caches that bound memory). */
size_t trace_notes_bytes(const struct trace_notes *n);

/* The notes of every rank of a graph: rank[r] for graph rank r. */
struct trace_notes_set {
    struct trace_notes *rank; /* n_ranks of them, from malloc */
    size_t n_ranks;
};

/* The notes of g's ranks from its job's traces, which must be whole (not
 * shed). SC_EINVAL when g has no job or a trace is shed. */
int trace_notes_of_graph(const struct model_graph *g, struct trace_notes_set *out, struct sc_error *err);
void trace_notes_set_release(struct trace_notes_set *s);
size_t trace_notes_set_bytes(const struct trace_notes_set *s);

/* Lookups by event index: the note, or NULL. */
const struct trace_call_note *trace_notes_call(const struct trace_notes *n, uint32_t event);
const struct trace_coll_note *trace_notes_coll(const struct trace_notes *n, uint32_t event);
const struct trace_gemm_note *trace_notes_gemm(const struct trace_notes *n, uint32_t event);

/* A collective note's size, nccl-tests convention, for operation op (enum
 * model_coll_op): as model_coll_bytes. -1 when unknown. */
int64_t trace_coll_note_bytes(const struct trace_coll_note *c, int op);

/* Operators of n that began on `track` at or after `from` and before `at`
 * (times less first_ts, ns). */
size_t trace_notes_ops_between(const struct trace_notes *n, uint32_t track, int64_t from, int64_t at);

#endif
