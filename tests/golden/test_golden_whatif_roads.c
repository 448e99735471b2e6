/* tests/golden/test_golden_whatif_roads.c: the two roads to a target
 * configuration in agreement. From the traces `stepcast synth` writes for
 * six specs (dense, GQA+SwiGLU, MoE; pp 1, 2 and 4; tp 1 and 2; H100
 * under its defaults), a what-if to tp 2/4/8, dp 8/64/512 and pp 2/4 moves
 * the step by the ratio `estimate` of the same two configurations gives,
 * within 5%. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/estimate.h"
#include "estimator/hardware.h"
#include "estimator/job_config.h"
#include "estimator/spec.h"
#include "estimator/synth.h"
#include "estimator/whatif.h"
#include "model/graph.h"
#include "model/job.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

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
} targets[] = {{'t', 2}, {'t', 4}, {'t', 8}, {'d', 8}, {'d', 64}, {'d', 512}, {'p', 2}, {'p', 4}};

/* Spec k at tp, pp, dp: one micro-batch, four micro-batches per step at
 * every dp (each rank's batch kept). */
static void spec_text(size_t k, int tp, int pp, int dp, char *out, size_t n)
{
    snprintf(out, n,
             "{\"model\":{%s,\"vocab\":50304},\"parallel\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"micro_batch\":1,"
             "\"global_batch\":%d},\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"dtype\":\"bf16\"%s}}",
             specs[k].model, tp, pp, dp, 4 * dp, specs[k].sp ? ",\"sequence_parallel\":true" : "");
}

static double estimate(const char *text)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    struct sc_error err;
    if (est_spec_load(text, strlen(text), &s, &hw, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s: %s", text, err.msg);
        return -1;
    }
    est_costs_default(hw, &s, &c);
    if (est_estimate(&s, hw, &c, EST_DETAIL_STAGE, &e, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    double ms = e.step_ms;
    est_estimate_release(&e);
    return ms;
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
        spec_text(k, specs[k].tp, specs[k].pp, 1, text, sizeof text);
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
        REQUIRE(job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
        double base = estimate(text);
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
            char set_text[64], target_text[1024];
            struct job_config set;
            struct whatif_result r;
            int tp = specs[k].tp, pp = specs[k].pp, dp = 1, v = targets[t].value;
            *(targets[t].key == 't' ? &tp : targets[t].key == 'p' ? &pp : &dp) = v;
            /* the traced configuration itself, or MoE's tp without
             * sequence parallelism (which a spec refuses) */
            if ((tp == specs[k].tp && pp == specs[k].pp && dp == 1) || (tp > 1 && specs[k].model == moe && !specs[k].sp))
                continue;
            if (targets[t].key == 'd')
                snprintf(set_text, sizeof set_text, "dp=%d,global_batch=%d", v, 4 * v);
            else
                snprintf(set_text, sizeof set_text, "%s=%d", targets[t].key == 't' ? "tp" : "pp", v);
            spec_text(k, tp, pp, dp, target_text, sizeof target_text);
            REQUIRE(job_config_parse_set_list(set_text, &set, &err) == SC_OK);
            if (whatif_run(g, &cfg, &set, &r, &err)) {
                sc_check_fail(__FILE__, __LINE__, "%s %s: %s", specs[k].name, set_text, err.msg);
                continue;
            }
            double w = r.step_ms / r.base_step_ms, e = estimate(target_text) / base, d = w / e - 1;
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
    CHECK(cases >= 36);
}
