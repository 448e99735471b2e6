/* api/request.h: decoding and validating JSON request bodies.
 *
 * Bodies are untrusted. Before Jansson sees one, its size is checked
 * against max_json_body and its nesting against max_json_depth by a scan
 * that keeps no stack (Jansson would recurse up to its compiled-in depth
 * otherwise); Jansson then rejects malformed JSON, invalid UTF-8 and NUL
 * bytes. Each decoder accepts exactly its documented fields: an unknown
 * field is an error, not silently ignored. Failures fill the reply with a
 * 400/413 error and return its status. */
#ifndef API_REQUEST_H
#define API_REQUEST_H

#include <stddef.h>

#include "api/reply.h"
#include "api/resources.h"

struct api_body_limits {
    size_t max_bytes;
    unsigned max_depth;
};

/* Size and nesting only (no parse): SC_OK, or SC_ELIMIT / SC_EINVAL with
 * the reply filled (too_large / json_too_deep). */
int api_json_precheck(const char *body, size_t n, const struct api_body_limits *l,
                      struct api_reply *err);

/* PUT /v1/jobs/{job}: {"config":{...},"hardware":"...","description":"...",
 * "steps_per_day":N,"runtime_hours":H,"gpu_hour_usd":P,"tags":{"team":"..",
 * "cluster":".."}}, all optional (steps_per_day 1e-3 to 1e9, runtime_hours
 * (a day's) 1e-3 to 24 and gpu_hour_usd 1e-4 to 1e6: the job's cadence and
 * price, for the saving an experiment banks and the fleet's waste; tags
 * identifiers naming short strings; the config's keys a what-if reads in
 * the ranges a what-if's set takes); an empty body is an empty
 * description. A value of the wrong type is 400, one out of its range 422
 * naming the field. *canonical gets the
 * description as compact JSON with sorted keys (from malloc). */
int api_decode_job(const char *body, size_t n, const struct api_body_limits *l, char **canonical,
                   struct api_reply *err);

/* POST /v1/jobs/{job}/models: {"step_marker":"...","steps":"A-B"}, both
 * optional; an empty body takes the defaults. Unset fields are "". */
struct api_build_req {
    char step_marker[256];
    char steps[64];
};
int api_decode_build(const char *body, size_t n, const struct api_body_limits *l,
                     struct api_build_req *out, struct api_reply *err);

/* POST /v1/models/{a}/diff: {"other":ID}, ID a valid identifier. */
int api_decode_diff(const char *body, size_t n, const struct api_body_limits *l, char other[API_ID_MAX],
                    struct api_reply *err);

/* POST /v1/ab: {"a":ID,"b":ID,"min_effect_pct":P,"refutations":N,"seed":S}:
 * the baseline model a and the variant b (valid identifiers, required);
 * the rest as `stepcast ab`'s options (0 < P <= 100; 0 <= N <= 5; S a
 * whole number), absent ones at model_ab_opts_default's values. */
struct api_ab_req {
    char a[API_ID_MAX], b[API_ID_MAX];
    double min_effect_pct;
    int refutations;
    unsigned long seed;
};
int api_decode_ab(const char *body, size_t n, const struct api_body_limits *l, struct api_ab_req *out,
                  struct api_reply *err);

/* POST /v1/experiments: {"baseline":JOB,"variant":JOB,"hypothesis":"..",
 * "external_id":".."}: the two jobs required (valid identifiers), the
 * hypothesis up to 1024 bytes and the external id (a scheduler's job id)
 * up to 128, both optional (unset: ""). */
struct api_experiment_req {
    char baseline[API_ID_MAX], variant[API_ID_MAX];
    char hypothesis[1025];
    char external_id[129];
};
int api_decode_experiment(const char *body, size_t n, const struct api_body_limits *l,
                          struct api_experiment_req *out, struct api_reply *err);

/* POST /v1/tokens: {"scope":"read|write|admin","name":"..."} (name optional). */
struct api_token_req {
    enum api_scope scope;
    char name[128];
};
int api_decode_token(const char *body, size_t n, const struct api_body_limits *l,
                     struct api_token_req *out, struct api_reply *err);

/* POST /v1/validations: {"model":ID|null,"spec":{...}|null,"set":{...}|null,
 * "measured_step_ms":N,"source":"...","run_at":"...","in_sample":bool}:
 * measured_step_ms required (LEDGER_STEP_MS_MIN to _MAX: out of it is 422
 * naming it, not a number 400); model, spec or both absent is
 * an error, as is set without model, or model with spec. The spec and set
 * are handed back as compact JSON text (from malloc) for their own
 * parsers. */
struct api_validation_req {
    char model[API_ID_MAX]; /* "" when none */
    char *spec, *set;       /* or NULL */
    double measured_ms;
    char source[256], run_at[40];
    int in_sample;
};
int api_decode_validation(const char *body, size_t n, const struct api_body_limits *l,
                          struct api_validation_req *out, struct api_reply *err);
void api_validation_req_release(struct api_validation_req *v);

#endif
