/* estimator/request_resolve.c: a spec text resolved into what an estimate
 * or a plan runs on (request_resolve.h). */
#include "estimator/request_resolve.h"

#include <stdlib.h>
#include <string.h>

#include "estimator/plan/plan.h"
#include "common/banned.h"

int est_request_costs(const struct est_spec *spec, const struct hw_profile *hw, const struct est_profile_lookup *lookup,
                      struct est_costs *costs, struct est_profile_found *found, enum est_request_fault *fault,
                      struct sc_error *err)
{
    struct est_profile_found f;
    int rc;
    memset(&f, 0, sizeof f);
    if (found)
        memset(found, 0, sizeof *found);
    calib_costs_default(hw, spec, costs);
    if (!spec->cluster.profile[0])
        return SC_OK;
    if (!lookup) {
        *fault = EST_REQUEST_PROFILE;
        return sc_error_set(err, SC_EINVAL, "cluster.profile: '%.64s': no cluster profile can be read here",
                            spec->cluster.profile);
    }
    if ((rc = lookup->find(lookup->ctx, spec->cluster.profile, &f, err))) {
        free(f.document);
        *fault = rc == SC_ENOTFOUND || rc == SC_EINVAL ? EST_REQUEST_PROFILE : EST_REQUEST_LOOKUP;
        return rc;
    }
    rc = calib_costs_apply_profile(costs, f.document, f.len, spec->cluster.gpu, err);
    free(f.document);
    f.document = NULL;
    f.len = 0;
    if (rc) {
        *fault = EST_REQUEST_PROFILE;
        return rc;
    }
    if (found)
        *found = f;
    return SC_OK;
}

int est_request_resolve(const char *text, size_t len, unsigned flags, const struct est_profile_lookup *lookup,
                        struct est_request *out, struct sc_error *err)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (flags & EST_REQUEST_TEMPLATE) {
        struct est_plan_request plan;
        if ((rc = plan_parse_spec(text, len, &plan, err)) == SC_OK) {
            out->spec = plan.spec;
            out->given = plan.given;
            rc = spec_check_gpu(&out->spec, &out->hw, err);
        }
    } else {
        rc = spec_load(text, len, &out->spec, &out->hw, err);
    }
    if (rc)
        out->fault = EST_REQUEST_SPEC;
    if (rc == SC_OK)
        rc = est_request_costs(&out->spec, out->hw, lookup, &out->costs, &out->profile, &out->fault, err);
    if (rc == SC_OK && !(out->canonical = spec_json(&out->spec))) {
        out->fault = EST_REQUEST_LOOKUP;
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    if (rc) {
        enum est_request_fault fault = out->fault;
        est_request_release(out);
        out->fault = fault;
    }
    return rc;
}

void est_request_release(struct est_request *r)
{
    free(r->canonical);
    free(r->profile.document);
    memset(r, 0, sizeof *r);
}
