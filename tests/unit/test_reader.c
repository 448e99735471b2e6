/* tests/unit/test_reader.c: the streaming trace reader on every dialect it
 * must read and every kind of bad input it must refuse. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <sys/stat.h>
#include <zlib.h>

#include "model/inspect.h"
#include "model/stream.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static struct model_trace *load_str(const char *json, struct sc_error *err)
{
    struct model_trace *t = NULL;
    model_trace_load_mem(json, strlen(json), "mem.json", NULL, &t, err);
    return t;
}

static struct model_trace *load_fixture(const char *name)
{
    char path[256];
    struct model_trace *t = NULL;
    struct sc_error err;
    snprintf(path, sizeof path, "tests/fixtures/%s", name);
    if (model_trace_load_file(path, NULL, &t, &err))
        fprintf(stderr, "%s\n", err.msg);
    return t;
}

/* The first complete event with this name, or NULL. */
static const struct model_event *find(const struct model_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n_events; i++)
        if (strcmp(model_str(t, t->events[i].name), name) == 0)
            return &t->events[i];
    return NULL;
}

static uint64_t cat_count(const struct model_trace *t, const char *cat)
{
    for (size_t i = 0; i < t->n_cats; i++)
        if (strcmp(model_str(t, t->cats[i].name), cat) == 0)
            return t->cats[i].count;
    return 0;
}

/* ---- what real traces hold -------------------------------------------------------- */

TEST(reader_relative_ts_with_base_time)
{
    struct model_trace *t = load_fixture("cuda_sync.json");
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(t->has_base_time);
    CHECK_EQ_INT(t->base_time_ns, 1727740800000000000ll);
    const struct model_event *e = find(t, "producer_kernel");
    CHECK(e != NULL);
    CHECK_EQ_INT(e->ts, 1727740800000000000ll + 1020000);
    CHECK_EQ_INT(e->dur, 300000);
    CHECK(!t->time_unanchored);
    model_trace_free(t);
}

TEST(reader_absolute_and_fractional_ns_ts)
{
    struct sc_error err;
    /* absolute epoch microseconds with three decimals: 19 digits of ns */
    struct model_trace *t = load_str("{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\","
                                     "\"pid\":1,\"tid\":1,\"ts\":1712195495505772.8,\"dur\":63.813},"
                                     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":1,"
                                     "\"ts\":1712195495505773.0001,\"dur\":1.5e2},"
                                     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c\",\"pid\":1,\"tid\":1,"
                                     "\"ts\":17121954955057.735e2,\"dur\":0.0004}]}",
                                     &err);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK_EQ_INT(find(t, "a")->ts, 1712195495505772800ll);
    CHECK_EQ_INT(find(t, "a")->dur, 63813);
    CHECK_EQ_INT(find(t, "b")->ts, 1712195495505773000ll); /* 0.1 ns rounds away */
    CHECK_EQ_INT(find(t, "b")->dur, 150000);
    CHECK_EQ_INT(find(t, "c")->ts, 1712195495505773500ll);
    CHECK_EQ_INT(find(t, "c")->dur, 0);
    CHECK(!t->has_base_time);
    CHECK(!t->time_unanchored);
    model_trace_free(t);
}

TEST(reader_relative_ts_without_base_is_unanchored)
{
    struct sc_error err;
    struct model_trace *t = load_str("{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\","
                                     "\"pid\":1,\"tid\":1,\"ts\":4458676522690.655,\"dur\":1}]}",
                                     &err);
    CHECK(t != NULL);
    if (t) {
        CHECK(t->time_unanchored);
        struct model_inspect *in;
        CHECK(model_inspect_trace(t, &in, &err) == SC_OK);
        CHECK(in->lacks & MODEL_LACK_TIME_ANCHOR);
        model_inspect_free(in);
    }
    model_trace_free(t);
}

TEST(reader_real_trace_dialects)
{
    /* nccl_data: relative ts + base, ac2g and fwdbwd flows, distributedInfo
     * with pg_config, collective args on record_param_comms and NCCL kernels */
    struct model_trace *t = NULL;
    struct sc_error err;
    const char *path = th_shared_path("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz");
    CHECK(model_trace_load_file(path, NULL, &t, &err) == SC_OK);
    if (!t)
        return;
    CHECK_EQ_INT(t->n_entries, 40573);
    CHECK_EQ_INT(cat_count(t, "ac2g"), 12514);
    CHECK_EQ_INT(cat_count(t, "fwdbwd"), 1086);
    CHECK_EQ_INT(cat_count(t, "kernel"), 2700);
    CHECK_EQ_INT(t->rank, 0);
    CHECK_EQ_INT(t->world_size, 2);
    CHECK_EQ_INT(t->n_pgs, 1);
    CHECK_STREQ(model_str(t, t->pgs[0].desc), "default_pg");
    CHECK_STREQ(model_str(t, t->nccl_version), "2.17.1");
    CHECK_EQ_INT(t->n_devices, 8);
    CHECK_STREQ(model_str(t, t->devices[0].name), "NVIDIA A100-PG509-200");
    CHECK_EQ_INT(t->devices[0].num_sms, 108);
    size_t fwdbwd = 0, launch = 0;
    for (size_t i = 0; i < t->n_flows; i++) {
        fwdbwd += t->flows[i].kind == MODEL_FLOW_FWDBWD;
        launch += t->flows[i].kind == MODEL_FLOW_LAUNCH;
    }
    CHECK_EQ_INT(fwdbwd, 1086);
    CHECK_EQ_INT(launch, 12514);
    /* the all-reduces carry their sizes (the fc layer's bucket: 2,049,000
     * floats), on the kernel and on the op */
    size_t kernel_colls = 0, op_colls = 0, fc_bucket = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const struct model_collective *c = model_event_coll(t, e);
        if (!c)
            continue;
        if (e->kind == MODEL_EV_KERNEL)
            kernel_colls++;
        else if (strcmp(model_str(t, e->name), "record_param_comms") == 0)
            op_colls++;
        fc_bucket += c->in_nelems == 2049000;
        if (kernel_colls == 1 && e->kind == MODEL_EV_KERNEL) {
            CHECK_STREQ(model_str(t, c->name), "allreduce");
            CHECK_EQ_INT(c->group_size, 2);
            CHECK_STREQ(model_str(t, c->dtype), "Float");
            CHECK_STREQ(model_str(t, c->pg_ranks), "[0, 1]");
        }
    }
    CHECK_EQ_INT(kernel_colls, 21);
    CHECK_EQ_INT(op_colls, 27);
    CHECK_EQ_INT(fc_bucket, 6); /* three steps, on the kernel and the op */
    model_trace_free(t);
}

TEST(reader_async_cpu_to_gpu_flows_and_absolute_ts)
{
    struct model_trace *t = NULL;
    struct sc_error err;
    const char *path = th_shared_path("HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz");
    CHECK(model_trace_load_file(path, NULL, &t, &err) == SC_OK);
    if (!t)
        return;
    size_t launch = 0;
    for (size_t i = 0; i < t->n_flows; i++)
        launch += t->flows[i].kind == MODEL_FLOW_LAUNCH;
    CHECK_EQ_INT(launch, 26815 + 9984);
    CHECK_EQ_INT(t->n_steps, 6);
    CHECK(t->first_ts > 1600000000000000000ll); /* absolute epoch ns */
    model_trace_free(t);
}

TEST(reader_sampled_trace_loads_and_reports_what_it_lacks)
{
    struct model_trace *t = NULL;
    struct model_inspect *in = NULL;
    struct sc_error err;
    const char *path = th_shared_path("HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz");
    CHECK(model_trace_load_file(path, NULL, &t, &err) == SC_OK);
    if (!t)
        return;
    CHECK(model_inspect_trace(t, &in, &err) == SC_OK);
    CHECK(in->lacks & MODEL_LACK_FLOWS);
    CHECK(in->lacks & MODEL_LACK_DEVICE_PROPERTIES);
    CHECK(in->lacks & MODEL_LACK_SAMPLED);
    CHECK_EQ_INT(t->n_steps, 2);
    model_inspect_free(in);
    model_trace_free(t);
}

TEST(reader_full_trace_is_not_sampled)
{
    struct model_trace *t = NULL;
    struct model_inspect *in = NULL;
    struct sc_error err;
    const char *path = th_shared_path("HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz");
    CHECK(model_trace_load_file(path, NULL, &t, &err) == SC_OK);
    if (!t)
        return;
    CHECK(model_inspect_trace(t, &in, &err) == SC_OK);
    CHECK(!(in->lacks & MODEL_LACK_SAMPLED));
    CHECK(!(in->lacks & MODEL_LACK_FLOWS));
    CHECK(in->lacks & MODEL_LACK_COLL_SIZES);
    CHECK(in->lacks & MODEL_LACK_CUDA_SYNC);
    model_inspect_free(in);
    model_trace_free(t);
}

