/* api/routes.c: the operation table and the router (routes.h). */
#include "api/routes.h"

#include <stdio.h>
#include <string.h>

#include "api/page.h"
#include "common/banned.h"

#define E_AUTH "401,403"
static const struct api_op_info ops[API_OP_COUNT] = {
    [API_OP_HEALTHZ] = {"GET", "/healthz", "getHealth", API_SCOPE_NONE, API_BODY_NONE, 200, NULL,
                        "401,503", "liveness: version, uptime, draining (a read token with ops-need-token)"},
    [API_OP_METRICS] = {"GET", "/metrics", "getMetrics", API_SCOPE_NONE, API_BODY_NONE, 200, NULL,
                        "401", "Prometheus text-format metrics (a read token with ops-need-token)"},
    [API_OP_OPENAPI] = {"GET", "/v1/openapi.json", "getOpenapi", API_SCOPE_READ, API_BODY_NONE, 200,
                        NULL, E_AUTH, "this document"},
    [API_OP_JOBS_LIST] = {"GET", "/v1/jobs", "listJobs", API_SCOPE_READ, API_BODY_NONE, 200, API_PAGE_QUERY,
                          "400," E_AUTH ",422", "the jobs with their trace and model counts, a page by id"},
    [API_OP_JOB_PUT] = {"PUT", "/v1/jobs/{job}", "putJob", API_SCOPE_WRITE, API_BODY_JSON_OPT, 201,
                        NULL, "400," E_AUTH ",413,507",
                        "create a job or replace its description (200 when it existed)"},
    [API_OP_JOB_GET] = {"GET", "/v1/jobs/{job}", "getJob", API_SCOPE_READ, API_BODY_NONE, 200, NULL,
                        "400," E_AUTH ",404", "a job, its traces and its models"},
    [API_OP_JOB_DELETE] = {"DELETE", "/v1/jobs/{job}", "deleteJob", API_SCOPE_ADMIN, API_BODY_NONE,
                           200, NULL, "400," E_AUTH ",404",
                           "delete a job, its traces and models; frees unreferenced blobs"},
    [API_OP_TRACE_PUT] = {"PUT", "/v1/jobs/{job}/ranks/{rank}/trace", "putTrace", API_SCOPE_WRITE,
                          API_BODY_TRACE, 201,
                          "replace:boolean:replace a different trace already there",
                          "400," E_AUTH ",409,413,422,429,507",
                          "upload a rank's Kineto trace (plain or gzip); 200 when identical"},
    [API_OP_TRACE_GET] = {"GET", "/v1/jobs/{job}/ranks/{rank}/trace", "getTrace", API_SCOPE_READ,
                          API_BODY_NONE, 200, NULL, "400," E_AUTH ",404",
                          "a rank's trace metadata (hash, size, events, steps)"},
    [API_OP_MODEL_CREATE] = {"POST", "/v1/jobs/{job}/models", "createModel", API_SCOPE_WRITE,
                             API_BODY_JSON_OPT, 202, NULL, "400," E_AUTH ",404,409,413,429,507",
                             "build a model from the job's current traces (poll Location)"},
    [API_OP_MODELS_LIST] = {"GET", "/v1/models", "listModels", API_SCOPE_READ, API_BODY_NONE, 200,
                            "job:string:only this job's models;" API_PAGE_QUERY, "400," E_AUTH ",422",
                            "the models, a page oldest first"},
    [API_OP_MODEL_GET] = {"GET", "/v1/models/{id}", "getModel", API_SCOPE_READ, API_BODY_NONE, 200,
                          NULL, "400," E_AUTH ",404", "a model: status, progress, error, summary"},
    [API_OP_MODEL_DELETE] = {"DELETE", "/v1/models/{id}", "deleteModel", API_SCOPE_ADMIN,
                             API_BODY_NONE, 200, NULL, "400," E_AUTH ",404", "delete a model"},
    [API_OP_REPLAY] = {"GET", "/v1/models/{id}/replay", "getReplay", API_SCOPE_READ, API_BODY_NONE,
                       200,
                       "scale:string:scale durations: WHAT=F, or WHAT@R=F for rank R; WHAT is gpu, comm, cpu, "
                       "launch, all, a task class, kernel:TEXT, family:NAME or name:GLOB (repeatable; factors "
                       "multiply; 0 <= F <= 1000);keep_unexplained:boolean:keep the waits the trace holds "
                       "but does not explain as fixed latencies (default false)",
                       "400," E_AUTH ",404,409,422",
                       "the replay: predicted step time per rank, error, breakdown (as `stepcast replay --json`)"},
    [API_OP_CRITICAL_PATH] = {"GET", "/v1/models/{id}/critical-path", "getCriticalPath",
                              API_SCOPE_READ, API_BODY_NONE, 200,
                              "scale:string:as for replay;keep_unexplained:boolean:as for replay",
                              "400," E_AUTH ",404,409,422",
                              "the critical path of the replayed step, segment by segment"},
    [API_OP_TIMELINE] = {"GET", "/v1/models/{id}/timeline", "getTimeline", API_SCOPE_READ,
                         API_BODY_NONE, 200,
                         "rank:integer:the rank (required);scale:string:as for replay;"
                         "keep_unexplained:boolean:as for replay",
                         "400," E_AUTH ",404,409,422",
                         "the replayed timeline of one rank as a Kineto trace (opens in Perfetto)"},
    [API_OP_TOKEN_CREATE] = {"POST", "/v1/tokens", "createToken", API_SCOPE_ADMIN, API_BODY_JSON,
                             201, NULL, "400," E_AUTH ",413",
                             "create a token; the secret is in this reply only"},
    [API_OP_TOKENS_LIST] = {"GET", "/v1/tokens", "listTokens", API_SCOPE_ADMIN, API_BODY_NONE, 200,
                            API_PAGE_QUERY, "400," E_AUTH ",422", "the tokens (without secrets), a page oldest first"},
    [API_OP_TOKEN_DELETE] = {"DELETE", "/v1/tokens/{id}", "deleteToken", API_SCOPE_ADMIN,
                             API_BODY_NONE, 200, NULL, "400," E_AUTH ",404,409",
                             "revoke a token (not the last admin token)"},
    [API_OP_DASHBOARD] = {"GET", "/", "getDashboard", API_SCOPE_NONE, API_BODY_NONE, 200, NULL, "",
                          "the web dashboard (it asks for a token)"},
    [API_OP_DASHBOARD_FILE] = {"GET", "/ui/{file}", "getDashboardFile", API_SCOPE_NONE,
                               API_BODY_NONE, 200, NULL, "404", "a file of the web dashboard"},
    [API_OP_ESTIMATE] = {"POST", "/v1/estimate", "postEstimate", API_SCOPE_READ, API_BODY_JSON, 200,
                         "detail:string:stage (default), layer or kernel",
                         "400," E_AUTH ",413,422,429",
                         "the estimate of a spec (as `stepcast estimate --json`), with an error band "
                         "once the ledger allows one; memoised by spec, calibration and version; admitted "
                         "under memory-budget by its predicted size (413 never fits, 429 must wait)"},
    [API_OP_HARDWARE_LIST] = {"GET", "/v1/hardware", "listHardware", API_SCOPE_READ, API_BODY_NONE, 200,
                              NULL, E_AUTH, "every GPU hardware profile"},
    [API_OP_HARDWARE_GET] = {"GET", "/v1/hardware/{id}", "getHardware", API_SCOPE_READ, API_BODY_NONE, 200,
                             NULL, "400," E_AUTH ",404", "one GPU hardware profile"},
    [API_OP_CALIBRATION_NCCL] = {"POST", "/v1/calibrations/nccl-tests", "calibrateNcclTests", API_SCOPE_WRITE,
                                 API_BODY_TEXT, 201,
                                 "name:string:the calibration's name (required);gpu:string:hardware profile "
                                 "id when the output does not name its GPU;kind:string:the collective when the "
                                 "output does not say it;ranks:integer:group size;nodes:integer:hosts",
                                 "400," E_AUTH ",413,422,507",
                                 "one nccl-tests output -> the named cluster profile (200 when it replaced one)"},
    [API_OP_CALIBRATION_GEMMS] = {"POST", "/v1/calibrations/gemms", "calibrateGemms", API_SCOPE_WRITE,
                                  API_BODY_TEXT, 201,
                                  "name:string:the calibration's name (required);gpu:string:hardware profile "
                                  "id when the table has no device line",
                                  "400," E_AUTH ",413,422,507",
                                  "one GEMM microbenchmark table -> the named cluster profile (200 when it "
                                  "replaced one)"},
    [API_OP_CALIBRATIONS_LIST] = {"GET", "/v1/calibrations", "listCalibrations", API_SCOPE_READ,
                                  API_BODY_NONE, 200, API_PAGE_QUERY, "400," E_AUTH ",422",
                                  "the calibrations (without documents), a page by name"},
    [API_OP_CALIBRATION_GET] = {"GET", "/v1/calibrations/{id}", "getCalibration", API_SCOPE_READ,
                                API_BODY_NONE, 200, NULL, "400," E_AUTH ",404",
                                "a calibration: its cluster profile and the report of its fits"},
    [API_OP_MODEL_CALIBRATION] = {"POST", "/v1/models/{id}/calibration", "calibrateModel", API_SCOPE_WRITE,
                                  API_BODY_NONE, 201,
                                  "name:string:the calibration's name (required);gpu:string:hardware profile "
                                  "id when the traces do not name their GPU",
                                  "400," E_AUTH ",404,409,422,507",
                                  "fit the kernel and collective models to a built model's traces -> the "
                                  "named cluster profile (200 when it replaced one)"},
    [API_OP_VALIDATION_CREATE] = {"POST", "/v1/validations", "createValidation", API_SCOPE_WRITE,
                                  API_BODY_JSON, 201, NULL, "400," E_AUTH ",404,409,413,422,429,507",
                                  "a measured step time with stepcast's prediction for it, made now; "
                                  "the entry and its error"},
    [API_OP_VALIDATIONS_LIST] = {"GET", "/v1/validations", "listValidations", API_SCOPE_READ, API_BODY_NONE,
                                 200,
                                 "model:string:one model's entries;kind:string:replay, whatif or estimate;"
                                 "in_sample:boolean:count in-sample entries in the MAPE too;" API_PAGE_QUERY,
                                 "400," E_AUTH ",422",
                                 "the ledger: a page of entries by id; MAPE per model, kind and month, and bands "
                                 "over every entry selected"},
    [API_OP_VALIDATION_DELETE] = {"DELETE", "/v1/validations/{id}", "deleteValidation", API_SCOPE_ADMIN,
                                  API_BODY_NONE, 200, NULL, "400," E_AUTH ",404", "delete a ledger entry"},
    [API_OP_OPPORTUNITIES] = {"GET", "/v1/models/{id}/opportunities", "getOpportunities", API_SCOPE_READ,
                              API_BODY_NONE, 200, NULL, "400," E_AUTH ",404,409,422",
                              "what would shorten the step, ranked, each saving measured by a replay "
                              "(as `stepcast opportunities --json`)"},
    [API_OP_FLEET_OPPORTUNITIES] = {"GET", "/v1/opportunities", "listOpportunities", API_SCOPE_READ,
                                    API_BODY_NONE, 200, API_FLEET_PAGE_QUERY, "400," E_AUTH ",422",
                                    "every ready model ranked by the GPU time per step its best opportunity "
                                    "wins back across its ranks"},
    [API_OP_DIFF] = {"POST", "/v1/models/{id}/diff", "diffModels", API_SCOPE_READ, API_BODY_JSON, 200, NULL,
                     "400," E_AUTH ",404,409,413,422",
                     "this model (A, before a change) against {\"other\":ID} (B, after): the step-time "
                     "difference attributed by replays, kernels added, removed and re-timed (as `stepcast diff --json`)"},
    [API_OP_PLAN_CREATE] = {"POST", "/v1/plans", "createPlan", API_SCOPE_READ, API_BODY_JSON, 202, NULL,
                            "400," E_AUTH ",413,422,429",
                            "plan a spec on a GPU count: 200 with the plan when its space is small (at most 1,000 "
                            "configurations; nothing is stored), else 202 with the plan's id, kept in the catalog "
                            "(a write token, counted under max-stored-per-token); 422 when the space is over the "
                            "cap (its size named)"},
    [API_OP_PLAN_GET] = {"GET", "/v1/plans/{id}", "getPlan", API_SCOPE_READ, API_BODY_NONE, 200, NULL,
                         "400," E_AUTH ",404",
                         "a plan: its progress while it runs, then the plan document (as `stepcast plan "
                         "--json`) with its state"},
    [API_OP_PLAN_DELETE] = {"DELETE", "/v1/plans/{id}", "deletePlan", API_SCOPE_WRITE, API_BODY_NONE, 200, NULL,
                            "400," E_AUTH ",404", "cancel a running plan, or forget a finished one"},
    [API_OP_PLAN_RESUME] = {"POST", "/v1/plans/{id}/resume", "resumePlan", API_SCOPE_WRITE, API_BODY_NONE, 202, NULL,
                            "400," E_AUTH ",404,409,429,507",
                            "run an interrupted plan (one a crash or a shutdown stopped) again from its stored "
                            "request, under its id; 409 for a plan in any other state"},
    [API_OP_WHATIF] = {"POST", "/v1/models/{id}/whatif", "postWhatif", API_SCOPE_READ, API_BODY_JSON, 200, NULL,
                       "400," E_AUTH ",404,409,413,422",
                       "the model's step transformed to another configuration and replayed (as `stepcast whatif "
                       "--json`), from the job's config (PUT /v1/jobs/{job}); memoised by set and config"},
    [API_OP_MODEL_PLAN] = {"POST", "/v1/models/{id}/plan", "createModelPlan", API_SCOPE_READ, API_BODY_JSON, 202,
                           NULL, "400," E_AUTH ",404,409,413,422,429",
                           "plan from a built model instead of a spec: each candidate the model's what-if on that "
                           "configuration (tp, pp, dp and micro_batch searched; the job's config gives the model and "
                           "the global batch); 202 or 200 and the plan as POST /v1/plans; 422 when the job has no "
                           "config or one without layers, hidden, heads, seq and global_batch"},
    [API_OP_CHAKRA] = {"GET", "/v1/models/{id}/chakra", "getChakra", API_SCOPE_READ, API_BODY_NONE, 200,
                       "prefix:string:the files' prefix (default stepcast);scale:string:as for replay;"
                       "keep_unexplained:boolean:as for replay",
                       "400," E_AUTH ",404,409,422",
                       "the replayed step as Chakra execution traces (as `stepcast export chakra`): a tar of "
                       "<prefix>.<rank>.et per rank and comm_group.json"},
    [API_OP_SPEC_FROM_HF] = {"POST", "/v1/specs/from-hf", "specFromHf", API_SCOPE_READ, API_BODY_JSON, 200,
                             "seq:integer:the sequence length (default: the config's pretraining length)",
                             "400," E_AUTH ",413,422",
                             "a spec's model from a Hugging Face config.json (as `stepcast spec from-hf`), and "
                             "which field gave its sequence length"},
    [API_OP_AB] = {"POST", "/v1/ab", "postAb", API_SCOPE_READ, API_BODY_JSON, 200, NULL, "400," E_AUTH ",404,409,413,422",
                   "model b (the variant) against model a (the baseline), step by step: the verdict with its interval, "
                   "refutations and attribution (as `stepcast ab --json`); memoised by its inputs"},
    [API_OP_EXPERIMENT_CREATE] = {"POST", "/v1/experiments", "createExperiment", API_SCOPE_WRITE, API_BODY_JSON, 201,
                                  NULL, "400," E_AUTH ",413,507",
                                  "an experiment: a baseline job against a variant job, their A/B verdict computed "
                                  "once each has a built model and kept with its inputs' digest"},
    [API_OP_EXPERIMENTS_LIST] = {"GET", "/v1/experiments", "listExperiments", API_SCOPE_READ, API_BODY_NONE, 200,
                                 "external_id:string:only the experiments of this external id;" API_PAGE_QUERY,
                                 "400," E_AUTH ",422", "the experiments, a page oldest first, each with its verdict"},
    [API_OP_EXPERIMENT_GET] = {"GET", "/v1/experiments/{id}", "getExperiment", API_SCOPE_READ, API_BODY_NONE, 200,
                               NULL, "400," E_AUTH ",404",
                               "an experiment: pending (waiting_for), decided (its verdict) or closed (its bank)"},
    [API_OP_EXPERIMENT_CLOSE] = {"POST", "/v1/experiments/{id}/close", "closeExperiment", API_SCOPE_WRITE,
                                 API_BODY_JSON_OPT, 200, NULL, "400," E_AUTH ",404,409",
                                 "close an experiment; a variant that reads faster and survives banks its saving "
                                 "(GPU-hours a day and dollars at the baseline job's cadence)"},
    [API_OP_FLEET] = {"GET", "/v1/fleet", "getFleet", API_SCOPE_READ, API_BODY_NONE, 200,
                      API_FLEET_PAGE_QUERY ";tag:string:only jobs with this tag, "
                      "KEY:VALUE (team:infra);since:string:models built from this day (YYYY-MM-DD, UTC);"
                      "until:string:models built before this day",
                      "400," E_AUTH ",422",
                      "jobs ranked by wasted GPU-hours a day: the measured step less every actionable opportunity "
                      "replayed together, x world size x steps a day, summed over ranks; dollars; unexplained "
                      "waits listed apart (needs tracing of more ranks)"},
};

