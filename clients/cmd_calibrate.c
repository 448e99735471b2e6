/* clients/cmd_calibrate.c: `stepcast calibrate nccl-tests|traces ... --out
 * PROFILE.json`: fit the cost models to what a cluster measured and write
 * the cluster profile a spec names with `cluster.profile` (README,
 * "calibrate").
 *
 * nccl-tests: each file is one run; its collective, group size, node count
 * and GPU come from the file where it says them and from the options
 * otherwise. traces: the GEMMs with shapes fit the kernel model's fixed
 * cost and ceiling, the sized collectives the collective model. The fits
 * and what they set are printed, so the user sees how well the model
 * describes the measurements before using the profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "estimator/cluster_profile.h"
#include "estimator/coll_samples.h"
#include "estimator/collective_model.h"
#include "estimator/gemm_samples.h"
#include "estimator/hardware.h"
#include "estimator/nccl_tests.h"
#include "model/job.h"
#include "common/banned.h"

#define CMD "calibrate"
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

/* Read one nccl-tests output into *run, with what the options say. */
static int load_run(const char *path, const struct opts *o, struct nct_run *run, char *device, size_t device_len)
{
    struct sc_error err;
    size_t len;
    char *text;
    if (cli_read_file(path, 256u << 20, &text, &len, &err))
        return cli_fail(&err);
    const char *base = strrchr(path, '/');
    int rc = nct_parse(text, len, base ? base + 1 : path, run, &err);
    free(text);
    if (rc) {
        if (err.offset >= 0)
            fprintf(stderr, "stepcast: '%s': byte %lld: %s\n", path, (long long)err.offset, err.msg);
        else
            fprintf(stderr, "stepcast: '%s': %s\n", path, err.msg);
        return sc_status_exit_code(rc);
    }
    if (o->kind != MODEL_COLL_UNKNOWN && o->kind != run->kind) {
        run->kind = o->kind;
        if (run->ranks_derived || !run->ranks) {
            run->ranks = nct_ranks_from_ratio(run);
            run->ranks_derived = run->ranks > 0;
        }
    }
    if (o->ranks) {
        run->ranks = o->ranks;
        run->ranks_derived = 0;
    }
    if (o->nodes)
        run->nodes = o->nodes;
    if (run->device[0] && !device[0])
        snprintf(device, device_len, "%s", run->device);
    else if (run->device[0] && strcmp(bare(run->device), bare(device)) != 0) {
        fprintf(stderr, "stepcast: %s: GPU '%s', another file has '%s': calibrate one GPU type at a time\n",
                path, run->device, device);
        nct_run_release(run);
        return 2;
    }
    return 0;
}

