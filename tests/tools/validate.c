/* tests/tools/validate.c: `make validate`: the spec-driven estimator
 * against measured step times (estimator/plan/validation.h).
 *
 *   validate [--gpu ID] [--dtype D] [--attention flash|unfused]
 *            [--detail stage|layer|kernel] [--max-mape PCT]
 *            [--rows OUT.csv] [--bands OUT.json] [--starts K] FILE.csv
 *
 * It reports the cited costs (calib_costs_cited) and the estimator's
 * defaults (calib_costs_default, which hold the fit on all rows) on every
 * row; then fits the parameters
 * that may be fitted (est_fit_params) on every row with GSL, starting from
 * the cited costs, and scores that fit on every row and by parallelism kind
 * (which of TP, PP, DP exceed 1); then the grouped hold-out folds, each
 * fitted from the cited costs on one group of rows and scored on the other
 * (hidden 1024 -> 2048, 2048 -> 1024, TP <= 2 -> TP 4 and 8, each TP
 * degree also reported alone). The last
 * line is `N passed, N failed`: the estimator's defaults, the fit on all
 * rows and each fold's score held against --max-mape (default 10%); the
 * kinds are reported. --rows writes every row with its estimate under
 * the fit on all rows (the input's columns, then estimated ms), for study.
 * --starts K fits from K starts (plan_fit); the default, 1, is what make
 * validate runs. --bands OUT.json writes the band of the rows' region
 * (estimator/plan/bands.h) under the estimator's defaults, as one region of a
 * bands file: data/calibration/bands.json is made of such regions.
 *
 *   validate --published [--detail L] [--iters N] [--bands OUT.json] FILE.md
 *
 * scores the published step times of H100 and GB200 jobs instead
 * (validate_published.c), its fits at most N simplex iterations each. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/plan/bands.h"
#include "estimator/synth/estimate.h"
#include "estimator/synth/invariants.h"
#include "estimator/plan/validation.h"
#include "tests/tools/validate.h"
#include "common/banned.h"

char *validate_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len + 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
        buf[len] = '\0';
        *n = (size_t)len;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* The published mode's fits: an estimate takes about 5 ms, a group's
 * rows (up to 130) about 0.3 s; 40 iterations (60 to 80 evaluations) a
 * fit, the groups fitted side by side, keep the published part near 200 s
 * of CPU in all (BENCHMARKS.md, "Published runs"). */
#define PUBLISHED_ITERS 40

static int passed, failed;

/* limit < 0: reported, not checked */
static void report(const char *what, const struct est_score *s, double limit)
{
    int ok = s->mape <= limit;
    printf("%-4s %-34s %5zu rows  MAPE %6.2f%%  bias %+7.2f%%  max %6.1f%%\n",
           limit < 0 ? "--" : ok ? "ok" : "FAIL", what, s->n, s->mape, s->bias, s->max_ape);
    if (limit < 0)
        return;
    if (ok)
        passed++;
    else
        failed++;
}

static void print_costs(const char *what, struct est_costs *c)
{
    printf("     %s:", what);
    for (size_t i = 0; i < est_n_fit_params; i++)
        printf(" %s=%.3f", cost_params[est_fit_params[i].param].name, plan_fit_param(c, i));
    printf("\n");
}

int validate_invariants(const struct est_runs *r, const struct est_costs *c, enum est_detail detail,
                        struct sc_error *err)
{
    for (size_t i = 0; i < r->n; i++) {
        struct est_estimate e;
        int rc;
        if (r->same && r->same[i] != i)
            continue; /* a configuration measured again: checked once */
        if ((rc = synth_estimate(&r->specs[i], r->hws[i], c, detail, &e, err)))
            return rc;
        rc = synth_invariants_check(&r->specs[i], r->hws[i], c, &e, err);
        synth_estimate_release(&e);
        if (rc)
            return sc_error_prefix(err, "line %zu", r->lines ? r->lines[i] : i + 1);
    }
    return SC_OK;
}

