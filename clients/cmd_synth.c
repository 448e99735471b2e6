/* clients/cmd_synth.c: `stepcast synth --spec F --out DIR`: the step that
 * `stepcast estimate` synthesises and replays, written as one Kineto trace
 * per pipeline stage (estimator/synth/synth_trace.h), for `stepcast replay`,
 * trace viewers and anything else that reads profiler traces. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "estimator/synth/synth.h"
#include "estimator/synth/synth_trace.h"
#include "model/graph.h"
#include "model/replay.h"
#include "common/banned.h"

static int write_rank(const struct est_spec *s, const struct hw_profile *hw, enum est_detail detail,
                      const struct model_graph *g, const int64_t *start, const int64_t *end, uint16_t rank,
                      const char *dir, struct sc_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%lld.pt.trace.json", dir, (long long)synth_trace_rank(s, g, rank));
    FILE *f = fopen(path, "w");
    if (!f)
        return sc_error_set(err, SC_EIO, "%s: %s", path, strerror(errno));
    int rc = synth_trace_write(s, hw, detail, g, start, end, rank, f, err);
    if (fclose(f) && rc == SC_OK)
        rc = sc_error_set(err, SC_EIO, "%s: %s", path, strerror(errno));
    if (rc == SC_OK)
        printf("%s\n", path);
    return rc;
}

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    int empty = 1;
    if (!d)
        return 0;
    while (empty && (de = readdir(d)))
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

int cmd_synth(int argc, char **argv)
{
    static const struct option opts[] = {
        {"spec", required_argument, NULL, 's'},
        {"out", required_argument, NULL, 'o'},
        {"detail", required_argument, NULL, 'd'},
        {"calibrations", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *spec_path = NULL, *out = NULL, *calibrations = NULL;
    enum est_detail detail = EST_DETAIL_KERNEL;
    int c, rc;
    struct sc_error err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "s:o:d:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': spec_path = optarg; break;
        case 'o': out = optarg; break;
        case 'c': calibrations = optarg; break;
        case 'd':
            if (synth_detail_parse(optarg, &detail, &err))
                return cli_fail(&err);
            break;
        case 'h':
            printf("usage: stepcast synth --spec F --out DIR [--detail kernel|layer|stage] [--calibrations DIR]\n");
            return 0;
        default: return cli_usage_error("synth", "bad option");
        }
    }
    if (optind < argc)
        return cli_usage_error("synth", "unexpected argument '%s'", argv[optind]);
    if (!spec_path || !out)
        return cli_usage_error("synth", "--spec F and --out DIR are required");
    struct est_spec spec;
    const struct hw_profile *hw;
    struct est_costs costs;
    if ((rc = cli_load_spec_file(spec_path, calibrations, &spec, &hw, &costs)))
        return rc;
    if (mkdir(out, 0777) && errno != EEXIST) {
        sc_error_set(&err, SC_EIO, "%s: %s", out, strerror(errno));
        return cli_fail(&err);
    }
    if (!cli_is_dir(out)) {
        sc_error_set(&err, SC_EINVAL, "--out %s: not a directory", out);
        return cli_fail(&err);
    }
    if (!dir_is_empty(out)) { /* a replay of DIR would mix in what it holds */
        sc_error_set(&err, SC_EINVAL, "--out %s: not empty; give a new or empty directory", out);
        return cli_fail(&err);
    }
    struct model_graph *g = NULL;
    if (synth_build(&spec, hw, &costs, detail, &g, &err))
        return cli_fail(&err);
    int64_t *start = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *start);
    int64_t *end = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *end);
    struct model_replay_opts ro;
    size_t forced = 0;
    model_replay_opts_default(&ro);
    ro.critical_path = 0;
    if (!start || !end)
        rc = sc_error_set(&err, SC_ENOMEM, "out of memory");
    else
        rc = model_replay_simulate(g, &ro, start, end, &forced, &err);
    for (uint16_t r = 0; rc == SC_OK && r < g->n_ranks; r++)
        rc = write_rank(&spec, hw, detail, g, start, end, r, out, &err);
    free(start);
    free(end);
    model_graph_free(g);
    return rc ? cli_fail(&err) : 0;
}
