/* estimator/plan/validation.h: measured step times of real runs, and how well
 * estimates match them (DESIGN.md §5).
 *
 * The measurements come as CSV with the columns of
 * ../shared/validation/vtrain_single_node_a100.csv: GPUs, global batch,
 * micro batch, hidden size, attention heads, layers, sequence length,
 * tensor, data and pipeline parallelism, iteration time (ms); a first line
 * starting with '#' (or a UTF-8 byte-order mark and '#') is the header.
 * Each row becomes a spec: a GPT model (4 x hidden FFN, plain MLP, GPT-2's
 * vocabulary), Megatron's 1F1B schedule, the dtype and attention the caller
 * names, on one NVLink domain of the given GPU. */
#ifndef ESTIMATOR_VALIDATION_H
#define ESTIMATOR_VALIDATION_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/cost_params.h"
#include "estimator/synth/synth.h"

struct est_measured {
    int64_t gpus, global_batch, micro_batch, hidden, heads, layers, seq, tp, dp, pp;
    double step_ms;
    size_t line; /* in the file, for messages */
};

/* Parse CSV text; *rows is malloc'd. SC_EPARSE naming the line and column
 * for anything that is not a row of eleven positive numbers, or GPUs not
 * tp x dp x pp; SC_ELIMIT past 1,000,000 rows. */
int plan_measured_parse(const char *text, size_t len, struct est_measured **rows, size_t *n,
                       struct sc_error *err);

/* The spec of a measured run on GPU `gpu` in `dtype` ("fp16", ...) with
 * `attention` ("flash" or "unfused"), as the set's runs were made: full
 * activation recomputation and the gradients reduced after the backward
 * pass, not in overlapped buckets (`use_checkpoint` true and
 * `use_gradient_bucket` false in every config file of config/validation/single in
 * VIA-Research/vTrain@f8dda84, the commit the set comes from). */
int plan_measured_spec(const struct est_measured *m, const char *gpu, const char *dtype,
                      const char *attention, struct est_spec *out, const struct hw_profile **hw,
                      struct sc_error *err);

/* The parameters a validation may fit: hardware-level, each a field of
 * est_costs; its name and the range searched are its row of
 * cost_params.def (cost_params[param].fit_lo, fit_hi). */
struct est_fit_param {
    enum cost_param param;
    size_t offset;   /* into struct est_costs */
};
extern const struct est_fit_param est_fit_params[];
extern const size_t est_n_fit_params;
/* The value of est_fit_params[i] in c. */
double plan_fit_param(const struct est_costs *c, size_t i);

struct est_score {
    double mape;      /* mean absolute percentage error, % */
    double bias;      /* mean signed error, % */
    double max_ape;
    size_t n;
};

struct est_memo;

/* Measured runs to estimate: each one's spec and GPU profile, measured
 * step time and line in its file (for messages). same (may be NULL): the
 * first run with a spec identical to each run's, whose estimate it
 * shares (a configuration measured again is estimated once). memo (may
 * be NULL): the estimates already made, by run and costs, to reuse. */
struct est_runs {
    size_t n;
    const struct est_spec *specs;
    const struct hw_profile *const *hws;
    const double *step_ms;
    const size_t *lines;
    const size_t *same;
    struct est_memo *memo;
};

/* A memo of n runs' step estimates by costs, for est_runs.memo: fits from
 * one start on runs that overlap (the folds of a leave-one-out) evaluate
 * the same first simplex, and a fit scores its best point, estimated
 * already. Threads may share it. NULL when out of memory. */
struct est_memo *plan_memo_new(size_t n);
void plan_memo_free(struct est_memo *m);
/* The estimates memo m has spared. */
size_t plan_memo_hits(struct est_memo *m);

/* The score of estimates pred (ms) against the runs selected (NULL: all). */
void plan_score_of(const struct est_runs *r, const unsigned char *select, const double *pred,
                  struct est_score *out);

/* Estimate every run selected (select NULL: all) with costs c and score
 * them. pred (may be NULL) gets each selected run's estimate in ms. */
int plan_validate(const struct est_runs *r, const unsigned char *select, const struct est_costs *c,
                 enum est_detail detail, double *pred, struct est_score *out, struct sc_error *err);

/* The iterations of plan_fit's converging run that `make validate`'s A100
 * set takes. */
#define EST_FIT_ITERS 120

/* Every parameter of est_fit_params, as plan_fit's `params` mask (bit i:
 * est_fit_params[i]). */
#define EST_FIT_ALL ((1u << 4) - 1)

/* Fit the parameters of est_fit_params that `params` marks (starting from
 * *c; the others stay as *c has them) to the selected runs by minimising
 * their MAPE with GSL's Nelder-Mead simplex; *c gets the fit. SC_EINVAL
 * for an empty mask. starts 1: one run of at most `iters`
 * iterations from *c. starts k > 1: 40 iterations from *c and from the
 * points i/k of every parameter's range (i = 1 .. k-1), then `iters` from
 * the best of them (the MAPE has more than one basin: BENCHMARKS.md,
 * "Estimator validation"). *evals (may be NULL) gets the estimates of the
 * selected runs' set it made. */
int plan_fit(const struct est_runs *r, const unsigned char *select, struct est_costs *c, unsigned params,
            int starts, int iters, enum est_detail detail, struct est_score *out, size_t *evals, struct sc_error *err);

#endif
