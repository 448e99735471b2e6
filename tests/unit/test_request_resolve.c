/* tests/unit/test_request_resolve.c: est_request_resolve
 * (estimator/request_resolve.h) on a spec with no cluster profile, one its
 * lookup finds, one it does not, one it fails to read, and a bad spec:
 * the costs are the defaults or the profile's, the canonical form parses
 * back to the same spec, and each failure blames what is at fault. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/request_resolve.h"
#include "tests/check.h"
#include "common/banned.h"

#define SPEC(profile)                                                                                            \
    "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024},\"parallel\":{\"global_batch\":8},"     \
    "\"cluster\":{\"gpu\":\"h100-sxm\"" profile "}}"

/* The profile "fast": every intra-domain ring at 123 GB/s. */
static const char fast_profile[] =
    "{\"format\":\"stepcast-cluster-profile\",\"version\":1,\"collective\":{\"intra\":{\"busbw_gbps\":123,"
    "\"hop_us\":2}}}";

/* A lookup that knows "fast", fails to read "broken" and knows no other;
 * ctx counts its calls. */
static int lookup(void *ctx, const char *name, struct est_profile_found *found, struct sc_error *err)
{
    ++*(int *)ctx;
    if (strcmp(name, "broken") == 0)
        return sc_error_set(err, SC_EIO, "the catalog could not be read");
    if (strcmp(name, "fast") != 0)
        return sc_error_set(err, SC_ENOTFOUND, "cluster.profile: no profile '%s'", name);
    found->len = strlen(fast_profile);
    found->document = malloc(found->len + 1);
    REQUIRE(found->document != NULL);
    memcpy(found->document, fast_profile, found->len + 1);
    snprintf(found->label, sizeof found->label, "fast@0123");
    return SC_OK;
}

TEST(request_resolve_defaults_and_canonical_form)
{
    int calls = 0;
    struct est_profile_lookup l = {lookup, &calls};
    struct est_request req, again;
    struct est_costs def;
    struct sc_error err;
    const char *text = SPEC("");
    REQUIRE(est_request_resolve(text, strlen(text), 0, &l, &req, &err) == SC_OK);
    CHECK_EQ_INT(calls, 0); /* no cluster.profile: no lookup */
    CHECK(req.hw != NULL && strcmp(req.spec.cluster.gpu, "h100-sxm") == 0);
    calib_costs_default(req.hw, &req.spec, &def);
    CHECK(memcmp(&def, &req.costs, sizeof def) == 0);
    CHECK_STREQ(req.profile.label, "");
    REQUIRE(req.canonical != NULL);
    REQUIRE(est_request_resolve(req.canonical, strlen(req.canonical), 0, NULL, &again, &err) == SC_OK);
    CHECK_STREQ(again.canonical, req.canonical);
    CHECK(memcmp(&again.spec, &req.spec, sizeof req.spec) == 0);
    est_request_release(&again);
    est_request_release(&req);
}

TEST(request_resolve_applies_the_profile_its_lookup_finds)
{
    int calls = 0;
    struct est_profile_lookup l = {lookup, &calls};
    struct est_request req;
    struct sc_error err;
    const char *text = SPEC(",\"profile\":\"fast\"");
    REQUIRE(est_request_resolve(text, strlen(text), 0, &l, &req, &err) == SC_OK);
    CHECK_EQ_INT(calls, 1);
    CHECK_NEAR(req.costs.coll.intra.busbw_gbps, 123, 1e-9);
    CHECK_NEAR(req.costs.coll.intra.hop_us, 2, 1e-9);
    CHECK_STREQ(req.profile.label, "fast@0123");
    CHECK(req.profile.document == NULL); /* only its name is kept */
    est_request_release(&req);
}

TEST(request_resolve_blames_what_is_at_fault)
{
    int calls = 0;
    struct est_profile_lookup l = {lookup, &calls};
    struct est_request req;
    struct sc_error err;
    const char *missing = SPEC(",\"profile\":\"slow\""), *broken = SPEC(",\"profile\":\"broken\"");
    const char *bad = "{\"model\":{\"layers\":0}}";
    CHECK_EQ_INT(est_request_resolve(missing, strlen(missing), 0, &l, &req, &err), SC_ENOTFOUND);
    CHECK_EQ_INT(req.fault, EST_REQUEST_PROFILE);
    CHECK_CONTAINS(err.msg, "no profile 'slow'");
    CHECK(req.canonical == NULL);
    CHECK_EQ_INT(est_request_resolve(broken, strlen(broken), 0, &l, &req, &err), SC_EIO);
    CHECK_EQ_INT(req.fault, EST_REQUEST_LOOKUP);
    CHECK(est_request_resolve(missing, strlen(missing), 0, NULL, &req, &err) != SC_OK);
    CHECK_EQ_INT(req.fault, EST_REQUEST_PROFILE); /* no lookup: a named profile is refused */
    CHECK(est_request_resolve(bad, strlen(bad), 0, &l, &req, &err) != SC_OK);
    CHECK_EQ_INT(req.fault, EST_REQUEST_SPEC);
    CHECK_EQ_INT(calls, 2);
}

TEST(request_resolve_template_leaves_keys_open)
{
    struct est_request req;
    struct sc_error err;
    const char *text = SPEC("");
    REQUIRE(est_request_resolve(text, strlen(text), EST_REQUEST_TEMPLATE, NULL, &req, &err) == SC_OK);
    size_t fixed = 0;
    for (size_t i = 0; i < EST_SPEC_MAX_KEYS; i++)
        fixed += req.given.key[i] != 0;
    CHECK(fixed > 0 && fixed < EST_SPEC_MAX_KEYS); /* global_batch given, tp and the others open */
    est_request_release(&req);
}
