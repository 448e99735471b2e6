/* tests/fuzz/fuzz_plan.c: libFuzzer target for the planner's input: the
 * body of POST /v1/plans (api_plan_request_decode) and the planning spec in
 * it (plan_parse_spec), then the size of its space; and the same input
 * as the body of POST /v1/models/{id}/plan (no spec).
 *
 * A decoded request must hold a spec and a GPU count in range; a spec that
 * parses must keep what it fixes, and counting its space must end (it
 * stops past the cap). Anything but a clean success or a clean error is a
 * bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_json.h"
#include "estimator/plan/plan.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct est_plan_request req;
    struct sc_error err;
    char *spec = NULL;
    memset(&req, 0, sizeof req);
    int rc = api_plan_request_decode((const char *)data, size, &req, NULL, &err);
    if (rc == SC_OK ? req.gpus < 1 || req.gpus > (1 << 20) || req.top < 1 || req.top > EST_PLAN_MAX_TOP
                    : rc != SC_EINVAL && rc != SC_EPARSE && rc != SC_ENOMEM)
        abort();
    rc = api_plan_request_decode((const char *)data, size, &req, &spec, &err);
    if (rc != SC_OK) {
        if (spec || (rc != SC_EINVAL && rc != SC_EPARSE && rc != SC_ENOMEM))
            abort();
        return 0;
    }
    if (!spec || req.gpus < 1 || req.gpus > (1 << 20) || req.top < 1 || req.top > EST_PLAN_MAX_TOP)
        abort();
    rc = plan_parse_spec(spec, strlen(spec), &req, &err);
    if (rc == SC_OK) {
        if (spec_given_has(&req.given, "parallel.tp") && req.spec.parallel.tp < 1)
            abort();
        if (plan_space(&req) < 0)
            abort();
    } else if (rc != SC_EINVAL && rc != SC_EPARSE && rc != SC_ELIMIT) {
        abort();
    }
    free(spec);
    return 0;
}
