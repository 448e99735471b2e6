/* daemon/main.c: stepcastd, the stepcast service.
 *
 *   stepcastd [--config FILE] [--data-dir DIR] [--listen HOST:PORT] [...]
 *   stepcastd --check [--data-dir DIR] [--store URL]   is the store consistent?
 *   stepcastd --migrate --from sqlite:PATH --to URL [--data-dir DIR]
 *                                          a catalog and its blobs copied
 *                                          (migrate.h)
 *   stepcastd --print-config [...]         the settings in effect, then exit
 *   stepcastd --print-settings             the settings table as JSON
 *   stepcastd --print-openapi              the API's OpenAPI document
 *   stepcastd --print-cost-params          the estimator's cost parameter
 *                                          table (cost_params.def) as JSON
 *   stepcastd --version | --help
 *
 * Settings: defaults, then the config file, then STEPCAST_* variables, then
 * flags (config.h). SIGTERM or SIGINT drains: no new connections; requests,
 * background plans and builds in flight finish, up to drain-timeout; then
 * the work still running is cancelled (requests answered 503, plans stored
 * `interrupted`, builds stopped and their models `interrupted`, each with
 * its progress and resumed by POST .../resume; builds not started stay
 * queued for the next start), and the process exits 0. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "api/openapi.h"
#include "daemon/config.h"
#include "daemon/dir_lock.h"
#include "daemon/failpoint.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/migrate.h"
#include "daemon/server.h"
#include "daemon/service.h"
#include "daemon/store_schema.h"
#include "estimator/calibrate/cost_set.h"
#include "estimator/costs/cost_params.h"
#include "estimator/plan/validation.h"
#include "common/banned.h"

static const char usage_head[] =
    "usage: stepcastd [--config FILE] [settings...]\n"
    "       stepcastd --check [--data-dir DIR] [--store URL]\n"
    "       stepcastd --migrate --from sqlite:PATH --to URL [--data-dir DIR]\n"
    "       stepcastd --print-config [settings...] | --version | --help\n"
    "       stepcastd --print-settings | --print-openapi | --print-cost-params\n"
    "\n"
    "The stepcast service: a REST API over a durable store of traces and models.\n"
    "Settings come from defaults, the config file (--config or STEPCAST_CONFIG),\n"
    "STEPCAST_<NAME> variables, then flags. Settings:\n";

/* The fitted parameters of a cost set, by name. */
static json_t *fitted_json(const struct est_costs *c)
{
    json_t *o = json_object();
    for (size_t f = 0; o && f < est_n_fit_params; f++)
        json_object_set_new(o, cost_params[est_fit_params[f].param].name, json_real(plan_fit_param(c, f)));
    return o;
}

/* calib_costs_default for Megatron's step on each GPU generation it fits
 * by precision (the first profile of the generation standing for it), and
 * `base`, calib_costs_base (the A100's), for every other case. */
static json_t *cost_defaults_json(const struct est_costs *base)
{
    static const enum hw_arch archs[] = {HW_ARCH_HOPPER, HW_ARCH_BLACKWELL};
    static const enum hw_dtype dtypes[] = {HW_BF16, HW_FP8};
    json_t *rows = json_array();
    for (size_t a = 0; rows && a < sizeof archs / sizeof archs[0]; a++) {
        const struct hw_profile *hw = NULL;
        json_t *gpus = json_array();
        for (size_t g = 0; gpus && g < cost_hw_profile_count(); g++)
            if (cost_hw_profile_at(g)->arch == archs[a]) {
                hw = hw ? hw : cost_hw_profile_at(g);
                json_array_append_new(gpus, json_string(cost_hw_profile_at(g)->id));
            }
        for (size_t d = 0; hw && d < sizeof dtypes / sizeof dtypes[0]; d++) {
            struct est_spec spec;
            struct est_costs c;
            memset(&spec, 0, sizeof spec);
            spec.options.framework = EST_FRAMEWORK_MEGATRON;
            spec.options.dtype = dtypes[d];
            calib_costs_default(hw, &spec, &c);
            json_array_append_new(rows, json_pack("{s:s, s:O, s:s, s:b, s:o}", "arch", cost_hw_arch_name(archs[a]),
                                                  "gpus", gpus, "dtype", cost_hw_dtype_name(dtypes[d]), "gemm_table",
                                                  cost_hw_has_gemm_tflops(hw), "fitted", fitted_json(&c)));
        }
        json_decref(gpus);
    }
    json_array_append_new(rows, json_pack("{s:s, s:o}", "arch", "other", "fitted", fitted_json(base)));
    return rows;
}

