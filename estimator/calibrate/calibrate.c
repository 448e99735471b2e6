/* estimator/calibrate/calibrate.c: cluster profiles from nccl-tests outputs, GEMM
 * microbenchmark tables and traces (calibrate.h). */
#include "estimator/calibrate/calibrate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/calibrate/coll_samples.h"
#include "estimator/calibrate/coll_fit.h"
#include "estimator/costs/collective_model.h"
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/calibrate/gemm_table.h"
#include "estimator/calibrate/mem_samples.h"
#include "estimator/costs/op_kernels.h"
#include "estimator/calibrate/cost_set.h"
#include "model/job.h"
#include "common/banned.h"

void calib_run_apply(struct nct_run *run, const struct calib_opts *o)
{
    if (o->kind != MODEL_COLL_UNKNOWN && o->kind != run->kind) {
        run->kind = o->kind;
        if (run->ranks_derived || !run->ranks) {
            run->ranks = calib_nct_ranks_from_ratio(run);
            run->ranks_derived = run->ranks > 0;
        }
    }
    if (o->ranks) {
        run->ranks = o->ranks;
        run->ranks_derived = 0;
    }
    if (o->nodes)
        run->nodes = o->nodes;
}

/* A device name without the vendor prefix old nccl-tests leave out. */
static const char *bare(const char *device)
{
    return strncmp(device, "NVIDIA ", 7) == 0 ? device + 7 : device;
}

int calib_same_device(const char *a, const char *b)
{
    return strcmp(bare(a), bare(b)) == 0;
}

/* The profile a device name maps to, with or without the "NVIDIA ". */
static const struct hw_profile *profile_of(const char *device)
{
    const struct hw_profile *hw = cost_hw_profile_for_device(device);
    char full[128];
    if (!hw && strncmp(device, "NVIDIA ", 7) != 0) {
        snprintf(full, sizeof full, "NVIDIA %s", device);
        hw = cost_hw_profile_for_device(full);
    }
    return hw;
}

int calib_resolve_gpu(const char *id, const char *device, const struct hw_profile **hw,
                      struct sc_error *err)
{
    *hw = id ? cost_hw_profile_find(id) : device[0] ? profile_of(device) : NULL;
    if (*hw)
        return SC_OK;
    if (id)
        return sc_error_set(err, SC_EINVAL, "no hardware profile '%.64s' (stepcast hardware lists them)", id);
    if (device[0])
        return sc_error_set(err, SC_EINVAL, "no hardware profile lists the GPU '%.96s': name one with --gpu ID",
                            device);
    return sc_error_set(err, SC_EINVAL, "the measurements do not name their GPU: name its profile with --gpu ID");
}

static void report_fit(FILE *out, const struct coll_fit *f)
{
    char alpha[32], busbw[32];
    snprintf(alpha, sizeof alpha, f->alpha_fitted ? "%.2f" : "-", f->alpha_us);
    snprintf(busbw, sizeof busbw, f->busbw_gbps > 0 ? "%.2f" : "-", f->busbw_gbps);
    fprintf(out, "    %12.0f %12.0f %10s %10s %7zu %9.1f %9.1f\n", f->size_lo, f->size_hi, alpha, busbw, f->points,
            f->rms_err_pct, f->max_err_pct);
}

/* The model's error on one run, said after `what`. */
/* The model's median error on a run (-1 when it cannot be checked). */
static double run_error(const struct coll_params *p, const struct nct_run *run, int nodes)
{
    struct estimate_check c;
    struct sc_error ignored;
    return calib_coll_run_check(p, run, (run->ranks + nodes - 1) / nodes, 0, &c, &ignored) == SC_OK ? c.median_abs_pct
                                                                                             : -1;
}

static void report_check(FILE *report, const char *what, const struct coll_params *p, const struct nct_run *run,
                         int nodes)
{
    struct estimate_check c, big;
    struct sc_error ignored;
    int per = (run->ranks + nodes - 1) / nodes;
    if (calib_coll_run_check(p, run, per, 0, &c, &ignored) != SC_OK ||
        calib_coll_run_check(p, run, per, coll_fit_range_lo[COLL_FIT_RANGES - 1], &big, &ignored) != SC_OK)
        return;
    fprintf(report, "    %s: median error %.1f%%, median predicted / measured %.2f", what, c.median_abs_pct,
            c.median_ratio);
    if (big.n)
        fprintf(report, "; from 16 MiB %.1f%%, %.2f", big.median_abs_pct, big.median_ratio);
    fprintf(report, "\n");
}

