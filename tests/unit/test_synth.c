/* tests/unit/test_synth.c: the step synthesised from a spec: it replays
 * without forcing anything, its three levels of detail agree, and its
 * schedule behaves as Megatron's does (figures derived in each test). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/synth/estimate.h"
#include "estimator/spec/flops.h"
#include "estimator/whatif/graph_copy.h"
#include "estimator/spec/memory.h"
#include "estimator/synth/synth.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "tests/check.h"
#include "common/banned.h"

static int load(const char *json, struct est_spec *s, const struct hw_profile **hw)
{
    struct sc_error err;
    int rc = spec_load(json, strlen(json), s, hw, &err);
    if (rc)
        fprintf(stderr, "spec: %s\n", err.msg);
    return rc;
}

/* An estimate's step and breakdown at a level of detail, ms: compute
 * busy (exposed and overlapped), communication exposed, host. */
struct bd {
    double step, compute, comm, host;
};

/* Estimate json at detail d with the GPU's default costs, or `override`. */
static int estimate_at(const char *json, enum est_detail d, const struct est_costs *override, struct bd *out)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    struct sc_error err;
    if (load(json, &s, &hw))
        return -1;
    calib_costs_default(hw, &s, &c);
    if (override)
        c = *override;
    if (synth_estimate(&s, hw, &c, d, &e, &err)) {
        fprintf(stderr, "estimate: %s\n", err.msg);
        return -1;
    }
    *out = (struct bd){e.step_ms, (e.breakdown.compute_exposed + e.breakdown.overlap) / 1e6,
                       e.breakdown.comm_exposed / 1e6, e.breakdown.host / 1e6};
    synth_estimate_release(&e);
    return 0;
}

static double estimate_ms(const char *json, enum est_detail d, struct est_costs *override)
{
    struct bd b;
    return estimate_at(json, d, override, &b) ? -1 : b.step;
}

/* Specs of several shapes: dense GPT, Llama-like (GQA, SwiGLU), pipeline
 * with 1F1B and interleaving, tensor and sequence parallelism, context
 * parallelism, MoE with expert parallelism, fp8, recomputation, ZeRO. */
static const char *const specs[] = {
    "{\"model\":{\"layers\":4,\"hidden\":512,\"heads\":8,\"seq\":512},"
    "\"parallel\":{\"dp\":2,\"micro_batch\":2,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}",
    "{\"model\":{\"layers\":8,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"ffn\":14336,\"mlp\":\"swiglu\","
    "\"seq\":4096,\"vocab\":128256},\"parallel\":{\"tp\":4,\"pp\":2,\"dp\":2,\"micro_batch\":1,"
    "\"global_batch\":16},\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true}}",
    "{\"model\":{\"layers\":16,\"hidden\":2048,\"heads\":16,\"seq\":2048},\"parallel\":{\"pp\":4,\"dp\":2,"
    "\"micro_batch\":1,\"global_batch\":16,\"schedule\":\"interleaved\",\"vpp\":2},"
    "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},\"options\":{\"zero_stage\":1,\"recompute\":\"full\"}}",
    "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"kv_heads\":4,\"seq\":16384,\"mlp\":\"swiglu\"},"
    "\"parallel\":{\"tp\":2,\"cp\":4,\"dp\":2,\"micro_batch\":1,\"global_batch\":4},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true,\"dtype\":\"fp8\"}}",
    "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"mlp\":\"swiglu\","
    "\"moe\":{\"experts\":16,\"top_k\":2,\"ffn\":1024,\"shared_experts\":1,\"dense_layers\":1}},"
    "\"parallel\":{\"tp\":2,\"dp\":8,\"ep\":4,\"pp\":2,\"micro_batch\":1,\"global_batch\":32},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true,\"recompute\":\"selective\"}}",
    /* ZeRO-3: per-layer gathers and reduce-scatters, pipelined and not,
     * dense and MoE (experts gathered over their own ranks) */
    "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048},\"parallel\":{\"pp\":2,\"dp\":16,"
    "\"micro_batch\":1,\"global_batch\":64},\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"zero_stage\":3}}",
    "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"mlp\":\"swiglu\","
    "\"moe\":{\"experts\":16,\"top_k\":2,\"ffn\":1024,\"dense_layers\":1}},"
    "\"parallel\":{\"tp\":2,\"dp\":8,\"ep\":4,\"pp\":2,\"vpp\":2,\"schedule\":\"interleaved\",\"micro_batch\":1,"
    "\"global_batch\":32},\"cluster\":{\"gpu\":\"h100-sxm\"},"
    "\"options\":{\"sequence_parallel\":true,\"zero_stage\":3,\"recompute\":\"full\"}}",
    "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"tied_embeddings\":true},"
    "\"parallel\":{\"dp\":4,\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
    "\"options\":{\"zero_stage\":3,\"overlap_param_gather\":false}}",
    /* host-bound and pipelined: layers too small for the GPU to hide the
     * dispatches */
    "{\"model\":{\"layers\":2,\"hidden\":256,\"heads\":4,\"seq\":256,\"vocab\":1024},"
    "\"parallel\":{\"pp\":2,\"dp\":2,\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},"
    "\"options\":{\"zero_stage\":1}}",
};

TEST(synth_replays_every_spec_without_forcing)
{
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct est_spec s;
        const struct hw_profile *hw;
        struct est_costs c;
        struct model_graph *g = NULL;
        struct model_replay *r = NULL;
        struct model_replay_opts o;
        struct sc_error err;
        CHECK(load(specs[i], &s, &hw) == SC_OK);
        calib_costs_default(hw, &s, &c);
        CHECK(synth_build(&s, hw, &c, EST_DETAIL_KERNEL, &g, &err) == SC_OK);
        if (!g)
            continue;
        model_replay_opts_default(&o);
        CHECK(model_replay_run(g, &o, &r, &err) == SC_OK);
        if (!r) {
            model_graph_free(g);
            continue;
        }
        CHECK_EQ_INT(r->forced, 0);
        CHECK_EQ_INT(r->n_steps, s.parallel.pp);
        for (size_t k = 0; k < r->n_steps; k++) {
            CHECK(r->steps[k].replayed_ns > 0);
            CHECK(r->steps[k].measured_ns == -1);
        }
        model_replay_free(r);
        model_graph_free(g);
    }
}

/* Whether two replays have the same steps, to the nanosecond and the
 * breakdown. */
static int same_steps(const struct model_replay *a, const struct model_replay *b)
{
    int same = a->n_steps == b->n_steps;
    for (size_t k = 0; same && k < a->n_steps; k++)
        same = a->steps[k].replayed_ns == b->steps[k].replayed_ns &&
               memcmp(&a->steps[k].breakdown, &b->steps[k].breakdown, sizeof a->steps[k].breakdown) == 0;
    return same;
}

/* A pipeline transfer: a task on a rank's "pipeline send" or "pipeline
 * receive" stream. */
