/* tests/unit/test_memory.c: the memory model against the ZeRO paper's
 * figures and Korthikanti et al.'s activation formulas, each recomputed
 * here by hand; Megatron's layer placement over pipeline stages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/flops.h"
#include "estimator/spec/memory.h"
#include "estimator/spec/placement.h"
#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static struct est_spec spec(const char *json)
{
    struct est_spec s;
    struct sc_error err;
    memset(&s, 0, sizeof s);
    if (spec_parse(json, strlen(json), &s, &err))
        sc_check_fail(__FILE__, __LINE__, "%s: %s", json, err.msg);
    return s;
}

static double states_gb(const struct est_model_states *st)
{
    return (st->weights + st->gradients + st->optimizer) / 1e9;
}

TEST(memory_zero_paper_figures)
{
    /* Rajbhandari et al. 2020, Figure 1: 7.5B parameters, 64 GPUs,
     * mixed-precision Adam (K = 12), its 120, 31.4, 16.6 and 1.9 GB with
     * 2-byte gradients; Megatron accumulates them in fp32 (4 bytes), so
     * (2 + 4 + 12) x 7.5 = 135, (2 + 4 + 12/64) x 7.5, (2 + 16/64) x 7.5,
     * 18/64 x 7.5 */
    static const double want[4] = {135, 46.41, 16.875, 2.109};
    struct est_spec amp = spec("{\"model\":{\"layers\":1,\"hidden\":64,\"heads\":1,\"seq\":8},"
                               "\"cluster\":{\"gpu\":\"x\"}}");
    struct est_state_bytes b;
    spec_state_bytes(&amp.options, &b);
    CHECK_EQ_INT(b.master, 1);
    for (int stage = 0; stage <= 3; stage++) {
        struct est_model_states st;
        spec_model_states(7.5e9, &b, stage, 64, &st);
        CHECK_NEAR(states_gb(&st), want[stage], 0.005);
    }
    struct est_model_states st;
    spec_model_states(7.5e9, &b, 1, 64, &st);
    CHECK_NEAR(st.weights, 2 * 7.5e9, 1);
    CHECK_NEAR(st.gradients, 4 * 7.5e9, 1);
    CHECK_NEAR(st.optimizer, 12 * 7.5e9 / 64, 1);
    /* an Adam step: the fp32 gradient read, master, m, v read and written,
     * the 16-bit weights written */
    CHECK_NEAR(spec_optimizer_step_bytes(&b), 4 + 24 + 2, 0);

    /* pure bf16 (the torch-steps' bf16 runs): weights, gradients and both
     * moments in bf16, 2 + 2 + 4; the step reads the gradient, reads and
     * writes weights and moments */
    amp.options.master_weights = EST_MASTER_BF16;
    spec_state_bytes(&amp.options, &b);
    spec_model_states(1e9, &b, 0, 8, &st);
    CHECK_NEAR(states_gb(&st), 8, 1e-9);
    CHECK_NEAR(spec_optimizer_step_bytes(&b), 2 + 8 + 4, 0);

    amp.options.dtype = HW_FP32; /* 4 + 4 + 8, no master copy */
    amp.options.master_weights = EST_MASTER_FP32;
    spec_state_bytes(&amp.options, &b);
    spec_model_states(1e9, &b, 0, 8, &st);
    CHECK_NEAR(states_gb(&st), 16, 1e-9);
    CHECK_EQ_INT(b.master, 0);
}

/* Korthikanti et al. 2022's configuration of GPT-3 175B: seq 2048, hidden
 * 12288, 96 heads, micro-batch 1, tensor parallelism 8. Their formulas are
 * for attention with the scores in memory: "attention":"unfused". */
static const char *gpt3(const char *parallel, const char *options)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"model\":{\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq\":2048,\"vocab\":51200},"
             "\"parallel\":{%s},\"options\":{\"attention\":\"unfused\"%s%s},"
             "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}",
             parallel, *options ? "," : "", options);
    return buf;
}

