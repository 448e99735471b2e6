/* clients/cmd_ledger.c: `stepcast ledger add|import|list|delete`: the
 * validation ledger (api/ledger.h), measured step times next to the
 * prediction stepcast made for them.
 *
 *   ledger add (--spec F | --model ID [--set JSON]) --measured-ms X
 *              [--source S] [--run-at T] [--in-sample]
 *   ledger import FILE.csv [--gpu ID] [--dtype D] [--attention A]
 *              [--in-sample | --out-of-sample]
 *   ledger list [--model ID] [--kind K] [--in-sample] [--json]
 *   ledger delete ID
 *
 * Locally (--ledger FILE) the ledger is a file (api/ledger.h), rewritten
 * whole on each change (a temporary file renamed over it), and estimates
 * are made here (a spec's cluster.profile is a file, or NAME.json in
 * --calibrations DIR); replays of models are the server's. With a server (`stepcast --server URL ledger ...`) entries go
 * through POST /v1/validations and the server predicts.
 *
 * `import` reads the CSV columns of ../shared/validation (estimator/
 * validation.h): each row becomes the spec `make validate` estimates. The
 * rows of the set the estimator's parameters were fitted on (that file,
 * recognised by its size and content hash) are flagged in-sample: listed, but left out
 * of bands and of the default MAPE. --in-sample / --out-of-sample say it
 * for other files. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/ledger.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/table.h"
#include "common/strtab.h"
#include "estimator/plan/validation.h"
#include "common/banned.h"

#define CMD "ledger"

/* ../shared/validation/vtrain_single_node_a100.csv, the measured runs the
 * estimator's parameters were fitted on (BENCHMARKS.md, "Validation"): its
 * size and sc_hash_bytes of its bytes. */
#define FIT_SET_BYTES 58476
#define FIT_SET_HASH UINT64_C(0x3d2f715311f856b6)

struct opts {
    const char *ledger, *calibrations, *spec, *model, *set, *source, *run_at, *kind;
    const char *gpu, *dtype, *attention;
    double measured_ms;
    int in_sample, out_of_sample, json;
};

/* The local ledger's entries: none when the file does not exist yet. */
static int load_local(const struct opts *o, struct api_validation **v, size_t *n)
{
    struct sc_error err;
    char *text;
    size_t len;
    int rc;
    *v = NULL;
    *n = 0;
    if (!o->ledger)
        return cli_usage_error(CMD, "give --ledger FILE (a local ledger) or --server URL");
    if ((rc = cli_read_file(o->ledger, 1u << 30, &text, &len, &err)) == SC_ENOTFOUND)
        return 0;
    if (rc)
        return cli_fail(&err);
    rc = api_ledger_file_parse(text, len, v, n, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "stepcast: '%s': %s\n", o->ledger, err.msg);
        return sc_status_exit_code(rc);
    }
    return 0;
}

