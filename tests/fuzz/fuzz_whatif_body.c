/* tests/fuzz/fuzz_whatif_body.c: libFuzzer target for what a what-if
 * reads: the job description stored by PUT /v1/jobs/{job} and the body of
 * POST /v1/models/{id}/whatif.
 *
 * The input is the job's body, a NUL, then the what-if's body (all of it
 * the job's when there is no NUL). A job body that decodes must come out
 * canonical (decoded again, the same text), with every number in its
 * documented range; its config, when a what-if can read it, applied with
 * the set and made the spec of the target configuration on a known GPU,
 * which must parse as a spec or be refused cleanly. Anything but a clean
 * success or a clean error (a 4xx with the error document) is a bug. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/job_cadence.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/whatif_json.h"
#include "estimator/spec/job_config.h"
#include "estimator/spec/spec.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The job's numbers in their ranges (api/request.h). */
static void numbers_in_range(const char *canonical)
{
    json_t *doc = json_loads(canonical, 0, NULL), *v;
    const char *key;
    if (!json_is_object(doc))
        abort();
    json_object_foreach (doc, key, v) {
        double min, max;
        if (api_job_number_range(key, &min, &max) && !(json_number_value(v) >= min && json_number_value(v) <= max))
            abort();
    }
    json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_body_limits lim = {64 << 10, 16};
    struct api_reply r = {0};
    const char *body = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t job_n = nul ? (size_t)(nul - data) : size;
    char *canon = NULL, *again = NULL;
    if (api_decode_job(body, job_n, &lim, &canon, &r) != SC_OK) {
        if (r.status < 400 || r.status >= 500 || canon)
            abort();
        api_reply_release(&r);
        return 0;
    }
    if (!canon || api_decode_job(canon, strlen(canon), &lim, &again, &r) != SC_OK || strcmp(canon, again))
        abort();
    numbers_in_range(canon);
    struct job_config base, set, target;
    struct sc_error err;
    spec_job_config_init(&set);
    if (nul && api_job_config_from_job(canon, &base, &err) == SC_OK) {
        if (api_decode_whatif(body + job_n + 1, size - job_n - 1, &set, &r) == SC_OK) {
            struct est_spec spec;
            spec_job_config_apply(&base, &set, &target);
            if (spec_job_config_spec(&target, "h100-sxm", &spec, &err) == SC_OK) {
                char *text = spec_json(&spec);
                struct est_spec back;
                memset(&back, 0, sizeof back);
                if (!text || spec_parse(text, strlen(text), &back, &err) != SC_OK)
                    abort();
                free(text);
            }
        } else if (r.status < 400 || r.status >= 500) {
            abort();
        }
    }
    api_reply_release(&r);
    free(canon);
    free(again);
    return 0;
}
