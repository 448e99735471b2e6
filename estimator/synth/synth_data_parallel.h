/* estimator/synth/synth_data_parallel.h: the data-parallel gradient reduction
 * of the synthesised step, as other estimators need it
 * (synth_data_parallel.c). */
#ifndef ESTIMATOR_SYNTH_DATA_PARALLEL_H
#define ESTIMATOR_SYNTH_DATA_PARALLEL_H

#include <stdint.h>

#include "estimator/spec/placement.h"
#include "estimator/spec/spec.h"

/* The data-parallel gradient reduction the synthesised step runs, for a
 * what-if that adds it to a traced one (whatif.h): Megatron-core's DDP
 * bucket (at least 40 M parameters, and 1 M per data-parallel rank:
 * distributed/param_and_grad_buffer.py), the bytes of a gradient as the
 * collectives reduce it, and transformer layer i's parameters on one
 * rank, dense and expert. */
double synth_grad_bucket_params(const struct est_spec *s);
double synth_grad_bytes(const struct est_spec *s);
void synth_layer_rank_params(const struct est_spec *s, int64_t i, double *dense, double *experts);
/* The embedding's and the output layer's parameters on one rank of
 * virtual stage st (the output layer's own unless tied to the embedding
 * on the same stage, and the final norm with it). */
void synth_edge_params(const struct est_spec *s, const struct est_stage_layers *st, double *embedding,
                       double *head);

#endif
