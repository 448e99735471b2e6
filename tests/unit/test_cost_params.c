/* tests/unit/test_cost_params.c: the cost parameter table
 * (estimator/costs/cost_params.def) is whole and consistent: every row
 * says its unit, meaning and source; its cited value and the range
 * `make validate` searches lie inside its physical range; the defaults of
 * every GPU, framework and precision lie inside it too; and the kernel
 * model's checks and names come from it. */
#include <string.h>

#include "estimator/calibrate/cost_set.h"
#include "estimator/costs/cost_params.h"
#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/plan/validation.h"
#include "tests/check.h"
#include "common/banned.h"

TEST(cost_params_rows_are_whole_and_in_range)
{
    for (int i = 0; i < COST_PARAM_COUNT; i++) {
        const struct cost_param_info *p = &cost_params[i];
        CHECK(p->name && *p->name && p->unit && *p->unit);
        CHECK(p->meaning && strlen(p->meaning) > 20 && p->source && strlen(p->source) > 20);
        CHECK(p->lo <= p->cited && p->cited <= p->hi);
        if (p->fit_hi > 0)
            CHECK(p->lo <= p->fit_lo && p->fit_lo < p->fit_hi && p->fit_hi <= p->hi);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(p->name, cost_params[j].name) != 0);
    }
    /* every parameter `make validate` fits has a range to search */
    for (size_t f = 0; f < est_n_fit_params; f++)
        CHECK(cost_params[est_fit_params[f].param].fit_hi > 0);
}

/* The kernel and host parameters of a cost set, each checked against its row. */
static void check_costs(const struct est_costs *c, const char *gpu)
{
    struct sc_error err;
    if (cost_kernel_params_check(&c->kernel, &err))
        sc_check_fail(__FILE__, __LINE__, "%s: %s", gpu, err.msg);
    static const struct {
        enum cost_param id;
        size_t off;
    } host[] = {{cost_param_host_op_us, offsetof(struct est_costs, host_op_us)},
                {cost_param_host_coll_us, offsetof(struct est_costs, host_coll_us)},
                {cost_param_moe_imbalance, offsetof(struct est_costs, moe_imbalance)}};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        if (cost_param_check(host[i].id, NULL, *(const double *)((const char *)c + host[i].off), &err))
            sc_check_fail(__FILE__, __LINE__, "%s: %s", gpu, err.msg);
}

TEST(cost_params_hold_every_gpus_defaults)
{
    static const enum hw_dtype dtypes[] = {HW_FP32, HW_BF16, HW_FP8, HW_FP4};
    for (size_t g = 0; g < cost_hw_profile_count(); g++) {
        const struct hw_profile *hw = cost_hw_profile_at(g);
        struct est_costs c;
        calib_costs_cited(hw, NULL, &c);
        check_costs(&c, hw->id);
        calib_costs_base(hw, NULL, &c);
        check_costs(&c, hw->id);
        for (int fw = 0; fw < 2; fw++)
            for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
                struct est_spec spec;
                memset(&spec, 0, sizeof spec);
                spec.options.framework = fw ? EST_FRAMEWORK_PYTORCH : EST_FRAMEWORK_MEGATRON;
                spec.options.dtype = dtypes[d];
                calib_costs_default(hw, &spec, &c);
                check_costs(&c, hw->id);
            }
    }
}

TEST(cost_params_name_and_bound_the_kernel_model)
{
    struct kernel_params p;
    struct sc_error err;
    char buf[64];
    cost_kernel_params_default(&p);
    CHECK_EQ_INT(cost_kernel_params_check(&p, &err), SC_OK);
    /* each parameter by its table name, its default the cited value, and
     * one just past its range refused naming it */
    for (size_t i = 0; i < cost_kernel_param_count(); i++) {
        const char *name = cost_kernel_param_name(i, buf, sizeof buf);
        const struct cost_param_info *row = NULL;
        for (int r = 0; r < COST_PARAM_COUNT; r++)
            if (!strcmp(cost_params[r].name, name) ||
                (cost_params[r].group == COST_GROUP_KERNEL_DTYPE && !strncmp(name, "gemm_ceiling_scale_", 19)))
                row = &cost_params[r];
        CHECK(row != NULL);
        if (!row)
            continue;
        CHECK_NEAR(cost_kernel_param_get(&p, i), row->cited, 0);
        struct kernel_params bad = p;
        *cost_kernel_param_at(&bad, i) = row->hi * 1.01 + 1;
        CHECK_EQ_INT(cost_kernel_params_check(&bad, &err), SC_EINVAL);
        CHECK_CONTAINS(err.msg, name);
    }
}
