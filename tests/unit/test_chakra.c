/* tests/unit/test_chakra.c: Chakra ET export (estimator/chakra_export.h)
 * and its framing (model/chakra_et.h): what the files hold node by node,
 * and that walking them in dependency order gives the replayed step. */
#include <stdlib.h>
#include <string.h>

#include <et_def.pb-c.h>
#include <jansson.h>

#include "estimator/chakra_export.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
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
    CHECK_EQ_INT(est_chakra_export(g, r, NULL, "bad/prefix", &out, &err), SC_EINVAL);
    est_chakra_out_release(&out);
    REQUIRE(est_chakra_export(g, r, NULL, "job", &out, &err) == SC_OK);
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
    est_chakra_out_release(&out);
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
