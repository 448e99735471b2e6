/* clients/cmd_calibrate.c: `stepcast calibrate nccl-tests FILE... --out
 * PROFILE.json`: fit the collective model to nccl-tests outputs and write
 * the cluster profile a spec names with `cluster.profile` (README,
 * "Calibration").
 *
 * Each file is one nccl-tests run; its collective, group size, node count
 * and GPU come from the file where it says them and from the options
 * otherwise. The fits and what they set are printed, so the user sees how
 * well each size range is described before using the profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "estimator/collective_model.h"
#include "estimator/hardware.h"
#include "estimator/nccl_tests.h"
#include "common/banned.h"

#define CMD "calibrate nccl-tests"
#define MAX_FILES 256

struct opts {
    const char *out, *gpu;
    enum model_coll_op kind;
    int ranks, nodes;
};

static int int_opt(const char *name, const char *v, int *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || errno || x < 1 || x > 1000000)
        return cli_usage_error(CMD, "%s needs a whole number from 1 to 1000000", name);
    *out = (int)x;
    return 0;
}

/* The profile a device name maps to, with or without the "NVIDIA " that
 * old nccl-tests leave out. */
static const struct hw_profile *profile_of(const char *device)
{
    const struct hw_profile *hw = hw_profile_for_device(device);
    char full[128];
    if (!hw && strncmp(device, "NVIDIA ", 7) != 0) {
        snprintf(full, sizeof full, "NVIDIA %s", device);
        hw = hw_profile_for_device(full);
    }
    return hw;
}

/* A device name without the vendor prefix old nccl-tests leave out. */
static const char *bare(const char *device)
{
    return strncmp(device, "NVIDIA ", 7) == 0 ? device + 7 : device;
}

static void print_fit(const struct coll_fit *f)
{
    char alpha[32], busbw[32];
    snprintf(alpha, sizeof alpha, f->alpha_fitted ? "%.2f" : "-", f->alpha_us);
    snprintf(busbw, sizeof busbw, f->busbw_gbps > 0 ? "%.2f" : "-", f->busbw_gbps);
    printf("    %12.0f %12.0f %10s %10s %7zu %9.1f %9.1f\n", f->size_lo, f->size_hi, alpha, busbw, f->points,
           f->rms_err_pct, f->max_err_pct);
}