TEST(reader_legacy_capitalised_categories)
{
    struct model_trace *t = load_fixture("legacy_caps.json");
    CHECK(t != NULL);
    if (!t)
        return;
    const struct model_event *k = find(t, "volta_sgemm_128x64_nn");
    CHECK(k && k->kind == MODEL_EV_KERNEL);
    CHECK(find(t, "aten::mm")->kind == MODEL_EV_CPU_OP);
    CHECK(find(t, "cudaLaunchKernel")->kind == MODEL_EV_RUNTIME);
    CHECK(find(t, "Memcpy HtoD (Pageable -> Device)")->kind == MODEL_EV_MEMCPY);
    CHECK(find(t, "Memset (Device)")->kind == MODEL_EV_MEMSET);
    /* string tid "stream 7": stream 7 from the digits and the args */
    CHECK_EQ_INT(t->tracks[k->track].tid, 7);
    CHECK_EQ_INT(t->infos[k->info].stream, 7);
    CHECK_EQ_INT(k->external_id, 2); /* lowercase "external id" */
    /* the kernel joins its launch by correlation */
    CHECK(t->link[k - t->events] != MODEL_NONE);
    CHECK_STREQ(model_str(t, t->events[t->link[k - t->events]].name), "cudaLaunchKernel");
    /* ProfilerStep#N as an Operator of old traces */
    CHECK_EQ_INT(t->n_steps, 2);
    CHECK_EQ_INT(t->steps[0].number, 3);
    CHECK_EQ_INT(t->steps[0].end - t->steps[0].start, 3000000);
    /* "async" flows are launch flows */
    CHECK_EQ_INT(t->n_flows, 2);
    CHECK(t->flows[0].kind == MODEL_FLOW_LAUNCH);
    model_trace_free(t);
}

TEST(reader_rocm_trace)
{
    struct model_trace *t = load_fixture("rocm.json");
    CHECK(t != NULL);
    if (!t)
        return;
    const struct model_event *k = find(t, "Cijk_Alik_Bljk_BBS_BH_MT128x128x64");
    CHECK(k && k->kind == MODEL_EV_KERNEL);
    CHECK_EQ_INT(t->infos[k->info].grid[0], 0); /* no grid or block: zeros */
    const struct model_event *launch = find(t, "hipExtModuleLaunchKernel");
    CHECK(launch && launch->kind == MODEL_EV_RUNTIME && launch->rt == 1 /* MODEL_RT_LAUNCH */);
    CHECK(t->link[k - t->events] == (uint32_t)(launch - t->events));
    CHECK(find(t, "hipStreamSynchronize")->rt == 3 /* MODEL_RT_SYNC_STREAM */);
    const struct model_event *rccl = find(t, "rcclGenericKernel_AllReduce_RING_LL_Sum_bf16");
    CHECK(rccl != NULL);
    struct model_inspect *in;
    struct sc_error err;
    CHECK(model_inspect_trace(t, &in, &err) == SC_OK);
    CHECK_EQ_INT(in->n_colls, 1);
    CHECK_STREQ(in->colls[0].name, "allreduce");
    CHECK_EQ_INT(in->colls[0].kernels, 1);
    CHECK_EQ_INT(in->colls[0].max_nelems, 1048576);
    CHECK_EQ_INT(in->colls[0].total_bytes, 2 * 1048576);
    CHECK_STREQ(model_str(t, in->gpu_name), "AMD Instinct MI300X");
    model_inspect_free(in);
    CHECK_EQ_INT(t->rank, 1);
    model_trace_free(t);
}

TEST(reader_cuda_sync_events)
{
    struct model_trace *t = load_fixture("cuda_sync.json");
    CHECK(t != NULL);
    if (!t)
        return;
    const struct model_event *w = find(t, "Stream Wait Event");
    CHECK(w && w->kind == MODEL_EV_CUDA_SYNC);
    const struct model_sync *s = &t->syncs[t->infos[w->info].sync];
    CHECK_EQ_INT(s->wait_on_stream, 7);
    CHECK_EQ_INT(s->wait_on_record_corr, 12);
    CHECK_EQ_INT(s->event_id, 2);
    CHECK_STREQ(model_str(t, s->sync_kind), "Stream Wait Event");
    /* joined to the cudaStreamWaitEvent call */
    CHECK_STREQ(model_str(t, t->events[t->link[w - t->events]].name), "cudaStreamWaitEvent");
    const struct model_event *ev = find(t, "cudaEvent");
    CHECK(ev && ev->kind == MODEL_EV_CUDA_EVENT);
    CHECK_EQ_INT(t->syncs[t->infos[ev->info].sync].event_id, 2);
    model_trace_free(t);
}

TEST(reader_graph_launch_runs_several_kernels)
{
    struct model_trace *t = load_fixture("graph_launch.json");
    CHECK(t != NULL);
    if (!t)
        return;
    const struct model_event *g = find(t, "cudaGraphLaunch");
    uint32_t gi = (uint32_t)(g - t->events);
    int linked = 0;
    for (size_t i = 0; i < t->n_events; i++)
        if (t->events[i].kind == MODEL_EV_KERNEL && t->link[i] == gi)
            linked++;
    CHECK_EQ_INT(linked, 3);
    CHECK_STREQ(model_str(t, t->events[t->link[gi]].name), "graph_kernel_a"); /* the first */
    CHECK(g->rt == 1 /* MODEL_RT_LAUNCH */);
    model_trace_free(t);
}

TEST(reader_unknown_categories_kept_and_counted)
{
    struct model_trace *t = load_fixture("unknown_categories.json");
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK_EQ_INT(t->n_unknown, 2);
    CHECK(find(t, "mtia_kernel")->kind == MODEL_EV_UNKNOWN);
    CHECK(find(t, "custom work")->kind == MODEL_EV_UNKNOWN);
    CHECK_EQ_INT(cat_count(t, "my_custom_category"), 1);
    CHECK_EQ_INT(t->n_instants, 1);
    CHECK_EQ_INT(t->n_counters, 1);
    CHECK_EQ_INT(t->n_other_phase, 2); /* B and E */
    CHECK_EQ_INT(t->n_entries, 8);
    model_trace_free(t);
}

TEST(reader_array_format_and_escapes)
{
    struct sc_error err;
    struct model_trace *t = load_str("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\u00e9\\ud83d\\ude00\\n\\\"q\\\"\","
                                     "\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2}]",
                                     &err);
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(t->n_events, 1);
        CHECK_STREQ(model_str(t, t->events[0].name), "k\xc3\xa9\xf0\x9f\x98\x80\n\"q\"");
    }
    model_trace_free(t);
}

TEST(reader_gzip_and_concatenated_members)
{
    const char *json = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":1}]}";
    const char *path = th_write_gzip("one.json.gz", json, strlen(json));
    struct model_trace *t = NULL;
    struct sc_error err;
    CHECK(model_trace_load_file(path, NULL, &t, &err) == SC_OK);
    CHECK(t && t->n_events == 1);
    model_trace_free(t);
    /* two gzip members back to back decode as one stream */
    size_t n1, n2;
    const char *a = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",", *b = "\"name\":\"a\",\"ts\":5}]}";
    char *g1 = th_read_file(th_write_gzip("a.gz", a, strlen(a)), &n1);
    char *g2 = th_read_file(th_write_gzip("b.gz", b, strlen(b)), &n2);
    char *both = malloc(n1 + n2);
    memcpy(both, g1, n1);
    memcpy(both + n1, g2, n2);
    t = NULL;
    CHECK(model_trace_load_mem(both, n1 + n2, "two-members", NULL, &t, &err) == SC_OK);
    CHECK(t && t->n_events == 1);
    model_trace_free(t);
    free(g1);
    free(g2);
    free(both);
}

/* A stream that returns its bytes a few at a time, to exercise every
 * refill boundary of the reader. */
struct trickle {
    struct model_stream base;
    const char *p;
    size_t left, step;
};

static ssize_t trickle_read(struct model_stream *s, void *buf, size_t n, struct sc_error *err)
{
    struct trickle *t = (struct trickle *)s;
    (void)err;
    if (n > t->step)
        n = t->step;
    if (n > t->left)
        n = t->left;
    memcpy(buf, t->p, n);
    t->p += n;
    t->left -= n;
    return (ssize_t)n;
}

static void trickle_close(struct model_stream *s)
{
    (void)s;
}

/* data[0..n) read every step_by-th number of bytes at a time, from 1 to
 * 39, gives the trace ref. */
static void check_trickled(const char *data, size_t n, size_t step_by, const struct model_trace *ref,
                           const char *what)
{
    for (size_t step = 1; step < 40; step += step_by) {
        struct trickle tr = {{trickle_read, trickle_close}, data, n, step};
        struct model_trace *t = NULL;
        struct sc_error err;
        if (model_trace_read(&tr.base, what, NULL, &t, &err) != SC_OK) {
            sc_check_fail(__FILE__, __LINE__, "%s, %zu bytes a read: %s", what, step, err.msg);
            return;
        }
        CHECK_EQ_INT(t->n_events, ref->n_events);
        CHECK_EQ_INT(t->n_flows, ref->n_flows);
        for (size_t i = 0; i < t->n_events && i < ref->n_events; i++) {
            CHECK_EQ_INT(t->events[i].ts, ref->events[i].ts);
            CHECK_STREQ(model_str(t, t->events[i].name), model_str(ref, ref->events[i].name));
        }
        model_trace_free(t);
    }
}

