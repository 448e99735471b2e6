/* model/trace.h: one rank's trace as compact event tables.
 *
 * The reader (trace_reader.c) streams a Kineto Chrome-trace JSON document and
 * fills these tables one event at a time; nothing holds the document. Every
 * later stage (steps, graph, replay, inspect) reads the tables, never JSON.
 *
 * Times are integer nanoseconds. When the trace carries baseTimeNanoseconds,
 * `ts` values are relative to it in the file and absolute (epoch ns) here;
 * otherwise they are as written (absolute epoch microseconds in old traces).
 * `dur` is never negative (a negative one is rejected as invalid input).
 *
 * Events keep file order. Names, categories and raw argument text are
 * interned in `strings`; side records (GPU details, operators' arguments,
 * collectives, syncs) live in their own arrays, reached through
 * `model_event.info`. The trace owns all of it; model_trace_free()
 * releases everything in one call. Immutable once loaded, so several
 * threads may read one trace. */
#ifndef MODEL_TRACE_H
#define MODEL_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strtab.h"

#ifndef MODEL_NONE
#define MODEL_NONE UINT32_MAX
#endif

/* What an event is, from its category through the alias table (trace.c):
 * current Kineto names, the capitalised names of old traces, ROCm's. */
enum model_event_kind {
    MODEL_EV_CPU_OP,          /* cpu_op, Operator */
    MODEL_EV_USER_ANNOTATION, /* user_annotation (CPU side; ProfilerStep#N) */
    MODEL_EV_PYTHON,          /* python_function */
    MODEL_EV_RUNTIME,         /* cuda_runtime, Runtime (hip* names on ROCm) */
    MODEL_EV_DRIVER,          /* cuda_driver */
    MODEL_EV_KERNEL,          /* kernel, Kernel */
    MODEL_EV_MEMCPY,          /* gpu_memcpy, Memcpy */
    MODEL_EV_MEMSET,          /* gpu_memset, Memset */
    MODEL_EV_GPU_ANNOTATION,  /* gpu_user_annotation */
    MODEL_EV_CUDA_SYNC,       /* cuda_sync */
    MODEL_EV_CUDA_EVENT,      /* cuda_event */
    MODEL_EV_OTHER,           /* known and not modelled: Trace, overhead, ... */
    MODEL_EV_UNKNOWN,         /* unknown category: kept, counted, not modelled */
    MODEL_EV_KIND_COUNT
};

/* Lowercase name of a kind ("cpu_op", "kernel", ...). */
const char *model_event_kind_name(enum model_event_kind k);

static inline int model_kind_is_gpu(unsigned k)
{
    return k == MODEL_EV_KERNEL || k == MODEL_EV_MEMCPY || k == MODEL_EV_MEMSET;
}

/* A complete ("X") event. 48 bytes. */
struct model_event {
    int64_t ts;          /* start, ns */
    int64_t dur;         /* ns, >= 0 */
    int64_t correlation; /* args.correlation, or -1 */
    int64_t external_id; /* args["External id"], or -1 */
    uint32_t name;       /* string id */
    uint32_t track;      /* index into tracks */
    uint32_t info;       /* index into infos (model_kind_has_info), else into
                            op_args; or MODEL_NONE (model_event_info/_args) */
    uint16_t cat;        /* index into cats */
    uint8_t kind;        /* enum model_event_kind */
    uint8_t rt;          /* runtime/driver calls: enum model_rt_class; else 0 */
};

/* The kinds whose details are a struct model_info (GPU work, CUDA syncs and
 * events, GPU annotations); every other kind's are a struct model_op_args. */
static inline int model_kind_has_info(unsigned k)
{
    return model_kind_is_gpu(k) || k == MODEL_EV_CUDA_SYNC || k == MODEL_EV_CUDA_EVENT ||
           k == MODEL_EV_GPU_ANNOTATION;
}

/* A GPU-side event's details (model_kind_has_info). 56 bytes. Fields not
 * present are -1 / MODEL_NONE. */
struct model_info {
    int64_t bytes;        /* memcpy/memset size */
    int64_t stream;       /* args.stream */
    int32_t device;       /* args.device */
    int32_t grid[3];      /* kernel launch shape; 0 when absent (ROCm) */
    int32_t block[3];
    uint32_t coll;        /* index into colls (a communication kernel's) */
    uint32_t sync;        /* index into syncs */
};

/* A host-side event's arguments as written (a CPU operator's inputs, a
 * communication op's collective): only operators carrying them have one,
 * and they are most of a trace's events, hence a row of 16 bytes. Fields
 * not present are MODEL_NONE. */