TEST(memory_korthikanti_per_layer)
{
    double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
    struct est_layer_activations la;
    struct est_spec sp = spec(gpt3("", ""));
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, sbh * (34 + 5 * a * s / h), 0.5);

    sp = spec(gpt3("\"tp\":8", ""));
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, sbh * (10 + 24 / t + 5 * a * s / (h * t)), 0.5);
    CHECK_NEAR(la.kept, sbh * 23, 0.5); /* (10 + 3 + 10): the paper's Table 2 row */

    sp = spec(gpt3("\"tp\":8", "\"sequence_parallel\":true"));
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, sbh * (34 + 5 * a * s / h) / t, 0.5);

    sp = spec(gpt3("\"tp\":8", "\"sequence_parallel\":true,\"recompute\":\"selective\""));
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, sbh * 34 / t, 0.5);

    sp = spec(gpt3("\"tp\":8", "\"recompute\":\"selective\""));
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, sbh * (10 + 24 / t), 0.5);

    sp = spec(gpt3("\"tp\":8", "\"sequence_parallel\":true,\"recompute\":\"full\""));
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, 2 * sbh / t, 0.5);
    CHECK_NEAR(la.full, sbh * (34 + 5 * a * s / h) / t, 0.5);

    /* context parallelism divides everything by cp */
    struct est_layer_activations cp2;
    sp = spec(gpt3("\"tp\":8,\"cp\":2", "\"sequence_parallel\":true"));
    spec_layer_activations(&sp, 0, &cp2);
    CHECK_NEAR(cp2.kept, sbh * (34 + 5 * a * s / h) / t / 2, 0.5);
}

TEST(memory_grouped_query_gated_and_moe_layers)
{
    /* Llama-3.1-8B's layer, tp 2 with sequence parallelism, micro-batch 2:
     * by tensor, 2-byte values and 1-byte masks */
    struct est_spec sp =
        spec("{\"model\":{\"layers\":32,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"ffn\":14336,"
             "\"mlp\":\"swiglu\",\"seq\":8192,\"vocab\":128256},\"parallel\":{\"tp\":2,"
             "\"micro_batch\":2},\"options\":{\"sequence_parallel\":true,\"attention\":\"unfused\"},\"cluster\":{\"gpu\":\"x\"}}");
    double T = 2 * 8192, h = 4096, t = 2, q = 4096, kv = 1024, f = 14336;
    double norms_inputs_masks = T * h * (2 + 2 + 2 + 2 + 1 + 1) / t;
    double qkv_out = T * (q + kv + kv + q) * 2 / t;
    /* b x heads x s x s: 8,192 keys are past Megatron's fused softmax
     * (spec_fused_softmax), so PyTorch's keeps its output in fp32: 4
     * bytes, the dropout mask 1 and its output 2 */
    double scores = 32 * T * 8192 * (4 + 1 + 2) / t;
    double gated = T * (2 * f + f) * 2 / t;
    struct est_layer_activations la;
    spec_layer_activations(&sp, 0, &la);
    CHECK_NEAR(la.kept, norms_inputs_masks + qkv_out + scores + gated, 1);

    /* an MoE layer: shared expert like a dense MLP, routed tokens x top_k
     * with their input and intermediates split over etp */
    sp = spec("{\"model\":{\"layers\":2,\"hidden\":64,\"heads\":4,\"seq\":128,\"mlp\":\"swiglu\","
              "\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":32,\"shared_experts\":1}},"
              "\"parallel\":{\"tp\":2,\"etp\":1,\"ep\":2,\"dp\":2},"
              "\"options\":{\"sequence_parallel\":true,\"attention\":\"unfused\"},\"cluster\":{\"gpu\":\"x\"}}");
    T = 128;
    h = 64;
    /* 2 heads a rank at micro-batch 1: PyTorch's softmax, fp32 output */
    double base = T * h * 10 / 2 + T * (4 * 64) * 2 / 2 + 4 * T * 128 * 7 / 2;
    double shared = T * 3 * 32 * 2 / 2;
    double routed = (T * 2 * 1 / 2) * (h * 2 + 3 * 32 * 2 / 1.0);
    spec_layer_activations(&sp, 1, &la);
    CHECK_NEAR(la.kept, base + shared + routed, 1e-6);
}

TEST(memory_flash_attention_keeps_only_softmax_statistics)
{
    /* GPT-3's layer with tp 8: flash attention (the default) keeps neither
     * the scores nor their dropout (the 5·a·s/h term of s·b·h·(10 + 24/t +
     * 5·a·s/(h·t))), only one fp32 log-sum-exp per head and query row */
    double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
    static const char flash[] =
        "{\"model\":{\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq\":2048,\"vocab\":51200},"
        "\"parallel\":{\"tp\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    struct est_spec sp = spec(flash);
    CHECK_EQ_INT(sp.options.attention, EST_ATTENTION_FLASH);
    struct est_layer_activations fl, un;
    spec_layer_activations(&sp, 0, &fl);
    sp = spec(gpt3("\"tp\":8", ""));
    spec_layer_activations(&sp, 0, &un);
    double stats = 4 * b * a * s / t;
    CHECK_NEAR(un.kept - fl.kept, sbh * 5 * a * s / (h * t) - stats, 0.5);
    CHECK_NEAR(fl.kept, sbh * (10 + 24 / t) + stats, 0.5);
    CHECK_NEAR(fl.full, fl.kept, 1e-9);
    /* with sequence parallelism: s·b·h·34/t plus the statistics */
    sp = spec("{\"model\":{\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq\":2048,\"vocab\":51200},"
              "\"parallel\":{\"tp\":8},\"options\":{\"sequence_parallel\":true,\"attention\":\"flash\"},"
              "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}");
    spec_layer_activations(&sp, 0, &fl);
    CHECK_NEAR(fl.kept, sbh * 34 / t + stats, 0.5);
}

