/* tests/unit/test_cost.c: synth_cost_of (estimator/synth/estimate.h), what a
 * step of N GPUs costs, and its use in a what-if document: the traced
 * step and the what-if's priced per step and per million tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "estimator/synth/estimate.h"
#include "estimator/costs/hardware.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

TEST(cost_of_gpus_for_a_time)
{
    const struct hw_profile *hw = cost_hw_profile_find("h100-sxm");
    struct est_cost c;
    REQUIRE(hw != NULL);
    synth_cost_of(8, 3600, hw, 2.5, &c); /* 8 GPUs for an hour */
    CHECK_NEAR(c.gpu_hours, 8, 1e-12);
    CHECK_NEAR(c.energy_kwh, 8 * hw->board_power_w / 1000, 1e-12);
    CHECK_NEAR(c.cost_usd, 20, 1e-12);
    synth_cost_of(8, 3600, NULL, -1, &c);
    CHECK(c.energy_kwh < 0 && c.cost_usd < 0);
}

/* stepcast whatif --json on the sample job: the cost of the traced step
 * and of the what-if's, each at its GPUs, board power and the price. */
TEST(cost_of_traced_and_whatif_steps)
{
    static const char cfg[] = "{\"tp\":1,\"pp\":1,\"dp\":4,\"layers\":8,\"global_batch\":32,\"seq\":2048}";
    char config[4096], bin[4096], dir[] = "data/sample"; /* the tests run in the repository's root */
    snprintf(bin, sizeof bin, "%s", th_build_path("stepcast"));
    snprintf(config, sizeof config, "%s", th_write_file("cost-config.json", cfg, sizeof cfg - 1));
    char r0[4200], r1[4200], r2[4200], r3[4200];
    snprintf(r0, sizeof r0, "%s/rank0.json.gz", dir);
    snprintf(r1, sizeof r1, "%s/rank1.json.gz", dir);
    snprintf(r2, sizeof r2, "%s/rank2.json.gz", dir);
    snprintf(r3, sizeof r3, "%s/rank3.json.gz", dir);
    char *argv[] = {bin, "whatif", "--json", "--gpu-hour-usd", "2", "--config", config, "--set", "dp=16,gpu=h100-sxm",
                    r0, r1, r2, r3, NULL};
    char *out = NULL;
    CHECK_EQ_INT(th_run(argv, &out, NULL), 0);
    json_t *d = json_loads(out ? out : "", 0, NULL);
    free(out);
    REQUIRE(d != NULL);
    const json_t *cost = json_object_get(d, "cost");
    static const char *const sides[] = {"base", "target"};
    for (int k = 0; k < 2; k++) {
        const json_t *side = json_object_get(cost, sides[k]), *step = json_object_get(side, "per_step"),
                     *per_m = json_object_get(side, "per_m_tokens");
        double ms = json_number_value(json_object_get(d, k ? "step_ms" : "base_step_ms")),
               gpus = (double)json_integer_value(json_object_get(side, "gpus"));
        const struct hw_profile *hw = cost_hw_profile_find(json_string_value(json_object_get(side, "gpu")));
        REQUIRE(hw != NULL);
        CHECK_EQ_INT((long long)gpus, k ? 16 : 4);
        double hours = gpus * ms / 1e3 / 3600;
        CHECK_NEAR(json_number_value(json_object_get(step, "gpu_hours")), hours, hours * 1e-6);
        CHECK_NEAR(json_number_value(json_object_get(step, "energy_kwh")), hours * hw->board_power_w / 1000,
                   hours * 1e-3);
        CHECK_NEAR(json_number_value(json_object_get(step, "cost_usd")), hours * 2, hours * 1e-5);
        const json_t *side_cfg = json_object_get(d, sides[k]); /* its global_batch x seq */
        double tokens = (double)json_integer_value(json_object_get(side_cfg, "global_batch")) *
                        (double)json_integer_value(json_object_get(side_cfg, "seq"));
        CHECK(tokens >= 32.0 * 2048);
        CHECK_NEAR(json_number_value(json_object_get(per_m, "gpu_hours")), hours * 1e6 / tokens, hours * 1e6 / tokens * 1e-6);
    }
    CHECK_CONTAINS(json_string_value(json_object_get(cost, "energy")), "upper bound");
    json_decref(d);
}