/* The cost parameter table, each row with the value `make validate`
 * fitted on the A100 steps where it fits one (calib_costs_base), and the
 * defaults by GPU generation and precision. */
static json_t *cost_params_json(void)
{
    struct est_costs base;
    calib_costs_base(cost_hw_profile_find("a100-sxm4-80gb"), NULL, &base);
    json_t *rows = json_array();
    for (int i = 0; rows && i < COST_PARAM_COUNT; i++) {
        const struct cost_param_info *p = &cost_params[i];
        json_t *row = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s, s:s}", "name", p->name, "group",
                                cost_param_group_name(p->group), "unit", p->unit, "cited", p->cited, "min", p->lo,
                                "max", p->hi, "meaning", p->meaning, "source", p->source);
        for (size_t f = 0; row && f < est_n_fit_params; f++)
            if (est_fit_params[f].param == (enum cost_param)i)
                json_object_set_new(row, "fit", json_pack("{s:f, s:f, s:f}", "min", p->fit_lo, "max", p->fit_hi,
                                                          "a100", plan_fit_param(&base, f)));
        if (!row || json_array_append_new(rows, row)) {
            json_decref(rows);
            return NULL;
        }
    }
    return rows ? json_pack("{s:o, s:o}", "params", rows, "defaults", cost_defaults_json(&base)) : NULL;
}

/* --print-settings, --print-openapi or --print-cost-params: a document on
 * stdout (docs/configuration.md, docs/api.md and the tables of
 * docs/cost-models.md are made from them). */