TEST(memory_korthikanti_first_stage_in_flight)
{
    /* pipeline 8 over 96 layers, 64 micro-batches: under 1F1B the first
     * stage holds 8 micro-batches of 12 layers = 96 layers' activations
     * (plus the embedding's dropout mask per micro-batch) */
    double sbh = 2048.0 * 12288, t = 8;
    struct est_spec sp =
        spec(gpt3("\"tp\":8,\"pp\":8,\"dp\":1,\"global_batch\":64",
                  "\"sequence_parallel\":true,\"recompute\":\"selective\""));
    struct est_memory mem;
    struct sc_error err;
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK_EQ_INT(mem.n_stages, 8);
    CHECK_EQ_INT(mem.stages[0].in_flight, 8);
    CHECK_NEAR(mem.stages[0].activations, 8 * (12 * 34 * sbh / t + sbh / t), 1);
    /* the last stage: one micro-batch, its norm and output-layer inputs,
     * and the logits' working set: the 16-bit logits beside their fp32
     * softmax */
    CHECK_EQ_INT(mem.stages[7].in_flight, 1);
    CHECK_NEAR(mem.stages[7].activations,
               12 * 34 * sbh / t + 2 * 2 * sbh / t + (2 + 4) * 2048.0 * 51200 / t, 1);
    spec_memory_release(&mem);

    /* interleaved with 2 chunks: L (1 + (p - 1) / (p v)) = 138 layers */
    sp = spec(gpt3("\"tp\":8,\"pp\":8,\"vpp\":2,\"schedule\":\"interleaved\",\"global_batch\":64",
                   "\"sequence_parallel\":true,\"recompute\":\"selective\""));
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK_EQ_INT(mem.stages[0].in_flight, 23);
    /* chunk 0 holds the embedding: 15 of the first 23 forward passes are
     * of it (micro-batches 0-7 and 8-14); after the next forward (chunk 0,
     * micro-batch 15) the first backward frees a pass of chunk 1, so 16
     * passes of chunk 0 are held until backward pass 8 frees one of it */
    CHECK_NEAR(mem.stages[0].activations, 138 * 34 * sbh / t + 16 * sbh / t, 1);
    spec_memory_release(&mem);

    /* full recomputation: each layer's input per micro-batch in flight and
     * one layer recomputed */
    sp = spec(gpt3("\"tp\":8,\"pp\":8,\"global_batch\":64",
                   "\"sequence_parallel\":true,\"recompute\":\"full\""));
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK_NEAR(mem.stages[0].activations,
               8 * (12 * 2 * sbh / t + sbh / t) + sbh * (34 + 5 * 96 * 2048 / 12288.0) / t, 1);
    spec_memory_release(&mem);
}