/* The nodes a run spans: as it says, else as many as its ranks fill. */
static int run_nodes(const struct nct_run *run, const struct hw_profile *hw)
{
    return run->nodes ? run->nodes : (run->ranks + hw->gpus_per_node - 1) / hw->gpus_per_node;
}

int calib_measure(const struct nct_run *run, const char *source, const struct hw_profile *hw,
                  struct coll_measurement *m, FILE *report, struct sc_error *err)
{
    struct coll_params def;
    memset(m, 0, sizeof *m);
    m->kind = run->kind;
    m->ranks = run->ranks;
    m->nodes = run->nodes;
    snprintf(m->source, sizeof m->source, "%s", source);
    int rc = calib_coll_fit_run(run, m->fits, &m->n_fits, err);
    if (rc) {
        sc_error_prefix(err, "%.128s", source);
        return rc;
    }
    fprintf(report, "%s: %s, %d ranks%s, ", source, cost_coll_kind_name(run->kind), run->ranks,
            run->ranks_derived ? " (from busbw / algbw)" : "");
    if (run->nodes)
        fprintf(report, "%d node%s, %zu rows\n", run->nodes, run->nodes > 1 ? "s" : "", run->n_rows);
    else
        fprintf(report, "nodes not said, %zu rows\n", run->n_rows);
    fprintf(report, "    %12s %12s %10s %10s %7s %9s %9s\n", "size_min", "size_max", "alpha_us", "busbw",
            "points", "rms_err%", "max_err%");
    for (size_t i = 0; i < m->n_fits; i++)
        report_fit(report, &m->fits[i]);
    /* the model before calibration, on the GPU's profile */
    char what[96];
    cost_coll_params_from_hw(hw, &def);
    snprintf(what, sizeof what, "model with %s's defaults", hw->id);
    report_check(report, what, &def, run, run_nodes(run, hw));
    return SC_OK;
}

/* A flag on the profile (at most CLUSTER_PROFILE_MAX_FLAGS), reported. */
__attribute__((format(printf, 3, 4))) static void flag(struct cluster_profile *prof, FILE *report, const char *fmt,
                                                       ...)
{
    if (prof->n_flags == CLUSTER_PROFILE_MAX_FLAGS)
        return;
    char *f = prof->flags[prof->n_flags++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f, sizeof prof->flags[0], fmt, ap);
    va_end(ap);
    fprintf(report, "flag: %s\n", f);
}

/* A fitted busbw faster than the link it runs over, with room for the
 * fit's noise (and NVLS, whose switches reduce: its gain is allowed);
 * below 16 MiB a range's time is mostly its latency and the slope of its
 * line is loose, so only a busbw past twice the link is flagged there. */
#define CALIB_LINK_SLACK 1.05
#define CALIB_LINK_SLACK_SMALL 2.0

/* What the collective fit got wrong: a bandwidth above the link's (the
 * GPU's NVLink in a domain, its network share across domains), and a
 * calibrated model no better than the GPU's defaults on the very runs it
 * was fitted to (it is no calibration then: the model does not describe
 * these measurements). */
