/* profiler/nccl_abi.h: the NCCL profiler-plugin ABI, versions 4 and 5, in
 * our own declarations.
 *
 * NCCL (2.23+) loads the library named by NCCL_PROFILER_PLUGIN and looks up
 * `ncclProfiler_v<N>`, newest first: NCCL 2.28 and later take v5 (2.29+
 * would take v6 if we exported it, and fall back to v5), NCCL 2.27 takes v4.
 * The structs below restate the layout of NCCL's plugins/profiler headers
 * (profiler_v4.h, profiler_v5.h; only the members we read are named, but
 * every member before them is present, so offsets match); the offsets are
 * pinned below for x86-64 and aarch64 (LP64). ncclResult_t is an int-sized
 * enum: 0 is ncclSuccess, 3 ncclInternalError. */
#ifndef PROFILER_NCCL_ABI_H
#define PROFILER_NCCL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* event type bits (NCCL profiler.h) */
enum {
    PROF_NCCL_GROUP = 1 << 0,
    PROF_NCCL_COLL = 1 << 1,
    PROF_NCCL_P2P = 1 << 2,
    PROF_NCCL_GROUP_API = 1 << 8,
    PROF_NCCL_COLL_API = 1 << 9,
    PROF_NCCL_P2P_API = 1 << 10,
    PROF_NCCL_KERNEL_LAUNCH = 1 << 11
};

enum { PROF_NCCL_SUCCESS = 0, PROF_NCCL_INTERNAL_ERROR = 3 };

typedef void (*prof_nccl_logger)(int level, unsigned long flags, const char *file, int line,
                                 const char *fmt, ...);

struct prof_nccl_coll_v4 {
    uint64_t seq;
    const char *func;
    const void *send_buff;
    void *recv_buff;
    size_t count;
    int root;
    const char *datatype;
    uint8_t n_channels;
    uint8_t n_warps;
    const char *algo;
    const char *proto;
};

struct prof_nccl_p2p_v4 {
    const char *func;
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t n_channels;
};

struct prof_nccl_descr_v4 {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct prof_nccl_coll_v4 coll;
        struct prof_nccl_p2p_v4 p2p;
    };
};

struct prof_nccl_descr_v5 {
    uint64_t type;
    void *parent;
    int rank;
    union {
        struct {
            bool graph_captured;
            int group_depth;
        } group_api;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graph_captured;
        } coll_api;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graph_captured;
        } p2p_api;
        struct {
            void *stream;
        } kernel_launch;
        struct {
            struct prof_nccl_coll_v4 c; /* v4's members, then: */
            void *parent_group;
        } coll;
        struct {
            struct prof_nccl_p2p_v4 p; /* v4's members, then: */
            void *parent_group;
        } p2p;
    };
};

struct prof_nccl_v4 {
    const char *name;
    int (*init)(void **context, int *activation_mask, const char *comm_name, uint64_t comm_hash,
                int n_nodes, int nranks, int rank, prof_nccl_logger logfn);
    int (*start_event)(void *context, void **handle, struct prof_nccl_descr_v4 *d);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state, void *args);
    int (*finalize)(void *context);
};

struct prof_nccl_v5 {
    const char *name;
    int (*init)(void **context, uint64_t comm_id, int *activation_mask, const char *comm_name,
                int n_nodes, int nranks, int rank, prof_nccl_logger logfn);
    int (*start_event)(void *context, void **handle, struct prof_nccl_descr_v5 *d);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state, void *args);
    int (*finalize)(void *context);
};

#if defined(__LP64__)
_Static_assert(offsetof(struct prof_nccl_descr_v4, parent) == 8, "v4 parentObj");
_Static_assert(offsetof(struct prof_nccl_descr_v4, rank) == 16, "v4 rank");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.seq) == 24, "v4 coll.seqNumber");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.count) == 56, "v4 coll.count");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.root) == 64, "v4 coll.root");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.datatype) == 72, "v4 coll.datatype");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.n_channels) == 80, "v4 coll.nChannels");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.algo) == 88, "v4 coll.algo");
_Static_assert(offsetof(struct prof_nccl_descr_v4, coll.proto) == 96, "v4 coll.proto");
_Static_assert(offsetof(struct prof_nccl_descr_v4, p2p.count) == 48, "v4 p2p.count");
_Static_assert(offsetof(struct prof_nccl_descr_v4, p2p.peer) == 56, "v4 p2p.peer");
_Static_assert(offsetof(struct prof_nccl_descr_v5, parent) == 8, "v5 parentObj");
_Static_assert(offsetof(struct prof_nccl_descr_v5, group_api.group_depth) == 28, "v5 groupDepth");
_Static_assert(offsetof(struct prof_nccl_descr_v5, coll_api.root) == 48, "v5 collApi.root");
_Static_assert(offsetof(struct prof_nccl_descr_v5, coll_api.stream) == 56, "v5 collApi.stream");
_Static_assert(offsetof(struct prof_nccl_descr_v5, coll_api.graph_captured) == 64, "v5 collApi.graphCaptured");
_Static_assert(offsetof(struct prof_nccl_descr_v5, p2p_api.stream) == 48, "v5 p2pApi.stream");
_Static_assert(offsetof(struct prof_nccl_descr_v5, kernel_launch.stream) == 24, "v5 kernelLaunch.stream");
_Static_assert(offsetof(struct prof_nccl_descr_v5, coll.c.proto) == 96, "v5 coll.proto");
_Static_assert(offsetof(struct prof_nccl_descr_v5, coll.parent_group) == 104, "v5 coll.parentGroup");
_Static_assert(offsetof(struct prof_nccl_descr_v5, p2p.p.peer) == 56, "v5 p2p.peer");
_Static_assert(offsetof(struct prof_nccl_descr_v5, p2p.parent_group) == 64, "v5 p2p.parentGroup");
#endif

#endif