TEST(memory_model_states_per_stage_and_fit)
{
    /* one stage, tp 2, dp 64, distributed optimizer: dense weights split
     * by tp, norms replicated, optimizer sharded over dp */
    struct est_spec sp = spec("{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024,"
                              "\"vocab\":32000},\"parallel\":{\"tp\":2,\"dp\":64},\"options\":{"
                              "\"zero_stage\":1},\"cluster\":{\"gpu\":\"x\"}}");
    double h = 1024, per_gpu = 4 * (12 * h * h / 2 + 2 * h) + 2 * 32000 * h / 2 + h;
    struct est_memory mem;
    struct sc_error err;
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK_NEAR(mem.stages[0].states.weights, 2 * per_gpu, 1e-3);
    CHECK_NEAR(mem.stages[0].states.gradients, 4 * per_gpu, 1e-3); /* fp32 main grads */
    CHECK_NEAR(mem.stages[0].states.optimizer, 12 * per_gpu / 64, 1e-3);
    CHECK_NEAR(mem.capacity_gb, 80 * (1 - EST_MEMORY_RESERVE_FRACTION) - EST_MEMORY_RESERVE_GB, 1e-9);
    CHECK(mem.fits);
    CHECK_NEAR(mem.gb_per_gpu * 1e9,
               mem.stages[0].states.weights + mem.stages[0].states.gradients +
                   mem.stages[0].states.optimizer + mem.stages[0].activations,
               1e-3);
    spec_memory_release(&mem);

    /* GPT-3 175B on 8 GPUs without pipeline: far over 80 GB */
    sp = spec(gpt3("\"tp\":8", ""));
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK(!mem.fits);
    CHECK(mem.gb_per_gpu > 175e9 * 16 / 8 / 1e9);
    spec_memory_release(&mem);

    /* the worst stage is the peak: the first under 1F1B with no recompute */
    sp = spec(gpt3("\"tp\":8,\"pp\":8,\"global_batch\":64", "\"sequence_parallel\":true"));
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK_EQ_INT(mem.worst_stage, 0);
    CHECK_NEAR(mem.gb_per_gpu, mem.stages[0].total / 1e9, 1e-9);
    spec_memory_release(&mem);
}

/* The activations one ZeRO stage's estimate lends another (what the
 * planner does across ZeRO stages) give every figure exactly as modelling
 * them again does; the states are still the borrower's own. */
TEST(memory_estimate_like_equals_a_fresh_estimate)
{
    const char *layouts[] = {"\"tp\":8,\"pp\":8,\"dp\":4,\"global_batch\":64",
                             "\"tp\":2,\"pp\":8,\"vpp\":6,\"schedule\":\"interleaved\",\"dp\":4,"
                             "\"global_batch\":64"};
    const char *options[] = {"\"sequence_parallel\":true,\"recompute\":\"full\"",
                             "\"recompute\":\"selective\""};
    for (int l = 0; l < 2; l++) {
        char opt0[128], opt3[128];
        snprintf(opt0, sizeof opt0, "%s,\"zero_stage\":0", options[l]);
        snprintf(opt3, sizeof opt3, "%s,\"zero_stage\":3", options[l]);
        struct est_spec s0 = spec(gpt3(layouts[l], opt0)), s3 = spec(gpt3(layouts[l], opt3));
        struct est_memory m0, fresh, like;
        struct sc_error err;
        CHECK_EQ_INT(spec_memory_estimate(&s0, 80, &m0, &err), SC_OK);
        CHECK_EQ_INT(spec_memory_estimate(&s3, 80, &fresh, &err), SC_OK);
        CHECK_EQ_INT(spec_memory_estimate_like(&s3, &m0, 80, 0, &like, &err), SC_OK);
        CHECK_EQ_INT(like.n_stages, fresh.n_stages);
        CHECK(fresh.stages[0].states.weights < m0.stages[0].states.weights); /* ZeRO-3 shards them */
        for (int64_t r = 0; r < fresh.n_stages; r++) {
            CHECK(memcmp(&like.stages[r], &fresh.stages[r], sizeof fresh.stages[r]) == 0);
        }
        CHECK_EQ_INT(like.worst_stage, fresh.worst_stage);
        CHECK(like.gb_per_gpu == fresh.gb_per_gpu && like.fits == fresh.fits);
        spec_memory_release(&m0);
        spec_memory_release(&fresh);
        spec_memory_release(&like);
    }
}

/* A check (until_over) stops at the first stage over the GPU's memory:
 * the stages it modelled are the full estimate's, and one that goes on
 * from it (like) models the rest and ends as the full estimate does. */