static void flag_collectives(const struct hw_profile *hw, struct cluster_profile *prof,
                             const struct coll_measurement *m, const struct nct_run *const *runs, size_t n,
                             FILE *report)
{
    const struct coll_params *p = &prof->coll;
    double nvlink = hw->nvlink_gbps * CALIB_LINK_SLACK * (p->nvls ? p->nvls_gain : 1);
    if (hw->nvlink_gbps > 0 && p->intra.busbw_gbps > nvlink)
        flag(prof, report, "NVLink-domain busbw %.1f GB/s is above the %s's %.0f GB/s NVLink per direction",
             p->intra.busbw_gbps, hw->id, hw->nvlink_gbps);
    if (hw->network_gbps > 0 && p->inter.busbw_gbps > hw->network_gbps * CALIB_LINK_SLACK * (p->sharp ? 2 : 1))
        flag(prof, report, "cross-domain busbw %.1f GB/s is above the %s's %.0f GB/s of network per GPU",
             p->inter.busbw_gbps, hw->id, hw->network_gbps);
    /* the lines of the kinds measured here (the profile's own lines are
     * the hardware profile's, not this fit's) */
    unsigned measured = 0;
    for (size_t i = 0; i < n; i++)
        measured |= m[i].inter ? 0u : 1u << m[i].kind;
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++)
        for (int j = 0; (measured >> k & 1) && hw->nvlink_gbps > 0 && j < p->lines[k].n; j++)
            if (p->lines[k].v[j].busbw_gbps >
                nvlink * (p->lines[k].v[j].from_bytes < coll_fit_range_lo[COLL_FIT_RANGES - 1]
                              ? CALIB_LINK_SLACK_SMALL / CALIB_LINK_SLACK
                              : 1))
                flag(prof, report, "%s from %.0f B: busbw %.1f GB/s is above the %s's %.0f GB/s NVLink per direction",
                     cost_coll_kind_name((enum model_coll_op)k), p->lines[k].v[j].from_bytes, p->lines[k].v[j].busbw_gbps,
                     hw->id, hw->nvlink_gbps);
    struct coll_params def;
    cost_coll_params_from_hw(hw, &def);
    for (size_t i = 0; runs && i < n; i++) {
        if (!runs[i])
            continue;
        double after = run_error(p, runs[i], m[i].nodes), before = run_error(&def, runs[i], m[i].nodes);
        if (after > CALIB_USELESS_PCT && after >= before - 0.5)
            flag(prof, report,
                 "on %s (%s, %d ranks) the calibrated model is %.1f%% off, no better than the defaults' %.1f%%: "
                 "the model does not describe these measurements",
                 m[i].source, cost_coll_kind_name(m[i].kind), m[i].ranks, after, before);
    }
}

int calib_profile(const struct hw_profile *hw, const char *device, const char *source,
                  struct coll_measurement *m, const struct nct_run *const *runs, size_t n,
                  const struct cluster_profile *kernel, FILE *report, char **doc, struct sc_error *err)
{
    struct cluster_profile prof;
    char text[8192] = "";
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
    cost_coll_params_from_hw(hw, &prof.coll);
    cost_coll_params_apply(&prof.coll, m, n, text, sizeof text);
    fprintf(report, "GPU profile %s%s%s%s\n", hw->id, device[0] ? " (measured on '" : "", device,
            device[0] ? "')" : "");
    fputs(text[0] ? text : "no collective measured: the collective model keeps the profile's defaults\n", report);
    const struct coll_params *p = &prof.coll;
    fprintf(report, "collective model: base %.2f us; in the NVLink domain busbw %.1f GB/s, hop %.3f us; "
            "across domains busbw %.1f GB/s, hop %.3f us\n",
            p->base_us, p->intra.busbw_gbps, p->intra.hop_us, p->inter.busbw_gbps, p->inter.hop_us);
    for (size_t i = 0; runs && i < n; i++)
        if (runs[i]) {
            char what[192];
            snprintf(what, sizeof what, "calibrated model on %s (%s, %d ranks)", m[i].source,
                     cost_coll_kind_name(m[i].kind), m[i].ranks);
            report_check(report, what, p, runs[i], m[i].nodes);
        }
    flag_collectives(hw, &prof, m, runs, n, report);
    if (prof.has_kernel && prof.kernel_fit.samples && prof.kernel_fit.after.median_abs_pct > CALIB_USELESS_PCT &&
        prof.kernel_fit.after.median_abs_pct >= prof.kernel_fit.before.median_abs_pct - 0.5)
        flag(&prof, report,
             "the GEMM fit is %.1f%% off its own samples, no better than the defaults' %.1f%%: the model does not "
             "describe these GEMMs",
             prof.kernel_fit.after.median_abs_pct, prof.kernel_fit.before.median_abs_pct);
    *doc = calib_cluster_profile_json(&prof, m, n);
    return *doc ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
}

/* The file name of a path (NULL stays NULL). */
static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path;
}

/* The GEMM fit of one GPU's samples, reported; when nothing can be fitted
 * the kernel model keeps the estimator's defaults (`make validate`'s fit,
 * calib_costs_default: what a spec without this profile would get) and the
 * report says why. */
