/* clients/cmd_experiment.c: `stepcast experiment`: experiments on the
 * server (a baseline job against a variant job, their A/B verdict kept):
 *
 *   stepcast experiment create --baseline JOB --variant JOB
 *                              [--hypothesis TEXT] [--external-id ID] [--json]
 *   stepcast experiment list [--external-id ID] [--json]
 *   stepcast experiment show ID [--json]
 *   stepcast experiment close ID [--json]
 *
 * create prints the new experiment's id; show and close a short account,
 * or the server's document with --json. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "clients/table.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast experiment create --baseline JOB --variant JOB [--hypothesis TEXT] [--external-id ID] [--json]\n"
    "       stepcast experiment list [--external-id ID] [--json]\n"
    "       stepcast experiment show ID [--json] | stepcast experiment close ID [--json]\n";

static int print_experiment(const json_t *e)
{
    const json_t *v = json_object_get(e, "verdict"), *bank = json_object_get(e, "bank");
    printf("experiment %s: %s against %s, %s\n", cli_json_str(e, "id", "?"), cli_json_str(e, "variant", "?"),
           cli_json_str(e, "baseline", "?"), cli_json_str(e, "state", "?"));
    if (json_is_string(json_object_get(e, "hypothesis")))
        printf("hypothesis: %s\n", cli_json_str(e, "hypothesis", ""));
    if (json_is_string(json_object_get(e, "waiting_for")))
        printf("waiting for %s\n", cli_json_str(e, "waiting_for", ""));
    if (json_is_string(json_object_get(e, "error")))
        printf("error: %s\n", cli_json_str(e, "error", ""));
    if (json_is_object(v)) {
        const json_t *ci = json_object_get(v, "ci95_ms");
        printf("verdict, variant against baseline: %s, %+.3f ms (%+.2f%%), 95%% interval [%+.3f, %+.3f] ms; %s\n",
               cli_json_str(v, "verdict", "?"), cli_json_num(v, "difference_ms"), cli_json_num(v, "difference_pct"),
               json_number_value(json_array_get(ci, 0)), json_number_value(json_array_get(ci, 1)),
               json_is_true(json_object_get(v, "survives")) ? "it survives the refutations"
                                                             : "it does not survive the refutations");
    }
    if (json_is_object(bank)) {
        const json_t *h = json_object_get(bank, "gpu_hours_per_day"), *usd = json_object_get(bank, "usd_per_day");
        printf("banked: %.3f ms a step", cli_json_num(bank, "saving_ms_per_step"));
        if (json_is_number(h))
            printf(", %.2f GPU-hours a day (summed over ranks)", json_number_value(h));
        if (json_is_number(usd))
            printf(", $%.2f a day", json_number_value(usd));
        printf(" (%s)\n", cli_json_str(bank, "month", ""));
        if (json_is_string(json_object_get(bank, "note")))
            printf("note: %s\n", cli_json_str(bank, "note", ""));
    } else if (!strcmp(cli_json_str(e, "state", ""), "closed")) {
        printf("nothing banked: the variant did not read faster and survive\n");
    }
    return 0;
}

static int print_list(const json_t *doc)
{
    const json_t *e;
    size_t i;
    struct cli_table tb;
    cli_table_init(&tb, "experiment", "state", "baseline", "variant", "verdict", "ms", NULL);
    json_array_foreach(json_object_get(doc, "experiments"), i, e) {
        const json_t *v = json_object_get(e, "verdict");
        cli_table_rowf(&tb, "%s|%s|%s|%s|%s|%+.3f", cli_json_str(e, "id", ""), cli_json_str(e, "state", ""),
                       cli_json_str(e, "baseline", ""), cli_json_str(e, "variant", ""),
                       cli_json_str(v, "verdict", "-"), cli_json_num(v, "difference_ms"));
    }
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    return 0;
}

int cmd_experiment(int argc, char **argv)
{
    static const struct option opts[] = {
        {"baseline", required_argument, NULL, 'b'}, {"variant", required_argument, NULL, 'v'},
        {"hypothesis", required_argument, NULL, 'H'}, {"external-id", required_argument, NULL, 'x'},
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *baseline = NULL, *variant = NULL, *hypothesis = NULL, *external = NULL, *verb;
    char path[512], esc[400] = "";
    int json = 0, c, rc;
    void *doc = NULL;

    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    verb = argv[1];
    optind = 2;
    while ((c = getopt_long(argc, argv, "b:v:H:x:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'b': baseline = optarg; break;
        case 'v': variant = optarg; break;
        case 'H': hypothesis = optarg; break;
        case 'x': external = optarg; break;
        case 'j': json = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("experiment", "bad option");
        }
    }
    if (!strcmp(verb, "create")) {
        if (!baseline || !variant || optind != argc)
            return cli_usage_error("experiment", "create takes --baseline JOB --variant JOB");
        json_t *body = json_pack("{s:s, s:s}", "baseline", baseline, "variant", variant);
        if (body && hypothesis)
            json_object_set_new(body, "hypothesis", json_string(hypothesis));
        if (body && external)
            json_object_set_new(body, "external_id", json_string(external));
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (!text)
            return 1;
        rc = remote_json("POST", "/v1/experiments", text, 201, &doc);
        free(text);
        if (rc)
            return rc;
        if (json)
            return cli_print_json(doc);
        printf("%s\n", cli_json_str(doc, "id", ""));
        json_decref(doc);
        return 0;
    }
    if (!strcmp(verb, "list")) {
        if (optind != argc || baseline || variant || hypothesis)
            return cli_usage_error("experiment", "list takes [--external-id ID] [--json]");
        if (external)
            remote_escape(external, esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/experiments%s%s", external ? "?external_id=" : "", esc);
        return (rc = remote_list(path, "experiments", &doc)) ? rc : cli_print_doc(doc, json, print_list);
    }
    if (strcmp(verb, "show") && strcmp(verb, "close"))
        return cli_usage_error("experiment", "unknown verb '%s': create, list, show or close", verb);
    if (argc - optind != 1 || baseline || variant || hypothesis || external)
        return cli_usage_error("experiment", "%s takes one experiment id", verb);
    remote_escape(argv[optind], esc, sizeof esc);
    snprintf(path, sizeof path, "/v1/experiments/%s%s", esc, strcmp(verb, "close") ? "" : "/close");
    rc = remote_json(strcmp(verb, "close") ? "GET" : "POST", path, strcmp(verb, "close") ? NULL : "{}", 200, &doc);
    return rc ? rc : cli_print_doc(doc, json, print_experiment);
}
