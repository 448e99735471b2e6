/* tests/unit/test_whatif_plan.c: a plan from a traced job (estimator/
 * whatif_plan.h) recovers the job's structure and replays its traced step
 * once for all its candidates, not once per candidate; each candidate is
 * still the what-if of its configuration. The job is a measured eager step
 * of data/calibration/torch-steps, opened as a built model opens it: its
 * trace shed once built, the what-ifs reading its notes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/job_config.h"
#include "estimator/model_open.h"
#include "estimator/plan/plan.h"
#include "estimator/whatif/structure.h"
#include "estimator/whatif/whatif.h"
#include "estimator/whatif/whatif_plan.h"
#include "tests/check.h"
#include "common/banned.h"

static const char trace[] = "data/calibration/torch-steps/h100-sxm/gpt-h1024-s1024-b8.pt.trace.json.gz";
/* its row of data/calibration/torch-steps/h100-sxm.csv, as
 * tests/whatif_steps.py describes it */
static const char config[] =
    "{\"tp\":1,\"pp\":1,\"dp\":1,\"vocab\":50304,\"dtype\":\"bf16\",\"mlp\":\"gelu\",\"framework\":\"pytorch\","
    "\"master_weights\":\"bf16\",\"tied_embeddings\":true,\"bias\":false,\"global_batch\":8,\"layers\":8,\"hidden\":1024,"
    "\"heads\":16,\"kv_heads\":16,\"ffn\":4096,\"seq\":1024,\"micro_batch\":8}";

TEST(whatif_plan_recovers_the_structure_and_replays_the_base_once)
{
    struct est_model_options o;
    struct est_traced_model *m = NULL;
    struct job_config cfg;
    struct est_plan_request req;
    struct whatif_planner w;
    struct est_plan_evaluator ev;
    struct est_plan plan;
    struct sc_error err;
    const char *paths[] = {trace};
    est_model_options_default(&o);
    o.keep = EST_KEEP_NOTES;
    REQUIRE(est_model_open(paths, 1, &o, NULL, NULL, &m, &err) == SC_OK);
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
    /* each row is the what-if of its configuration, run on its own (which
     * recovers and replays again) */
    for (size_t i = 0; i < plan.n_rows; i++) {
        struct job_config set;
        struct whatif_result res;
        whatif_plan_set(&w, &plan.rows[i].spec, &set);
        REQUIRE(est_model_whatif(m, &cfg, &set, &res, &err) == SC_OK);
        CHECK(fabs(res.step_ms - plan.rows[i].estimate.step_ms) <= 1e-9 * res.step_ms);
        whatif_release(&res);
    }
    CHECK_EQ_INT(whatif_job_structure_recoveries() - recovered, 1 + plan.n_rows);
    plan_release(&plan);
    whatif_plan_release(&w);
    est_model_close(m);
}