static void fit_gemms(const struct hw_profile *hw, const struct gemm_samples *s, struct cluster_profile *prof,
                      FILE *report)
{
    struct sc_error err;
    struct est_costs defaults;
    calib_costs_default(hw, NULL, &defaults);
    prof->kernel = defaults.kernel;
    if (calib_gemm_samples_fit(&prof->kernel, hw, s->v, s->n, &prof->kernel, &prof->kernel_fit, &err)) {
        fprintf(report, "GEMMs: %zu with shapes; not fitted (%s): their parameters keep the defaults\n", s->n,
                err.msg);
        return;
    }
    const struct gemm_fit *f = &prof->kernel_fit;
    prof->has_kernel = 1;
    fprintf(report, "GEMMs: %zu with shapes and times\n", f->samples);
    fprintf(report, "    kernel_fixed_us %.2f (+- %.2f), gemm_ceiling_scale %.3f (+- %.3f)\n",
            prof->kernel.kernel_fixed_us, f->fixed_se_us, prof->kernel.gemm_ceiling_scale, f->scale_se);
    fprintf(report, "    error |predicted / measured - 1|: median %.1f%% (defaults: %.1f%%), mean %.1f%% (defaults: %.1f%%)\n",
            f->after.median_abs_pct, f->before.median_abs_pct, f->after.mean_abs_pct, f->before.mean_abs_pct);
}

/* The kernel model's error on each dtype's samples, with the parameters
 * before (the defaults) and after the fit; a dtype whose bit is set in
 * `own` had its ceiling fitted alone. */
static void report_dtypes(const struct hw_profile *hw, const struct gemm_samples *s, const struct kernel_params *before,
                          const struct kernel_params *after, unsigned own, FILE *report)
{
    struct gemm_sample *sub = malloc((s->n ? s->n : 1) * sizeof *sub);
    if (!sub)
        return;
    for (int d = 0; d < HW_DTYPE_COUNT; d++) {
        size_t n = 0;
        struct estimate_check b, a;
        struct sc_error err;
        for (size_t i = 0; i < s->n; i++)
            if (s->v[i].dtype == (enum hw_dtype)d)
                sub[n++] = s->v[i];
        if (n && calib_gemm_samples_check(before, hw, sub, n, &b, &err) == SC_OK &&
            calib_gemm_samples_check(after, hw, sub, n, &a, &err) == SC_OK) {
            fprintf(report, "    %-4s %6zu GEMMs: median error %.1f%% (defaults: %.1f%%), median predicted / measured "
                    "%.2f (defaults: %.2f)", cost_hw_dtype_name((enum hw_dtype)d), n, a.median_abs_pct, b.median_abs_pct,
                    a.median_ratio, b.median_ratio);
            if (own >> d & 1)
                fprintf(report, "; its own ceiling, gemm_ceiling_scale_%s %.3f", cost_hw_dtype_name((enum hw_dtype)d),
                        after->dtype_scale[d]);
            fputc('\n', report);
        } else if (n)
            fprintf(report, "    %-4s %6zu GEMMs: not checked (%s)\n", cost_hw_dtype_name((enum hw_dtype)d), n, err.msg);
    }
    free(sub);
}

/* Rows of dtypes the GPU lacks (tf32 on a V100, fp4 before Blackwell: a
 * benchmark may time them anyway, emulated) left out of *s, and said. */
static void drop_missing_dtypes(const struct hw_profile *hw, struct gemm_samples *s, FILE *report)
{
    size_t dropped[HW_DTYPE_COUNT] = {0}, k = 0;
    for (size_t i = 0; i < s->n; i++) {
        enum hw_dtype d = s->v[i].dtype;
        if (hw->peak_tflops[d] > 0)
            s->v[k++] = s->v[i];
        else
            dropped[d]++;
    }
    s->n = k;
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        if (dropped[d])
            fprintf(report, "GEMMs: %zu in %s left out: %s has no %s\n", dropped[d], cost_hw_dtype_name((enum hw_dtype)d),
                    hw->name, cost_hw_dtype_name((enum hw_dtype)d));
}

/* The device a file names (dev, "" for none) checked against the one the
 * files before it named (*device, set by the first). */
static int same_gpu(const char *dev, const char *name, char *device, size_t n, struct sc_error *err)
{
    if (dev[0] && !device[0])
        snprintf(device, n, "%s", dev);
    else if (dev[0] && !calib_same_device(dev, device))
        return sc_error_set(err, SC_EINVAL, "%.128s: GPU '%s', another file has '%s': calibrate one GPU type at a time",
                            name, dev, device);
    return SC_OK;
}