static int save_local(const struct opts *o, const struct api_validation *v, size_t n)
{
    char tmp[4096];
    char *text = api_ledger_file_text(v, n);
    FILE *f = NULL;
    snprintf(tmp, sizeof tmp, "%s.tmp", o->ledger);
    int rc = !text || !(f = fopen(tmp, "w")) || fputs(text, f) == EOF;
    if (f && fclose(f))
        rc = 1;
    if (!rc && rename(tmp, o->ledger))
        rc = 1;
    if (rc) {
        fprintf(stderr, "stepcast: cannot write %s: %s\n", o->ledger, strerror(errno));
        remove(tmp);
    }
    free(text);
    return rc;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Add v[0..n) to the local ledger (taking their spec and set texts),
 * numbered after its last entry. */
static int add_local(const struct opts *o, struct api_validation *v, size_t n)
{
    struct api_validation *all;
    size_t had;
    int rc = load_local(o, &all, &had);
    if (rc)
        return rc;
    struct api_validation *grown = realloc(all, (had + n + 1) * sizeof *all);
    if (!grown) {
        api_validations_free(all, had);
        return 1;
    }
    all = grown;
    int64_t next = had ? all[had - 1].id + 1 : 1;
    for (size_t i = 0; i < n; i++) {
        v[i].id = next++;
        v[i].created_ns = now_ns();
        all[had + i] = v[i];
    }
    rc = save_local(o, all, had + n);
    memset(all + had, 0, n * sizeof *all); /* still the caller's */
    api_validations_free(all, had + n);
    return rc;
}

static void print_entry(const json_t *v)
{
    printf("entry %lld: %s%s%s, measured %.3f ms, predicted %.3f ms, error %+.2f%%%s\n", cli_json_int(v, "id"),
           cli_json_str(v, "kind", "?"), json_is_string(json_object_get(v, "model")) ? " of " : "",
           cli_json_str(v, "model", ""), cli_json_num(v, "measured_step_ms"), cli_json_num(v, "predicted_step_ms"),
           cli_json_num(v, "error_pct"), json_is_true(json_object_get(v, "in_sample")) ? " (in-sample)" : "");
}

/* Entries v[0..n) with a prediction made here (a spec's estimate), added
 * to the local ledger, or posted to the server, which predicts. */
static int add_entries(const struct opts *o, struct api_validation *v, size_t n)
{
    int rc = 0;
    if (!remote_configured()) {
        rc = add_local(o, v, n);
        for (size_t i = 0; !rc && i < n; i++) {
            json_t *j = api_validation_json(&v[i]);
            if (n == 1)
                print_entry(j);
            json_decref(j);
        }
        if (!rc && n > 1)
            printf("added %zu entries\n", n);
        return rc;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *body = json_pack("{s:f, s:b}", "measured_step_ms", v[i].measured_ms, "in_sample", v[i].in_sample);
        json_t *doc = NULL;
        if (v[i].model[0])
            json_object_set_new(body, "model", json_string(v[i].model));
        if (v[i].spec)
            json_object_set_new(body, "spec", json_loads(v[i].spec, 0, NULL));
        if (v[i].set)
            json_object_set_new(body, "set", json_loads(v[i].set, 0, NULL));
        if (v[i].source[0])
            json_object_set_new(body, "source", json_string(v[i].source));
        if (v[i].run_at[0])
            json_object_set_new(body, "run_at", json_string(v[i].run_at));
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        rc = text ? remote_json("POST", "/v1/validations", text, 201, (void **)&doc) : 1;
        if (!rc && n == 1)
            print_entry(doc);
        free(text);
        json_decref(body);
        json_decref(doc);
    }
    if (!rc && n > 1)
        printf("added %zu entries\n", n);
    return rc;
}

/* An estimate entry of spec text, predicted here (locally) or left for
 * the server (spec as given). */
static int spec_entry(const struct opts *o, const char *text, size_t len, const char *source,
                      struct api_validation *v)
{
    if (remote_configured()) {
        v->spec = strdup(text);
        return v->spec ? 0 : 1;
    }
    struct est_spec spec;
    struct est_estimate e;
    int rc = cli_estimate(text, len, source, o->calibrations, EST_DETAIL_STAGE, &spec, &e);
    if (rc)
        return rc;
    v->predicted_ms = e.step_ms;
    synth_estimate_release(&e);
    snprintf(v->calibration, sizeof v->calibration, "%s", spec.cluster.profile);
    v->spec = spec_json(&spec);
    return v->spec ? 0 : 1;
}

static void entry_init(const struct opts *o, struct api_validation *v)
{
    memset(v, 0, sizeof *v);
    v->kind = API_LEDGER_ESTIMATE;
    v->in_sample = o->in_sample;
    snprintf(v->version, sizeof v->version, "%s", STEPCAST_VERSION);
    snprintf(v->source, sizeof v->source, "%s", o->source ? o->source : "");
    snprintf(v->run_at, sizeof v->run_at, "%s", o->run_at ? o->run_at : "");
}

static int ledger_add(const struct opts *o)
{
    struct api_validation v;
    struct sc_error err;
    int rc = 0;
    if (!(o->measured_ms > 0))
        return cli_usage_error(CMD, "--measured-ms X (the measured step time, > 0) is required");
    if (!o->spec == !o->model)
        return cli_usage_error(CMD, "give --spec F (an estimate) or --model ID (a replay; with --set, a what-if)");
    if (o->set && !o->model)
        return cli_usage_error(CMD, "--set is a what-if of a model: give --model ID");
    entry_init(o, &v);
    v.measured_ms = o->measured_ms;
    if (o->model) {
        if (!remote_configured())
            return cli_usage_error(CMD, "a model's replay or what-if is made by the server, for its ledger: "
                                        "give --server URL, no --ledger");
        snprintf(v.model, sizeof v.model, "%s", o->model);
        v.kind = o->set ? API_LEDGER_WHATIF : API_LEDGER_REPLAY;
        if (o->set && !(v.set = strdup(o->set)))
            return 1;
    } else {
        size_t n;
        char *text;
        if (cli_read_file(o->spec, 1 << 20, &text, &n, &err))
            return cli_fail(&err);
        rc = spec_entry(o, text, n, o->spec, &v);
        free(text);
    }
    if (!rc)
        rc = add_entries(o, &v, 1);
    api_validation_release(&v);
    return rc;
}

static int ledger_import(const struct opts *o, const char *file)
{
    struct est_measured *rows = NULL;
    struct api_validation *v = NULL;
    struct sc_error err;
    size_t len, n = 0, made = 0;
    char *text;
    int rc = 0;
    if (cli_read_file(file, 256u << 20, &text, &len, &err))
        return cli_fail(&err);
    int fit_set = len == FIT_SET_BYTES && sc_hash_bytes(text, len) == FIT_SET_HASH;
    rc = plan_measured_parse(text, len, &rows, &n, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "stepcast: '%s': %s\n", file, err.msg);
        return sc_status_exit_code(rc);
    }
    int in_sample = o->in_sample || (!o->out_of_sample && fit_set);
    if (!(v = calloc(n ? n : 1, sizeof *v)))
        rc = 1;
    for (size_t i = 0; i < n && !rc; i++, made++) {
        struct est_spec spec;
        const struct hw_profile *hw;
        char *spec_text;
        entry_init(o, &v[i]);
        v[i].in_sample = in_sample;
        v[i].measured_ms = rows[i].step_ms;
        snprintf(v[i].source, sizeof v[i].source, "%.200s line %zu", o->source ? o->source : file, rows[i].line);
        if (plan_measured_spec(&rows[i], o->gpu, o->dtype, o->attention, &spec, &hw, &err)) {
            fprintf(stderr, "stepcast: '%s': %s\n", file, err.msg);
            rc = 2;
        } else if (!(spec_text = spec_json(&spec))) {
            rc = 1;
        } else {
            rc = spec_entry(o, spec_text, strlen(spec_text), v[i].source, &v[i]);
            free(spec_text);
        }
    }
    if (!rc) {
        printf("%s: %zu rows, %s\n", file, n,
               in_sample ? "in-sample (the set the estimator was fitted on)" : "out-of-sample");
        rc = add_entries(o, v, n);
    }
    api_validations_free(v, made);
    free(rows);
    return rc;
}