static int is_transfer(const struct model_graph *g, size_t k)
{
    return strncmp(model_graph_str(g, g->res[g->tasks[k].res].label), "pipeline ", 9) == 0;
}

/* The graph synth_estimate replays (synth_unnamed) is synth_build's with
 * no names, each thread's host calls between synchronisations as one
 * task, and each pipeline transfer as one task on both its sides (a send
 * and its receive, a group of two in synth_build's): the same other GPU
 * tasks in the same order (durations, streams, collective groups), and
 * the same replay to the nanosecond: every such task's start and end,
 * every step and breakdown (which counts each side of a transfer as
 * communication from when that side was ready); and no task keeps a
 * name. */
TEST(synth_unnamed_graph_is_the_named_one_less_names_and_host_tasks)
{
    size_t paired = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        for (int d = EST_DETAIL_STAGE; d <= EST_DETAIL_KERNEL; d++) {
            struct est_spec s;
            const struct hw_profile *hw;
            struct est_costs c;
            struct model_graph *g = NULL, *u = NULL;
            struct model_replay *rg = NULL, *ru = NULL;
            struct model_replay_opts o;
            struct sc_error err;
            CHECK(load(specs[i], &s, &hw) == SC_OK);
            calib_costs_default(hw, &s, &c);
            CHECK(synth_build(&s, hw, &c, (enum est_detail)d, &g, &err) == SC_OK);
            CHECK(synth_unnamed(&s, hw, &c, (enum est_detail)d, &u, &err) == SC_OK);
            model_replay_opts_default(&o);
            if (!g || !u || model_replay_run(g, &o, &rg, &err) || model_replay_run(u, &o, &ru, &err)) {
                CHECK(!"synthesised and replayed");
                model_replay_free(rg);
                model_graph_free(g);
                model_graph_free(u);
                continue;
            }
            CHECK_EQ_INT(u->n_steps, g->n_steps);
            CHECK_EQ_INT(u->n_res, g->n_res);
            CHECK(u->n_tasks < g->n_tasks); /* calls merged */
            /* the tasks other than host calls and transfers, pairwise in
             * the order added */
            size_t a = 0, b = 0, named = 0, pairs = 0, g_transfers = 0, u_transfers = 0;
            int same = 1;
            for (size_t k = 0; k < g->n_tasks; k++)
                g_transfers += is_transfer(g, k);
            for (size_t k = 0; k < u->n_tasks; k++) {
                u_transfers += is_transfer(u, k);
                same &= u->tasks[k].paired == is_transfer(u, k);
            }
            for (;; a++, b++) {
                while (a < g->n_tasks && (g->tasks[a].cls == MODEL_TASK_CALL || is_transfer(g, a)))
                    a++;
                while (b < u->n_tasks && (u->tasks[b].cls == MODEL_TASK_CALL || is_transfer(u, b)))
                    b++;
                if (a == g->n_tasks || b == u->n_tasks) {
                    same &= a == g->n_tasks && b == u->n_tasks;
                    break;
                }
                const struct model_task *x = &g->tasks[a], *y = &u->tasks[b];
                same &= x->dur == y->dur && x->res == y->res && x->cls == y->cls && x->sub == y->sub &&
                        (x->group == MODEL_NONE) == (y->group == MODEL_NONE) && rg->start[a] == ru->start[b] &&
                        rg->end[a] == ru->end[b];
                named += model_graph_str(g, g->src[a].name)[0] != '\0';
                CHECK_STREQ(model_graph_str(u, u->src[b].name), "");
                pairs++;
            }
            CHECK(same);
            CHECK(pairs > 0);
            CHECK(named > 0); /* there were names to leave out */
            /* each transfer once, on both sides; the groups less the pairs */
            CHECK_EQ_INT(2 * u_transfers, g_transfers);
            CHECK_EQ_INT(u->n_peers, u_transfers);
            CHECK_EQ_INT(u->n_groups + u_transfers, g->n_groups);
            paired += u_transfers;
            CHECK(same_steps(rg, ru));
            model_replay_free(rg);
            model_replay_free(ru);
            model_graph_free(g);
            model_graph_free(u);
        }
    }
    CHECK(paired > 0); /* some spec has a pipeline */
}

TEST(synth_levels_of_detail_agree_within_one_percent)
{
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        double k = estimate_ms(specs[i], EST_DETAIL_KERNEL, NULL);
        double l = estimate_ms(specs[i], EST_DETAIL_LAYER, NULL);
        double st = estimate_ms(specs[i], EST_DETAIL_STAGE, NULL);
        CHECK(k > 0 && l > 0 && st > 0);
        CHECK_NEAR(l / k, 1, 0.01);
        CHECK_NEAR(st / k, 1, 0.01);
    }
}

/* A merged task's breakdown is that of the kernels it merges: its compute
 * is busy for the kernels' time alone (a run held open by its launches is
 * the host's time, as the kernels apart show), and collectives among peers
 * merged into it (tensor-parallel all-reduces, sequence parallelism's
 * gathers) count as communication. At every detail the compute's busy time
 * is the kernel detail's to 0.5% of the step, exposed communication and
 * host time to 3%: where in a run its collectives lay is not kept, so how
 * the rest splits between compute and overlap may move a little (most
 * under ZeRO-3 with MoE, whose fp32 gradient reduce-scatters queue behind
 * the gathers). */
TEST(synth_levels_of_detail_agree_on_the_breakdown)
{
    int comm_bound = 0, host_bound = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct bd k, m[2];
        REQUIRE(estimate_at(specs[i], EST_DETAIL_KERNEL, NULL, &k) == 0);
        REQUIRE(estimate_at(specs[i], EST_DETAIL_LAYER, NULL, &m[0]) == 0);
        REQUIRE(estimate_at(specs[i], EST_DETAIL_STAGE, NULL, &m[1]) == 0);
        for (int d = 0; d < 2; d++) {
            CHECK(fabs(m[d].compute - k.compute) <= 0.005 * k.step);
            CHECK(fabs(m[d].comm - k.comm) <= 0.03 * k.step);
            CHECK(fabs(m[d].host - k.host) <= 0.03 * k.step);
        }
        comm_bound += k.comm > 0.2 * k.step;
        host_bound += k.host > 0.2 * k.step;
    }
    CHECK(comm_bound >= 2 && host_bound >= 2); /* the specs hold both cases */
}

/* A synthesised graph copied with its own durations (whatif_graph_copy, as a
 * what-if copies one) replays as the source does, to the breakdown: its
 * merged tasks keep their communication, and (the graph synth_estimate
 * replays) its transfers their two sides. */
