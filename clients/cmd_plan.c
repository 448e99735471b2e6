/* clients/cmd_plan.c: `stepcast plan --spec F --gpus N`: the best
 * configurations of a model on N GPUs (estimator/plan/plan.h), as a table, the
 * plan document (--json) or the Megatron-LM arguments that run each row
 * (--megatron). A progress bar goes to stderr when it is a terminal.
 *
 * Locally the spec's cluster.profile is found as `stepcast estimate` finds
 * it. With a server (`stepcast --server URL plan ...`) the request is
 * posted to POST /v1/plans and polled at GET /v1/plans/{id} until the plan
 * is done.
 *
 * Rows rank at a risk (--risk P, 0.5 to 1; estimator/plan/bands.h): by the
 * step time the band of their region puts at the P-quantile; the table
 * shows it beside the estimate, marks a row beyond what was validated
 * with '!' and says why under it, and gives the top row's estimate at
 * kernel detail. Locally the bands are the compiled-in ones; a server
 * merges its ledger into them.
 *
 * From a traced job instead of a spec (estimator/whatif/whatif_plan.h), each
 * candidate the what-if of the job: `--from-traces --config F TRACE...`
 * here, `--from-model ID` on the server (POST /v1/models/{id}/plan). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "api/megatron_args.h"
#include "api/plan_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "estimator/model_open.h"
#include "estimator/plan/plan.h"
#include "estimator/whatif/whatif_plan.h"
#include "model/graph.h"
#include "model/job.h"
#include "common/banned.h"

static void progress_bar(int64_t done, int64_t total)
{
    int width = 40, fill = total > 0 ? (int)(done * width / total) : 0;
    fprintf(stderr, "\rplanning [%.*s%*s] %lld/%lld", fill, "########################################",
            width - fill, "", (long long)done, (long long)total);
    if (done >= total)
        fputc('\n', stderr);
    fflush(stderr);
}

static int local_progress(void *ctx, int64_t done, int64_t total)
{
    (void)ctx;
    progress_bar(done, total);
    return 0;
}

/* Plan req here with ev: the plan document in *doc. */
static int run_plan(const struct est_plan_request *req, const struct est_plan_evaluator *ev, json_t **doc)
{
    struct est_plan plan;
    struct sc_error err;
    if (plan_run(req, ev, isatty(2) ? local_progress : NULL, NULL, &plan, &err))
        return cli_fail(&err);
    *doc = api_plan_json(&plan);
    plan_release(&plan);
    return *doc ? 0 : 1;
}

static int plan_here(const char *calibrations, const struct est_plan_request *req, json_t **doc)
{
    struct est_plan_estimator est;
    struct est_plan_evaluator ev;
    struct sc_error err;
    int rc;
    if (spec_check_gpu(&req->spec, &est.hw, &err))
        return cli_fail(&err);
    struct est_plan_request banded = *req;
    banded.bands = plan_bands_builtin();
    req = &banded;
    if ((rc = cli_spec_costs(&req->spec, est.hw, calibrations, &est.costs)))
        return rc;
    plan_evaluator_estimate(&est, &ev);
    return run_plan(req, &ev, doc);
}

/* The plan of a traced job: its graph's what-ifs. */
static int plan_traces(const char *config, char **traces, int n, struct est_plan_request *req, json_t **doc)
{
    struct job_config cfg;
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct est_traced_model *m = NULL;
    struct whatif_planner w = {0};
    struct est_plan_evaluator ev;
    struct sc_error err;
    int rc;
    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    /* each trace shed once built: the what-ifs read the notes taken of it */
    if ((rc = cli_load_job_config(config, &cfg)) ||
        (rc = cli_open_traces((const char *const *)traces, (size_t)n, &lo, &go, EST_KEEP_NOTES, &m)))
        return rc;
    if (whatif_plan_request(est_model_graph(m), est_model_notes(m), &cfg, req, &w, &err)) {
        rc = cli_fail(&err);
    } else {
        whatif_plan_evaluator(&w, &ev);
        rc = run_plan(req, &ev, doc);
    }
    whatif_plan_release(&w);
    est_model_close(m);
    return rc;
}

