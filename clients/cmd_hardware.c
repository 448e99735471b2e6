/* clients/cmd_hardware.c: `stepcast hardware [--json] [ID]`, the GPU
 * profiles that estimates use (data/hardware): those built in here, or
 * with a server (`stepcast --server URL hardware ...`) the server's, from
 * GET /v1/hardware[/ID]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/hardware_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "estimator/costs/hardware.h"
#include "common/banned.h"

/* "label: fp32 67 tf32 494.7 ...": the dtypes the table has. */
static void print_dtypes(const char *label, const double *tflops)
{
    printf("%s", label);
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        if (tflops[d] > 0)
            printf(" %s %g", cost_hw_dtype_name((enum hw_dtype)d), tflops[d]);
}

static int print_one(const struct hw_profile *p, int as_json)
{
    if (as_json) {
        json_t *o = api_hardware_json(p);
        int rc = o ? cli_print_json(o) : 1;
        json_decref(o);
        return rc;
    }
    printf("%s: %s (%s)\n", p->id, p->name, cost_hw_arch_name(p->arch));
    printf("  SMs %d, HBM %.0f GB at %.0f GB/s, %.0f W\n", p->sm_count, p->hbm_gb, p->hbm_gbps,
           p->board_power_w);
    print_dtypes("  dense peak TFLOP/s:", p->peak_tflops);
    if (cost_hw_has_gemm_tflops(p))
        print_dtypes("\n  GEMM ceiling measured on it, TFLOP/s:", p->gemm_tflops);
    if (p->attn_efficiency > 0)
        printf("\n  flash attention measured on it: %.3f of the GEMM ceiling + %.2f us a wave of query blocks; "
               "backward %.3f of that + %.2f us", p->attn_efficiency, p->attn_block_us, p->attn_backward_fraction,
               p->attn_backward_block_us);
    printf("\n  NVLink domain of %d GPUs at %g GB/s per direction%s; network %g GB/s per direction\n",
           p->gpus_per_node, p->nvlink_gbps, p->nvls ? " (NVLink SHARP)" : "", p->network_gbps);
    const char *sep = "  NCCL measured in the NVLink domain (collective lines):";
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++)
        if (p->coll_lines[k].n > 0) {
            printf("%s %s", sep, cost_coll_kind_name((enum model_coll_op)k));
            sep = ",";
        }
    if (sep[0] == ',')
        printf("\n");
    for (int i = 0; i < p->n_device_names; i++)
        printf("  traces name it \"%s\"\n", p->device_names[i]);
    return 0;
}

/* A profile document of the server's, printed as the local ones are. */
static int print_doc(json_t *o, int as_json)
{
    struct hw_profile p;
    struct sc_error err;
    char *text = json_dumps(o, JSON_COMPACT);
    int rc = text && !as_json ? cost_hw_profile_parse(text, strlen(text), &p, &err) : 1;
    free(text);
    return rc ? cli_print_json(o) : print_one(&p, 0);
}

static int hardware_remote(const char *id, int as_json)
{
    char path[256], esc[200];
    json_t *doc, *p;
    size_t i;
    int rc;
    remote_escape(id ? id : "", esc, sizeof esc);
    snprintf(path, sizeof path, "/v1/hardware%s%s", id ? "/" : "", esc);
    if ((rc = remote_json("GET", path, NULL, 200, (void **)&doc)))
        return rc;
    if (id || as_json)
        rc = print_doc(doc, as_json);
    else
        json_array_foreach (json_object_get(doc, "hardware"), i, p)
            rc |= print_doc(p, 0);
    json_decref(doc);
    return rc;
}

int cmd_hardware(int argc, char **argv)
{
    int as_json = 0;
    const char *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: stepcast [--server URL] hardware [--json] [ID]\n"
                   "       every GPU profile, or the one named ID; with --server, the server's\n");
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0)
            as_json = 1;
        else if (argv[i][0] == '-' || id)
            return cli_usage_error("hardware", "unexpected argument '%s'", argv[i]);
        else
            id = argv[i];
    }
    if (remote_configured())
        return hardware_remote(id, as_json);
    if (id) {
        const struct hw_profile *p = cost_hw_profile_find(id);
        if (!p) {
            fprintf(stderr, "stepcast: no hardware profile '%s' (stepcast hardware lists them)\n", id);
            return 2;
        }
        return print_one(p, as_json);
    }
    if (as_json) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < cost_hw_profile_count(); i++)
            if (json_array_append_new(a, api_hardware_json(cost_hw_profile_at(i)))) {
                json_decref(a);
                a = NULL;
            }
        int rc = a ? cli_print_json(a) : 1;
        json_decref(a);
        return rc;
    }
    for (size_t i = 0; i < cost_hw_profile_count(); i++)
        print_one(cost_hw_profile_at(i), 0);
    return 0;
}