static void print_group(const char *title, const json_t *groups)
{
    const char *key;
    json_t *g;
    if (!json_object_size(groups))
        return;
    printf("MAPE by %s:\n", title);
    json_object_foreach ((json_t *)groups, key, g)
        printf("  %-24s %8.2f%%  (%lld entries)\n", key, cli_json_num(g, "mape_pct"), cli_json_int(g, "n"));
}

static int print_ledger(const json_t *doc, int as_json)
{
    if (as_json)
        return cli_print_json((void *)doc);
    struct cli_table tb;
    size_t i;
    json_t *v;
    cli_table_init(&tb, "id", "kind", "model", "measured ms", "predicted ms", "error %", "sample", "version",
                   "source", NULL);
    json_array_foreach (json_object_get(doc, "entries"), i, v)
        cli_table_rowf(&tb, "%lld|%s|%s|%.3f|%.3f|%+.2f|%s|%s|%s", cli_json_int(v, "id"), cli_json_str(v, "kind", "?"),
                       cli_json_str(v, "model", "-"), cli_json_num(v, "measured_step_ms"),
                       cli_json_num(v, "predicted_step_ms"), cli_json_num(v, "error_pct"),
                       json_is_true(json_object_get(v, "in_sample")) ? "in" : "out", cli_json_str(v, "version", "-"),
                       cli_json_str(v, "source", "-"));
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    const json_t *m = json_object_get(doc, "mape");
    const int with_in = json_is_true(json_object_get(doc, "in_sample_included"));
    if (cli_json_int(m, "n") > 0)
        printf("MAPE %.2f%% over %lld entries (%s)\n", cli_json_num(m, "mape_pct"), cli_json_int(m, "n"),
               with_in ? "in-sample included" : "out-of-sample");
    print_group("kind", json_object_get(doc, "by_kind"));
    print_group("model", json_object_get(doc, "by_model"));
    print_group("month", json_object_get(doc, "by_month"));
    const char *kind;
    json_object_foreach (json_object_get(doc, "bands"), kind, v) {
        if (json_object_get(v, "ratio_lo"))
            printf("band of %s: measured / predicted from %.3f to %.3f (10th-90th percentile of %lld entries)\n",
                   kind, cli_json_num(v, "ratio_lo"), cli_json_num(v, "ratio_hi"), cli_json_int(v, "entries"));
    }
    /* a server's: the savings closed winning experiments banked */
    json_array_foreach (json_object_get(json_object_get(doc, "bank"), "by_team_and_month"), i, v)
        printf("banked by team %s in %s: %.2f GPU-hours a day (summed over ranks), $%.2f a day, %lld experiments"
               " (%lld per step only)\n",
               cli_json_str(v, "team", "(none)"), cli_json_str(v, "month", "?"), cli_json_num(v, "gpu_hours_per_day"),
               cli_json_num(v, "usd_per_day"), cli_json_int(v, "experiments"), cli_json_int(v, "per_step_only"));
    return 0;
}