/* Post the plan request body `spec` (a spec's text, or NULL: from model
 * `model`) and poll until the plan is done. */
static int plan_remote(const char *text, const char *model, const struct est_plan_request *req, json_t **doc)
{
    struct remote r;
    struct remote_resp resp = {0};
    struct sc_error err;
    json_t *spec = text ? json_loads(text, 0, NULL) : NULL, *body;
    char *json = NULL, path[600], esc[512];
    int rc = 1, tty = isatty(2);
    if (text && !spec) {
        err.code = SC_EPARSE;
        snprintf(err.msg, sizeof err.msg, "--spec: not valid JSON");
        return cli_fail(&err);
    }
    body = json_pack("{s:I, s:b, s:I, s:s}", "gpus", (json_int_t)req->gpus, "up_to", req->up_to, "top",
                     (json_int_t)req->top, "objective", plan_objective_name(req->objective));
    if (body && spec) { /* a plan of what-ifs has no bands: no risk */
        json_object_set_new(body, "spec", spec);
        json_object_set_new(body, "risk", json_real(req->risk));
    }
    json = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!json || remote_open(&r, &err)) {
        free(json);
        return json ? cli_fail(&err) : 1;
    }
    if (model) {
        remote_escape(model, esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/models/%s/plan", esc);
    } else {
        snprintf(path, sizeof path, "/v1/plans");
    }
    if (remote_call(&r, "POST", path, json, &resp, &err)) {
        rc = cli_fail(&err);
        goto out;
    }
    while (resp.status == 202 || (resp.status == 200 && strstr(resp.body, "\"state\":\"running\""))) {
        json_t *d = json_loads(resp.body, 0, NULL);
        const char *id = json_string_value(json_object_get(d, "id"));
        json_t *p = json_object_get(d, "progress");
        if (!id) {
            json_decref(d);
            break;
        }
        if (tty && p)
            progress_bar(json_integer_value(json_object_get(p, "done")), json_integer_value(json_object_get(p, "total")) + 1);
        snprintf(path, sizeof path, "/v1/plans/%.64s", id);
        json_decref(d);
        remote_resp_release(&resp);
        nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
        if (remote_call(&r, "GET", path, NULL, &resp, &err)) {
            rc = cli_fail(&err);
            goto out;
        }
    }
    if (resp.status != 200) {
        rc = remote_fail(&resp);
    } else if (!(*doc = json_loads(resp.body, 0, NULL))) {
        fprintf(stderr, "stepcast: the server's plan is not JSON\n");
    } else {
        if (tty)
            progress_bar(1, 1);
        rc = 0;
    }
out:
    remote_resp_release(&resp);
    remote_close(&r);
    free(json);
    return rc;
}

