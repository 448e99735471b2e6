/* profiler/tests/test_convert.c: CUPTI records -> events, for the CUDA 12
 * and 13 layouts, stepped with the real cuptiActivityGetNextRecord and with
 * an iterator that steps like CUDA 12's libcupti. */
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "profiler/convert.h"
#include "profiler/event.h"
#include "profiler/layout.h"
#include "profiler/store.h"
#include "profiler/tests/synth.h"
#include "tests/check.h"
#include "common/banned.h"

_Static_assert(sizeof(struct prof_event) == 88, "an event is 88 bytes");

static const char *kname = "void gemm<float>(float const*, float*)";

/* One record of every converted kind, plus one the converter skips. */
static void fill(struct synth_buf *b)
{
    synth_device(b, 0, "NVIDIA H100 80GB HBM3", 132, 85ull << 30, 9, 0);
    synth_context(b, 1, 0);
    synth_api(b, 1, 211, 1000, 1010, 42, 43, 7);
    synth_ext(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 555, 7);
    synth_kernel(b, 2000, 2500, 7, 0, 1, 13, kname);
    synth_memcpy(b, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 2600, 2700, 0, 1, 13, 8);
    synth_p2p(b, 1 << 20, 2800, 2900, 0, 14, 9, 0, 1);
    synth_memset(b, 512, 3000, 3010, 0, 1, 13, 10);
    synth_cuda_event(b, 11, 1, 13, 3, 0, 3100, 77);
    synth_sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 3200, 3201, 12, 1, 14, 3, 77);
    synth_marker(b, CUPTI_ACTIVITY_FLAG_MARKER_START, 900, 5, 42, 43, "ProfilerStep#3");
    synth_marker(b, CUPTI_ACTIVITY_FLAG_MARKER_END, 4000, 5, 42, 43, NULL);
    synth_overhead(b, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 4100, 4200, 42, 44);
    synth_other(b);
    synth_api(b, 0, 652, 5000, 5005, 42, 43, 13);
}

static const struct prof_event *find(const struct prof_store *s, int type)
{
    for (size_t i = 0; i < s->n; i++)
        if (prof_store_at(s, i)->type == type)
            return prof_store_at(s, i);
    return NULL;
}

