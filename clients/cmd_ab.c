/* clients/cmd_ab.c: `stepcast ab`: did run B's change make the step faster
 * or slower than run A's, and does the answer survive attempts to refute
 * it (model/ab.h):
 *
 *   stepcast ab [--json] [--min-effect PCT] [--refutations N] [--seed S]
 *               [--step-marker NAME] A B
 *   stepcast --server URL ab --model A --other B [--json] [--min-effect PCT]
 *               [--refutations N] [--seed S]
 *
 * A and B are each one run: a trace, a folder of traces or an archive;
 * with --server, a server's built models (POST /v1/ab).
 * Text and JSON come from the same document (api/ab_json.h). */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/ab_json.h"
#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "clients/table.h"
#include "estimator/model_open.h"
#include "model/ab.h"
#include "model/graph.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast ab [--json] [--min-effect PCT] [--refutations N] [--seed S] [--step-marker NAME] A B\n"
    "       stepcast --server URL ab --model A --other B [--json] [--min-effect PCT] [--refutations N] [--seed S]\n"
    "       A the baseline run, B the variant: each a trace, a folder of traces or an archive, or with\n"
    "       --server a built model\n";

static int print_ab(const json_t *doc)
{
    const json_t *ci = json_object_get(doc, "ci95_ms"), *f;
    size_t i;
    struct cli_table tb;
    cli_table_init(&tb, "run", "steps", "center ms", NULL);
    cli_table_rowf(&tb, "A|%lld|%.3f", cli_json_int(json_object_get(doc, "steps"), "a"),
                   cli_json_num(json_object_get(doc, "center_ms"), "a"));
    cli_table_rowf(&tb, "B|%lld|%.3f", cli_json_int(json_object_get(doc, "steps"), "b"),
                   cli_json_num(json_object_get(doc, "center_ms"), "b"));
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    printf("\nrefutation       reads          agrees  detail\n");
    json_array_foreach(json_object_get(doc, "refutations"), i, f) {
        const json_t *agrees = json_object_get(f, "agrees");
        printf("%-16s %-14s %-7s %s\n", cli_json_str(f, "name", ""), cli_json_str(f, "verdict", ""),
               json_is_null(agrees) ? "-" : json_is_true(agrees) ? "yes" : "no", cli_json_str(f, "detail", ""));
    }
    const json_t *parts = json_object_get(doc, "attribution");
    if (json_array_size(parts)) {
        printf("\nattribution (as diff; 95%% interval over steps):\n");
        cli_table_init(&tb, "category", "ms", "95% interval ms", NULL);
        json_array_foreach(parts, i, f) {
            const json_t *pci = json_object_get(f, "ci95_ms");
            cli_table_rowf(&tb, "%s|%+.3f|[%+.3f, %+.3f]", cli_json_str(f, "category", ""), cli_json_num(f, "ms"),
                           json_number_value(json_array_get(pci, 0)), json_number_value(json_array_get(pci, 1)));
        }
        cli_table_print(&tb, stdout, "  ");
        cli_table_release(&tb);
    }
    size_t dropped = json_array_size(json_object_get(doc, "dropped_steps"));
    if (dropped)
        printf("(%zu steps left out: partial or warm-up; --json lists them)\n", dropped);
    printf("\nverdict, B against A: %s, %+.3f ms (%+.2f%%), 95%% interval [%+.3f, %+.3f] ms, rank-sum p %.3g, "
           "Cliff's delta %+.2f; %s\n",
           cli_json_str(doc, "verdict", "?"), cli_json_num(doc, "difference_ms"), cli_json_num(doc, "difference_pct"),
           json_number_value(json_array_get(ci, 0)), json_number_value(json_array_get(ci, 1)),
           cli_json_num(doc, "p_value"), cli_json_num(doc, "effect_size"),
           json_is_true(json_object_get(doc, "survives")) ? "it survives the refutations"
                                                           : "it does not survive the refutations");
    return 0;
}

