/* tests/unit/test_invariants.c: the physical invariants (estimator/
 * invariants.h) over random valid specs: dense, grouped-query, latent, gated, MoE
 * with every ep / etp folding and routing, context parallelism, pipelines
 * with virtual stages, every dtype and every GPU profile; and the cost
 * models under them (memory-bound kernels, collectives by placement). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/synth/estimate.h"
#include "estimator/spec/flops.h"
#include "estimator/synth/invariants.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/spec/spec.h"
#include "tests/check.h"
#include "common/banned.h"

/* xorshift64*: the sweep is the same on every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static long pick(const long *v, size_t n)
{
    return v[rnd() % n];
}
#define PICK(...) pick((const long[]){__VA_ARGS__}, sizeof((const long[]){__VA_ARGS__}) / sizeof(long))

/* A random spec's JSON (it may be one Megatron cannot run: the parser
 * says so, and the sweep draws again). */
static void random_spec(char *buf, size_t len)
{
    static const char *const dtypes[] = {"fp32", "fp16", "bf16", "fp8", "fp4"};
    static const char *const recompute[] = {"none", "selective", "full", "auto"};
    const struct hw_profile *hw = cost_hw_profile_at(rnd() % cost_hw_profile_count());
    const char *dtype;
    do
        dtype = dtypes[rnd() % 5];
    while (rnd() % 4 && strcmp(dtype, "fp32") == 0); /* fp32 rarely */
    long heads = PICK(8, 16, 32, 48, 64), hd = PICK(64, 128), kv = heads / PICK(1, 2, 4, 8);
    long hidden = rnd() % 4 ? heads * hd : PICK(2048, 4096);
    long tp = PICK(1, 1, 2, 4, 8), cp = PICK(1, 1, 1, 2, 4), pp = PICK(1, 1, 2, 4), dp = PICK(1, 2, 4, 8);
    long layers = PICK(2, 4, 8, 12, 16), vpp = pp > 1 && rnd() % 2 ? PICK(2, 4) : 1;
    long mb = PICK(1, 1, 2, 4), m = PICK(1, 2, 4, 8) * (vpp > 1 ? pp : 1);
    long seq = PICK(1024, 2048, 4096, 8192);
    int moe = rnd() % 5 < 2;
    long experts = PICK(4, 8, 16, 64, 128), top_k = PICK(1, 2, 4, 8), ep = PICK(1, 2, 4, 8, 16);
    long etp = rnd() % 2 ? tp : PICK(1, 2);
    long zero = PICK(0, 1, 1, 2, 3), shard = PICK(1, 2, 4);
    char moe_json[256] = "", moe_par[128] = "", moe_opt[224] = "", rcp_opt[48] = "";
    const char *rcp = recompute[rnd() % 4];
    if (strcmp(rcp, "full") == 0 && rnd() % 2) /* some layers of each chunk (more than a chunk's: refused) */
        snprintf(rcp_opt, sizeof rcp_opt, ",\"recompute_layers\":%ld", PICK(1, 1, 2, 3, 5));
    if (zero == 3 && rnd() % 2)
        snprintf(moe_par, sizeof moe_par, ",\"fsdp_shard\":%ld", shard); /* hybrid sharding */
    if (moe) {
        if (top_k > experts)
            top_k = experts;
        snprintf(moe_json, sizeof moe_json,
                 ",\"moe\":{\"experts\":%ld,\"top_k\":%ld,\"ffn\":%ld,\"shared_experts\":%ld,\"every\":%ld,"
                 "\"dense_layers\":%ld}",
                 experts, top_k, PICK(512, 1536, 4096), PICK(0, 0, 1), PICK(1, 1, 2), PICK(0, 0, 1));
        size_t used = strlen(moe_par);
        snprintf(moe_par + used, sizeof moe_par - used, ",\"ep\":%ld,\"etp\":%ld", ep, etp);
        long cf = PICK(0, 0, 100, 125, 200);
        static const char *const dispatchers[] = {"alltoall", "allgather", "flex"};
        snprintf(moe_opt, sizeof moe_opt, ",\"moe_dispatcher\":\"%s\",\"moe_routing\":\"%s\"%s%.2f",
                 dispatchers[rnd() % 3], rnd() % 2 ? "balanced" : "natural", cf ? ",\"moe_capacity_factor\":" : "",
                 cf ? cf / 100.0 : 0);
        if (!cf)
            moe_opt[strlen(moe_opt) - 4] = 0; /* drop the number printed for no factor */
    }
    char mla[160] = ""; /* latent attention: every head its key and value */
    if (rnd() % 6 == 0) {
        long rope = PICK(32, 64);
        kv = heads;
        snprintf(mla, sizeof mla,
                 ",\"mla\":{\"kv_lora_rank\":%ld,\"q_lora_rank\":%ld,\"qk_head_dim\":%ld,"
                 "\"qk_pos_emb_head_dim\":%ld,\"v_head_dim\":%ld}",
                 PICK(256, 512), PICK(0, 768, 1536), hd, rope, PICK(64, 128));
        hd += rope;
    }
    char window[96] = ""; /* sliding-window layers, every k-th full */
    if (cp == 1 && rnd() % 4 == 0)
        snprintf(window, sizeof window, ",\"attention_window\":%ld,\"full_attention_every\":%ld", PICK(128, 1024),
                 PICK(0, 2, 6));
    snprintf(buf, len,
             "{\"model\":{\"layers\":%ld,\"hidden\":%ld,\"heads\":%ld,\"kv_heads\":%ld,\"head_dim\":%ld,"
             "\"ffn\":%ld,\"mlp\":\"%s\",\"seq\":%ld,\"vocab\":%ld%s%s%s},"
             "\"parallel\":{\"tp\":%ld,\"cp\":%ld,\"pp\":%ld,\"dp\":%ld,\"micro_batch\":%ld,\"global_batch\":%ld,"
             "\"schedule\":\"%s\",\"vpp\":%ld%s},"
             "\"cluster\":{\"gpu\":\"%s\",\"gpus_per_node\":%d},"
             "\"options\":{\"dtype\":\"%s\",\"recompute\":\"%s\"%s,\"attention\":\"%s\",\"zero_stage\":%ld,"
             "\"sequence_parallel\":%s,\"overlap_grad_reduce\":%s,\"overlap_param_gather\":%s%s}}",
             layers, hidden, heads, kv, hd, PICK(2, 3, 4) * hidden, rnd() % 2 ? "swiglu" : "gelu", seq,
             PICK(32000, 50304, 128256), window, moe_json, mla, tp, cp, pp, dp, mb, mb * dp * m,
             vpp > 1 ? "interleaved" : "1f1b", vpp, moe_par, hw->id, hw->gpus_per_node, dtype,
             rcp, rcp_opt, rnd() % 6 ? "flash" : "unfused", zero,
             tp > 1 || rnd() % 2 ? "true" : "false", rnd() % 2 ? "true" : "false", rnd() % 2 ? "true" : "false",
             moe_opt);
}