/* The fixture read a few bytes at a time, plain, then gzipped as three
 * members with zero padding after the second by every kind of deflate
 * block (stored, fixed, dynamic, Huffman-only): a member's end falls
 * anywhere within a read. */
TEST(reader_same_result_whatever_the_read_sizes)
{
    static const char *const modes[] = {"ab0", "ab1", "ab9", "abF", "abh"};
    size_t n;
    char *json = th_read_file("tests/fixtures/rocm.json", &n);
    CHECK(json != NULL);
    if (!json)
        return;
    struct model_trace *ref = NULL;
    struct sc_error err;
    CHECK(model_trace_load_mem(json, n, "ref", NULL, &ref, &err) == SC_OK);
    if (ref)
        check_trickled(json, n, 3, ref, "trickle");
    for (size_t m = 0; m < sizeof modes / sizeof modes[0] && ref; m++) {
        const char *path = th_write_file("members.gz", "", 0);
        size_t cut[4] = {0, n / 3, n / 3 + 1, n};
        for (int k = 0; k < 3; k++) {
            gzFile g = gzopen(path, modes[m]);
            CHECK(g && gzwrite(g, json + cut[k], (unsigned)(cut[k + 1] - cut[k])) > 0 && gzclose(g) == Z_OK);
            if (k == 1) {
                FILE *f = fopen(path, "ab");
                CHECK(f && fwrite("\0\0\0", 1, 3, f) == 3 && fclose(f) == 0);
            }
        }
        size_t gn;
        char *gz = th_read_file(path, &gn);
        CHECK(gz != NULL);
        if (gz)
            check_trickled(gz, gn, 2, ref, modes[m]);
        free(gz);
    }
    model_trace_free(ref);
    free(json);
}

/* data[0..n) gzipped into out (room for cap) as one member whose header
 * carries every optional field: an extra field, a file name, a comment
 * and the header's own CRC. The member's size, 0 on failure. */
static size_t gzip_with_header_fields(const char *data, size_t n, unsigned char *out, size_t cap)
{
    static unsigned char extra[] = "SC\x04\x00trace";
    static unsigned char name[] = "rank0.pt.trace.json", comment[] = "profiled by the step's own profiler";
    gz_header head = {0};
    head.extra = extra;
    head.extra_len = sizeof extra - 1;
    head.name = name;
    head.comment = comment;
    head.hcrc = 1;
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    size_t got = 0;
    if (deflateSetHeader(&z, &head) == Z_OK) {
        z.next_in = (unsigned char *)data;
        z.avail_in = (uInt)n;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END)
            got = z.total_out;
    }
    deflateEnd(&z);
    return got;
}

