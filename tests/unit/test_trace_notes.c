/* tests/unit/test_trace_notes.c: the notes a what-if reads of a trace
 * (estimator/whatif/trace_notes.h) stand for the trace's events.
 *
 * On a measured eager step of data/calibration/torch-steps (module
 * annotations, the autograd engine, GEMMs with shapes) and on the sample
 * job (four ranks with collectives): the notes hold every runtime call,
 * sorted, each collective's size as the trace's arguments give it and
 * each GEMM's shape as the calibration's op-to-kernel join finds it. Then
 * the traces are shed to their headers, as a built model's are: the
 * structure recovered and the what-ifs run from the notes alone equal
 * those read from the whole traces, field for field, and without notes a
 * shed trace is a clear error. */
#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/gemm_samples.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/trace_notes.h"
#include "estimator/whatif/whatif.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

static const char torch_step[] = "data/calibration/torch-steps/h100-sxm/gpt-h1024-s1024-b8.pt.trace.json.gz";
/* its row of data/calibration/torch-steps/h100-sxm.csv, as
 * tests/whatif_steps.py describes it */
static const char torch_config[] =
    "{\"tp\":1,\"pp\":1,\"dp\":1,\"vocab\":50304,\"dtype\":\"bf16\",\"mlp\":\"gelu\",\"framework\":\"pytorch\","
    "\"master_weights\":\"bf16\",\"tied_embeddings\":true,\"bias\":false,\"global_batch\":8,\"layers\":8,\"hidden\":1024,"
    "\"heads\":16,\"kv_heads\":16,\"ffn\":4096,\"seq\":1024,\"micro_batch\":8}";
