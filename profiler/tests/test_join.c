/* profiler/tests/test_join.c: the write-time joins (launch calls, devices,
 * the cudaEventRecord a wait waits on) and step finding. */
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "profiler/join.h"
#include "profiler/steps.h"
#include "profiler/store.h"
#include "profiler/tests/synth.h"
#include "tests/check.h"
#include "common/banned.h"

static struct prof_event *record(struct prof_store *s, uint32_t corr, uint32_t ctx, uint32_t event,
                                 uint32_t stream, uint64_t sync_id)
{
    struct prof_event *e = synth_event(s, PROF_EV_CUDA_EVENT, corr, 0);
    e->at.gpu.context = ctx;
    e->at.gpu.stream = stream;
    e->u.sync.event_id = event;
    if (sync_id) {
        e->u.sync.sync_id = sync_id;
        e->flags |= PROF_F_HAS_SYNC_ID;
    }
    return e;
}

static struct prof_event wait_on(uint32_t corr, uint32_t ctx, uint32_t event, uint64_t sync_id)
{
    struct prof_event w;
    memset(&w, 0, sizeof w);
    w.type = PROF_EV_SYNC;
    w.sub = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
    w.corr = corr;
    w.at.gpu.context = ctx;
    w.u.sync.event_id = event;
    if (sync_id) {
        w.u.sync.sync_id = sync_id;
        w.flags |= PROF_F_HAS_SYNC_ID;
    }
    return w;
}

TEST(prof_join_finds_the_event_record_waited_on)
{
    struct prof_store st;
    struct prof_join j;
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    /* event 3 of context 1 recorded twice (reused), on streams 5 then 6 */
    record(&st, 20, 1, 3, 6, 0);
    record(&st, 10, 1, 3, 5, 0);
    record(&st, 12, 2, 3, 8, 0); /* same event id, another context */
    record(&st, 30, 1, 4, 9, 1001);
    record(&st, 40, 1, 4, 10, 1002);
    CHECK_EQ_INT(prof_join_build(&j, &st, NULL), 0);
    struct prof_event w = wait_on(15, 1, 3, 0);
    const struct prof_event *r = prof_join_wait(&j, &w);
    CHECK(r && r->at.gpu.stream == 5 && r->corr == 10);
    w = wait_on(25, 1, 3, 0);
    r = prof_join_wait(&j, &w);
    CHECK(r && r->at.gpu.stream == 6);
    w = wait_on(5, 1, 3, 0); /* before any record of it */
    CHECK(prof_join_wait(&j, &w) == NULL);
    w = wait_on(15, 2, 3, 0);
    r = prof_join_wait(&j, &w);
    CHECK(r && r->at.gpu.stream == 8);
    w = wait_on(15, 3, 3, 0); /* unknown context */
    CHECK(prof_join_wait(&j, &w) == NULL);
    /* cudaEventSyncId wins over correlation order (12.8+) */
    w = wait_on(50, 1, 4, 1001);
    r = prof_join_wait(&j, &w);
    CHECK(r && r->at.gpu.stream == 9);
    w = wait_on(50, 1, 4, 0);
    r = prof_join_wait(&j, &w);
    CHECK(r && r->at.gpu.stream == 10);
    w = wait_on(50, 1, PROF_INVALID, 0);
    CHECK(prof_join_wait(&j, &w) == NULL);
    prof_join_release(&j);
    prof_store_release(&st);
}