/* The whole of a gzip file, inflated by zlib; NULL when it cannot be read. */
static char *gunzip_file(const char *path, size_t *n)
{
    gzFile f = gzopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int k = 0;
    if (!f)
        return NULL;
    do {
        if (len + 65536 > cap) {
            char *b = realloc(buf, cap = 2 * cap + 65536);
            if (!b) {
                k = -1;
                break;
            }
            buf = b;
        }
        if ((k = gzread(f, buf + len, 65536)) > 0)
            len += (size_t)k;
    } while (k > 0);
    gzclose(f);
    if (k < 0) {
        free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

/* HTA's alexnet step (a real trace) gzipped again as two such members back
 * to back, read a few bytes at a time: a header cut between reads is read
 * on where it stopped, each field by the flags read before the cut, in the
 * second member as in the first; the trace is the one its profiler's own
 * gzip file gives. */
TEST(reader_gzip_header_fields_whatever_the_read_sizes)
{
    const char *path = th_shared_path(
        "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz");
    size_t n, gn;
    char *json = gunzip_file(path, &n), *orig = th_read_file(path, &gn);
    REQUIRE(json != NULL && orig != NULL);
    struct model_trace *ref = NULL;
    struct sc_error err;
    CHECK(model_trace_load_mem(orig, gn, "ref", NULL, &ref, &err) == SC_OK);
    size_t cap = 2 * (n + 1024), cut = n / 3;
    unsigned char *gz = malloc(cap);
    REQUIRE(gz != NULL);
    size_t g1 = gzip_with_header_fields(json, cut, gz, cap);
    size_t g2 = g1 ? gzip_with_header_fields(json + cut, n - cut, gz + g1, cap - g1) : 0;
    CHECK(g1 > 10 && g2 > 10);
    if (g1 > 10 && g2 > 10) {
        CHECK((gz[3] & 0x1e) == 0x1e && (gz[g1 + 3] & 0x1e) == 0x1e); /* FHCRC, FEXTRA, FNAME, FCOMMENT */
        if (ref)
            check_trickled((const char *)gz, g1 + g2, 2, ref, "header fields");
    }
    model_trace_free(ref);
    free(gz);
    free(orig);
    free(json);
}

/* The bytes of gz[0..gn) from the 10th on, every stride-th, corrupted in
 * turn and read a few bytes at a time: each read ends in the trace or a
 * clean error whose code is in the bit set `codes`, never past the
 * inflater's buffers (igzip can leave its input count wrapped on corrupt
 * data). The reads that failed. */
static int corrupted_reads(char *gz, size_t gn, size_t stride, unsigned codes, const char *what)
{
    int clean_errors = 0;
    for (size_t at = 10; at + 8 < gn; at += stride) {
        for (size_t step = 5; step < 40; step += 8) {
            gz[at] ^= 0x10;
            struct trickle tr = {{trickle_read, trickle_close}, gz, gn, step};
            struct model_trace *t = NULL;
            struct sc_error err;
            if (model_trace_read(&tr.base, what, NULL, &t, &err) != SC_OK) {
                if (!(codes >> err.code & 1))
                    sc_check_fail(__FILE__, __LINE__, "%s, byte %zu corrupted: %s", what, at, err.msg);
                clean_errors++;
            }
            model_trace_free(t);
            gz[at] ^= 0x10;
        }
    }
    return clean_errors;
}

TEST(reader_corrupt_gzip_fails_cleanly_whatever_the_read_sizes)
{
    size_t n, gn;
    char *json = th_read_file("tests/fixtures/rocm.json", &n);
    char *gz = json ? th_read_file(th_write_gzip("c.json.gz", json, n), &gn) : NULL;
    CHECK(gz != NULL);
    if (gz)
        CHECK(corrupted_reads(gz, gn, 1, 1u << SC_EPARSE, "c.json.gz") > 0);
    free(gz);
    free(json);
}

/* Real traces as their profilers gzipped them (HTA's alexnet step, 25 KB,
 * and its NCCL trace, 750 KB of gzip for 9.8 MB), read a few bytes at a
 * time: the same trace as read whole; and the alexnet one corrupted at 200
 * places, each read the trace or a clean error (a corrupt digit can also
 * make a number out of range). */
TEST(reader_real_gzip_traces_whatever_the_read_sizes)
{
    static const char *const rel[] = {
        "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        size_t gn;
        char *gz = th_read_file(th_shared_path(rel[i]), &gn);
        struct model_trace *ref = NULL;
        struct sc_error err;
        REQUIRE(gz != NULL);
        CHECK(model_trace_load_mem(gz, gn, rel[i], NULL, &ref, &err) == SC_OK);
        if (ref)
            check_trickled(gz, gn, i ? 19 : 6, ref, rel[i]);
        if (ref && i == 0)
            CHECK(corrupted_reads(gz, gn, gn / 200, 1u << SC_EPARSE | 1u << SC_ENUMERIC, rel[i]) > 0);
        model_trace_free(ref);
        free(gz);
    }
}

/* ---- steps --------------------------------------------------------------------------- */

TEST(steps_profiler_step_cpu_side_only)
{
    struct sc_error err;
    /* a gpu_user_annotation copy of ProfilerStep must not count */
    struct model_trace *t = load_str(
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#5\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#5\",\"pid\":0,\"tid\":7,\"ts\":110,\"dur\":60},"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#6\",\"pid\":1,\"tid\":1,\"ts\":150,\"dur\":40}]}",
        &err);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK_EQ_INT(t->n_steps, 2);
    CHECK_EQ_INT(t->steps[0].number, 5);
    CHECK_EQ_INT(t->steps[0].end - t->steps[0].start, 50000);
    CHECK_EQ_INT(t->steps[1].number, 6);
    model_trace_free(t);
}

TEST(steps_user_marker_prefix)
{
    struct model_load_opts o;
    struct model_trace *t = NULL;
    struct sc_error err;
    model_load_opts_default(&o);
    o.step_marker = "Optimizer.step";
    const char *json =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"Optimizer.step#SGD.step\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"Optimizer.step#SGD.step\",\"pid\":1,\"tid\":1,\"ts\":101,\"dur\":3},"
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"Optimizer.step#SGD.step\",\"pid\":0,\"tid\":7,\"ts\":130,\"dur\":3},"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"Optimizer.step#SGD.step\",\"pid\":1,\"tid\":1,\"ts\":200,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"Optimizer.step#SGD.step\",\"pid\":1,\"tid\":1,\"ts\":320,\"dur\":5}]}";
    CHECK(model_trace_load_mem(json, strlen(json), "m", &o, &t, &err) == SC_OK);
    if (!t)
        return;
    /* three markers (the nested op and the GPU copy do not count): two steps */
    CHECK_EQ_INT(t->n_steps, 2);
    CHECK_STREQ(model_str(t, t->steps[0].name), "Optimizer.step#1");
    CHECK_EQ_INT(t->steps[0].end - t->steps[0].start, 100000);
    CHECK_EQ_INT(t->steps[1].end - t->steps[1].start, 120000);
    model_trace_free(t);
}

TEST(steps_real_marker_trace)
{
    struct model_load_opts o;
    struct model_trace *t = NULL;
    struct sc_error err;
    model_load_opts_default(&o);
    o.step_marker = "Optimizer.step";
    CHECK(model_trace_load_file(th_shared_path("param/et_replay/tests/inputs/linear_kineto.json.gz"), &o, &t,
                                &err) == SC_OK);
    if (!t)
        return;
    CHECK_EQ_INT(t->n_steps, 39); /* 40 markers */
    model_trace_free(t);
}

TEST(steps_partial_when_trace_ends_inside)
{
    struct sc_error err;
    /* the last step launches a kernel the trace never recorded */
    struct model_trace *t = load_str(
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":110,\"dur\":5,\"args\":{\"correlation\":1}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k1\",\"pid\":0,\"tid\":7,\"ts\":120,\"dur\":20,\"args\":{\"correlation\":1}},"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":1,\"tid\":1,\"ts\":150,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":160,\"dur\":5,\"args\":{\"correlation\":2}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,\"ts\":170,\"dur\":20,\"args\":{\"correlation\":2}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":190,\"dur\":5,\"args\":{\"correlation\":3}}]}",
        &err);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK_EQ_INT(t->n_steps, 2);
    CHECK(!t->steps[0].partial);
    CHECK(t->steps[1].partial);
    model_trace_free(t);
}

/* ---- bad input ------------------------------------------------------------------------ */

/* Loading json must fail with code, a message holding `what`, and (when
 * offset >= 0) that byte offset; an event index when event >= 0. */
static void expect_error(const char *json, size_t n, enum sc_status code, const char *what,
                         int64_t offset, int64_t event)
{
    struct model_trace *t = NULL;
    struct sc_error err;
    int rc = model_trace_load_mem(json, n, "bad.json", NULL, &t, &err);
    CHECK_EQ_INT(rc, code);
    CHECK(t == NULL);
    if (rc == SC_OK) {
        model_trace_free(t);
        return;
    }
    CHECK_CONTAINS(err.msg, "bad.json");
    CHECK_CONTAINS(err.msg, what);
    if (offset >= 0) {
        CHECK_EQ_INT(err.offset, offset);
        char at[64];
        snprintf(at, sizeof at, "byte %lld", (long long)offset);
        CHECK_CONTAINS(err.msg, at);
    }
    if (event >= 0) {
        CHECK_EQ_INT(err.event, event);
        char ev[64];
        snprintf(ev, sizeof ev, "traceEvents[%lld]", (long long)event);
        CHECK_CONTAINS(err.msg, ev);
    }
}

#define EXPECT_ERROR(json, code, what, off, ev) expect_error(json, sizeof(json) - 1, code, what, off, ev)

/* The reader takes the members of an entry laid out as the last entry of
 * its kind was by the bytes alone (member_field): entries whose members
 * move, whose keys extend or escape a key learnt there, or whose spacing
 * differs, read as they say, whatever the read sizes. */
TEST(reader_members_read_alike_whatever_their_layout)
{
    static const char json[] =
        "{\"traceEvents\": [\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 5,\n"
        "   \"args\": {\"External id\": 7, \"Input Dims\": [[1, 2]], \"Input type\": [\"float\"]}},\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"b\", \"pid\": 1, \"tid\": 1, \"dur\": 6, \"ts\": 20,\n"
        "   \"args\": {\"Input Dims\": [[3]], \"External id\": 8}},\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c\", \"pid\": 1, \"tid\": 1, \"tsx\": 99, \"ts\": 30, \"dur\": 7,\n"
        "   \"args\": {\"External idx\": 5, \"External id\": 9}},\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"d\", \"pid\": 1, \"tid\": 1, \"\\u0074s\": 40, \"dur\": 8,\n"
        "   \"args\": {\"External\\u0020id\": 10}},\n"
        "  {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":41,\"dur\":1,"
        "\"args\":{\"External id\":11,\"correlation\":3,\"stream\":7,\"device\":0}},\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"e\", \"pid\": 1, \"tid\": 1, \"ts\": 50,  \"dur\": 9,\n"
        "   \"args\": {\"External id\": 12, \"Input Dims\": [[4]], \"Input type\": [\"int\"]}},\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"f\", \"pid\": 1, \"tid\": 1, \"ts\": 60, \"dur\": 10,\n"
        "   \"args\": {\"External id\": 13, \"Input Dims\": [[5]], \"Input type\": [\"int\"]}}\n"
        "]}\n";
    static const struct {
        const char *name;
        int64_t ts, dur, external_id;
        const char *dims;
    } want[] = {
        {"a", 10, 5, 7, "[[1, 2]]"}, {"b", 20, 6, 8, "[[3]]"}, {"c", 30, 7, 9, NULL},    {"d", 40, 8, 10, NULL},
        {"k", 41, 1, 11, NULL},      {"e", 50, 9, 12, "[[4]]"}, {"f", 60, 10, 13, "[[5]]"},
    };
    struct sc_error err;
    struct model_trace *t = NULL;
    CHECK(model_trace_load_mem(json, sizeof json - 1, "layouts", NULL, &t, &err) == SC_OK);
    if (!t)
        return;
    CHECK_EQ_INT(t->n_events, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < t->n_events && i < sizeof want / sizeof want[0]; i++) {
        const struct model_event *e = find(t, want[i].name);
        CHECK(e != NULL);
        if (!e)
            continue;
        CHECK_EQ_INT(e->ts - t->events[0].ts, (want[i].ts - 10) * 1000);
        CHECK_EQ_INT(e->dur, want[i].dur * 1000);
        CHECK_EQ_INT(e->external_id, want[i].external_id);
        const struct model_op_args *g = model_event_args(t, e);
        const char *dims = g ? model_str(t, g->input_dims) : NULL;
        if (want[i].dims)
            CHECK_STREQ(dims ? dims : "(none)", want[i].dims);
    }
    const struct model_event *k = find(t, "k");
    CHECK(k && k->correlation == 3 && model_event_info(t, k) && model_event_info(t, k)->stream == 7);
    check_trickled(json, sizeof json - 1, 1, t, "layouts trickled");
    model_trace_free(t);

    /* a member whose bytes up to its value were learnt still has its value checked */
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 1}, {\"ph\": \"X\", \"ts\": \"1\", \"dur\": 1}]}",
                 SC_EPARSE, "ts is not a number", 67, 1);
}

TEST(reader_rejects_empty_and_not_json)
{
    EXPECT_ERROR("", SC_EPARSE, "empty input", 0, -1);
    EXPECT_ERROR("   \n ", SC_EPARSE, "empty input", -1, -1);
    EXPECT_ERROR("hello", SC_EPARSE, "not a trace", 0, -1);
    EXPECT_ERROR("{\"a\": tru}", SC_EPARSE, "invalid literal", -1, -1);
    EXPECT_ERROR("{\"traceEvents\": [}", SC_EPARSE, "not an object", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [], \"x\": 1,}", SC_EPARSE, "expected a string key", -1, -1);
    EXPECT_ERROR("{\"traceEvents\": []} {}", SC_EPARSE, "trailing data", 20, -1);
    EXPECT_ERROR("{\"traceEvents\": [{\"ts\": 01}]}", SC_EPARSE, "leading zero", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ts\": NaN}]}", SC_EPARSE, "ts is not a number", -1, 0);
}

TEST(reader_rejects_truncated_json)
{
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1", SC_EPARSE, "truncated JSON", 36, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"M\"}, {\"ph\": \"X\", \"name\": \"ab", SC_EPARSE,
                 "truncated JSON", -1, 1);
    EXPECT_ERROR("{\"traceEvents\": [", SC_EPARSE, "truncated JSON", -1, -1);
    EXPECT_ERROR("{\"schemaVersion\": 1", SC_EPARSE, "truncated JSON", -1, -1);
}

TEST(reader_rejects_truncated_gzip)
{
    const char *json = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"ts\":1,\"dur\":1},"
                       "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"ts\":2,\"dur\":1}]}";
    size_t n;
    char *gz = th_read_file(th_write_gzip("t.json.gz", json, strlen(json)), &n);
    struct model_trace *t = NULL;
    struct sc_error err;
    CHECK(n > 20);
    for (size_t cut = 10; gz && cut < n; cut += 7) {
        int rc = model_trace_load_mem(gz, cut, "cut.json.gz", NULL, &t, &err);
        CHECK(rc == SC_EPARSE);
        CHECK(t == NULL);
        if (rc == SC_EPARSE && strstr(err.msg, "gzip") == NULL && strstr(err.msg, "truncated") == NULL)
            CHECK_CONTAINS(err.msg, "gzip");
    }
    CHECK(model_trace_load_mem(gz, n - 4, "cut.json.gz", NULL, &t, &err) == SC_EPARSE);
    CHECK_CONTAINS(err.msg, "truncated gzip");
    /* garbage after a complete member */
    char *junk = malloc(n + 3);
    memcpy(junk, gz, n);
    memcpy(junk + n, "abc", 3);
    CHECK(model_trace_load_mem(junk, n + 3, "junk.json.gz", NULL, &t, &err) == SC_EPARSE);
    CHECK_CONTAINS(err.msg, "trailing data after the gzip stream");
    free(junk);
    free(gz);
}

