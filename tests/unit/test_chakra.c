/* tests/unit/test_chakra.c: Chakra ET export and import
 * (estimator/interchange/chakra_export.h, estimator/interchange/chakra_import.h), the reader
 * (model/chakra_read.h) and the framing (model/chakra_et.h): what the
 * files hold node by node, that walking them in dependency order gives the
 * replayed step, and that a file replays as its critical path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <et_def.pb-c.h>
#include <jansson.h>

#include "estimator/interchange/chakra_export.h"
#include "estimator/interchange/chakra_import.h"
#include "model/chakra_read.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

/* The attribute named, or NULL. */
static const ChakraProtoMsg__AttributeProto *attr_of(const ChakraProtoMsg__Node *n, const char *name)
{
    for (size_t k = 0; k < n->n_attr; k++)
        if (!strcmp(n->attr[k]->name, name))
            return n->attr[k];
    return NULL;
}

struct walked {
    ChakraProtoMsg__Node **nodes;
    size_t n;
    int64_t step_us; /* from the step's begin node's start to its end node's end */
    int deps_ok;     /* every data dep names an earlier node */
};

static void walked_release(struct walked *w)
{
    for (size_t k = 0; k < w->n; k++)
        chakra_proto_msg__node__free_unpacked(w->nodes[k], NULL);
    free(w->nodes);
}

/* Decode one file and walk it: each node starts when its data deps have
 * ended and lasts its duration (ids are file positions, checked). */
static int walk(const struct model_et_buf *b, struct walked *w)
{
    struct model_et_cursor c = {b->data, b->n, 0};
    const unsigned char *msg;
    size_t len, cap = 0;
    struct sc_error err;
    int64_t *end = NULL, begin = -1;
    memset(w, 0, sizeof *w);
    w->deps_ok = 1;
    if (model_et_next(&c, &msg, &len, &err) != 1)
        return -1;
    ChakraProtoMsg__GlobalMetadata *meta = chakra_proto_msg__global_metadata__unpack(NULL, len, msg);
    CHECK(meta && !strcmp(meta->version, MODEL_ET_SCHEMA_VERSION));
    chakra_proto_msg__global_metadata__free_unpacked(meta, NULL);
    while (model_et_next(&c, &msg, &len, &err) == 1) {
        ChakraProtoMsg__Node *n = chakra_proto_msg__node__unpack(NULL, len, msg);
        REQUIRE(n);
        if (w->n == cap) {
            cap = cap ? 2 * cap : 64;
            w->nodes = realloc(w->nodes, cap * sizeof *w->nodes);
            end = realloc(end, cap * sizeof *end);
            REQUIRE(w->nodes && end);
        }
        w->nodes[w->n] = n;
        CHECK_EQ_INT(n->id, w->n);
        int64_t start = 0;
        for (size_t d = 0; d < n->n_data_deps; d++) {
            if (n->data_deps[d] >= w->n) {
                w->deps_ok = 0;
                continue;
            }
            if (end[n->data_deps[d]] > start)
                start = end[n->data_deps[d]];
        }
        end[w->n] = start + (int64_t)n->duration_micros;
        const ChakraProtoMsg__AttributeProto *st = attr_of(n, "step");
        if (st && !strcmp(st->string_val, "begin"))
            begin = start;
        if (st && !strcmp(st->string_val, "end"))
            w->step_us = end[w->n] - begin;
        w->n++;
    }
    free(end);
    return c.off == b->n ? 0 : -1;
}

/* One rank of two: an aten::mm (Input Dims) launches a 64x128x256 GEMM,
 * a pageable copy of 4096 bytes, then an all-reduce of 1024 floats over
 * the pair; a stream sync and host work end the step. */