static long long iget(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Under the table: the top row at kernel detail, and why each row marked
 * '!' lies beyond what was validated. */
static void print_notes(const json_t *doc)
{
    size_t i;
    json_t *row;
    json_array_foreach (json_object_get(doc, "top"), i, row) {
        const json_t *k = json_object_get(row, "kernel");
        if (k)
            printf("#%zu at kernel detail: %.2f ms (stage detail %.2f ms), MFU %.1f%%\n", i + 1,
                   cli_json_num(k, "step_ms"), cli_json_num(json_object_get(row, "estimate"), "step_ms"),
                   cli_json_num(k, "mfu") * 100);
    }
    json_array_foreach (json_object_get(doc, "top"), i, row)
        if (json_is_true(json_object_get(row, "extrapolated")))
            printf("! #%zu extrapolated: %s\n", i + 1, sget(row, "extrapolated_because"));
}

static void print_table(const json_t *doc, int moe)
{
    size_t i;
    json_t *row;
    int banded = json_object_get(doc, "top") && json_array_size(json_object_get(doc, "top")) &&
                 json_object_get(json_array_get(json_object_get(doc, "top"), 0), "at_risk");
    char at_risk[32] = "";
    if (banded)
        snprintf(at_risk, sizeof at_risk, "ms at p%.0f", cli_json_num(doc, "risk") * 100);
    printf("%-4s %3s %3s %3s %4s %s%3s %-13s %-9s %2s %4s %11s %*s%s%11s %6s %7s %10s\n", "#", "tp", "cp", "pp", "dp",
           moe ? " ep " : "", "mb", "schedule", "recompute", "sp", "zero", "step ms", banded ? 11 : 0, at_risk,
           banded ? " " : "", "tokens/s", "MFU", "mem GB", "GPU-h/Mtok");
    json_array_foreach (json_object_get(doc, "top"), i, row) {
        const json_t *p = json_object_get(row, "parallel"), *o = json_object_get(row, "options"),
                     *e = json_object_get(row, "estimate");
        char sched[32], ep[16] = "", risk[32] = "", num[8];
        snprintf(num, sizeof num, "%zu%s", i + 1, json_is_true(json_object_get(row, "extrapolated")) ? "!" : "");
        if (banded)
            snprintf(risk, sizeof risk, "%11.2f ", cli_json_num(json_object_get(row, "at_risk"), "step_ms"));
        if (iget(p, "vpp") > 1)
            snprintf(sched, sizeof sched, "interleaved/%lld", iget(p, "vpp"));
        else
            snprintf(sched, sizeof sched, "%s", sget(p, "schedule"));
        if (moe)
            snprintf(ep, sizeof ep, "%3lld ", iget(p, "ep"));
        printf("%-4s %3lld %3lld %3lld %4lld %s%3lld %-13s %-9s %2s %4lld %11.2f %s%11.0f %5.1f%% %7.1f %10.3f\n",
               num, iget(p, "tp"), iget(p, "cp"), iget(p, "pp"), iget(p, "dp"), ep, iget(p, "micro_batch"), sched,
               sget(o, "recompute"), json_is_true(json_object_get(o, "sequence_parallel")) ? "y" : "n",
               iget(o, "zero_stage"), cli_json_num(e, "step_ms"), risk, cli_json_num(e, "tokens_per_s"),
               cli_json_num(e, "mfu") * 100, cli_json_num(e, "memory_gb_per_gpu"),
               cli_json_num(e, "gpu_hours_per_m_tokens"));
    }
    printf("evaluated %lld, pruned %lld (provably outside the top), infeasible: memory %lld, divisibility %lld\n",
           iget(doc, "evaluated"), iget(doc, "pruned"), iget(json_object_get(doc, "infeasible"), "memory"),
           iget(json_object_get(doc, "infeasible"), "divisibility"));
    print_notes(doc);
}

/* The Megatron-LM (megatron-core) arguments that run each row of the plan
 * of spec s. */
static int print_megatron(const json_t *doc, const struct est_spec *s)
{
    size_t i;
    json_t *row;
    json_array_foreach (json_object_get(doc, "top"), i, row) {
        char *args = api_megatron_args(&s->model, s->options.dtype, json_object_get(row, "parallel"),
                                       json_object_get(row, "options"));
        if (!args) {
            struct sc_error err;
            sc_error_set(&err, SC_ENOMEM, "out of memory");
            return cli_fail(&err);
        }
        printf("# %zu: %.2f ms\n%s\n", i + 1, cli_json_num(json_object_get(row, "estimate"), "step_ms"), args);
        free(args);
    }
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    static const struct option opts[] = {
        {"spec", required_argument, NULL, 's'},
        {"gpus", required_argument, NULL, 'g'},
        {"up-to", no_argument, NULL, 'u'},
        {"top", required_argument, NULL, 't'},
        {"objective", required_argument, NULL, 'o'},
        {"megatron", no_argument, NULL, 'm'},
        {"calibrations", required_argument, NULL, 'c'},
        {"from-model", required_argument, NULL, 'M'},
        {"from-traces", no_argument, NULL, 'T'},
        {"config", required_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'j'},
        {"risk", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *spec_path = NULL, *calibrations = NULL, *model = NULL, *config = NULL;
    struct est_plan_request req;
    int json = 0, megatron = 0, traces = 0, risk = 0, c, rc;
    struct sc_error err;
    char *end;

    memset(&req, 0, sizeof req);
    req.top = API_PLAN_DEFAULT_TOP;
    req.risk = EST_RISK_DEFAULT;
    optind = 1;
    while ((c = getopt_long(argc, argv, "s:g:ut:o:mc:M:TC:jr:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': spec_path = optarg; break;
        case 'g':
            req.gpus = strtoll(optarg, &end, 10);
            if (*end || req.gpus < 1 || req.gpus > (1 << 20))
                return cli_usage_error("plan", "--gpus: '%s' is not a whole number from 1 to %d", optarg, 1 << 20);
            break;
        case 'u': req.up_to = 1; break;
        case 't': {
            long long k = strtoll(optarg, &end, 10);
            if (*end || k < 1 || k > EST_PLAN_MAX_TOP)
                return cli_usage_error("plan", "--top: '%s' is not a whole number from 1 to %d", optarg,
                                       EST_PLAN_MAX_TOP);
            req.top = (size_t)k;
            break;
        }
        case 'o':
            if (plan_objective_parse(optarg, &req.objective, &err))
                return cli_usage_error("plan", "--%s", err.msg);
            break;
        case 'm': megatron = 1; break;
        case 'c': calibrations = optarg; break;
        case 'M': model = optarg; break;
        case 'T': traces = 1; break;
        case 'C': config = optarg; break;
        case 'j': json = 1; break;
        case 'r':
            risk = 1;
            req.risk = strtod(optarg, &end);
            if (end == optarg || *end || plan_risk_check(req.risk, "--risk", &err))
                return cli_usage_error("plan", "--risk: '%s' is not a number from 0.5 to 1 (0.5: the median, "
                                               "0.9: measured above it one time in ten)", optarg);
            break;
        case 'h':
            printf("usage: stepcast [--server URL] plan --spec F --gpus N [--up-to] [--top K] "
                   "[--objective time|cost] [--risk P] [--megatron] [--calibrations DIR] [--json]\n"
                   "       stepcast plan --from-traces --config F --gpus N [...] TRACE...\n"
                   "       stepcast --server URL plan --from-model ID --gpus N [...]\n"
                   "(from a traced job every candidate is the job's what-if; --risk P, 0.5 to 1: rank by the\n"
                   " step time at the P-quantile of the error band of each row's region, 0.5 by default)\n");
            return 0;
        default: return cli_usage_error("plan", "bad option");
        }
    }
    if (traces || calibrations) /* local files: the traces, the calibrations folder */
        remote_stay_local();
    if (model || traces) {
        json_t *doc = NULL;
        if (spec_path || calibrations || megatron || risk)
            return cli_usage_error("plan", "--spec, --calibrations, --megatron and --risk are for plans from a spec");
        if (!req.gpus)
            return cli_usage_error("plan", "--gpus N is required");
        if (model && (traces || config || optind < argc || !remote_configured()))
            return cli_usage_error("plan", "--from-model ID is the server's model: give --server URL, no --config "
                                           "nor traces");
        if (traces && (!config || optind >= argc))
            return cli_usage_error("plan", "--from-traces needs --config F and the traces");
        rc = model ? plan_remote(NULL, model, &req, &doc)
                   : plan_traces(config, argv + optind, argc - optind, &req, &doc);
        if (!rc)
            rc = json ? cli_print_json(doc) : (print_table(doc, 0), 0);
        json_decref(doc);
        return rc;
    }
    if (!spec_path || !req.gpus || optind < argc)
        return cli_usage_error("plan", optind < argc ? "unexpected argument '%s'" : "--spec F and --gpus N are required",
                               optind < argc ? argv[optind] : "");
    size_t n;
    char *text;
    json_t *doc = NULL;
    if (cli_read_file(spec_path, 1 << 20, &text, &n, &err))
        return cli_fail(&err);
    /* the model of the spec, for --megatron and the table, parsed here either way */
    if (plan_parse_spec(text, n, &req, &err)) {
        free(text);
        sc_error_prefix(&err, "%s", spec_path);
        return cli_fail(&err);
    }
    rc = remote_configured() ? plan_remote(text, NULL, &req, &doc) : plan_here(calibrations, &req, &doc);
    free(text);
    if (!rc) {
        if (json)
            rc = cli_print_json(doc);
        else if (megatron)
            rc = print_megatron(doc, &req.spec);
        else
            print_table(doc, req.spec.model.moe.experts > 0);
    }
    json_decref(doc);
    return rc;
}