TEST(synth_graph_copied_replays_as_its_source)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct sc_error err;
    REQUIRE(load(specs[1], &s, &hw) == SC_OK); /* tensor, sequence and pipeline parallel */
    calib_costs_default(hw, &s, &c);
    for (int unnamed = 0; unnamed < 2; unnamed++) {
        struct model_graph *g = NULL, *copy = NULL;
        struct model_replay *rg = NULL, *rc = NULL;
        REQUIRE((unnamed ? synth_unnamed : synth_build)(&s, hw, &c, EST_DETAIL_STAGE, &g, &err) == SC_OK);
        CHECK(g->n_parts > 0);
        CHECK(unnamed ? g->n_peers > 0 : g->n_peers == 0);
        int64_t *dur = malloc(g->n_tasks * sizeof *dur), *gap = malloc(g->n_tasks * sizeof *gap);
        REQUIRE(dur && gap);
        for (size_t i = 0; i < g->n_tasks; i++) {
            dur[i] = g->tasks[i].dur;
            gap[i] = g->tasks[i].gap;
        }
        REQUIRE(whatif_graph_copy(g, dur, gap, NULL, 0, &copy, NULL, &err) == SC_OK);
        CHECK_EQ_INT(copy->n_parts, g->n_parts);
        CHECK_EQ_INT(copy->n_peers, g->n_peers);
        REQUIRE(model_replay_run(g, NULL, &rg, &err) == SC_OK);
        REQUIRE(model_replay_run(copy, NULL, &rc, &err) == SC_OK);
        CHECK(same_steps(rg, rc));
        model_replay_free(rg);
        model_replay_free(rc);
        model_graph_free(g);
        model_graph_free(copy);
        free(dur);
        free(gap);
    }
}

/* The default costs of a spec's GPU. */
/* The cited costs (calib_costs_cited): the tests of the host's mechanics
 * below were sized on them, whatever the validation fits. */
static int cited_costs(const char *json, struct est_costs *c)
{
    struct est_spec s;
    const struct hw_profile *hw;
    int rc = load(json, &s, &hw);
    if (rc == SC_OK)
        calib_costs_cited(hw, &s, c);
    return rc;
}

/* Host-bound: tiny kernels whose dispatch costs far more than they run.
 * The step is then the host's dispatch time: halving every host cost
 * halves it. */
TEST(synth_small_model_is_host_bound_at_every_detail)
{
    const char *spec = "{\"model\":{\"layers\":2,\"hidden\":128,\"heads\":2,\"seq\":128,\"vocab\":1000},"
                       "\"parallel\":{\"micro_batch\":1,\"global_batch\":4},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    struct est_costs c;
    CHECK(cited_costs(spec, &c) == SC_OK);
    c.host_op_us = c.host_coll_us = 100;
    double slow[3], fast[3];
    for (int d = 0; d < 3; d++)
        slow[d] = estimate_ms(spec, (enum est_detail)d, &c);
    c.host_op_us = c.host_coll_us = 50;
    for (int d = 0; d < 3; d++)
        fast[d] = estimate_ms(spec, (enum est_detail)d, &c);
    for (int d = 0; d < 3; d++) {
        CHECK_NEAR(fast[d] / slow[d], 0.5, 0.02); /* all host: halving it halves the step */
        CHECK_NEAR(slow[d] / slow[EST_DETAIL_KERNEL], 1, 0.01);
    }
}

/* 1F1B on pp ranks with m micro-batches of equal stages takes about
 * (m + pp - 1) stage-passes; so with m >> pp the bubble vanishes, and with
 * pp doubled at fixed work per GPU it grows by about (pp - 1) passes. */
TEST(synth_pipeline_bubble_follows_1f1b)
{
#define PIPELINE_SPEC "{\"model\":{\"layers\":8,\"hidden\":4096,\"heads\":32,\"seq\":2048,\"vocab\":1024}," \
        "\"parallel\":{\"pp\":%d,\"micro_batch\":1,\"global_batch\":%d}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"}}"
    char a[512], b[512], c1[512];
    snprintf(a, sizeof a, PIPELINE_SPEC, 1, 16);
    snprintf(b, sizeof b, PIPELINE_SPEC, 4, 16);
    snprintf(c1, sizeof c1, PIPELINE_SPEC, 4, 64);
    double t1 = estimate_ms(a, EST_DETAIL_KERNEL, NULL);   /* 16 micro-batches of 8 layers */
    double t4 = estimate_ms(b, EST_DETAIL_KERNEL, NULL);   /* 4 stages of 2 layers, 16 micro-batches */
    double t4m = estimate_ms(c1, EST_DETAIL_KERNEL, NULL); /* the same, 64 micro-batches */
    CHECK(t1 > 0 && t4 > 0 && t4m > 0);
    /* a pass of 2 layers is t1 / (16 x 4); 1F1B takes (16 + 3) such passes */
    double pass = t1 / 64;
    CHECK(t4 > 18 * pass && t4 < 21 * pass);
    /* four times the micro-batches: (64 + 3) / (16 + 3) as long */
    CHECK_NEAR(t4m / t4, 67.0 / 19.0, 0.15);
}

TEST(synth_interleaving_shrinks_the_bubble)
{
#define INTERLEAVED_SPEC "{\"model\":{\"layers\":16,\"hidden\":4096,\"heads\":32,\"seq\":2048,\"vocab\":1024}," \
        "\"parallel\":{\"pp\":4,\"micro_batch\":1,\"global_batch\":8%s}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"}}"
    char a[512], b[512];
    snprintf(a, sizeof a, INTERLEAVED_SPEC, "");
    snprintf(b, sizeof b, INTERLEAVED_SPEC, ",\"schedule\":\"interleaved\",\"vpp\":2");
    double plain = estimate_ms(a, EST_DETAIL_KERNEL, NULL), inter = estimate_ms(b, EST_DETAIL_KERNEL, NULL);
    CHECK(plain > 0 && inter > 0);
    /* 8 micro-batches on 4 stages: bubble 3/8 of the work plain, 3/16 with
     * two chunks: (8 + 3) / (8 + 1.5) */
    CHECK(inter < plain);
    CHECK_NEAR(plain / inter, 11.0 / 9.5, 0.06);
}

TEST(synth_tensor_parallelism_divides_the_gemms)
{
#define TP_SPEC "{\"model\":{\"layers\":2,\"hidden\":8192,\"heads\":64,\"seq\":4096,\"vocab\":1024}," \
        "\"parallel\":{\"tp\":%d,\"micro_batch\":1,\"global_batch\":1}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":%s}}"
    char a[512], b[512];
    snprintf(a, sizeof a, TP_SPEC, 1, "false");
    snprintf(b, sizeof b, TP_SPEC, 8, "true");
    double t1 = estimate_ms(a, EST_DETAIL_KERNEL, NULL), t8 = estimate_ms(b, EST_DETAIL_KERNEL, NULL);
    CHECK(t1 > 0 && t8 > 0);
    /* compute-bound GEMMs shrink 8x, the tensor-parallel collectives add
     * back some: between an eighth and a quarter */
    CHECK(t8 > t1 / 8 && t8 < t1 / 4);
}

/* Kernels of spec's step named `name` (kernel detail, one layer); *ms,
 * when given, gets their time. */
