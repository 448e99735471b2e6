/* tests/unit/test_whatif_plan.c: a plan from a traced job (estimator/
 * whatif_plan.h) recovers the job's structure and replays its traced step
 * once for all its candidates, not once per candidate; each candidate is
 * still the what-if of its configuration. The job is a measured eager step
 * of data/calibration/torch-steps, opened as a built model opens it: its
 * trace shed once built, the what-ifs reading its notes; and an MoE job
 * synthesised, whose plan also searches ep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/job_config.h"
#include "estimator/model_open.h"
#include "estimator/plan/plan.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/whatif.h"
#include "estimator/whatif/whatif_plan.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char trace[] = "data/calibration/torch-steps/h100-sxm/gpt-h1024-s1024-b8.pt.trace.json.gz";
/* its row of data/calibration/torch-steps/h100-sxm.csv, as
 * tests/whatif_steps.py describes it */
static const char config[] =
    "{\"tp\":1,\"pp\":1,\"dp\":1,\"vocab\":50304,\"dtype\":\"bf16\",\"mlp\":\"gelu\",\"framework\":\"pytorch\","
    "\"master_weights\":\"bf16\",\"tied_embeddings\":true,\"bias\":false,\"global_batch\":8,\"layers\":8,\"hidden\":1024,"
    "\"heads\":16,\"kv_heads\":16,\"ffn\":4096,\"seq\":1024,\"micro_batch\":8}";

/* The traces at path as a built model opens them: shed once built, the
 * what-ifs reading their notes. */
static struct est_traced_model *open_model(const char *path)
{
    struct est_model_options o;
    struct est_traced_model *m = NULL;
    struct sc_error err;
    est_model_options_default(&o);
    o.keep = EST_KEEP_NOTES;
    if (est_model_open(&path, 1, &o, NULL, NULL, &m, &err) != SC_OK)
        sc_check_fail(__FILE__, __LINE__, "%s: %s", path, err.msg);
    return m;
}

/* Whether the plan's row is the what-if of its configuration, run on its
 * own (which recovers and replays again). */
static int row_is_its_whatif(struct est_traced_model *m, const struct job_config *cfg, const struct whatif_planner *w,
                             const struct est_plan_row *row)
{
    struct job_config set;
    struct whatif_result res;
    struct sc_error err;
    whatif_plan_set(w, &row->spec, &set);
    if (est_model_whatif(m, cfg, &set, &res, &err) != SC_OK) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return 0;
    }
    int same = fabs(res.step_ms - row->estimate.step_ms) <= 1e-9 * res.step_ms;
    whatif_release(&res);
    return same;
}

TEST(whatif_plan_recovers_the_structure_and_replays_the_base_once)
{
    struct job_config cfg;
    struct est_plan_request req;
    struct whatif_planner w;
    struct est_plan_evaluator ev;
    struct est_plan plan;
    struct sc_error err;
    struct est_traced_model *m = open_model(trace);
    REQUIRE(m != NULL);
    REQUIRE(spec_job_config_parse(config, strlen(config), &cfg, &err) == SC_OK);
    memset(&req, 0, sizeof req);
    req.gpus = 8;
    req.up_to = 1;
    req.top = 5;
    unsigned long recovered = whatif_job_structure_recoveries(), replayed = whatif_base_steps();
    REQUIRE(whatif_plan_request(est_model_graph(m), est_model_notes(m), &cfg, &req, &w, &err) == SC_OK);
    whatif_plan_evaluator(&w, &ev);
    REQUIRE(plan_run(&req, &ev, NULL, NULL, &plan, &err) == SC_OK);
    CHECK(plan.evaluated > 10);
    CHECK_EQ_INT(plan.n_rows, 5);
    CHECK_EQ_INT(whatif_job_structure_recoveries() - recovered, 1);
    CHECK_EQ_INT(whatif_base_steps() - replayed, 1);
    for (size_t i = 0; i < plan.n_rows; i++)
        CHECK(row_is_its_whatif(m, &cfg, &w, &plan.rows[i]));
    CHECK_EQ_INT(whatif_job_structure_recoveries() - recovered, 1 + plan.n_rows);
    plan_release(&plan);
    whatif_plan_release(&w);
    est_model_close(m);
}

/* A traced MoE job (synthesised: 8 experts over ep 2, dp 4): the plan
 * searches ep as it searches tp, pp and dp, each row still the what-if of
 * its configuration, ep included. */
TEST(whatif_plan_of_an_moe_job_searches_ep)
{
    static const char spec[] =
        "{\"model\":{\"layers\":4,\"hidden\":2048,\"heads\":16,\"seq\":2048,\"moe\":{\"experts\":8,\"top_k\":2}},"
        "\"parallel\":{\"tp\":1,\"pp\":1,\"dp\":4,\"ep\":2,\"micro_batch\":1,\"global_batch\":8},"
        "\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}";
    static const char desc[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"ep\":2,\"micro_batch\":1,\"global_batch\":8,\"layers\":4,"
                               "\"hidden\":2048,\"heads\":16,\"seq\":2048,\"vocab\":50257,"
                               "\"moe\":{\"experts\":8,\"top_k\":2}}";
    struct job_config cfg;
    struct est_plan_request req;
    struct whatif_planner w;
    struct est_plan_evaluator ev;
    struct est_plan plan;
    struct sc_error err;
    char dir[512];
    const char *path = th_write_file("whatif-plan-moe.json", spec, strlen(spec));
    snprintf(dir, sizeof dir, "%s/whatif-plan-moe", th_tmpdir());
    char *argv[] = {(char *)th_build_path("stepcast"), "synth", "--spec", (char *)path, "--out", dir, NULL};
    free(th_run_expect(argv, 0, NULL, NULL));
    struct est_traced_model *m = open_model(dir);
    REQUIRE(m != NULL);
    REQUIRE(spec_job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
    memset(&req, 0, sizeof req);
    req.gpus = 4;
    req.top = 20;
    REQUIRE(whatif_plan_request(est_model_graph(m), est_model_notes(m), &cfg, &req, &w, &err) == SC_OK);
    whatif_plan_evaluator(&w, &ev);
    REQUIRE(plan_run(&req, &ev, NULL, NULL, &plan, &err) == SC_OK);
    int seen[9] = {0};
    for (size_t i = 0; i < plan.n_rows; i++) {
        struct job_config set;
        int64_t ep = plan.rows[i].spec.parallel.ep;
        REQUIRE(ep >= 1 && ep <= 8);
        seen[ep] = 1;
        whatif_plan_set(&w, &plan.rows[i].spec, &set);
        CHECK_EQ_INT(set.ep, ep);
        CHECK(row_is_its_whatif(m, &cfg, &w, &plan.rows[i]));
    }
    printf("  %zu rows of %lld evaluated; ep 1 %s, 2 %s, 4 %s\n", plan.n_rows, (long long)plan.evaluated,
           seen[1] ? "yes" : "no", seen[2] ? "yes" : "no", seen[4] ? "yes" : "no");
    CHECK(seen[1] && seen[2] && seen[4]);
    plan_release(&plan);
    whatif_plan_release(&w);
    est_model_close(m);
}
