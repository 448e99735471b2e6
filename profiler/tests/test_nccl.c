/* profiler/tests/test_nccl.c: the NCCL profiler plugin fed synthetic plugin
 * events (v5 and v4 descriptors), and its joins to kernels: exact through
 * the external correlation id pushed around a launch, by order otherwise. */
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "profiler/exports.h"
#include "profiler/join.h"
#include "profiler/nccl.h"
#include "profiler/store.h"
#include "profiler/tests/synth.h"
#include "tests/check.h"
#include "common/banned.h"

static struct prof_cupti fake;

static struct prof_nccl_log *start_log(void)
{
    struct synth_cupti_script s = {.version = 130001};
    struct prof_nccl_log *l = prof_nccl();
    prof_nccl_reset(l);
    synth_cupti_make(&fake, &s);
    prof_nccl_mark_injected(l);
    prof_nccl_activate(l, &fake, 0);
    return l;
}

static void *v5_event(void *ctx, uint64_t type, void *parent)
{
    struct prof_nccl_descr_v5 d;
    void *h = NULL;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.parent = parent;
    CHECK_EQ_INT(ncclProfiler_v5.start_event(ctx, &h, &d), 0);
    return h;
}

static void *v5_coll_api(void *ctx, void *group, const char *func, size_t count, void *stream)
{
    struct prof_nccl_descr_v5 d;
    void *h = NULL;
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_COLL_API;
    d.parent = group;
    d.coll_api.func = func;
    d.coll_api.count = count;
    d.coll_api.datatype = "ncclFloat32";
    d.coll_api.root = -1;
    d.coll_api.stream = stream;
    CHECK_EQ_INT(ncclProfiler_v5.start_event(ctx, &h, &d), 0);
    CHECK(h != NULL);
    ncclProfiler_v5.stop_event(h);
    return h;
}

static void *v5_coll(void *ctx, void *api, void *plan, uint64_t seq, const char *func, size_t count)
{
    struct prof_nccl_descr_v5 d;
    void *h = NULL;
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_COLL;
    d.parent = api;
    d.coll.c.seq = seq;
    d.coll.c.func = func;
    d.coll.c.count = count;
    d.coll.c.root = -1;
    d.coll.c.datatype = "ncclFloat32";
    d.coll.c.n_channels = 4;
    d.coll.c.algo = "RING";
    d.coll.c.proto = "LL";
    d.coll.parent_group = plan;
    CHECK_EQ_INT(ncclProfiler_v5.start_event(ctx, &h, &d), 0);
    return h;
}

static struct prof_event *add_kernel(struct prof_store *s, uint32_t corr, uint32_t stream,
                                     const char *name)
{
    struct prof_event *e = synth_event(s, PROF_EV_KERNEL, corr, 1000 + corr);
    e->at.gpu.stream = stream;
    e->name = prof_store_intern(s, name, strlen(name));
    return e;
}