static const char *const sample[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                     "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
static const char sample_config[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":8}";

struct loaded {
    struct model_job *job;
    struct model_graph *g;
    struct job_config cfg;
};

static void load(const char *const *paths, size_t n, const char *config, struct loaded *l)
{
    struct sc_error err;
    REQUIRE(model_job_load(paths, n, NULL, 0, &l->job, &err) == SC_OK);
    REQUIRE(model_graph_build(l->job, NULL, &l->g, &err) == SC_OK);
    REQUIRE(spec_job_config_parse(config, strlen(config), &l->cfg, &err) == SC_OK);
}

static void unload(struct loaded *l)
{
    model_graph_free(l->g);
    model_job_free(l->job);
}

/* The notes of one whole trace against its events. */
static void check_against_trace(const struct model_trace *t, const struct trace_notes *n)
{
    struct gemm_samples samples = {0};
    struct sc_error err;
    size_t calls = 0, colls = 0, gemms = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const struct trace_call_note *c = trace_notes_call(n, (uint32_t)i);
        int is_call = e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER;
        calls += is_call;
        CHECK_EQ_INT(c != NULL, is_call);
        if (c) {
            CHECK_EQ_INT(c->track, e->track);
            CHECK(c->at == e->ts - t->first_ts);
        }
        const struct trace_coll_note *cn = trace_notes_coll(n, (uint32_t)i);
        const struct model_collective *mc = model_event_coll(t, e);
        CHECK_EQ_INT(cn != NULL, mc != NULL);
        if (cn && mc) {
            colls++;
            for (int op = 0; op < MODEL_COLL_OP_COUNT; op++)
                CHECK(trace_coll_note_bytes(cn, op) == model_coll_bytes(t, mc, (enum model_coll_op)op));
            CHECK_EQ_INT(cn->group_size, mc->group_size);
        }
    }
    CHECK_EQ_INT(n->n_calls, calls);
    CHECK_EQ_INT(n->n_colls, colls);
    for (size_t k = 1; k < n->n_calls; k++)
        CHECK(n->calls[k - 1].event < n->calls[k].event);
    for (size_t k = 1; k < n->n_op_keys; k++)
        CHECK(n->op_keys[k - 1] <= n->op_keys[k]);
    /* every kernel the join gives a sample to has that sample's shape */
    uint32_t *sample_of = malloc((t->n_events ? t->n_events : 1) * sizeof *sample_of);
    REQUIRE(sample_of);
    REQUIRE(calib_gemm_samples_of_kernels(t, &samples, NULL, sample_of, &err) == SC_OK);
    for (size_t i = 0; i < t->n_events; i++) {
        const struct trace_gemm_note *gn = trace_notes_gemm(n, (uint32_t)i);
        CHECK_EQ_INT(gn != NULL, sample_of[i] != MODEL_NONE);
        if (!gn)
            continue;
        gemms++;
        const struct gemm_sample *s = &samples.v[sample_of[i]];
        CHECK(gn->shape.m == s->m && gn->shape.n == s->n && gn->shape.k == s->k && gn->shape.batch == s->batch &&
              gn->shape.dtype == s->dtype);
    }
    CHECK_EQ_INT(n->n_gemms, gemms);
    calib_gemm_samples_release(&samples);
    free(sample_of);
}

static void check_same_structure(const struct job_structure *a, const struct job_structure *b, size_t n)
{
    CHECK(memcmp(a->layer, b->layer, n * sizeof *a->layer) == 0);
    CHECK(memcmp(a->role, b->role, n) == 0);
    CHECK(memcmp(a->coll_bytes, b->coll_bytes, n * sizeof *a->coll_bytes) == 0);
    CHECK(memcmp(a->coll_size, b->coll_size, n * sizeof *a->coll_size) == 0);
    CHECK(memcmp(a->phase, b->phase, n) == 0);
    CHECK(memcmp(a->dp_use, b->dp_use, n) == 0);
    CHECK(memcmp(a->host_ops, b->host_ops, n * sizeof *a->host_ops) == 0);
    CHECK(memcmp(a->gemm, b->gemm, n * sizeof *a->gemm) == 0);
    CHECK_EQ_INT(a->n_gemms, b->n_gemms);
    for (size_t k = 0; k < a->n_gemms && k < b->n_gemms; k++)
        CHECK(a->gemms[k].m == b->gemms[k].m && a->gemms[k].n == b->gemms[k].n && a->gemms[k].k == b->gemms[k].k &&
              a->gemms[k].batch == b->gemms[k].batch && a->gemms[k].dtype == b->gemms[k].dtype);
    CHECK_EQ_INT(a->layer_source, b->layer_source);
    CHECK_EQ_INT(a->layers_per_rank, b->layers_per_rank);
    CHECK_EQ_INT(a->backward_tasks, b->backward_tasks);
    CHECK_EQ_INT(a->grad_sync, b->grad_sync);
    CHECK_EQ_INT(a->host_ops_total, b->host_ops_total);
    CHECK(a->host_ops_ns == b->host_ops_ns);
    CHECK(memcmp(a->by_use, b->by_use, sizeof a->by_use) == 0);
    CHECK(memcmp(a->by_role, b->by_role, sizeof a->by_role) == 0);
}

/* Notes taken, the traces shed: the same structure and what-ifs as from
 * the whole traces. */
static void shed_and_compare(struct loaded *l, const char *const *sets, size_t n_sets, size_t *layered,
                             size_t *gemm_tasks)
{
    struct trace_notes_set notes;
    struct job_structure whole, noted;
    struct sc_error err;
    double step[8];
    REQUIRE(n_sets <= sizeof step / sizeof *step);
    REQUIRE(trace_notes_of_graph(l->g, &notes, &err) == SC_OK);
    CHECK_EQ_INT(notes.n_ranks, l->g->n_ranks);
    for (uint16_t r = 0; r < l->g->n_ranks; r++)
        check_against_trace(model_graph_trace(l->g, r), &notes.rank[r]);
    REQUIRE(whatif_job_structure_recover(l->g, NULL, &l->cfg, &whole, &err) == SC_OK);
    for (size_t k = 0; k < n_sets; k++) {
        struct job_config set;
        struct whatif_result res;
        REQUIRE(spec_job_config_parse_set_list(sets[k], &set, &err) == SC_OK);
        REQUIRE(whatif_run(l->g, NULL, &l->cfg, &set, &res, &err) == SC_OK);
        step[k] = res.step_ms;
        whatif_release(&res);
    }
    for (size_t i = 0; i < l->job->n_ranks; i++)
        model_trace_shed(l->job->ranks[i]);
    /* without notes, a shed trace cannot be read */
    CHECK_EQ_INT(whatif_job_structure_recover(l->g, NULL, &l->cfg, &noted, &err), SC_EINVAL);
    CHECK(strstr(err.msg, "shed") != NULL);
    REQUIRE(whatif_job_structure_recover(l->g, &notes, &l->cfg, &noted, &err) == SC_OK);
    check_same_structure(&whole, &noted, l->g->n_tasks);
    *layered = noted.layer_tasks;
    *gemm_tasks = noted.n_gemms;
    for (size_t k = 0; k < n_sets; k++) {
        struct job_config set;
        struct whatif_result res;
        REQUIRE(spec_job_config_parse_set_list(sets[k], &set, &err) == SC_OK);
        REQUIRE(whatif_run(l->g, &notes, &l->cfg, &set, &res, &err) == SC_OK);
        CHECK(res.step_ms == step[k]);
        whatif_release(&res);
    }
    whatif_job_structure_release(&whole);
    whatif_job_structure_release(&noted);
    trace_notes_set_release(&notes);
}

TEST(trace_notes_stand_for_a_torch_steps_trace_once_shed)
{
    static const char *const sets[] = {"tp=2", "gpu=h200", "layers=16", "dp=4,gpu=a100-sxm4-80gb"};
    const char *paths[] = {torch_step};
    struct loaded l;
    size_t layered, gemms;
    load(paths, 1, torch_config, &l);
    shed_and_compare(&l, sets, sizeof sets / sizeof *sets, &layered, &gemms);
    CHECK(layered > 100); /* module annotations found layers */
    CHECK(gemms > 50);    /* and the GEMMs their shapes: the notes were not empty */
    unload(&l);
}

TEST(trace_notes_stand_for_the_sample_job_once_shed)
{
    static const char *const sets[] = {"dp=8", "gpu=h100-sxm", "layers=16"};
    struct loaded l;
    size_t layered, gemms;
    load(sample, 4, sample_config, &l);
    shed_and_compare(&l, sets, sizeof sets / sizeof *sets, &layered, &gemms);
    CHECK(layered > 0);
    unload(&l);
}

/* The layer and hook of the call of correlation id `corr` in n, or -2. */
static void call_of(const struct model_trace *t, const struct trace_notes *n, int corr, int *layer, int *hook)
{
    *layer = *hook = -2;
    for (size_t i = 0; i < n->n_calls; i++) {
        const struct model_event *e = &t->events[n->calls[i].event];
        if (e->correlation == corr) {
            *layer = n->calls[i].layer;
            *hook = n->calls[i].hook;
        }
    }
}

/* FSDP2's hooks around its units place the calls from them in the unit's
 * layer: forward from the start of pre_forward to the end of post_forward,
 * backward (on the autograd engine's thread) from the start of
 * pre_backward to the end of the post_backward hooks after it, the hooks'
 * own calls (a gather in pre_forward, a reduce-scatter in
 * post_backward_reduce) with their hook; a unit's path must end in
 * ".<layer>", and hooks without their pair, or naming a layer past 65,535
 * or no number, place nothing. A call inside "Optimizer.step#..." is the
 * optimizer's. */
TEST(trace_notes_fsdp_units_and_the_optimizer_step)
{
    struct tb tb;
    struct sc_error err;
    struct trace_notes n;
    enum { AUTOGRAD = 102 };
    tb_init(&tb, 0, 1);
    tb_step(&tb, 1, 0, 1000);
    tb_event(&tb, "user_annotation", "FSDP::pre_forward (blocks.0)", TB_PID, TB_MAIN, 10, 5, NULL);
    int gather = tb_launch(&tb, 11, 2, 7, "all_gather_copy_in", 12, 1);
    int f0 = tb_launch(&tb, 20, 2, 7, "gemm_a", 25, 10);
    tb_event(&tb, "user_annotation", "FSDP::post_forward (blocks.0)", TB_PID, TB_MAIN, 30, 2, NULL);
    tb_event(&tb, "user_annotation", "FSDP::pre_forward (model.layers.1)", TB_PID, TB_MAIN, 40, 5, NULL);
    int f1 = tb_launch(&tb, 50, 2, 7, "gemm_b", 55, 10);
    tb_event(&tb, "user_annotation", "FSDP::post_forward (model.layers.1)", TB_PID, TB_MAIN, 60, 2, NULL);
    /* hostile or unpaired: a post without its pre, a layer past the cap,
     * no number, nothing in the parentheses */
    tb_event(&tb, "user_annotation", "FSDP::post_forward (blocks.2)", TB_PID, TB_MAIN, 70, 2, NULL);
    tb_event(&tb, "user_annotation", "FSDP::pre_forward (blocks.99999)", TB_PID, TB_MAIN, 80, 2, NULL);
    tb_event(&tb, "user_annotation", "FSDP::pre_forward (blocks.x3)", TB_PID, TB_MAIN, 84, 2, NULL);
    tb_event(&tb, "user_annotation", "FSDP::pre_forward ()", TB_PID, TB_MAIN, 88, 2, NULL);
    int loss = tb_launch(&tb, 100, 2, 7, "loss", 105, 10);
    tb_event(&tb, "user_annotation", "FSDP::post_forward (blocks.99999)", TB_PID, TB_MAIN, 110, 2, NULL);
    tb_event(&tb, "user_annotation", "FSDP::pre_backward (blocks.0)", TB_PID, AUTOGRAD, 200, 5, NULL);
    int b0 = tb_launch_on(&tb, AUTOGRAD, 210, 2, 7, "gemm_a_grad", 215, 10);
    tb_event(&tb, "user_annotation", "FSDP::post_backward_reduce (blocks.0)", TB_PID, AUTOGRAD, 230, 30, NULL);
    int after = tb_launch_on(&tb, AUTOGRAD, 240, 2, 7, "reduce_scatter_copy_in", 245, 10);
    tb_event(&tb, "user_annotation", "FSDP::post_backward_reshard (blocks.0)", TB_PID, AUTOGRAD, 265, 2, NULL);
    int later = tb_launch_on(&tb, AUTOGRAD, 280, 2, 7, "embedding_grad", 285, 10);
    tb_event(&tb, "user_annotation", "Optimizer.step#SGD.step", TB_PID, TB_MAIN, 300, 50, NULL);
    int opt = tb_launch(&tb, 310, 2, 7, "sgd_step_elementwise", 315, 10);
    const char *path = tb_write(&tb, "fsdp_units.json");
    const char *paths[] = {path};
    struct model_job *job = tb_job(paths, 1);
    const struct model_trace *t = job->ranks[0];
    REQUIRE(trace_notes_of_trace(t, &n, &err) == SC_OK);
    CHECK_EQ_INT(n.unit_layers, 1);
    CHECK_EQ_INT(n.module_layers, 2);
    static const struct {
        const char *what;
        int layer, hook;
    } want[] = {{"pre_forward's gather, blocks.0", 0, TRACE_HOOK_FSDP_PARAMS},
                {"forward, blocks.0", 0, -1},
                {"forward, model.layers.1", 1, -1},
                {"between units", -1, -1},
                {"backward, blocks.0", 0, -1},
                {"post_backward_reduce, blocks.0", 0, TRACE_HOOK_FSDP_GRADS},
                {"after the unit's hooks", -1, -1},
                {"optimizer step", -1, TRACE_HOOK_OPTIMIZER}};
    const int corr[] = {gather, f0, f1, loss, b0, after, later, opt};
    for (size_t k = 0; k < sizeof corr / sizeof *corr; k++) {
        int layer, hook;
        call_of(t, &n, corr[k], &layer, &hook);
        if (layer != want[k].layer || hook != want[k].hook)
            sc_check_fail(__FILE__, __LINE__, "%s: layer %d, hook %d; want layer %d, hook %d", want[k].what, layer,
                          hook, want[k].layer, want[k].hook);
    }
    trace_notes_release(&n);
    model_job_free(job);
    tb_free(&tb);
}