static int print_document(const char *which)
{
    struct sc_error err;
    char *text = NULL;
    if (strcmp(which, "openapi")) {
        json_t *table = !strcmp(which, "settings") ? cfg_table_json() : cost_params_json();
        text = table ? json_dumps(table, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(table);
    } else if (api_openapi_text(&text, &err)) {
        fprintf(stderr, "stepcastd: %s\n", err.msg);
        return 1;
    }
    int rc = text && fputs(text, stdout) >= 0 && fputc('\n', stdout) != EOF ? 0 : 1;
    free(text);
    return rc;
}

static int write_port_file(const char *path, unsigned port)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%u\n", port) > 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct daemon_config cfg;
    struct sc_error err;
    struct svc svc;
    struct server *srv = NULL;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n = 0, check = 0, print = 0, migrate = 0, sig = 0;
    const char *from = NULL, *to = NULL;
    uint16_t port = 0;
    sigset_t stop;

    if (!args)
        return 1;
    args[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--version")) {
            printf("stepcastd %s\n", STEPCAST_VERSION);
            free(args);
            return 0;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_head, stdout);
            cfg_usage(stdout);
            free(args);
            return 0;
        }
        if (!strcmp(argv[i], "--print-settings") || !strcmp(argv[i], "--print-openapi") ||
            !strcmp(argv[i], "--print-cost-params")) {
            free(args);
            return print_document(argv[i] + strlen("--print-"));
        }
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--migrate"))
            migrate = 1;
        else if (!strcmp(argv[i], "--from") && i + 1 < argc)
            from = argv[++i];
        else if (!strcmp(argv[i], "--to") && i + 1 < argc)
            to = argv[++i];
        else if (!strcmp(argv[i], "--print-config"))
            print = 1;
        else
            args[n++] = argv[i];
    }
    if (cfg_load(&cfg, n, args, &err)) {
        fprintf(stderr, "stepcastd: %s\n(see 'stepcastd --help')\n", err.msg);
        cfg_release(&cfg);
        free(args);
        return 2;
    }
    free(args);
    log_threshold = (enum log_level)log_level_parse(cfg.log_level);
    if (migrate) {
        int rc = 2;
        if (!from || !to)
            fprintf(stderr, "stepcastd: --migrate needs --from sqlite:PATH and --to URL\n");
        else if ((rc = migrate_run(from, to, cfg.data_dir, cfg.blobs, stdout, &err) ? 1 : 0))
            fprintf(stderr, "stepcastd: --migrate: %s\n", err.msg);
        cfg_release(&cfg);
        return rc;
    }
    if (print || check) {
        int rc = 0;
        if (print)
            cfg_print(&cfg, stdout);
        else if (svc_check(cfg.data_dir, cfg.store, cfg.blobs, stdout, &err)) {
            fprintf(stderr, "stepcastd: %s\n", err.msg);
            rc = 1;
        }
        cfg_release(&cfg);
        return rc;
    }

    /* signals: SIGTERM/SIGINT are taken by sigwait below; threads started
     * from here on inherit the mask */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    fp_init();

    int lock_fd;
    if (dir_lock_take(cfg.data_dir, &lock_fd, &err)) {
        log_error("main", "event=start_failed msg=\"%s\"", err.msg);
        cfg_release(&cfg);
        return err.code == SC_EEXIST ? 2 : 1;
    }
    if (svc_open(&svc, &cfg, &err)) {
        log_error("main", "event=start_failed msg=\"%s\"", err.msg);
        cfg_release(&cfg);
        return 1;
    }
    if (server_start(&svc, &cfg, &srv, &port, &err)) {
        log_error("main", "event=start_failed msg=\"%s\"", err.msg);
        svc_stop_builds(&svc, 0);
        svc_close(&svc);
        cfg_release(&cfg);
        return 1;
    }
    if (*cfg.port_file && write_port_file(cfg.port_file, port))
        log_error("main", "event=port_file_failed path=%s errno=%d", cfg.port_file, errno);
    log_info("main", "event=listening version=%s listen=%s port=%u data_dir=%s http_threads=%lld "
             "build_workers=%lld cache_bytes=%lld memory_budget=%lld schema=%d",
             STEPCAST_VERSION, cfg.listen, port, cfg.data_dir, (long long)cfg.http_threads,
             (long long)cfg.build_workers, (long long)cfg.cache_bytes, (long long)cfg.memory_budget,
             STORE_SCHEMA_VERSION);

    while (sigwait(&stop, &sig) != 0)
        ;
    log_info("main", "event=draining signal=%s timeout_s=%lld", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             (long long)cfg.drain_timeout);
    /* requests, background plans and builds run on together: one deadline
     * bounds them all; then what still runs is cancelled */
    double deadline = metrics_clock() + (double)cfg.drain_timeout;
    if (!server_drain(srv, (double)cfg.drain_timeout)) {
        log_warn("main", "event=exit requests=interrupted");
        return 0;
    }
    server_free(srv);
    double left = deadline - metrics_clock();
    if (!svc_drain_plans(&svc, left > 0 ? left : 0))
        log_warn("main", "event=drain_timeout msg=\"background plans still run: interrupted\"");
    left = deadline - metrics_clock();
    if (!svc_stop_builds(&svc, left > 0 ? left : 0)) {
        /* a build still runs after it was cancelled: leave it to the exit;
         * its model stays `building` and is built again at the next start */
        log_warn("main", "event=exit builds=interrupted");
        return 0;
    }
    svc_close(&svc); /* interrupts the plans still running (plans.h) */
    if (*cfg.port_file)
        unlink(cfg.port_file);
    log_info("main", "event=exit");
    cfg_release(&cfg);
    return 0;
}