TEST(prof_nccl_v5_joins_kernels_exactly)
{
    struct prof_nccl_log *l = start_log();
    void *ctx = NULL;
    int mask = 0;
    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, 0xabcdef0123456789ull, &mask, "tp", 1, 4, 2, NULL), 0);
    CHECK(ctx != NULL);
    CHECK(mask & PROF_NCCL_KERNEL_LAUNCH);
    CHECK(mask & PROF_NCCL_COLL_API);
    CHECK(mask & PROF_NCCL_COLL);
    CHECK_STREQ(ncclProfiler_v5.name, "stepcast-prof");

    void *group = v5_event(ctx, PROF_NCCL_GROUP_API, NULL);
    void *a1 = v5_coll_api(ctx, group, "AllReduce", 1000, (void *)0x77);
    void *a2 = v5_coll_api(ctx, group, "AllReduce", 500, (void *)0x77);
    void *launch = v5_event(ctx, PROF_NCCL_KERNEL_LAUNCH, group);
    CHECK_EQ_INT(synth_cupti_log()->pushes, 1);
    uint64_t id = synth_cupti_log()->last_pushed;
    CHECK(id != 0);
    ncclProfiler_v5.stop_event(launch);
    CHECK_EQ_INT(synth_cupti_log()->pops, 1);
    void *plan = v5_event(ctx, PROF_NCCL_GROUP, NULL);
    ncclProfiler_v5.stop_event(v5_coll(ctx, a1, plan, 10, "AllReduce", 1000));
    ncclProfiler_v5.stop_event(v5_coll(ctx, a2, plan, 11, "AllReduce", 500));
    ncclProfiler_v5.stop_event(plan);
    ncclProfiler_v5.stop_event(group);
    /* events NCCL has but the plugin does not record */
    CHECK(v5_event(ctx, 1 << 3 /* ProxyOp */, NULL) == NULL);
    CHECK_EQ_INT(ncclProfiler_v5.record_event_state(NULL, 0, NULL), 0);

    /* the CUPTI side: NCCL's cuLaunchKernelEx inside the bracket, and its kernel */
    struct prof_store st;
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    synth_event(&st, PROF_EV_DRIVER, 50, 100);
    struct prof_event *x = synth_event(&st, PROF_EV_EXT_CORR, 50, 0);
    x->u.ext.kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    x->u.ext.id = id;
    add_kernel(&st, 50, 7, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    add_kernel(&st, 51, 7, "gemm");
    prof_nccl_deactivate(l);
    CHECK_EQ_INT(mask, 0); /* NCCL is told to stop calling */

    struct prof_join j;
    CHECK_EQ_INT(prof_join_build(&j, &st, l), 0);
    CHECK_EQ_INT(j.nccl_exact, 1);
    CHECK_EQ_INT(j.nccl_by_order, 0);
    CHECK_EQ_INT(j.n_units, 1);
    CHECK(prof_join_unit(&j, 3) == NULL);
    const struct prof_nccl_unit *u = prof_join_unit(&j, 2);
    CHECK(u != NULL);
    if (u) {
        struct prof_coll c;
        prof_join_coll(&j, u, &c);
        CHECK_STREQ(c.name, "allreduce_coalesced");
        CHECK_EQ_INT(c.n_ops, 2);
        CHECK_EQ_INT(c.in_nelems, 1500);
        CHECK_EQ_INT(c.out_nelems, 1500);
        CHECK_EQ_INT(c.group_size, 4);
        CHECK_EQ_INT(c.rank, 2);
        CHECK_EQ_INT(c.comm_id, 0xabcdef0123456789ull);
        CHECK_STREQ(c.comm_name, "tp");
        CHECK_STREQ(c.dtype, "Float");
        CHECK_STREQ(c.nccl_dtype, "ncclFloat32");
        CHECK_EQ_INT(c.seq, 10);
        CHECK_STREQ(c.algo, "RING");
        CHECK_STREQ(c.proto, "LL");
        CHECK_EQ_INT(c.n_channels, 4);
        CHECK_EQ_INT(c.root, -1);
    }
    prof_join_release(&j);
    prof_store_release(&st);
    prof_nccl_reset(l);
}

/* v5 point-to-point: P2pApi (stream, count) and its P2p task (peer). */
TEST(prof_nccl_v5_send_keeps_its_peer)
{
    struct prof_nccl_log *l = start_log();
    void *ctx = NULL;
    int mask = 0;
    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, 0x99, &mask, "pp", 1, 4, 1, NULL), 0);
    void *group = v5_event(ctx, PROF_NCCL_GROUP_API, NULL);
    struct prof_nccl_descr_v5 d;
    void *api = NULL, *task = NULL;
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_P2P_API;
    d.parent = group;
    d.p2p_api.func = "Send";
    d.p2p_api.count = 256;
    d.p2p_api.datatype = "ncclFloat16";
    d.p2p_api.stream = (void *)0x55;
    CHECK_EQ_INT(ncclProfiler_v5.start_event(ctx, &api, &d), 0);
    ncclProfiler_v5.stop_event(api);
    void *launch = v5_event(ctx, PROF_NCCL_KERNEL_LAUNCH, group);
    uint64_t id = synth_cupti_log()->last_pushed;
    ncclProfiler_v5.stop_event(launch);
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_P2P;
    d.parent = api;
    d.p2p.p.func = "Send";
    d.p2p.p.count = 256;
    d.p2p.p.datatype = "ncclFloat16";
    d.p2p.p.peer = 2;
    d.p2p.p.n_channels = 2;
    CHECK_EQ_INT(ncclProfiler_v5.start_event(ctx, &task, &d), 0);
    ncclProfiler_v5.stop_event(task);
    ncclProfiler_v5.stop_event(group);
    const struct prof_nccl_rec *r = prof_nccl_get(l, (uint64_t)(uintptr_t)api - 1);
    CHECK(r && r->kind == PROF_NCCL_K_P2P_API && r->stream == 0x55 && r->count == 256);
    prof_nccl_deactivate(l);

    struct prof_store st;
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    struct prof_event *x = synth_event(&st, PROF_EV_EXT_CORR, 60, 0);
    x->u.ext.kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    x->u.ext.id = id;
    add_kernel(&st, 60, 5, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
    struct prof_join j;
    CHECK_EQ_INT(prof_join_build(&j, &st, l), 0);
    CHECK_EQ_INT(j.nccl_exact, 1);
    const struct prof_nccl_unit *u = prof_join_unit(&j, 1);
    CHECK(u != NULL);
    if (u) {
        struct prof_coll c;
        prof_join_coll(&j, u, &c);
        CHECK_STREQ(c.name, "send");
        CHECK_EQ_INT(c.peer, 2);
        CHECK_EQ_INT(c.in_nelems, 256);
        CHECK_STREQ(c.dtype, "Half");
        CHECK_EQ_INT(c.n_channels, 2);
        CHECK_EQ_INT(c.seq, -1);
    }
    prof_join_release(&j);
    prof_store_release(&st);
    prof_nccl_reset(l);
}

