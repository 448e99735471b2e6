/* estimator/synth/estimate.h: the estimate of a spec: its synthesised step
 * replayed, with throughput, utilisation, memory, cost and energy
 * (DESIGN.md §5; the document `stepcast estimate --json` prints). */
#ifndef ESTIMATOR_ESTIMATE_H
#define ESTIMATOR_ESTIMATE_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/synth/synth.h"
#include "model/replay.h"

struct est_stage_estimate {
    int stage;
    double step_ms;   /* this pipeline rank's replayed step */
    double memory_gb; /* its peak memory */
    /* what the peak holds, GB: the model states and the activations
     * (memory.h; under framework pytorch the peak is not their sum) */
    double weights_gb, gradients_gb, optimizer_gb, activations_gb;
    double bubble_ms; /* its compute stream's idle time inside the step */
};

struct est_estimate {
    double step_ms;      /* the slowest pipeline rank's step */
    double tokens_per_s; /* whole job */
    double mfu, hfu;     /* 0-1, over the dtype's dense peak (flops.h: PaLM's, and executed) */
    /* FLOPs the step's GEMM and attention tasks execute, whole job (the
     * synthesised graph's, summed over its tasks; a step timed otherwise:
     * the hardware-FLOP formula's), and their rate over the dtype's dense
     * peak: at most the GPU's matmul ceiling's share of it */
    double executed_flops, executed_flops_util;
    double memory_gb_per_gpu;
    double memory_usable_gb; /* the GPU's memory less the reserve: what fits */
    const char *memory_attention; /* "flash" or "unfused": what the memory figure keeps of attention */
    const char *recompute_chosen; /* the recomputation estimated: options.recompute's, or what "auto" chose */
    int64_t recompute_layers_chosen; /* with "full": the layers of each model chunk recomputed; 0 = all */
    int fits;
    char fits_reason[256]; /* why it does not fit, or "" */
    struct model_breakdown breakdown; /* of the slowest pipeline rank, ns */
    struct est_stage_estimate *stages; /* one per pipeline rank, malloc'd */
    size_t n_stages;
    double gpus;
    double gpu_hours_per_m_tokens;
    double energy_kwh_per_m_tokens; /* at board power: an upper bound */
    double cost_usd_per_m_tokens;   /* < 0: no price given */
    double time_to_train_days;      /* < 0: no train_tokens given */
    size_t tasks;                   /* in the synthesised graph */
};

/* Estimate spec s (checked by spec_load) with costs c at a level of
 * detail. Release with synth_estimate_release(). */
int synth_estimate(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                 enum est_detail detail, struct est_estimate *out, struct sc_error *err);
void synth_estimate_release(struct est_estimate *e);

/* The FLOPs the whole job executes in one step of spec s's synthesised
 * graph g: its tasks' summed (each pipeline rank once), times the tp x cp
 * x dp ranks each stands for. */
double synth_graph_flops(const struct model_graph *g, const struct est_spec *s);

/* Whether the estimate of spec s at detail d fits `budget` bytes by its
 * graph's predicted size (synth_size), known before any of it is
 * built: SC_ELIMIT naming the prediction, `budget_name` (what the budget
 * is) and what to change when it does not. */
int synth_estimate_admit(const struct est_spec *s, const struct hw_profile *hw, const struct est_costs *c,
                       enum est_detail d, double budget, const char *budget_name, struct sc_error *err);

/* The MFU of spec s on hw at a step time: its model FLOPs per second over
 * the dtype's dense peak of its GPUs (0 without a peak or a time). */
double synth_mfu(const struct est_spec *s, const struct hw_profile *hw, double step_ms);

/* What `gpus` GPUs of profile hw (NULL: unknown) cost for `seconds`:
 * GPU-hours, kWh at the GPU's board power (an upper bound: a GPU that
 * waits draws less; -1 without a profile) and dollars at gpu_hour_usd
 * (< 0 not given: cost -1). Estimates and traced runs (and their
 * what-ifs) price their steps with it. */
struct est_cost {
    double gpu_hours, energy_kwh, cost_usd;
};
void synth_cost_of(double gpus, double seconds, const struct hw_profile *hw, double gpu_hour_usd, struct est_cost *out);

/* The figures that follow from out->step_ms and the memory of spec s
 * (mem, spec_memory_estimate's): tokens/s, MFU and HFU, memory and whether
 * it fits, GPUs, GPU-hours, energy and cost per million tokens, time to
 * train. For an estimate, and for a step timed otherwise (a what-if).
 * SC_ENUMERIC when they are not physical, the estimate refused rather than
 * answered: a step time or MFU that is not finite, a step time not above
 * 0, an MFU outside (0, 1] (more model FLOPs a second than the GPUs' peak). */
struct est_memory;
int synth_estimate_derive(const struct est_spec *s, const struct hw_profile *hw, const struct est_memory *mem,
                        struct est_estimate *out, struct sc_error *err);

#endif