const struct api_op_info *api_op_info(enum api_op op)
{
    return &ops[op];
}

int api_id_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (n == 0 || (c != '.' && c != '_' && c != '-')))
            return 0;
    }
    return n >= 1 && n <= 64;
}

/* Split a path into at most 8 segments (none for "/"); -1 when it has
 * more, or empty segments (//, a trailing /), or does not start with /. */
static int split(const char *path, const char *seg[8], size_t len[8])
{
    int n = 0;
    if (*path != '/')
        return -1;
    if (path[1] == '\0')
        return 0;
    for (const char *p = path + 1;;) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0 || n == 8)
            return -1;
        seg[n] = p;
        len[n++] = l;
        if (!e)
            return n;
        p = e + 1;
    }
}

enum match { NO_MATCH, MATCH, BAD_ID, BAD_RANK };

static enum match match(const char *tmpl, const char *const seg[8], const size_t len[8], int n,
                        int64_t max_ranks, struct api_params *p, char *bad, size_t bad_n)
{
    const char *tseg[8];
    size_t tlen[8];
    int tn = split(tmpl, tseg, tlen);
    enum match m = MATCH;
    if (tn != n)
        return NO_MATCH;
    for (int i = 0; i < n; i++) /* literal segments first: they decide the route */
        if (tseg[i][0] != '{' && (tlen[i] != len[i] || memcmp(tseg[i], seg[i], len[i])))
            return NO_MATCH;
    for (int i = 0; i < n && m == MATCH; i++) {
        char v[API_ID_MAX + 8];
        if (tseg[i][0] != '{')
            continue;
        snprintf(v, sizeof v, "%.*s", (int)(len[i] < sizeof v - 1 ? len[i] : sizeof v - 1), seg[i]);
        snprintf(bad, bad_n, "%.*s", (int)(len[i] < 80 ? len[i] : 80), seg[i]);
        if (!strncmp(tseg[i], "{rank}", 6)) {
            int64_t r = 0;
            int ok = len[i] >= 1 && len[i] <= 9 && !(len[i] > 1 && seg[i][0] == '0');
            for (size_t k = 0; ok && k < len[i]; k++) {
                ok = seg[i][k] >= '0' && seg[i][k] <= '9';
                r = r * 10 + (seg[i][k] - '0');
            }
            if (!ok || r >= max_ranks)
                m = BAD_RANK;
            p->rank = r;
        } else if (len[i] > 64 || !api_id_valid(v)) {
            m = BAD_ID;
        } else if (!strncmp(tseg[i], "{job}", 5)) {
            snprintf(p->job, sizeof p->job, "%s", v);
        } else {
            snprintf(p->id, sizeof p->id, "%s", v);
        }
    }
    return m;
}