/* The nccl-tests outputs parsed into runs[] (the options applied). */
static int read_runs(const struct calib_files *f, const struct calib_opts *o, struct nct_run *runs, char *device,
                     size_t n, struct sc_error *err)
{
    for (size_t i = 0; i < f->n; i++) {
        const char *name = f->names[i] ? f->names[i] : "output";
        int rc = calib_nct_parse(f->texts[i], f->lens[i], base_name(f->names[i]), &runs[i], err);
        if (rc) {
            if (err->offset >= 0)
                sc_error_prefix(err, "'%.128s': byte %lld", name, (long long)err->offset);
            else
                sc_error_prefix(err, "'%.128s'", name);
            return rc;
        }
        calib_run_apply(&runs[i], o);
        if ((rc = same_gpu(runs[i].device, name, device, n, err)))
            return rc;
    }
    return SC_OK;
}

/* The GEMM tables' rows appended to *s. */
static int read_tables(const struct calib_files *f, struct gemm_samples *s, char *device, size_t n,
                       struct sc_error *err)
{
    char dev[96];
    for (size_t i = 0; i < f->n; i++) {
        const char *name = f->names[i] ? base_name(f->names[i]) : "table";
        int rc = calib_gemm_table_parse(f->texts[i], f->lens[i], s, dev, sizeof dev, err);
        if (rc) {
            sc_error_prefix(err, "'%.128s'", name);
            return rc;
        }
        if ((rc = same_gpu(dev, name, device, n, err)))
            return rc;
    }
    return SC_OK;
}

int calib_files(const struct calib_files *nccl, const struct calib_files *gemms, const struct calib_opts *o,
                FILE *report, char **doc, struct sc_error *err)
{
    static const struct calib_files none = {NULL, NULL, NULL, 0};
    const struct calib_files *nf = nccl ? nccl : &none, *gf = gemms ? gemms : &none;
    struct coll_measurement *m = calloc(nf->n + 1, sizeof *m);
    struct nct_run *runs = calloc(nf->n + 1, sizeof *runs);
    const struct nct_run **run_of = calloc(nf->n + 1, sizeof *run_of);
    struct gemm_samples s = {0};
    struct cluster_profile prof;
    const struct hw_profile *hw = NULL;
    char device[96] = "";
    int rc = m && runs && run_of ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
    *doc = NULL;
    memset(&prof, 0, sizeof prof);
    if (!rc && !nf->n && !gf->n)
        rc = sc_error_set(err, SC_EINVAL, "no nccl-tests output or GEMM table given");
    if (!rc && !(rc = read_runs(nf, o, runs, device, sizeof device, err)) &&
        !(rc = read_tables(gf, &s, device, sizeof device, err)))
        rc = calib_resolve_gpu(o->gpu, device, &hw, err);
    if (!rc && gf->n) {
        drop_missing_dtypes(hw, &s, report);
        fit_gemms(hw, &s, &prof, report);
        if (!prof.has_kernel)
            rc = sc_error_set(err, SC_EINVAL, "the GEMM table could not be fitted: no profile written");
    }
    if (!rc && gf->n) {
        struct est_costs defaults;
        unsigned own = 0;
        calib_costs_default(hw, NULL, &defaults);
        if ((rc = calib_gemm_samples_fit_dtypes(&prof.kernel, hw, s.v, s.n, &prof.kernel, &own, err)) == SC_OK)
            report_dtypes(hw, &s, &defaults.kernel, &prof.kernel, own, report);
    }
    for (size_t i = 0; i < nf->n && !rc; i++) {
        rc = calib_measure(&runs[i], nf->names[i] ? base_name(nf->names[i]) : "output", hw, &m[i], report, err);
        run_of[i] = &runs[i];
    }
    if (!rc)
        rc = calib_profile(hw, device, !gf->n ? "nccl-tests" : !nf->n ? "gemm-bench" : "nccl-tests+gemm-bench", m,
                           run_of, nf->n, gf->n ? &prof : NULL, report, doc, err);
    for (size_t i = 0; runs && i < nf->n; i++)
        calib_nct_run_release(&runs[i]);
    free(runs);
    free(run_of);
    free(m);
    calib_gemm_samples_release(&s);
    return rc;
}

/* The HBM fraction's fit on one GPU's memory-bound ops (with the fixed
 * cost per kernel of the GEMM fit), reported. */