static int ledger_list(const struct opts *o)
{
    json_t *doc = NULL;
    int rc;
    if (o->kind) {
        enum api_ledger_kind k;
        if (api_ledger_kind_parse(o->kind, &k))
            return cli_usage_error(CMD, "--kind is replay, whatif or estimate");
    }
    if (remote_configured()) {
        char path[512], esc[200];
        size_t k = (size_t)snprintf(path, sizeof path, "/v1/validations?in_sample=%s", o->in_sample ? "true" : "false");
        if (o->model) {
            remote_escape(o->model, esc, sizeof esc);
            k += (size_t)snprintf(path + k, sizeof path - k, "&model=%s", esc);
        }
        if (o->kind)
            snprintf(path + k, sizeof path - k, "&kind=%s", o->kind);
        if ((rc = remote_list(path, "entries", (void **)&doc)))
            return rc;
    } else {
        struct api_validation *v = NULL;
        size_t n = 0, kept = 0;
        if ((rc = load_local(o, &v, &n)))
            return rc;
        for (size_t i = 0; i < n; i++) { /* the entries asked for, in order */
            if ((o->model && strcmp(v[i].model, o->model)) ||
                (o->kind && strcmp(api_ledger_kind_name(v[i].kind), o->kind))) {
                api_validation_release(&v[i]);
                continue;
            }
            v[kept++] = v[i];
        }
        n = kept;
        doc = api_ledger_json(v, n, o->in_sample);
        api_validations_free(v, n);
        if (!doc)
            return 1;
    }
    rc = print_ledger(doc, o->json);
    json_decref(doc);
    return rc;
}

static int ledger_delete(const struct opts *o, const char *id)
{
    char *end;
    long long n = strtoll(id, &end, 10);
    if (*end || n < 1)
        return cli_usage_error(CMD, "'%s' is not a ledger entry id", id);
    if (remote_configured()) {
        char path[96];
        json_t *doc;
        snprintf(path, sizeof path, "/v1/validations/%lld", n);
        int rc = remote_json("DELETE", path, NULL, 200, (void **)&doc);
        json_decref(doc);
        if (!rc)
            printf("deleted entry %lld\n", n);
        return rc;
    }
    struct api_validation *v;
    size_t k, i;
    int rc = load_local(o, &v, &k);
    if (rc)
        return rc;
    for (i = 0; i < k && v[i].id != n; i++)
        ;
    if (i == k) {
        fprintf(stderr, "stepcast: no ledger entry %lld in '%s'\n", n, o->ledger);
        rc = 2;
    } else {
        api_validation_release(&v[i]);
        memmove(&v[i], &v[i + 1], (k - i - 1) * sizeof *v);
        rc = save_local(o, v, --k);
    }
    api_validations_free(v, k);
    if (!rc)
        printf("deleted entry %lld\n", n);
    return rc;
}

