/* estimator/synth/synth_trace.h: a synthesised step (synth.h), as replayed,
 * written as one Kineto trace (PyTorch profiler JSON) per pipeline rank,
 * so that the traces re-ingest through the ordinary reader and replay to
 * the same step time (README "stepcast synth").
 *
 * Each rank's file holds what the profiler would have recorded of the
 * replayed timeline: one ProfilerStep#1 over the step; on the CPU thread a
 * cudaLaunchKernel per GPU task (its correlation id linking it to the
 * kernel), ending when the task may start at the earliest; cudaEventRecord
 * after the launch of work that another stream waits for and
 * cudaStreamWaitEvent before the launch of the waiting work, each with its
 * cuda_sync record as Kineto writes them; cudaStreamSynchronize or
 * cudaDeviceSynchronize (with its cuda_sync record) where the host waits;
 * python_function spans named as PyTorch names module calls ("nn.Module:
 * GPTModel_0", "nn.Module: TransformerLayer_3"); GPU kernels on their
 * streams at their replayed start and end, communication kernels under
 * NCCL kernel names with the collective's arguments (name, message sizes,
 * dtype, group size, process group and sequence number; a pipeline
 * transfer's two sides share a two-rank process group and its sequence
 * number, so that the files replayed together reconnect the stages). The
 * document says it is synthetic ("stepcast_synthetic": true) and carries
 * distributedInfo (the rank of the stage's first GPU in Megatron's order,
 * the job's world size) and deviceProperties naming the GPU. */
#ifndef ESTIMATOR_SYNTH_TRACE_H
#define ESTIMATOR_SYNTH_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"

struct model_graph;

/* The global rank of graph rank `rank` (a pipeline stage) of spec s. */
int64_t synth_trace_rank(const struct est_spec *s, const struct model_graph *g, uint16_t rank);

/* Write graph rank `rank` of g, the step of spec s synthesised at `detail`
 * and replayed into start[] and end[] (ns, one per task), as a Kineto
 * trace to f. SC_EIO when writing fails, SC_ENOMEM. */
int synth_trace_write(const struct est_spec *s, const struct hw_profile *hw, enum est_detail detail,
                          const struct model_graph *g, const int64_t *start, const int64_t *end,
                          uint16_t rank, FILE *f, struct sc_error *err);

#endif
