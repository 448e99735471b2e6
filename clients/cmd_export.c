/* clients/cmd_export.c: `stepcast export chakra`: a replayed step (from
 * traces, or synthesised from a spec) as Chakra execution traces, one
 * file per rank and the communicator table, for ASTRA-sim and other
 * simulators (estimator/interchange/chakra_export.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "estimator/interchange/chakra_export.h"
#include "estimator/model_open.h"
#include "estimator/synth/synth.h"
#include "model/archive.h"
#include "model/graph.h"
#include "model/replay.h"
#include "model/stream.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast export chakra --out DIR [--prefix P] [--step-marker NAME] [--steps A-B]\n"
    "                              [--scale WHAT[@R]=F]... TRACE...\n"
    "       stepcast export chakra --out DIR [--prefix P] --spec F [--detail kernel|layer|stage]\n"
    "                              [--calibrations DIR]\n"
    "       stepcast --server URL export chakra --out DIR --model ID\n"
    "  writes DIR/<prefix>.<rank>.et (Chakra ET, one per rank) and DIR/comm_group.json\n";

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0755) && !cli_is_dir(dir)) {
        fprintf(stderr, "stepcast: cannot create directory '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    return 0;
}

/* dir/name holding data[0..n), written as a temporary file renamed into
 * place. */
static int write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096], tmp[4200];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "wb")) || fwrite(data, 1, n, f) != n || fclose(f) || rename(tmp, path)) {
        fprintf(stderr, "stepcast: cannot write '%s': %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

/* The files of an export into dir (created if need be). */
static int write_files(const struct est_chakra_out *o, const char *dir)
{
    if (make_dir(dir))
        return 1;
    for (size_t k = 0; k < o->n_files; k++)
        if (write_file(dir, o->files[k].name, o->files[k].body.data, o->files[k].body.n))
            return 1;
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
    int rc = chakra_export(g, r, ro, prefix, &o, &err) ? cli_fail(&err) : write_files(&o, dir);
    chakra_out_release(&o);
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
    int rc;
    if ((rc = cli_load_spec_file(spec_path, calibrations, &spec, &hw, &costs)))
        return rc;
    model_replay_opts_default(&ro);
    ro.critical_path = 0;
    if (synth_build(&spec, hw, &costs, detail, &g, &err) || model_replay_run(g, &ro, &r, &err))
        rc = cli_fail(&err);
    else
        rc = export_run(g, r, &ro, prefix, dir);
    model_replay_free(r);
    model_graph_free(g);
    return rc;
}

/* The files of a tar in buf[0..n) into dir. */
static int untar(const void *buf, size_t n, const char *dir)
{
    struct model_archive *a = NULL;
    struct model_stream *member;
    struct sc_error err;
    const char *name;
    char *data = NULL;
    size_t cap = 0, files = 0;
    int rc = make_dir(dir);
    if (!rc && model_archive_open_mem(buf, n, "the server's reply", &a, &err))
        rc = cli_fail(&err);
    while (!rc) {
        if (model_archive_next(a, &name, &member, &err)) {
            rc = cli_fail(&err);
            break;
        }
        if (!member)
            break;
        if (strchr(name, '/') || !strcmp(name, "..") || !*name) {
            fprintf(stderr, "stepcast: the server's reply holds '%s', not a file name\n", name);
            rc = 1;
            break;
        }
        size_t len = 0;
        ssize_t got;
        do {
            if (sc_vec_reserve((void **)&data, &cap, len + 65536, 1)) {
                sc_error_set(&err, SC_ENOMEM, "out of memory");
                got = -1;
                break;
            }
            if ((got = model_stream_read(member, data + len, 65536, &err)) > 0)
                len += (size_t)got;
        } while (got > 0);
        rc = got < 0 ? cli_fail(&err) : write_file(dir, name, data, len);
        files++;
    }
    if (!rc)
        printf("wrote %zu files to %s\n", files, dir);
    free(data);
    model_archive_free(a);
    return rc;
}

/* --model ID: the server's export of a built model. */
static int export_remote(const char *model, const char *prefix, const char *dir)
{
    struct remote rm;
    struct remote_resp resp = {0};
    struct sc_error err;
    char path[1024], id[256], pre[256];
    int rc;
    remote_escape(model, id, sizeof id);
    remote_escape(prefix, pre, sizeof pre);
    snprintf(path, sizeof path, "/v1/models/%s/chakra?prefix=%s", id, pre);
    if (remote_open(&rm, &err))
        return cli_fail(&err);
    if (remote_call(&rm, "GET", path, NULL, &resp, &err))
        rc = cli_fail(&err);
    else
        rc = resp.status != 200 ? remote_fail(&resp) : untar(resp.body, resp.len, dir);
    remote_resp_release(&resp);
    remote_close(&rm);
    return rc;
}

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},         {"prefix", required_argument, NULL, 'p'},
        {"step-marker", required_argument, NULL, 'm'}, {"steps", required_argument, NULL, 's'},
        {"scale", required_argument, NULL, 'g'},       {"spec", required_argument, NULL, 'S'},
        {"detail", required_argument, NULL, 'd'},      {"calibrations", required_argument, NULL, 'c'},
        {"model", required_argument, NULL, 'M'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *prefix = "stepcast", *spec = NULL, *calibrations = NULL, *model = NULL;
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
    while ((c = getopt_long(argc, argv, "o:p:m:s:g:S:d:c:M:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': dir = optarg; break;
        case 'M': model = optarg; break;
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
            if (synth_detail_parse(optarg, &detail, &err))
                return cli_usage_error("export", "%s", err.msg);
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("export", "bad option");
        }
    }
    if (!dir)
        return cli_usage_error("export", "--out DIR is required");
    if (model) {
        if (!remote_configured())
            return cli_usage_error("export", "--model needs a server (--server URL or $STEPCAST_SERVER)");
        if (spec || optind < argc)
            return cli_usage_error("export", "--model takes no trace nor spec");
        return export_remote(model, prefix, dir);
    }
    if (spec) {
        if (optind < argc)
            return cli_usage_error("export", "--spec takes no trace");
        return export_spec(spec, calibrations, detail, prefix, dir);
    }
    if (optind >= argc)
        return cli_usage_error("export", "no trace given (or --spec F)");
    struct cli_run run;
    /* the traces keep their events: the launching ops' shapes and FLOPs */
    int rc = cli_run_traces((const char *const *)argv + optind, (size_t)(argc - optind), &lo, &go, &ro,
                            EST_KEEP_WHOLE, &run);
    if (rc)
        return rc;
    rc = export_run(est_model_graph(run.model), run.replay, &ro, prefix, dir);
    cli_run_release(&run);
    return rc;
}