static int calibrate_file(const char *path, const struct opts *o, struct coll_measurement *m,
                          char *device, size_t device_len)
{
    struct nct_run run;
    struct sc_error err;
    size_t len;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "stepcast: %s: %s\n", path, strerror(errno));
        return 2;
    }
    char *text = NULL;
    size_t cap = 0;
    len = 0;
    for (;;) {
        if (len + 65536 > cap) {
            char *t = realloc(text, cap = cap ? cap * 2 : 65536 * 2);
            if (!t || cap > (256u << 20)) {
                free(t ? t : text);
                fclose(f);
                fprintf(stderr, "stepcast: %s: %s\n", path, t ? "over 256 MiB: not an nccl-tests output" : "out of memory");
                return t ? 2 : 1;
            }
            text = t;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int io_error = ferror(f);
    fclose(f);
    if (io_error) {
        free(text);
        fprintf(stderr, "stepcast: %s: read error\n", path);
        return 1;
    }
    const char *base = strrchr(path, '/');
    int rc = nct_parse(text, len, base ? base + 1 : path, &run, &err);
    free(text);
    if (rc) {
        if (err.offset >= 0)
            fprintf(stderr, "stepcast: '%s': byte %lld: %s\n", path, (long long)err.offset, err.msg);
        else
            fprintf(stderr, "stepcast: '%s': %s\n", path, err.msg);
        return sc_status_exit_code(rc);
    }
    if (o->kind != MODEL_COLL_UNKNOWN && o->kind != run.kind) {
        run.kind = o->kind;
        if (run.ranks_derived || !run.ranks) {
            run.ranks = nct_ranks_from_ratio(&run);
            run.ranks_derived = run.ranks > 0;
        }
    }
    if (o->ranks) {
        run.ranks = o->ranks;
        run.ranks_derived = 0;
    }
    if (o->nodes)
        run.nodes = o->nodes;
    if (run.device[0] && !device[0])
        snprintf(device, device_len, "%s", run.device);
    else if (run.device[0] && strcmp(bare(run.device), bare(device)) != 0) {
        fprintf(stderr, "stepcast: %s: GPU '%s', another file has '%s': calibrate one GPU type at a time\n",
                path, run.device, device);
        nct_run_release(&run);
        return 2;
    }
    memset(m, 0, sizeof *m);
    m->kind = run.kind;
    m->ranks = run.ranks;
    m->nodes = run.nodes;
    snprintf(m->source, sizeof m->source, "%s", base ? base + 1 : path);
    rc = coll_fit_run(&run, m->fits, &m->n_fits, &err);
    if (rc) {
        fprintf(stderr, "stepcast: %s: %s\n", path, err.msg);
        nct_run_release(&run);
        return sc_status_exit_code(rc);
    }
    printf("%s: %s, %d ranks%s, ", m->source, coll_kind_name(run.kind), run.ranks,
           run.ranks_derived ? " (from busbw / algbw)" : "");
    if (run.nodes)
        printf("%d node%s, %zu rows\n", run.nodes, run.nodes > 1 ? "s" : "", run.n_rows);
    else
        printf("nodes not said, %zu rows\n", run.n_rows);
    printf("    %12s %12s %10s %10s %7s %9s %9s\n", "size_min", "size_max", "alpha_us", "busbw", "points",
           "rms_err%", "max_err%");
    for (size_t i = 0; i < m->n_fits; i++)
        print_fit(&m->fits[i]);
    nct_run_release(&run);
    return 0;
}

static int write_profile(const char *path, json_t *doc)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(doc, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) || rename(tmp, path)) {
        fprintf(stderr, "stepcast: cannot write %s: %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

static int calibrate_nccl_tests(int argc, char **argv)
{
    struct opts o = {.kind = MODEL_COLL_UNKNOWN};
    const char *files[MAX_FILES];
    int n_files = 0, rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--out") == 0 || strcmp(a, "--gpu") == 0 || strcmp(a, "--kind") == 0 ||
            strcmp(a, "--ranks") == 0 || strcmp(a, "--nodes") == 0) {
            if (!v)
                return cli_usage_error(CMD, "%s needs a value", a);
            i++;
            if (a[2] == 'o')
                o.out = v;
            else if (a[2] == 'g')
                o.gpu = v;
            else if (a[2] == 'k') {
                o.kind = coll_kind_from_name(v);
                if (o.kind == MODEL_COLL_UNKNOWN)
                    return cli_usage_error(CMD, "--kind: '%s' is none of all_reduce, all_gather, "
                                           "reduce_scatter, alltoall, broadcast, reduce, sendrecv", v);
            } else if ((rc = int_opt(a, v, a[2] == 'r' ? &o.ranks : &o.nodes)))
                return rc;
        } else if (a[0] == '-') {
            return cli_usage_error(CMD, "unknown option '%s'", a);
        } else if (n_files == MAX_FILES) {
            return cli_usage_error(CMD, "more than %d files", MAX_FILES);
        } else {
            files[n_files++] = a;
        }
    }
    if (!n_files)
        return cli_usage_error(CMD, "no nccl-tests output given");
    if (!o.out)
        return cli_usage_error(CMD, "--out PROFILE.json is required");

    struct coll_measurement *m = calloc((size_t)n_files, sizeof *m);
    char device[96] = "";
    if (!m)
        return 1;
    for (int i = 0; i < n_files; i++)
        if ((rc = calibrate_file(files[i], &o, &m[i], device, sizeof device))) {
            free(m);
            return rc;
        }
    const struct hw_profile *hw = o.gpu ? hw_profile_find(o.gpu) : device[0] ? profile_of(device) : NULL;
    if (!hw) {
        if (o.gpu)
            fprintf(stderr, "stepcast: no hardware profile '%s' (stepcast hardware lists them)\n", o.gpu);
        else if (device[0])
            fprintf(stderr, "stepcast: no hardware profile lists the GPU '%s': name one with --gpu ID\n", device);
        else
            fprintf(stderr, "stepcast: the outputs do not name their GPU: name its profile with --gpu ID\n");
        free(m);
        return 2;
    }
    /* a run over several hosts, or more ranks than a domain holds, spans domains */
    for (int i = 0; i < n_files; i++) {
        if (!m[i].nodes)
            m[i].nodes = m[i].ranks > hw->gpus_per_node ? (m[i].ranks + hw->gpus_per_node - 1) / hw->gpus_per_node : 1;
        m[i].inter = m[i].nodes > 1;
    }
    struct coll_params p;
    char report[2048] = "";
    coll_params_from_hw(hw, &p);
    coll_params_apply(&p, m, (size_t)n_files, report, sizeof report);
    printf("GPU profile %s%s%s%s\n", hw->id, device[0] ? " (the outputs name '" : "", device,
           device[0] ? "')" : "");
    fputs(report[0] ? report : "nothing measured changes the profile's defaults\n", stdout);
    printf("collective model: base %.2f us; in the NVLink domain busbw %.1f GB/s, hop %.3f us; "
           "across domains busbw %.1f GB/s, hop %.3f us\n",
           p.base_us, p.intra.busbw_gbps, p.intra.hop_us, p.inter.busbw_gbps, p.inter.hop_us);
    json_t *doc = cluster_profile_json(hw->id, device, m, (size_t)n_files, &p);
    rc = doc ? write_profile(o.out, doc) : 1;
    json_decref(doc);
    free(m);
    if (!rc)
        printf("wrote %s\n", o.out);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("calibrate", "what to calibrate from: nccl-tests");
    if (strcmp(argv[1], "nccl-tests") == 0)
        return calibrate_nccl_tests(argc - 1, argv + 1);
    return cli_usage_error("calibrate", "unknown source '%s' (nccl-tests)", argv[1]);
}