/* The options of both forms: local (models NULL: --step-marker into lo)
 * or remote (models[0], models[1] from --model and --other). 0 when they
 * are good, -1 after --help, else the usage error's status. */
static int ab_options(int argc, char **argv, struct model_ab_opts *o, struct model_load_opts *lo, int *json,
                      const char **models)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},           {"min-effect", required_argument, NULL, 'e'},
        {"refutations", required_argument, NULL, 'r'}, {"seed", required_argument, NULL, 's'},
        {"step-marker", required_argument, NULL, 'm'}, {"model", required_argument, NULL, 'M'},
        {"other", required_argument, NULL, 'O'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    char *end;
    model_ab_opts_default(o);
    *json = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "je:r:s:m:M:O:h", opts, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 'j': *json = 1; break;
        case 'm':
            if (models)
                return cli_usage_error("ab", "--step-marker is the server's, set when its model was built");
            lo->step_marker = optarg;
            break;
        case 'M':
        case 'O':
            if (!models)
                return cli_usage_error("ab", "--model and --other name a server's models (--server URL)");
            models[c == 'O'] = optarg;
            break;
        case 'e':
            o->min_effect_pct = strtod(optarg, &end);
            if (errno || *end || !(o->min_effect_pct > 0 && o->min_effect_pct <= 100))
                return cli_usage_error("ab", "--min-effect takes a percentage above 0 and at most 100");
            break;
        case 'r': {
            long n = strtol(optarg, &end, 10);
            if (errno || *end || n < 0 || n > 5)
                return cli_usage_error("ab", "--refutations takes 0 to 5");
            o->refutations = (int)n;
            break;
        }
        case 's': {
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || *end || optarg[0] == '-' || v > (unsigned long long)INT64_MAX)
                return cli_usage_error("ab", "--seed takes a whole number");
            o->seed = (unsigned long)v;
            break;
        }
        case 'h': fputs(usage, stdout); return -1;
        default: return cli_usage_error("ab", "bad option");
        }
    }
    return 0;
}

int cmd_ab(int argc, char **argv)
{
    struct model_ab_opts o;
    struct model_load_opts lo;
    struct model_graph_opts go;
    struct est_traced_model *m[2];
    struct model_ab r;
    struct sc_error err;
    int json, rc;
    model_load_opts_default(&lo);
    model_graph_opts_default(&go);
    if ((rc = ab_options(argc, argv, &o, &lo, &json, NULL)))
        return rc < 0 ? 0 : rc;
    if (argc - optind != 2)
        return cli_usage_error("ab", "two runs are needed: A (the baseline) and B (the variant)");
    if ((rc = cli_open_runs(argv + optind, &lo, &go, m)))
        return rc;
    if (est_model_ab(m[0], m[1], &o, &r, &err))
        rc = cli_fail(&err);
    else
        rc = cli_print_doc(api_ab_json(&r), json, print_ab);
    model_ab_release(&r); /* a failed run left it empty */
    est_model_close(m[0]);
    est_model_close(m[1]);
    return rc;
}

int cmd_remote_ab(int argc, char **argv)
{
    struct model_ab_opts o;
    struct model_load_opts lo;
    const char *models[2] = {NULL, NULL};
    int json, rc;
    void *doc = NULL;
    model_load_opts_default(&lo);
    if ((rc = ab_options(argc, argv, &o, &lo, &json, models)))
        return rc < 0 ? 0 : rc;
    if (optind != argc || !models[0] || !models[1])
        return cli_usage_error("ab", "with --server, give --model A --other B (no trace files)");
    json_t *body = json_pack("{s:s, s:s, s:f, s:i, s:I}", "a", models[0], "b", models[1], "min_effect_pct",
                             o.min_effect_pct, "refutations", o.refutations < 0 ? 5 : o.refutations, "seed",
                             (json_int_t)o.seed);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return 1;
    rc = remote_json("POST", "/v1/ab", text, 200, &doc);
    free(text);
    return rc ? rc : cli_print_doc(doc, json, print_ab);
}