TEST(reader_rejects_nul_bytes)
{
    static const char json[] = "{\"traceEvents\": [{\"ph\": \"X\"\0, \"ts\": 1}]}";
    expect_error(json, sizeof json - 1, SC_EPARSE, "NUL byte", 27, 0);
    static const char in_string[] = "{\"traceEvents\": [{\"name\": \"a\0b\"}]}";
    expect_error(in_string, sizeof in_string - 1, SC_EPARSE, "NUL byte", 28, 0);
}

TEST(reader_rejects_invalid_utf8)
{
    EXPECT_ERROR("{\"traceEvents\": [{\"name\": \"\xff\"}]}", SC_EPARSE, "invalid UTF-8", 27, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"name\": \"\xc0\xaf\"}]}", SC_EPARSE, "invalid UTF-8", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"name\": \"\xed\xa0\x80\"}]}", SC_EPARSE, "invalid UTF-8", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"x\": \"\xe2\x82\"}]}", SC_EPARSE, "invalid UTF-8", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"name\": \"a\tb\"}]}", SC_EPARSE, "control character", -1, 0);
}

TEST(reader_rejects_deep_nesting)
{
    size_t depth = 100000, n = 0;
    char *json = malloc(5 * depth + 64);
    n += (size_t)snprintf(json, 64, "{\"traceEvents\": [{\"args\": {\"x\": ");
    for (size_t i = 0; i < depth; i++)
        json[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        json[n++] = ']';
    n += (size_t)snprintf(json + n, 16, "}}]}");
    expect_error(json, n, SC_ELIMIT, "nesting deeper than the limit of 64", -1, 0);
    /* and at the top level, outside traceEvents */
    n = (size_t)snprintf(json, 64, "{\"other\": ");
    for (size_t i = 0; i < depth; i++)
        json[n++] = '{', json[n++] = '"', json[n++] = 'a', json[n++] = '"', json[n++] = ':';
    expect_error(json, n, SC_ELIMIT, "nesting deeper", -1, -1);
    free(json);
}

/* A trace of one cpu op whose "Input Dims" is the text v (its prefix's
 * length in *at), in json[n]. */
static size_t dims_trace(char *json, size_t n, const char *v, size_t *at)
{
    static const char pre[] = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, "
                              "\"dur\": 1, \"args\": {\"Input Dims\": ";
    *at = sizeof pre - 1;
    return (size_t)snprintf(json, n, "%s%s}}]}", pre, v);
}

/* Arrays of numbers and plain strings (shapes, types) are stepped over by
 * a loop of their own (skip_plain_array): it takes what the grammar takes,
 * keeps the value's text, and leaves anything else to the reader's other
 * paths: the same errors at the same bytes, the nesting and string limits
 * where they are for any other value. */
TEST(reader_plain_arrays_read_as_strictly_as_any_value)
{
    static const char *const good[] = {
        "[]", "[ ]", "[[], [], []]", "[[4096, 1024], [1024]]", "[-1,0,1.5,2e10,3E-2,-0.0e+1]",
        "[\"\", \"float\", \"c10::BFloat16\"]", "[\"a\\\"b\", \"\\u00e9\", \"\xc3\xa9\"]",
        "[true, null, {\"a\": [1]}]", "[[[[1]]]]", "[ 1 ,\n[ 2 ] ]",
    };
    static const struct {
        const char *array, *error;
        size_t at; /* the error's byte in the array */
    } bad[] = {
        {"[1,]", "invalid number", 3},
        {"[,1]", "invalid number", 1},
        {"[01]", "leading zero", 1},
        {"[1 2]", "expected ',' or ']'", 3},
        {"[1 x2]", "expected ',' or ']'", 3},
        {"[-]", "invalid number", 1},
        {"[+1]", "invalid number", 1},
        {"[.5]", "invalid number", 1},
        {"[1.]", "no digit after '.'", 1},
        {"[1e+]", "no digit in the exponent", 1},
        {"[\"a\",]", "invalid number", 5},
        {"[[],,[]]", "invalid number", 4},
        {"[[1]", "expected ',' or ']'", 4},
        {"[1]]", "expected ',' or '}'", 3},
        {"[\"a\tb\"]", "control character", 3},
        {"[\"\xff\"]", "invalid UTF-8", 2},
    };
    char json[1024];
    size_t at, n;
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        struct sc_error err;
        struct model_trace *t = NULL;
        n = dims_trace(json, sizeof json, good[i], &at);
        CHECK_EQ_INT(model_trace_load_mem(json, n, "m", NULL, &t, &err), SC_OK);
        const struct model_event *e = t ? find(t, "a") : NULL;
        const struct model_op_args *g = e ? model_event_args(t, e) : NULL;
        CHECK(g != NULL);
        if (g)
            CHECK_STREQ(model_str(t, g->input_dims), good[i]);
        model_trace_free(t);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        n = dims_trace(json, sizeof json, bad[i].array, &at);
        expect_error(json, n, SC_EPARSE, bad[i].error, (int64_t)(at + bad[i].at), 0);
    }

    /* the deepest array read is as deep as the deepest object */
    struct model_load_opts o;
    model_load_opts_default(&o);
    size_t deepest[2] = {0, 0};
    for (int obj = 0; obj < 2; obj++)
        for (size_t k = 1; k < 80; k++) {
            char v[640];
            size_t m = 0;
            for (size_t j = 0; j < k; j++)
                m += (size_t)snprintf(v + m, sizeof v - m, "%s", obj ? "{\"a\": " : "[");
            if (obj)
                v[m++] = '1';
            for (size_t j = 0; j < k; j++)
                v[m++] = obj ? '}' : ']';
            v[m] = '\0';
            n = dims_trace(json, sizeof json, v, &at);
            struct sc_error err;
            struct model_trace *t = NULL;
            int rc = model_trace_load_mem(json, n, "m", &o, &t, &err);
            model_trace_free(t);
            if (rc != SC_OK) {
                CHECK_EQ_INT(rc, SC_ELIMIT);
                CHECK_CONTAINS(err.msg, "nesting deeper than the limit of 64");
                break;
            }
            deepest[obj] = k;
        }
    CHECK(deepest[0] > 50 && deepest[0] < 64);
    CHECK_EQ_INT(deepest[0], deepest[1]);

    /* a string as long as the limit is read in an array as anywhere */
    o.limits.max_string = 40;
    for (size_t len = 39; len <= 41; len++)
        for (int in_array = 0; in_array < 2; in_array++) {
            char v[64];
            snprintf(v, sizeof v, "%s\"%.*s\"%s", in_array ? "[" : "", (int)len,
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", in_array ? "]" : "");
            struct sc_error err;
            struct model_trace *t = NULL;
            n = dims_trace(json, sizeof json, v, &at);
            int rc = model_trace_load_mem(json, n, "m", &o, &t, &err);
            model_trace_free(t);
            CHECK_EQ_INT(rc, len <= 40 ? SC_OK : SC_ELIMIT);
        }
}

/* On real traces, where every shape and type array goes the one-loop way:
 * each op's "Input Dims" and "Input type" text kept is a whole JSON array,
 * no byte short of its end and none past it. */
TEST(reader_plain_arrays_of_real_traces_kept_whole)
{
    static const char *const traces[] = {
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
        "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz",
    };
    size_t arrays = 0;
    for (size_t k = 0; k < sizeof traces / sizeof *traces; k++) {
        struct model_trace *t = NULL;
        struct sc_error err;
        CHECK_EQ_INT(model_trace_load_file(th_shared_path(traces[k]), NULL, &t, &err), SC_OK);
        for (size_t i = 0; t && i < t->n_op_args; i++) {
            const uint32_t ids[] = {t->op_args[i].input_dims, t->op_args[i].input_types};
            for (size_t j = 0; j < 2; j++) {
                if (ids[j] == MODEL_NONE)
                    continue;
                const char *text = model_str(t, ids[j]);
                json_error_t jerr;
                json_t *v = json_loads(text, 0, &jerr);
                if (!json_is_array(v))
                    sc_check_fail(__FILE__, __LINE__, "%s: not a whole array: %.80s", traces[k], text);
                json_decref(v);
                arrays++;
            }
        }
        model_trace_free(t);
    }
    CHECK(arrays > 10000);
}

TEST(reader_rejects_out_of_range_numbers)
{
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1e400, \"dur\": 1}]}", SC_ENUMERIC,
                 "number 1e400 is out of range", 35, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 99999999999999999999}]}",
                 SC_ENUMERIC, "out of range", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{}, {\"ph\": \"X\", \"ts\": 9223372036854775.807, \"dur\": 1}]}",
                 SC_ENUMERIC, "ts plus dur is out of range", -1, 1);
    EXPECT_ERROR("{\"traceEvents\": [{\"args\": {\"correlation\": -1e99}}]}", SC_ENUMERIC, "out of range", -1, 0);
    /* tiny numbers are zero, not errors */
    struct sc_error err;
    struct model_trace *t = load_str("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1e-400, \"dur\": 0}]}", &err);
    CHECK(t && t->events[0].ts == 0);
    model_trace_free(t);
}