/* Every row with its estimate under costs c, as CSV. */
static int write_rows(const char *path, const struct est_measured *rows, const struct est_runs *runs,
                      const struct est_costs *c, enum est_detail detail, struct sc_error *err)
{
    size_t n = runs->n;
    double *pred = calloc(n ? n : 1, sizeof *pred);
    struct est_score s;
    FILE *f;
    if (!pred)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (plan_validate(runs, NULL, c, detail, pred, &s, err)) {
        free(pred);
        return err->code;
    }
    if (!(f = fopen(path, "w"))) {
        free(pred);
        return sc_error_set(err, SC_EIO, "%s: cannot write", path);
    }
    fprintf(f, "gpus,global_batch,micro_batch,hidden,heads,layers,seq,tp,dp,pp,measured_ms,estimated_ms\n");
    for (size_t i = 0; i < n; i++) {
        const struct est_measured *m = &rows[i];
        fprintf(f, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.4f,%.4f\n", (long long)m->gpus,
                (long long)m->global_batch, (long long)m->micro_batch, (long long)m->hidden, (long long)m->heads,
                (long long)m->layers, (long long)m->seq, (long long)m->tp, (long long)m->dp, (long long)m->pp,
                m->step_ms, pred[i]);
    }
    free(pred);
    return fclose(f) ? sc_error_set(err, SC_EIO, "%s: cannot write", path) : SC_OK;
}

/* One region's band from the runs in it (plan_region_of of each run's
 * spec, with its GPU), estimates pred. */
static void band_of(const struct est_runs *r, const double *pred, const struct est_band *key, struct est_band *out,
                    double *e)
{
    size_t n = 0;
    *out = *key;
    for (size_t i = 0; i < r->n; i++) {
        enum est_model_kind model;
        enum est_sharding sharding;
        plan_region_of(&r->specs[i], &model, &sharding);
        if (strcmp(r->specs[i].cluster.gpu, key->gpu) || model != key->model || sharding != key->sharding ||
            !(pred[i] > 0))
            continue;
        e[n++] = pred[i] / r->step_ms[i] - 1;
        plan_band_add_run(out, &r->specs[i], r->hws[i], r->step_ms[i]);
    }
    plan_band_set_errors(out, e, n);
}

int validate_write_bands(const char *path, const struct est_runs *r, const double *pred, const char *source,
                         struct sc_error *err)
{
    struct est_bands bands = {NULL, 0};
    double *e = calloc(r->n ? r->n : 1, sizeof *e);
    char *text = NULL;
    FILE *f = NULL;
    size_t len;
    int rc = SC_OK;
    if (!e)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    /* the regions of the file already there that these runs do not cover stay */
    char *old = validate_slurp(path, &len);
    if (old && (rc = plan_bands_parse(old, len, &bands, err)))
        rc = sc_error_prefix(err, "%s", path);
    free(old);
    unsigned char *made = calloc(bands.n + r->n + 1, 1); /* a region made from these runs */
    if (!rc && !made)
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < r->n; i++) {
        struct est_band key = {0};
        snprintf(key.gpu, sizeof key.gpu, "%s", r->specs[i].cluster.gpu);
        snprintf(key.source, sizeof key.source, "%s", source);
        plan_region_of(&r->specs[i], &key.model, &key.sharding);
        struct est_band *at = (struct est_band *)plan_bands_find(&bands, key.gpu, key.model, key.sharding);
        if (at && made[at - bands.regions])
            continue;
        if (!at) {
            struct est_band *grown = realloc(bands.regions, (bands.n + 1) * sizeof *grown);
            if (!grown) {
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
                break;
            }
            bands.regions = grown;
            at = &bands.regions[bands.n++];
        }
        band_of(r, pred, &key, at, e);
        made[at - bands.regions] = 1;
    }
    free(made);
    if (!rc && !(text = plan_bands_text(&bands)))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    else if (!rc && (!(f = fopen(path, "w")) || fprintf(f, "%s\n", text) < 0))
        rc = sc_error_set(err, SC_EIO, "%s: cannot write", path);
    if (f && fclose(f) && !rc)
        rc = sc_error_set(err, SC_EIO, "%s: cannot write", path);
    free(text);
    free(e);
    plan_bands_release(&bands);
    return rc;
}

/* A whole number from lo to hi, nothing after it. */
static int parse_count(const char *text, long lo, long hi, int *out)
{
    char *end;
    long k = strtol(text, &end, 10);
    if (end == text || *end || k < lo || k > hi)
        return -1;
    *out = (int)k;
    return 0;
}

