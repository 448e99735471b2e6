/* tests/golden/test_golden_whatif.c: what-ifs on traced jobs
 * (estimator/whatif/whatif.h): a no-op reproduces the replay on the shared
 * traces, less the host time their profiler took; the real pair trace_diff/control (A100, rank 3 of 8) ->
 * trace_diff/test (V100, rank 1 of 2); on `stepcast synth` traces, each
 * kind of change against `stepcast estimate` of the changed spec, layers
 * adding their measured time, data-parallel changes moving each gradient
 * collective by the collective model's ratio, tensor-parallel changes
 * dividing the sharded GEMMs; contradictions and impossible changes
 * refused with the field named; and the two roads (what-if and estimate)
 * in agreement from the synthesised traces of six specs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/costs/collective_model.h"
#include "estimator/synth/estimate.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/job_config.h"
#include "estimator/spec/spec.h"
#include "estimator/whatif/structure.h"
#include "estimator/synth/synth_compare.h"
#include "estimator/whatif/whatif.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

/* The synthesised job the synth tests share: one stage, four layers,
 * data-parallel over 4 A100s, two micro-batches per step. */
static const char synth_spec[] =
    "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048},\"parallel\":{\"tp\":1,\"pp\":1,\"dp\":4,"
    "\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
static const char synth_config[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8,\"layers\":4,"
                                   "\"hidden\":2048,\"heads\":16,\"seq\":2048}";
static const char synth_config_vocab[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8,"
                                         "\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":50257}";

static struct job_config config(const char *json)
{
    struct job_config c;
    struct sc_error err;
    memset(&c, 0, sizeof c);
    if (spec_job_config_parse(json, strlen(json), &c, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    return c;
}

/* Run the what-if `set` ("k=v,..." or "" for a no-op) of g. */
static int whatif(const struct model_graph *g, const char *cfg_json, const char *set_list, struct whatif_result *r,
                  struct sc_error *err)
{
    struct job_config cfg = config(cfg_json), set;
    spec_job_config_init(&set); /* an empty set: nothing given */
    if (*set_list && spec_job_config_parse_set_list(set_list, &set, err))
        return err->code;
    return whatif_run(g, NULL, &cfg, &set, r, err);
}

/* The traces at path (a file or folder) as a job and its graph. */
static struct model_graph *traced_graph(const char *path, struct model_job **job)
{
    struct sc_error err;
    struct model_load_opts lo;
    struct model_graph *g = NULL;
    model_load_opts_default(&lo);
    *job = NULL;
    if (model_job_load(&path, 1, &lo, 0, job, &err) || model_graph_build(*job, NULL, &g, &err))
        sc_check_fail(__FILE__, __LINE__, "%s: %s", path, err.msg);
    return g;
}

/* The traces `stepcast synth` writes for spec (at kernel detail), as a job
 * and its graph. */
static struct model_graph *synth_graph(const char *spec, const char *name, struct model_job **job)
{
    char dir[512];
    const char *spec_path = th_write_file(name, spec, strlen(spec));
    snprintf(dir, sizeof dir, "%s/%s-out", th_tmpdir(), name);
    char *argv[] = {(char *)th_build_path("stepcast"), "synth", "--spec", (char *)spec_path, "--out", dir,
                    "--detail", "kernel", NULL};
    free(th_run_expect(argv, 0, NULL, NULL));
    return traced_graph(dir, job);
}

/* `stepcast estimate` of a spec's text (kernel detail), ms: with the
 * estimator's defaults (`stack`), or with the kernel-level costs a what-if
 * re-times a trace's kernels by (calib_costs_base on every GPU: the traced
 * job's own stack stays in its measured times; the H100's defaults fitted
 * on NeMo's runs at scale are a stack's, not a kernel's). */
static double estimate_with(const char *text, int stack, double *host_ms)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    struct sc_error err;
    if (spec_load(text, strlen(text), &s, &hw, &err))
        sc_check_fail(__FILE__, __LINE__, "%s: %s", text, err.msg);
    (stack ? calib_costs_default : calib_costs_base)(hw, &s, &c);
    if (synth_estimate(&s, hw, &c, EST_DETAIL_KERNEL, &e, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    double ms = e.step_ms;
    if (host_ms)
        *host_ms = (double)e.breakdown.host / 1e6;
    synth_estimate_release(&e);
    return ms;
}

/* `stepcast estimate` of spec `base` with one field of one section
 * changed (kernel detail), ms. */
static double estimate_changed(const char *base, const char *section, const char *key, const char *value)
{
    char text[1024], pat[64];
    snprintf(text, sizeof text, "%s", base);
    if (key) {
        /* put "key":value first in its section; a later duplicate is not
         * allowed, so replace the old member where it is */
        char *sec = strstr(text, section), *old;
        snprintf(pat, sizeof pat, "\"%s\":", key);
        REQUIRE(sec != NULL);
        old = strstr(sec, pat);
        if (old && old < strchr(sec, '}')) {
            char rest[1024];
            size_t n = strcspn(old + strlen(pat), ",}");
            snprintf(rest, sizeof rest, "%s", old + strlen(pat) + n);
            snprintf(old, (size_t)(text + sizeof text - old), "\"%s\":%s%s", key, value, rest);
        } else {
            char rest[1024];
            char *brace = strchr(sec, '{');
            snprintf(rest, sizeof rest, "%s", brace + 1);
            snprintf(brace + 1, (size_t)(text + sizeof text - brace - 1), "\"%s\":%s,%s", key, value, rest);
        }
    }
    return estimate_with(text, 0, NULL);
}

TEST(whatif_noop_reproduces_the_replay_on_the_shared_traces)
{
    static const char *const names[] = {"nccl_data", "negative_queue", "control", "test", "ns_resolution", "dlrm"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        struct model_job *job;
        struct model_graph *g;
        struct model_replay_opts o;
        struct model_replay *base;
        struct whatif_result r;
        struct sc_error err;
        char cfg[96];
        if (th_load_trace(th_find_trace(names[k]), &job))
            continue;
        REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
        int64_t world = job->ranks[0]->world_size > 0 ? job->ranks[0]->world_size : 1;
        snprintf(cfg, sizeof cfg, "{\"tp\":1,\"pp\":1,\"dp\":%lld}", (long long)world);
        model_replay_opts_default(&o);
        REQUIRE(model_replay_run(g, &o, &base, &err) == SC_OK);
        int rc = whatif(g, cfg, "", &r, &err);
        if (rc)
            sc_check_fail(__FILE__, __LINE__, "%s: %s", names[k], err.msg);
        CHECK_EQ_INT(rc, SC_OK);
        if (!rc) {
            /* the steps together: the replay's, less at most the host time
             * the profiler took (whatif.h, 0; a step whose host work ends
             * sooner can start sooner, so a step alone may grow); the
             * copy's host gaps short by exactly that, its durations the
             * source's; the source graph untouched */
            double gaps[2] = {0, 0}, durs[2] = {0, 0}, xs = 0, bs = 0;
            double cut = r.profiler_ms * 1e6 * (double)(g->n_steps ? g->n_steps : 1);
            CHECK_EQ_INT(r.replay->n_steps, base->n_steps);
            for (size_t s = 0; s < base->n_steps && s < r.replay->n_steps; s++) {
                bs += (double)base->steps[s].replayed_ns;
                xs += (double)r.replay->steps[s].replayed_ns;
            }
            if (!(xs <= bs * 1.005 && xs >= bs - cut - 0.005 * bs))
                sc_check_fail(__FILE__, __LINE__, "%s: no-op steps %.3f ms, replay %.3f, the profiler's %.3f",
                              names[k], xs / 1e6, bs / 1e6, cut / 1e6);
            CHECK(r.graph != g && r.graph->n_tasks == g->n_tasks);
            for (uint32_t i = 0; i < g->n_tasks && r.graph->n_tasks == g->n_tasks; i++) {
                gaps[0] += (double)g->tasks[i].gap;
                gaps[1] += (double)r.graph->tasks[i].gap;
                durs[0] += (double)g->tasks[i].dur;
                durs[1] += (double)r.graph->tasks[i].dur;
            }
            CHECK_NEAR(gaps[1], gaps[0] - cut, (double)g->n_tasks);
            CHECK_NEAR(durs[1], durs[0], (double)g->n_tasks);
            printf("     %s: %.3f ms a step of host time the profiler took\n", names[k], r.profiler_ms);
            if (r.profiler_ms > 0) { /* with it kept, as the trace ran: the replay's step */
                double replayed;
                REQUIRE(whatif_base_step(g, &replayed, &err) == SC_OK);
                CHECK_NEAR(r.profiled_step_ms, replayed, 0.005 * replayed);
            } else {
                CHECK_EQ_INT(r.profiled_step_ms, 0);
            }
            CHECK_NEAR(r.from_measured_ms, r.step_ms, 0.005 * r.step_ms);
            whatif_release(&r);
        }
        struct model_replay *again;
        REQUIRE(model_replay_run(g, &o, &again, &err) == SC_OK);
        for (size_t s = 0; s < base->n_steps; s++)
            CHECK_EQ_INT(again->steps[s].replayed_ns, base->steps[s].replayed_ns);
        model_replay_free(again);
        model_replay_free(base);
        model_graph_free(g);
        model_job_free(job);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

TEST(whatif_control_to_test_within_twenty_percent_of_its_median_step)
{
    struct model_job *control, *test;
    struct model_graph *g;
    struct whatif_result r;
    struct sc_error err;
    if (th_load_trace(th_find_trace("control"), &control))
        return;
    if (th_load_trace(th_find_trace("test"), &test)) {
        model_job_free(control);
        return;
    }
    /* test's median measured step (its steps are noisy) */
    const struct model_trace *t = test->ranks[0];
    double steps[64];
    size_t n = 0;
    for (size_t s = 0; s < t->n_steps && n < 64; s++)
        if (!t->steps[s].partial)
            steps[n++] = (double)(t->steps[s].end - t->steps[s].start) / 1e6;
    REQUIRE(n > 0);
    qsort(steps, n, sizeof *steps, cmp_double);
    double median = n % 2 ? steps[n / 2] : 0.5 * (steps[n / 2 - 1] + steps[n / 2]);

    REQUIRE(model_graph_build(control, NULL, &g, &err) == SC_OK);
    REQUIRE(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":8}", "dp=2,gpu=v100-sxm2-16gb", &r, &err) == SC_OK);
    /* test's steps were measured under the profiler: the prediction set
     * beside them keeps the profiler's cost (the unprofiled one printed) */
    REQUIRE(r.profiler_ms > 0);
    double error = (r.profiled_step_ms - median) / median * 100;
    printf("  control (a100, dp 8) -> test (v100, dp 2): predicted %.3f ms profiled (%.3f without the profiler), "
           "test's median %.3f ms, error %+.1f%%\n",
           r.profiled_step_ms, r.step_ms, median, error);
    CHECK(fabs(error) <= 20);
    CHECK(r.profiled_step_ms > r.step_ms);
    /* the traced GPU came from the trace; the kernels were re-timed by the
     * kernel model and the collectives' sizes were unknown */
    CHECK_STREQ(r.base.gpu, "a100-sxm4-40gb");
    CHECK(r.models[WHATIF_KERNEL_MODEL].tasks > 0 && r.sizes_unknown);
    CHECK(r.from_models_ms > 0 && r.from_measured_ms > 0);
    CHECK_NEAR(r.from_models_ms + r.from_measured_ms, r.step_ms, 1e-6 * r.step_ms + 1e-9);
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(control);
    model_job_free(test);
}

/* A what-if: its set, the field of the spec it changes and, when not 0,
 * how far from the estimate it may be (a fraction; else the defaults of
 * whatifs_agree_with_estimates). */
struct change {
    const char *set, *section, *key, *value;
    double tolerance;
};

/* The what-ifs of spec's synthesised trace (described by desc) against
 * `stepcast estimate` of each changed spec. */
static void whatifs_agree_with_estimates(const char *spec, const char *desc, const char *name,
                                         const struct change *cases, size_t n)
{
    struct model_job *job;
    struct model_graph *g = synth_graph(spec, name, &job);
    for (size_t k = 0; k < n; k++) {
        struct whatif_result r;
        struct sc_error err;
        double est = estimate_changed(spec, cases[k].section, cases[k].key, cases[k].value);
        if (whatif(g, desc, cases[k].set, &r, &err)) {
            sc_check_fail(__FILE__, __LINE__, "%s: %s", cases[k].set, err.msg);
            continue;
        }
        printf("  %-18s whatif %8.3f ms  estimate %8.3f ms  %+.2f%%\n", *cases[k].set ? cases[k].set : "no-op",
               r.step_ms, est, (r.step_ms - est) / est * 100);
        /* a change of layers keeps the traced job's gradient buckets, each
         * resized, where the estimate of the changed spec has as many
         * buckets as its parameters fill: the last one's exposed time (bf16's
         * gradients reduced in fp32) is a fresh estimate's to 4%; every
         * kernel re-timed by the model on another GPU, each GPU with its own
         * defaults (the H100 its measured GEMM ceilings): 1% */
        double tol = cases[k].tolerance > 0              ? cases[k].tolerance
                     : !strncmp(cases[k].set, "gpu=", 4)    ? 0.01
                     : !strncmp(cases[k].set, "layers=", 7) ? 0.04
                                                            : 0.03;
        CHECK_NEAR(r.step_ms, est, tol * est);
        /* the split averages the steps the step time does */
        CHECK_NEAR(r.from_measured_ms + r.from_models_ms, r.step_ms, 1e-6 * r.step_ms);
        whatif_release(&r);
    }
    model_graph_free(g);
    model_job_free(job);
}

/* The collectives of each role the structure finds in spec's synthesised
 * trace, described by desc. */
static void roles_of(const char *spec, const char *desc, const char *name, size_t by_role[STRUCT_ROLE_COUNT])
{
    struct model_job *job;
    struct model_graph *g = synth_graph(spec, name, &job);
    struct whatif_result r;
    struct sc_error err;
    memset(by_role, 0, STRUCT_ROLE_COUNT * sizeof *by_role);
    if (whatif(g, desc, "", &r, &err) == SC_OK) {
        memcpy(by_role, r.structure.by_role, STRUCT_ROLE_COUNT * sizeof *by_role);
        whatif_release(&r);
    } else {
        sc_check_fail(__FILE__, __LINE__, "%s: %s", name, err.msg);
    }
    model_graph_free(g);
    model_job_free(job);
}

TEST(whatif_on_synth_traces_agrees_with_the_estimate_of_the_changed_spec)
{
    static const struct change cases[] = {
        {"", "model", NULL, NULL},
        {"layers=8", "model", "layers", "8"},
        {"layers=2", "model", "layers", "2"},
        /* the global batch kept (without it a set keeps each rank's batch) */
        {"dp=8,global_batch=8", "parallel", "dp", "8"},
        {"dp=2,global_batch=8", "parallel", "dp", "2"},
        {"global_batch=16", "parallel", "global_batch", "16"},
        {"micro_batch=2", "parallel", "micro_batch", "2"},
        {"tp=2", "parallel", "tp", "2"},
        {"seq=4096", "model", "seq", "4096"},
        {"ffn=16384", "model", "ffn", "16384"},
        {"hidden=3072", "model", "hidden", "3072"},
        {"gpu=h100-sxm", "cluster", "gpu", "\"h100-sxm\""},
        {"vocab=100000", "model", "vocab", "100000"},
    };
    /* the spec's default vocabulary, given so that it may change */
    whatifs_agree_with_estimates(synth_spec, synth_config_vocab, "whatif-synth", cases, sizeof cases / sizeof cases[0]);
}

/* A traced job with latent attention (DeepSeek's, model.mla), described
 * as such: what-ifs that keep its layers' shapes agree with the estimate
 * of the changed spec; those that would re-time its latent projections
 * as plain attention's (tp, hidden, heads, the latent widths) are refused,
 * naming the field. */
TEST(whatif_of_a_latent_attention_job)
{
    static const char spec[] =
        "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"ffn\":5632,\"mlp\":\"swiglu\","
        "\"mla\":{\"kv_lora_rank\":512,\"q_lora_rank\":1024}},\"parallel\":{\"tp\":1,\"pp\":1,\"dp\":4,"
        "\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    static const char desc[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8,\"layers\":4,"
                               "\"hidden\":2048,\"heads\":16,\"seq\":2048,\"ffn\":5632,\"mlp\":\"swiglu\","
                               "\"vocab\":50257,\"mla\":{\"kv_lora_rank\":512,\"q_lora_rank\":1024}}";
    static const struct change cases[] = {
        {"", "model", NULL, NULL},
        {"layers=8", "model", "layers", "8"},
        {"dp=8,global_batch=8", "parallel", "dp", "8"},
        {"micro_batch=2", "parallel", "micro_batch", "2"},
        {"seq=4096", "model", "seq", "4096"},
        {"gpu=h100-sxm", "cluster", "gpu", "\"h100-sxm\""},
    };
    whatifs_agree_with_estimates(spec, desc, "whatif-latent", cases, sizeof cases / sizeof cases[0]);

    static const char *const refused[] = {"tp=2", "hidden=3072", "heads=32", "mla.kv_lora_rank=256"};
    struct model_job *job;
    struct model_graph *g = synth_graph(spec, "whatif-latent-refused", &job);
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        struct whatif_result r;
        struct sc_error err;
        char want[96];
        snprintf(want, sizeof want, "set.%.*s: the what-if does not change a traced latent-attention job's",
                 (int)strcspn(refused[k], ".="), refused[k]);
        CHECK_EQ_INT(whatif(g, desc, refused[k], &r, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, want);
    }
    model_graph_free(g);
    model_job_free(job);
}

/* A traced MoE job, its experts split over ep ranks: what-ifs of its
 * shapes and of ep agree with the estimate of the changed spec. The token exchange
 * is classed ep and sized by the tokens, the experts' gradients (reduced
 * over the expert-data-parallel group) edp and sized by the experts each
 * GPU holds, the dense ones' by the dense weights, and a layer's GEMMs are
 * priced with its experts' grouped GEMMs: before, hidden 3072 came out
 * 8.4% below the estimate, ffn 4096 9.6% and vocab 200000 6.1% above.
 * A change of tokens (seq, micro_batch) is now 4-5% above (0.3-0.5%
 * before, where the GEMMs priced as a dense MLP's made up for it), ep 4
 * 3.5%: the experts' gradient accumulation, a kernel each micro-batch on
 * the weights (6% of this step), is found by the autograd engine's
 * AccumulateGrad records, which a synthesised trace does not write, so
 * here it keeps the tokens' scale (the test below checks the real
 * records). The GPU change, 2% below, is left out: the grouped GEMMs'
 * shapes are not recorded, and the ratio of a square GEMM re-times them. */
TEST(whatif_of_an_moe_job_agrees_with_the_estimate)
{
    static const char spec[] =
        "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"moe\":{\"experts\":8,\"top_k\":2}},"
        "\"parallel\":{\"tp\":1,\"pp\":1,\"dp\":4,\"ep\":2,\"micro_batch\":1},"
        "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    static const char desc[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"ep\":2,\"micro_batch\":1,"
                               "\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":50257,"
                               "\"moe\":{\"experts\":8,\"top_k\":2}}";
    static const struct change cases[] = {
        {"", "model", NULL, NULL, 0},
        {"layers=8", "model", "layers", "8", 0},
        {"micro_batch=2", "parallel", "micro_batch", "2", 0.06},
        {"seq=4096", "model", "seq", "4096", 0.06},
        {"hidden=3072", "model", "hidden", "3072", 0},
        {"ffn=4096", "model", "ffn", "4096", 0},
        {"vocab=200000", "model", "vocab", "200000", 0},
        {"dp=8", "parallel", "dp", "8", 0},
        {"ep=4", "parallel", "ep", "4", 0.05},
        {"ep=1", "parallel", "ep", "1", 0},
    };
    whatifs_agree_with_estimates(spec, desc, "whatif-moe", cases, sizeof cases / sizeof cases[0]);
    size_t roles[STRUCT_ROLE_COUNT];
    roles_of(spec, desc, "whatif-moe-roles", roles); /* the exchange and the experts' gradients */
    CHECK(roles[STRUCT_ROLE_EP] > 0 && roles[STRUCT_ROLE_EDP] > 0);
    CHECK(roles[STRUCT_ROLE_DP] > 0 && roles[STRUCT_ROLE_OTHER] == 0);

    /* expert parallelism the job cannot run is refused, naming it */
    struct model_job *job;
    struct model_graph *g = synth_graph(spec, "whatif-moe-refused", &job);
    struct whatif_result r;
    struct sc_error err;
    static const char *const refused[][2] = {
        {"ep=3", "set.ep: 3 does not divide moe.experts 8"},
        {"ep=8", "set: ep x etp = 8 does not divide tp x cp x dp = 4"},
        {"dp=1", "set: ep x etp = 2 does not divide tp x cp x dp = 1"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        CHECK_EQ_INT(whatif(g, desc, refused[k][0], &r, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, refused[k][1]);
    }
    model_graph_free(g);
    model_job_free(job);
}

/* An MoE job whose experts are not split by tensor parallelism (tp 2,
 * etp 1, ep 1, dp 2): its experts' gradients reduce over tp x dp ranks,
 * classed edp even without expert parallelism, sized by the experts each
 * GPU holds. Before, kept at their traced size as "other" collectives
 * and the layer's GEMMs priced as a dense MLP's split by tp, hidden 3072
 * was 28% below the estimate, ffn 4096 50% above, vocab 200000 34%
 * above. */
TEST(whatif_of_an_moe_job_whose_experts_skip_tensor_parallelism)
{
    static const char spec[] =
        "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"moe\":{\"experts\":8,\"top_k\":2}},"
        "\"parallel\":{\"tp\":2,\"pp\":1,\"dp\":2,\"etp\":1,\"micro_batch\":1},"
        "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},\"options\":{\"sequence_parallel\":true}}";
    static const char desc[] = "{\"tp\":2,\"pp\":1,\"dp\":2,\"etp\":1,\"micro_batch\":1,\"layers\":4,\"hidden\":2048,"
                               "\"heads\":16,\"seq\":2048,\"vocab\":50257,\"sequence_parallel\":true,"
                               "\"moe\":{\"experts\":8,\"top_k\":2}}";
    static const struct change cases[] = {
        {"", "model", NULL, NULL, 0},
        {"layers=8", "model", "layers", "8", 0},
        {"hidden=3072", "model", "hidden", "3072", 0},
        {"ffn=4096", "model", "ffn", "4096", 0},
        {"vocab=200000", "model", "vocab", "200000", 0},
        {"dp=4", "parallel", "dp", "4", 0},
    };
    whatifs_agree_with_estimates(spec, desc, "whatif-moe-etp", cases, sizeof cases / sizeof cases[0]);
    size_t roles[STRUCT_ROLE_COUNT];
    roles_of(spec, desc, "whatif-moe-etp-roles", roles);
    CHECK(roles[STRUCT_ROLE_EDP] > 0 && roles[STRUCT_ROLE_EP] == 0);
    CHECK(roles[STRUCT_ROLE_TP] > 0 && roles[STRUCT_ROLE_OTHER] == 0);
}

/* The kernels an eager step launches while the autograd engine
 * accumulates gradients (AccumulateGrad: .grad +=, DDP's copy into its
 * bucket) work on the weights: twice the micro-batch leaves them as they
 * were, where the step's other kernels take twice the tokens. On the
 * control trace they are a tenth of the GPU's time. */
TEST(whatif_keeps_the_gradient_accumulation_of_a_traced_step)
{
    struct model_job *job;
    struct model_graph *g;
    struct whatif_result r;
    struct sc_error err;
    if (th_load_trace(th_find_trace("control"), &job))
        return;
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":8,\"micro_batch\":1}", "micro_batch=2", &r, &err) == SC_OK);
    double kept0 = 0, kept1 = 0, other0 = 0, other1 = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        if (t->cls != MODEL_TASK_KERNEL || t->sub != MODEL_KF_ELEMENTWISE)
            continue;
        double *was = r.structure.param_work[i] ? &kept0 : &other0, *is = r.structure.param_work[i] ? &kept1 : &other1;
        *was += (double)t->dur;
        *is += (double)r.graph->tasks[i].dur;
    }
    printf("  elementwise kernels accumulating gradients: %.3f -> %.3f ms; the others %.3f -> %.3f ms\n",
           kept0 / 1e6, kept1 / 1e6, other0 / 1e6, other1 / 1e6);
    CHECK(r.structure.param_work_tasks > 500);
    CHECK(kept0 > 0.05 * (kept0 + other0));
    CHECK_NEAR(kept1, kept0, 1e-9 * kept0);
    CHECK_NEAR(other1, 2 * other0, 0.01 * other0);
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(job);
}

/* What the what-if does not change yet is refused, naming the field, not
 * answered as if the set had not asked for it. */
TEST(whatif_refuses_what_it_does_not_change)
{
    static const char *const sets[][2] = {
        {"moe.dense_layers=1", "set.moe: the what-if does not change a traced job's moe yet"},
        {"moe.every=2", "set.moe: "},
        {"recompute=full", "set.recompute: "},
        {"framework=pytorch", "set.framework: "},
        {"ep=2", "set.ep: the job description gives no moe"},
    };
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-refused", &job);
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        struct whatif_result r;
        struct sc_error err;
        CHECK_EQ_INT(whatif(g, synth_config_vocab, sets[k][0], &r, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, sets[k][1]);
    }
    model_graph_free(g);
    model_job_free(job);
}

/* Heads wider than hidden / heads (Qwen3's 64 of 128 on 5,120): the
 * description's head_dim sizes the QKV and output projections, attention
 * and the key/value width as the spec's does, so the what-if agrees with
 * the estimate of the changed spec (priced on heads of hidden / heads,
 * hidden=3072 came out 10% above it). */
TEST(whatif_of_a_job_with_wide_heads_agrees_with_the_estimate)
{
    static const char spec[] =
        "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"kv_heads\":4,\"head_dim\":256,\"seq\":2048,"
        "\"mlp\":\"swiglu\"},\"parallel\":{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8},"
        "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    static const char desc[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"micro_batch\":1,\"global_batch\":8,\"layers\":4,"
                               "\"hidden\":2048,\"heads\":16,\"kv_heads\":4,\"head_dim\":256,\"seq\":2048,"
                               "\"mlp\":\"swiglu\",\"vocab\":50257}";
    static const struct change cases[] = {
        {"tp=2", "parallel", "tp", "2"},
        {"seq=4096", "model", "seq", "4096"},
        {"kv_heads=8", "model", "kv_heads", "8"},
        {"hidden=3072", "model", "hidden", "3072"},
    };
    whatifs_agree_with_estimates(spec, desc, "whatif-wide-heads", cases, sizeof cases / sizeof cases[0]);
}

/* Total duration of g's tasks that pick() selects, ns. */
static double total(const struct model_graph *g, int (*pick)(const struct model_task *))
{
    double sum = 0;
    for (size_t i = 0; i < g->n_tasks; i++)
        if (pick(&g->tasks[i]))
            sum += (double)g->tasks[i].dur;
    return sum;
}

/* The time of g's kernels named with `what`, ns. */
static double named(const struct model_graph *g, const char *what)
{
    double sum = 0;
    for (size_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].cls == MODEL_TASK_KERNEL && strstr(model_graph_str(g, g->src[i].name), what))
            sum += (double)g->tasks[i].dur;
    return sum;
}

static int is_optimizer(const struct model_task *t)
{
    return t->cls == MODEL_TASK_KERNEL && t->sub == MODEL_KF_OPTIMIZER;
}

TEST(whatif_compare_synth_on_a_synth_trace_matches_family_by_family)
{
    /* a synth trace is what the estimate synthesises: every family's time
     * and kernel count agree; a description without the model's
     * dimensions cannot be synthesised */
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-compare", &job);
    struct synth_compare c;
    struct sc_error err;
    struct job_config cfg = config(synth_config), bare = config("{\"tp\":1,\"pp\":1,\"dp\":4}");
    const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-80gb");
    REQUIRE(synth_compare(g, &cfg, hw, &c, &err) == SC_OK);
    size_t families = 0;
    for (int f = 0; f < MODEL_KF_COUNT; f++) {
        CHECK_NEAR(c.traced_ms[f], c.synth_ms[f], 0.01 * c.synth_ms[f] + 1e-6);
        CHECK_NEAR(c.traced_kernels[f], c.synth_kernels[f], 1e-9);
        families += c.synth_kernels[f] > 0;
    }
    CHECK(families >= 5 && c.synth_ms[MODEL_KF_GEMM] > 0);
    CHECK_EQ_INT(synth_compare(g, &bare, hw, &c, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "hidden");
    model_graph_free(g);
    model_job_free(job);
}

TEST(whatif_doubling_the_layers_adds_their_measured_time)
{
    /* compute-bound: one GPU, no data-parallel collectives */
    static const char spec[] = "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048},\"parallel\":"
                               "{\"micro_batch\":1,\"global_batch\":2},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    static const char cfg[] = "{\"tp\":1,\"pp\":1,\"dp\":1,\"micro_batch\":1,\"global_batch\":2,\"layers\":4,"
                              "\"hidden\":2048,\"heads\":16,\"seq\":2048}";
    struct model_job *job;
    struct model_graph *g = synth_graph(spec, "whatif-layers", &job);
    struct job_structure st;
    struct whatif_result base, twice;
    struct sc_error err;
    struct job_config c = config(cfg);
    REQUIRE(whatif_job_structure_recover(g, NULL, &c, &st, &err) == SC_OK);
    CHECK_EQ_INT(st.layer_source, STRUCT_LAYERS_MODULES);
    CHECK_EQ_INT(st.layers_per_rank, 4);
    /* the measured per-step time of the layers' GPU work */
    double layer_ns = 0;
    for (size_t i = 0; i < g->n_tasks; i++)
        if (st.layer[i] >= 0 && model_task_on_gpu(g->tasks[i].cls))
            layer_ns += (double)g->tasks[i].dur;
    REQUIRE(whatif(g, cfg, "", &base, &err) == SC_OK);
    REQUIRE(whatif(g, cfg, "layers=8", &twice, &err) == SC_OK);
    /* the optimizer and the gradient norm grow with the parameters too:
     * what the graphs hold */
    double optimizer_ms = (total(twice.graph, is_optimizer) - total(base.graph, is_optimizer) +
                           named(twice.graph, "gradient norm") - named(base.graph, "gradient norm")) /
                          1e6;
    double added = twice.step_ms - base.step_ms - optimizer_ms;
    printf("  layers 4 -> 8: step %.3f -> %.3f ms, %.3f ms added by the layers, measured layer time %.3f ms\n",
           base.step_ms, twice.step_ms, added, layer_ns / 1e6);
    CHECK_NEAR(added, layer_ns / 1e6, 0.02 * layer_ns / 1e6);
    whatif_release(&base);
    whatif_release(&twice);
    whatif_job_structure_release(&st);
    model_graph_free(g);
    model_job_free(job);
}

/* The mean replayed step of a job's complete steps, ms. */
static double mean_replay_ms(const struct model_graph *g)
{
    struct sc_error err;
    double ms;
    if (whatif_base_step(g, &ms, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    return ms;
}

TEST(whatif_layers_on_a_gentrace_job_with_module_annotations)
{
    /* gentrace --modules annotates each forward layer as PyTorch's
     * with_modules does; the backward has no annotation and is found by
     * its repeats. 8 -> 16 layers against the job gentrace writes with 16
     * (its gradient buckets grow with the layers, as the parameters do) */
    const char *args8[] = {"--layers", "8", "--modules", "--seed", "3", NULL};
    const char *args16[] = {"--layers", "16", "--modules", "--seed", "3", NULL};
    struct model_job *j8 = th_gentrace_job(2, args8), *j16 = th_gentrace_job(2, args16);
    struct model_graph *g8, *g16;
    struct whatif_result r;
    struct sc_error err;
    REQUIRE(j8 && j16);
    REQUIRE(model_graph_build(j8, NULL, &g8, &err) == SC_OK && model_graph_build(j16, NULL, &g16, &err) == SC_OK);
    static const char cfg[] = "{\"tp\":1,\"pp\":1,\"dp\":2,\"layers\":8}";
    REQUIRE(whatif(g8, cfg, "layers=16", &r, &err) == SC_OK);
    CHECK_EQ_INT(r.structure.layer_source, STRUCT_LAYERS_MODULES);
    CHECK_EQ_INT(r.structure.layers_per_rank, 8);
    /* forward (2 kernels) and backward (3 kernels) of every layer */
    size_t kernels = 0, steps = g8->n_steps;
    for (size_t i = 0; i < g8->n_tasks; i++)
        kernels += g8->tasks[i].cls == MODEL_TASK_KERNEL && r.structure.layer[i] >= 0;
    CHECK_EQ_INT(kernels, steps * 8 * 5);
    double want = mean_replay_ms(g16);
    printf("  gentrace layers 8 -> 16: what-if %.3f ms, the 16-layer job replayed %.3f ms (%+.2f%%)\n", r.step_ms,
           want, (r.step_ms - want) / want * 100);
    CHECK_NEAR(r.step_ms, want, 0.03 * want);
    whatif_release(&r);
    model_graph_free(g8);
    model_graph_free(g16);
    model_job_free(j8);
    model_job_free(j16);
}

TEST(whatif_data_parallel_change_moves_gradient_collectives_by_the_model_ratio)
{
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-dp", &job);
    struct whatif_result r;
    struct sc_error err;
    REQUIRE(whatif(g, synth_config, "dp=8,global_batch=16", &r, &err) == SC_OK);
    const struct job_structure *st = &r.structure;
    /* same micro-batches per step (16 / 8 = 8 / 4): only the collectives
     * change; tasks keep their order on each resource in the copy */
    const struct hw_profile *hw = cost_hw_profile_find("a100-sxm4-80gb");
    struct coll_params p;
    cost_coll_params_from_hw(hw, &p);
    size_t checked = 0;
    for (uint32_t k = 0; k < g->n_res; k++) {
        uint32_t a = g->res[k].first, b = r.graph->res[k].first;
        for (; a != MODEL_NONE && b != MODEL_NONE; a = g->next[a], b = r.graph->next[b]) {
            if (g->tasks[a].cls != MODEL_TASK_COMM || st->role[a] != STRUCT_ROLE_DP || st->coll_bytes[a] <= 0 ||
                g->tasks[a].dur == 0)
                continue;
            struct coll_estimate e4, e8;
            struct coll_group g4 = {4, 4}, g8 = {8, 8};
            REQUIRE(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g4, (double)st->coll_bytes[a], &e4, &err) == SC_OK);
            REQUIRE(cost_coll_estimate(&p, MODEL_COLL_ALLREDUCE, &g8, (double)st->coll_bytes[a], &e8, &err) == SC_OK);
            CHECK_NEAR((double)r.graph->tasks[b].dur / (double)g->tasks[a].dur, e8.time_us / e4.time_us, 0.01);
            checked++;
        }
    }
    CHECK(checked >= 4);
    /* where the parts came from: the kernels kept, the collectives
     * re-priced by the collective model, the host work as traced */
    CHECK(r.modelled_share_compute == 0);
    CHECK(r.modelled_share_comm > 0 && r.modelled_share_comm <= 1);
    CHECK(r.modelled_share_overlap > 0 && r.modelled_share_overlap < r.modelled_share_comm);
    CHECK(r.modelled_share_host == 0);
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(job);
}

/* Another GPU re-prices the kernels by the kernel model; a pipeline change
 * rebuilds the schedule, whose collectives and host dispatches are the
 * models' (whatif.h modelled_share_*). */
TEST(whatif_parts_say_what_a_model_priced)
{
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-sources", &job);
    struct whatif_result r;
    struct sc_error err;
    REQUIRE(whatif(g, synth_config, "gpu=h100-sxm", &r, &err) == SC_OK);
    printf("  gpu: compute %.3f comm %.3f host %.3f\n", r.modelled_share_compute, r.modelled_share_comm,
           r.modelled_share_host);
    CHECK(r.modelled_share_compute > 0.5 && r.modelled_share_compute <= 1);
    CHECK(r.modelled_share_host == 0);
    whatif_release(&r);
    REQUIRE(whatif(g, synth_config, "", &r, &err) == SC_OK);
    CHECK(r.modelled_share_compute == 0 && r.modelled_share_host == 0); /* a no-op keeps the kernels */
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(job);
}

TEST(whatif_tensor_parallel_change_divides_the_sharded_gemms)
{
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-tp", &job);
    struct whatif_result r;
    struct sc_error err;
    REQUIRE(whatif(g, synth_config, "tp=2", &r, &err) == SC_OK);
    const struct job_structure *st = &r.structure;
    /* the layers' GEMMs: FLOPs halved, so their time about halves (the
     * kernel model's tiles and waves say by how much exactly); tensor-
     * parallel all-reduces inserted after each layer pass */
    double before = 0, after = 0;
    size_t inserted = 0;
    for (uint32_t k = 0; k < g->n_res; k++) {
        uint32_t a = g->res[k].first, b = r.graph->res[k].first;
        for (; a != MODEL_NONE && b != MODEL_NONE; a = g->next[a], b = r.graph->next[b]) {
            while (b != MODEL_NONE && r.graph->tasks[b].cls == MODEL_TASK_COMM && g->tasks[a].cls != MODEL_TASK_COMM) {
                inserted++;
                b = r.graph->next[b];
            }
            if (b == MODEL_NONE)
                break;
            if (st->layer[a] >= 0 && g->tasks[a].cls == MODEL_TASK_KERNEL && g->tasks[a].sub == MODEL_KF_GEMM) {
                before += (double)g->tasks[a].dur;
                after += (double)r.graph->tasks[b].dur;
            }
        }
    }
    printf("  tp 1 -> 2: the layers' GEMMs %.3f -> %.3f ms (x%.3f), %zu all-reduces inserted\n", before / 1e6,
           after / 1e6, after / before, inserted);
    CHECK(before > 0);
    CHECK_NEAR(after / before, 0.5, 0.05);
    CHECK(inserted >= 2 * 4 * 2); /* a forward and a backward per layer and micro-batch */
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(job);
}

TEST(whatif_refuses_contradictions_and_what_it_cannot_do)
{
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-bad", &job);
    struct whatif_result r;
    struct sc_error err;
    /* the trace's world size is 4 */
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":8}", "", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "world size");
    CHECK_CONTAINS(err.msg, "8");
    /* its all-reduces span 4 ranks: a tp=4 group has them too */
    CHECK_EQ_INT(whatif(g, "{\"tp\":4,\"pp\":1,\"dp\":1,\"layers\":4}", "", &r, &err), SC_OK);
    whatif_release(&r);
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":6}", "", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "layers");
    CHECK_CONTAINS(err.msg, "module annotations");
    /* one stage holds every layer: one more is a contradiction too */
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":5}", "", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "layers: the job description gives 5 layers");
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":4}", "layers=8", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.layers");
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":4}", "hidden=4096", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.hidden");
    CHECK_EQ_INT(whatif(g, synth_config, "vocab=100000", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.vocab");
    CHECK_EQ_INT(whatif(g, synth_config, "gpu=a100-nonesuch", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.gpu");
    CHECK_EQ_INT(whatif(g, synth_config, "dp=0", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.dp");
    CHECK_EQ_INT(whatif(g, synth_config, "global_batch=10", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.global_batch");
    model_graph_free(g);
    model_job_free(job);

    /* tensor- and data-parallel groups of 2 ranks: a description with
     * neither is contradicted by the collectives' group sizes */
    static const char tp2[] = "{\"model\":{\"layers\":2,\"hidden\":1024,\"heads\":8,\"seq\":1024},\"parallel\":"
                              "{\"tp\":2,\"dp\":2,\"micro_batch\":1,\"global_batch\":2},\"cluster\":{\"gpu\":"
                              "\"h100-sxm\"}}";
    g = synth_graph(tp2, "whatif-tp2", &job);
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":4}", "", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "no group of 2 ranks");
    CHECK_EQ_INT(whatif(g, "{\"tp\":2,\"pp\":1,\"dp\":2}", "", &r, &err), SC_OK);
    CHECK(r.structure.by_role[STRUCT_ROLE_TP] > 0 && r.structure.by_role[STRUCT_ROLE_DP] > 0);
    whatif_release(&r);
    model_graph_free(g);
    model_job_free(job);
}

/* The sample job (data/sample: no module annotations; 8 layers found by
 * the repeating kernel sequence, forward and backward alike) takes its
 * shipped description's 8 layers and refuses 7 or 9, naming layers and
 * what the trace shows. */
TEST(whatif_layer_count_checked_against_the_repeating_kernel_sequence)
{
    static const char *const paths[] = {"data/sample/rank0.json.gz", "data/sample/rank1.json.gz",
                                        "data/sample/rank2.json.gz", "data/sample/rank3.json.gz"};
    struct model_load_opts lo;
    struct model_job *job;
    struct model_graph *g;
    struct whatif_result r;
    struct sc_error err;
    size_t n;
    model_load_opts_default(&lo);
    REQUIRE(model_job_load(paths, 4, &lo, 0, &job, &err) == SC_OK);
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    char *shipped = th_read_file("data/sample-config.json", &n);
    REQUIRE(shipped != NULL);
    CHECK_CONTAINS(shipped, "\"layers\":8");
    CHECK_EQ_INT(whatif(g, shipped, "", &r, &err), SC_OK);
    CHECK_EQ_INT(r.structure.layer_source, STRUCT_LAYERS_REPEAT);
    CHECK_EQ_INT(r.structure.layers_per_rank, 8);
    whatif_release(&r);
    free(shipped);
    for (int layers = 7; layers <= 9; layers += 2) {
        char cfg[96];
        snprintf(cfg, sizeof cfg, "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":%d}", layers);
        CHECK_EQ_INT(whatif(g, cfg, "", &r, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, "layers: ");
        CHECK_CONTAINS(err.msg, "repeating kernel sequence");
        CHECK_CONTAINS(err.msg, "8 on rank 0");
    }
    model_graph_free(g);
    model_job_free(job);
}

TEST(whatif_job_descriptions_and_sets_parse_strictly)
{
    struct job_config c, s;
    struct sc_error err;
    static const char ok[] = "{\"tp\":2,\"pp\":1,\"dp\":4,\"layers\":24,\"dtype\":\"bf16\"}";
    CHECK_EQ_INT(spec_job_config_parse(ok, strlen(ok), &c, &err), SC_OK);
    CHECK_EQ_INT(c.tp, 2);
    CHECK(c.has_dtype && c.dtype == HW_BF16);
    static const char missing[] = "{\"tp\":2,\"dp\":4}";
    CHECK_EQ_INT(spec_job_config_parse(missing, strlen(missing), &c, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "pp");
    static const char unknown[] = "{\"tp\":2,\"pp\":1,\"dp\":4,\"tpp\":2}";
    CHECK_EQ_INT(spec_job_config_parse(unknown, strlen(unknown), &c, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "tpp: unknown key");
    static const char gpu[] = "{\"tp\":2,\"pp\":1,\"dp\":4,\"gpu\":\"h100-sxm\"}";
    CHECK_EQ_INT(spec_job_config_parse(gpu, strlen(gpu), &c, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "gpu");
    CHECK_EQ_INT(spec_job_config_parse("{", 1, &c, &err), SC_EPARSE);
    CHECK_EQ_INT(spec_job_config_parse_set_list("dp=16,gpu=h100-sxm", &s, &err), SC_OK);
    CHECK(s.dp == 16 && strcmp(s.gpu, "h100-sxm") == 0 && s.tp == 0);
    CHECK_EQ_INT(spec_job_config_parse_set_list("dp=x", &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.dp");
    CHECK_EQ_INT(spec_job_config_parse_set_list("dp", &s, &err), SC_EINVAL);
    CHECK_EQ_INT(spec_job_config_parse_set_json("{\"tp\":\"2\"}", 10, &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.tp");
}

/* A job of `layers` layers over pp stages and dp replicas with m
 * micro-batches per step, as a spec and as its description. */
static void pipeline_job(int layers, int pp, int dp, int m, int hidden, const char *extra, char *spec, size_t ns,
                         char *cfg, size_t nc)
{
    snprintf(spec, ns,
             "{\"model\":{\"layers\":%d,\"hidden\":%d,\"heads\":16,\"seq\":2048%s},\"parallel\":{\"tp\":1,"
             "\"pp\":%d,\"dp\":%d,\"micro_batch\":1,\"global_batch\":%d},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}",
             layers, hidden, extra, pp, dp, m * dp);
    snprintf(cfg, nc,
             "{\"tp\":1,\"pp\":%d,\"dp\":%d,\"micro_batch\":1,\"global_batch\":%d,\"layers\":%d,\"hidden\":%d,"
             "\"heads\":16,\"seq\":2048}",
             pp, dp, m * dp, layers, hidden);
}

/* The pipeline transform: pp 1 -> 2 and 4 on a one-stage trace, 2 -> 4
 * and 1 on a two-stage one, and with tp, dp, the GPU, the layers or the
 * micro-batch size changed at once, each against `stepcast estimate` of
 * the transformed spec (within 3%); the same pp is the replay. Rules out a
 * schedule that is not rebuilt (pp 1 -> 4 is a quarter of the layers per
 * stage and a longer fill), passes counted twice or missed (a stage's
 * forward and backward run back to back in 1F1B), and measured work lost
 * from the embedding or the loss. */
TEST(whatif_pipeline_change_agrees_with_the_estimate_of_the_changed_spec)
{
    static const struct {
        int from, to;
    } cases[] = {{1, 1}, {1, 2}, {1, 4}, {2, 2}, {2, 4}, {2, 1}};
    struct model_job *jobs[3] = {NULL, NULL, NULL};
    struct model_graph *graphs[3] = {NULL, NULL, NULL};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char spec[512], cfg[512], tspec[512], tcfg[512], set[32], name[32];
        int from = cases[k].from;
        pipeline_job(8, from, 4, 2, 2048, "", spec, sizeof spec, cfg, sizeof cfg);
        pipeline_job(8, cases[k].to, 4, 2, 2048, "", tspec, sizeof tspec, tcfg, sizeof tcfg);
        if (!graphs[from]) {
            snprintf(name, sizeof name, "whatif-pp%d", from);
            graphs[from] = synth_graph(spec, name, &jobs[from]);
        }
        struct whatif_result r;
        struct sc_error err;
        snprintf(set, sizeof set, "pp=%d", cases[k].to);
        int rc = whatif(graphs[from], cfg, set, &r, &err);
        if (rc)
            sc_check_fail(__FILE__, __LINE__, "%s: %s", set, err.msg);
        if (rc)
            continue;
        double est = estimate_with(tspec, 0, NULL);
        printf("  pp %d -> %d  whatif %8.3f ms  estimate %8.3f ms  %+.2f%%  (replay %8.3f ms)\n", from, cases[k].to,
               r.step_ms, est, (r.step_ms - est) / est * 100, r.base_step_ms);
        CHECK_NEAR(r.step_ms, est, 0.03 * est);
        if (from == cases[k].to)
            CHECK_NEAR(r.step_ms, r.base_step_ms, 0.005 * r.base_step_ms);
        else
            CHECK(strstr(r.models[WHATIF_KERNEL_MODEL].why, "1F1B") != NULL);
        whatif_release(&r);
    }
    /* with other changes at once, from the one-stage trace */
    static const struct {
        const char *set;
        int pp;
        const char *from, *to; /* the spec's text changed */
    } combined[] = {
        {"pp=2,tp=2", 2, "\"tp\":1", "\"tp\":2"},
        {"pp=2,dp=8,global_batch=8", 2, "\"dp\":4,\"micro_batch\":1,\"global_batch\":8", "\"dp\":8,\"micro_batch\":1,\"global_batch\":8"},
        {"pp=4,gpu=h100-sxm", 4, "a100-sxm4-80gb", "h100-sxm"},
        {"pp=2,layers=16", 2, "\"layers\":8", "\"layers\":16"},
        {"pp=2,micro_batch=2", 2, "\"micro_batch\":1", "\"micro_batch\":2"},
    };
    for (size_t k = 0; k < sizeof combined / sizeof combined[0]; k++) {
        char spec[512], cfg[512], tspec[512], tcfg[512];
        pipeline_job(8, 1, 4, 2, 2048, "", spec, sizeof spec, cfg, sizeof cfg);
        pipeline_job(8, combined[k].pp, 4, 2, 2048, "", tspec, sizeof tspec, tcfg, sizeof tcfg);
        char *at = strstr(tspec, combined[k].from), rest[512];
        REQUIRE(at != NULL);
        snprintf(rest, sizeof rest, "%s", at + strlen(combined[k].from));
        snprintf(at, sizeof tspec - (size_t)(at - tspec), "%s%s", combined[k].to, rest);
        struct whatif_result r;
        struct sc_error err;
        if (whatif(graphs[1], cfg, combined[k].set, &r, &err)) {
            sc_check_fail(__FILE__, __LINE__, "%s: %s", combined[k].set, err.msg);
            continue;
        }
        double est = estimate_with(tspec, 0, NULL);
        printf("  %-20s whatif %8.3f ms  estimate %8.3f ms  %+.2f%%\n", combined[k].set, r.step_ms, est,
               (r.step_ms - est) / est * 100);
        CHECK_NEAR(r.step_ms, est, 0.03 * est);
        whatif_release(&r);
    }
    for (int k = 1; k <= 2; k++) {
        model_graph_free(graphs[k]);
        model_job_free(jobs[k]);
    }
}

/* On a compute-bound job (no data parallelism, a small vocabulary so that
 * the last stage holds no more than the others), splitting the layers over
 * pp stages divides the work by pp and adds the fill and drain of 1F1B:
 * the step grows from T/pp by (m + pp - 1)/m, the bubble being
 * (pp - 1)/(m + pp - 1) of it. */
TEST(whatif_pipeline_bubble_grows_as_one_f_one_b_predicts)
{
    static const int m_values[] = {4, 8};
    for (size_t a = 0; a < sizeof m_values / sizeof m_values[0]; a++) {
        char spec[512], cfg[512], name[32];
        int m = m_values[a];
        struct model_job *job;
        pipeline_job(8, 1, 1, m, 4096, ",\"vocab\":1024", spec, sizeof spec, cfg, sizeof cfg);
        snprintf(name, sizeof name, "whatif-bubble%d", m);
        struct model_graph *g = synth_graph(spec, name, &job);
        for (int pp = 2; pp <= 4; pp *= 2) {
            struct whatif_result r;
            struct sc_error err;
            char set[16];
            snprintf(set, sizeof set, "pp=%d", pp);
            int rc = whatif(g, cfg, set, &r, &err);
            if (rc)
                sc_check_fail(__FILE__, __LINE__, "%s: %s", set, err.msg);
            if (rc)
                continue;
            double want = 1.0 - (double)m / (double)(m + pp - 1), bubble = 1.0 - r.base_step_ms / pp / r.step_ms;
            printf("  m %d pp %d  bubble %.3f  (pp - 1)/(m + pp - 1) %.3f\n", m, pp, bubble, want);
            CHECK_NEAR(bubble, want, 0.03);
            whatif_release(&r);
        }
        model_graph_free(g);
        model_job_free(job);
    }
}

/* A stage count that does not split the layers is refused naming set.pp,
 * as is a pipeline change without the dimensions that place the layers. */
TEST(whatif_pipeline_refuses_a_split_megatron_cannot_run)
{
    struct model_job *job;
    struct model_graph *g = synth_graph(synth_spec, "whatif-pp-refuse", &job);
    /* 4 % 5 and 6 % 5, 7 % 4 and 9 % 4 are not 0; 3 stages split 4 + 2 */
    static const char *const sets[] = {"pp=5", "pp=4,layers=7"};
    struct whatif_result r;
    struct sc_error err;
    for (size_t k = 0; k < 2; k++) {
        CHECK_EQ_INT(whatif(g, synth_config, sets[k], &r, &err), SC_EINVAL);
        CHECK(strncmp(err.msg, "set.pp:", 7) == 0);
        CHECK_CONTAINS(err.msg, "do not split");
    }
    CHECK_EQ_INT(whatif(g, synth_config, "pp=3", &r, &err), SC_OK);
    whatif_release(&r);
    CHECK_EQ_INT(whatif(g, "{\"tp\":1,\"pp\":1,\"dp\":4}", "pp=2", &r, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.pp");
    model_graph_free(g);
    model_job_free(job);
}

/* A job of 8 layers over pp stages of vpp virtual stages each (1f1b when
 * vpp is 1), 2 replicas and 4 micro-batches per step, as a spec and as
 * its description. */
static void schedule_job(int pp, int vpp, char *spec, size_t ns, char *cfg, size_t nc)
{
    const char *sched = vpp > 1 ? "interleaved" : "1f1b";
    snprintf(spec, ns,
             "{\"model\":{\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048},\"parallel\":{\"tp\":1,\"pp\":%d,"
             "\"dp\":2,\"micro_batch\":1,\"global_batch\":8,\"schedule\":\"%s\",\"vpp\":%d},\"cluster\":{\"gpu\":"
             "\"a100-sxm4-80gb\"}}",
             pp, sched, vpp);
    snprintf(cfg, nc,
             "{\"tp\":1,\"pp\":%d,\"dp\":2,\"micro_batch\":1,\"global_batch\":8,\"layers\":8,\"hidden\":2048,"
             "\"heads\":16,\"seq\":2048,\"schedule\":\"%s\",\"vpp\":%d}",
             pp, sched, vpp);
}

/* The pipeline transform with Megatron's interleaved schedule: on the
 * traces of an interleaved job (pp 2, vpp 2) the no-op is the replay
 * (within 0.5%), pp 2 -> 4 keeping vpp 2 and interleaved -> 1f1b agree with
 * `stepcast estimate` of the transformed spec, and so does 1f1b ->
 * interleaved from a 1f1b trace (within 3%). Rules out a schedule
 * description that is dropped (the rebuild would be 1F1B, whose fill and
 * drain are twice the interleaved one's: 5% longer a step here), virtual
 * stages placed on the wrong ranks, and passes of an interleaved trace
 * miscounted (a rank runs two model chunks' layers per micro-batch). */
TEST(whatif_interleaved_schedule_agrees_with_the_estimate_of_the_changed_spec)
{
    static const struct {
        int from_vpp; /* the traced job: pp 2, this vpp */
        const char *set;
        int pp, vpp; /* the target */
    } cases[] = {
        {2, "", 2, 2},
        {2, "pp=4", 4, 2},
        {2, "schedule=1f1b,vpp=1", 2, 1},
        {1, "schedule=interleaved,vpp=2", 2, 2},
        {1, "pp=4,schedule=interleaved,vpp=2", 4, 2},
    };
    struct model_job *jobs[3] = {NULL, NULL, NULL};
    struct model_graph *graphs[3] = {NULL, NULL, NULL};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char spec[512], cfg[512], tspec[512], tcfg[512], name[32];
        int v = cases[k].from_vpp;
        schedule_job(2, v, spec, sizeof spec, cfg, sizeof cfg);
        schedule_job(cases[k].pp, cases[k].vpp, tspec, sizeof tspec, tcfg, sizeof tcfg);
        if (!graphs[v]) {
            snprintf(name, sizeof name, "whatif-vpp%d", v);
            graphs[v] = synth_graph(spec, name, &jobs[v]);
        }
        struct whatif_result r;
        struct sc_error err;
        int rc = whatif(graphs[v], cfg, cases[k].set, &r, &err);
        if (rc)
            sc_check_fail(__FILE__, __LINE__, "%s: %s", cases[k].set, err.msg);
        if (rc)
            continue;
        double est = estimate_with(tspec, 0, NULL);
        printf("  pp 2 vpp %d -> %-34s whatif %8.3f ms  estimate %8.3f ms  %+.2f%%  (replay %8.3f ms, %+.2f%%)\n", v,
               cases[k].set[0] ? cases[k].set : "no-op", r.step_ms, est, (r.step_ms - est) / est * 100,
               r.base_step_ms, (r.step_ms - r.base_step_ms) / r.base_step_ms * 100);
        CHECK_NEAR(r.step_ms, est, 0.03 * est);
        if (!cases[k].set[0]) {
            CHECK_NEAR(r.step_ms, r.base_step_ms, 0.005 * r.base_step_ms);
        } else {
            const char *why = r.models[WHATIF_KERNEL_MODEL].why;
            CHECK(strstr(why, cases[k].vpp > 1 ? "interleaved schedule" : "1F1B") != NULL);
        }
        whatif_release(&r);
    }
    /* a virtual stage count that does not split the layers: 2 x 3 = 6
     * splits neither 8 nor 10 */
    struct whatif_result r;
    struct sc_error err;
    char spec[512], cfg[512];
    schedule_job(2, 2, spec, sizeof spec, cfg, sizeof cfg);
    CHECK_EQ_INT(whatif(graphs[2], cfg, "vpp=3", &r, &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "set.vpp:", 8) == 0);
    CHECK_CONTAINS(err.msg, "do not split");
    /* the schedule's own checks, as a spec's, name the set's field */
    CHECK_EQ_INT(whatif(graphs[2], cfg, "schedule=1f1b", &r, &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "set.vpp:", 8) == 0);
    CHECK_EQ_INT(whatif(graphs[2], cfg, "global_batch=6", &r, &err), SC_EINVAL);
    CHECK(strncmp(err.msg, "set.global_batch:", 17) == 0);
    for (int k = 1; k <= 2; k++) {
        model_graph_free(graphs[k]);
        model_job_free(jobs[k]);
    }
}

/* The schedule keys of a job description and a set: the spec's names and
 * defaults, its checks with the field named, written back as given. */
TEST(whatif_job_description_schedule_keys)
{
    struct job_config c, s;
    struct sc_error err;
    static const char plain[] = "{\"tp\":1,\"pp\":2,\"dp\":1}";
    CHECK_EQ_INT(spec_job_config_parse(plain, strlen(plain), &c, &err), SC_OK);
    CHECK(spec_job_config_schedule(&c) == EST_SCHEDULE_1F1B && spec_job_config_vpp(&c) == 1);
    static const char il[] = "{\"tp\":1,\"pp\":2,\"dp\":1,\"layers\":8,\"schedule\":\"interleaved\",\"vpp\":2}";
    CHECK_EQ_INT(spec_job_config_parse(il, strlen(il), &c, &err), SC_OK);
    CHECK(spec_job_config_schedule(&c) == EST_SCHEDULE_INTERLEAVED && spec_job_config_vpp(&c) == 2);
    char *text = spec_job_config_json(&c);
    REQUIRE(text != NULL);
    CHECK_CONTAINS(text, "\"schedule\":\"interleaved\"");
    CHECK_CONTAINS(text, "\"vpp\":2");
    free(text);
    static const struct {
        const char *doc, *field;
    } bad[] = {
        {"{\"tp\":1,\"pp\":2,\"dp\":1,\"schedule\":\"zero-bubble\"}", "schedule:"},
        {"{\"tp\":1,\"pp\":2,\"dp\":1,\"schedule\":2}", "schedule:"},
        {"{\"tp\":1,\"pp\":2,\"dp\":1,\"schedule\":\"interleaved\"}", "schedule:"},
        {"{\"tp\":1,\"pp\":2,\"dp\":1,\"vpp\":2}", "vpp:"},
        {"{\"tp\":1,\"pp\":1,\"dp\":1,\"schedule\":\"interleaved\",\"vpp\":2}", "vpp:"},
        {"{\"tp\":1,\"pp\":2,\"dp\":1,\"vpp\":0}", "vpp:"},
        {"{\"tp\":1,\"pp\":4,\"dp\":1,\"layers\":8,\"schedule\":\"interleaved\",\"vpp\":4}", "vpp:"},
        {"{\"tp\":1,\"pp\":4,\"dp\":1,\"micro_batch\":1,\"global_batch\":6,\"schedule\":\"interleaved\",\"vpp\":2}",
         "global_batch:"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_EQ_INT(spec_job_config_parse(bad[k].doc, strlen(bad[k].doc), &c, &err), SC_EINVAL);
        CHECK(strncmp(err.msg, bad[k].field, strlen(bad[k].field)) == 0);
    }
    CHECK_EQ_INT(spec_job_config_parse_set_list("schedule=interleaved,vpp=2", &s, &err), SC_OK);
    CHECK(s.has_schedule && s.schedule == EST_SCHEDULE_INTERLEAVED && s.vpp == 2);
    CHECK_EQ_INT(spec_job_config_parse_set_list("schedule=gpipe", &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.schedule");
    CHECK_EQ_INT(spec_job_config_parse_set_json("{\"vpp\":\"2\"}", 11, &s, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "set.vpp");
}

/* The two roads to a target configuration in agreement. From the traces
 * `stepcast synth` writes for six specs (dense, GQA+SwiGLU, MoE; pp 1, 2
 * and 4; tp 1 and 2; H100 under its defaults), a what-if to tp 2/4/8, dp
 * 8/64/512, pp 2/4 and cp 2 moves the step by the ratio `estimate` of the
 * same two configurations gives, within 5%. */
static const char dense[] = "\"layers\":8,\"hidden\":2048,\"heads\":16,\"seq\":2048",
                  gqa[] = "\"layers\":8,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"ffn\":14336,"
                          "\"mlp\":\"swiglu\",\"seq\":2048",
                  moe[] = "\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,"
                          "\"moe\":{\"experts\":8,\"top_k\":2}";

static const struct {
    const char *name, *model;
    int tp, pp, sp; /* sp: sequence parallelism (MoE with tp > 1 needs it) */
} specs[] = {
    {"dense-pp1-tp1", dense, 1, 1, 0}, {"gqa-pp2-tp1", gqa, 1, 2, 0}, {"moe-pp1-tp1", moe, 1, 1, 0},
    {"dense-pp4-tp2", dense, 2, 4, 0}, {"gqa-pp1-tp2", gqa, 2, 1, 0}, {"moe-pp2-tp2", moe, 2, 2, 1},
};

/* A target: the parallel key changed and its value. */
static const struct {
    char key;
    int value;
} targets[] = {{'t', 2}, {'t', 4}, {'t', 8}, {'d', 8}, {'d', 64}, {'d', 512}, {'p', 2}, {'p', 4}, {'c', 2}};

/* Spec k at tp, pp, dp, cp: one micro-batch, four micro-batches per step
 * at every dp (each rank's batch kept). */
static void spec_text(size_t k, int tp, int pp, int dp, int cp, char *out, size_t n)
{
    snprintf(out, n,
             "{\"model\":{%s,\"vocab\":50304},\"parallel\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"cp\":%d,"
             "\"micro_batch\":1,\"global_batch\":%d},\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"dtype\":"
             "\"bf16\"%s}}",
             specs[k].model, tp, pp, dp, cp, 4 * dp, specs[k].sp ? ",\"sequence_parallel\":true" : "");
}

TEST(whatif_roads_agree_from_six_synthesised_specs)
{
    size_t cases = 0, within = 0;
    double worst = 0;
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        char text[1024], dir[512], desc[600];
        struct sc_error err;
        struct model_load_opts lo;
        struct model_job *job = NULL;
        struct model_graph *g = NULL;
        struct job_config cfg;
        spec_text(k, specs[k].tp, specs[k].pp, 1, 1, text, sizeof text);
        const char *path = th_write_file(specs[k].name, text, strlen(text));
        snprintf(dir, sizeof dir, "%s/%s-roads", th_tmpdir(), specs[k].name);
        char *argv[] = {(char *)th_build_path("stepcast"), "synth", "--spec", (char *)path, "--out", dir, NULL};
        free(th_run_expect(argv, 0, NULL, NULL));
        const char *dirs[] = {dir};
        model_load_opts_default(&lo);
        snprintf(desc, sizeof desc,
                 "{\"tp\":%d,\"pp\":%d,\"dp\":1,\"micro_batch\":1,\"global_batch\":4,\"vocab\":50304,%s%s}",
                 specs[k].tp, specs[k].pp, specs[k].model, specs[k].sp ? ",\"sequence_parallel\":true" : "");
        REQUIRE(model_job_load(dirs, 1, &lo, 0, &job, &err) == SC_OK);
        REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
        REQUIRE(spec_job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
        double base = estimate_with(text, 1, NULL);
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
            char set_text[64], target_text[1024];
            struct job_config set;
            struct whatif_result r;
            int tp = specs[k].tp, pp = specs[k].pp, dp = 1, cp = 1, v = targets[t].value;
            char key = targets[t].key;
            *(key == 't' ? &tp : key == 'p' ? &pp : key == 'c' ? &cp : &dp) = v;
            /* the traced configuration itself, or MoE's tp without
             * sequence parallelism (which a spec refuses) */
            if ((tp == specs[k].tp && pp == specs[k].pp && dp == 1 && cp == 1) ||
                (tp > 1 && specs[k].model == moe && !specs[k].sp))
                continue;
            if (key == 'd')
                snprintf(set_text, sizeof set_text, "dp=%d,global_batch=%d", v, 4 * v);
            else
                snprintf(set_text, sizeof set_text, "%s=%d", key == 't' ? "tp" : key == 'p' ? "pp" : "cp", v);
            spec_text(k, tp, pp, dp, cp, target_text, sizeof target_text);
            REQUIRE(spec_job_config_parse_set_list(set_text, &set, &err) == SC_OK);
            if (whatif_run(g, NULL, &cfg, &set, &r, &err)) {
                sc_check_fail(__FILE__, __LINE__, "%s %s: %s", specs[k].name, set_text, err.msg);
                continue;
            }
            double w = r.step_ms / r.base_step_ms, e = estimate_with(target_text, 1, NULL) / base, d = w / e - 1;
            printf("  %-14s %-26s what-if x%.3f  estimate x%.3f  %+.1f%%\n", specs[k].name, set_text, w, e,
                   100 * d);
            cases++;
            within += d <= 0.05 && d >= -0.05;
            worst = d * d > worst * worst ? d : worst;
            if (d > 0.05 || d < -0.05)
                sc_check_fail(__FILE__, __LINE__, "%s %s: what-if x%.3f, estimate x%.3f", specs[k].name, set_text,
                              w, e);
            whatif_release(&r);
        }
        model_graph_free(g);
        model_job_free(job);
    }
    printf("  %zu what-ifs, %zu within 5%% of the estimate's ratio, worst %+.1f%%\n", cases, within, 100 * worst);
    CHECK(cases >= 42);
}

/* From a step traced at cp 2 (tp 1), tensor parallelism is sized by the
 * tokens each rank holds (seq / cp): the what-if to tp 2 and 4 moves the
 * step as the estimate does, within 5%. The model is large enough that
 * the step is the GPU's, not the host's. */
static void cp_spec_text(int tp, char *out, size_t n)
{
    snprintf(out, n,
             "{\"model\":{\"layers\":4,\"hidden\":8192,\"heads\":64,\"seq\":16384,\"vocab\":50304},"
             "\"parallel\":{\"tp\":%d,\"pp\":1,\"dp\":1,\"cp\":2,\"micro_batch\":1,\"global_batch\":1},"
             "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"dtype\":\"bf16\"}}",
             tp);
}

TEST(whatif_tp_from_a_context_parallel_trace)
{
    static const char desc[] = "{\"tp\":1,\"pp\":1,\"dp\":1,\"cp\":2,\"micro_batch\":1,\"global_batch\":1,"
                               "\"layers\":4,\"hidden\":8192,\"heads\":64,\"seq\":16384,\"vocab\":50304}";
    char text[1024], dir[512];
    struct sc_error err;
    struct model_load_opts lo;
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct job_config cfg;
    cp_spec_text(1, text, sizeof text);
    const char *path = th_write_file("cp2.json", text, strlen(text));
    snprintf(dir, sizeof dir, "%s/cp2-roads", th_tmpdir());
    char *argv[] = {(char *)th_build_path("stepcast"), "synth", "--spec", (char *)path, "--out", dir, NULL};
    free(th_run_expect(argv, 0, NULL, NULL));
    const char *dirs[] = {dir};
    model_load_opts_default(&lo);
    REQUIRE(model_job_load(dirs, 1, &lo, 0, &job, &err) == SC_OK);
    REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
    REQUIRE(spec_job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
    double base = estimate_with(text, 1, NULL);
    for (int tp = 2; tp <= 8; tp *= 2) {
        char set_text[32], target_text[1024];
        struct job_config set;
        struct whatif_result r;
        snprintf(set_text, sizeof set_text, "tp=%d", tp);
        cp_spec_text(tp, target_text, sizeof target_text);
        REQUIRE(spec_job_config_parse_set_list(set_text, &set, &err) == SC_OK);
        if (whatif_run(g, NULL, &cfg, &set, &r, &err)) {
            sc_check_fail(__FILE__, __LINE__, "%s: %s", set_text, err.msg);
            continue;
        }
        double w = r.step_ms / r.base_step_ms, e = estimate_with(target_text, 1, NULL) / base, d = w / e - 1;
        printf("  cp 2 -> %s: what-if x%.3f  estimate x%.3f  %+.1f%%  (tensor-parallel transfers %.3f ms)\n",
               set_text, w, e, 100 * d, r.collective_transfer_ms);
        CHECK(d <= 0.05 && d >= -0.05);
        whatif_release(&r);
    }
    model_graph_free(g);
    model_job_free(job);
}

/* A step of g's optimizer kernels and those named `also` (NULL: none),
 * the mean over its steps, ms. */
static double step_optimizer_ms(const struct model_graph *g, const char *also)
{
    return (total(g, is_optimizer) + (also ? named(g, also) : 0)) / 1e6 / (double)(g->n_steps ? g->n_steps : 1);
}

/* A context-parallel target rebuilds the step (the pipeline transform),
 * whose optimizer is the traced one re-timed by the kernel model's ratio:
 * at cp 2 every rank still holds and updates every parameter, so the
 * measured optimizer's time stays (the model's own, with a norm, is 19% under it on
 * this H200 step); with the distributed optimizer (zero_stage 1) over the
 * two cp ranks, each updates half. */
TEST(whatif_cp_keeps_the_traced_optimizer)
{
    static const char desc[] =
        "{\"tp\":1,\"pp\":1,\"dp\":1,\"micro_batch\":1,\"global_batch\":1,\"vocab\":50304,\"dtype\":\"bf16\","
        "\"layers\":4,\"hidden\":4096,\"heads\":32,\"ffn\":16384,\"seq\":4096,\"bias\":false,"
        "\"tied_embeddings\":true,\"framework\":\"pytorch\",\"master_weights\":\"bf16\"}";
    struct model_job *job;
    struct model_graph *g = traced_graph("data/calibration/torch-steps/h200/gpt-h4096-s4096-b1.pt.trace.json.gz", &job);
    struct job_config cfg, set;
    struct whatif_result r;
    struct sc_error err;
    REQUIRE(g != NULL);
    REQUIRE(spec_job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
    double traced = step_optimizer_ms(g, NULL);
    static const char *const sets[] = {"cp=2,global_batch=1", "cp=2,zero_stage=1,global_batch=1"};
    double got[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        REQUIRE(spec_job_config_parse_set_list(sets[k], &set, &err) == SC_OK);
        REQUIRE(whatif_run(g, NULL, &cfg, &set, &r, &err) == SC_OK);
        got[k] = step_optimizer_ms(r.graph, "gradient norm");
        printf("  %s: the traced optimizer %.3f ms a step, the what-if's optimizer and norm %.3f ms\n", sets[k],
               traced, got[k]);
        whatif_release(&r);
    }
    CHECK(traced > 1.0);
    CHECK(got[0] >= traced && got[0] <= 1.25 * traced);
    CHECK(fabs(got[1] / got[0] - 0.5) < 0.02);
    model_graph_free(g);
    model_job_free(job);
}

/* The two roads from the steps measured on H100 and H200
 * (data/calibration/torch-steps), each described with its own stack
 * (eager PyTorch, pure bf16: framework and master_weights), to tp 2, 4
 * and 8, dp 8, 64 and 512, pp 2 and 4 (four micro-batches a step, base and
 * target alike) and cp 2: the what-if and the estimate move the step by
 * the same ratio within 5%. The descriptions say what
 * profiler/torch-step.py built: linear layers without biases (bias false:
 * the estimate prices no bias gradients), the output layer the embedding's
 * weights (tied_embeddings true: one matrix's gradient and optimizer step,
 * which a context-parallel target keeps whole on each rank, as the trace
 * measured them), and the estimate prices eager
 * PyTorch's F.cross_entropy on fp32 logits op by op (about 40 bytes a
 * logit; Megatron's fused loss moves 18): on the H100's gpt-h2048 its loss
 * region was 9.97 ms a micro-batch against the 13.3 measured and its layer
 * passes, with the biases' gradients, 4.91 ms against 4.41, sums that
 * agree at pp 1 but not on pp 4's last stage (two layers and the loss),
 * whose pp 4 came out +5.4%. Each road waits on the host at its own pace
 * (the what-if at the traced host's, `traced_host`; the estimate at the
 * eager stack's cost per operation), and where the GPUs' work shrinks
 * those waits part the roads; so:
 *  - where the two targets' host waits differ by 3 points of their steps
 *    or more, the GPUs' part of each step (less its host wait) is held to
 *    5% instead, and to 10% where either target waits on its host for a
 *    quarter of its step (host-bound: the part is a bound, not a sum);
 *    pipelines too (the H200's gpt-h1024 at pp 2: the estimate waits
 *    3.8 ms of 69.1 on its host, the what-if 0.3 of 62.0), always at 5%;
 *  - from a traced step that itself waits on its host for a tenth of its
 *    time or more, as replayed (the H100 machine's gpt-h1024: 4.2 ms of
 *    27.0), every target keeps that host's pace less the profiler's share
 *    the what-if takes off it (whatif.h, 0), where the estimate keeps its
 *    stack's: the GPUs' part within 10% (a pipeline as above).
 * Each such case is printed with its figures and named. */
TEST(whatif_roads_from_the_measured_eager_steps)
{
    static const char *const gpus[] = {"h100-sxm", "h200"};
    static const struct {
        const char *name, *model;
        int mb;
    } steps[] = {
        {"gpt-h1024-s1024-b8", "\"layers\":8,\"hidden\":1024,\"heads\":16,\"ffn\":4096,\"seq\":1024", 8},
        {"gpt-h2048-s2048-b4", "\"layers\":8,\"hidden\":2048,\"heads\":16,\"ffn\":8192,\"seq\":2048", 4},
        {"gpt-h4096-s4096-b1", "\"layers\":4,\"hidden\":4096,\"heads\":32,\"ffn\":16384,\"seq\":4096", 1},
        {"llama-h4096-gqa8-swiglu-s2048-b2",
         "\"layers\":4,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"ffn\":14336,\"mlp\":\"swiglu\",\"seq\":2048", 2},
    };
    static const char stack[] = "\"framework\":\"pytorch\",\"master_weights\":\"bf16\"";
    /* profiler/torch-step.py's model: the output layer is the embedding's
     * weights, and its linear layers have no biases */
    static const char built[] = "\"bias\":false,\"tied_embeddings\":true";
    size_t held = 0, named = 0;
    for (size_t gi = 0; gi < 2; gi++)
        for (size_t m = 0; m < sizeof steps / sizeof steps[0]; m++) {
            char path[512], desc[512];
            const char *paths[] = {path};
            struct model_load_opts lo;
            struct model_job *job = NULL;
            struct model_graph *g = NULL;
            struct job_config cfg;
            struct sc_error err;
            int mb = steps[m].mb;
            snprintf(path, sizeof path, "data/calibration/torch-steps/%s/%s.pt.trace.json.gz", gpus[gi],
                     steps[m].name);
            snprintf(desc, sizeof desc,
                     "{\"tp\":1,\"pp\":1,\"dp\":1,\"micro_batch\":%d,\"global_batch\":%d,\"vocab\":50304,"
                     "\"dtype\":\"bf16\",%s,%s,%s}",
                     mb, mb, steps[m].model, built, stack);
            model_load_opts_default(&lo);
            REQUIRE(model_job_load(paths, 1, &lo, 0, &job, &err) == SC_OK);
            REQUIRE(model_graph_build(job, NULL, &g, &err) == SC_OK);
            REQUIRE(spec_job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
            /* the traced step's own wait on its (profiled) host, replayed */
            struct model_replay_opts ro;
            struct model_replay *traced;
            double traced_host = 0, traced_ms = 0;
            model_replay_opts_default(&ro);
            REQUIRE(model_replay_run(g, &ro, &traced, &err) == SC_OK);
            for (size_t k = 0; k < traced->n_steps; k++) {
                traced_host += (double)traced->steps[k].breakdown.host;
                traced_ms += (double)traced->steps[k].replayed_ns;
            }
            model_replay_free(traced);
            static const struct {
                const char *set;
                int tp, pp, dp, cp, m; /* the target; m micro-batches a step */
            } goals[] = {{"dp=8", 1, 1, 8, 1, 1},   {"dp=64", 1, 1, 64, 1, 1}, {"dp=512", 1, 1, 512, 1, 1},
                         {"pp=2", 1, 2, 1, 1, 4},   {"pp=4", 1, 4, 1, 1, 4},   {"cp=2", 1, 1, 1, 2, 1},
                         {"tp=2", 2, 1, 1, 1, 1},   {"tp=4", 4, 1, 1, 1, 1},   {"tp=8", 8, 1, 1, 1, 1}};
            for (size_t t = 0; t < sizeof goals / sizeof goals[0]; t++) {
                char set_text[96], base_set[64], s0[1024], s1[1024];
                struct job_config set, set0;
                struct whatif_result r, r0;
                int gb = mb * goals[t].dp * goals[t].m;
                snprintf(set_text, sizeof set_text, "%s,global_batch=%d", goals[t].set, gb);
                snprintf(base_set, sizeof base_set, "global_batch=%d", mb * goals[t].m);
                REQUIRE(spec_job_config_parse_set_list(set_text, &set, &err) == SC_OK);
                REQUIRE(spec_job_config_parse_set_list(base_set, &set0, &err) == SC_OK);
                REQUIRE(whatif_run(g, NULL, &cfg, &set0, &r0, &err) == SC_OK);
                if (whatif_run(g, NULL, &cfg, &set, &r, &err)) {
                    sc_check_fail(__FILE__, __LINE__, "%s %s: %s", steps[m].name, set_text, err.msg);
                    whatif_release(&r0);
                    continue;
                }
                for (int k = 0; k < 2; k++)
                    snprintf(k ? s1 : s0, sizeof s0,
                             "{\"model\":{%s,%s,\"vocab\":50304},\"parallel\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,"
                             "\"cp\":%d,\"micro_batch\":%d,\"global_batch\":%d},\"cluster\":{\"gpu\":\"%s\"},"
                             "\"options\":{\"dtype\":\"bf16\",%s}}",
                             steps[m].model, built, k ? goals[t].tp : 1, k ? goals[t].pp : 1, k ? goals[t].dp : 1,
                             k ? goals[t].cp : 1, mb, k ? gb : mb * goals[t].m, gpus[gi], stack);
                double eh0, eh1, e0 = estimate_with(s0, 1, &eh0), e1 = estimate_with(s1, 1, &eh1);
                double w = r.step_ms / r0.step_ms, e = e1 / e0, d = w / e - 1;
                /* the GPUs' part of each road: the step less its wait on the
                 * host (the traced host's pace; the stack's in the estimate) */
                double wd = (r.step_ms - r.host_exposed_ms) / (r0.step_ms - r0.host_exposed_ms),
                       ed = (e1 - eh1) / (e0 - eh0), dd = wd / ed - 1;
                double hw = r.host_exposed_ms / r.step_ms, he = eh1 / e1;
                double h0 = traced_ms > 0 ? traced_host / traced_ms : 0;
                /* which figure is held, and how close (the function's comment) */
                int traced_bound = h0 >= 0.1, bound = hw >= 0.25 || he >= 0.25, differ = fabs(hw - he) >= 0.03;
                int pp = goals[t].pp > 1, gpus_only = pp ? differ : traced_bound || bound || differ;
                double limit = !pp && (traced_bound || bound) ? 0.10 : 0.05;
                double off = gpus_only ? dd : d;
                const char *why = !gpus_only           ? ""
                                  : traced_bound && !pp ? " traced step host-bound, GPUs' part"
                                  : bound && !pp        ? " host-bound target, GPUs' part"
                                                        : " host paces differ, GPUs' part";
                printf("  %-9s %-32s %-7s what-if x%.3f  estimate x%.3f  %+6.1f%%  GPUs only %+6.1f%%  (host waits "
                       "%.2f of %.2f ms; estimate %.2f of %.2f)%s\n",
                       gpus[gi], steps[m].name, goals[t].set, w, e, 100 * d, 100 * dd, r.host_exposed_ms, r.step_ms,
                       eh1, e1, why);
                held++;
                named += gpus_only;
                if (off > limit || off < -limit)
                    sc_check_fail(__FILE__, __LINE__, "%s %s %s: what-if x%.3f, estimate x%.3f (%+.1f%%; GPUs only %+.1f%%)",
                                  gpus[gi], steps[m].name, goals[t].set, w, e, 100 * d, 100 * dd);
                whatif_release(&r);
                whatif_release(&r0);
            }
            model_graph_free(g);
            model_job_free(job);
        }
    printf("  %zu targets held, %zu of them on the GPUs' part (named)\n", held, named);
    CHECK(held == 72);
}