static void check_common(const struct prof_store *s, const struct prof_convert *c)
{
    const struct prof_event *e;
    CHECK_EQ_INT(c->records, 15);
    CHECK_EQ_INT(c->skipped, 1);
    CHECK_EQ_INT(s->n, 12); /* device and context go to side tables */
    CHECK_EQ_INT(s->n_devices, 1);
    CHECK_STREQ(prof_store_str(s, s->devices[0].name), "NVIDIA H100 80GB HBM3");
    CHECK_EQ_INT(s->devices[0].sms, 132);
    CHECK_EQ_INT(s->devices[0].major, 9);
    CHECK_EQ_INT(s->devices[0].global_mem, 85ull << 30);
    CHECK_EQ_INT(s->n_contexts, 1);
    CHECK_EQ_INT(s->contexts[0].id, 1);
    CHECK_EQ_INT(s->contexts[0].device, 0);

    CHECK((e = find(s, PROF_EV_RUNTIME)) != NULL);
    CHECK_STREQ(prof_store_str(s, e->name), "cudaLaunchKernel");
    CHECK_EQ_INT(e->at.cpu.pid, 42);
    CHECK_EQ_INT(e->at.cpu.tid, 43);
    CHECK_EQ_INT(e->at.cpu.cbid, 211);
    CHECK_EQ_INT(e->corr, 7);
    CHECK((e = find(s, PROF_EV_DRIVER)) != NULL);
    CHECK_STREQ(prof_store_str(s, e->name), "cuLaunchKernelEx");

    CHECK((e = find(s, PROF_EV_KERNEL)) != NULL);
    CHECK_STREQ(prof_store_str(s, e->name), kname);
    CHECK_EQ_INT(e->start, 2000);
    CHECK_EQ_INT(e->end, 2500);
    CHECK_EQ_INT(e->corr, 7);
    CHECK_EQ_INT(e->at.gpu.stream, 13);
    CHECK_EQ_INT(e->at.gpu.context, 1);
    CHECK_EQ_INT(e->u.kernel.grid[0], 108);
    CHECK_EQ_INT(e->u.kernel.block[0], 256);
    CHECK_EQ_INT(e->u.kernel.registers, 32);
    CHECK_EQ_INT(e->u.kernel.shared_mem, 3072);
    CHECK_EQ_INT(e->flags & PROF_F_DEVICE_LAUNCHED, 0);

    CHECK((e = find(s, PROF_EV_MEMCPY)) != NULL);
    CHECK_EQ_INT(e->sub, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    CHECK_EQ_INT(e->u.copy.bytes, 4096);
    CHECK_EQ_INT(e->u.copy.src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    CHECK_EQ_INT(e->corr, 8);
    CHECK_EQ_INT(e->flags & PROF_F_P2P, 0);
    for (size_t i = 0; i < s->n; i++) {
        e = prof_store_at(s, i);
        if (e->type == PROF_EV_MEMCPY && (e->flags & PROF_F_P2P)) {
            CHECK_EQ_INT(e->u.copy.bytes, 1 << 20);
            CHECK_EQ_INT(e->u.copy.src_device, 0);
            CHECK_EQ_INT(e->u.copy.dst_device, 1);
            CHECK_EQ_INT(e->u.copy.dst_context, 2);
            CHECK_EQ_INT(e->at.gpu.stream, 14);
            CHECK_EQ_INT(e->sub, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
            CHECK_EQ_INT(e->corr, 9);
        }
    }
    CHECK((e = find(s, PROF_EV_MEMSET)) != NULL);
    CHECK_EQ_INT(e->u.copy.bytes, 512);
    CHECK_EQ_INT(e->u.copy.dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);

    CHECK((e = find(s, PROF_EV_CUDA_EVENT)) != NULL);
    CHECK_EQ_INT(e->corr, 11);
    CHECK_EQ_INT(e->at.gpu.stream, 13);
    CHECK_EQ_INT(e->u.sync.event_id, 3);
    CHECK((e = find(s, PROF_EV_SYNC)) != NULL);
    CHECK_EQ_INT(e->sub, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
    CHECK_EQ_INT(e->at.gpu.stream, 14);
    CHECK_EQ_INT(e->u.sync.event_id, 3);
    CHECK_EQ_INT(e->start, 3200);

    CHECK((e = find(s, PROF_EV_EXT_CORR)) != NULL);
    CHECK_EQ_INT(e->u.ext.kind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
    CHECK_EQ_INT(e->u.ext.id, 555);
    CHECK_EQ_INT(e->corr, 7);
    CHECK((e = find(s, PROF_EV_MARKER)) != NULL);
    CHECK_EQ_INT(e->sub, PROF_MARK_START);
    CHECK_STREQ(prof_store_str(s, e->name), "ProfilerStep#3");
    CHECK_EQ_INT(e->at.cpu.tid, 43);
    CHECK((e = find(s, PROF_EV_OVERHEAD)) != NULL);
    CHECK_EQ_INT(e->u.overhead.kind, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
    CHECK_EQ_INT(e->at.cpu.tid, 44);
}

/* Convert fill()'s records in layout `version`, walked by the real
 * iterator (real) or CUDA 12's stepping. */
static void convert(uint32_t version, int real, struct prof_store *s, struct prof_convert *c,
                    struct prof_layout *l)
{
    struct synth_buf b;
    prof_next_record_fn next = synth_next_record;
    CHECK_EQ_INT(prof_layout_for_version(version, l), 0);
    if (real)
        next = synth_real_cupti()->get_next_record;
    synth_set_layout(l);
    synth_init(&b, l, real);
    fill(&b);
    CHECK_EQ_INT(prof_store_init(s, 0), 0);
    prof_convert_init(c, l, s, synth_real_cupti()->get_callback_name);
    CHECK_EQ_INT(prof_convert_buffer(c, next, b.p, b.len), 15);
    synth_release(&b);
}

TEST(prof_convert_cuda13_records_real_iterator)
{
    struct prof_store s;
    struct prof_convert c;
    struct prof_layout l;
    convert(130001, 1, &s, &c, &l);
    check_common(&s, &c);
    const struct prof_event *e = find(&s, PROF_EV_CUDA_EVENT);
    CHECK(e && (e->flags & PROF_F_HAS_SYNC_ID) && e->u.sync.sync_id == 77);
    CHECK(e && (e->flags & PROF_F_HAS_DEVICE) && e->u.sync.device_ts == 3100);
    e = find(&s, PROF_EV_SYNC);
    CHECK(e && (e->flags & PROF_F_HAS_SYNC_ID) && e->u.sync.sync_id == 77);
    prof_store_release(&s);
}

/* CUDA 12.4 records inside the 13.0-sized slots the real iterator steps by:
 * the bytes past each 12.4 record are poison and must not be read. */
TEST(prof_convert_cuda12_records_real_iterator)
{
    struct prof_store s;
    struct prof_convert c;
    struct prof_layout l;
    convert(22, 1, &s, &c, &l);
    check_common(&s, &c);
    const struct prof_event *e = find(&s, PROF_EV_CUDA_EVENT);
    CHECK(e && !(e->flags & (PROF_F_HAS_SYNC_ID | PROF_F_HAS_DEVICE)) && e->u.sync.device_ts == 0);
    CHECK(e && e->at.gpu.device == PROF_INVALID);
    e = find(&s, PROF_EV_SYNC);
    CHECK(e && !(e->flags & PROF_F_HAS_SYNC_ID));
    prof_store_release(&s);
}

/* CUDA 12.4 and 12.8 buffers packed as their libcupti packs them. */
TEST(prof_convert_cuda12_records_cuda12_stepping)
{
    struct prof_store s;
    struct prof_convert c;
    struct prof_layout l;
    convert(24, 0, &s, &c, &l);
    check_common(&s, &c);
    CHECK(!(find(&s, PROF_EV_SYNC)->flags & PROF_F_HAS_SYNC_ID));
    prof_store_release(&s);
    convert(28, 0, &s, &c, &l); /* 12.9: Synchronization2, CudaEvent2 */
    check_common(&s, &c);
    CHECK(find(&s, PROF_EV_SYNC)->flags & PROF_F_HAS_SYNC_ID);
    CHECK_EQ_INT(find(&s, PROF_EV_CUDA_EVENT)->u.sync.device_ts, 3100);
    prof_store_release(&s);
}

TEST(prof_convert_edge_records)
{
    struct prof_layout l;
    struct prof_store s;
    struct prof_convert c;
    struct synth_buf b;
    CHECK_EQ_INT(prof_layout_for_version(130001, &l), 0);
    synth_set_layout(&l);
    synth_init(&b, &l, 0);
    /* flushed before it completed */
    synth_kernel(&b, 0, 0, 20, 0, 1, 13, kname);
    /* the same shared name pointer again */
    synth_kernel(&b, 10, 20, 21, 0, 1, 13, kname);
    /* sync with CUPTI's invalid values */
    synth_sync(&b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 5, 6, 22, 1, PROF_INVALID,
               PROF_INVALID, PROF_INVALID);
    /* an API record whose cbid CUPTI cannot name */
    synth_api(&b, 1, 100000, 1, 2, 3, 4, 23);
    CHECK_EQ_INT(prof_store_init(&s, 0), 0);
    prof_convert_init(&c, &l, &s, synth_real_cupti()->get_callback_name);
    CHECK_EQ_INT(prof_convert_buffer(&c, synth_next_record, b.p, b.len), 4);
    CHECK_EQ_INT(s.n, 4);
    CHECK_EQ_INT(prof_store_at(&s, 0)->start, 0);
    CHECK_EQ_INT(prof_store_at(&s, 0)->name, prof_store_at(&s, 1)->name);
    const struct prof_event *y = prof_store_at(&s, 2);
    CHECK_EQ_INT(y->at.gpu.stream, PROF_INVALID);
    CHECK_EQ_INT(y->u.sync.event_id, PROF_INVALID);
    CHECK(!(y->flags & PROF_F_HAS_SYNC_ID));
    CHECK_STREQ(prof_store_str(&s, prof_store_at(&s, 3)->name), "cuda_runtime_cbid_100000");
    /* an empty or NULL buffer converts nothing */
    CHECK_EQ_INT(prof_convert_buffer(&c, synth_next_record, NULL, 0), 0);
    synth_release(&b);
    prof_store_release(&s);
}

TEST(prof_convert_strips_api_versions)
{
    struct prof_layout l;
    struct prof_store s;
    struct prof_convert c;
    CHECK_EQ_INT(prof_layout_for_version(130001, &l), 0);
    CHECK_EQ_INT(prof_store_init(&s, 0), 0);
    prof_convert_init(&c, &l, &s, synth_real_cupti()->get_callback_name);
    CHECK_STREQ(prof_store_str(&s, prof_convert_api_name(&c, 1, 211)), "cudaLaunchKernel");
    CHECK_STREQ(prof_store_str(&s, prof_convert_api_name(&c, 1, 214)), "cudaLaunchKernel_ptsz");
    CHECK_STREQ(prof_store_str(&s, prof_convert_api_name(&c, 1, 147)), "cudaStreamWaitEvent");
    CHECK_STREQ(prof_store_str(&s, prof_convert_api_name(&c, 0, 652)), "cuLaunchKernelEx");
    /* cached: the same id again */
    CHECK_EQ_INT(prof_convert_api_name(&c, 1, 211), prof_convert_api_name(&c, 1, 211));
    prof_store_release(&s);
}

TEST(prof_convert_counts_drops_over_the_cap)
{
    struct prof_layout l;
    struct prof_store s;
    struct prof_convert c;
    struct synth_buf b;
    CHECK_EQ_INT(prof_layout_for_version(130001, &l), 0);
    synth_set_layout(&l);
    synth_init(&b, &l, 0);
    for (int i = 0; i < 20000; i++)
        synth_kernel(&b, 10, 20, (uint32_t)i + 1, 0, 1, 13, kname);
    /* room for one chunk of events only */
    CHECK_EQ_INT(prof_store_init(&s, PROF_CHUNK_EVENTS * sizeof(struct prof_event) + 65536), 0);
    prof_convert_init(&c, &l, &s, NULL);
    CHECK_EQ_INT(prof_convert_buffer(&c, synth_next_record, b.p, b.len), 20000);
    CHECK_EQ_INT(s.n, PROF_CHUNK_EVENTS);
    CHECK_EQ_INT(c.dropped, 20000 - PROF_CHUNK_EVENTS);
    CHECK_EQ_INT(s.dropped, 20000 - PROF_CHUNK_EVENTS);
    CHECK(s.bytes <= s.max_bytes);
    synth_release(&b);
    prof_store_release(&s);
}

/* What CUPTI 13 hands over to be freed (a device's name, an overhead
 * record's details) goes through the same free whether the record is kept
 * or dropped for want of room (a sanitized build reports a double or
 * invalid free). */
TEST(prof_convert_frees_what_cupti_hands_over_when_full)
{
    struct prof_layout l;
    struct prof_store s;
    struct prof_convert c;
    struct synth_buf b;
    CHECK_EQ_INT(prof_layout_for_version(130001, &l), 0);
    synth_set_layout(&l);
    synth_init(&b, &l, 0);
    synth_device(&b, 0, "NVIDIA H100 80GB HBM3", 132, 85ull << 30, 9, 0);
    synth_overhead(&b, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 10, 20, 42, 44);
    synth_overhead(&b, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 30, 40, 42, 44);
    /* no room for a chunk of events: every event is dropped */
    CHECK_EQ_INT(prof_store_init(&s, 65536), 0);
    prof_convert_init(&c, &l, &s, NULL);
    CHECK_EQ_INT(prof_convert_buffer(&c, synth_next_record, b.p, b.len), 3);
    CHECK_EQ_INT(s.n, 0);
    CHECK_EQ_INT(s.dropped, 2);
    CHECK_EQ_INT(s.n_devices, 1);
    CHECK_STREQ(prof_store_str(&s, s.devices[0].name), "NVIDIA H100 80GB HBM3");
    synth_release(&b);
    prof_store_release(&s);
}