struct model_op_args {
    uint32_t input_dims;  /* raw JSON text of "Input Dims", string id */
    uint32_t input_types; /* raw JSON text of "Input type" */
    uint32_t concrete_inputs; /* raw JSON text of "Concrete Inputs" (the scalar
                                 arguments, PyTorch 2.3 and later) */
    uint32_t coll;        /* index into colls */
};

/* Collective metadata, from a record_param_comms op or an NCCL kernel. */
struct model_collective {
    uint32_t name;        /* "Collective name" (e.g. "allreduce"), string id */
    uint32_t dtype;       /* "dtype" */
    uint32_t pg_name;     /* "Process Group Name" (or "Process Group ID") */
    uint32_t pg_desc;     /* "Process Group Description" */
    uint32_t pg_ranks;    /* "Process Group Ranks", raw text */
    uint32_t in_split;    /* "In split size", raw text */
    uint32_t out_split;   /* "Out split size", raw text */
    int32_t group_size;   /* "Group size", or -1 */
    int32_t peer;         /* "Dst Rank" / "Src Rank", or -1 */
    int64_t in_nelems;    /* "In msg nelems", or -1 */
    int64_t out_nelems;   /* "Out msg nelems", or -1 */
    int64_t seq;          /* PyTorch's "Seq", or -1 */
    int64_t nccl_seq;     /* NCCL's own counter ("NCCL seq"), or -1 */
};

/* A cuda_sync event's arguments, or a cuda_event's. */
struct model_sync {
    uint32_t sync_kind;          /* "cuda_sync_kind" text, string id */
    int64_t wait_on_stream;      /* or -1 */
    int64_t wait_on_record_corr; /* wait_on_cuda_event_record_corr_id, or -1 */
    int64_t event_id;            /* wait_on_cuda_event_id / event_id, or -1 */
};

enum model_flow_kind { MODEL_FLOW_LAUNCH, MODEL_FLOW_FWDBWD, MODEL_FLOW_OTHER };

/* One end of a flow arrow ("s", "t" or "f" phase). */
struct model_flow {
    int64_t id;
    int64_t ts;
    uint32_t track;
    uint16_t cat;
    uint8_t phase; /* 's', 't' or 'f' */
    uint8_t kind;  /* enum model_flow_kind */
};

/* A (pid, tid) row: a CPU thread or a GPU stream (pid = device, tid = stream). */
struct model_track {
    int64_t pid, tid;     /* numeric values; digits of a string pid/tid */
    uint32_t pid_str;     /* the string when pid was a string, else MODEL_NONE */
    uint32_t tid_str;
    uint32_t label;       /* thread_name / process_name metadata, or MODEL_NONE */
    uint32_t n_events;    /* complete events on it */
    uint32_t n_gpu;       /* of which kernels, copies and sets */
    uint8_t is_gpu;       /* carries GPU work (its events are GPU kinds) */
    uint8_t is_cpu;       /* carries CPU work */
};

/* Events counted by their category as written. */
struct model_cat {
    uint32_t name;  /* string id; "" for events without a category */
    uint8_t kind;   /* enum model_event_kind the alias table gave */
    uint8_t flow;   /* a flow category */
    uint64_t count;
};

struct model_device {
    int64_t id;
    uint32_t name;      /* "NVIDIA A100-SXM4-80GB", string id */
    int64_t total_mem;  /* bytes, or -1 */
    int32_t major, minor, num_sms;
};

struct model_pg {
    uint32_t name, desc; /* string ids */
    int32_t size;        /* or -1 */
    uint32_t ranks;      /* raw text of "ranks" */
};

struct model_step {
    uint32_t name;  /* marker name, e.g. "ProfilerStep#4", string id */
    int64_t number; /* N of ProfilerStep#N, else the marker's ordinal */
    int64_t start, end;
    uint32_t track; /* the CPU thread of the marker */
    uint32_t event; /* the marker event */
    uint8_t partial; /* the trace starts or ends inside this step */
};

/* Hard limits on untrusted input; going over one is SC_ELIMIT. */
struct model_limits {
    uint64_t max_events;      /* traceEvents entries */
    uint64_t max_item_bytes;  /* one event (or top-level member) in bytes */
    uint64_t max_string;      /* one JSON string, bytes (checked from 32 bytes) */
    uint32_t max_depth;       /* JSON nesting */
};

