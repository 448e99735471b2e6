/* api/ledger.h: the validation ledger and the calibrations as records, and
 * what the ledger tells: MAPE per model, kind and month, and error bands.
 *
 * A ledger entry is one measured step time with the prediction stepcast
 * made for it when the entry was posted (replay of a model, what-if of a
 * model, or estimate of a spec), the stepcast version and the calibration
 * that made it. An entry keeps its model's id after the model is deleted.
 * Entries flagged in-sample (the runs the estimator's parameters were
 * fitted on) are listed but left out of the default MAPE and of bands.
 *
 * The error of an entry is (predicted - measured) / measured. The band of
 * a kind, once the ledger holds at least LEDGER_BAND_MIN out-of-sample
 * entries of it, is the empirical 10th to 90th percentile (linear
 * interpolation between order statistics) of measured / predicted over
 * them, applied to a new prediction p as [p x q10, p x q90]: where 80% of
 * past measurements fell around their prediction. The daemon (POST
 * /v1/validations, GET /v1/validations, bands on POST /v1/estimate) and
 * `stepcast ledger` share this. */
#ifndef API_LEDGER_H
#define API_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/resources.h"
#include "common/error.h"
#include "estimator/plan/bands.h"

#define LEDGER_BAND_MIN 10

/* The step times a ledger takes, ms: from a microsecond (no training step
 * is shorter; below it lie subnormal numbers, whose errors are not finite)
 * to 1e12 (31 years). */
#define LEDGER_STEP_MS_MIN 1e-3
#define LEDGER_STEP_MS_MAX 1e12
/* Whether ms is a step time a ledger takes (finite, in the range above). */
int ledger_step_ms_valid(double ms);

enum api_ledger_kind { API_LEDGER_REPLAY, API_LEDGER_WHATIF, API_LEDGER_ESTIMATE, API_LEDGER_KIND_COUNT };
const char *api_ledger_kind_name(enum api_ledger_kind k);
/* "replay", "whatif", "estimate"; -1 for anything else. */
int api_ledger_kind_parse(const char *s, enum api_ledger_kind *out);

struct api_validation {
    int64_t id;
    char model[API_ID_MAX]; /* "" when none */
    enum api_ledger_kind kind;
    char *spec;             /* the estimated spec, canonical JSON, or NULL */
    char *set;              /* a what-if's settings, JSON, or NULL */
    double measured_ms, predicted_ms;
    char source[256];       /* where the measurement comes from */
    char run_at[40];        /* when the run was (ISO 8601, as given), or "" */
    char version[32];       /* of the stepcast that predicted */
    char calibration[API_ID_MAX + 16]; /* "NAME@SHA12" or "" for the defaults */
    int in_sample;
    int64_t created_ns;
};
void api_validation_release(struct api_validation *v);
void api_validations_free(struct api_validation *v, size_t n);

struct api_calibration {
    char name[API_ID_MAX];
    char gpu[48];
    char source[32];         /* "nccl-tests" or "traces" */
    char model[API_ID_MAX];  /* the model it was fitted on, or "" */
    char sha256[API_ID_MAX]; /* of the document */
    char *document;          /* the cluster profile, JSON text */
    char *report;            /* what the fits said */
    int64_t created_ns;
};
void api_calibration_release(struct api_calibration *c);
void api_calibrations_free(struct api_calibration *c, size_t n);

struct ledger_band {
    int has;          /* enough out-of-sample entries */
    size_t n;         /* out-of-sample entries of the kind */
    double lo, hi;    /* quantiles of measured / predicted */
};
/* The band of kind k over entries v[0..n). */
void ledger_band_of(const struct api_validation *v, size_t n, enum api_ledger_kind k, struct ledger_band *out);
/* {"kind","entries","coverage":0.8,"lo_ms","hi_ms"} around predicted_ms, or
 * null without a band; {"kind","entries","needed"} says how many are missing. */
json_t *ledger_band_json(const struct ledger_band *b, enum api_ledger_kind k, double predicted_ms);

/* The bands `base` (estimator/plan/bands.h) with the ledger's estimates merged
 * in: a region (of each entry's spec) with at least LEDGER_BAND_MIN
 * out-of-sample estimate entries takes their error quantiles, count and
 * the ledger as its source in place of the file's, since they measured
 * runs on this deployment's own cluster and software, and its largest GPU
 * count and best MFU per dtype become the larger of both; a region with
 * fewer keeps the file's band, or has none. *out is malloc'd
 * (plan_bands_release). SC_ENOMEM. */
int ledger_bands_merge(const struct api_validation *v, size_t n, const struct est_bands *base, struct est_bands *out,
                       struct sc_error *err);

/* One entry with its signed error_pct. */
json_t *api_validation_json(const struct api_validation *v);
/* {"entries":[...],"mape":{...},"by_model":{...},"by_kind":{...},
 *  "by_month":{...},"bands":{...},"skipped":N}: each MAPE over
 * out-of-sample entries (all entries when with_in_sample), with its
 * count. An entry whose times are outside the ledger's range (stored
 * before they were checked) is skipped, counted in "skipped", and never
 * fails the whole list. */
json_t *api_ledger_json(const struct api_validation *v, size_t n, int with_in_sample);
/* The same with one page of entries (api/page.h) and its next_cursor:
 * "entries" the rows of page[0..n_page) that render ("skipped" counts the
 * others, also in m->skipped), the MAPEs and bands over v[0..n), every
 * entry the list selects; with v NULL (a page after the first) the
 * entries, "skipped" and "next_cursor" only. */
struct api_list_meta;
json_t *api_ledger_page_json(const struct api_validation *page, size_t n_page, const struct api_validation *v,
                             size_t n, int with_in_sample, struct api_list_meta *m);
/* A calibration; its document and report when `full`. */
json_t *api_calibration_json(const struct api_calibration *c, int full);

/* The ledger as a file (`stepcast ledger --ledger FILE`, the local
 * ledger): {"format":"stepcast-ledger","version":1,"entries":[entry...]},
 * each entry as api_validation_json writes it plus "created_ns". */
char *api_ledger_file_text(const struct api_validation *v, size_t n); /* malloc'd, or NULL */
/* Read one; SC_EPARSE naming the entry and member when it is not one.
 * *v is malloc'd (api_validations_free). */
int api_ledger_file_parse(const char *text, size_t len, struct api_validation **v, size_t *n,
                          struct sc_error *err);

struct api_reply;
/* The replies of the ledger's and calibrations' routes. */
int api_reply_validation(struct api_reply *r, unsigned status, const struct api_validation *v);
int api_reply_ledger(struct api_reply *r, const struct api_validation *v, size_t n, int with_in_sample);
int api_reply_calibration(struct api_reply *r, unsigned status, const struct api_calibration *c);
int api_reply_calibrations(struct api_reply *r, const struct api_calibration *v, size_t n, struct api_list_meta *m);

#endif