static void fit_memory(const struct hw_profile *hw, const struct mem_samples *s, const struct mem_skips *sk,
                       struct cluster_profile *prof, FILE *report)
{
    struct sc_error err;
    const struct mem_fit *f = &prof->mem_fit;
    if (calib_mem_samples_fit(&prof->kernel, hw, s->v, s->n, &prof->kernel, &prof->mem_fit, &err)) {
        fprintf(report, "memory-bound ops: %zu with bytes; not fitted (%s): hbm_fraction keeps %.2f\n", s->n,
                err.msg, prof->kernel.hbm_fraction);
    } else {
        prof->has_kernel = 1;
        fprintf(report, "memory-bound ops: %zu with bytes and times, %zu of at least 64 MiB fitted\n", s->n,
                f->samples);
        fprintf(report, "    hbm_fraction %.3f (+- %.3f) of %.0f GB/s, with kernel_fixed_us %.2f\n",
                prof->kernel.hbm_fraction, f->fraction_se, hw->hbm_gbps, prof->kernel.kernel_fixed_us);
        fprintf(report, "    error |predicted / measured - 1| on those: median %.1f%% (at %.2f: %.1f%%), mean %.1f%% (at %.2f: %.1f%%)\n",
                f->after.median_abs_pct, f->before_fraction, f->before.median_abs_pct, f->after.mean_abs_pct,
                f->before_fraction, f->before.mean_abs_pct);
    }
    if (sk->unreadable || sk->other_kernel)
        fprintf(report, "    (left out: %zu whose dims or types could not be read, %zu that ran a kernel "
                "that is not elementwise)\n", sk->unreadable, sk->other_kernel);
}

/* The flash attention throughput's fit on one GPU's fused attention ops
 * (after the GEMM fit: its ceiling is what attention runs at a share of),
 * reported. */
static void fit_attention(const struct hw_profile *hw, const struct attn_samples *s, size_t unreadable,
                          struct cluster_profile *prof, FILE *report)
{
    struct sc_error err;
    const struct attn_fit *f = &prof->attn_fit;
    if (s->n == 0 && unreadable == 0)
        return;
    if (calib_attn_samples_fit(&prof->kernel, hw, s->v, s->n, &prof->kernel, &prof->attn_fit, &err)) {
        fprintf(report, "attention ops: %zu with shapes; not fitted (%s)\n", s->n, err.msg);
    } else if (!f->fitted) {
        fprintf(report, "attention ops: %zu forward, %zu backward with shapes; at least 4 of a pass are needed to "
                "fit: the attention parameters keep the defaults\n", f->forward, f->backward);
    } else {
        prof->has_kernel = 1;
        fprintf(report, "attention ops: %zu forward, %zu backward with shapes and times\n", f->forward,
                f->backward);
        if (f->fitted & 1)
            fprintf(report, "    attn_efficiency %.3f (+- %.3f) of the GEMM ceiling, attn_block_us %.2f (+- %.2f)\n",
                    prof->kernel.attn_efficiency, f->forward_se[0], prof->kernel.attn_block_us, f->forward_se[1]);
        if (f->fitted & 2)
            fprintf(report, "    attn_backward_fraction %.3f (+- %.3f) of the forward's throughput, "
                    "attn_backward_block_us %.2f (+- %.2f)\n", prof->kernel.attn_backward_fraction,
                    f->backward_se[0], prof->kernel.attn_backward_block_us, f->backward_se[1]);
        fprintf(report, "    error |predicted / measured - 1|: median %.1f%% (defaults: %.1f%%), median predicted / "
                "measured %.2f (defaults: %.2f)\n", f->after.median_abs_pct, f->before.median_abs_pct,
                f->after.median_ratio, f->before.median_ratio);
    }
    if (unreadable)
        fprintf(report, "    (left out: %zu attention ops whose shapes or is_causal could not be read: PyTorch "
                "records is_causal from 2.3 on)\n", unreadable);
}

struct calib_acc {
    struct gemm_samples gemms;
    struct mem_samples mems;
    struct mem_skips mem_skipped;
    struct attn_samples attns;
    size_t attn_unreadable;
    struct coll_runs runs;
    char device[96];
    size_t skipped;
};

struct calib_acc *calib_acc_new(void)
{
    return calloc(1, sizeof(struct calib_acc));
}