TEST(memory_estimate_until_over_stops_at_the_first_stage_that_does_not_fit)
{
    struct est_spec s0 = spec(gpt3("\"tp\":8,\"pp\":8,\"dp\":4,\"global_batch\":64", "\"zero_stage\":0")),
                    s1 = spec(gpt3("\"tp\":8,\"pp\":8,\"dp\":4,\"global_batch\":64", "\"zero_stage\":1"));
    struct est_memory full, check, next, full1;
    struct sc_error err;
    CHECK_EQ_INT(spec_memory_estimate(&s0, 40, &full, &err), SC_OK);
    CHECK(!full.fits);
    CHECK_EQ_INT(spec_memory_estimate_like(&s0, NULL, 40, 1, &check, &err), SC_OK);
    CHECK(!check.fits);
    CHECK(check.n_stages >= 1 && check.n_stages < full.n_stages);
    for (int64_t r = 0; r < check.n_stages; r++)
        CHECK(memcmp(&check.stages[r], &full.stages[r], sizeof full.stages[r]) == 0);
    CHECK(check.stages[check.n_stages - 1].total / 1e9 > check.capacity_gb);
    /* ZeRO 1 on a GPU of 200 GB fits: the stages the check left are
     * modelled */
    CHECK_EQ_INT(spec_memory_estimate(&s1, 200, &full1, &err), SC_OK);
    CHECK(full1.fits);
    CHECK_EQ_INT(spec_memory_estimate_like(&s1, &check, 200, 1, &next, &err), SC_OK);
    CHECK_EQ_INT(next.n_stages, full1.n_stages);
    for (int64_t r = 0; r < full1.n_stages; r++)
        CHECK(memcmp(&next.stages[r], &full1.stages[r], sizeof full1.stages[r]) == 0);
    CHECK(next.fits && next.worst_stage == full1.worst_stage && next.gb_per_gpu == full1.gb_per_gpu);
    spec_memory_release(&full);
    spec_memory_release(&check);
    spec_memory_release(&next);
    spec_memory_release(&full1);
}

/* placement: layers per virtual stage */
static void check_placement(int layers, int pp, int vpp, const int *want)
{
    struct est_stage_layers st[16];
    struct sc_error err;
    CHECK_EQ_INT(spec_place_layers(layers, pp, vpp, st, &err), SC_OK);
    int next = 0;
    for (int i = 0; i < pp * vpp; i++) {
        if (st[i].layers != want[i] || st[i].first_layer != next)
            sc_check_fail(__FILE__, __LINE__, "%d layers on %d x %d: stage %d holds %d from %d, not %d",
                          layers, pp, vpp, i, st[i].layers, st[i].first_layer, want[i]);
        next += want[i];
        CHECK_EQ_INT(st[i].embedding, i == 0);
        CHECK_EQ_INT(st[i].loss, i == pp * vpp - 1);
        struct est_stage_layers one; /* one stage alone: the same */
        CHECK_EQ_INT(spec_place_stage(layers, pp, vpp, i, &one, &err), SC_OK);
        CHECK(one.layers == st[i].layers && one.first_layer == st[i].first_layer &&
              one.embedding == st[i].embedding && one.loss == st[i].loss);
    }
}

TEST(placement_megatron_rules)
{
    check_placement(8, 4, 1, (const int[]){2, 2, 2, 2});
    check_placement(8, 2, 2, (const int[]){2, 2, 2, 2});
    /* 30 + 2 = 32 over 4: embedding and loss take a layer's place */
    check_placement(30, 4, 1, (const int[]){7, 8, 8, 7});
    /* 2 + 2 over 4: the first stage holds only the embedding */
    check_placement(2, 4, 1, (const int[]){0, 1, 1, 0});
    check_placement(10, 4, 1, (const int[]){2, 3, 3, 2});
    /* 11 over 4, neither 11 nor 13 divides: 2 each, the remainder to the
     * middle stages */
    check_placement(11, 4, 1, (const int[]){2, 4, 3, 2});
    check_placement(17, 5, 1, (const int[]){3, 4, 4, 3, 3});
    /* 7 over 2: no middle stage, the first takes it */
    check_placement(7, 2, 1, (const int[]){4, 3});
    check_placement(5, 1, 1, (const int[]){5});
    /* 20 over 8 (neither 20 nor 22 divides): 2 each, the 4 left over the 6 middle stages */
    check_placement(20, 4, 2, (const int[]){2, 3, 3, 3, 3, 2, 2, 2});
    check_placement(23, 3, 3, (const int[]){2, 3, 3, 3, 3, 3, 2, 2, 2});

    struct est_stage_layers st[8];
    struct sc_error err;
    CHECK_EQ_INT(spec_place_stage(8, 4, 1, 4, st, &err), SC_EINVAL);
    CHECK_EQ_INT(spec_place_layers(4, 7, 1, st, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "more than layers + 2");
}

/* The peak of activations along Megatron's pass order, simulated pass by
 * pass, for pipelines whose chunks differ in size. */
static void check_peak_by_simulation(const char *parallel)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"model\":{\"layers\":%s,\"hidden\":64,\"heads\":4,\"seq\":128,\"vocab\":1000},"
             "\"parallel\":{%s},\"cluster\":{\"gpu\":\"h100-sxm\"}}",
             strstr(parallel, "\"vpp\":3") ? "11" : strstr(parallel, "\"pp\":3") ? "7" : "10",
             parallel);
    struct est_spec sp = spec(text);
    struct est_memory mem;
    struct sc_error err;
    struct est_stage_layers place[16];
    int64_t pp = sp.parallel.pp, vpp = sp.parallel.vpp, m = spec_micro_batches(&sp);
    double T = 128.0 * (double)sp.parallel.micro_batch, h = 64;
    CHECK_EQ_INT(spec_memory_estimate(&sp, 80, &mem, &err), SC_OK);
    CHECK_EQ_INT(spec_place_layers((int)sp.model.layers, (int)pp, (int)vpp, place, &err), SC_OK);
    for (int64_t r = 0; r < pp; r++) {
        double kept[8] = {0}, held = 0, peak = 0;
        for (int64_t c = 0; c < vpp; c++) {
            const struct est_stage_layers *v = &place[c * pp + r];
            for (int i = v->first_layer; i < v->first_layer + v->layers; i++) {
                struct est_layer_activations la;
                spec_layer_activations(&sp, i, &la);
                kept[c] += la.kept;
            }
            kept[c] += v->embedding ? T * h : 0;                     /* dropout mask */
            kept[c] += v->loss ? 2 * T * h * 2 : 0;                  /* the final norm's, output layer's inputs */
        }
        int64_t total = m * vpp, group = pp * vpp;
        int64_t warmup = vpp > 1 ? 2 * (pp - r - 1) + (vpp - 1) * pp : pp - r - 1, f = 0, b = 0;
        if (warmup > total)
            warmup = total;
        while (f < warmup)
            held += kept[(f++ % group) / pp];
        peak = held;
        while (f < total) {
            held += kept[(f++ % group) / pp];
            if (held > peak)
                peak = held;
            held -= kept[vpp - 1 - (b++ % group) / pp];
        }
        if (r == pp - 1) /* the logits' working set: 16-bit logits, fp32 softmax */
            peak += 6 * T * 1000;
        if (fabs(mem.stages[r].activations - peak) > 1e-6 * peak)
            sc_check_fail(__FILE__, __LINE__, "%s: rank %lld holds %.0f at its peak, not %.0f",
                          parallel, (long long)r, mem.stages[r].activations, peak);
    }
    spec_memory_release(&mem);
}