/* Integers of every length from 1 to 19 digits, as ts (read in ns: three
 * decimals more) and as an id of args (as they are), against their value
 * from strtoll; those too large for ns after the decimals are refused. */
TEST(reader_integers_of_every_length_read_exactly)
{
    const char *digits = "9123456789012345678";
    for (int len = 1; len <= 19; len++) {
        char num[24], json[256];
        struct sc_error err;
        snprintf(num, sizeof num, "%.*s", len, digits);
        long long v = strtoll(num, NULL, 10);
        snprintf(json, sizeof json,
                 "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":%s,"
                 "\"tid\":7,\"ts\":%s,\"dur\":0,\"args\":{\"correlation\":%s}}]}",
                 num, len <= 15 ? num : "1", num);
        struct model_trace *t = load_str(json, &err);
        CHECK(t != NULL);
        if (!t)
            continue;
        CHECK_EQ_INT(t->events[0].correlation, v);
        CHECK_EQ_INT(t->tracks[t->events[0].track].pid, v);
        if (len <= 15)
            CHECK_EQ_INT(t->events[0].ts, v * 1000);
        model_trace_free(t);
        snprintf(json, sizeof json, "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":%s,\"dur\":0}]}", num);
        t = load_str(json, &err);
        CHECK_EQ_INT(t != NULL, v <= INT64_MAX / 1000);
        model_trace_free(t);
    }
    /* a leading zero is refused however long the number is */
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 0123456789, \"dur\": 1}]}", SC_EPARSE,
                 "leading zero", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 01, \"dur\": 1}]}", SC_EPARSE, "leading zero",
                 -1, 0);
}

TEST(reader_rejects_negative_durations)
{
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 2}, {\"ph\": \"X\", \"ts\": 1, \"dur\": -0.5}]}",
                 SC_EPARSE, "negative dur", 77, 1);
}

TEST(reader_rejects_missing_or_bad_trace_events)
{
    EXPECT_ERROR("{\"schemaVersion\": 1}", SC_EPARSE, "no traceEvents array", -1, -1);
    EXPECT_ERROR("{\"traceEvents\": {}}", SC_EPARSE, "traceEvents is not an array", 16, -1);
    EXPECT_ERROR("{\"traceEvents\": \"x\"}", SC_EPARSE, "traceEvents is not an array", -1, -1);
    EXPECT_ERROR("{\"traceEvents\": [], \"traceEvents\": []}", SC_EPARSE, "a second traceEvents", -1, -1);
    EXPECT_ERROR("{\"traceEvents\": [1]}", SC_EPARSE, "not an object", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\"}]}", SC_EPARSE, "has no ts", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"name\": 5}]}", SC_EPARSE, "name is not a string", -1, 0);
    EXPECT_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"args\": []}]}", SC_EPARSE, "args is not an object", -1, 0);
}

/* A stream of `{"traceEvents":[{"name":"aaaa...` that never ends. */
struct endless {
    struct model_stream base;
    size_t sent;
};

static ssize_t endless_read(struct model_stream *s, void *buf, size_t n, struct sc_error *err)
{
    struct endless *e = (struct endless *)s;
    static const char head[] = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"";
    (void)err;
    if (e->sent >= (1ull << 30)) /* a 1 GB string */
        return 0;
    size_t k = 0;
    for (; k < n && e->sent < sizeof head - 1; k++)
        ((char *)buf)[k] = head[e->sent++];
    memset((char *)buf + k, 'a', n - k);
    e->sent += n - k;
    return (ssize_t)n;
}

TEST(reader_rejects_a_1gb_string_without_buffering_it)
{
    struct endless e = {{endless_read, trickle_close}, 0};
    struct model_trace *t = NULL;
    struct sc_error err;
    int rc = model_trace_read(&e.base, "huge.json", NULL, &t, &err);
    CHECK_EQ_INT(rc, SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "string longer than the limit of 16777216 bytes");
    CHECK_CONTAINS(err.msg, "traceEvents[0]");
    CHECK(e.sent < 128u << 20); /* stopped long before the end */
}

TEST(reader_limits_are_named_and_enforced)
{
    struct model_load_opts o;
    struct model_trace *t = NULL;
    struct sc_error err;
    model_load_opts_default(&o);
    CHECK_EQ_INT(o.limits.max_events, 50000000);
    CHECK_EQ_INT(o.limits.max_depth, 64);
    o.limits.max_events = 2;
    const char *json = "{\"traceEvents\": [{}, {}, {}]}";
    CHECK_EQ_INT(model_trace_load_mem(json, strlen(json), "m", &o, &t, &err), SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "more than 2 events");
    model_load_opts_default(&o);
    o.limits.max_item_bytes = 64;
    const char *big = "{\"traceEvents\": [{\"name\": \"0123456789012345678901234567890123456789012345678901234567890123456789\"}]}";
    CHECK_EQ_INT(model_trace_load_mem(big, strlen(big), "m", &o, &t, &err), SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "larger than the limit of 64 bytes");
    model_load_opts_default(&o);
    o.limits.max_string = 8;
    CHECK_EQ_INT(model_trace_load_mem(big, strlen(big), "m", &o, &t, &err), SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "the limit of 8 bytes");
}

/* ---- the parallel split of large plain files ---------------------------------------- */

/* A plain trace of `n` events of one size, one of them (near the middle)
 * named so that it holds what looks like an event boundary. */
static const char *write_big_trace(size_t n, int bad_at_middle, int neg_dur_at, size_t *bytes)
{
    size_t cap = n * 300 + 256, len = 0;
    char *buf = malloc(cap);
    len += (size_t)snprintf(buf, cap, "{\"schemaVersion\": 1, \"traceEvents\": [\n");
    for (size_t i = 0; i < n; i++) {
        const char *name = "aten::op";
        char side[128];
        if (bad_at_middle && i == n / 2)
            name = "x}, {\\\"ph\\\": \\\"X\\\"}, {y";
        /* side records all through: a kernel's stream, an op's input
         * dims, now and then its collective */
        if (i % 4 == 3)
            snprintf(side, sizeof side, ", \"stream\": %zu, \"correlation\": %zu", 7 + i % 2, i);
        else if (i % 50 == 0)
            snprintf(side, sizeof side, ", \"Collective name\": \"allreduce\", \"In msg nelems\": %zu", i);
        else
            snprintf(side, sizeof side, ", \"Input Dims\": [[%zu]]", i % 7);
        len += (size_t)snprintf(buf + len, cap - len,
                                "%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 1, \"tid\": %zu, "
                                "\"ts\": %zu.500, \"dur\": %s, \"args\": {\"External id\": %zu%s}}",
                                i ? ",\n  " : "  ", i % 4 == 3 ? "kernel" : "cpu_op", name, i % 3, 1000 + i,
                                (int)i == neg_dur_at ? "-1" : "2", i, side);
    }
    len += (size_t)snprintf(buf + len, cap - len,
                            "\n], \"distributedInfo\": {\"rank\": 3, \"world_size\": 4}}\n");
    const char *path = th_write_file(bad_at_middle ? "big-bad.json" : "big.json", buf, len);
    free(buf);
    *bytes = len;
    return path;
}

/* The plain file at path loaded as a file (split in parts) into *t and its
 * bytes through a stream (the serial parse) into *ref: 1, or 0 (the test
 * failed, neither kept) when either does not load. */
static int split_and_serial(const char *path, struct model_trace **t, struct model_trace **ref)
{
    struct sc_error err;
    size_t len;
    *t = *ref = NULL;
    CHECK(model_trace_load_file(path, NULL, t, &err) == SC_OK);
    char *json = th_read_file(path, &len);
    CHECK(json && model_trace_load_mem(json, len, path, NULL, ref, &err) == SC_OK);
    free(json);
    if (*t && *ref)
        return 1;
    model_trace_free(*t);
    model_trace_free(*ref);
    return 0;
}

static int same_str(const struct model_trace *a, uint32_t x, const struct model_trace *b, uint32_t y);

/* Event i of a and of b carry the same side record (write_big_trace's). */
static int same_side(const struct model_trace *a, const struct model_trace *b, size_t i)
{
    const struct model_event *x = &a->events[i], *y = &b->events[i];
    const struct model_info *p = model_event_info(a, x), *q = model_event_info(b, y);
    const struct model_op_args *g = model_event_args(a, x), *h = model_event_args(b, y);
    const struct model_collective *c = model_event_coll(a, x), *d = model_event_coll(b, y);
    if (x->kind != y->kind || !p != !q || !g != !h || !c != !d || (!p && !g))
        return 0;
    if (p && (p->stream != q->stream || p->stream != (int64_t)(7 + i % 2)))
        return 0;
    if (g && (!same_str(a, g->input_dims, b, h->input_dims) || !same_str(a, g->input_types, b, h->input_types)))
        return 0;
    return !c || (same_str(a, c->name, b, d->name) && c->in_nelems == d->in_nelems && c->in_nelems == (int64_t)i);
}