void calib_acc_free(struct calib_acc *a)
{
    if (!a)
        return;
    calib_coll_runs_release(&a->runs);
    calib_gemm_samples_release(&a->gemms);
    calib_mem_samples_release(&a->mems);
    calib_attn_samples_release(&a->attns);
    free(a);
}

size_t calib_acc_bytes(const struct calib_acc *a)
{
    size_t bytes = sizeof *a + a->gemms.cap * sizeof *a->gemms.v + a->mems.cap * sizeof *a->mems.v +
                   a->attns.cap * sizeof *a->attns.v + a->runs.cap * sizeof *a->runs.v;
    for (size_t i = 0; i < a->runs.n; i++)
        bytes += a->runs.v[i].n_rows * sizeof *a->runs.v[i].rows;
    return bytes;
}

int calib_acc_add(struct calib_acc *a, const struct model_trace *t, struct sc_error *err)
{
    size_t sk = 0;
    int rc;
    if (t->shed)
        return sc_error_set(err, SC_EINVAL, "%.128s: its events were not kept: calibrate from the trace",
                            t->source ? t->source : "a trace");
    /* the ops joined to their kernels once, for the three kinds of samples */
    struct op_kernels ok;
    if ((rc = cost_op_kernels_join(t, &ok, err)))
        return rc;
    if ((rc = calib_gemm_samples_of_ops(t, &ok, &a->gemms, &sk, NULL, err)) ||
        (rc = calib_mem_samples_of_ops(t, &ok, &a->mems, &a->mem_skipped, err)) ||
        (rc = calib_attn_samples_of_ops(t, &ok, &a->attns, &a->attn_unreadable, err)) ||
        (rc = calib_coll_runs_from_trace(t, &a->runs, err))) {
        cost_op_kernels_release(&ok);
        return rc;
    }
    cost_op_kernels_release(&ok);
    a->skipped += sk;
    for (size_t i = 0; i < t->n_devices; i++) {
        const char *name = model_str(t, t->devices[i].name);
        if (!name || !*name)
            continue;
        if (!a->device[0])
            snprintf(a->device, sizeof a->device, "%s", name);
        else if (!calib_same_device(name, a->device))
            return sc_error_set(err, SC_EINVAL, "%.128s: GPU '%s', another trace has '%s': calibrate one GPU type at a time",
                                t->source ? t->source : "a trace", name, a->device);
    }
    return SC_OK;
}

int calib_traces(const struct model_job *job, const char *gpu, FILE *report, char **doc,
                 struct sc_error *err)
{
    struct calib_acc *a = calib_acc_new();
    int rc = a ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t r = 0; r < job->n_ranks && !rc; r++)
        rc = calib_acc_add(a, job->ranks[r], err);
    if (!rc)
        rc = calib_acc_finish(a, gpu, report, doc, err);
    calib_acc_free(a);
    return rc;
}

int calib_acc_finish(const struct calib_acc *a, const char *gpu, FILE *report, char **doc, struct sc_error *err)
{
    struct coll_measurement *m = NULL;
    const struct nct_run **run_of = NULL;
    struct cluster_profile prof;
    const struct hw_profile *hw = NULL;
    size_t n_m = 0;
    int rc = calib_resolve_gpu(gpu, a->device, &hw, err);
    memset(&prof, 0, sizeof prof);
    *doc = NULL;
    if (!rc) {
        fit_gemms(hw, &a->gemms, &prof, report);
        if (a->skipped)
            fprintf(report, "    (%zu GEMM ops whose dims or dtype could not be read)\n", a->skipped);
        fit_memory(hw, &a->mems, &a->mem_skipped, &prof, report);
        fit_attention(hw, &a->attns, a->attn_unreadable, &prof, report);
        if (!(m = calloc(a->runs.n + 1, sizeof *m)) || !(run_of = calloc(a->runs.n + 1, sizeof *run_of)))
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; !rc && i < a->runs.n; i++) {
        struct sc_error why;
        if (calib_measure(&a->runs.v[i], "traces", hw, &m[n_m], report, &why) == SC_OK)
            run_of[n_m++] = &a->runs.v[i];
        else /* a run that cannot be fitted is said and left out */
            fprintf(report, "%s\n", why.msg);
    }
    if (!rc)
        rc = calib_profile(hw, a->device, "traces", m, run_of, n_m, &prof, report, doc, err);
    free(m);
    free(run_of);
    return rc;
}