static const char *fixture(int rank)
{
    static char paths[2][512];
    struct tb tb;
    tb_init(&tb, rank, 2);
    tb_step(&tb, 1, 0, 1500);
    tb_event(&tb, "cpu_op", "aten::mm", TB_PID, TB_MAIN, 5, 20,
             "\"Input Dims\": [[64, 128], [128, 256]], \"Input type\": [\"float\", \"float\"]");
    tb_launch(&tb, 10, 5, 7, "volta_sgemm_128x64_nn", 20, 300);
    tb_copy(&tb, 30, 6, 7, "Memcpy HtoD (Pageable -> Device)", 320, 10);
    int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", 40, 5);
    tb_kernel_args(&tb, corr, 13, "ncclKernel_AllReduce_RING_LL_Sum_float", 330 + 50 * rank, 400 - 50 * rank,
                   "\"Collective name\": \"allreduce\", \"In msg nelems\": 1024, \"Out msg nelems\": 1024, "
                   "\"Group size\": 2, \"dtype\": \"Float\", \"Process Group Name\": \"0\"");
    tb_call(&tb, TB_MAIN, "cudaDeviceSynchronize", 50, 690);
    tb_op(&tb, TB_MAIN, "aten::add", 800, 100);
    char name[32];
    snprintf(name, sizeof name, "chakra%d.json", rank);
    snprintf(paths[rank], sizeof paths[rank], "%s", tb_write(&tb, name));
    tb_free(&tb);
    return paths[rank];
}

TEST(chakra_export_types_and_walks_as_replayed)
{
    const char *paths[2] = {fixture(0), fixture(1)};
    struct model_job *job = tb_job(paths, 2);
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    struct est_chakra_out out;
    struct sc_error err;
    REQUIRE(job);
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    CHECK_EQ_INT(chakra_export(g, r, NULL, "bad/prefix", &out, &err), SC_EINVAL);
    chakra_out_release(&out);
    REQUIRE(chakra_export(g, r, NULL, "job", &out, &err) == SC_OK);
    REQUIRE(out.n_files == 3);
    CHECK_STREQ(out.files[0].name, "job.0.et");
    CHECK_STREQ(out.files[1].name, "job.1.et");
    CHECK_STREQ(out.files[2].name, "comm_group.json");
    json_t *groups = json_loadb((const char *)out.files[2].body.data, out.files[2].body.n, 0, NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(groups, "1")), 2);
    json_decref(groups);

    size_t nodes = 0, tasks = 0;
    for (int rank = 0; rank < 2; rank++) {
        struct walked w;
        REQUIRE(walk(&out.files[rank].body, &w) == 0);
        CHECK(w.deps_ok);
        nodes += w.n;
        /* the walk is the replayed step, to the microsecond's rounding */
        CHECK_NEAR(w.step_us, r->steps[rank].replayed_ns / 1000.0, 2.0);
        int gemm = 0, copy = 0, coll = 0;
        for (size_t k = 0; k < w.n; k++) {
            const ChakraProtoMsg__Node *n = w.nodes[k];
            const ChakraProtoMsg__AttributeProto *cpu = attr_of(n, "is_cpu_op");
            CHECK(cpu && cpu->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL);
            tasks += strcmp(n->name, "host work") && !strstr(n->name, " latency");
            if (!strcmp(n->name, "volta_sgemm_128x64_nn")) {
                const ChakraProtoMsg__AttributeProto *ops = attr_of(n, "num_ops");
                gemm++;
                CHECK(n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE && !cpu->bool_val);
                CHECK(ops && ops->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL &&
                      ops->int64_val == 2LL * 64 * 128 * 256);
                CHECK(n->inputs && !strcmp(n->inputs->shapes, "[[64, 128], [128, 256]]"));
                CHECK_EQ_INT(n->duration_micros, 300);
                CHECK_EQ_INT(n->n_ctrl_deps, 1);
            }
            if (!strncmp(n->name, "Memcpy", 6)) {
                const ChakraProtoMsg__AttributeProto *ts = attr_of(n, "tensor_size");
                copy++;
                CHECK(ts && ts->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL &&
                      ts->uint64_val == 4096);
            }
            if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
                const ChakraProtoMsg__AttributeProto *ct = attr_of(n, "comm_type"), *cs = attr_of(n, "comm_size");
                const ChakraProtoMsg__AttributeProto *pg = attr_of(n, "pg_name"), *desc = attr_of(n, "pg_desc");
                coll++;
                CHECK(ct && ct->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL &&
                      ct->int64_val == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE);
                CHECK(cs && cs->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL &&
                      cs->int64_val == 4096);
                CHECK(pg && !strcmp(pg->string_val, "1"));
                CHECK(desc && !strcmp(desc->string_val, "0"));
            }
        }
        CHECK_EQ_INT(gemm, 1);
        CHECK_EQ_INT(copy, 1);
        CHECK_EQ_INT(coll, 1);
        walked_release(&w);
    }
    CHECK_EQ_INT(nodes, out.nodes);
    CHECK_EQ_INT(tasks, g->n_tasks);
    CHECK_EQ_INT(nodes, g->n_tasks + out.host_nodes + out.delay_nodes);
    chakra_out_release(&out);
    model_replay_free(r);
    model_graph_free(g);
    model_job_free(job);
}