TEST(reader_split_parse_equals_serial_parse)
{
    size_t bytes, n = 200000;
    const char *path = write_big_trace(n, 1, -1, &bytes);
    CHECK(bytes > 16u << 20); /* big enough to be split */
    struct model_trace *t, *ref;
    if (!split_and_serial(path, &t, &ref))
        return;
    CHECK_EQ_INT(t->n_events, n);
    CHECK_EQ_INT(t->n_entries, ref->n_entries);
    CHECK_EQ_INT(t->rank, 3); /* from after traceEvents */
    CHECK_EQ_INT(t->world_size, 4);
    CHECK_EQ_INT(t->n_tracks, ref->n_tracks);
    int same = 1;
    for (size_t i = 0; i < n && same; i++)
        same = t->events[i].ts == ref->events[i].ts && t->events[i].external_id == (int64_t)i &&
               strcmp(model_str(t, t->events[i].name), model_str(ref, ref->events[i].name)) == 0 &&
               t->tracks[t->events[i].track].tid == (int64_t)(i % 3) && same_side(t, ref, i);
    CHECK(same);
    CHECK_EQ_INT(t->n_infos, n / 4);
    CHECK_EQ_INT(t->n_op_args, n - n / 4);
    model_trace_free(t);
    model_trace_free(ref);
}

TEST(reader_split_parse_reports_the_serial_error)
{
    size_t bytes, n = 200000;
    const char *path = write_big_trace(n, 0, 180000, &bytes);
    struct model_trace *t = NULL;
    struct sc_error err;
    CHECK_EQ_INT(model_trace_load_file(path, NULL, &t, &err), SC_EPARSE);
    CHECK(t == NULL);
    CHECK_CONTAINS(err.msg, "traceEvents[180000]");
    CHECK_CONTAINS(err.msg, "negative dur");
    CHECK_EQ_INT(err.event, 180000);
}

/* Strings of two traces' tables alike: ids of a, b (MODEL_NONE in both, or
 * the same text). */
static int same_str(const struct model_trace *a, uint32_t x, const struct model_trace *b, uint32_t y)
{
    if (x == MODEL_NONE || y == MODEL_NONE)
        return x == y;
    return strcmp(model_str(a, x), model_str(b, y)) == 0;
}

static int same_track(const struct model_trace *a, uint32_t x, const struct model_trace *b, uint32_t y)
{
    return a->tracks[x].pid == b->tracks[y].pid && a->tracks[x].tid == b->tracks[y].tid;
}

/* The real trace at path, plain, parsed in parts on the cores, the parts'
 * tables joined by moving their pages (common/pagevec.h), reads as the
 * serial parse of the same bytes: every event, its details, operator's
 * arguments, collective and sync records and every flow, by their text
 * and tracks. */
static void check_split_equals_serial(const char *path)
{
    struct stat st;
    REQUIRE(stat(path, &st) == 0 && st.st_size > 16 << 20); /* big enough to be split */
    struct model_trace *t, *ref;
    if (!split_and_serial(path, &t, &ref))
        return;
    CHECK_EQ_INT(t->n_events, ref->n_events);
    CHECK_EQ_INT(t->n_infos, ref->n_infos);
    CHECK_EQ_INT(t->n_op_args, ref->n_op_args);
    CHECK_EQ_INT(t->n_flows, ref->n_flows);
    CHECK_EQ_INT(t->n_flow_entries, ref->n_flow_entries);
    CHECK_EQ_INT(t->n_launch_flows, ref->n_launch_flows);
    CHECK_EQ_INT(t->n_colls, ref->n_colls);
    CHECK_EQ_INT(t->n_syncs, ref->n_syncs);
    CHECK(t->n_events > 70000 && t->n_infos > 9000 && t->n_op_args > 30000 && t->n_flows > 30000);
    size_t bad = 0;
    for (size_t i = 0; i < t->n_events && i < ref->n_events; i++) {
        const struct model_event *x = &t->events[i], *y = &ref->events[i];
        int same = x->ts == y->ts && x->dur == y->dur && x->correlation == y->correlation &&
                   x->external_id == y->external_id && x->kind == y->kind && x->rt == y->rt &&
                   same_str(t, x->name, ref, y->name) && same_track(t, x->track, ref, y->track) &&
                   same_str(t, t->cats[x->cat].name, ref, ref->cats[y->cat].name) &&
                   (x->info == MODEL_NONE) == (y->info == MODEL_NONE);
        const struct model_info *p = same ? model_event_info(t, x) : NULL, *q = p ? model_event_info(ref, y) : NULL;
        const struct model_op_args *pa = same ? model_event_args(t, x) : NULL, *qa = pa ? model_event_args(ref, y) : NULL;
        if (p)
            same = q && p->bytes == q->bytes && p->stream == q->stream && p->device == q->device &&
                   memcmp(p->grid, q->grid, sizeof p->grid) == 0 && memcmp(p->block, q->block, sizeof p->block) == 0 &&
                   (p->sync == MODEL_NONE) == (q->sync == MODEL_NONE);
        if (pa)
            same = qa && same_str(t, pa->input_dims, ref, qa->input_dims) &&
                   same_str(t, pa->input_types, ref, qa->input_types) &&
                   same_str(t, pa->concrete_inputs, ref, qa->concrete_inputs);
        if (same && x->info != MODEL_NONE) {
            const struct model_collective *c = model_event_coll(t, x), *d = model_event_coll(ref, y);
            same = !c == !d;
            if (same && c)
                same = same_str(t, c->name, ref, d->name) && c->in_nelems == d->in_nelems && c->seq == d->seq;
        }
        if (same && p && p->sync != MODEL_NONE)
            same = same_str(t, t->syncs[p->sync].sync_kind, ref, ref->syncs[q->sync].sync_kind) &&
                   t->syncs[p->sync].event_id == ref->syncs[q->sync].event_id;
        bad += !same;
    }
    for (size_t i = 0; i < t->n_flows && i < ref->n_flows; i++) {
        const struct model_flow *x = &t->flows[i], *y = &ref->flows[i];
        bad += !(x->id == y->id && x->ts == y->ts && x->phase == y->phase && x->kind == y->kind &&
                 same_track(t, x->track, ref, y->track) && same_str(t, t->cats[x->cat].name, ref, ref->cats[y->cat].name));
    }
    CHECK_EQ_INT(bad, 0);
    model_trace_free(t);
    model_trace_free(ref);
}

/* The control trace's traceEvents as read (a shared trace), or in reverse
 * order (reversed), written plain to a file of the test's; its path. */
static const char *control_plain(int reversed)
{
    char gz[4096];
    snprintf(gz, sizeof gz, "%s/HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
             th_shared_dir("traces"));
    gzFile f = gzopen(gz, "rb");
    if (!f)
        return NULL;
    size_t len = 0, cap = 64 << 20;
    char *json = malloc(cap);
    if (!json) {
        gzclose(f);
        return NULL;
    }
    for (int n; (n = gzread(f, json + len, (unsigned)(cap - len))) > 0;)
        len += (size_t)n;
    gzclose(f);
    const char *path = NULL;
    if (!reversed) {
        path = len < cap ? th_write_file("control.json", json, len) : NULL;
    } else {
        json_error_t jerr;
        json_t *doc = json_loadb(json, len, 0, &jerr), *ev = json_object_get(doc, "traceEvents"), *rev = json_array();
        for (size_t i = json_array_size(ev); i-- > 0;)
            json_array_append(rev, json_array_get(ev, i));
        char *text = doc && json_is_array(ev) && !json_object_set_new(doc, "traceEvents", rev)
                         ? json_dumps(doc, JSON_COMPACT)
                         : NULL;
        if (text)
            path = th_write_file("control-reversed.json", text, strlen(text));
        free(text);
        json_decref(doc);
    }
    free(json);
    return path;
}

/* The control trace as shared: its operators all lie in the first part. */
TEST(reader_split_parse_of_a_real_trace_equals_serial_parse)
{
    const char *path = control_plain(0);
    REQUIRE(path);
    check_split_equals_serial(path);
}

/* The same events in reverse order, so that the operators' arguments and
 * collectives come in the later parts and their rows are renumbered as
 * they join the first part's. */
TEST(reader_split_parse_of_a_real_trace_reversed_equals_serial_parse)
{
    const char *path = control_plain(1);
    REQUIRE(path);
    check_split_equals_serial(path);
}

/* Trace rel of the shared traces read whole and lean (the way replays and
 * inspect read): the same events, GPU details and collectives; of the
 * operators' rows only those with a collective, without inputs; the flows
 * counted alike, none kept. Counts what the whole read had into *inputs
 * (operators with input dims), *op_colls (operators with a collective)
 * and *launches (launch flows). */
