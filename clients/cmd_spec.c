/* clients/cmd_spec.c: `stepcast spec`: write and check estimation specs.
 *
 *   stepcast spec from-hf [--seq N] CONFIG.json   the "model" object of a
 *       spec from a Hugging Face config.json, on stdout; with --gpus N
 *       --gpu ID [--global-batch B], the whole spec, its layout the one
 *       the planner ranks first (4 Mi tokens a step unless B is given)
 *   stepcast spec check SPEC.json                 check a spec; print it
 *       with every default written out, and on stderr its GPUs,
 *       parameters, FLOPs per token and memory per GPU
 *
 * Exit status 2 for an invalid config or spec, the field named. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "estimator/plan/bands.h"
#include "estimator/spec/flops.h"
#include "estimator/spec/hf_config.h"
#include "estimator/spec/memory.h"
#include "estimator/plan/plan.h"
#include "estimator/spec/spec.h"
#include "common/banned.h"

/* Specs and configs are small; larger files are not one. */
#define SPEC_FILE_MAX (1 << 20)

static const char spec_usage[] =
    "usage: stepcast spec from-hf [--seq N] [--gpus N --gpu ID [--global-batch B]] CONFIG.json\n"
    "       stepcast spec check SPEC.json\n";

/* The tokens a step trains when --global-batch is not given: 4 Mi, as
 * recent pre-training runs take (Llama 3 trained at 4M, then 8M and 16M
 * tokens a batch). */
#define FROM_HF_STEP_TOKENS (4ll << 20)

