/* estimator/spec/placement.h: which transformer layers each pipeline stage holds.
 *
 * One function places a model's layers on pp x vpp virtual pipeline stages
 * the way Megatron-LM does, so the memory model and the synthesised step
 * agree on it:
 *   1. layers divisible by pp x vpp: every virtual stage holds layers/(pp*vpp);
 *   2. else, when layers + 2 divides: the embedding and the loss each count
 *      as one layer (Megatron's account-for-embedding and account-for-loss
 *      options), so the first virtual stage holds one layer fewer, the last
 *      one layer fewer, and a virtual stage may hold only the embedding;
 *   3. else every stage holds floor(layers / V) and the remainder goes to the
 *      middle stages (1 .. V-2), spread evenly, earliest first; with only two
 *      stages the first stage takes it (the last one already holds the output
 *      layer and the loss).
 * Virtual stage v runs on pipeline rank v % pp as its model chunk v / pp
 * (Megatron's interleaved layout). The embedding is on virtual stage 0, the
 * output layer and the loss on virtual stage V-1. */
#ifndef ESTIMATOR_PLACEMENT_H
#define ESTIMATOR_PLACEMENT_H

#include "common/error.h"

struct est_stage_layers {
    int first_layer; /* index of its first transformer layer */
    int layers;      /* how many consecutive transformer layers it holds */
    int embedding;   /* holds the input embedding (virtual stage 0) */
    int loss;        /* holds the output layer and the loss (the last one) */
};

/* Fill out[0 .. pp*vpp) for virtual stages in order. SC_EINVAL when a count
 * is below 1 or pp*vpp > layers + 2 (the spec rejects both before). */
int spec_place_layers(int layers, int pp, int vpp, struct est_stage_layers *out,
                     struct sc_error *err);
/* Virtual stage `stage` (0 .. pp*vpp - 1) alone, as spec_place_layers
 * places it, without the others. */
int spec_place_stage(int layers, int pp, int vpp, int stage, struct est_stage_layers *out,
                    struct sc_error *err);

#endif