/* Defaults: 50,000,000 events, 64 MiB per event, 16 MiB per string, depth 64. */
#define MODEL_MAX_EVENTS 50000000ull
#define MODEL_MAX_ITEM_BYTES (64ull << 20)
#define MODEL_MAX_STRING (16ull << 20)
#define MODEL_MAX_DEPTH 64u

void model_limits_default(struct model_limits *l);

struct model_load_opts {
    struct model_limits limits;
    const char *step_marker; /* NULL: ProfilerStep#N; else a prefix (DESIGN.md §3) */
    /* Validate and count only: every entry is read and checked as usual,
     * but only the step markers are kept (up to MODEL_COUNT_ONLY_MARKERS),
     * so memory stays bounded whatever the number of events. The trace
     * then has its counts (n_entries), rank and steps, and no other event,
     * flow or metadata. For checking uploads. */
    int count_only;
    /* What only a timeline, a what-if's notes, calibration and export
     * read, read and validated but not kept: operators' input dims, input
     * types and concrete inputs (their model_op_args fields MODEL_NONE; an
     * operator gets a row only for its collective), and the flows
     * (counted: n_flow_entries, n_launch_flows). For replays, critical
     * paths and inspect, where interning the inputs is most of the cost
     * of a CPU operator's args and flows are a third of the entries. */
    int lean;
};
#define MODEL_COUNT_ONLY_MARKERS 100000u

void model_load_opts_default(struct model_load_opts *o);

struct model_trace {
    char *source; /* the file (or member) name, for messages; from malloc */
    struct sc_strtab strings;

    struct model_event *events;
    size_t n_events, cap_events;
    struct model_info *infos;
    size_t n_infos, cap_infos;
    struct model_op_args *op_args;
    size_t n_op_args, cap_op_args;
    struct model_collective *colls;
    size_t n_colls, cap_colls;
    struct model_sync *syncs;
    size_t n_syncs, cap_syncs;
    struct model_flow *flows;
    size_t n_flows, cap_flows;
    struct model_track *tracks;
    size_t n_tracks, cap_tracks;
    struct model_cat *cats;
    size_t n_cats, cap_cats;
    struct model_device *devices;
    size_t n_devices, cap_devices;
    struct model_pg *pgs;
    size_t n_pgs, cap_pgs;
    struct model_step *steps;
    size_t n_steps;
    uint32_t step_marker; /* string id of the marker the steps were found by (0: ProfilerStep#N) */
    /* launches joined to their GPU events by correlation id, per event:
     * a kernel, copy, set, cuda_sync or cuda_event -> the runtime or driver
     * call with its correlation; a call -> its first kernel, copy or set
     * (a cudaGraphLaunch runs several, each linked back to it); else
     * MODEL_NONE. Filled by model_trace_finish. */
    uint32_t *link;
    uint32_t *track_slots; /* hash of tracks: index + 1, 0 = empty */
    size_t n_track_slots;
    uint32_t *cat_slots;   /* hash of cats by name id: index + 1 */
    size_t n_cat_slots;

    /* top level */
    int64_t schema_version;    /* or -1 */
    int64_t rank;              /* distributedInfo.rank, or -1 */
    int64_t world_size;        /* or -1 */
    uint32_t backend;          /* distributedInfo.backend, or MODEL_NONE */
    uint32_t nccl_version;     /* or MODEL_NONE */
    int64_t base_time_ns;      /* baseTimeNanoseconds, or 0 */
    uint8_t has_base_time;
    uint8_t time_unanchored;   /* relative ts and no base: not placed in time */
    uint8_t has_distributed_info;
    uint8_t has_device_properties;
    uint8_t synthetic;         /* "stepcast_synthetic": true (stepcast synth wrote it) */

    /* counts by phase, over all traceEvents entries */
    uint64_t n_entries;    /* everything in traceEvents */
    uint64_t n_metadata;   /* "M" */
    uint64_t n_counters;   /* "C" */
    uint64_t n_instants;   /* "i"/"I" */
    uint64_t n_flow_entries; /* "s"/"t"/"f", kept as n_flows rows unless the load was lean */
    uint64_t n_launch_flows; /* of them, a launch's (MODEL_FLOW_LAUNCH) */
    uint64_t n_other_phase; /* B/E, async b/e/n, objects ...: counted, not kept */
    uint64_t n_unknown;    /* complete events of unknown categories */

    int64_t first_ts, last_end; /* extent of complete events (ns) */
    uint64_t n_complete;        /* complete events read (n_events, also once shed) */
    uint8_t shed;               /* model_trace_shed released the event tables */
};

/* Load one rank's trace from a stream (plain or gzip: the reader detects it).
 * `source` names it in messages. On failure *out is NULL and err says what,
 * where (err->offset: byte of the decompressed JSON; err->event: index in
 * traceEvents) and why. */
