/* clients/cmd_whatif.c: `stepcast whatif`: a traced job's step transformed
 * to another configuration and replayed (estimator/whatif/whatif.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/whatif_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "clients/table.h"
#include "estimator/spec/job_config.h"
#include "estimator/model_open.h"
#include "estimator/synth/synth_compare.h"
#include "estimator/whatif/whatif.h"
#include "model/graph.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast whatif --config FILE [--set K=V,...] [--compare-synth] [--json] [--step-marker NAME]\n"
    "                       [--steps A-B] [--timeline DIR] [--gpu-hour-usd P] TRACE...\n"
    "       stepcast --server URL whatif --model ID [--set K=V,...] [--json]\n"
    "       FILE: the job's description {\"tp\":..,\"pp\":..,\"dp\":..,\"micro_batch\":..,\"global_batch\":..,\n"
    "             \"layers\":..,\"hidden\":..,\"heads\":..,\"ffn\":..,\"seq\":..,\"vocab\":..,\"dtype\":..,\n"
    "             \"schedule\":..,\"vpp\":..,\"kv_heads\":..,\"head_dim\":..,\"mlp\":..,\"cp\":..,\"ep\":..,\"etp\":..,\n"
    "             \"zero_stage\":..,\"sequence_parallel\":..,\"recompute\":..,\"gpus_per_node\":..,\n"
    "             \"tied_embeddings\":..,\"bias\":..,\"framework\":..,\"master_weights\":..,\n"
    "             \"moe\":{\"experts\":..,\"top_k\":..,\"ffn\":..,\"shared_experts\":..,\"every\":..,\n"
    "                   \"dense_layers\":..},\n"
    "             \"mla\":{\"kv_lora_rank\":..,\"q_lora_rank\":..,\"qk_head_dim\":..,\"qk_pos_emb_head_dim\":..,\n"
    "                   \"v_head_dim\":..}} (docs/commands/whatif.md)\n"
    "       K: any key of FILE (moe's and mla's dotted: moe.experts), and gpu\n"
    "       P: the price of a GPU-hour, for the cost of the traced step and the what-if's\n";

static void print_compare(const struct synth_compare *c)
{
    struct cli_table tb;
    printf("\nper kernel family, per rank and step: traced beside what `stepcast estimate` synthesises\n");
    cli_table_init(&tb, "family", "traced ms", "synth ms", "traced kernels", "synth kernels", NULL);
    for (int f = 0; f < MODEL_KF_COUNT; f++)
        if (c->traced_kernels[f] > 0 || c->synth_kernels[f] > 0)
            cli_table_rowf(&tb, "%s|%.3f|%.3f|%.1f|%.1f", model_kernel_family_name((enum model_kernel_family)f),
                           c->traced_ms[f], c->synth_ms[f], c->traced_kernels[f], c->synth_kernels[f]);
    cli_table_print(&tb, stdout, "  ");
    cli_table_release(&tb);
}

/* The what-if document (api/whatif_json.h) as tables and lines. */
static int print_text(const json_t *doc)
{
    const json_t *v;
    size_t i;
    int rc = cli_print_whatif_replay(doc);
    char *base = json_dumps(json_object_get(doc, "base"), JSON_COMPACT | JSON_PRESERVE_ORDER),
         *target = json_dumps(json_object_get(doc, "target"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("\nbase   %s\ntarget %s\n", base ? base : "?", target ? target : "?");
    free(base);
    free(target);
    printf("step %.3f ms (base replayed %.3f ms): %.3f ms from measured durations, %.3f ms from models\n",
           cli_json_num(doc, "step_ms"), cli_json_num(doc, "base_step_ms"), cli_json_num(doc, "from_measured_ms"),
           cli_json_num(doc, "from_models_ms"));
    json_array_foreach(json_object_get(doc, "models_used"), i, v)
        printf("  %-17s %8.3f ms  %lld tasks: %s\n", cli_json_str(v, "model", "?"), cli_json_num(v, "ms"),
               cli_json_int(v, "tasks"), cli_json_str(v, "why", ""));
    printf("collectives per step: %.3f ms transfer, %.3f ms waiting for peers\n",
           cli_json_num(doc, "collective_transfer_ms"), cli_json_num(doc, "collective_wait_ms"));
    if (json_is_number(json_object_get(doc, "memory_gb_per_gpu")))
        printf("memory %.2f GB per GPU: %s\n", cli_json_num(doc, "memory_gb_per_gpu"),
               json_is_true(json_object_get(doc, "fits")) ? "fits" : "does not fit");
    else
        printf("memory: not estimated (the description lacks layers, hidden, heads or seq)\n");
    return rc;
}

int cmd_whatif(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},   {"set", required_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},           {"step-marker", required_argument, NULL, 'm'},
        {"steps", required_argument, NULL, 's'},    {"help", no_argument, NULL, 'h'},
        {"compare-synth", no_argument, NULL, 'C'}, {"timeline", required_argument, NULL, 't'},
        {"gpu-hour-usd", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0},
    };
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct job_config cfg, set;
    struct sc_error err;
    const char *config = NULL, *timeline = NULL;
    int json = 0, compare = 0, c, rc;
    double price = -1;
    char *end;

    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    spec_job_config_init(&set);
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:S:jm:s:hCt:p:", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            price = strtod(optarg, &end);
            if (*end || end == optarg || !(price > 0 && price <= 1e6))
                return cli_usage_error("whatif", "--gpu-hour-usd takes a price above 0 and at most 1e6");
            break;
        case 'C': compare = 1; break;
        case 't': timeline = optarg; break;
        case 'c': config = optarg; break;
        case 'S':
            if (spec_job_config_parse_set_list(optarg, &set, &err))
                return cli_usage_error("whatif", "%s", err.msg);
            break;
        case 'j': json = 1; break;
        case 'm': lo.step_marker = optarg; break;
        case 's':
            if (model_graph_parse_steps(optarg, &go, &err))
                return cli_usage_error("whatif", "%s", err.msg);
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("whatif", "bad option");
        }
    }
    if (!config)
        return cli_usage_error("whatif", "--config FILE is required (the job's tp, pp and dp at least)");
    if (optind >= argc)
        return cli_usage_error("whatif", "no trace given");
    if ((rc = cli_load_job_config(config, &cfg)))
        return rc;
    struct est_traced_model *m;
    struct whatif_result r;
    /* the what-if reads the notes the build takes of each trace; only a
     * timeline, which writes the traced events around the replayed ones,
     * needs the traces whole */
    if ((rc = cli_open_traces((const char *const *)argv + optind, (size_t)(argc - optind), &lo, &go,
                              timeline ? EST_KEEP_WHOLE : EST_KEEP_NOTES, &m)))
        return rc;
    if (est_model_whatif(m, &cfg, &set, &r, &err)) {
        est_model_close(m);
        return cli_fail(&err);
    }
    struct synth_compare cmp;
    if (compare && synth_compare(est_model_graph(m), &cfg, r.structure.gpu, &cmp, &err)) {
        whatif_release(&r);
        est_model_close(m);
        return cli_fail(&err);
    }
    json_t *doc = api_whatif_json(&r, price);
    if (doc && compare)
        json_object_set_new(doc, "compare_synth", api_synth_compare_json(&cmp));
    if (!doc) {
        rc = 1;
    } else if (json) {
        rc = cli_print_json(doc);
    } else {
        rc = print_text(doc);
        if (compare)
            print_compare(&cmp);
    }
    if (rc == 0 && timeline) /* the transformed step, as replay writes a traced one */
        rc = cli_write_timelines(r.replay, timeline);
    json_decref(doc);
    whatif_release(&r);
    est_model_close(m);
    return rc;
}