static size_t kernels_named_ms(const char *spec, const char *name, double *ms)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct model_graph *g = NULL;
    struct sc_error err;
    size_t n = 0;
    if (load(spec, &s, &hw))
        return (size_t)-1;
    calib_costs_default(hw, &s, &c);
    if (synth_build(&s, hw, &c, EST_DETAIL_KERNEL, &g, &err))
        return (size_t)-1;
    for (size_t t = 0; t < g->n_tasks; t++)
        if (strcmp(model_graph_str(g, g->src[t].name), name) == 0) {
            n++;
            if (ms)
                *ms += (double)g->tasks[t].dur / 1e6;
        }
    model_graph_free(g);
    return n;
}

static size_t kernels_named(const char *spec, const char *name)
{
    return kernels_named_ms(spec, name, NULL);
}

/* Megatron's fused causal softmax takes micro-batch x heads per rank only
 * in multiples of 4: 16 heads over tp 8 at micro-batch 1 (2 batches) runs
 * PyTorch's five ops forward and five backward instead, at micro-batch 2
 * (4 batches) the fused kernel; with full recomputation the forward runs
 * twice. */
TEST(synth_unfused_softmax_falls_back_to_pytorch_when_the_fused_kernel_cannot_take_it)
{
#define SOFTMAX_SPEC "{\"model\":{\"layers\":1,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"vocab\":1024}," \
        "\"parallel\":{\"tp\":8,\"micro_batch\":%d,\"global_batch\":%d},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}," \
        "\"options\":{\"attention\":\"unfused\",\"recompute\":\"%s\"}}"
    char one[512], two[512], full[512];
    snprintf(one, sizeof one, SOFTMAX_SPEC, 1, 1, "none");
    snprintf(two, sizeof two, SOFTMAX_SPEC, 2, 2, "none");
    snprintf(full, sizeof full, SOFTMAX_SPEC, 1, 1, "full");
    CHECK_EQ_INT(kernels_named(one, "causal mask fill"), 2); /* forward and backward */
    CHECK_EQ_INT(kernels_named(one, "scale mask softmax"), 0);
    CHECK_EQ_INT(kernels_named(two, "causal mask fill"), 0);
    CHECK_EQ_INT(kernels_named(two, "scale mask softmax"), 1);
    CHECK_EQ_INT(kernels_named(full, "causal mask fill"), 3); /* recomputed */
    /* host-bound (1 ms a dispatch, tiny kernels): 16 heads over tp 8 take
     * eight dispatches more a layer than 32 heads (4 a rank, fused) */
    char wide[512];
    snprintf(wide, sizeof wide, "%.*s32%s", (int)(strstr(one, "\"heads\":16") + 8 - one), one,
             strstr(one, "\"heads\":16") + 10);
    struct est_costs c;
    CHECK(cited_costs(one, &c) == SC_OK);
    c.host_op_us = 1000;
    double fallback = estimate_ms(one, EST_DETAIL_KERNEL, &c), fused = estimate_ms(wide, EST_DETAIL_KERNEL, &c);
    CHECK(fallback > 0 && fused > 0);
    CHECK_NEAR(fallback - fused, 8.0, 0.3);
}

/* A plain-MLP (GPT-style) layer's four linear layers each sum their
 * output gradient over the tokens for their bias, unless the model was
 * built without biases (model.bias false); a gated (Llama-style) layer has
 * none either way. Without them the step is shorter by their kernels. */
TEST(synth_bias_gradients_only_where_the_model_has_biases)
{
#define BIAS_SPEC "{\"model\":{\"layers\":1,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"vocab\":1024," \
        "\"mlp\":\"%s\"%s},\"cluster\":{\"gpu\":\"h100-sxm\"}}"
    static const char *const grads[] = {"qkv projection bias gradient", "output projection bias gradient",
                                        "mlp fc1 bias gradient", "mlp fc2 bias gradient"};
    char gpt[256], none[256], gated[256], gated_bias[256];
    snprintf(gpt, sizeof gpt, BIAS_SPEC, "gelu", "");
    snprintf(none, sizeof none, BIAS_SPEC, "gelu", ",\"bias\":false");
    snprintf(gated, sizeof gated, BIAS_SPEC, "swiglu", "");
    snprintf(gated_bias, sizeof gated_bias, BIAS_SPEC, "swiglu", ",\"bias\":true");
    for (size_t i = 0; i < sizeof grads / sizeof grads[0]; i++) {
        CHECK_EQ_INT(kernels_named(gpt, grads[i]), 1);
        CHECK_EQ_INT(kernels_named(none, grads[i]), 0);
        CHECK_EQ_INT(kernels_named(gated, grads[i]), 0);
        CHECK_EQ_INT(kernels_named(gated_bias, grads[i]), 0);
    }
    double with = estimate_ms(gpt, EST_DETAIL_KERNEL, NULL), without = estimate_ms(none, EST_DETAIL_KERNEL, NULL);
    CHECK(with > 0 && without > 0 && without < with);
}

/* The loss as each stack runs it: Megatron's fused cross entropy (one
 * kernel forward, one backward), or eager PyTorch's F.cross_entropy on
 * fp32 logits op by op, which moves more than twice the bytes. */
TEST(synth_eager_pytorch_loss_runs_op_by_op)
{
#define LOSS_SPEC "{\"model\":{\"layers\":1,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"vocab\":50304}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"framework\":\"%s\"}}"
    static const char *const eager[] = {"logits cast", "log softmax", "nll loss", "loss gradient zeros",
                                        "nll loss backward", "log softmax backward", "logits gradient cast"};
    char megatron[256], pytorch[256];
    snprintf(megatron, sizeof megatron, LOSS_SPEC, "megatron");
    snprintf(pytorch, sizeof pytorch, LOSS_SPEC, "pytorch");
    double fused = 0, ops = 0;
    CHECK_EQ_INT(kernels_named_ms(megatron, "cross entropy", &fused), 1);
    CHECK_EQ_INT(kernels_named_ms(megatron, "cross entropy backward", &fused), 1);
    CHECK_EQ_INT(kernels_named(pytorch, "cross entropy"), 0);
    for (size_t i = 0; i < sizeof eager / sizeof eager[0]; i++) {
        CHECK_EQ_INT(kernels_named_ms(pytorch, eager[i], &ops), 1);
        CHECK_EQ_INT(kernels_named(megatron, eager[i]), 0);
    }
    /* 18 bytes a logit against about 40 */
    CHECK(fused > 0 && ops > 2 * fused && ops < 2.5 * fused);
    /* fp32 logits are not cast */
    char fp32[320];
    snprintf(fp32, sizeof fp32, "%.*s,\"dtype\":\"fp32\"}}", (int)strlen(pytorch) - 2, pytorch);
    CHECK_EQ_INT(kernels_named(fp32, "log softmax"), 1);
    CHECK_EQ_INT(kernels_named(fp32, "logits cast"), 0);
    CHECK_EQ_INT(kernels_named(fp32, "logits gradient cast"), 0);
}

