/* clients/cmd_estimate.c: `stepcast estimate --spec F`: the step time,
 * throughput, utilisation, memory and cost of a configuration nobody has
 * traced, from its spec (estimator/estimate.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/estimate_json.h"
#include "clients/cli.h"
#include "estimator/estimate.h"
#include "common/banned.h"

static void print_text(const struct est_spec *s, const struct est_estimate *e)
{
    printf("step %.2f ms   %.0f tokens/s   MFU %.1f%%   HFU %.1f%%   on %.0f x %s\n", e->step_ms,
           e->tokens_per_s, e->mfu * 100, e->hfu * 100, e->gpus, s->cluster.gpu);
    printf("memory %.1f GB per GPU (%s attention: %s): %s\n", e->memory_gb_per_gpu, e->memory_attention,
           strcmp(e->memory_attention, "unfused") == 0 ? "the scores kept" : "softmax statistics, not the scores",
           e->fits ? "fits" : e->fits_reason);
    printf("breakdown (slowest stage): compute %.2f ms, overlapped %.2f, communication %.2f, host %.2f, idle %.2f\n",
           e->breakdown.compute_exposed / 1e6, e->breakdown.overlap / 1e6, e->breakdown.comm_exposed / 1e6,
           e->breakdown.host / 1e6, e->breakdown.idle / 1e6);
    printf("%-8s %12s %12s %12s\n", "stage", "step ms", "memory GB", "bubble ms");
    for (size_t i = 0; i < e->n_stages; i++)
        printf("%-8d %12.2f %12.2f %12.2f\n", e->stages[i].stage, e->stages[i].step_ms, e->stages[i].memory_gb,
               e->stages[i].bubble_ms);
    printf("per million tokens: %.3f GPU-hours, %.2f kWh (GPUs at board power: an upper bound)",
           e->gpu_hours_per_m_tokens, e->energy_kwh_per_m_tokens);
    if (e->cost_usd_per_m_tokens >= 0)
        printf(", $%.2f", e->cost_usd_per_m_tokens);
    printf("\n");
    if (e->time_to_train_days >= 0)
        printf("time to train: %.1f days at this step time, without failures\n", e->time_to_train_days);
}

int cli_load_spec(const char *path, struct est_spec *spec, const struct hw_profile **hw,
                  struct est_costs *costs)
{
    struct sc_error err;
    size_t n;
    char *text;
    int rc;
    if (cli_read_file(path, 1 << 20, &text, &n, &err))
        return cli_fail(&err);
    rc = est_spec_load(text, n, spec, hw, &err);
    free(text);
    if (rc)
        return cli_fail(&err);
    est_costs_default(*hw, spec, costs);
    if (spec->cluster.profile[0]) {
        char *profile = NULL;
        rc = cli_read_file(spec->cluster.profile, 16 << 20, &profile, &n, &err);
        if (!rc)
            rc = est_costs_apply_profile(costs, profile, n, spec->cluster.gpu, &err);
        free(profile);
        if (rc)
            return cli_fail(&err);
    }
    return 0;
}

int cmd_estimate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"spec", required_argument, NULL, 's'},
        {"detail", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *spec_path = NULL;
    enum est_detail detail = EST_DETAIL_STAGE;
    int json = 0, c, rc;
    struct sc_error err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "s:d:jh", opts, NULL)) != -1) {
        switch (c) {
        case 's': spec_path = optarg; break;
        case 'd':
            if (est_detail_parse(optarg, &detail, &err))
                return cli_fail(&err);
            break;
        case 'j': json = 1; break;
        case 'h':
            printf("usage: stepcast estimate --spec F [--detail stage|layer|kernel] [--json]\n");
            return 0;
        default: return cli_usage_error("estimate", "bad option");
        }
    }
    if (!spec_path || optind < argc)
        return cli_usage_error("estimate", spec_path ? "unexpected argument '%s'" : "--spec F is required",
                               optind < argc ? argv[optind] : "");
    struct est_spec spec;
    const struct hw_profile *hw;
    struct est_costs costs;
    struct est_estimate e;
    if ((rc = cli_load_spec(spec_path, &spec, &hw, &costs)))
        return rc;
    if (est_estimate(&spec, hw, &costs, detail, &e, &err))
        return cli_fail(&err);
    if (json) {
        json_t *doc = api_estimate_json(&e);
        rc = doc ? cli_print_json(doc) : 1;
        json_decref(doc);
    } else {
        print_text(&spec, &e);
        rc = 0;
    }
    est_estimate_release(&e);
    return rc;
}
