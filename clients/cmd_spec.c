/* clients/cmd_spec.c: `stepcast spec`: write and check estimation specs.
 *
 *   stepcast spec from-hf [--seq N] CONFIG.json   the "model" object of a
 *       spec from a Hugging Face config.json, on stdout
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
#include "estimator/flops.h"
#include "estimator/hf_config.h"
#include "estimator/memory.h"
#include "estimator/spec.h"
#include "common/banned.h"

/* Specs and configs are small; larger files are not one. */
#define SPEC_FILE_MAX (1 << 20)

static const char spec_usage[] = "usage: stepcast spec from-hf [--seq N] CONFIG.json\n"
                                 "       stepcast spec check SPEC.json\n";

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

static int from_hf(int argc, char **argv)
{
    struct sc_error err;
    struct est_model model;
    const char *path = NULL, *seq_from = NULL;
    long long seq = 0;
    char *text, *end;
    size_t n;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seq") && i + 1 < argc) {
            errno = 0;
            seq = strtoll(argv[++i], &end, 10);
            if (errno || *end || seq < 1)
                return cli_usage_error("spec", "--seq needs a positive integer, not '%s'", argv[i]);
        } else if (argv[i][0] == '-' || path) {
            return cli_usage_error("spec", "%s", spec_usage);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return cli_usage_error("spec", "from-hf needs CONFIG.json");
    if (cli_read_file(path, SPEC_FILE_MAX, &text, &n, &err))
        return cli_fail(&err);
    int rc = est_model_from_hf(text, n, seq, &model, &seq_from, &err);
    free(text);
    if (rc) {
        sc_error_prefix(&err, "%s", path);
        return cli_fail(&err);
    }
    if (!seq)
        fprintf(stderr, "stepcast: seq %lld from %s; pass --seq N to train at another length\n",
                (long long)model.seq, seq_from);
    return print_text(est_model_json(&model));
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
    int rc = est_spec_load(text, n, &spec, &hw, &err);
    free(text);
    if (rc) {
        sc_error_prefix(&err, "%s", argv[1]);
        return cli_fail(&err);
    }
    /* what follows from it, on stderr: stdout stays the spec */
    struct est_params params;
    struct est_memory mem;
    char fit[160];
    est_model_params(&spec.model, &params);
    if (est_memory_estimate(&spec, hw->hbm_gb, &mem, &err))
        return cli_fail(&err);
    est_memory_fit_text(&mem, fit, sizeof fit);
    fprintf(stderr,
            "%lld GPUs (%s); %.4g parameters, %.4g in the GEMMs a token passes; %.4g model "
            "FLOPs per token; %s\n",
            (long long)est_spec_gpus(&spec), hw->id, params.total, params.active_gemm,
            est_model_flops_per_token(&spec.model), fit);
    est_memory_release(&mem);
    return print_text(est_spec_json(&spec));
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
