/* estimator/whatif/whatif_result.h: what a what-if (whatif.h) answers, and
 * how much of it was measured and how much modelled: the step, its split
 * between the traced job's measured durations and the models that re-timed
 * them (on the replayed critical paths), and the share of each kind of
 * work a model gave (provenance).
 *
 * Apart from the transforms so that the answer's accounting depends only
 * on the replayed copy and, per source task, the duration the transforms
 * gave it and the part a model gave, passed as arguments. */
#ifndef ESTIMATOR_WHATIF_RESULT_H
#define ESTIMATOR_WHATIF_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"

struct model_graph;
struct model_replay;
struct model_task;

enum whatif_model { WHATIF_KERNEL_MODEL, WHATIF_COLLECTIVE_MODEL, WHATIF_MODEL_COUNT };

struct whatif_model_use {
    const char *name;  /* "kernel_model", "collective_model" */
    char why[512];     /* what it was used for */
    size_t tasks;      /* tasks it re-timed */
    double ms;         /* of the predicted step (mean over steps) */
};

struct whatif_result {
    struct model_graph *graph;   /* the transformed copy (owned) */
    struct model_replay *replay; /* its replay (owned; borrows graph) */
    struct job_structure structure;
    struct job_config base, target; /* gpu: the traced and the target profile ids */
    double base_step_ms, step_ms;   /* mean over the modelled steps that are not partial */
    double from_measured_ms, from_models_ms;
    /* of step_ms, the GPUs waiting on the traced job's host work, which
     * the what-if keeps at its measured durations (an eager step's
     * dispatch): where a change shrinks the GPU's work below it, the step
     * is host-bound where a spec's estimate would not be */
    double host_exposed_ms;
    /* taken off the traced host per step: the profiler's cost per operator
     * it recorded (whatif_host.c PROFILER_SHARE; 0 without such records). A
     * no-op of a profiled trace comes out this much (or, where the host
     * is not on the critical path, less) below its replay */
    double profiler_ms;
    /* the step with that cost kept, as the target would run under the
     * profiler: what to set beside another profiled trace's step (0 when
     * profiler_ms is, or for whatif_run_with's lean callers) */
    double profiled_step_ms;
    struct whatif_model_use models[WHATIF_MODEL_COUNT];
    /* Of the transformed graph's work, the share of its time a model gave
     * (0: all carried from traced durations, 1: all re-priced by a model),
     * by kind: GPU compute (kernels, copies, sets), communication, host
     * work. The breakdown's parts take them: compute alone the compute
     * share, communication exposed the communication share, overlap the
     * two together (weighted by their time), host the host share. */
    double modelled_share_compute, modelled_share_comm, modelled_share_overlap, modelled_share_host;
    double collective_transfer_ms, collective_wait_ms; /* per step, target */
    int sizes_unknown;            /* collectives without sizes were re-timed by ratio */
    int has_memory;
    double memory_gb_per_gpu;
    int fits;
};

/* Frees r's copy, its replay and its structure (r may be NULL). */
void whatif_release(struct whatif_result *r);

/* The mean of r's steps the answer averages (the complete steps, or every
 * step when none is complete), ms; *steps (when not NULL) gets how many,
 * *host_ms (when not NULL) the mean time they wait on the host (the
 * replay's breakdown). */
double whatif_mean_step_ms(const struct model_replay *r, size_t *steps, double *host_ms);

/* The time of each kind of work in a transformed graph, and how much of
 * it a model gave (whatif_result.modelled_share_*). */
struct whatif_provenance {
    double compute, compute_model, comm, comm_model, host, host_model;
};

/* Task t of the transformed graph, `modelled` (0 to 1) of its time a
 * model's. */
void whatif_provenance_add(struct whatif_provenance *p, const struct model_task *t, double modelled);
/* out's modelled_share_* from p. */
void whatif_provenance_set(const struct whatif_provenance *p, struct whatif_result *out);

/* out's provenance, models[].ms, from_models_ms and from_measured_ms for
 * its replayed copy (out->graph, out->replay) of source graph g: map gives
 * each source task's task in the copy (the others were inserted, the
 * collective model's); per source task, dur is its duration in the copy
 * (ns), model_ns the part of it a model gave and model that model (enum
 * whatif_model). The replayed steps' critical paths are split by the task
 * each segment belongs to, over the steps whatif_mean_step_ms averages. */
int whatif_result_attribute(struct whatif_result *out, const struct model_graph *g, const uint32_t *map,
                            const double *dur, const double *model_ns, const uint8_t *model, struct sc_error *err);

#endif