int api_route(const char *method, const char *path, int64_t max_ranks, enum api_op *op,
              struct api_params *p, struct api_reply *err)
{
    const char *seg[8];
    size_t len[8];
    char allow[64] = "", bad[96] = "";
    int n = split(path, seg, len), path_known = 0;
    enum match worst = NO_MATCH;

    memset(p, 0, sizeof *p);
    p->rank = -1;
    if (strcmp(method, "HEAD") == 0)
        method = "GET";
    for (int i = 0; n >= 0 && i < API_OP_COUNT; i++) {
        struct api_params tmp;
        memset(&tmp, 0, sizeof tmp);
        enum match m = match(ops[i].path, seg, len, n, max_ranks, &tmp, bad, sizeof bad);
        if (m == NO_MATCH)
            continue;
        path_known = 1;
        if (m != MATCH) {
            worst = m;
            continue;
        }
        if (strcmp(ops[i].method, method) == 0) {
            *p = tmp;
            *op = (enum api_op)i;
            return SC_OK;
        }
        size_t k = strlen(allow);
        snprintf(allow + k, sizeof allow - k, "%s%s", k ? ", " : "", ops[i].method);
    }
    if (worst == BAD_RANK)
        return api_fail(err, API_E_INVALID_RANK, "rank '%s' is not an integer in [0, %lld)", bad,
                        (long long)max_ranks);
    if (worst == BAD_ID)
        return api_fail(err, API_E_INVALID_ID,
                        "'%s' is not a valid identifier ([A-Za-z0-9][A-Za-z0-9._-]{0,63})", bad);
    if (!path_known)
        return api_fail(err, API_E_NO_ROUTE, "no route for %s", n >= 0 ? "this path" : "a malformed path");
    api_fail(err, API_E_METHOD, "%s is not allowed here (allowed: %s)", method, allow);
    snprintf(err->allow, sizeof err->allow, "%s", allow);
    return SC_EINVAL;
}