TEST(invariants_hold_over_a_thousand_random_specs)
{
    char json[2048];
    int valid = 0, tried = 0, moe = 0, latent = 0, partial = 0, kinds[HW_DTYPE_COUNT] = {0};
    size_t gpus_seen = 0;
    unsigned char seen[64] = {0};
    while (valid < 1000 && tried < 200000) {
        struct est_spec s;
        const struct hw_profile *hw;
        struct est_costs c;
        struct est_estimate e;
        struct sc_error err;
        tried++;
        random_spec(json, sizeof json);
        if (spec_load(json, strlen(json), &s, &hw, &err))
            continue;
        valid++;
        moe += s.model.moe.experts > 0;
        latent += s.model.mla.kv_lora_rank > 0;
        partial += s.options.recompute_layers > 0;
        kinds[s.options.dtype]++;
        for (size_t i = 0; i < cost_hw_profile_count() && i < sizeof seen; i++)
            if (cost_hw_profile_at(i) == hw && !seen[i]++)
                gpus_seen++;
        calib_costs_default(hw, &s, &c);
        enum est_detail d = (enum est_detail)(valid % 3);
        if (synth_estimate(&s, hw, &c, d, &e, &err)) {
            sc_check_fail(__FILE__, __LINE__, "%s: %s", json, err.msg);
            continue;
        }
        if (synth_invariants_check(&s, hw, &c, &e, &err))
            sc_check_fail(__FILE__, __LINE__, "%s (%s detail): %s", json, synth_detail_name(d), err.msg);
        synth_estimate_release(&e);
    }
    CHECK_EQ_INT(valid, 1000);
    CHECK(moe >= 200);
    CHECK(latent >= 100);
    CHECK(partial >= 50); /* full recomputation of some layers of each chunk */
    CHECK_EQ_INT(gpus_seen, cost_hw_profile_count() < sizeof seen ? cost_hw_profile_count() : sizeof seen);
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        if (d != HW_TF32)
            CHECK(kinds[d] > 0);
}

