/* tests/tools/validate.c: `make validate`: the spec-driven estimator
 * against measured step times (estimator/validation.h).
 *
 *   validate [--gpu ID] [--dtype D] [--attention flash|unfused]
 *            [--detail stage|layer|kernel] [--max-mape PCT]
 *            [--rows OUT.csv] [--bands OUT.json] [--starts K] FILE.csv
 *
 * It reports the cited costs (est_costs_cited) and the estimator's
 * defaults (est_costs_default, which hold the fit on all rows) on every
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
 * --starts K fits from K starts (est_fit); the default, 1, is what make
 * validate runs. --bands OUT.json writes the band of the rows' region
 * (estimator/bands.h) under the estimator's defaults, as one region of a
 * bands file: data/calibration/bands.json is made of such regions. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/bands.h"
#include "estimator/estimate.h"
#include "estimator/validation.h"
#include "common/banned.h"

static char *slurp(const char *path, size_t *n)
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
        printf(" %s=%.3f", est_fit_params[i].name,
               *(double *)((char *)c + est_fit_params[i].offset));
    printf("\n");
}

/* Every row with its estimate under costs c, as CSV. */
static int write_rows(const char *path, const struct est_measured *rows, size_t n, const struct est_spec *specs,
                      const struct hw_profile *const *hws, const struct est_costs *c, enum est_detail detail,
                      struct sc_error *err)
{
    double *pred = calloc(n ? n : 1, sizeof *pred);
    struct est_score s;
    FILE *f;
    if (!pred)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (est_validate(rows, n, NULL, specs, hws, c, detail, pred, &s, err)) {
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

/* The band of the rows (all in one region) under costs c, as a bands
 * file of that one region. */
static int write_band(const char *path, const char *source, const struct est_measured *rows, size_t n,
                      const struct est_spec *specs, const struct hw_profile *const *hws, const struct est_costs *c,
                      enum est_detail detail, struct sc_error *err)
{
    double *pred = calloc(n ? n : 1, sizeof *pred), *e = calloc(n ? n : 1, sizeof *e);
    struct est_band band = {0};
    struct est_bands bands = {&band, 1};
    struct est_score s;
    char *text = NULL;
    FILE *f = NULL;
    int rc = SC_OK;
    if (!pred || !e || !n)
        rc = sc_error_set(err, n ? SC_ENOMEM : SC_EINVAL, n ? "out of memory" : "no rows to make a band of");
    else
        rc = est_validate(rows, n, NULL, specs, hws, c, detail, pred, &s, err);
    if (!rc) {
        snprintf(band.gpu, sizeof band.gpu, "%s", specs[0].cluster.gpu);
        snprintf(band.source, sizeof band.source, "%s", source);
        est_region_of(&specs[0], &band.model, &band.sharding);
        for (size_t i = 0; i < n; i++) {
            double mfu = est_mfu(&specs[i], hws[i], rows[i].step_ms);
            enum hw_dtype d = specs[i].options.dtype;
            e[i] = pred[i] / rows[i].step_ms - 1;
            if (mfu > band.best_mfu[d])
                band.best_mfu[d] = mfu;
            if (rows[i].gpus > band.max_gpus)
                band.max_gpus = rows[i].gpus;
        }
        est_band_set_errors(&band, e, n);
        if (!(text = est_bands_text(&bands)))
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        else if (!(f = fopen(path, "w")) || fprintf(f, "%s\n", text) < 0)
            rc = sc_error_set(err, SC_EIO, "%s: cannot write", path);
    }
    if (f && fclose(f) && !rc)
        rc = sc_error_set(err, SC_EIO, "%s: cannot write", path);
    free(text);
    free(pred);
    free(e);
    return rc;
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
        {"starts", required_argument, NULL, 's'}, {"bands", required_argument, NULL, 'b'},
        {NULL, 0, NULL, 0},
    };
    const char *gpu = "a100-sxm4-80gb", *dtype = "fp16", *attention = "unfused", *rows_out = NULL, *bands_out = NULL;
    enum est_detail detail = EST_DETAIL_STAGE;
    double limit = 10;
    struct sc_error err;
    int c, starts = 1;
    while ((c = getopt_long(argc, argv, "g:t:a:d:m:r:s:b:", opts, NULL)) != -1) {
        switch (c) {
        case 'g': gpu = optarg; break;
        case 't': dtype = optarg; break;
        case 'a': attention = optarg; break;
        case 'd':
            if (est_detail_parse(optarg, &detail, &err)) {
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
        case 's': {
            char *end;
            long k = strtol(optarg, &end, 10);
            if (*end || k < 1 || k > 16) {
                fprintf(stderr, "validate: --starts takes 1 to 16\n");
                return 2;
            }
            starts = (int)k;
            break;
        }
        default: return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: validate [--gpu ID] [--dtype D] [--attention A] [--detail L] [--max-mape PCT] "
                        "[--rows OUT.csv] [--bands OUT.json] [--starts K] FILE.csv\n");
        return 2;
    }
    size_t len, n;
    char *text = slurp(argv[optind], &len);
    struct est_measured *rows;
    if (!text) {
        fprintf(stderr, "validate: cannot read %s\n", argv[optind]);
        return 2;
    }
    if (est_measured_parse(text, len, &rows, &n, &err)) {
        fprintf(stderr, "validate: %s: %s\n", argv[optind], err.msg);
        free(text);
        return 2;
    }
    free(text);
    struct est_spec *specs = calloc(n ? n : 1, sizeof *specs);
    const struct hw_profile **hws = calloc(n ? n : 1, sizeof *hws);
    unsigned char *train = calloc(n ? n : 1, 1), *test = calloc(n ? n : 1, 1);
    int rc = 1;
    if (!specs || !hws || !train || !test)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (est_measured_spec(&rows[i], gpu, dtype, attention, &specs[i], &hws[i], &err)) {
            fprintf(stderr, "validate: %s\n", err.msg);
            rc = 2;
            goto out;
        }
    struct est_costs base;
    est_costs_cited(hws[0], &specs[0], &base);
    printf("validate: %zu measured steps of %s on %s, %s, %s attention, detail %s\n", n, argv[optind], gpu,
           dtype, attention, est_detail_name(detail));
    print_costs("cited costs", &base);

    struct est_score s;
    if (est_validate(rows, n, NULL, specs, hws, &base, detail, NULL, &s, &err))
        goto fail;
    report("all rows, cited costs", &s, -1);
    struct est_costs defaults;
    est_costs_default(hws[0], &specs[0], &defaults);
    print_costs("the estimator's defaults", &defaults);
    if (est_validate(rows, n, NULL, specs, hws, &defaults, detail, NULL, &s, &err))
        goto fail;
    report("all rows, the estimator's defaults", &s, limit);
    if (bands_out) {
        char source[160];
        const char *file = strrchr(argv[optind], '/');
        snprintf(source, sizeof source, "validate --gpu %s --dtype %s --attention %s --detail %s %s: %zu rows",
                 gpu, dtype, attention, est_detail_name(detail), file ? file + 1 : argv[optind], n);
        if (write_band(bands_out, source, rows, n, specs, hws, &defaults, detail, &err))
            goto fail;
    }
    struct est_costs all = base;
    if (est_fit(rows, n, NULL, specs, hws, &all, starts, detail, &s, &err))
        goto fail;
    print_costs("fitted on all rows", &all);
    report("all rows, fitted", &s, limit);
    if (rows_out && write_rows(rows_out, rows, n, specs, hws, &all, detail, &err))
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
        if (est_validate(rows, n, test, specs, hws, &all, detail, NULL, &s, &err))
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
        if (est_fit(rows, n, train, specs, hws, &fitted, starts, detail, &fs, &err))
            goto fail;
        if (est_validate(rows, n, test, specs, hws, &fitted, detail, NULL, &s, &err))
            goto fail;
        printf("     %s: training MAPE %.2f%% on %zu rows\n", folds[f].name, fs.mape, fs.n);
        print_costs("fitted", &fitted);
        report(folds[f].name, &s, limit);
        for (int64_t tp = 4; !folds[f].by_hidden && tp <= 8; tp *= 2) { /* each scored degree */
            char what[64];
            for (size_t i = 0; i < n; i++)
                test[i] = rows[i].tp == tp;
            if (est_validate(rows, n, test, specs, hws, &fitted, detail, NULL, &s, &err))
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
    free(rows);
    return rc;
}
