/* clients/cmd_fleet.c: `stepcast fleet`: the server's jobs ranked by
 * wasted GPU-hours a day (GET /v1/fleet, api/fleet_json.h):
 *
 *   stepcast fleet [--tag KEY:VALUE] [--since YYYY-MM-DD] [--until YYYY-MM-DD]
 *                  [--top N] [--json]
 *
 * Every job ranked (the list's pages followed), or the first N. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/replay_print.h"
#include "clients/table.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast fleet [--tag KEY:VALUE] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [--top N] [--json]\n";

/* A figure with `decimals` decimals, or "-" when the server says it is
 * unknown. */
static const char *fig(const json_t *doc, const char *key, int decimals, char *buf, size_t n)
{
    const json_t *v = json_object_get(doc, key);
    if (!json_is_number(v))
        return "-";
    snprintf(buf, n, "%.*f", decimals, json_number_value(v));
    return buf;
}

static int print_fleet(const json_t *doc)
{
    const json_t *j;
    size_t i;
    struct cli_table tb;
    char b1[32], b2[32], b3[32];
    cli_table_init(&tb, "#", "job", "team", "step ms/rank", "waste ms/rank", "world", "waste GPU-h/day (sum)",
                   "$/day", NULL);
    json_array_foreach(json_object_get(doc, "jobs"), i, j)
        cli_table_rowf(&tb, "%lld|%s|%s|%.3f|%.3f|%s|%s|%s", cli_json_int(j, "rank"), cli_json_str(j, "job", ""),
                       cli_json_str(j, "team", "-"), cli_json_num(j, "step_ms_per_rank"),
                       cli_json_num(j, "waste_ms_per_step_per_rank"), fig(j, "world_size", 0, b1, sizeof b1),
                       fig(j, "wasted_gpu_hours_per_day_summed", 2, b2, sizeof b2),
                       fig(j, "wasted_usd_per_day", 2, b3, sizeof b3));
    cli_table_print(&tb, stdout, "");
    cli_table_release(&tb);
    json_array_foreach(json_object_get(doc, "jobs"), i, j)
        if (json_is_string(json_object_get(j, "note")))
            printf("%s: %s\n", cli_json_str(j, "job", ""), cli_json_str(j, "note", ""));
    const json_t *apart = json_object_get(doc, "needs_tracing_of_more_ranks");
    if (json_array_size(apart)) {
        printf("\nneeds tracing of more ranks (waits the traces do not explain, not savings):\n");
        json_array_foreach(apart, i, j)
            printf("  %s: %.3f ms a step on a rank\n", cli_json_str(j, "job", ""),
                   cli_json_num(j, "unexplained_ms_per_step_per_rank"));
    }
    return 0;
}

int cmd_fleet(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tag", required_argument, NULL, 't'},  {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'}, {"top", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *names[] = {"tag", "since", "until", "top"}, *vals[4] = {NULL, NULL, NULL, NULL};
    char path[1024] = "/v1/fleet", esc[400];
    int json = 0, c, rc;
    size_t len = strlen(path);
    void *doc = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:s:u:n:jh", opts, NULL)) != -1) {
        switch (c) {
        case 't': vals[0] = optarg; break;
        case 's': vals[1] = optarg; break;
        case 'u': vals[2] = optarg; break;
        case 'n': vals[3] = optarg; break;
        case 'j': json = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cli_usage_error("fleet", "bad option");
        }
    }
    if (optind != argc)
        return cli_usage_error("fleet", "no arguments but options");
    for (int k = 0, first = 1; k < 4; k++) {
        if (!vals[k])
            continue;
        remote_escape(vals[k], esc, sizeof esc);
        len += (size_t)snprintf(path + len, sizeof path - len, "%c%s=%s", first ? '?' : '&', names[k], esc);
        first = 0;
    }
    if (len >= sizeof path)
        return cli_usage_error("fleet", "options too long");
    /* the first N jobs (one page), or every page of the ranking */
    static const char *const keys[] = {"jobs", "needs_tracing_of_more_ranks", NULL};
    rc = vals[3] ? remote_json("GET", path, NULL, 200, &doc) : remote_list_keys(path, keys, &doc);
    return rc ? rc : cli_print_doc(doc, json, print_fleet);
}