/* Latent attention without sequence parallelism: every tensor-parallel
 * rank runs the replicated down projections on every token, which the
 * hardware FLOPs count (the invariants compare them with the step's). */
TEST(invariants_hold_for_latent_attention_without_sequence_parallelism)
{
    static const char json[] =
        "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"ffn\":5632,\"mlp\":\"swiglu\","
        "\"mla\":{\"kv_lora_rank\":512,\"q_lora_rank\":1536}},\"parallel\":{\"tp\":%d,\"dp\":2,"
        "\"global_batch\":8},\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":%s}}";
    double flops[2];
    for (int sp = 0; sp < 2; sp++) {
        char text[512];
        struct est_spec s;
        const struct hw_profile *hw;
        struct est_costs c;
        struct est_estimate e;
        struct sc_error err;
        snprintf(text, sizeof text, json, 4, sp ? "true" : "false");
        REQUIRE(spec_load(text, strlen(text), &s, &hw, &err) == SC_OK);
        calib_costs_default(hw, &s, &c);
        REQUIRE(synth_estimate(&s, hw, &c, EST_DETAIL_KERNEL, &e, &err) == SC_OK);
        CHECK_EQ_INT(synth_invariants_check(&s, hw, &c, &e, &err), SC_OK);
        synth_estimate_release(&e);
        flops[sp] = spec_hardware_flops_per_token(&s);
    }
    /* three more copies of the down projections: 4 layers x 2048 x (1536 +
     * 512 + 64) weights, 6 FLOPs each a token */
    CHECK(fabs(flops[0] - flops[1] - 3.0 * 6 * 4 * 2048 * 2112) < 1);
}

/* The cost models under the invariants: a memory-bound kernel at most at
 * HBM bandwidth, a collective at most at its placement's link (NVLink
 * inside one domain, the network across), on every GPU. */
TEST(invariants_cost_models_respect_bandwidth)
{
    for (size_t i = 0; i < cost_hw_profile_count(); i++) {
        const struct hw_profile *hw = cost_hw_profile_at(i);
        struct est_costs c;
        struct sc_error err;
        calib_costs_default(hw, NULL, &c);
        for (double bytes = 1e3; bytes < 1e11; bytes *= 7.3) {
            CHECK(cost_kernel_memory_us(&c.kernel, hw, bytes) * 1e-6 >= bytes / (hw->hbm_gbps * 1e9));
            static const enum model_coll_op ops[] = {MODEL_COLL_ALLREDUCE, MODEL_COLL_ALLGATHER,
                                                     MODEL_COLL_REDUCESCATTER, MODEL_COLL_ALLTOALL,
                                                     MODEL_COLL_SENDRECV};
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
                for (int ranks = 2; ranks <= 512; ranks *= 4)
                    for (int per = 1; per <= ranks && per <= hw->gpus_per_node; per *= 2) {
                        struct coll_estimate ce;
                        struct coll_group g = {ops[k] == MODEL_COLL_SENDRECV ? 2 : ranks,
                                               ops[k] == MODEL_COLL_SENDRECV ? (per > 1 ? 2 : 1) : per};
                        REQUIRE(cost_coll_estimate(&c.coll, ops[k], &g, bytes, &ce, &err) == SC_OK);
                        int one_domain = g.ranks_per_domain == g.ranks;
                        double link = one_domain ? hw->nvlink_gbps : hw->network_gbps;
                        int in_switch = one_domain ? hw->nvls : hw->ib_sharp;
                        /* across domains the slowest link carries what leaves a domain */
                        double wire = bytes * synth_wire_factor(ops[k], one_domain ? g.ranks : g.ranks / g.ranks_per_domain,
                                                              in_switch);
                        if (!(ce.time_us * 1e-6 * (1 + 1e-9) >= wire / (link * 1e9) / (one_domain ? 1 : g.ranks_per_domain)))
                            sc_check_fail(__FILE__, __LINE__, "%s: %s of %.3g bytes over %d ranks (%d a domain): "
                                          "%.3f us, beyond its link", hw->id, model_coll_op_name(ops[k]), bytes,
                                          g.ranks, g.ranks_per_domain, ce.time_us);
                    }
        }
    }
}
