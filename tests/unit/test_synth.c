/* tests/unit/test_synth.c: the step synthesised from a spec: it replays
 * without forcing anything, its three levels of detail agree, and its
 * schedule behaves as Megatron's does (figures derived in each test). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/estimate.h"
#include "estimator/synth.h"
#include "model/graph.h"
#include "model/replay.h"
#include "tests/check.h"
#include "common/banned.h"

static int load(const char *json, struct est_spec *s, const struct hw_profile **hw)
{
    struct sc_error err;
    int rc = est_spec_load(json, strlen(json), s, hw, &err);
    if (rc)
        fprintf(stderr, "spec: %s\n", err.msg);
    return rc;
}

static double estimate_ms(const char *json, enum est_detail d, struct est_costs *override)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    struct sc_error err;
    if (load(json, &s, &hw))
        return -1;
    est_costs_default(hw, &s, &c);
    if (override)
        c = *override;
    if (est_estimate(&s, hw, &c, d, &e, &err)) {
        fprintf(stderr, "estimate: %s\n", err.msg);
        return -1;
    }
    double ms = e.step_ms;
    est_estimate_release(&e);
    return ms;
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
        est_costs_default(hw, &s, &c);
        CHECK(est_synth(&s, hw, &c, EST_DETAIL_KERNEL, &g, &err) == SC_OK);
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

/* The default costs of a spec's GPU. */
static int default_costs(const char *json, struct est_costs *c)
{
    struct est_spec s;
    const struct hw_profile *hw;
    int rc = load(json, &s, &hw);
    if (rc == SC_OK)
        est_costs_default(hw, &s, c);
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
    CHECK(default_costs(spec, &c) == SC_OK);
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

/* A GPU-bound step: with asynchronous launches (host_wait 0) the host's
 * dispatch time hides behind the GPU's; when the host waits for every
 * operation (host_wait 1) the two add up, so the step grows linearly with
 * the host's cost, by the same amount at every level of detail. */
TEST(synth_host_waiting_on_the_gpu_adds_host_time)
{
    const char *spec = "{\"model\":{\"layers\":4,\"hidden\":4096,\"heads\":32,\"seq\":2048,\"vocab\":1024},"
                       "\"parallel\":{\"micro_batch\":2,\"global_batch\":4},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    struct est_costs c;
    CHECK(default_costs(spec, &c) == SC_OK);
    double t[2][3]; /* [host_wait][host 0, 25, 50 us] at kernel detail */
    for (int w = 0; w < 2; w++)
        for (int h = 0; h < 3; h++) {
            c.host_wait = w;
            c.host_op_us = c.host_coll_us = 25.0 * h;
            t[w][h] = estimate_ms(spec, EST_DETAIL_KERNEL, &c);
            CHECK(t[w][h] > 0);
            for (int d = EST_DETAIL_STAGE; d < EST_DETAIL_KERNEL; d++)
                CHECK_NEAR(estimate_ms(spec, (enum est_detail)d, &c) / t[w][h], 1, 0.01);
        }
    CHECK_NEAR(t[1][0] / t[0][0], 1, 0.001); /* no host time: nothing to wait behind */
    CHECK_NEAR(t[0][2] / t[0][0], 1, 0.02);  /* hidden behind the GPU */
    CHECK(t[1][2] > t[1][0] * 1.05);          /* added to it */
    CHECK_NEAR((t[1][2] - t[1][0]) / (t[1][1] - t[1][0]), 2, 0.02);
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
