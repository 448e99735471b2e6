/* estimator/whatif/job_check.h: a job description (job_config.h) checked against
 * what its traces show, so a what-if, a plan or `stepcast inspect
 * --config` refuses a description the traced job contradicts instead of
 * answering from it (an MFU of 402% from a global batch the job never
 * ran). Each contradiction is SC_EINVAL with a message that starts with
 * the field it names after `prefix` ("" for "global_batch: ...",
 * "config." for "config.global_batch: ...").
 *
 * whatif_job_structure_recover (structure.h) checks the layers against the
 * trace's module annotations or its repeating kernel sequence and calls
 * what is here for the world size and the group sizes. */
#ifndef ESTIMATOR_JOB_CHECK_H
#define ESTIMATOR_JOB_CHECK_H

#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/job_config.h"

/* Whether c's parallelism has a process group of `size` ranks: Megatron-
 * Core's groups (tp, cp, pp, dp, dp x cp, tp x cp, tp x dp, tp x pp, the
 * world; with experts ep, etp, etp x ep and the expert data-parallel
 * group), or a pipeline send/recv pair (p2p, pp > 1). */
int whatif_job_config_has_group(const struct job_config *c, int64_t size, int p2p);

/* c's GPUs (tp x cp x pp x dp) against the trace's world size
 * (distributedInfo; <= 0: unknown, nothing checked). SC_EINVAL naming dp. */
int whatif_job_check_world_size(const struct job_config *c, int64_t world_size, const char *prefix, struct sc_error *err);

/* c's model and batch against the traced step: the model FLOPs of
 * global_batch sequences (micro_batch x dp without it) in step_ms, over
 * the peak of c's GPUs on hw in c's dtype, must be at most 1 (no job runs
 * above its GPUs' peak: the description gives more work per step than the
 * traced job did). Nothing is checked without hw, a step, or the model's
 * layers, hidden, heads and seq, or when c makes no spec (its own checks
 * refuse it elsewhere). SC_EINVAL naming global_batch (micro_batch when
 * c gives no global batch). */
int whatif_job_check_mfu(const struct job_config *c, const struct hw_profile *hw, double step_ms, const char *prefix,
                  struct sc_error *err);

#endif