TEST(memory_peak_follows_megatron_order)
{
    /* 10 layers on 2 x 2 virtual stages: 2, 3, 3, 2 */
    check_peak_by_simulation("\"pp\":2,\"vpp\":2,\"schedule\":\"interleaved\",\"global_batch\":4");
    check_peak_by_simulation("\"pp\":2,\"vpp\":2,\"schedule\":\"interleaved\",\"global_batch\":18");
    /* 11 layers on 2 x 3: 1, 3, 2, 2, 2, 1 */
    check_peak_by_simulation("\"pp\":2,\"vpp\":3,\"schedule\":\"interleaved\",\"global_batch\":6");
    check_peak_by_simulation("\"pp\":2,\"vpp\":3,\"schedule\":\"interleaved\",\"global_batch\":2");
    /* 7 layers on 3 under 1F1B: 2, 3, 2; fewer micro-batches than stages too */
    check_peak_by_simulation("\"pp\":3,\"global_batch\":5");
    check_peak_by_simulation("\"pp\":3,\"global_batch\":2,\"micro_batch\":2");
}

/* The peak allocations of the eager PyTorch steps measured on H100s and
 * H200s (data/calibration/torch-steps, profiler/torch-step.py): each row
 * as the spec that describes its step (tied embeddings, no dropout, the
 * PyTorch framework; mixed precision in ID.amp.csv, pure bf16 in ID.csv)
 * is within 10% of torch.cuda.max_memory_allocated() without the reserve,
 * and the two precisions' estimates differ as their measurements do. */