/* Whether `name` is one of the "name:type:desc;..." entries of q. */
static int query_declared(const char *q, const char *name)
{
    size_t n = strlen(name);
    while (q && *q) {
        if (strncmp(q, name, n) == 0 && q[n] == ':')
            return 1;
        q = strchr(q, ';');
        q = q ? q + 1 : NULL;
    }
    return 0;
}

int api_check_query(enum api_op op, const char *const *keys, size_t n, struct api_reply *r)
{
    if (n > 16)
        return api_fail(r, API_E_BAD_REQUEST, "more than 16 query parameters");
    for (size_t i = 0; i < n; i++) {
        if (!query_declared(ops[op].query, keys[i]))
            return api_fail(r, API_E_BAD_REQUEST, "unknown query parameter '%.64s'", keys[i]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(keys[i], keys[j]) == 0 && strcmp(keys[i], "scale") != 0)
                return api_fail(r, API_E_BAD_REQUEST, "query parameter '%.64s' is repeated", keys[i]);
    }
    return SC_OK;
}

int api_route_methods(const char *path, char *out, size_t n)
{
    const char *seg[8];
    size_t len[8];
    char bad[96];
    int ns = split(path, seg, len), found = 0;
    out[0] = '\0';
    for (int i = 0; ns >= 0 && i < API_OP_COUNT; i++) {
        struct api_params tmp;
        if (match(ops[i].path, seg, len, ns, INT64_MAX, &tmp, bad, sizeof bad) == NO_MATCH)
            continue;
        size_t k = strlen(out);
        snprintf(out + k, n - k, "%s%s", found++ ? ", " : "", ops[i].method);
    }
    return found;
}