static int print_text(char *text)
{
    if (!text) {
        fprintf(stderr, "stepcast: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

static int positive_opt(const char *name, const char *v, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < 1 || x > max)
        return cli_usage_error("spec", "%s needs a whole number from 1 to %lld, not '%s'", name, max, v);
    *out = x;
    return 0;
}

/* The whole spec of `model` (read from `path`) on `gpus` GPUs of `gpu`:
 * the layout the planner ranks first (as `stepcast plan` ranks: estimate's
 * costs, the time objective, the built-in bands), printed with every
 * default; an error names the config file. */
static int whole_spec(const char *path, const struct est_model *model, long long gpus, const char *gpu,
                      long long batch)
{
    struct est_plan_request req;
    struct est_plan_estimator est;
    struct est_plan_evaluator ev;
    struct est_plan plan;
    struct sc_error err;
    char *model_text = spec_model_json(model), *doc = NULL;
    if (!model_text)
        return print_text(NULL);
    if (!batch) { /* FROM_HF_STEP_TOKENS, whole multiples of the GPUs: any dp divides it */
        long long seqs = (FROM_HF_STEP_TOKENS + model->seq - 1) / model->seq;
        batch = (seqs + gpus - 1) / gpus * gpus;
    }
    /* {"model": {...}} with the parallel and cluster objects added: a
     * planning spec */
    char *close = strrchr(model_text, '}');
    size_t len = strlen(model_text) + strlen(gpu) + 160;
    if (close && (doc = malloc(len)))
        snprintf(doc, len, "%.*s,\"parallel\":{\"global_batch\":%lld},\"cluster\":{\"gpu\":\"%s\"}}",
                 (int)(close - model_text), model_text, batch, gpu);
    free(model_text);
    if (!doc)
        return print_text(NULL);
    memset(&req, 0, sizeof req);
    int rc = plan_parse_spec(doc, strlen(doc), &req, &err);
    free(doc);
    if (rc || spec_check_gpu(&req.spec, &est.hw, &err)) {
        sc_error_prefix(&err, "%s", path);
        return cli_fail(&err);
    }
    req.gpus = gpus;
    req.top = 1;
    req.objective = EST_OBJECTIVE_TIME;
    req.bands = plan_bands_builtin(); /* ranked as `stepcast plan` ranks */
    if ((rc = cli_spec_costs(&req.spec, est.hw, NULL, &est.costs)))
        return rc;
    plan_evaluator_estimate(&est, &ev);
    if (plan_run(&req, &ev, NULL, NULL, &plan, &err)) {
        sc_error_prefix(&err, "%s", path);
        return cli_fail(&err);
    }
    if (!plan.n_rows) {
        plan_release(&plan);
        fprintf(stderr,
                "stepcast: %s: no layout of %lld %s fits this model at a global batch of %lld: try more GPUs\n",
                path, gpus, gpu, batch);
        return 2;
    }
    const struct est_plan_row *row = &plan.rows[0];
    const struct est_parallel *p = &row->spec.parallel;
    fprintf(stderr,
            "stepcast: the planner's first layout of %lld layouts (stepcast plan --gpus %lld ranks them all): tp %lld, "
            "pp %lld, dp %lld, cp %lld, micro-batch %lld, global batch %lld (%lld tokens a step; --global-batch B "
            "for another): step %.1f ms, MFU %.1f%%\n",
            (long long)plan.space, gpus, (long long)p->tp, (long long)p->pp, (long long)p->dp, (long long)p->cp,
            (long long)p->micro_batch, (long long)p->global_batch, (long long)p->global_batch * model->seq,
            row->estimate.step_ms, 100 * row->estimate.mfu);
    rc = print_text(spec_json(&row->spec));
    plan_release(&plan);
    return rc;
}

static int from_hf(int argc, char **argv)
{
    struct sc_error err;
    struct est_model model;
    const char *path = NULL, *seq_from = NULL, *gpu = NULL;
    long long seq = 0, gpus = 0, batch = 0;
    char *text;
    size_t n;
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && !strcmp(a, "--seq")) {
            if ((rc = positive_opt(a, argv[++i], 1ll << 24, &seq)))
                return rc;
        } else if (v && !strcmp(a, "--gpus")) {
            if ((rc = positive_opt(a, argv[++i], 1ll << 20, &gpus)))
                return rc;
        } else if (v && !strcmp(a, "--global-batch")) {
            if ((rc = positive_opt(a, argv[++i], 1ll << 24, &batch)))
                return rc;
        } else if (v && !strcmp(a, "--gpu")) {
            gpu = argv[++i];
        } else if (a[0] == '-' || path) {
            return cli_usage_error("spec", "%s", spec_usage);
        } else {
            path = a;
        }
    }
    if (!path)
        return cli_usage_error("spec", "from-hf needs CONFIG.json");
    if ((gpus || batch) && !gpu)
        return cli_usage_error("spec", "--gpus and --global-batch make a whole spec: name its GPU with --gpu ID");
    if (gpu && !gpus)
        return cli_usage_error("spec", "--gpu makes a whole spec: give its GPUs with --gpus N");
    if (cli_read_file(path, SPEC_FILE_MAX, &text, &n, &err))
        return cli_fail(&err);
    rc = spec_model_from_hf(text, n, seq, &model, &seq_from, &err);
    free(text);
    if (rc) {
        sc_error_prefix(&err, "%s", path);
        return cli_fail(&err);
    }
    if (!seq)
        fprintf(stderr, "stepcast: seq %lld from %s; pass --seq N to train at another length\n",
                (long long)model.seq, seq_from);
    return gpu ? whole_spec(path, &model, gpus, gpu, batch) : print_text(spec_model_json(&model));
}

static int check(int argc, char **argv)
{
    struct sc_error err;
    struct est_spec spec;
    char *text;
    size_t n;
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage_error("spec", "%s", spec_usage);
    if (cli_read_file(argv[1], SPEC_FILE_MAX, &text, &n, &err))
        return cli_fail(&err);
    const struct hw_profile *hw;
    int rc = spec_load(text, n, &spec, &hw, &err);
    free(text);
    if (rc) {
        sc_error_prefix(&err, "%s", argv[1]);
        return cli_fail(&err);
    }
    /* what follows from it, on stderr: stdout stays the spec */
    struct est_params params;
    struct est_memory mem;
    char fit[160];
    spec_model_params(&spec.model, &params);
    if (spec_memory_estimate(&spec, hw->hbm_gb, &mem, &err))
        return cli_fail(&err);
    spec_memory_fit_text(&mem, fit, sizeof fit);
    fprintf(stderr,
            "%lld GPUs (%s); %.4g parameters, %.4g in the GEMMs a token passes; %.4g model "
            "FLOPs per token; %s\n",
            (long long)spec_gpus(&spec), hw->id, params.total, params.active_gemm,
            spec_model_flops_per_token(&spec.model), fit);
    spec_memory_release(&mem);
    return print_text(spec_json(&spec));
}

int cmd_spec(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(spec_usage, stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "from-hf"))
        return from_hf(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "check"))
        return check(argc - 1, argv + 1);
    return cli_usage_error("spec", "%s", spec_usage);
}