static void check_lean(const char *rel, size_t *inputs, size_t *op_colls, size_t *launches)
{
    struct model_load_opts o;
    struct model_trace *w = NULL, *s = NULL;
    struct sc_error err;
    const char *path = th_shared_path(rel);
    model_load_opts_default(&o);
    o.lean = 1;
    REQUIRE(model_trace_load_file(path, NULL, &w, &err) == SC_OK);
    REQUIRE(model_trace_load_file(path, &o, &s, &err) == SC_OK);
    CHECK_EQ_INT(s->n_events, w->n_events);
    CHECK_EQ_INT(s->n_infos, w->n_infos);
    CHECK_EQ_INT(s->n_colls, w->n_colls);
    CHECK_EQ_INT(s->n_flows, 0);
    CHECK_EQ_INT(w->n_flow_entries, w->n_flows);
    CHECK_EQ_INT(s->n_flow_entries, w->n_flows);
    CHECK_EQ_INT(s->n_launch_flows, w->n_launch_flows);
    for (size_t i = 0; i < w->n_flows; i++)
        *launches += w->flows[i].kind == MODEL_FLOW_LAUNCH;
    CHECK_EQ_INT(w->n_launch_flows, *launches);
    size_t bad = 0, rows = 0;
    for (size_t i = 0; i < w->n_events && i < s->n_events; i++) {
        const struct model_event *x = &w->events[i], *y = &s->events[i];
        const struct model_info *p = model_event_info(w, x), *q = model_event_info(s, y);
        const struct model_op_args *g = model_event_args(w, x), *h = model_event_args(s, y);
        const struct model_collective *c = model_event_coll(w, x), *d = model_event_coll(s, y);
        int same = x->ts == y->ts && x->dur == y->dur && x->kind == y->kind && x->correlation == y->correlation &&
                   same_str(w, x->name, s, y->name) && same_track(w, x->track, s, y->track) && !p == !q &&
                   (!p || (p->stream == q->stream && p->bytes == q->bytes && memcmp(p->grid, q->grid, sizeof p->grid) == 0)) &&
                   !c == !d && (!c || (same_str(w, c->name, s, d->name) && c->in_nelems == d->in_nelems && c->seq == d->seq));
        if (g && g->input_dims != MODEL_NONE)
            ++*inputs;
        if (g && g->coll != MODEL_NONE) {
            ++*op_colls;
            rows++;
        }
        /* an operator keeps a row for its collective only, and no input */
        if (same && h)
            same = h->coll != MODEL_NONE && h->input_dims == MODEL_NONE && h->input_types == MODEL_NONE &&
                   h->concrete_inputs == MODEL_NONE;
        bad += !same;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(s->n_op_args, rows);
    model_trace_free(w);
    model_trace_free(s);
}

TEST(reader_lean_load_drops_inputs_and_flows_only)
{
    size_t inputs = 0, op_colls = 0, launches = 0;
    check_lean("HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz", &inputs, &op_colls, &launches);
    CHECK(inputs > 30000);    /* the control trace's operators have their dims */
    CHECK(launches > 30000); /* and its launches their flows */
    inputs = op_colls = launches = 0;
    check_lean("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz", &inputs, &op_colls, &launches);
    CHECK(op_colls > 20); /* nccl_data's record_param_comms operators */
}

/* ---- the end of the document, wherever the read buffer ends ------------------------ */

/* The reader reads into a 2 MiB buffer: the first one ends at 2 MiB; a
 * later one at the start of the item that crossed the end of the previous
 * one, plus 2 MiB. An item is an event with the ',' before it. */
enum { EVENT_BYTES = 100, READER_BUFFER = 2 << 20, FIRST_EVENT_AT = 16 };

/* A trace of exactly `len` bytes: 100-byte events, then "]", blanks, "}". */
static char *doc_of_length(size_t len)
{
    char *d = malloc(len + 64);
    size_t n = (len - 17) / (EVENT_BYTES + 1), at = 0;
    at += (size_t)snprintf(d, len + 64, "{\"traceEvents\":[");
    for (size_t i = 0; i < n; i++) {
        size_t start = at;
        at += (size_t)snprintf(d + at, len + 64 - at, "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"", i ? "," : "");
        size_t tail = 40; /* ","pid":1,"tid":1,"ts":NNNNNNN,"dur":1} */
        size_t name = EVENT_BYTES + (i ? 1 : 0) - (at - start) - tail;
        memset(d + at, 'a', name);
        at += name;
        at += (size_t)snprintf(d + at, len + 64 - at, "\",\"pid\":1,\"tid\":1,\"ts\":%07zu,\"dur\":1}", 1000000 + 2 * i);
    }
    d[at++] = ']';
    while (at < len - 1)
        d[at++] = ' ';
    d[at++] = '}';
    CHECK_EQ_INT(at, len);
    return d;
}

static int loads(const char *name, const void *data, size_t n, int gzip, size_t cut, int flip)
{
    struct model_trace *t = NULL;
    struct sc_error err;
    const char *path = gzip ? th_write_gzip(name, data, n) : th_write_file(name, data, n);
    if (cut || flip) {
        size_t fn;
        char *f = th_read_file(path, &fn);
        if (flip)
            f[fn - 8] ^= 1; /* the CRC */
        path = th_write_file(name, f, fn - cut);
        free(f);
    }
    int rc = model_trace_load_file(path, NULL, &t, &err);
    model_trace_free(t);
    return rc;
}

TEST(reader_document_must_end_the_input_at_every_buffer_boundary)
{
    size_t item_across_first = FIRST_EVENT_AT - 1 +
        (READER_BUFFER - (FIRST_EVENT_AT - 1)) / (EVENT_BYTES + 1) * (EVENT_BYTES + 1);
    size_t bounds[2] = {READER_BUFFER, item_across_first + READER_BUFFER};
    for (int b = 0; b < 2; b++) {
        for (int delta = -1; delta <= 1; delta++) {
            size_t len = bounds[b] + (size_t)(ptrdiff_t)delta;
            char *d = doc_of_length(len + 4);
            char *t = doc_of_length(len);
            char what[64];
            snprintf(what, sizeof what, "boundary %d%+d", b, delta);
            if (!(loads("p.json", t, len, 0, 0, 0) == SC_OK))
                sc_check_fail(__FILE__, __LINE__, "%s plain", what);
            if (!(loads("g.json.gz", t, len, 1, 0, 0) == SC_OK))
                sc_check_fail(__FILE__, __LINE__, "%s gzip", what);
            memcpy(d, t, len);
            memcpy(d + len, " \n\t ", 4);
            if (!(loads("p.json", d, len + 4, 0, 0, 0) == SC_OK))
                sc_check_fail(__FILE__, __LINE__, "%s plain, blanks after", what);
            memcpy(d + len, "x", 1);
            if (!(loads("p.json", d, len + 1, 0, 0, 0) == SC_EPARSE))
                sc_check_fail(__FILE__, __LINE__, "%s plain, data after", what);
            if (!(loads("g.json.gz", d, len + 1, 1, 0, 0) == SC_EPARSE))
                sc_check_fail(__FILE__, __LINE__, "%s gzip, data after", what);
            memcpy(d + len, "}", 1);
            if (!(loads("p.json", d, len + 1, 0, 0, 0) == SC_EPARSE))
                sc_check_fail(__FILE__, __LINE__, "%s plain, '}' after", what);
            if (!(loads("g.json.gz", t, len, 1, 8, 0) == SC_EPARSE))
                sc_check_fail(__FILE__, __LINE__, "%s gzip without its trailer", what);
            if (!(loads("g.json.gz", t, len, 1, 3, 0) == SC_EPARSE))
                sc_check_fail(__FILE__, __LINE__, "%s gzip, trailer cut", what);
            if (!(loads("g.json.gz", t, len, 1, 0, 1) == SC_EPARSE))
                sc_check_fail(__FILE__, __LINE__, "%s gzip, bad CRC", what);
            free(d);
            free(t);
        }
    }
}

/* ---- counting only (upload validation) ------------------------------------------- */

TEST(reader_count_only_counts_what_a_full_read_counts)
{
    static const char *const names[] = {"cuda_sync.json", "graph_launch.json", "legacy_caps.json", "rocm.json",
                                        "unknown_categories.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256];
        struct model_load_opts o;
        struct model_trace *full = NULL, *counted = NULL;
        struct sc_error err;
        snprintf(path, sizeof path, "tests/fixtures/%s", names[i]);
        model_load_opts_default(&o);
        CHECK_EQ_INT(model_trace_load_file(path, &o, &full, &err), SC_OK);
        o.count_only = 1;
        CHECK_EQ_INT(model_trace_load_file(path, &o, &counted, &err), SC_OK);
        CHECK_EQ_INT(counted->n_entries, full->n_entries);
        CHECK_EQ_INT(counted->n_steps, full->n_steps);
        CHECK_EQ_INT(counted->rank, full->rank);
        CHECK(counted->n_events <= counted->n_steps * 2 + 1); /* step markers only */
        model_trace_free(full);
        model_trace_free(counted);
    }
    /* and it refuses what a full read refuses */
    struct sc_error err;
    struct model_load_opts o;
    struct model_trace *t = NULL;
    static const char bad[] = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":-1}]}";
    model_load_opts_default(&o);
    o.count_only = 1;
    CHECK_EQ_INT(model_trace_load_mem(bad, sizeof bad - 1, "bad", &o, &t, &err), SC_EPARSE);
    CHECK_CONTAINS(err.msg, "negative dur");
}