/* ZeRO-3 against stage 1 on data-parallel ranks over 8 nodes: small layers
 * and a slow network, then large layers on one fast NVLink domain. */
#define ZERO_SPEC "{\"model\":{\"layers\":8,\"hidden\":%d,\"heads\":16,\"seq\":%d,\"vocab\":1024}," \
        "\"parallel\":{\"dp\":%d,\"micro_batch\":1,\"global_batch\":%d},\"cluster\":{\"gpu\":\"h100-sxm\"%s}," \
        "\"options\":{\"zero_stage\":%d,\"overlap_param_gather\":%s}}"

/* The collective model's time of one collective over group g, ms. */
static double coll_ms(const struct est_costs *c, enum model_coll_op op, const struct coll_group *g, double bytes)
{
    struct coll_estimate e;
    struct sc_error err;
    if (cost_coll_estimate(&c->coll, op, g, bytes, &e, &err))
        return -1;
    return e.time_us / 1e3;
}

TEST(synth_zero3_gathers_cost_when_the_network_is_slow)
{
    const char *slow = ",\"inter_node_gbps\":2";
    char s1[512], s3[512], s3n[512];
    /* 64 ranks, 8 per node; 4 micro-batches of 1024 tokens per rank */
    snprintf(s1, sizeof s1, ZERO_SPEC, 1024, 1024, 64, 256, slow, 1, "true");
    snprintf(s3, sizeof s3, ZERO_SPEC, 1024, 1024, 64, 256, slow, 3, "true");
    snprintf(s3n, sizeof s3n, ZERO_SPEC, 1024, 1024, 64, 256, slow, 3, "false");
    struct est_costs c;
    CHECK(cited_costs(s3, &c) == SC_OK); /* the same for the three specs */
    double t1 = estimate_ms(s1, EST_DETAIL_LAYER, &c), t3 = estimate_ms(s3, EST_DETAIL_LAYER, &c);
    double t3n = estimate_ms(s3n, EST_DETAIL_LAYER, &c);
    CHECK(t1 > 0 && t3 > 0 && t3n > 0);
    /* the data-parallel stream runs, in each of the 4 micro-batches, every
     * layer's gather twice and its reduce-scatter once, one after another:
     * the step takes at least that */
    struct est_layer_params lp;
    struct est_spec sp;
    const struct hw_profile *hw;
    CHECK(load(s3, &sp, &hw) == SC_OK);
    spec_layer_params(&sp.model, 0, &lp);
    double params = lp.attention + lp.mlp + lp.norms, emb = 1024.0 * 1024;
    struct coll_group dp = {64, 8};
    double layer = 2 * coll_ms(&c, MODEL_COLL_ALLGATHER, &dp, 2 * params) +
                   coll_ms(&c, MODEL_COLL_REDUCESCATTER, &dp, 2 * params);
    double edges = 2 * coll_ms(&c, MODEL_COLL_ALLGATHER, &dp, 2 * emb) +
                   coll_ms(&c, MODEL_COLL_REDUCESCATTER, &dp, 2 * emb);
    double stream = 4 * (8 * layer + 2 * edges);
    CHECK(layer > 0 && edges > 0);
    CHECK(t3 >= stream * 0.99);
    /* the planner's bound knows it, and still bounds the step */
    double bound = 0;
    struct sc_error err;
    CHECK(synth_bound(&sp, hw, &c, &bound, &err) == SC_OK);
    CHECK(bound >= stream * 0.99 && bound <= t3);
    /* stage 1 moves the parameters twice per step, stage 3 twelve times */
    CHECK(t3 > 2 * t1);
    /* without the prefetch every gather waits for the compute before it,
     * so none hides behind a layer */
    CHECK(t3n > t3 * 1.01);
}

TEST(synth_zero3_is_no_slower_when_compute_hides_the_gathers)
{
    char s1[512], s3[512];
    /* 8 ranks on one NVLink domain, layers of 8192 x 8192 over 8192 tokens */
    snprintf(s1, sizeof s1, ZERO_SPEC, 8192, 8192, 8, 32, "", 1, "true");
    snprintf(s3, sizeof s3, ZERO_SPEC, 8192, 8192, 8, 32, "", 3, "true");
    double t1 = estimate_ms(s1, EST_DETAIL_LAYER, NULL), t3 = estimate_ms(s3, EST_DETAIL_LAYER, NULL);
    CHECK(t1 > 0 && t3 > 0);
    CHECK(t3 <= t1 * 1.01);
    /* and it is still bounded below by the compute alone */
    struct est_spec sp;
    const struct hw_profile *hw;
    struct est_costs c;
    struct sc_error err;
    double bound = 0;
    CHECK(load(s3, &sp, &hw) == SC_OK);
    calib_costs_default(hw, &sp, &c);
    CHECK(synth_bound(&sp, hw, &c, &bound, &err) == SC_OK);
    CHECK(bound > 0 && t3 >= bound);
}

/* Hybrid sharding (parallel.fsdp_shard): 64 data-parallel ranks, 8 a
 * node, on a slow network, sharded within each node and replicated across
 * the 8 nodes: every gather and reduce-scatter stays on NVLink, and only
 * each unit's gradient shard crosses the network, all-reduced over the 8
 * replicas; each rank keeps 8 times the parameters it keeps sharded over
 * all 64. */
#define HYBRID_SPEC "{\"model\":{\"layers\":8,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"vocab\":1024}," \
        "\"parallel\":{\"dp\":64,\"micro_batch\":1,\"global_batch\":256%s}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\",\"inter_node_gbps\":2}," \
        "\"options\":{\"zero_stage\":3,\"grad_reduce_in_fp32\":false}}"