/* A limit in percent: a number above 0, nothing after it. */
static int parse_pct(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v > 0) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"gpu", required_argument, NULL, 'g'},   {"dtype", required_argument, NULL, 't'},
        {"attention", required_argument, NULL, 'a'}, {"detail", required_argument, NULL, 'd'},
        {"max-mape", required_argument, NULL, 'm'}, {"rows", required_argument, NULL, 'r'},
        {"starts", required_argument, NULL, 's'}, {"published", no_argument, NULL, 'p'},
        {"iters", required_argument, NULL, 'i'}, {"bands", required_argument, NULL, 'b'},
        {NULL, 0, NULL, 0},
    };
    const char *gpu = "a100-sxm4-80gb", *dtype = "fp16", *attention = "unfused", *rows_out = NULL, *bands_out = NULL;
    enum est_detail detail = EST_DETAIL_STAGE;
    double limit = 10;
    struct sc_error err;
    int c, starts = 1, published = 0, iters = PUBLISHED_ITERS;
    while ((c = getopt_long(argc, argv, "g:t:a:d:m:r:s:pi:b:", opts, NULL)) != -1) {
        switch (c) {
        case 'g': gpu = optarg; break;
        case 't': dtype = optarg; break;
        case 'a': attention = optarg; break;
        case 'd':
            if (synth_detail_parse(optarg, &detail, &err)) {
                fprintf(stderr, "validate: %s\n", err.msg);
                return 2;
            }
            break;
        case 'm':
            if (parse_pct(optarg, &limit)) {
                fprintf(stderr, "validate: --max-mape takes a percentage above 0\n");
                return 2;
            }
            break;
        case 'r': rows_out = optarg; break;
        case 'b': bands_out = optarg; break;
        case 's':
            if (parse_count(optarg, 1, 16, &starts)) {
                fprintf(stderr, "validate: --starts takes 1 to 16\n");
                return 2;
            }
            break;
        case 'p': published = 1; break;
        case 'i':
            if (parse_count(optarg, 1, 1000, &iters)) {
                fprintf(stderr, "validate: --iters takes 1 to 1000\n");
                return 2;
            }
            break;
        default: return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: validate [--gpu ID] [--dtype D] [--attention A] [--detail L] [--max-mape PCT] "
                        "[--rows OUT.csv] [--bands OUT.json] [--starts K] FILE.csv\n"
                        "       validate --published [--detail L] [--iters N] [--bands OUT.json] FILE.md\n");
        return 2;
    }
    if (published)
        return validate_published(argv[optind], detail, iters, bands_out);
    size_t len, n;
    char *text = validate_slurp(argv[optind], &len);
    struct est_measured *rows;
    if (!text) {
        fprintf(stderr, "validate: cannot read %s\n", argv[optind]);
        return 2;
    }
    if (plan_measured_parse(text, len, &rows, &n, &err)) {
        fprintf(stderr, "validate: %s: %s\n", argv[optind], err.msg);
        free(text);
        return 2;
    }
    free(text);
    struct est_spec *specs = calloc(n ? n : 1, sizeof *specs);
    const struct hw_profile **hws = calloc(n ? n : 1, sizeof *hws);
    unsigned char *train = calloc(n ? n : 1, 1), *test = calloc(n ? n : 1, 1);
    double *step_ms = calloc(n ? n : 1, sizeof *step_ms);
    size_t *lines = calloc(n ? n : 1, sizeof *lines);
    struct est_runs runs = {n, specs, hws, step_ms, lines, NULL};
    int rc = 1;
    if (!specs || !hws || !train || !test || !step_ms || !lines)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (plan_measured_spec(&rows[i], gpu, dtype, attention, &specs[i], &hws[i], &err)) {
            fprintf(stderr, "validate: %s\n", err.msg);
            rc = 2;
            goto out;
        }
        step_ms[i] = rows[i].step_ms;
        lines[i] = rows[i].line;
    }
    struct est_costs base;
    calib_costs_cited(hws[0], &specs[0], &base);
    printf("validate: %zu measured steps of %s on %s, %s, %s attention, detail %s\n", n, argv[optind], gpu,
           dtype, attention, synth_detail_name(detail));
    print_costs("cited costs", &base);

    struct est_score s;
    if (plan_validate(&runs, NULL, &base, detail, NULL, &s, &err))
        goto fail;
    report("all rows, cited costs", &s, -1);
    struct est_costs defaults;
    calib_costs_default(hws[0], &specs[0], &defaults);
    print_costs("the estimator's defaults", &defaults);
    if (plan_validate(&runs, NULL, &defaults, detail, NULL, &s, &err))
        goto fail;
    report("all rows, the estimator's defaults", &s, limit);
    if (validate_invariants(&runs, &defaults, detail, &err)) {
        printf("FAIL the physical invariants: %s\n", err.msg);
        failed++;
    } else {
        printf("ok   the physical invariants hold on every estimate (estimator/synth/invariants.h)\n");
        passed++;
    }
    if (bands_out) {
        char source[160];
        const char *file = strrchr(argv[optind], '/');
        double *pred = calloc(runs.n ? runs.n : 1, sizeof *pred);
        snprintf(source, sizeof source, "validate --gpu %s --dtype %s --attention %s --detail %s %s: %zu rows",
                 gpu, dtype, attention, synth_detail_name(detail), file ? file + 1 : argv[optind], n);
        int brc = !pred ? sc_error_set(&err, SC_ENOMEM, "out of memory")
                        : plan_validate(&runs, NULL, &defaults, detail, pred, &s, &err);
        if (!brc)
            brc = validate_write_bands(bands_out, &runs, pred, source, &err);
        free(pred);
        if (brc)
            goto fail;
    }
    struct est_costs all = base;
    if (plan_fit(&runs, NULL, &all, EST_FIT_ALL, starts, EST_FIT_ITERS, detail, &s, NULL, &err))
        goto fail;
    print_costs("fitted on all rows", &all);
    report("all rows, fitted", &s, limit);
    if (rows_out && write_rows(rows_out, rows, &runs, &all, detail, &err))
        goto fail;
    static const char *const kinds[8] = {"none", "DP", "PP", "PP+DP", "TP", "TP+DP", "TP+PP", "TP+PP+DP"};
    for (int k = 0; k < 8; k++) {
        size_t any = 0;
        for (size_t i = 0; i < n; i++) {
            int kind = (rows[i].dp > 1) | (rows[i].pp > 1) << 1 | (rows[i].tp > 1) << 2;
            test[i] = kind == k;
            any += test[i];
        }
        if (!any)
            continue;
        char what[64];
        snprintf(what, sizeof what, "kind %s", kinds[k]);
        if (plan_validate(&runs, test, &all, detail, NULL, &s, &err))
            goto fail;
        report(what, &s, -1);
    }
    static const struct {
        const char *name;
        int by_hidden;
        int64_t train_value; /* hidden, or the largest TP trained on */
    } folds[] = {
        {"fit hidden 1024, score 2048", 1, 1024},
        {"fit hidden 2048, score 1024", 1, 2048},
        {"fit TP <= 2, score TP 4 and 8", 0, 2},
    };
    for (size_t f = 0; f < sizeof folds / sizeof folds[0]; f++) {
        struct est_costs fitted = base;
        struct est_score fs;
        for (size_t i = 0; i < n; i++) {
            train[i] = folds[f].by_hidden ? rows[i].hidden == folds[f].train_value
                                          : rows[i].tp <= folds[f].train_value;
            test[i] = !train[i];
        }
        if (plan_fit(&runs, train, &fitted, EST_FIT_ALL, starts, EST_FIT_ITERS, detail, &fs, NULL, &err))
            goto fail;
        if (plan_validate(&runs, test, &fitted, detail, NULL, &s, &err))
            goto fail;
        printf("     %s: training MAPE %.2f%% on %zu rows\n", folds[f].name, fs.mape, fs.n);
        print_costs("fitted", &fitted);
        report(folds[f].name, &s, limit);
        for (int64_t tp = 4; !folds[f].by_hidden && tp <= 8; tp *= 2) { /* each scored degree */
            char what[64];
            for (size_t i = 0; i < n; i++)
                test[i] = rows[i].tp == tp;
            if (plan_validate(&runs, test, &fitted, detail, NULL, &s, &err))
                goto fail;
            snprintf(what, sizeof what, "  of which TP %lld", (long long)tp);
            report(what, &s, -1);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    rc = failed ? 1 : 0;
    goto out;
fail:
    fprintf(stderr, "validate: %s\n", err.msg);
    printf("%d passed, %d failed\n", passed, failed + 1);
out:
    free(specs);
    free(hws);
    free(train);
    free(test);
    free(step_ms);
    free(lines);
    free(rows);
    return rc;
}
