/* daemon/h_estimate.h: what h_estimate.c (estimates, hardware profiles,
 * calibrations) gives the plan and ledger handlers: a posted spec resolved
 * against the catalog's calibrations, and an estimate admitted under the
 * memory budget. */
#ifndef DAEMON_H_ESTIMATE_H
#define DAEMON_H_ESTIMATE_H

#include "api/reply.h"
#include "api/resources.h"
#include "common/error.h"
#include "daemon/service.h"
#include "estimator/synth/estimate.h"
#include "estimator/spec/spec.h"

/* A posted spec: parsed and checked, its cluster.profile resolved to a
 * stored calibration and applied to the costs. */
struct h_spec {
    struct est_spec spec;
    const struct hw_profile *hw;
    struct est_costs costs;
    char calibration[API_ID_MAX + 16]; /* "NAME@SHA12", or "" for the defaults */
    char calib_sha[API_ID_MAX];        /* the calibration document's hash, or "" */
    char *canonical;                   /* the spec with every default, JSON */
};
/* SC_OK, or the status with r filled (400 invalid_spec naming the field).
 * With `given`, the spec is a planning template (plan_parse_spec):
 * its parallel and options values may be left open, *given says which
 * are fixed. */
int h_spec_load(struct svc *s, const char *text, size_t len, struct est_spec_given *given, struct h_spec *out,
                struct api_reply *r);
void h_spec_release(struct h_spec *h);
/* synth_estimate of h's spec at detail d, admitted first under the daemon's
 * memory budget (admission.h) by its predicted size (synth_size): SC_OK
 * with *e, else err says why, *busy set when it only has to wait for the
 * work running now (h_estimate_fail answers 429, else 413 or 422). */
int h_estimate_admitted(struct svc *s, const struct h_spec *h, enum est_detail d, struct est_estimate *e, int *busy,
                        struct sc_error *err);
int h_estimate_fail(int busy, const struct sc_error *err, struct api_reply *r);

#endif
