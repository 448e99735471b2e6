/* tests/unit/test_estimate_limits.c: specs at the documented limits
 * (estimator/spec/spec.h, EST_MAX_*) are answered correctly or refused, never
 * with a figure that is not physical, and no count overflows on the way.
 *
 * The property test draws random specs whose every size is a power of two
 * up to its limit (each at the limit a quarter of the time) and checks:
 * the spec parses or is refused with SC_EINVAL; its memory and the
 * planner's lower bound are finite or refused; and, where the graph is
 * small enough to build here (synth_size), the estimate either has a
 * finite step above 0 and an MFU in (0, 1], or is refused with SC_ELIMIT or
 * SC_ENUMERIC. make check runs it under UBSan too, where any int overflow
 * on the way aborts it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/synth/estimate.h"
#include "estimator/spec/memory.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"
#include "tests/check.h"
#include "common/banned.h"

/* The most tasks a drawn spec's graph may have to be built here. */
#define PROPERTY_MAX_TASKS 200000
#define PROPERTY_SPECS 400

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    uint64_t x = rng_state; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* A power of two from 1 to limit (a power of two): the limit itself a
 * quarter of the time, else log-uniform. */
static int64_t draw(int64_t limit)
{
    int bits = 0;
    while (((int64_t)1 << (bits + 1)) <= limit)
        bits++;
    if (rng() % 4 == 0)
        return (int64_t)1 << bits;
    return (int64_t)1 << (rng() % (uint64_t)(bits + 1));
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* A random spec's text (static buffer): heads, head size and the
 * parallelism drawn so that most divisibility rules hold. */
static const char *random_spec(void)
{
    static char buf[1024];
    static const char *const gpus[] = {"a100-sxm4-80gb", "h100-sxm", "b200", "v100-sxm2-16gb"};
    static const char *const dtypes[] = {"bf16", "fp16", "fp32"};
    static const char *const recompute[] = {"none", "selective", "full", "auto"};
    int64_t heads = draw(EST_MAX_HEADS), head_dim = draw(256);
    int64_t hidden = min64(heads * head_dim, EST_MAX_HIDDEN);
    int64_t layers = draw(EST_MAX_LAYERS), seq = draw(EST_MAX_SEQ);
    int64_t tp = min64(draw(64), heads), pp = min64(draw(256), layers), dp = draw(4096);
    int64_t mb = draw(64), k = draw(EST_MAX_GLOBAL_BATCH);
    while (mb * dp * k > EST_MAX_GLOBAL_BATCH)
        k > 1 ? (k /= 2) : mb > 1 ? (mb /= 2) : (dp /= 2);
    snprintf(buf, sizeof buf,
             "{\"model\":{\"layers\":%lld,\"hidden\":%lld,\"heads\":%lld,\"head_dim\":%lld,\"ffn\":%lld,"
             "\"seq\":%lld,\"vocab\":%lld},"
             "\"parallel\":{\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"micro_batch\":%lld,\"global_batch\":%lld},"
             "\"cluster\":{\"gpu\":\"%s\"},"
             "\"options\":{\"dtype\":\"%s\",\"recompute\":\"%s\",\"zero_stage\":%d}}",
             (long long)layers, (long long)hidden, (long long)heads, (long long)head_dim,
             (long long)min64(draw(EST_MAX_FFN), EST_MAX_FFN / tp * tp), (long long)seq,
             (long long)draw(EST_MAX_VOCAB), (long long)tp, (long long)pp, (long long)dp, (long long)mb,
             (long long)(mb * dp * k), gpus[rng() % 4], dtypes[rng() % 3], recompute[rng() % 4],
             (int)(rng() % 4));
    return buf;
}

/* Whether the estimate's figures are physical. */
static int physical(const struct est_estimate *e)
{
    return isfinite(e->step_ms) && e->step_ms > 0 && isfinite(e->mfu) && e->mfu > 0 && e->mfu <= 1 &&
           isfinite(e->tokens_per_s) && isfinite(e->hfu) && isfinite(e->memory_gb_per_gpu);
}

TEST(estimate_random_specs_at_the_limits)
{
    int parsed = 0, estimated = 0, refused = 0;
    for (int i = 0; i < PROPERTY_SPECS; i++) {
        const char *text = random_spec();
        const struct hw_profile *hw;
        struct est_spec s;
        struct est_costs c;
        struct est_memory mem;
        struct est_synth_size size;
        struct sc_error err;
        double bound;
        int rc = spec_load(text, strlen(text), &s, &hw, &err);
        if (rc) {
            if (rc != SC_EINVAL)
                sc_check_fail(__FILE__, __LINE__, "%s: status %d (%s)", text, rc, err.msg);
            continue;
        }
        parsed++;
        calib_costs_default(hw, &s, &c);
        if (!(rc = spec_memory_estimate(&s, hw->hbm_gb, &mem, &err))) {
            if (!isfinite(mem.gb_per_gpu) || mem.gb_per_gpu <= 0)
                sc_check_fail(__FILE__, __LINE__, "%s: memory %g GB", text, mem.gb_per_gpu);
            spec_memory_release(&mem);
        }
        rc = synth_bound(&s, hw, &c, &bound, &err);
        if (rc == SC_OK && !(isfinite(bound) && bound >= 0))
            sc_check_fail(__FILE__, __LINE__, "%s: bound %g ms", text, bound);
        if ((rc = synth_size(&s, hw, &c, EST_DETAIL_STAGE, &size, &err))) {
            CHECK(rc == SC_ELIMIT || rc == SC_ENUMERIC || rc == SC_EINVAL);
            continue;
        }
        CHECK(size.tasks > 0 && size.edges > 0 && isfinite(size.bytes));
        if (size.tasks > PROPERTY_MAX_TASKS)
            continue;
        struct est_estimate e;
        rc = synth_estimate(&s, hw, &c, EST_DETAIL_STAGE, &e, &err);
        if (rc == SC_OK) {
            estimated++;
            if (!physical(&e))
                sc_check_fail(__FILE__, __LINE__, "%s: step %g ms, MFU %g", text, e.step_ms, e.mfu);
            synth_estimate_release(&e);
        } else if (rc == SC_ELIMIT || rc == SC_ENUMERIC) {
            refused++;
        } else {
            sc_check_fail(__FILE__, __LINE__, "%s: status %d (%s)", text, rc, err.msg);
        }
    }
    printf("    %d specs drawn: %d parsed, %d estimated, %d refused\n", PROPERTY_SPECS, parsed, estimated,
           refused);
    CHECK(parsed > PROPERTY_SPECS / 4);
    CHECK(estimated > 10);
}

static int estimate_of(const char *text, struct est_estimate *e, struct sc_error *err)
{
    const struct hw_profile *hw;
    struct est_spec s;
    struct est_costs c;
    int rc = spec_load(text, strlen(text), &s, &hw, err);
    if (rc)
        return rc;
    calib_costs_default(hw, &s, &c);
    return synth_estimate(&s, hw, &c, EST_DETAIL_STAGE, e, err);
}

/* The cases: a global batch of 2^31 took minutes and answered MFU
 * 2.57 (dp 1) or 2.1e8 (dp 2); at the limit, 2^24, the one-pipeline step
 * is the same work a micro-batch, so its MFU is the small batch's. */
TEST(estimate_global_batch_at_the_limit_keeps_its_mfu)
{
    static const char fmt[] = "{\"model\":{\"layers\":30,\"hidden\":3072,\"heads\":32,\"seq\":2048},"
                              "\"parallel\":{\"dp\":%d,\"global_batch\":%d},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    char text[512];
    struct est_estimate small, large;
    struct sc_error err;
    for (int dp = 1; dp <= 2; dp++) {
        snprintf(text, sizeof text, fmt, dp, 2048);
        REQUIRE(estimate_of(text, &small, &err) == SC_OK);
        snprintf(text, sizeof text, fmt, dp, EST_MAX_GLOBAL_BATCH);
        REQUIRE(estimate_of(text, &large, &err) == SC_OK);
        CHECK(large.mfu > 0 && large.mfu <= 1);
        CHECK_NEAR(large.mfu, small.mfu, 0.01 * small.mfu);
        CHECK_NEAR(large.step_ms / small.step_ms, EST_MAX_GLOBAL_BATCH / 2048.0, 0.01 * EST_MAX_GLOBAL_BATCH / 2048.0);
        synth_estimate_release(&small);
        synth_estimate_release(&large);
        snprintf(text, sizeof text, fmt, dp, 1 << 30);
        CHECK_EQ_INT(estimate_of(text, &large, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, "parallel.global_batch");
    }
}

/* Every size at its limit: a step of centuries that no replay counts in
 * int64 nanoseconds is refused (it answered MFU 342 with 65,536 layers). */
TEST(estimate_every_size_at_the_limit_is_refused_not_wrong)
{
    char text[512];
    struct est_estimate e;
    struct sc_error err;
    snprintf(text, sizeof text,
             "{\"model\":{\"layers\":%d,\"hidden\":%d,\"heads\":%d,\"seq\":%d,\"ffn\":%d,\"vocab\":%d},"
             "\"parallel\":{\"micro_batch\":%d,\"global_batch\":%d},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}",
             EST_MAX_LAYERS, EST_MAX_HIDDEN, EST_MAX_HEADS, EST_MAX_SEQ, EST_MAX_FFN, EST_MAX_VOCAB,
             EST_MAX_MICRO_BATCH, EST_MAX_GLOBAL_BATCH);
    int rc = estimate_of(text, &e, &err);
    CHECK_EQ_INT(rc, SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "days");
    if (rc == SC_OK)
        synth_estimate_release(&e);
}

/* synth_size: what the graph is, before it is built; the prediction
 * is an upper bound on the graph, and grows with the detail and the
 * micro-batches. */
TEST(estimate_size_is_known_before_the_graph)
{
    static const char fmt[] = "{\"model\":{\"layers\":4,\"hidden\":256,\"heads\":4,\"seq\":256},"
                              "\"parallel\":{\"pp\":2,\"global_batch\":%d},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    char text[512];
    const struct hw_profile *hw;
    struct est_spec s;
    struct est_costs c;
    struct sc_error err;
    struct est_synth_size size[3], more;
    for (int d = EST_DETAIL_STAGE; d <= EST_DETAIL_KERNEL; d++) {
        snprintf(text, sizeof text, fmt, 8);
        REQUIRE(spec_load(text, strlen(text), &s, &hw, &err) == SC_OK);
        calib_costs_default(hw, &s, &c);
        REQUIRE(synth_size(&s, hw, &c, (enum est_detail)d, &size[d], &err) == SC_OK);
        struct est_estimate e;
        REQUIRE(synth_estimate(&s, hw, &c, (enum est_detail)d, &e, &err) == SC_OK);
        CHECK((int64_t)e.tasks <= size[d].tasks);
        CHECK(size[d].bytes == (double)size[d].tasks * EST_SYNTH_BYTES_PER_TASK);
        synth_estimate_release(&e);
    }
    /* ZeRO-3's gathers and reduce-scatters, a unit (layer) at a time */
    for (int d = EST_DETAIL_STAGE; d <= EST_DETAIL_KERNEL; d++) {
        static const char z3[] = "{\"model\":{\"layers\":64,\"hidden\":256,\"heads\":4,\"seq\":256},"
                                 "\"parallel\":{\"dp\":8,\"global_batch\":64},\"cluster\":{\"gpu\":\"h100-sxm\"},"
                                 "\"options\":{\"zero_stage\":3}}";
        struct est_synth_size zs;
        struct est_estimate e;
        REQUIRE(spec_load(z3, strlen(z3), &s, &hw, &err) == SC_OK);
        calib_costs_default(hw, &s, &c);
        REQUIRE(synth_size(&s, hw, &c, (enum est_detail)d, &zs, &err) == SC_OK);
        REQUIRE(synth_estimate(&s, hw, &c, (enum est_detail)d, &e, &err) == SC_OK);
        if ((int64_t)e.tasks > zs.tasks)
            sc_check_fail(__FILE__, __LINE__, "ZeRO-3 at detail %d: %zu tasks, %lld predicted", d, e.tasks,
                          (long long)zs.tasks);
        synth_estimate_release(&e);
    }
    /* the context-parallel ring: its blocks and exchanges, cp of each a
     * layer, cut the runs that stage and layer detail merge (a ring of
     * 65,536 with 2^24 tokens was predicted a few hundred tasks and took
     * 3.6 s and 743 MB) */
    for (int d = EST_DETAIL_STAGE; d <= EST_DETAIL_KERNEL; d++) {
        static const char ring[] = "{\"model\":{\"layers\":4,\"hidden\":512,\"heads\":8,\"seq\":65536},"
                                   "\"parallel\":{\"pp\":2,\"dp\":2,\"cp\":256,\"global_batch\":8},"
                                   "\"cluster\":{\"gpu\":\"h100-sxm\"}}";
        struct est_synth_size zs;
        struct est_estimate e;
        REQUIRE(spec_load(ring, strlen(ring), &s, &hw, &err) == SC_OK);
        calib_costs_default(hw, &s, &c);
        REQUIRE(synth_size(&s, hw, &c, (enum est_detail)d, &zs, &err) == SC_OK);
        REQUIRE(synth_estimate(&s, hw, &c, (enum est_detail)d, &e, &err) == SC_OK);
        if ((int64_t)e.tasks > zs.tasks)
            sc_check_fail(__FILE__, __LINE__, "cp 256 at detail %d: %zu tasks, %lld predicted", d, e.tasks,
                          (long long)zs.tasks);
        synth_estimate_release(&e);
    }
    /* one pipeline rank at stage detail: the step does not grow with its
     * micro-batches, dense or MoE, with tensor and data parallelism */
    static const char *const one_rank[] = {
        "{\"model\":{\"layers\":8,\"hidden\":512,\"heads\":8,\"seq\":512},\"parallel\":{\"dp\":2,"
        "\"global_batch\":8192},\"cluster\":{\"gpu\":\"h100-sxm\"}}",
        "{\"model\":{\"layers\":8,\"hidden\":512,\"heads\":8,\"seq\":512,\"moe\":{\"experts\":8,\"top_k\":2}},"
        "\"parallel\":{\"tp\":2,\"dp\":4,\"ep\":4,\"global_batch\":4096},\"cluster\":{\"gpu\":\"h100-sxm\"},"
        "\"options\":{\"sequence_parallel\":true}}",
    };
    for (size_t k = 0; k < sizeof one_rank / sizeof one_rank[0]; k++) {
        struct est_synth_size zs;
        struct est_estimate e;
        REQUIRE(spec_load(one_rank[k], strlen(one_rank[k]), &s, &hw, &err) == SC_OK);
        calib_costs_default(hw, &s, &c);
        REQUIRE(synth_size(&s, hw, &c, EST_DETAIL_STAGE, &zs, &err) == SC_OK);
        REQUIRE(synth_estimate(&s, hw, &c, EST_DETAIL_STAGE, &e, &err) == SC_OK);
        if ((int64_t)e.tasks > zs.tasks || zs.tasks > 10000)
            sc_check_fail(__FILE__, __LINE__, "spec %zu: %zu tasks, %lld predicted", k, e.tasks, (long long)zs.tasks);
        synth_estimate_release(&e);
    }
    CHECK(size[EST_DETAIL_STAGE].tasks < size[EST_DETAIL_LAYER].tasks);
    CHECK(size[EST_DETAIL_LAYER].tasks < size[EST_DETAIL_KERNEL].tasks);
    snprintf(text, sizeof text, fmt, 64);
    REQUIRE(spec_load(text, strlen(text), &s, &hw, &err) == SC_OK);
    REQUIRE(synth_size(&s, hw, &c, EST_DETAIL_KERNEL, &more, &err) == SC_OK);
    CHECK(more.tasks > 4 * size[EST_DETAIL_KERNEL].tasks);
}