TEST(synth_zero3_hybrid_sharding_gathers_within_the_shard_group)
{
    char full[512], hybrid[512];
    snprintf(full, sizeof full, HYBRID_SPEC, "");
    snprintf(hybrid, sizeof hybrid, HYBRID_SPEC, ",\"fsdp_shard\":8");
    double t_full = estimate_ms(full, EST_DETAIL_LAYER, NULL), t_hybrid = estimate_ms(hybrid, EST_DETAIL_LAYER, NULL);
    CHECK(t_full > 0 && t_hybrid > 0);
    CHECK(t_hybrid < t_full * 0.9);

    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct model_graph *g = NULL;
    struct sc_error err;
    REQUIRE(load(hybrid, &s, &hw) == SC_OK);
    calib_costs_default(hw, &s, &c);
    REQUIRE(synth_build(&s, hw, &c, EST_DETAIL_KERNEL, &g, &err) == SC_OK);
    int gathers = 0, replicas = 0, wrong = 0;
    for (size_t i = 0; i < g->n_tasks; i++) {
        const char *name = model_graph_str(g, g->src[i].name);
        uint32_t size = g->tasks[i].group == MODEL_NONE ? 0 : g->groups[g->tasks[i].group].size;
        if (strcmp(name, "parameter all-gather") == 0)
            gathers++, wrong += size != 8;
        else if (strcmp(name, "gradient all-reduce across replicas") == 0)
            replicas++, wrong += size != 8;
    }
    /* 4 micro-batches: 10 units gathered twice each, 10 shards all-reduced */
    CHECK_EQ_INT(gathers, 4 * 10 * 2);
    CHECK_EQ_INT(replicas, 4 * 10);
    CHECK_EQ_INT(wrong, 0);
    model_graph_free(g);

    struct est_memory m_full, m_hybrid;
    struct est_spec sf;
    REQUIRE(load(full, &sf, &hw) == SC_OK);
    REQUIRE(spec_memory_estimate(&sf, hw->hbm_gb, &m_full, &err) == SC_OK);
    REQUIRE(spec_memory_estimate(&s, hw->hbm_gb, &m_hybrid, &err) == SC_OK);
    CHECK(m_hybrid.gb_per_gpu > m_full.gb_per_gpu);
    spec_memory_release(&m_full);
    spec_memory_release(&m_hybrid);

    /* it needs ZeRO-3 and a divisor of dp x cp */
    char bad[512];
    snprintf(bad, sizeof bad, HYBRID_SPEC, ",\"fsdp_shard\":6");
    CHECK_EQ_INT(spec_load(bad, strlen(bad), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "parallel.fsdp_shard: 6 does not divide");
}

/* The bound counts the pipeline's transfers: on a slow network (the
 * stages' neighbours on other nodes) it grows with them, by at least a
 * transfer per micro-batch's pass on a middle rank, yet stays below the
 * estimate, under 1F1B and interleaved. ZeRO stage 0: no other network
 * term in the bound. */
TEST(synth_bound_counts_the_pipeline_transfers)
{
    static const char *const schedules[] = {"", ",\"schedule\":\"interleaved\",\"vpp\":2"};
    /* a middle rank sends after each of its passes but the last: 2 x 8
     * under 1F1B; 2 x 16 interleaved, where a steady batch's two sends
     * follow one another */
    static const int sends[] = {15, 31};
    for (size_t k = 0; k < sizeof schedules / sizeof schedules[0]; k++) {
        double bound[2], step[2], p2p = 0;
        for (int slow = 0; slow < 2; slow++) {
            char spec[640];
            snprintf(spec, sizeof spec,
                     "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":32000},"
                     "\"parallel\":{\"tp\":8,\"pp\":4,\"micro_batch\":1,\"global_batch\":8%s},"
                     "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"%s},\"options\":{\"zero_stage\":0}}",
                     schedules[k], slow ? ",\"inter_node_gbps\":2" : "");
            struct est_spec sp;
            const struct hw_profile *hw;
            struct est_costs c;
            struct sc_error err;
            REQUIRE(load(spec, &sp, &hw) == SC_OK);
            calib_costs_default(hw, &sp, &c);
            CHECK(synth_bound(&sp, hw, &c, &bound[slow], &err) == SC_OK);
            step[slow] = estimate_ms(spec, EST_DETAIL_STAGE, NULL);
            CHECK(bound[slow] > 0 && bound[slow] <= step[slow]);
            /* one micro-batch's activations, sequence-parallel off: 2048 x 2048 x 2 bytes */
            struct coll_group pair = {2, 1};
            double t = coll_ms(&c, MODEL_COLL_SENDRECV, &pair, 2048.0 * 2048 * 2);
            p2p = slow ? t - p2p : t;
        }
        CHECK(p2p > 1); /* the slow network's transfers take a millisecond more each */
        CHECK(bound[1] - bound[0] >= sends[k] * p2p * 0.999);
        CHECK(step[1] - step[0] >= bound[1] - bound[0]);
    }
}

/* The quantisation kernels (family fp8) of spec's step at kernel detail:
 * how many, and the bytes they move at the cited costs' HBM bandwidth
 * (each kernel's time less its fixed cost). */
static int quant_kernels_of(const char *spec, size_t *n, double *bytes)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct model_graph *g = NULL;
    struct sc_error err;
    if (load(spec, &s, &hw))
        return -1;
    calib_costs_cited(hw, &s, &c);
    if (synth_build(&s, hw, &c, EST_DETAIL_KERNEL, &g, &err))
        return -1;
    *n = 0;
    *bytes = 0;
    for (size_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].cls == MODEL_TASK_KERNEL && g->tasks[t].sub == MODEL_KF_FP8) {
            (*n)++;
            *bytes += (g->tasks[t].dur / 1e3 - c.kernel.kernel_fixed_us) * hw->hbm_gbps * c.kernel.hbm_fraction * 1e3;
        }
    model_graph_free(g);
    return 0;
}

#define QUANT_SPEC "{\"model\":{\"layers\":1,\"hidden\":4096,\"heads\":32,\"seq\":4096,\"vocab\":32000}," \
        "\"cluster\":{\"gpu\":\"%s\"},\"options\":{\"dtype\":\"%s\"%s}}"

/* One layer, one micro-batch: 12 tensors quantised (the four GEMMs' inputs
 * and weights forward and output gradients backward; the output layer
 * runs in bf16, outside the recipe). Each recipe runs its own kernels on each: per-tensor
 * scaling an amax and a cast (with the transpose on Hopper), the
 * block-scaled recipes one kernel, NVFP4 three for an activation or a
 * gradient and two for a weight; bytes per element as quant.h derives
 * them. */
TEST(synth_each_recipe_adds_its_quantisation_kernels)
{
    char spec[512];
    size_t n_bf16, n_tw, n_bw, n_tw_b, n_mx, n_fp4;
    double b_bf16, b_tw, b_bw, b_tw_b, b_mx, b_fp4;
    snprintf(spec, sizeof spec, QUANT_SPEC, "h100-sxm", "bf16", "");
    CHECK(quant_kernels_of(spec, &n_bf16, &b_bf16) == 0);
    snprintf(spec, sizeof spec, QUANT_SPEC, "h100-sxm", "fp8", "");
    CHECK(quant_kernels_of(spec, &n_tw, &b_tw) == 0);
    snprintf(spec, sizeof spec, QUANT_SPEC, "h100-sxm", "fp8", ",\"fp8_recipe\":\"blockwise\"");
    CHECK(quant_kernels_of(spec, &n_bw, &b_bw) == 0);
    snprintf(spec, sizeof spec, QUANT_SPEC, "b200", "fp8", ",\"fp8_recipe\":\"tensorwise\"");
    CHECK(quant_kernels_of(spec, &n_tw_b, &b_tw_b) == 0);
    snprintf(spec, sizeof spec, QUANT_SPEC, "b200", "fp8", "");
    CHECK(quant_kernels_of(spec, &n_mx, &b_mx) == 0);
    snprintf(spec, sizeof spec, QUANT_SPEC, "b200", "fp4", "");
    CHECK(quant_kernels_of(spec, &n_fp4, &b_fp4) == 0);
    CHECK_EQ_INT(n_bf16, 0);
    CHECK_EQ_INT(n_bw, 12);
    CHECK_EQ_INT(n_mx, 12);
    CHECK_EQ_INT(n_tw, 2 * 12);
    CHECK_EQ_INT(n_tw_b, 2 * 12);
    CHECK_EQ_INT(n_fp4, 3 * 8 + 2 * 4);
    /* per-tensor scaling reads the tensor twice and on Hopper writes the
     * transpose: 2 + 2 + 1 + 1 bytes an element against the block
     * recipes' 2 + 1 + 1 and their scales; Blackwell's GEMMs take fp8 in
     * any layout (2 + 2 + 1) */
    CHECK(b_tw > 0 && b_bw > 0);
    CHECK(b_tw / b_bw > 6 / (4 + 8.0 / 128) && b_tw / b_bw < 6 / 4.0);
    CHECK_NEAR(b_tw_b / b_tw, 5.0 / 6, 0.01);
    CHECK_NEAR(b_mx / b_bw, 1, 0.02);
    /* NVFP4 reads an activation three times, writes half a byte twice */
    CHECK(b_fp4 > b_mx && b_fp4 < 2 * b_mx);
}