struct model_stream;
int model_trace_read(struct model_stream *in, const char *source,
                     const struct model_load_opts *opts, struct model_trace **out,
                     struct sc_error *err);

/* The same from a file or a memory buffer. */
int model_trace_load_file(const char *path, const struct model_load_opts *opts,
                          struct model_trace **out, struct sc_error *err);
int model_trace_load_mem(const void *buf, size_t n, const char *source,
                         const struct model_load_opts *opts, struct model_trace **out,
                         struct sc_error *err);

void model_trace_free(struct model_trace *t); /* NULL-safe */

/* Release the event tables (events, infos, operators' arguments,
 * collectives, syncs, flows, launch links), keeping the header: source,
 * strings, tracks, categories, devices, process groups, steps, top-level
 * values and counts. What builds a graph and replays a job keeps only this
 * of each rank (the graph holds the rest it needs), so a large job's
 * traces need not fit in memory at once. A shed trace has no event
 * (n_events 0; n_complete keeps the count) and cannot be inspected or
 * calibrated from. */
void model_trace_shed(struct model_trace *t);

/* What a trace's tables hold in memory, in bytes. */
size_t model_trace_bytes(const struct model_trace *t);

static inline const char *model_str(const struct model_trace *t, uint32_t id)
{
    return id == MODEL_NONE ? NULL : sc_strtab_str(&t->strings, id);
}

/* Event e's GPU-side details, or NULL (a host-side event, or none). */
static inline const struct model_info *model_event_info(const struct model_trace *t, const struct model_event *e)
{
    return e->info != MODEL_NONE && model_kind_has_info(e->kind) ? &t->infos[e->info] : NULL;
}

/* Event e's arguments as written, or NULL (a GPU-side event, or none). */
static inline const struct model_op_args *model_event_args(const struct model_trace *t, const struct model_event *e)
{
    return e->info != MODEL_NONE && !model_kind_has_info(e->kind) ? &t->op_args[e->info] : NULL;
}

/* The collective metadata event e carries (a communication kernel's or
 * operator's), or NULL. */
static inline const struct model_collective *model_event_coll(const struct model_trace *t,
                                                              const struct model_event *e)
{
    uint32_t c = e->info == MODEL_NONE             ? MODEL_NONE
                 : model_kind_has_info(e->kind) ? t->infos[e->info].coll
                                                : t->op_args[e->info].coll;
    return c == MODEL_NONE ? NULL : &t->colls[c];
}

/* ---- building the tables (used by the reader and by synthetic writers) ---- */

/* Start an empty trace named `source`. */
int model_trace_new(const char *source, struct model_trace **out, struct sc_error *err);
/* The category slot for a category string (created on first use). */
int model_trace_cat(struct model_trace *t, const char *cat, size_t n, uint16_t *out);
/* The track for (pid, tid); *_str are MODEL_NONE for numeric ids. */
int model_trace_track(struct model_trace *t, int64_t pid, uint32_t pid_str, int64_t tid,
                      uint32_t tid_str, uint32_t *out);
/* Append an event / info / operator's arguments / collective / sync / flow;
 * 0 or -1 (out of memory). */
int model_trace_add_event(struct model_trace *t, const struct model_event *e);
int model_trace_add_info(struct model_trace *t, const struct model_info *i, uint32_t *out);
int model_trace_add_op_args(struct model_trace *t, const struct model_op_args *a, uint32_t *out);
int model_trace_add_coll(struct model_trace *t, const struct model_collective *c, uint32_t *out);
int model_trace_add_sync(struct model_trace *t, const struct model_sync *s, uint32_t *out);
int model_trace_add_flow(struct model_trace *t, const struct model_flow *f);

/* Append src's tables to dst (both unfinished), renumbering src's strings,
 * categories, tracks and side records into dst's. src's events, infos,
 * operators' arguments and flows are renumbered where they are and then become dst's (their pages
 * moved where both are large: common/pagevec.h); src keeps none of them.
 * Top-level values src holds (distributedInfo, baseTimeNanoseconds, ...)
 * replace dst's, as a later member of one document would. 0, or -1 when out
 * of memory. */
int model_trace_append(struct model_trace *dst, struct model_trace *src);

/* After the last event: apply baseTimeNanoseconds, classify tracks, link
 * launches. Called by the reader (which then finds the steps,
 * model_steps_find); call both once after building by hand. */
int model_trace_finish(struct model_trace *t, struct sc_error *err);

#endif