/* The framing reader refuses truncated and oversized frames with the
 * offset, and walks a well-formed buffer to its end. */
TEST(chakra_framing_is_bounded)
{
    struct sc_error err;
    const unsigned char *msg;
    size_t len;
    const unsigned char ok[] = {2, 'a', 'b', 0}, short_[] = {5, 'a'}, overlong[] = {0x80, 0x80, 0x80};
    const unsigned char huge[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    struct model_et_cursor c = {ok, sizeof ok, 0};
    CHECK_EQ_INT(model_et_next(&c, &msg, &len, &err), 1);
    CHECK_EQ_INT(len, 2);
    CHECK_EQ_INT(model_et_next(&c, &msg, &len, &err), 1);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(model_et_next(&c, &msg, &len, &err), 0);
    c = (struct model_et_cursor){short_, sizeof short_, 0};
    CHECK_EQ_INT(model_et_next(&c, &msg, &len, &err), -1);
    CHECK_EQ_INT(err.code, SC_EPARSE);
    c = (struct model_et_cursor){overlong, sizeof overlong, 0};
    CHECK_EQ_INT(model_et_next(&c, &msg, &len, &err), -1);
    c = (struct model_et_cursor){huge, sizeof huge, 0};
    CHECK_EQ_INT(model_et_next(&c, &msg, &len, &err), -1);
    CHECK_EQ_INT(err.code, SC_ELIMIT);
    CHECK_EQ_INT(err.offset, 0);
}

/* ---- import ------------------------------------------------------------------------ */

static const char *corpus(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "tests/fuzz/corpus/chakra/%s", name);
    return path;
}

/* The older generation (no version; is_cpu_op as an int32, comm_type and
 * comm_size as strings, a collective typed by its name only) reads, and
 * the file replays as the critical path through its durations:
 * 30 + 200 + 50 + 20 us. */
TEST(chakra_import_reads_the_older_generation)
{
    struct model_et_rank *r = NULL;
    struct sc_error err;
    REQUIRE(model_et_read_file(corpus("older-generation.et"), NULL, &r, &err) == SC_OK);
    CHECK_EQ_INT(r->n_nodes, 4);
    CHECK_STREQ(sc_strtab_str(&r->strings, r->version), "");
    CHECK(r->nodes[0].cpu && !r->nodes[1].cpu);
    CHECK_EQ_INT(r->nodes[2].coll, MODEL_COLL_ALLREDUCE);
    CHECK_EQ_INT(r->nodes[2].comm_size, 4096);
    CHECK_EQ_INT(r->nodes[3].coll, MODEL_COLL_BROADCAST);
    CHECK_EQ_INT(r->nodes[3].n_deps, 2);
    CHECK_EQ_INT(r->n_deps, 4); /* ctrl_deps are not dependencies */
    model_et_rank_free(r);

    const char *path = corpus("older-generation.et");
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_replay *rp = NULL;
    int et;
    REQUIRE(chakra_is_et(&path, 1, &et, &err) == SC_OK && et);
    REQUIRE(chakra_import(&path, 1, NULL, NULL, &job, &g, &err) == SC_OK);
    REQUIRE(model_replay_run(g, NULL, &rp, &err) == SC_OK);
    CHECK_EQ_INT(g->n_tasks, 4 + 2);
    CHECK_EQ_INT(rp->n_steps, 1);
    CHECK_EQ_INT(rp->steps[0].measured_ns, -1);
    CHECK_EQ_INT(rp->steps[0].replayed_ns, 300000);
    CHECK_EQ_INT(job->n_ranks, 1);
    model_replay_free(rp);
    model_graph_free(g);
    model_job_free(job);
}