TEST(prof_join_launches_and_devices)
{
    struct prof_store st;
    struct prof_join j;
    struct prof_context ctx = {4, 2};
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    CHECK_EQ_INT(prof_store_put_context(&st, &ctx), 0);
    synth_event(&st, PROF_EV_DRIVER, 7, 100);
    synth_event(&st, PROF_EV_RUNTIME, 7, 90);
    synth_event(&st, PROF_EV_DRIVER, 8, 95);
    struct prof_event *k = synth_event(&st, PROF_EV_KERNEL, 8, 200);
    k->at.gpu.context = 5;
    k->at.gpu.device = 1;
    struct prof_event *x = synth_event(&st, PROF_EV_EXT_CORR, 7, 0);
    x->u.ext.kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    x->u.ext.id = 99;
    CHECK_EQ_INT(prof_join_build(&j, &st, NULL), 0);
    CHECK(prof_join_launch(&j, 7) && prof_join_launch(&j, 7)->type == PROF_EV_RUNTIME);
    CHECK(prof_join_launch(&j, 8) && prof_join_launch(&j, 8)->type == PROF_EV_DRIVER);
    CHECK(prof_join_launch(&j, 9) == NULL);
    CHECK(prof_join_launch(&j, 0) == NULL);
    CHECK_EQ_INT(prof_join_device(&j, 4), 2);
    CHECK_EQ_INT(prof_join_device(&j, 5), 1);
    CHECK_EQ_INT(prof_join_device(&j, 6), PROF_INVALID);
    uint64_t v;
    CHECK(prof_map_get(&j.ext, 7, &v) && v == 99);
    prof_join_release(&j);
    prof_store_release(&st);
}

static void marker(struct prof_store *s, int sub, uint64_t ts, uint32_t id, const char *name)
{
    struct prof_event *e = synth_event(s, PROF_EV_MARKER, 0, ts);
    e->sub = (uint8_t)sub;
    e->end = ts;
    e->u.marker.id = id;
    e->at.cpu.pid = 10;
    e->at.cpu.tid = 11;
    if (name)
        e->name = prof_store_intern(s, name, strlen(name));
}

TEST(prof_steps_from_nvtx_ranges)
{
    struct prof_store st;
    struct prof_join j;
    struct prof_steps steps;
    struct prof_step_rule rule = {"ProfilerStep#", NULL};
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    marker(&st, PROF_MARK_START, 1000, 1, "ProfilerStep#4");
    marker(&st, PROF_MARK_START, 1100, 2, "forward");
    marker(&st, PROF_MARK_END, 1200, 2, NULL);
    marker(&st, PROF_MARK_END, 2000, 1, NULL);
    marker(&st, PROF_MARK_START, 2000, 3, "ProfilerStep#5");
    marker(&st, PROF_MARK_END, 3000, 3, NULL);
    marker(&st, PROF_MARK_START, 3000, 4, "ProfilerStep#6"); /* the trace ends inside it */
    CHECK_EQ_INT(prof_join_build(&j, &st, NULL), 0);
    CHECK_EQ_INT(prof_steps_find(&st, &j, &rule, &steps), 0);
    CHECK_EQ_INT(steps.n, 3);
    CHECK_EQ_INT(steps.v[0].number, 4);
    CHECK_EQ_INT(steps.v[0].start, 1000);
    CHECK_EQ_INT(steps.v[0].end, 2000);
    CHECK(steps.v[0].complete);
    CHECK_EQ_INT(steps.v[0].tid, 11);
    CHECK_EQ_INT(steps.v[1].number, 5);
    CHECK_EQ_INT(steps.v[2].number, 6);
    CHECK(!steps.v[2].complete);
    prof_steps_release(&steps);

    /* a custom prefix, unnumbered names: ordinals */
    struct prof_step_rule custom = {"train_step", NULL};
    marker(&st, PROF_MARK_START, 5000, 8, "train_step");
    marker(&st, PROF_MARK_END, 6000, 8, NULL);
    marker(&st, PROF_MARK_START, 6000, 9, "train_step");
    CHECK_EQ_INT(prof_steps_find(&st, &j, &custom, &steps), 0);
    CHECK_EQ_INT(steps.n, 2);
    CHECK_EQ_INT(steps.v[0].number, 0);
    CHECK_EQ_INT(steps.v[1].number, 1);
    prof_steps_release(&steps);
    int64_t n;
    CHECK(prof_step_marker_match(&rule, "ProfilerStep#12", &n) && n == 12);
    CHECK(prof_step_marker_match(&rule, "ProfilerStep#x", &n) && n == -1);
    CHECK(!prof_step_marker_match(&rule, "Profiler", &n));
    prof_join_release(&j);
    prof_store_release(&st);
}