TEST(memory_torch_steps_peak_within_10_percent)
{
    static const char *const tables[] = {"h100-sxm", "h100-sxm.amp", "h200", "h200.amp"};
    double amp_over_bf16[2][4] = {{0}}; /* per GPU, per model: estimate, measured */
    int rows = 0;
    for (size_t f = 0; f < sizeof tables / sizeof tables[0]; f++) {
        char path[128], *text, *line, *save = NULL;
        size_t n;
        int amp = strstr(tables[f], ".amp") != NULL, model = 0;
        snprintf(path, sizeof path, "data/calibration/torch-steps/%s.csv", tables[f]);
        CHECK((text = th_read_file(path, &n)) != NULL);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char name[64], mlp[16], json[1024];
            long long layers, hidden, heads, kv, ffn, seq, mb;
            double step, min_step, peak_gb;
            if (line[0] == '#' || strncmp(line, "model,", 6) == 0)
                continue;
            CHECK_EQ_INT(sscanf(line, "%63[^,],%lld,%lld,%lld,%lld,%lld,%15[^,],%lld,%lld,%lf,%lf,%lf", name,
                                &layers, &hidden, &heads, &kv, &ffn, mlp, &seq, &mb, &step, &min_step, &peak_gb),
                         12);
            snprintf(json, sizeof json,
                     "{\"model\":{\"layers\":%lld,\"hidden\":%lld,\"heads\":%lld,\"kv_heads\":%lld,\"ffn\":%lld,"
                     "\"mlp\":\"%s\",\"seq\":%lld,\"vocab\":50304,\"tied_embeddings\":true,\"dropout\":false},"
                     "\"parallel\":{\"micro_batch\":%lld},\"cluster\":{\"gpu\":\"%.*s\"},"
                     "\"options\":{\"framework\":\"pytorch\",\"master_weights\":\"%s\"}}",
                     layers, hidden, heads, kv, ffn, mlp, seq, mb, (int)strcspn(tables[f], "."), tables[f],
                     amp ? "fp32" : "bf16");
            struct est_spec sp = spec(json);
            struct est_memory mem;
            struct sc_error err;
            const struct hw_profile *hw = NULL;
            CHECK_EQ_INT(spec_check_gpu(&sp, &hw, &err), SC_OK);
            CHECK_EQ_INT(spec_memory_estimate(&sp, hw->hbm_gb, &mem, &err), SC_OK);
            double error = mem.gb_per_gpu / peak_gb - 1;
            if (fabs(error) > 0.10)
                sc_check_fail(__FILE__, __LINE__, "%s %s: %.3f GB modelled, %.3f measured (%+.1f%%)", tables[f],
                              name, mem.gb_per_gpu, peak_gb, 100 * error);
            CHECK(model < 4);
            amp_over_bf16[0][model] += (amp ? 1 : -1) * mem.gb_per_gpu;
            amp_over_bf16[1][model] += (amp ? 1 : -1) * peak_gb;
            model++;
            rows++;
            spec_memory_release(&mem);
        }
        free(text);
    }
    CHECK_EQ_INT(rows, 16);
    /* AMP needs more than bf16 (fp32 weights, gradients, Adam state, the
     * fp32 residual stream): the model's gap within 10% of the measured */
    for (int k = 0; k < 4; k++) {
        CHECK(amp_over_bf16[1][k] > 0);
        CHECK_NEAR(amp_over_bf16[0][k], amp_over_bf16[1][k], 0.10 * amp_over_bf16[1][k]);
    }
}

/* options.recompute "auto": the least recomputation that fits, on GPUs
 * whose usable memory falls between none's and selective's needs, and
 * below full's; full when nothing fits. */
TEST(memory_recompute_auto_is_the_least_that_fits)
{
    static const char *const levels[] = {"none", "selective", "full"};
    double need[3];
    struct est_memory m;
    struct sc_error err;
    for (int k = 0; k < 3; k++) {
        char opt[96];
        snprintf(opt, sizeof opt, "\"sequence_parallel\":true,\"recompute\":\"%s\"", levels[k]);
        struct est_spec sp = spec(gpt3("\"tp\":8,\"pp\":8,\"global_batch\":64", opt));
        CHECK_EQ_INT(spec_memory_estimate(&sp, 1000, &m, &err), SC_OK);
        need[k] = m.gb_per_gpu;
        spec_memory_release(&m);
    }
    CHECK(need[0] > need[1] && need[1] > need[2]);
    struct est_spec sp = spec(gpt3("\"tp\":8,\"pp\":8,\"global_batch\":64",
                                   "\"sequence_parallel\":true,\"recompute\":\"auto\""));
    for (int k = 0; k <= 3; k++) {
        /* usable memory just above need[k] (k = 3: below full's) */
        double usable = k < 3 ? need[k] * 1.001 : need[2] * 0.5;
        double hbm = (usable + EST_MEMORY_RESERVE_GB) / (1 - EST_MEMORY_RESERVE_FRACTION);
        struct est_spec chosen;
        CHECK_EQ_INT(spec_memory_estimate(&sp, hbm, &m, &err), SC_OK);
        int want = k < 3 ? k : EST_RECOMPUTE_FULL;
        CHECK_EQ_INT(m.recompute, want);
        CHECK_EQ_INT(m.fits, k < 3);
        CHECK_NEAR(m.gb_per_gpu, need[want], 1e-9);
        spec_memory_release(&m);
        CHECK_EQ_INT(spec_memory_resolve_recompute(&sp, hbm, &chosen, &err), SC_OK);
        CHECK_EQ_INT(chosen.options.recompute, want);
    }
}