/* A weight is quantised once a step, activations and gradients each
 * micro-batch: four micro-batches move four times the activations' bytes
 * and the weights' once. */
TEST(synth_weights_are_quantised_once_a_step)
{
    char one[512], four[512];
    snprintf(one, sizeof one, QUANT_SPEC, "b200", "fp8", "");
    snprintf(four, sizeof four, "%.*s\"parallel\":{\"micro_batch\":1,\"global_batch\":4},%s",
             (int)(strstr(one, "\"cluster\"") - one), one, strstr(one, "\"cluster\""));
    size_t n1, n4;
    double b1, b4;
    CHECK(quant_kernels_of(one, &n1, &b1) == 0);
    CHECK(quant_kernels_of(four, &n4, &b4) == 0);
    CHECK_EQ_INT(n4, 4 * n1);
    /* the weights of one layer, bf16 read and two fp8 copies with scales
     * written (mxfp8); each of the four weight kernels'
     * fixed cost is spread too, so the difference holds it once more
     * (quant_kernels_of counts the bytes less a whole fixed cost) */
    struct est_costs c;
    CHECK(cited_costs(one, &c) == SC_OK);
    const struct hw_profile *hw = cost_hw_profile_find("b200");
    double h = 4096, weights = 4 * h * h + 2 * h * 4 * h;
    double fixed_bytes = c.kernel.kernel_fixed_us * hw->hbm_gbps * c.kernel.hbm_fraction * 1e3;
    CHECK_NEAR((4 * b1 - b4) / 3, weights * (4 + 2.0 / 32) + 4 * fixed_bytes, weights * 0.01);
}

/* MXFP8 on a B200: the GEMMs at twice bf16's rate, but attention, the
 * memory-bound kernels and the quantisation stay: faster than bf16, not
 * twice as fast. */
TEST(synth_fp8_step_on_b200_is_faster_than_bf16_but_not_twice)
{
#define B200_SPEC "{\"model\":{\"layers\":8,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"ffn\":14336," \
        "\"mlp\":\"swiglu\",\"seq\":8192,\"vocab\":128256},\"parallel\":{\"cp\":2,\"dp\":4," \
        "\"global_batch\":8},\"cluster\":{\"gpu\":\"b200\"},\"options\":{\"dtype\":\"%s\"}}"
    char bf16[512], fp8[512];
    snprintf(bf16, sizeof bf16, B200_SPEC, "bf16");
    snprintf(fp8, sizeof fp8, B200_SPEC, "fp8");
    double t16 = estimate_ms(bf16, EST_DETAIL_STAGE, NULL), t8 = estimate_ms(fp8, EST_DETAIL_STAGE, NULL);
    CHECK(t16 > 0 && t8 > 0);
    CHECK(t8 < t16);
    CHECK(t8 > t16 / 2);
}

/* The token dispatchers of a fine-grained MoE (128 experts, top 8) over
 * 16 ranks on two nodes: the all-to-all sends each token's copies for the
 * other node's experts over the network; DeepEP (flex) sends a token
 * there once and forwards it inside the node, its permutation fused, so
 * less communication; the all-gather dispatcher gathers every token over
 * the ep ranks and reduce-scatters back, with no all-to-all. */
#define DISPATCH_SPEC "{\"model\":{\"layers\":2,\"hidden\":2048,\"heads\":32,\"kv_heads\":4,\"head_dim\":128," \
        "\"ffn\":6144,\"mlp\":\"swiglu\",\"seq\":4096,\"vocab\":32000,\"moe\":{\"experts\":128,\"top_k\":8," \
        "\"ffn\":768}},\"parallel\":{\"ep\":16,\"dp\":16,\"micro_batch\":1,\"global_batch\":16}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"moe_dispatcher\":\"%s\"}}"

/* The graph of a spec at kernel detail with its defaults, or NULL. */
static struct model_graph *kernel_graph(const char *json)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct model_graph *g = NULL;
    struct sc_error err;
    if (load(json, &s, &hw))
        return NULL;
    calib_costs_default(hw, &s, &c);
    return synth_build(&s, hw, &c, EST_DETAIL_KERNEL, &g, &err) ? NULL : g;
}

/* Tasks of the spec's kernel-detail graph named `name`, and of them how
 * many run a collective of kind op. */
static int named_tasks(const char *json, const char *name, enum model_coll_op op, int *of_op)
{
    struct model_graph *g = kernel_graph(json);
    int n = 0;
    *of_op = 0;
    if (!g)
        return -1;
    for (size_t i = 0; i < g->n_tasks; i++)
        if (!strcmp(model_graph_str(g, g->src[i].name), name)) {
            n++;
            *of_op += g->tasks[i].cls == MODEL_TASK_COMM && g->tasks[i].sub == op;
        }
    model_graph_free(g);
    return n;
}

TEST(synth_moe_dispatchers)
{
    char a2a[768], ag[768], flex[768];
    snprintf(a2a, sizeof a2a, DISPATCH_SPEC, "alltoall");
    snprintf(ag, sizeof ag, DISPATCH_SPEC, "allgather");
    snprintf(flex, sizeof flex, DISPATCH_SPEC, "flex");
    struct bd t_a2a, t_flex;
    REQUIRE(estimate_at(a2a, EST_DETAIL_KERNEL, NULL, &t_a2a) == 0);
    REQUIRE(estimate_at(flex, EST_DETAIL_KERNEL, NULL, &t_flex) == 0);
    CHECK(t_flex.comm < t_a2a.comm / 2);
    CHECK(t_flex.step < t_a2a.step);
    int op;
    /* 2 layers, one micro-batch: a dispatch forward and backward each */
    CHECK_EQ_INT(named_tasks(a2a, "moe dispatch", MODEL_COLL_ALLTOALL, &op), 2);
    CHECK_EQ_INT(op, 2);
    CHECK_EQ_INT(named_tasks(a2a, "permute", MODEL_COLL_UNKNOWN, &op), 2);
    CHECK_EQ_INT(named_tasks(flex, "permute", MODEL_COLL_UNKNOWN, &op), 0); /* fused into DeepEP's */
    CHECK_EQ_INT(named_tasks(ag, "moe dispatch", MODEL_COLL_ALLGATHER, &op), 2);
    CHECK_EQ_INT(op, 2);
    CHECK_EQ_INT(named_tasks(ag, "moe combine", MODEL_COLL_REDUCESCATTER, &op), 2);
    CHECK_EQ_INT(op, 2);
}

