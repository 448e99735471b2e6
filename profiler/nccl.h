/* profiler/nccl.h: collective metadata from NCCL's profiler plugin.
 *
 * The library exports ncclProfiler_v5 and ncclProfiler_v4 (nccl_abi.h);
 * with NCCL_PROFILER_PLUGIN naming this same file, NCCL calls into the
 * process's one copy of it and the metadata lands beside the CUPTI records.
 * Each plugin event becomes a record in the log below:
 *
 *   GroupApi (v5)    ncclGroupStart..End, or one ungrouped call
 *   CollApi, P2pApi  one ncclAllReduce/.../ncclSend call: func, count,
 *                    datatype, root, stream (parent: its GroupApi)
 *   KernelLaunch     NCCL launching a kernel for the group (parent: the
 *                    GroupApi); on v5 the launch is bracketed with a CUPTI
 *                    external correlation id (kind CUSTOM2, id = `launch_id`),
 *                    so the kernel record names the launch exactly
 *   Group (plan)     one kernel plan (v4's only grouping)
 *   Coll, P2p        one collective in a plan: NCCL's sequence number,
 *                    algorithm, protocol, channels (parent: the CollApi on
 *                    v5, the Group on v4)
 *
 * Records are numbered in arrival order; a plugin handle is that number + 1,
 * so parents are found by number. Old numbers can be dropped (before a step
 * window opens) without moving the others. NCCL calls arrive from several
 * threads: one mutex guards the log; each call holds it for a few stores
 * (a launch also for CUPTI's push). The joins to kernels happen when the
 * trace is written (join.c). */
#ifndef PROFILER_NCCL_H
#define PROFILER_NCCL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/cupti_api.h"

enum prof_nccl_kind {
    PROF_NCCL_K_GROUP_API = 1,
    PROF_NCCL_K_COLL_API,
    PROF_NCCL_K_P2P_API,
    PROF_NCCL_K_KERNEL_LAUNCH,
    PROF_NCCL_K_GROUP,
    PROF_NCCL_K_COLL,
    PROF_NCCL_K_P2P
};

struct prof_nccl_comm {
    uint64_t id;        /* NCCL's commHash / commId: equal on every rank */
    char name[64];      /* the user's communicator name, may be empty */
    int nranks, nnodes, rank;
};

struct prof_nccl_rec {
    uint64_t number;      /* arrival order */
    uint64_t start, end;  /* CLOCK_REALTIME ns; end 0 until stopped */
    uint64_t parent;      /* number + 1 of the parent record, 0 = none */
    uint64_t seq;         /* Coll: NCCL's per-communicator sequence number */
    uint64_t count;       /* elements */
    uint64_t stream;      /* cudaStream_t value (API events, kernel launch) */
    uint64_t launch_id;   /* KernelLaunch: the external correlation id pushed, 0 = none */
    uint32_t comm;        /* index into comms */
    uint32_t tid;         /* calling thread */
    int32_t root;         /* root (collectives) or peer (p2p), -1 = none */
    uint8_t kind;         /* enum prof_nccl_kind */
    uint8_t graph_captured;
    uint8_t n_channels;
    char func[16], datatype[16], algo[16], proto[8];
};

#define PROF_NCCL_CHUNK 4096

struct prof_nccl_log {
    pthread_mutex_t mu;
    struct prof_nccl_comm *comms;
    size_t n_comms, cap_comms;
    struct prof_nccl_rec **chunks; /* chunk k holds numbers [k*CHUNK, (k+1)*CHUNK) */
    size_t first_chunk;            /* chunks before it were dropped */
    size_t n_chunk_slots;          /* slots in chunks[] (indexed by k - first_chunk) */
    uint64_t n;                    /* records ever added */
    int version;                   /* plugin ABI version NCCL chose (4 or 5), 0 = none yet */
    int active;                    /* record events; accessed atomically */
    int injected;                  /* the CUDA injection entry point ran */
    const struct prof_cupti *cupti; /* external correlation calls, NULL = none; atomic */
    int *mask;                     /* NCCL's event activation mask, to switch it off */
    uint64_t dropped;              /* records not kept: out of memory or over max_bytes */
    size_t bytes, max_bytes;
    uint64_t push_failures;        /* external correlation pushes CUPTI refused */
};

/* The process's log (the plugin entry points have no other way to reach
 * it). Initialised statically. */
struct prof_nccl_log *prof_nccl(void);

/* Start recording into the log; `cupti` gives the external correlation
 * calls (NULL: none, kernels are then joined by order). */
void prof_nccl_activate(struct prof_nccl_log *l, const struct prof_cupti *cupti, size_t max_bytes);
/* Stop recording and ask NCCL to stop calling (its activation mask -> 0). */
void prof_nccl_deactivate(struct prof_nccl_log *l);

/* In a forked child (one thread): stop recording without taking the mutex,
 * which a parent's thread may have held at fork time, and make it usable. */
void prof_nccl_forked(struct prof_nccl_log *l);

/* The record with this number, or NULL (dropped or never added). The log's
 * mutex must be held, or the log no longer active. */
struct prof_nccl_rec *prof_nccl_get(struct prof_nccl_log *l, uint64_t number);

/* Drop whole chunks of records that started before `t` (ns). */
void prof_nccl_drop_before(struct prof_nccl_log *l, uint64_t t);

/* Note that the CUDA injection entry point ran (whatever its outcome), so
 * the plugin does not report it missing. */
void prof_nccl_mark_injected(struct prof_nccl_log *l);

/* The communicator that stands for the job: the largest (the first of
 * equals), whose rank and size are the process's; NULL when none. */
const struct prof_nccl_comm *prof_nccl_world(const struct prof_nccl_log *l);

/* The NCCL library's version ("2.28.9") through its ncclGetVersion, when a
 * libnccl with that symbol is loaded; NULL otherwise. Writes into buf. */
const char *prof_nccl_library_version(char *buf, size_t n);

/* Free everything and return to the initial state (tests). */
void prof_nccl_reset(struct prof_nccl_log *l);

/* c10d's name for an NCCL function ("AllReduce" -> "allreduce"), NULL if unknown. */
const char *prof_nccl_c10d_name(const char *func);
/* c10d's dtype name for an NCCL datatype ("ncclFloat32" -> "Float"), NULL if unknown. */
const char *prof_nccl_c10d_dtype(const char *datatype);

#endif