/* Fit a run, check the model with the GPU's defaults on it, print both. */
static int measure(const struct nct_run *run, const char *source, const struct hw_profile *hw,
                   struct coll_measurement *m)
{
    struct sc_error err;
    struct coll_params def;
    struct estimate_check c, big;
    memset(m, 0, sizeof *m);
    m->kind = run->kind;
    m->ranks = run->ranks;
    m->nodes = run->nodes;
    snprintf(m->source, sizeof m->source, "%s", source);
    int rc = coll_fit_run(run, m->fits, &m->n_fits, &err);
    if (rc) {
        fprintf(stderr, "stepcast: %s: %s\n", source, err.msg);
        return sc_status_exit_code(rc);
    }
    printf("%s: %s, %d ranks%s, ", source, coll_kind_name(run->kind), run->ranks,
           run->ranks_derived ? " (from busbw / algbw)" : "");
    if (run->nodes)
        printf("%d node%s, %zu rows\n", run->nodes, run->nodes > 1 ? "s" : "", run->n_rows);
    else
        printf("nodes not said, %zu rows\n", run->n_rows);
    printf("    %12s %12s %10s %10s %7s %9s %9s\n", "size_min", "size_max", "alpha_us", "busbw", "points",
           "rms_err%", "max_err%");
    for (size_t i = 0; i < m->n_fits; i++)
        print_fit(&m->fits[i]);
    /* the model before calibration, on the GPU's profile */
    int nodes = run->nodes ? run->nodes : (run->ranks + hw->gpus_per_node - 1) / hw->gpus_per_node;
    coll_params_from_hw(hw, &def);
    int per = (run->ranks + nodes - 1) / nodes;
    if (coll_run_check(&def, run, per, 0, &c, &err) == SC_OK &&
        coll_run_check(&def, run, per, coll_fit_range_lo[COLL_FIT_RANGES - 1], &big, &err) == SC_OK) {
        printf("    model with %s's defaults: median error %.1f%%, median predicted / measured %.2f",
               hw->id, c.median_abs_pct, c.median_ratio);
        if (big.n)
            printf("; from 16 MiB %.1f%%, %.2f", big.median_abs_pct, big.median_ratio);
        printf("\n");
    }
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

/* The GPU's profile: --gpu, else the one listing the measured device. */
static const struct hw_profile *resolve_gpu(const char *id, const char *device)
{
    const struct hw_profile *hw = id ? hw_profile_find(id) : device[0] ? profile_of(device) : NULL;
    if (!hw && id)
        fprintf(stderr, "stepcast: no hardware profile '%s' (stepcast hardware lists them)\n", id);
    else if (!hw && device[0])
        fprintf(stderr, "stepcast: no hardware profile lists the GPU '%s': name one with --gpu ID\n", device);
    else if (!hw)
        fprintf(stderr, "stepcast: the measurements do not name their GPU: name its profile with --gpu ID\n");
    return hw;
}

/* Set the collective model from the measurements, print it and write the
 * profile (with the kernel parameters when `kernel` is given). */
static int finish(const struct hw_profile *hw, const struct opts *o, const char *device, const char *source,
                  struct coll_measurement *m, size_t n, const struct cluster_profile *kernel)
{
    struct cluster_profile prof;
    char report[2048] = "";
    memset(&prof, 0, sizeof prof);
    if (kernel)
        prof = *kernel;
    snprintf(prof.gpu, sizeof prof.gpu, "%s", hw->id);
    snprintf(prof.device_name, sizeof prof.device_name, "%s", device);
    snprintf(prof.source, sizeof prof.source, "%s", source);
    /* a run over several hosts, or more ranks than a domain holds, spans domains */
    for (size_t i = 0; i < n; i++) {
        if (!m[i].nodes)
            m[i].nodes = m[i].ranks > hw->gpus_per_node ? (m[i].ranks + hw->gpus_per_node - 1) / hw->gpus_per_node : 1;
        m[i].inter = m[i].nodes > 1;
    }
    coll_params_from_hw(hw, &prof.coll);
    coll_params_apply(&prof.coll, m, n, report, sizeof report);
    printf("GPU profile %s%s%s%s\n", hw->id, device[0] ? " (measured on '" : "", device, device[0] ? "')" : "");
    fputs(report[0] ? report : "no collective measured: the collective model keeps the profile's defaults\n", stdout);
    const struct coll_params *p = &prof.coll;
    printf("collective model: base %.2f us; in the NVLink domain busbw %.1f GB/s, hop %.3f us; "
           "across domains busbw %.1f GB/s, hop %.3f us\n",
           p->base_us, p->intra.busbw_gbps, p->intra.hop_us, p->inter.busbw_gbps, p->inter.hop_us);
    json_t *doc = cluster_profile_json(&prof, m, n);
    int rc = doc ? write_profile(o->out, doc) : 1;
    json_decref(doc);
    if (!rc)
        printf("wrote %s\n", o->out);
    return rc;
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
    struct nct_run *runs = calloc((size_t)n_files, sizeof *runs);
    char device[96] = "";
    const struct hw_profile *hw = NULL;
    rc = m && runs ? 0 : 1;
    for (int i = 0; i < n_files && !rc; i++)
        rc = load_run(files[i], &o, &runs[i], device, sizeof device);
    if (!rc && !(hw = resolve_gpu(o.gpu, device)))
        rc = 2;
    for (int i = 0; i < n_files && !rc; i++) {
        const char *base = strrchr(files[i], '/');
        rc = measure(&runs[i], base ? base + 1 : files[i], hw, &m[i]);
    }
    if (!rc)
        rc = finish(hw, &o, device, "nccl-tests", m, (size_t)n_files, NULL);
    for (int i = 0; runs && i < n_files; i++)
        nct_run_release(&runs[i]);
    free(runs);
    free(m);
    return rc;
}

/* The GEMM fit of one GPU's samples, printed; when nothing can be fitted
 * the kernel model keeps its defaults and the output says why. */
static void fit_gemms(const struct hw_profile *hw, const struct gemm_samples *s, struct cluster_profile *prof)
{
    struct sc_error err;
    kernel_params_default(&prof->kernel);
    if (gemm_samples_fit(&prof->kernel, hw, s->v, s->n, &prof->kernel, &prof->kernel_fit, &err)) {
        printf("GEMMs: %zu with shapes; not fitted (%s): the kernel model keeps its defaults\n", s->n, err.msg);
        return;
    }
    const struct gemm_fit *f = &prof->kernel_fit;
    prof->has_kernel = 1;
    printf("GEMMs: %zu with shapes and times\n", f->samples);
    printf("    kernel_fixed_us %.2f (+- %.2f), gemm_ceiling_scale %.3f (+- %.3f)\n", prof->kernel.kernel_fixed_us,
           f->fixed_se_us, prof->kernel.gemm_ceiling_scale, f->scale_se);
    printf("    error |predicted / measured - 1|: median %.1f%% (defaults: %.1f%%), mean %.1f%% (defaults: %.1f%%)\n",
           f->after.median_abs_pct, f->before.median_abs_pct, f->after.mean_abs_pct, f->before.mean_abs_pct);
}

static int calibrate_traces(int argc, char **argv)
{
    struct opts o = {.kind = MODEL_COLL_UNKNOWN};
    char **paths = calloc((size_t)argc, sizeof *paths);
    int n_paths = 0, rc = 0;
    if (!paths)
        return 1;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--out") == 0 || strcmp(a, "--gpu") == 0) {
            if (!v)
                rc = cli_usage_error(CMD, "%s needs a value", a);
            else
                *(a[2] == 'o' ? &o.out : &o.gpu) = v;
            i++;
        } else if (a[0] == '-') {
            rc = cli_usage_error(CMD, "unknown option '%s'", a);
        } else {
            paths[n_paths++] = argv[i];
        }
    }
    if (!rc && !n_paths)
        rc = cli_usage_error(CMD, "no trace given");
    if (!rc && !o.out)
        rc = cli_usage_error(CMD, "--out PROFILE.json is required");
    struct model_job *job = NULL;
    if (!rc)
        rc = cli_load_job(paths, n_paths, NULL, &job);
    free(paths);
    if (rc)
        return rc;

    struct gemm_samples gemms = {0};
    struct coll_runs runs = {0};
    struct coll_measurement *m = NULL;
    struct cluster_profile prof;
    struct sc_error err;
    char device[96] = "";
    size_t skipped = 0, n_m = 0;
    memset(&prof, 0, sizeof prof);
    rc = 0;
    for (size_t r = 0; r < job->n_ranks && !rc; r++) {
        const struct model_trace *t = job->ranks[r];
        size_t sk = 0;
        if (gemm_samples_from_trace(t, &gemms, &sk, &err) || coll_runs_from_trace(t, &runs, &err)) {
            rc = cli_fail(&err);
            break;
        }
        skipped += sk;
        for (size_t i = 0; i < t->n_devices && !rc; i++) {
            const char *name = model_str(t, t->devices[i].name);
            if (!name || !*name)
                continue;
            if (!device[0])
                snprintf(device, sizeof device, "%s", name);
            else if (strcmp(bare(name), bare(device)) != 0) {
                fprintf(stderr, "stepcast: %s: GPU '%s', another trace has '%s': calibrate one GPU type at a time\n",
                        t->source, name, device);
                rc = 2;
            }
        }
    }
    const struct hw_profile *hw = rc ? NULL : resolve_gpu(o.gpu, device);
    if (!rc && !hw)
        rc = 2;
    if (!rc) {
        fit_gemms(hw, &gemms, &prof);
        if (skipped)
            printf("    (%zu GEMM ops whose dims or dtype could not be read)\n", skipped);
        m = calloc(runs.n + 1, sizeof *m);
        rc = m ? 0 : 1;
    }
    for (size_t i = 0; !rc && i < runs.n; i++)
        if (measure(&runs.v[i], "traces", hw, &m[n_m]) == 0)
            n_m++; /* a run that cannot be fitted is said and left out */
    if (!rc)
        rc = finish(hw, &o, device, "traces", m, n_m, &prof);
    free(m);
    coll_runs_release(&runs);
    gemm_samples_release(&gemms);
    model_job_free(job);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("calibrate", "what to calibrate from: nccl-tests or traces");
    if (strcmp(argv[1], "nccl-tests") == 0)
        return calibrate_nccl_tests(argc - 1, argv + 1);
    if (strcmp(argv[1], "traces") == 0)
        return calibrate_traces(argc - 1, argv + 1);
    return cli_usage_error("calibrate", "unknown source '%s' (nccl-tests or traces)", argv[1]);
}
