/* estimator/plan/bands.h: how far the estimator's step times have been from
 * measured ones, by region, and what that says of a new estimate.
 *
 * A region is a GPU (its profile id), a model kind (dense or MoE) and a
 * kind of data-parallel sharding: none (ZeRO stage 0), the distributed
 * optimizer (stages 1 and 2: the optimizer state, and the gradients,
 * sharded) or fully sharded (stage 3, FSDP: the weights too). The band of
 * a region is what validations of runs in it measured: how many rows, the
 * quantiles of the signed error estimate / measured - 1 (below 0: the
 * estimator was optimistic there), the best measured MFU per dtype, and
 * the largest GPU count among them.
 *
 * The bands compiled in come from data/calibration/bands.json (its README
 * says what produced each region); the daemon merges its ledger's
 * validations into them (api/ledger.h, ledger_bands_merge). The planner
 * (plan.h) reads them to rank at a risk and to mark what lies beyond them.
 *
 * The file: {"format":"stepcast-bands","version":1,"regions":[region...]},
 * each region {"gpu":ID,"model":"dense"|"moe","sharding":"none"|
 * "distributed_optimizer"|"fsdp","rows":N,"error":{"p05":..,"p10":..,
 * "p25":..,"p50":..,"p75":..,"p90":..,"p95":..},"best_mfu":{DTYPE:MFU,..},
 * "max_gpus":N,"source":TEXT}. Parsing is strict: every key required (but
 * best_mfu may be empty), no other key, a known GPU, each region once, the
 * quantiles ascending, each from -0.99 to 100, each MFU in (0, 1]. */
#ifndef ESTIMATOR_BANDS_H
#define ESTIMATOR_BANDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/hardware.h"

struct est_spec;
struct est_estimate;

enum est_model_kind { EST_MODEL_DENSE, EST_MODEL_MOE, EST_MODEL_KIND_COUNT };
enum est_sharding { EST_SHARDING_NONE, EST_SHARDING_OPTIMIZER, EST_SHARDING_FSDP, EST_SHARDING_COUNT };
const char *plan_model_kind_name(enum est_model_kind k);   /* "dense", "moe" */
const char *plan_sharding_name(enum est_sharding s);       /* "none", "distributed_optimizer", "fsdp" */

/* The quantile levels a band keeps, ascending: 0.05 to 0.95. */
#define EST_BAND_LEVELS 7
extern const double est_band_levels[EST_BAND_LEVELS];
extern const char *const est_band_level_names[EST_BAND_LEVELS]; /* "p05", ... */

struct est_band {
    char gpu[48];
    enum est_model_kind model;
    enum est_sharding sharding;
    int64_t rows;                   /* validated rows behind it */
    double error[EST_BAND_LEVELS];  /* quantiles of estimate / measured - 1 */
    double best_mfu[HW_DTYPE_COUNT]; /* 0: no validated row in that dtype */
    int64_t max_gpus;
    char source[160];               /* what produced it */
};

struct est_bands {
    struct est_band *regions; /* malloc'd */
    size_t n;
};

/* Parse a bands file; SC_EPARSE naming the region and key. Release with
 * plan_bands_release(). */
int plan_bands_parse(const char *text, size_t len, struct est_bands *out, struct sc_error *err);
/* The file again (malloc'd), parsing to the same bands; NULL when out of memory. */
char *plan_bands_text(const struct est_bands *b);
void plan_bands_release(struct est_bands *b);
/* A copy of b in out (its own regions). SC_ENOMEM. */
int plan_bands_copy(const struct est_bands *b, struct est_bands *out, struct sc_error *err);

/* The bands compiled in (data/calibration/bands.json), parsed once; never
 * NULL (empty if the file were refused: tests check it parses). */
const struct est_bands *plan_bands_builtin(void);

/* The region of spec s. */
void plan_region_of(const struct est_spec *s, enum est_model_kind *model, enum est_sharding *sharding);
/* The band of a region, or NULL. */
const struct est_band *plan_bands_find(const struct est_bands *b, const char *gpu, enum est_model_kind model,
                                      enum est_sharding sharding);

/* The q-quantile of ascending x[0..n), n > 0, interpolating linearly
 * between order statistics. */
double plan_quantile_sorted(const double *x, size_t n, double q);
/* A band from signed errors e[0..n) (sorted here), n > 0: its rows and
 * quantiles (plan_quantile_sorted); the rest of *out is left as it is. */
void plan_band_set_errors(struct est_band *out, double *e, size_t n);

/* A measured run of spec s (on hw, its step measured_ms) behind band b:
 * its MFU and GPUs raise b's best MFU in its dtype (an MFU above 1 is no
 * measurement) and largest GPU count. */
void plan_band_add_run(struct est_band *b, const struct est_spec *s, const struct hw_profile *hw, double measured_ms);

/* The error quantile at level q (interpolated between the levels kept;
 * below 0.05 the 0.05 one, above 0.95 the 0.95 one). */
double plan_band_error_at(const struct est_band *b, double q);

/* The risk levels the planner takes: 0.5 (the median) to 1. */
#define EST_RISK_DEFAULT 0.5
/* SC_EINVAL naming `field` unless p is in [0.5, 1]. */
int plan_risk_check(double p, const char *field, struct sc_error *err);

/* A step time at risk p: what the measured time would be at the band's
 * p-quantile, est_ms / (1 + the error quantile at 1 - p) (a measured time
 * above it only 1 - p of the time, as far as the band knows). Without a
 * band, est_ms. */
double plan_band_at_risk(const struct est_band *b, double p, double est_ms);

/* What the bands say of estimate e of spec s at risk p: its band (NULL
 * when the region has none), the error quantile used, the step time at
 * risk, and whether the estimate lies beyond what was validated, with
 * why: the region has no band; more GPUs than any validated row of it;
 * no validated row in the dtype; or an MFU above the best measured one
 * for the GPU and dtype by more than the band's most optimistic error
 * (p05) accounts for: mfu > best / (1 + p05). */
struct est_band_view {
    const struct est_band *band;
    double risk, error, step_ms;
    int extrapolated;
    char reason[256];  /* "" when not extrapolated; reasons joined by "; " */
};
void plan_band_view_of(const struct est_bands *b, const struct est_spec *s, const struct est_estimate *e, double p,
                      struct est_band_view *out);

#endif