/* options.recompute_layers: full recomputation of the first N layers of
 * each model chunk. Each more layer recomputed frees, on the rank holding
 * the most passes (rank 0 of 1F1B: pp of them), one layer's activations
 * less its input per pass; N = a chunk's layers is full of all; "auto"
 * takes the least N that fits. */
TEST(memory_recompute_layers_of_each_chunk)
{
    const char *par = "\"tp\":8,\"pp\":8,\"global_batch\":64"; /* 12 layers a chunk */
    struct est_memory m;
    struct sc_error err;
    double need[13]; /* [0]: full of all; [n]: the first n of each chunk */
    for (int n = 0; n <= 12; n++) {
        char opt[128];
        int used = snprintf(opt, sizeof opt, "\"sequence_parallel\":true,\"recompute\":\"full\"");
        if (n)
            snprintf(opt + used, sizeof opt - (size_t)used, ",\"recompute_layers\":%d", n);
        struct est_spec sp = spec(gpt3(par, opt));
        CHECK_EQ_INT(spec_memory_estimate(&sp, 1000, &m, &err), SC_OK);
        need[n] = m.gb_per_gpu;
        CHECK_EQ_INT(m.recompute_layers, n);
        CHECK_EQ_INT(m.worst_stage, 0);
        CHECK_EQ_INT(m.stages[0].in_flight, 8);
        spec_memory_release(&m);
    }
    struct est_spec sp = spec(gpt3(par, "\"sequence_parallel\":true,\"recompute\":\"full\",\"recompute_layers\":1"));
    struct est_layer_activations la;
    spec_layer_activations(&sp, 0, &la);
    for (int n = 1; n < 12; n++)
        CHECK_NEAR(need[n] - need[n + 1], 8 * (la.full - la.kept) / 1e9, 1e-6);
    CHECK_NEAR(need[12], need[0], 1e-9);
    struct est_spec none = spec(gpt3(par, "\"sequence_parallel\":true"));
    CHECK_EQ_INT(spec_memory_estimate(&none, 1000, &m, &err), SC_OK);
    CHECK(m.gb_per_gpu > need[1]);
    spec_memory_release(&m);

    /* auto, on a GPU where 5 layers of each chunk fit and 4 do not (nor
     * selective recomputation, which drops the unfused attention's scores:
     * the same GPT-3 with flash attention, whose statistics are all it
     * drops) */
    char flash[1024];
    snprintf(flash, sizeof flash, "%s", gpt3(par, "\"sequence_parallel\":true,\"recompute\":\"full\""));
    memcpy(strstr(flash, "\"unfused\""), "\"flash\"  ", 9);
    for (int n = 0; n <= 12; n++) {
        struct est_spec f = spec(flash);
        f.options.recompute_layers = n;
        CHECK_EQ_INT(spec_memory_estimate(&f, 1000, &m, &err), SC_OK);
        need[n] = m.gb_per_gpu;
        spec_memory_release(&m);
    }
    memcpy(strstr(flash, "\"full\""), "\"auto\"", 6);
    struct est_spec a = spec(flash);
    struct est_spec sel = a;
    sel.options.recompute = EST_RECOMPUTE_SELECTIVE;
    CHECK_EQ_INT(spec_memory_estimate(&sel, 1000, &m, &err), SC_OK);
    CHECK(m.gb_per_gpu > need[4]);
    spec_memory_release(&m);
    double usable = (need[4] + need[5]) / 2, hbm = (usable + EST_MEMORY_RESERVE_GB) / (1 - EST_MEMORY_RESERVE_FRACTION);
    struct est_spec chosen;
    CHECK_EQ_INT(spec_memory_estimate(&a, hbm, &m, &err), SC_OK);
    CHECK_EQ_INT(m.recompute, EST_RECOMPUTE_FULL);
    CHECK_EQ_INT(m.recompute_layers, 5);
    CHECK(m.fits);
    CHECK_NEAR(m.gb_per_gpu, need[5], 1e-9);
    spec_memory_release(&m);
    CHECK_EQ_INT(spec_memory_resolve_recompute(&a, hbm, &chosen, &err), SC_OK);
    CHECK_EQ_INT(chosen.options.recompute, EST_RECOMPUTE_FULL);
    CHECK_EQ_INT(chosen.options.recompute_layers, 5);
}
