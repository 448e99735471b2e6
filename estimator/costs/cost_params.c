/* estimator/costs/cost_params.c: the cost parameter table expanded from
 * cost_params.def (cost_params.h). */
#include "estimator/costs/cost_params.h"

#include "common/banned.h"

const struct cost_param_info cost_params[COST_PARAM_COUNT] = {
/* a per-dtype row is named as cluster profiles name its values */
#define COST_NAME_KERNEL(name) #name
#define COST_NAME_KERNEL_DTYPE(name) "gemm_ceiling_scale_<dtype>"
#define COST_NAME_COLL(name) #name
#define COST_NAME_HOST(name) #name
#define COST_PARAM(group, name, unit, cited, lo, hi, fit_lo, fit_hi, meaning, source)                           \
    [cost_param_##name] = {COST_GROUP_##group, COST_NAME_##group(name), unit, cited, lo, hi, fit_lo, fit_hi,    \
                           meaning, source},
#include "estimator/costs/cost_params.def"
#undef COST_PARAM
};

double cost_param_cited(enum cost_param p)
{
    return cost_params[p].cited;
}

const char *cost_param_group_name(enum cost_param_group g)
{
    return g == COST_GROUP_COLL ? "collective" : g == COST_GROUP_HOST ? "host" : "kernel";
}

int cost_param_in_range(enum cost_param p, double v)
{
    return v >= cost_params[p].lo && v <= cost_params[p].hi;
}

int cost_param_check(enum cost_param p, const char *shown, double v, struct sc_error *err)
{
    const struct cost_param_info *c = &cost_params[p];
    if (cost_param_in_range(p, v))
        return SC_OK;
    return sc_error_set(err, SC_EINVAL, "%s parameter %s = %g: must be in [%g, %g]", cost_param_group_name(c->group),
                        shown ? shown : c->name, v, c->lo, c->hi);
}
