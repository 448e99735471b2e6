/* estimator/whatif/whatif_price.h: what the what-if's transforms (whatif.h)
 * ask of the kernel and collective models: a GEMM's time on the traced
 * GPU against the target's, a layer's GEMMs, attention and MLP activation
 * under a job description's dimensions, how a collective's group lays out
 * under a configuration, and the per-GPU weights a configuration holds.
 *
 * Kept apart from the transforms so that pricing depends on a job
 * description and the two GPUs' cost parameters alone (struct
 * whatif_price), never on the state of one what-if: the transforms, the
 * host's accounting (whatif_host.h) and the pipeline transform all ask
 * the same questions the same way. */
#ifndef ESTIMATOR_WHATIF_PRICE_H
#define ESTIMATOR_WHATIF_PRICE_H

#include <stdint.h>

#include "estimator/costs/collective_model.h"
#include "estimator/costs/hardware.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/spec/job_config.h"

/* The traced GPU (hw0) and the target (hw1), each with the estimator's
 * kernel-level defaults (a GPU with measured GEMM ceilings keeps them) and
 * its collective parameters. */
struct whatif_price {
    const struct hw_profile *hw0, *hw1;
    struct kernel_params kp0, kp1;
    struct coll_params cp0, cp1;
};

/* p for traced GPU hw0 and target hw1: kernel-level costs on both GPUs
 * (calib_costs_base without a spec: the traced job's own stack stays in
 * its measured times, calib_costs_default's fit of NeMo's runs at scale
 * being a stack's, not a kernel's) and each GPU's collective parameters. */
void whatif_price_init(struct whatif_price *p, const struct hw_profile *hw0, const struct hw_profile *hw1);

/* c's context-parallel degree (1 when not given). */
int64_t whatif_cp_of(const struct job_config *c);
/* GPUs to an NVLink domain under configuration c on GPU hw: the
 * description's gpus_per_node, else the profile's (as an estimate's). */
int whatif_node_of(const struct job_config *c, const struct hw_profile *hw);
/* How a collective of role `role` (structure.h STRUCT_ROLE_*) lays out
 * under configuration c on domains of `node` GPUs: its members and how
 * many share a domain; *kind (enum model_coll_op) becomes the kind the
 * collective model times it as. */
struct coll_group whatif_coll_layout(int role, const struct job_config *c, int node, int *kind);

/* The kernel model's ratio target / traced for a GEMM of shape s (in its
 * dtype, fp32 where a GPU lacks it); -1 when the model cannot time it. */
double whatif_gemm_ratio(const struct whatif_price *p, struct gemm_shape s);
/* Without the shape: the ratio for the square GEMM in dtype d the model
 * gives `us` on the traced GPU. */
double whatif_square_gemm_ratio(const struct whatif_price *p, double us, enum hw_dtype d);

/* Whether the description gives what re-timing a layer's shapes needs
 * (hidden and seq). */
int whatif_has_dims(const struct job_config *c);
/* Whether c's MLP is gated (SwiGLU). */
int whatif_gated(const struct job_config *c);
/* The forward GEMMs of one of c's layers on the target GPU, us; -1 when
 * the model cannot time one. */
double whatif_layer_gemms_us(const struct whatif_price *p, const struct job_config *c);
/* A token's MLP activation of c on the target GPU, forward or backward, us. */
double whatif_activation_us(const struct whatif_price *p, const struct job_config *c, int backward);
/* A layer's attention forward or backward of c on the target GPU, us: one
 * block of seq / cp, or with `ring` the whole ring of cp blocks and
 * key/value exchanges; -1 when the model cannot time it. */
double whatif_attention_us(const struct whatif_price *p, const struct job_config *c, int ring, int backward);
/* The output layer's GEMM of t on the target relative to b's; 0 when the
 * descriptions do not give its shape. */
double whatif_output_gemm_ratio(const struct whatif_price *p, const struct job_config *b, const struct job_config *t);
/* A rank's key/value width under c (its key/value heads x head dim). */
double whatif_kv_width(const struct job_config *c);
/* The ranks that share c's optimizer step (its distributed optimizer's). */
double whatif_optimizer_shards(const struct job_config *c);
/* Which of a GPU's weights: all, the dense ones, the experts', or those
 * whose gradients b's data-parallel collectives reduce (the dense ones
 * where the experts reduce theirs over a group of their own, else all). */
enum whatif_weights { WHATIF_WEIGHTS_ALL, WHATIF_WEIGHTS_DENSE, WHATIF_WEIGHTS_EXPERTS, WHATIF_WEIGHTS_DP };
/* Per-GPU weights of t relative to b's, the part named (sizes of gradient
 * collectives and optimizer work). */
double whatif_params_ratio(const struct job_config *b, const struct job_config *t, enum whatif_weights part);

#endif