static void *v4_event(void *ctx, uint8_t type, void *parent, const char *func, size_t count,
                      uint64_t seq, int peer)
{
    struct prof_nccl_descr_v4 d;
    void *h = NULL;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.parent = parent;
    if (type == PROF_NCCL_COLL) {
        d.coll.seq = seq;
        d.coll.func = func;
        d.coll.count = count;
        d.coll.datatype = "ncclBfloat16";
        d.coll.algo = "TREE";
        d.coll.proto = "SIMPLE";
    } else if (type == PROF_NCCL_P2P) {
        d.p2p.func = func;
        d.p2p.count = count;
        d.p2p.datatype = "ncclBfloat16";
        d.p2p.peer = peer;
    }
    CHECK_EQ_INT(ncclProfiler_v4.start_event(ctx, &h, &d), 0);
    return h;
}

/* NCCL 2.27: no launch events; plans are matched to NCCL kernels by order,
 * checked against the collective the kernel name names. */
TEST(prof_nccl_v4_joins_by_order)
{
    struct prof_nccl_log *l = start_log();
    void *ctx = NULL;
    int mask = 0;
    CHECK_EQ_INT(ncclProfiler_v4.init(&ctx, &mask, NULL, 0x55, 2, 8, 5, NULL), 0);
    CHECK(mask & PROF_NCCL_COLL);
    CHECK(!(mask & PROF_NCCL_KERNEL_LAUNCH));
    void *p1 = v4_event(ctx, PROF_NCCL_GROUP, NULL, NULL, 0, 0, -1);
    ncclProfiler_v4.stop_event(v4_event(ctx, PROF_NCCL_COLL, p1, "AllGather", 100, 3, -1));
    void *p2 = v4_event(ctx, PROF_NCCL_GROUP, NULL, NULL, 0, 0, -1);
    ncclProfiler_v4.stop_event(v4_event(ctx, PROF_NCCL_COLL, p2, "ReduceScatter", 40, 4, -1));
    void *p3 = v4_event(ctx, PROF_NCCL_GROUP, NULL, NULL, 0, 0, -1);
    ncclProfiler_v4.stop_event(v4_event(ctx, PROF_NCCL_P2P, p3, "Send", 64, 0, 6));
    CHECK_EQ_INT(synth_cupti_log()->pushes, 0);
    prof_nccl_deactivate(l);

    struct prof_store st;
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    /* stored out of order; the join orders them by correlation id */
    add_kernel(&st, 12, 9, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL");
    add_kernel(&st, 11, 9, "ncclDevKernel_AllGather_RING_LL");
    add_kernel(&st, 13, 9, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
    add_kernel(&st, 14, 9, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"); /* nothing left to match */
    struct prof_join j;
    CHECK_EQ_INT(prof_join_build(&j, &st, l), 0);
    CHECK_EQ_INT(j.nccl_exact, 0);
    CHECK_EQ_INT(j.nccl_by_order, 3);
    CHECK_EQ_INT(j.nccl_kernels_unmatched, 1);
    struct prof_coll c;
    const struct prof_nccl_unit *u = prof_join_unit(&j, 1);
    CHECK(u != NULL);
    if (u) {
        prof_join_coll(&j, u, &c);
        CHECK_STREQ(c.name, "allgather");
        CHECK_EQ_INT(c.in_nelems, 100);
        CHECK_EQ_INT(c.out_nelems, 800);
        CHECK_EQ_INT(c.seq, 3);
        CHECK_STREQ(c.dtype, "BFloat16");
        CHECK_STREQ(c.algo, "TREE");
    }
    if ((u = prof_join_unit(&j, 0))) {
        prof_join_coll(&j, u, &c);
        CHECK_STREQ(c.name, "reduce_scatter");
        CHECK_EQ_INT(c.in_nelems, 320);
        CHECK_EQ_INT(c.out_nelems, 40);
    }
    CHECK(u != NULL);
    if ((u = prof_join_unit(&j, 2))) {
        prof_join_coll(&j, u, &c);
        CHECK_STREQ(c.name, "send");
        CHECK_EQ_INT(c.peer, 6);
        CHECK_EQ_INT(c.in_nelems, 64);
    }
    CHECK(u != NULL);
    CHECK(prof_join_unit(&j, 3) == NULL);
    prof_join_release(&j);
    prof_store_release(&st);
    prof_nccl_reset(l);
}

/* Two communicators on two streams, launches interleaved, kernels named
 * generically: the first kernel on a stream binds it to a communicator. */
TEST(prof_nccl_order_join_binds_streams)
{
    struct prof_nccl_log *l = start_log();
    void *a = NULL, *b = NULL;
    int mask = 0;
    CHECK_EQ_INT(ncclProfiler_v4.init(&a, &mask, "dp", 0xa, 1, 2, 0, NULL), 0);
    CHECK_EQ_INT(ncclProfiler_v4.init(&b, &mask, "tp", 0xb, 1, 4, 1, NULL), 0);
    void *ctx[4] = {a, b, a, b};
    size_t counts[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) {
        void *p = v4_event(ctx[i], PROF_NCCL_GROUP, NULL, NULL, 0, 0, -1);
        ncclProfiler_v4.stop_event(v4_event(ctx[i], PROF_NCCL_COLL, p, "AllReduce", counts[i], (uint64_t)i / 2, -1));
    }
    prof_nccl_deactivate(l);
    struct prof_store st;
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    add_kernel(&st, 1, 7, "ncclDevKernel_Generic");
    add_kernel(&st, 2, 9, "ncclDevKernel_Generic");
    add_kernel(&st, 4, 9, "ncclDevKernel_Generic");
    add_kernel(&st, 3, 7, "ncclDevKernel_Generic");
    struct prof_join j;
    CHECK_EQ_INT(prof_join_build(&j, &st, l), 0);
    CHECK_EQ_INT(j.nccl_by_order, 4);
    int64_t expect[4] = {1, 2, 4, 3};
    for (size_t k = 0; k < 4; k++) {
        const struct prof_nccl_unit *u = prof_join_unit(&j, k);
        CHECK(u != NULL);
        if (!u)
            continue;
        struct prof_coll c;
        prof_join_coll(&j, u, &c);
        CHECK_EQ_INT(c.in_nelems, expect[k]);
        CHECK_EQ_INT(c.comm_id, expect[k] % 2 ? 0xa : 0xb);
    }
    prof_join_release(&j);
    prof_store_release(&st);
    prof_nccl_reset(l);
}

TEST(prof_nccl_inactive_plugin_asks_for_nothing)
{
    struct prof_nccl_log *l = prof_nccl();
    prof_nccl_reset(l);
    prof_nccl_mark_injected(l); /* else it would report the missing injection */
    void *ctx = (void *)1;
    int mask = -1;
    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, 1, &mask, "x", 1, 2, 0, NULL), 0);
    CHECK_EQ_INT(mask, 0);
    CHECK(ctx == NULL);
    CHECK(v5_event(ctx, PROF_NCCL_GROUP_API, NULL) == NULL);
    CHECK_EQ_INT(ncclProfiler_v5.stop_event(NULL), 0);
    CHECK_EQ_INT(ncclProfiler_v5.finalize(NULL), 0);
    CHECK_EQ_INT(l->n, 0);
}

TEST(prof_nccl_log_drops_old_chunks_keeping_numbers)
{
    struct prof_nccl_log *l = start_log();
    void *ctx = NULL;
    int mask;
    CHECK_EQ_INT(ncclProfiler_v4.init(&ctx, &mask, "x", 1, 1, 2, 0, NULL), 0);
    void *last = NULL;
    for (int i = 0; i < 3 * PROF_NCCL_CHUNK; i++) {
        last = v4_event(ctx, PROF_NCCL_GROUP, NULL, NULL, 0, 0, -1);
        if (i < 2 * PROF_NCCL_CHUNK)
            prof_nccl_get(l, (uint64_t)(uintptr_t)last - 1)->start = 5; /* old */
    }
    prof_nccl_drop_before(l, 10);
    CHECK_EQ_INT(l->first_chunk, 2);
    CHECK(prof_nccl_get(l, 0) == NULL);
    CHECK(prof_nccl_get(l, 2 * PROF_NCCL_CHUNK - 1) == NULL);
    CHECK(prof_nccl_get(l, 2 * PROF_NCCL_CHUNK) != NULL);
    CHECK_EQ_INT(prof_nccl_get(l, (uint64_t)(uintptr_t)last - 1)->number, 3 * PROF_NCCL_CHUNK - 1);
    ncclProfiler_v4.stop_event(last); /* handles stay valid */
    CHECK(prof_nccl_get(l, (uint64_t)(uintptr_t)last - 1)->end != 0);
    /* the newest chunk is never dropped */
    prof_nccl_drop_before(l, UINT64_MAX);
    CHECK(prof_nccl_get(l, (uint64_t)(uintptr_t)last - 1) != NULL);
    prof_nccl_reset(l);
}

TEST(prof_nccl_names)
{
    CHECK_STREQ(prof_nccl_c10d_name("AllReduce"), "allreduce");
    CHECK_STREQ(prof_nccl_c10d_name("ReduceScatter"), "reduce_scatter");
    CHECK_STREQ(prof_nccl_c10d_name("AlltoAll"), "all_to_all");
    CHECK(prof_nccl_c10d_name("Bogus") == NULL);
    CHECK(prof_nccl_c10d_name(NULL) == NULL);
    CHECK_STREQ(prof_nccl_c10d_dtype("ncclBfloat16"), "BFloat16");
    CHECK_STREQ(prof_nccl_c10d_dtype("ncclFloat16"), "Half");
    CHECK(prof_nccl_c10d_dtype("Unknown") == NULL);
    CHECK_STREQ(prof_nccl_c10d_dtype("ncclFloat8e4m3"), "Float8_e4m3fn");
    CHECK(prof_is_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"));
    CHECK(!prof_is_nccl_kernel("gemm"));
    char v[32];
    CHECK(prof_nccl_library_version(v, sizeof v) == NULL); /* no NCCL in this process */
}

TEST(prof_nccl_rooted_collective_keeps_its_root)
{
    struct prof_nccl_log *l = start_log();
    void *ctx = NULL;
    int mask;
    CHECK_EQ_INT(ncclProfiler_v4.init(&ctx, &mask, "pp", 0x77, 1, 4, 0, NULL), 0);
    void *p = v4_event(ctx, PROF_NCCL_GROUP, NULL, NULL, 0, 0, -1);
    struct prof_nccl_descr_v4 d;
    void *h = NULL;
    memset(&d, 0, sizeof d);
    d.type = PROF_NCCL_COLL;
    d.parent = p;
    d.coll.func = "Broadcast";
    d.coll.count = 9;
    d.coll.root = 2;
    d.coll.datatype = "ncclInt64";
    CHECK_EQ_INT(ncclProfiler_v4.start_event(ctx, &h, &d), 0);
    prof_nccl_deactivate(l);
    struct prof_store st;
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    add_kernel(&st, 3, 9, "ncclDevKernel_Broadcast_RING_LL");
    struct prof_join j;
    CHECK_EQ_INT(prof_join_build(&j, &st, l), 0);
    const struct prof_nccl_unit *u = prof_join_unit(&j, 0);
    CHECK(u != NULL);
    if (u) {
        struct prof_coll c;
        prof_join_coll(&j, u, &c);
        CHECK_STREQ(c.name, "broadcast");
        CHECK_EQ_INT(c.root, 2);
        CHECK_STREQ(c.dtype, "Long");
        CHECK_EQ_INT(c.in_nelems, 9);
    }
    prof_join_release(&j);
    prof_store_release(&st);
    prof_nccl_reset(l);
}
