/* estimator/request_resolve.h: the façade every program resolves an
 * estimate's or a plan's request through: the spec text parsed and
 * checked, its GPU's hardware profile, the costs of its synthesised step
 * (the defaults, or those of the cluster profile its cluster.profile
 * names) and its canonical form (every default written out).
 *
 * Where a cluster profile comes from is the program's: the command line
 * passes a lookup that reads files, the daemon one that reads its catalog
 * of calibrations. Everything else is done here once. */
#ifndef ESTIMATOR_REQUEST_RESOLVE_H
#define ESTIMATOR_REQUEST_RESOLVE_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/spec/spec.h"
#include "estimator/synth/synth.h"

/* A cluster profile a lookup found: its document, and how the program
 * names it (a label such as "NAME@SHA12" and the document's hash; "" when
 * the program has none). */
#define EST_PROFILE_LABEL_MAX 96
struct est_profile_found {
    char *document; /* from malloc, len bytes (the lookup allocates, the caller frees) */
    size_t len;
    char label[EST_PROFILE_LABEL_MAX];
    char sha256[EST_PROFILE_LABEL_MAX];
};

/* find: the profile `name` (a spec's cluster.profile) into *found.
 * SC_ENOTFOUND or SC_EINVAL, the message naming cluster.profile, when the
 * request names a profile there is not; any other code when the lookup
 * itself failed. */
struct est_profile_lookup {
    int (*find)(void *ctx, const char *name, struct est_profile_found *found, struct sc_error *err);
    void *ctx;
};

/* What a failed resolve blames. */
enum est_request_fault {
    EST_REQUEST_SPEC = 1, /* the spec text (a caller may name its source) */
    EST_REQUEST_PROFILE,  /* the cluster profile it names: none such, or a bad one */
    EST_REQUEST_LOOKUP,   /* not the request: the lookup, or memory, failed */
};

struct est_request {
    struct est_spec spec;
    struct est_spec_given given;   /* a template's fixed keys (EST_REQUEST_TEMPLATE) */
    const struct hw_profile *hw;   /* the spec's GPU */
    struct est_costs costs;        /* of the synthesised step */
    struct est_profile_found profile; /* label and hash as the lookup gave (document NULL) */
    char *canonical;               /* the spec with every default, JSON (from malloc) */
    enum est_request_fault fault;  /* on failure, what is at fault */
};

/* Flags of est_request_resolve. */
#define EST_REQUEST_TEMPLATE 1 /* a planning template (plan_parse_spec): its parallel and
                                  options values may be left open, out->given says which */

/* Resolve the request text[0..len). lookup NULL: a named cluster.profile
 * is refused. On failure err says why, out->fault what is at fault, and
 * nothing is held. Release with est_request_release. */
int est_request_resolve(const char *text, size_t len, unsigned flags, const struct est_profile_lookup *lookup,
                        struct est_request *out, struct sc_error *err);
void est_request_release(struct est_request *r);

/* The costs of spec's synthesised step on GPU hw: the defaults, or
 * cluster.profile's as lookup finds it; *found (NULL: not wanted) gets its
 * label and hash. *fault as est_request_resolve's. */
int est_request_costs(const struct est_spec *spec, const struct hw_profile *hw, const struct est_profile_lookup *lookup,
                      struct est_costs *costs, struct est_profile_found *found, enum est_request_fault *fault,
                      struct sc_error *err);

#endif
