/* api/megatron_args.h: the Megatron-LM (megatron-core) command-line
 * arguments that run one configuration of a plan: what `stepcast plan
 * --megatron` prints for each row and what the plan document carries for
 * its top row ("megatron_args"), so a planner copies them as they are. */
#ifndef API_MEGATRON_ARGS_H
#define API_MEGATRON_ARGS_H

#include <jansson.h>

#include "estimator/costs/hardware.h"
#include "estimator/spec/spec.h"

/* The arguments of model m trained in dtype with a row's parallel and
 * options objects (every value written out, as a plan row has them), on
 * one line: a malloc'd string, or NULL when out of memory. */
char *api_megatron_args(const struct est_model *m, enum hw_dtype dtype, const json_t *parallel,
                        const json_t *options);

#endif
