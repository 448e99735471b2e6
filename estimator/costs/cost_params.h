/* estimator/costs/cost_params.h: the table of the estimator's cost
 * parameters (cost_params.def): for each its cited value, range, unit,
 * meaning and source, so that code, checks and docs read one list. */
#ifndef ESTIMATOR_COST_PARAMS_H
#define ESTIMATOR_COST_PARAMS_H

#include "common/error.h"

enum cost_param {
#define COST_PARAM(group, name, ...) cost_param_##name,
#include "estimator/costs/cost_params.def"
#undef COST_PARAM
    COST_PARAM_COUNT
};

enum cost_param_group { COST_GROUP_KERNEL, COST_GROUP_KERNEL_DTYPE, COST_GROUP_COLL, COST_GROUP_HOST };

struct cost_param_info {
    enum cost_param_group group;
    const char *name, *unit;
    double cited;        /* the cited source's value */
    double lo, hi;       /* the physically sensible range */
    double fit_lo, fit_hi; /* the range `make validate` searches; 0 0: never fitted */
    const char *meaning, *source;
};

extern const struct cost_param_info cost_params[COST_PARAM_COUNT];

/* The cited value of a parameter. */
double cost_param_cited(enum cost_param p);

/* "kernel", "kernel", "collective", "host": the group's word in messages
 * and docs. */
const char *cost_param_group_name(enum cost_param_group g);

/* Whether v lies in the parameter's range. */
int cost_param_in_range(enum cost_param p, double v);

/* SC_EINVAL naming the parameter (as `shown`, e.g. a per-dtype name; NULL:
 * its own) when v is outside its range. */
int cost_param_check(enum cost_param p, const char *shown, double v, struct sc_error *err);

#endif