TEST(prof_steps_from_a_boundary_kernel)
{
    struct prof_store st;
    struct prof_join j;
    struct prof_steps steps;
    struct prof_step_rule rule = {"ProfilerStep#", "adam"};
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    uint32_t name = prof_store_intern(&st, "multi_tensor_apply_kernel<adam>", 31);
    uint32_t other = prof_store_intern(&st, "gemm", 4);
    for (uint32_t i = 0; i < 3; i++) {
        struct prof_event *api = synth_event(&st, PROF_EV_RUNTIME, 100 * i + 10, 1000 * (i + 1));
        api->at.cpu.pid = 10;
        api->at.cpu.tid = 12;
        struct prof_event *k = synth_event(&st, PROF_EV_KERNEL, 100 * i + 10, 1000 * (i + 1) + 500);
        k->name = name;
        /* the optimizer's next parameter groups, back to back: the same boundary */
        synth_event(&st, PROF_EV_KERNEL, 100 * i + 11, 1000 * (i + 1) + 550)->name = name;
        synth_event(&st, PROF_EV_KERNEL, 100 * i + 20, 1000 * (i + 1) + 600)->name = other;
    }
    struct prof_event *last = synth_event(&st, PROF_EV_RUNTIME, 30, 3900);
    last->at.cpu.tid = 12;
    last->end = 4100;
    CHECK_EQ_INT(prof_join_build(&j, &st, NULL), 0);
    CHECK_EQ_INT(prof_steps_find(&st, &j, &rule, &steps), 0);
    CHECK_EQ_INT(steps.n, 3);
    CHECK_EQ_INT(steps.v[0].start, 1000);
    CHECK_EQ_INT(steps.v[0].end, 2000);
    CHECK_EQ_INT(steps.v[1].number, 1);
    CHECK_EQ_INT(steps.v[2].start, 3000);
    CHECK_EQ_INT(steps.v[2].end, 4100);
    CHECK_EQ_INT(steps.v[2].tid, 12);
    prof_steps_release(&steps);
    prof_join_release(&j);
    prof_store_release(&st);
}

TEST(prof_step_tracker_follows_steps_while_recording)
{
    struct prof_store st;
    struct prof_step_tracker t;
    struct prof_step_rule rule = {"ProfilerStep#", NULL};
    CHECK_EQ_INT(prof_store_init(&st, 0), 0);
    prof_step_tracker_init(&t, &rule);
    marker(&st, PROF_MARK_START, 1000, 1, "ProfilerStep#7");
    marker(&st, PROF_MARK_END, 2000, 1, NULL);
    marker(&st, PROF_MARK_START, 2000, 2, "other");
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, prof_store_at(&st, 0)), 1);
    CHECK_EQ_INT(t.number, 7);
    CHECK_EQ_INT(t.start, 1000);
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, prof_store_at(&st, 1)), 2);
    CHECK_EQ_INT(t.ended, 7);
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, prof_store_at(&st, 2)), 0);

    struct prof_step_rule krule = {NULL, "adam"};
    prof_step_tracker_init(&t, &krule);
    struct prof_event *k = synth_event(&st, PROF_EV_KERNEL, 40, 5000);
    k->name = prof_store_intern(&st, "adam_kernel", 11);
    struct prof_event *g = synth_event(&st, PROF_EV_KERNEL, 45, 5100);
    g->name = prof_store_intern(&st, "gemm", 4);
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, k), 1);
    CHECK_EQ_INT(t.number, 0);
    CHECK_EQ_INT(t.start_corr, 40);
    k->corr = 41;
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, k), 0); /* back to back: the same boundary */
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, g), 0);
    k->corr = 50;
    CHECK_EQ_INT(prof_step_tracker_feed(&t, &st, k), 1);
    CHECK_EQ_INT(t.number, 1);
    CHECK_EQ_INT(t.ended, 0);
    prof_store_release(&st);
}
