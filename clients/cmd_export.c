/* clients/cmd_export.c: `stepcast export chakra`: a replayed step (from
 * traces, or synthesised from a spec) as Chakra execution traces, one
 * file per rank and the communicator table, for ASTRA-sim and other
 * simulators (estimator/chakra_export.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clients/cli.h"
#include "estimator/chakra_export.h"
#include "estimator/synth.h"
#include "model/graph.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast export chakra --out DIR [--prefix P] [--step-marker NAME] [--steps A-B]\n"
    "                              [--scale WHAT[@R]=F]... TRACE...\n"
    "       stepcast export chakra --out DIR [--prefix P] --spec F [--detail kernel|layer|stage]\n"
    "                              [--calibrations DIR]\n"
    "       stepcast --server URL export chakra --out DIR --model ID\n"
    "  writes DIR/<prefix>.<rank>.et (Chakra ET, one per rank) and DIR/comm_group.json\n";

/* Write the files of an export into dir (created if need be), each as a
 * temporary file renamed into place. */
static int write_files(const struct est_chakra_out *o, const char *dir)
{
    if (mkdir(dir, 0755) && !cli_is_dir(dir)) {
        fprintf(stderr, "stepcast: cannot create directory '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    for (size_t k = 0; k < o->n_files; k++) {
        char path[4096], tmp[4200];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s", dir, o->files[k].name);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        if (!(f = fopen(tmp, "wb")) || fwrite(o->files[k].body.data, 1, o->files[k].body.n, f) != o->files[k].body.n ||
            fclose(f) || rename(tmp, path)) {
            fprintf(stderr, "stepcast: cannot write '%s': %s\n", path, strerror(errno));
            remove(tmp);
            return 1;
        }
    }
    printf("wrote %zu files to %s: %zu nodes (%zu tasks, %zu host work, %zu latencies), %zu data deps, "
           "%zu ctrl deps\n",
           o->n_files, dir, o->nodes, o->nodes - o->host_nodes - o->delay_nodes, o->host_nodes, o->delay_nodes,
           o->data_deps, o->ctrl_deps);
    return 0;
}

static int export_run(const struct model_graph *g, const struct model_replay *r, const struct model_replay_opts *ro,
                      const char *prefix, const char *dir)
{
    struct est_chakra_out o;
    struct sc_error err;
    int rc = est_chakra_export(g, r, ro, prefix, &o, &err) ? cli_fail(&err) : write_files(&o, dir);
    est_chakra_out_release(&o);
    return rc;
}

/* --spec F: the step `stepcast estimate` synthesises, replayed. */
static int export_spec(const char *spec_path, const char *calibrations, enum est_detail detail, const char *prefix,
                       const char *dir)
{
    struct est_spec spec;
    const struct hw_profile *hw;
    struct est_costs costs;
    struct model_graph *g = NULL;
    struct model_replay *r = NULL;
    struct model_replay_opts ro;
    struct sc_error err;
    size_t n;
    char *text;
    int rc;
    if (cli_read_file(spec_path, 1 << 20, &text, &n, &err))
        return cli_fail(&err);
    rc = cli_load_spec(text, n, calibrations, &spec, &hw, &costs);
    free(text);
    if (rc)
        return rc;
    model_replay_opts_default(&ro);
    ro.critical_path = 0;
    if (est_synth(&spec, hw, &costs, detail, &g, &err) || model_replay_run(g, &ro, &r, &err))
        rc = cli_fail(&err);
    else
        rc = export_run(g, r, &ro, prefix, dir);
    model_replay_free(r);
    model_graph_free(g);
    return rc;
}

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},         {"prefix", required_argument, NULL, 'p'},
        {"step-marker", required_argument, NULL, 'm'}, {"steps", required_argument, NULL, 's'},
        {"scale", required_argument, NULL, 'g'},       {"spec", required_argument, NULL, 'S'},
        {"detail", required_argument, NULL, 'd'},      {"calibrations", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *prefix = "stepcast", *spec = NULL, *calibrations = NULL;
    enum est_detail detail = EST_DETAIL_KERNEL;
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct model_replay_opts ro;
    struct sc_error err;
    int c;
    if (argc < 2 || strcmp(argv[1], "chakra")) {
        if (argc >= 2 && !strcmp(argv[1], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        return cli_usage_error("export", "the format to export: chakra");
    }
    argc--;
    argv++;
    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    model_replay_opts_default(&ro);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:p:m:s:g:S:d:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': dir = optarg; break;
        case 'p': prefix = optarg; break;
        case 'm': lo.step_marker = optarg; break;
        case 'S': spec = optarg; break;
        case 'c': calibrations = optarg; break;
        case 's':
            if (model_graph_parse_steps(optarg, &go, &err))
                return cli_usage_error("export", "%s", err.msg);
            break;
        case 'g':
            if (model_replay_parse_scale(optarg, &ro, &err))
                return cli_usage_error("export", "%s", err.msg);
            break;
        case 'd':
            if (est_detail_parse(optarg, &detail, &err))
                return cli_usage_error("export", "%s", err.msg);
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("export", "bad option");
        }
    }
    if (!dir)
        return cli_usage_error("export", "--out DIR is required");
    if (spec) {
        if (optind < argc)
            return cli_usage_error("export", "--spec takes no trace");
        return export_spec(spec, calibrations, detail, prefix, dir);
    }
    if (optind >= argc)
        return cli_usage_error("export", "no trace given (or --spec F)");
    struct cli_run run;
    /* the traces keep their events: the launching ops' shapes and FLOPs */
    if (cli_run_traces((const char *const *)argv + optind, (size_t)(argc - optind), &lo, &go, &ro, 1, &run, &err))
        return cli_fail(&err);
    int rc = export_run(run.graph, run.replay, &ro, prefix, dir);
    cli_run_release(&run);
    return rc;
}