/* A file is untrusted: a truncated frame, a dependency on no node, a
 * duplicate id, a cycle are errors that say which. */
static size_t pack_nodes(unsigned char *buf, size_t cap, const uint64_t ids[3], const uint64_t deps[3])
{
    struct model_et_buf b = {0};
    struct sc_error err;
    ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    meta.version = (char *)MODEL_ET_SCHEMA_VERSION;
    model_et_append(&b, &meta, &err);
    for (int k = 0; k < 3; k++) {
        ChakraProtoMsg__Node nd = CHAKRA_PROTO_MSG__NODE__INIT;
        uint64_t dep = deps[k];
        nd.id = ids[k];
        nd.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
        nd.duration_micros = 10;
        if (dep != UINT64_MAX) {
            nd.n_data_deps = 1;
            nd.data_deps = &dep;
        }
        model_et_append(&b, &nd, &err);
    }
    size_t n = b.n < cap ? b.n : cap;
    memcpy(buf, b.data, n);
    model_et_buf_release(&b);
    return n;
}

TEST(chakra_import_refuses_bad_files)
{
    unsigned char buf[512];
    struct model_et_rank *r = NULL;
    struct sc_error err;
    const uint64_t ids[3] = {1, 2, 3}, none = UINT64_MAX;
    size_t n = pack_nodes(buf, sizeof buf, ids, (const uint64_t[3]){none, 1, 2});
    CHECK_EQ_INT(model_et_read_mem(buf, n, "ok", NULL, &r, &err), SC_OK);
    CHECK_EQ_INT(r->order[2], 2);
    model_et_rank_free(r);
    CHECK_EQ_INT(model_et_read_mem(buf, n - 1, "cut", NULL, &r, &err), SC_EPARSE);
    CHECK(strstr(err.msg, "runs past the end") != NULL);
    n = pack_nodes(buf, sizeof buf, ids, (const uint64_t[3]){none, 7, 2});
    CHECK_EQ_INT(model_et_read_mem(buf, n, "dangling", NULL, &r, &err), SC_EPARSE);
    CHECK(strstr(err.msg, "depends on node 7") != NULL);
    n = pack_nodes(buf, sizeof buf, (const uint64_t[3]){1, 2, 2}, (const uint64_t[3]){none, 1, none});
    CHECK_EQ_INT(model_et_read_mem(buf, n, "twice", NULL, &r, &err), SC_EPARSE);
    CHECK(strstr(err.msg, "given twice") != NULL);
    n = pack_nodes(buf, sizeof buf, ids, (const uint64_t[3]){3, 1, 2});
    CHECK_EQ_INT(model_et_read_mem(buf, n, "cycle", NULL, &r, &err), SC_EPARSE);
    CHECK(strstr(err.msg, "cycle") != NULL);
    struct model_limits lim;
    model_limits_default(&lim);
    lim.max_events = 2;
    n = pack_nodes(buf, sizeof buf, ids, (const uint64_t[3]){none, 1, 2});
    CHECK_EQ_INT(model_et_read_mem(buf, n, "many", &lim, &r, &err), SC_ELIMIT);
}

/* Exported and imported again: every node a task (and a step's two
 * markers), every data dependency an edge, the all-reduce one collective
 * of both ranks again, and a rank's step the critical path of its file. */
