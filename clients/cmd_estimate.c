/* clients/cmd_estimate.c: `stepcast estimate --spec F`: the step time,
 * throughput, utilisation, memory and cost of a configuration nobody has
 * traced, from its spec (estimator/synth/estimate.h).
 *
 * Locally a spec's cluster.profile is a cluster profile file: the path as
 * given, else NAME.json in the --calibrations DIR. With a server
 * (`stepcast --server URL estimate ...`) the spec is posted to
 * POST /v1/estimate, where cluster.profile names one of the server's
 * calibrations, and the answer (with its error band from the server's
 * ledger) is printed the same way. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/estimate_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "estimator/synth/estimate.h"
#include "estimator/request_resolve.h"
#include "common/banned.h"

static double num(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

static void print_text(const json_t *d, const char *gpu)
{
    const json_t *b = json_object_get(d, "breakdown"), *band = json_object_get(d, "band");
    const char *reason = json_string_value(json_object_get(d, "fits_reason")), *attention, *recompute;
    size_t i;
    json_t *st;
    if (!json_is_true(json_object_get(d, "fits")))
        printf("DOES NOT FIT: %s\n", reason ? reason : "the memory per GPU is above the GPU's");
    printf("step %.2f ms   %.0f tokens/s   MFU %.1f%%   HFU %.1f%%   on %.0f x %s\n", num(d, "step_ms"),
           num(d, "tokens_per_s"), num(d, "mfu") * 100, num(d, "hfu") * 100, num(d, "gpus"), gpu);
    if (json_is_object(band) && json_object_get(band, "lo_ms"))
        printf("band %.2f - %.2f ms (80%% of %lld ledger entries fell so around their estimate)\n",
               num(band, "lo_ms"), num(band, "hi_ms"), (long long)json_integer_value(json_object_get(band, "entries")));
    attention = json_string_value(json_object_get(d, "memory_attention"));
    recompute = json_string_value(json_object_get(d, "recompute_chosen"));
    char layers[64] = ""; /* full recomputation of some layers */
    if (json_is_integer(json_object_get(d, "recompute_layers_chosen")))
        snprintf(layers, sizeof layers, " (%lld layers of each model chunk)",
                 (long long)json_integer_value(json_object_get(d, "recompute_layers_chosen")));
    printf("memory %.1f GB per GPU (%s attention: %s; recompute %s%s): %s\n", num(d, "memory_gb_per_gpu"),
           attention ? attention : "flash",
           attention && strcmp(attention, "unfused") == 0 ? "the scores kept" : "softmax statistics, not the scores",
           recompute ? recompute : "none", layers,
           json_is_true(json_object_get(d, "fits")) ? "fits" : reason ? reason : "does not fit");
    printf("breakdown (slowest stage): compute %.2f ms, overlapped %.2f, communication %.2f, host %.2f, idle %.2f\n",
           num(b, "compute_exposed"), num(b, "overlap"), num(b, "comm_exposed"), num(b, "host"), num(b, "idle"));
    printf("%-8s %12s %12s %12s\n", "stage", "step ms", "memory GB", "bubble ms");
    json_array_foreach (json_object_get(d, "per_stage"), i, st)
        printf("%-8lld %12.2f %12.2f %12.2f\n", (long long)json_integer_value(json_object_get(st, "stage")),
               num(st, "step_ms"), num(st, "memory_gb"), num(st, "bubble_ms"));
    printf("per million tokens: %.3f GPU-hours, %.2f kWh (GPUs at board power: an upper bound)",
           num(d, "gpu_hours_per_m_tokens"), num(d, "energy_kwh_per_m_tokens"));
    if (json_is_number(json_object_get(d, "cost_usd_per_m_tokens")))
        printf(", $%.2f", num(d, "cost_usd_per_m_tokens"));
    printf("\n");
    if (json_is_number(json_object_get(d, "time_to_train_days")))
        printf("time to train: %.1f days at this step time, without failures\n", num(d, "time_to_train_days"));
}

/* The estimate document of a spec, made here. */
static int estimate_here(const char *text, size_t n, const char *source, const char *calibrations,
                         enum est_detail detail, json_t **doc, char *gpu, size_t gpu_n)
{
    struct est_spec spec;
    struct est_estimate e;
    int rc = cli_estimate(text, n, source, calibrations, detail, &spec, &e);
    if (rc)
        return rc;
    snprintf(gpu, gpu_n, "%s", spec.cluster.gpu);
    *doc = api_estimate_json(&e);
    synth_estimate_release(&e);
    return *doc ? 0 : 1;
}

/* The estimate document of a spec, from the server. */
static int estimate_remote(const char *text, enum est_detail detail, json_t **doc, char *gpu, size_t gpu_n)
{
    char path[64];
    json_t *spec = json_loads(text, 0, NULL);
    snprintf(gpu, gpu_n, "%s", json_string_value(json_object_get(json_object_get(spec, "cluster"), "gpu"))
                                   ? json_string_value(json_object_get(json_object_get(spec, "cluster"), "gpu"))
                                   : "?");
    json_decref(spec);
    snprintf(path, sizeof path, "/v1/estimate?detail=%s", synth_detail_name(detail));
    return remote_json("POST", path, text, 200, (void **)doc);
}

int cmd_estimate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"spec", required_argument, NULL, 's'},
        {"detail", required_argument, NULL, 'd'},
        {"calibrations", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"require-fit", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *spec_path = NULL, *calibrations = NULL;
    enum est_detail detail = EST_DETAIL_STAGE;
    int json = 0, require_fit = 0, c, rc;
    struct sc_error err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "s:d:c:jh", opts, NULL)) != -1) {
        switch (c) {
        case 's': spec_path = optarg; break;
        case 'd':
            if (synth_detail_parse(optarg, &detail, &err))
                return cli_fail(&err);
            break;
        case 'c': calibrations = optarg; break;
        case 'j': json = 1; break;
        case 'f': require_fit = 1; break;
        case 'h':
            printf("usage: stepcast [--server URL] estimate --spec F [--detail stage|layer|kernel] "
                   "[--calibrations DIR] [--require-fit] [--json]\n"
                   "       --require-fit: exit 3 when the configuration does not fit in the GPU's memory\n");
            return 0;
        default: return cli_usage_error("estimate", "bad option");
        }
    }
    if (!spec_path || optind < argc)
        return cli_usage_error("estimate", spec_path ? "unexpected argument '%s'" : "--spec F is required",
                               optind < argc ? argv[optind] : "");
    if (calibrations) /* local files: the server's spec names its own calibrations */
        remote_stay_local();
    size_t n;
    char *text, gpu[64] = "";
    json_t *doc = NULL;
    if (cli_read_file(spec_path, 1 << 20, &text, &n, &err))
        return cli_fail(&err);
    rc = remote_configured() ? estimate_remote(text, detail, &doc, gpu, sizeof gpu)
                             : estimate_here(text, n, spec_path, calibrations, detail, &doc, gpu, sizeof gpu);
    free(text);
    if (!rc) {
        if (json)
            rc = cli_print_json(doc);
        else
            print_text(doc, gpu);
        if (!rc && require_fit && !json_is_true(json_object_get(doc, "fits")))
            rc = 3;
    }
    json_decref(doc);
    return rc;
}
