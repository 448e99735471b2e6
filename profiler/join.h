/* profiler/join.h: the joins made when the trace is written.
 *
 * Records arrive in whatever order CUPTI's buffers complete, so nothing is
 * joined while recording. With everything in hand this builds:
 *
 *  - correlation id -> the runtime (else driver) call that launched it, for
 *    `ac2g` flows and for placing GPU work in CPU time;
 *  - correlation id -> external ids: CUSTOM0 (a framework's op id, written
 *    as "External id") and CUSTOM2 (our NCCL kernel launches);
 *  - context -> device;
 *  - the cudaEventRecord a cudaStreamWaitEvent / cudaEventSynchronize
 *    waits on: by cudaEventSyncId when both records carry it (CUDA 12.8+),
 *    else, as Kineto does, the latest record of the same (context, event)
 *    with a smaller correlation id;
 *  - NCCL kernels -> the collectives they run ("units": one kernel launch's
 *    worth of NCCL calls). Exactly, through the CUSTOM2 external id pushed
 *    around the launch (NCCL >= 2.28, plugin v5). Otherwise by order: NCCL
 *    kernels in correlation-id order (the order of the launch calls) are
 *    matched with each communicator's launches in the order NCCL reported
 *    them; the first kernel of a communicator binds its CUDA stream, later
 *    kernels on that stream take that communicator's next launch, and a
 *    kernel whose name names a collective ("AllReduce") only takes a launch
 *    of that collective. */
#ifndef PROFILER_JOIN_H
#define PROFILER_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/map.h"
#include "profiler/nccl.h"
#include "profiler/store.h"

struct prof_nccl_op {
    const struct prof_nccl_rec *api;  /* CollApi / P2pApi (v5), or NULL */
    const struct prof_nccl_rec *task; /* Coll / P2p, or NULL */
};

struct prof_nccl_unit {
    uint64_t launch;     /* record number of the KernelLaunch (v5) or Group (v4) */
    uint64_t start;
    uint32_t comm;
    uint32_t first_op, n_ops; /* into ops[] */
    uint8_t matched;
};

/* What a collective kernel's args say, from its unit. */
struct prof_coll {
    char name[40];          /* "Collective name": c10d's spelling */
    const char *func;       /* NCCL's function name of the first op */
    const char *nccl_dtype; /* NCCL's datatype name */
    const char *dtype;      /* c10d's dtype name, or the NCCL one */
    int64_t in_nelems, out_nelems;
    int group_size, rank, peer; /* peer: single send/recv, else -1 */
    int root;               /* rooted collectives (broadcast, reduce, ...), else -1 */
    uint64_t comm_id;
    const char *comm_name;
    int64_t seq;            /* NCCL's sequence number of the first op, -1 = unknown */
    const char *algo, *proto;
    int n_channels;
    uint32_t n_ops;
};

struct prof_join {
    const struct prof_store *st;
    struct prof_nccl_log *nl;
    struct prof_map api;     /* corr -> event index */
    struct prof_map ext;     /* corr -> CUSTOM0 external id */
    struct prof_map nccl_id; /* corr -> CUSTOM2 id (our NCCL launch) */
    struct prof_map ctx_dev; /* context -> device */
    struct prof_map sync_id; /* cudaEventSyncId -> CUDA_EVENT event index */
    uint32_t *cuda_events;   /* CUDA_EVENT indices by (context, event id, corr) */
    size_t n_cuda_events;
    struct prof_nccl_unit *units;
    size_t n_units;
    struct prof_nccl_op *ops;
    size_t n_ops;
    struct prof_map kernel_unit; /* kernel event index -> unit index */
    uint64_t nccl_exact, nccl_by_order, nccl_kernels_unmatched;
};

/* Build every join over the store and the NCCL log (whose mutex is held
 * while it is read). 0, or -1 out of memory. */
int prof_join_build(struct prof_join *j, const struct prof_store *st, struct prof_nccl_log *nl);
void prof_join_release(struct prof_join *j);

/* The launching call of a GPU record, or NULL; its index in the store, or
 * PROF_INVALID. */
const struct prof_event *prof_join_launch(const struct prof_join *j, uint32_t corr);
uint32_t prof_join_launch_index(const struct prof_join *j, uint32_t corr);
/* CUPTI's device for a context; PROF_INVALID when unknown. */
uint32_t prof_join_device(const struct prof_join *j, uint32_t context);
/* The CUDA_EVENT record a sync waits on, or NULL. */
const struct prof_event *prof_join_wait(const struct prof_join *j, const struct prof_event *sync);
/* The NCCL unit of kernel event `index`, or NULL. */
const struct prof_nccl_unit *prof_join_unit(const struct prof_join *j, size_t index);
/* Summarise a unit as collective args. */
void prof_join_coll(const struct prof_join *j, const struct prof_nccl_unit *u, struct prof_coll *c);

/* Whether a kernel name is an NCCL kernel (ncclKernel_*, ncclDevKernel_*). */
int prof_is_nccl_kernel(const char *name);

#endif
