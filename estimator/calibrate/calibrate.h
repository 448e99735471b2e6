/* estimator/calibrate/calibrate.h: cluster profiles from what a cluster measured:
 * nccl-tests outputs and GEMM microbenchmark tables, or the GEMMs,
 * memory-bound ops and sized collectives of a job's traces (README,
 * "calibrate").
 *
 * The command line (`stepcast calibrate`) and the daemon (POST
 * /v1/calibrations/nccl-tests and /gemms, POST /v1/models/{id}/calibration) both make
 * their profiles here, so both give the same document for the same input.
 * Each step writes what it fitted and how well to a report stream, so the
 * user sees how well the model describes the measurements before using
 * the profile. */
#ifndef ESTIMATOR_CALIBRATE_H
#define ESTIMATOR_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"
#include "estimator/calibrate/cluster_profile.h"
#include "estimator/costs/hardware.h"
#include "estimator/calibrate/nccl_tests.h"

struct model_job;
struct model_trace;

/* What the user says of a run where its file does not say it. */
struct calib_opts {
    const char *gpu;          /* hardware profile id, or NULL: from the device name */
    enum model_coll_op kind;  /* MODEL_COLL_UNKNOWN: from the file */
    int ranks, nodes;         /* 0: from the file */
};

/* Apply the options to a parsed run (kind, group size, nodes). */
void calib_run_apply(struct nct_run *run, const struct calib_opts *o);

/* Whether two device names are the same GPU (old nccl-tests leave out the
 * "NVIDIA " prefix). */
int calib_same_device(const char *a, const char *b);

/* The GPU's profile: `id`, else the one listing the measured device.
 * SC_EINVAL saying which to name when neither tells. */
int calib_resolve_gpu(const char *id, const char *device, const struct hw_profile **hw,
                      struct sc_error *err);

/* Fit one run (calib_coll_fit_run) into *m, and check the model with the GPU's
 * defaults on it; both are reported. */
int calib_measure(const struct nct_run *run, const char *source, const struct hw_profile *hw,
                  struct coll_measurement *m, FILE *report, struct sc_error *err);

/* A calibrated model whose median error on its own measurements is above
 * this (percent) and no better than the defaults' is flagged. */
#define CALIB_USELESS_PCT 20.0

/* The cluster profile of the measurements (and of the kernel parameters
 * when `kernel` is non-NULL): the collective model set from them, reported
 * with its error on each run (runs[i], m[i]'s run), and the document (JSON
 * text, from malloc) in *doc. What the fit got wrong is flagged in the
 * report ("flag: ...") and the document's "flags": a busbw above the
 * GPU's link, a model no better than the defaults on its own runs or
 * GEMMs (CALIB_USELESS_PCT). */
int calib_profile(const struct hw_profile *hw, const char *device, const char *source,
                  struct coll_measurement *m, const struct nct_run *const *runs, size_t n,
                  const struct cluster_profile *kernel, FILE *report, char **doc, struct sc_error *err);

/* Measurement files read whole: texts[0..n), names their file names (for
 * messages, and an nccl-tests output's kind when it does not say it). */
struct calib_files {
    const char *const *texts;
    const size_t *lens;
    const char *const *names;
    size_t n;
};

/* nccl-tests outputs (`nccl`) and GEMM microbenchmark tables (`gemms`,
 * gemm_table.h), either may be empty but not both, all of one GPU type,
 * into a profile document: the collective model fitted to the outputs,
 * the kernel model's fixed cost and GEMM ceiling to the tables (with the
 * model's error per dtype before and after). `source` names what it came
 * from: "nccl-tests", "gemm-bench" or "nccl-tests+gemm-bench". */
int calib_files(const struct calib_files *nccl, const struct calib_files *gemms, const struct calib_opts *o,
                FILE *report, char **doc, struct sc_error *err);

/* A job's traces into a profile document: the GEMMs with shapes fit the
 * kernel model's fixed cost and GEMM ceiling, the memory-bound ops its HBM
 * fraction, the sized collectives the collective model. */
int calib_traces(const struct model_job *job, const char *gpu, FILE *report, char **doc,
                 struct sc_error *err);

/* The same a trace at a time, in rank order, so a job's traces need not
 * all be in memory: calib_acc_add takes what calibration needs of each
 * (SC_EINVAL for a shed trace: model_trace_shed), calib_acc_finish fits
 * and writes the document as calib_traces does. Finishing reads the
 * samples only: the same samples may be finished again, for another GPU,
 * and by several threads at once. */
struct calib_acc;
struct calib_acc *calib_acc_new(void); /* NULL when out of memory */
int calib_acc_add(struct calib_acc *a, const struct model_trace *t, struct sc_error *err);
int calib_acc_finish(const struct calib_acc *a, const char *gpu, FILE *report, char **doc, struct sc_error *err);
/* Bytes a holds (for the caches that bound memory). */
size_t calib_acc_bytes(const struct calib_acc *a);
void calib_acc_free(struct calib_acc *a); /* NULL-safe */

#endif