/* `stepcast --server URL whatif --model ID --set K=V,... [--json]`: the
 * server's what-if of a built model, from its job's config. */
int cmd_remote_whatif(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'M'}, {"set", required_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *model = NULL;
    struct job_config set;
    struct sc_error err;
    struct remote r;
    struct remote_resp resp;
    int c, rc, json = 0;
    spec_job_config_init(&set);
    optind = 1;
    while ((c = getopt_long(argc, argv, "M:S:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'M': model = optarg; break;
        case 'S':
            if (spec_job_config_parse_set_list(optarg, &set, &err))
                return cli_usage_error("whatif", "%s", err.msg);
            break;
        case 'j': json = 1; break;
        case 'h':
            printf("usage: stepcast --server URL whatif --model ID [--set K=V,...] [--json]\n"
                   "(the job's description is its config on the server: PUT /v1/jobs/{job})\n");
            return 0;
        default: return cli_usage_error("whatif", "bad option");
        }
    }
    if (!model || optind != argc)
        return cli_usage_error("whatif", "with --server, whatif takes --model ID (no trace files)");
    char *set_text = spec_job_config_json(&set), body[8192], path[600], id[512];
    if (!set_text)
        return cli_usage_error("whatif", "out of memory");
    snprintf(body, sizeof body, "{\"set\":%s}", set_text);
    free(set_text);
    if (remote_open(&r, &err))
        return cli_fail(&err);
    remote_escape(model, id, sizeof id);
    snprintf(path, sizeof path, "/v1/models/%s/whatif", id);
    if (remote_call(&r, "POST", path, body, &resp, &err)) {
        remote_close(&r);
        return cli_fail(&err);
    }
    rc = remote_print_document(&resp, json, print_text);
    remote_resp_release(&resp);
    remote_close(&r);
    return rc;
}