TEST(chakra_import_takes_back_an_export)
{
    const char *paths[2] = {fixture(0), fixture(1)};
    struct model_job *job = tb_job(paths, 2), *back = NULL;
    struct model_graph *g = NULL, *g2 = NULL;
    struct model_replay *r = NULL, *r2 = NULL;
    struct est_chakra_out out;
    struct sc_error err;
    char dir[4096];
    REQUIRE(job);
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    REQUIRE(chakra_export(g, r, NULL, "job", &out, &err) == SC_OK);
    snprintf(dir, sizeof dir, "%s/exported", th_tmpdir());
    mkdir(dir, 0755);
    for (size_t k = 0; k < out.n_files; k++) {
        char name[4200];
        snprintf(name, sizeof name, "exported/%s", out.files[k].name);
        th_write_file(name, out.files[k].body.data, out.files[k].body.n);
    }
    const char *in = dir;
    REQUIRE(chakra_import(&in, 1, NULL, NULL, &back, &g2, &err) == SC_OK);
    REQUIRE(model_replay_run(g2, NULL, &r2, &err) == SC_OK);
    CHECK_EQ_INT(back->n_ranks, 2);
    CHECK_EQ_INT(g2->n_tasks, out.nodes + 2 * 2);
    CHECK_EQ_INT(g2->n_edges - g2->stats.edges_by_kind[MODEL_EDGE_STEP_END], out.data_deps);
    CHECK_EQ_INT(g2->stats.collectives_matched, 1);
    for (int rank = 0; rank < 2; rank++) {
        struct walked w;
        REQUIRE(walk(&out.files[rank].body, &w) == 0);
        /* coupled, a rank waits for its peer at the all-reduce: no
         * shorter than its file walked alone */
        CHECK(r2->steps[rank].replayed_ns >= w.step_us * 1000);
        CHECK_EQ_INT(r2->steps[rank].measured_ns, -1);
        walked_release(&w);
    }
    chakra_out_release(&out);
    model_replay_free(r);
    model_replay_free(r2);
    model_graph_free(g);
    model_graph_free(g2);
    model_job_free(job);
    model_job_free(back);
}

/* Chakra's own sample (../shared/interop): 3,664 nodes, 3,643 compute
 * and 21 collectives, one rank; it replays as the critical path through
 * its durations, 46,140 us, as Chakra's feeder walks it. */
TEST(chakra_import_replays_the_chakra_sample)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/../interop/chakra/data/chakra.0.et", th_shared_traces());
    FILE *f = fopen(path, "rb");
    if (!f)
        SKIP("%s is not here (the shared interop readers)", path);
    fclose(f);
    struct model_et_rank *et = NULL;
    struct sc_error err;
    REQUIRE(model_et_read_file(path, NULL, &et, &err) == SC_OK);
    size_t comp = 0, coll = 0;
    for (size_t k = 0; k < et->n_nodes; k++) {
        comp += et->nodes[k].type == MODEL_ET_COMP;
        coll += et->nodes[k].type == MODEL_ET_COMM_COLL;
    }
    CHECK_EQ_INT(et->n_nodes, 3664);
    CHECK_EQ_INT(comp, 3643);
    CHECK_EQ_INT(coll, 21);
    /* the critical path through the file's durations, walked here */
    int64_t *end = calloc(et->n_nodes, sizeof *end), longest = 0;
    REQUIRE(end);
    for (size_t k = 0; k < et->n_nodes; k++) {
        uint32_t v = et->order[k];
        int64_t start = 0;
        for (uint32_t d = et->nodes[v].dep0; d < et->nodes[v].dep0 + et->nodes[v].n_deps; d++)
            if (end[et->deps[d]] > start)
                start = end[et->deps[d]];
        end[v] = start + et->nodes[v].dur_ns;
        if (end[v] > longest)
            longest = end[v];
    }
    free(end);
    CHECK_EQ_INT(longest, 46140000);
    const char *p = path;
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    REQUIRE(chakra_import(&p, 1, NULL, NULL, &job, &g, &err) == SC_OK);
    REQUIRE(model_replay_run(g, NULL, &r, &err) == SC_OK);
    CHECK_EQ_INT(g->n_tasks, 3664 + 2);
    CHECK_EQ_INT(r->steps[0].replayed_ns, longest);
    model_et_rank_free(et);
    model_replay_free(r);
    model_graph_free(g);
    model_job_free(job);
}