static const char usage[] =
    "usage: stepcast [--server URL] ledger add (--spec F [--calibrations DIR] | --model ID [--set JSON])\n"
    "                --measured-ms X [--source TEXT] [--run-at DAY] [--in-sample] [--ledger FILE]\n"
    "       stepcast [--server URL] ledger import [--gpu ID] [--dtype T] [--attention A] [--source TEXT]\n"
    "                [--in-sample | --out-of-sample] [--calibrations DIR] [--ledger FILE] FILE.csv\n"
    "       stepcast [--server URL] ledger list [--model ID] [--kind replay|whatif|estimate]\n"
    "                [--in-sample | --out-of-sample] [--ledger FILE] [--json]\n"
    "       stepcast [--server URL] ledger delete [--ledger FILE] ID\n"
    "       --ledger FILE: a local ledger; with --server, the server's\n";

int cmd_ledger(int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"ledger", required_argument, NULL, 'D'}, {"calibrations", required_argument, NULL, 'c'},
        {"spec", required_argument, NULL, 's'},     {"model", required_argument, NULL, 'm'},
        {"set", required_argument, NULL, 'S'},      {"measured-ms", required_argument, NULL, 'M'},
        {"source", required_argument, NULL, 'o'},   {"run-at", required_argument, NULL, 'r'},
        {"kind", required_argument, NULL, 'k'},     {"gpu", required_argument, NULL, 'g'},
        {"dtype", required_argument, NULL, 't'},    {"attention", required_argument, NULL, 'a'},
        {"in-sample", no_argument, NULL, 'i'},      {"out-of-sample", no_argument, NULL, 'O'},
        {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* the validation set's conditions, as `make validate` estimates it */
    struct opts o = {.gpu = "a100-sxm4-80gb", .dtype = "fp16", .attention = "unfused"};
    int c;
    if (argc < 2 || argv[1][0] == '-') {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *what = argv[1];
    optind = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "h", long_opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'D': o.ledger = optarg; break;
        case 'c': o.calibrations = optarg; break;
        case 's': o.spec = optarg; break;
        case 'm': o.model = optarg; break;
        case 'S': o.set = optarg; break;
        case 'M':
            o.measured_ms = strtod(optarg, &end);
            if (*end || !ledger_step_ms_valid(o.measured_ms))
                return cli_usage_error(CMD, "--measured-ms needs a number of milliseconds from %g to %g",
                                       LEDGER_STEP_MS_MIN, LEDGER_STEP_MS_MAX);
            break;
        case 'o': o.source = optarg; break;
        case 'r': o.run_at = optarg; break;
        case 'k': o.kind = optarg; break;
        case 'g': o.gpu = optarg; break;
        case 't': o.dtype = optarg; break;
        case 'a': o.attention = optarg; break;
        case 'i': o.in_sample = 1; break;
        case 'O': o.out_of_sample = 1; break;
        case 'j': o.json = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error(CMD, "bad option");
        }
    }
    int rest = argc - 1 - optind;
    char **args = argv + 1 + optind;
    if (o.ledger || o.calibrations) /* a local ledger: the server keeps its own */
        remote_stay_local();
    if (o.in_sample && o.out_of_sample)
        return cli_usage_error(CMD, "--in-sample or --out-of-sample, not both");
    if (!strcmp(what, "add") && rest == 0)
        return ledger_add(&o);
    if (!strcmp(what, "import") && rest == 1)
        return ledger_import(&o, args[0]);
    if (!strcmp(what, "list") && rest == 0)
        return ledger_list(&o);
    if (!strcmp(what, "delete") && rest == 1)
        return ledger_delete(&o, args[0]);
    return cli_usage_error(CMD, "%s", usage);
}