/* Sliding-window attention in every second layer (GPT-OSS's pattern): a
 * windowed layer's flash attention computes its window's keys only (1.6%
 * of a full layer's FLOPs here; its blocks' fixed times and bytes stay),
 * so the step's attention takes a little over half the full layers';
 * context parallelism is refused. */
#define WINDOW_SPEC "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":32,\"kv_heads\":8,\"head_dim\":64," \
        "\"seq\":16384,\"vocab\":32000%s},\"parallel\":{\"micro_batch\":1,\"global_batch\":1%s}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"}}"

/* The spec's attention kernels' time at kernel detail, ms. */
static double attention_ms(const char *json)
{
    struct model_graph *g = kernel_graph(json);
    double ms = 0;
    if (!g)
        return -1;
    for (size_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].cls == MODEL_TASK_KERNEL && g->tasks[i].sub == MODEL_KF_ATTENTION)
            ms += (double)g->tasks[i].dur / 1e6;
    model_graph_free(g);
    return ms;
}

TEST(synth_sliding_window_attention)
{
    char full[512], windowed[512], cp[512];
    snprintf(full, sizeof full, WINDOW_SPEC, "", "");
    snprintf(windowed, sizeof windowed, WINDOW_SPEC, ",\"attention_window\":128,\"full_attention_every\":2", "");
    snprintf(cp, sizeof cp, WINDOW_SPEC, ",\"attention_window\":128,\"full_attention_every\":2", ",\"cp\":2");
    double a_full = attention_ms(full), a_win = attention_ms(windowed);
    CHECK(a_full > 0 && a_win > 0);
    printf("  attention %.3f ms full, %.3f ms windowed\n", a_full, a_win);
    CHECK(a_win > 0.5 * a_full && a_win < 0.6 * a_full);
    CHECK(estimate_ms(windowed, EST_DETAIL_STAGE, NULL) < estimate_ms(full, EST_DETAIL_STAGE, NULL));
    struct est_spec s;
    const struct hw_profile *hw;
    struct sc_error err;
    CHECK_EQ_INT(spec_load(cp, strlen(cp), &s, &hw, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "model.attention_window");
}

/* Full recomputation of the first N layers of each model chunk
 * (options.recompute_layers): only those run their forward again, so the
 * step falls between none and full of all, rising with N, and the
 * planner's bounds stay below it, under ZeRO stages 1 and 3. */
TEST(synth_recompute_layers_of_each_chunk)
{
#define RCL_SPEC "{\"model\":{\"layers\":16,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":32000}," \
        "\"parallel\":{\"pp\":2,\"vpp\":2,\"schedule\":\"interleaved\",\"dp\":2,\"micro_batch\":1,\"global_batch\":8}," \
        "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"zero_stage\":%d%s}}"
    static const char *const rcp[] = {"", ",\"recompute\":\"full\",\"recompute_layers\":1",
                                      ",\"recompute\":\"full\",\"recompute_layers\":2", ",\"recompute\":\"full\""};
    /* of the 16 layers (chunks of 4) these run the qkv projection again, per micro-batch */
    static const size_t again[] = {0, 4, 8, 16};
    for (int zero = 1; zero <= 3; zero += 2) {
        double step[4];
        size_t qkv[4];
        for (int k = 0; k < 4; k++) {
            char spec[768];
            snprintf(spec, sizeof spec, RCL_SPEC, zero, rcp[k]);
            struct est_spec sp;
            const struct hw_profile *hw;
            struct est_costs c;
            struct est_pass_costs pc;
            struct sc_error err;
            double bound = 0, z3 = 0;
            REQUIRE(load(spec, &sp, &hw) == SC_OK);
            calib_costs_default(hw, &sp, &c);
            step[k] = estimate_ms(spec, EST_DETAIL_LAYER, NULL);
            CHECK(synth_bound(&sp, hw, &c, &bound, &err) == SC_OK);
            CHECK(synth_pass_costs(&sp, hw, &c, &pc, &err) == SC_OK);
            CHECK(synth_bound_z3(&sp, hw, &c, &pc, INFINITY, &z3, &err) == SC_OK);
            CHECK(bound > 0 && bound <= step[k]);
            CHECK(z3 <= step[k]);
            CHECK(zero < 3 || z3 > 0);
            qkv[k] = kernels_named(spec, "qkv projection");
        }
        for (int k = 0; k < 3; k++)
            CHECK(step[k] < step[k + 1]);
        for (int k = 1; k < 4; k++) /* 4 micro-batches */
            CHECK_EQ_INT(qkv[k] - qkv[0], 4 * again[k]);
    }
#undef RCL_SPEC
}

/* A context-parallel ring of 4: block i + 1 needs exchange i, which runs
 * beside block i, so a pass's blocks follow one another at the pace of the
 * slower of a block and an exchange (not an exchange and then a block). */
TEST(synth_cp_ring_overlaps_each_exchange_with_a_block)
{
    static const char spec[] = "{\"model\":{\"layers\":2,\"hidden\":2048,\"heads\":16,\"seq\":16384},"
                               "\"parallel\":{\"tp\":1,\"pp\":1,\"cp\":4,\"dp\":1,\"micro_batch\":1,"
                               "\"global_batch\":1},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    struct model_graph *g = kernel_graph(spec);
    struct model_replay *r = NULL;
    struct sc_error err;
    REQUIRE(g && model_replay_run(g, NULL, &r, &err) == SC_OK);
    double blk = 0, ex = 0, first = -1, last = 0;
    int blocks = 0;
    for (uint32_t i = 0; i < g->n_tasks && blocks < 4; i++) {
        const char *name = model_graph_str(g, g->src[i].name);
        if (!strcmp(name, "context-parallel key/value exchange") && ex == 0)
            ex = (double)g->tasks[i].dur;
        if (strcmp(name, "attention block"))
            continue;
        blk = (double)g->tasks[i].dur;
        if (first < 0)
            first = (double)r->start[i];
        last = (double)r->end[i];
        blocks++;
    }
    REQUIRE(blocks == 4 && blk > 0 && ex > 0);
    double span = last - first;
    /* the ring of a forward pass: 4 blocks, 3 exchanges each beside a block */
    CHECK(span >= 4 * blk - 1);
    CHECK(span <= blk + 3 * fmax(blk, ex) + 1e3);
    model_replay_free(r);
    model_graph_free(g);
}
