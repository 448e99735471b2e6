/* tests/integration/test_cli_replay.c: the local trace commands as a new
 * user meets them: critical-path sums each step's path and prints the
 * longest few (--top N, --all for the path in order), a server named in
 * the environment leaves commands on traces local, and a what-if's table
 * speaks of its difference from the traced run, not of an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define SAMPLE "data/sample"

/* The rows under each step's header line ("rank R STEP: ..., N tasks on
 * the critical path; ..."): their count per step in rows[], the tasks the
 * header names in tasks[]; returns the number of steps. */
static size_t path_tables(const char *out, size_t *rows, long *tasks, size_t max)
{
    size_t steps = 0;
    for (const char *line = out; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (!strncmp(line, "rank ", 5) && steps < max) {
            const char *t = strstr(line, " ms replayed, ");
            tasks[steps] = t && t < line + n ? strtol(t + 14, NULL, 10) : -1;
            rows[steps++] = 0;
        } else if (steps && n > 2 && line[0] == ' ' && line[strspn(line, " ")] >= '0' &&
                   line[strspn(line, " ")] <= '9') {
            rows[steps - 1]++;
        }
        line = end ? end + 1 : NULL;
    }
    return steps;
}

TEST(cli_critical_path_sums_and_lists_the_top)
{
    char *cli = (char *)th_build_path("stepcast");
    size_t rows[64], all_rows[64], top_rows[64];
    long tasks[64], all_tasks[64], top_tasks[64];
    char *summed[] = {cli, "critical-path", SAMPLE, NULL};
    char *out = th_run_expect(summed, 0, "--top N shows more, --all lists the path in order", NULL);
    REQUIRE(out != NULL);
    size_t steps = path_tables(out, rows, tasks, 64);
    free(out);
    char *listed[] = {cli, "critical-path", "--all", SAMPLE, NULL};
    out = th_run_expect(listed, 0, "start ms", NULL);
    REQUIRE(out != NULL);
    CHECK_EQ_INT(path_tables(out, all_rows, all_tasks, 64), steps);
    free(out);
    char *three[] = {cli, "critical-path", "--top", "3", SAMPLE, NULL};
    out = th_run_expect(three, 0, NULL, NULL);
    REQUIRE(out != NULL);
    CHECK_EQ_INT(path_tables(out, top_rows, top_tasks, 64), steps);
    free(out);
    REQUIRE(steps > 0);
    for (size_t i = 0; i < steps; i++) {
        /* --all: one row per task on the path, as the header counts them */
        CHECK(all_tasks[i] > 10);
        CHECK_EQ_INT(all_rows[i], all_tasks[i]);
        /* summed: the longest 10 kinds of task, or 3 with --top 3 */
        CHECK_EQ_INT(rows[i], 10);
        CHECK_EQ_INT(top_rows[i], 3);
        CHECK_EQ_INT(tasks[i], all_tasks[i]);
    }
    char *zero[] = {cli, "critical-path", "--top", "0", SAMPLE, NULL};
    free(th_run_expect(zero, 2, NULL, "--top takes a count"));
    char *both[] = {cli, "replay", "--top", "3", SAMPLE, NULL};
    free(th_run_expect(both, 2, NULL, "--top and --all are options of critical-path"));
}

/* A server in the environment (here one nothing listens on) does not turn
 * local commands into remote ones: commands on traces run as without it,
 * and so do the forms that name local files (calibrate --out, estimate
 * --calibrations, ledger --ledger, plan --from-traces); a form that names
 * a server's model does go to the server. */
TEST(cli_server_in_the_environment_keeps_local_commands_local)
{
    char *cli = (char *)th_build_path("stepcast");
    char *replay[] = {cli, "replay", "--json", SAMPLE, NULL};
    char *path[] = {cli, "critical-path", "--json", SAMPLE, NULL};
    char *opp[] = {cli, "opportunities", "--json", SAMPLE, NULL};
    char *const *forms[] = {replay, path, opp};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        unsetenv("STEPCAST_SERVER");
        char *plain = th_run_expect(forms[i], 0, NULL, NULL);
        setenv("STEPCAST_SERVER", "http://127.0.0.1:1", 1);
        char *with_server = th_run_expect(forms[i], 0, NULL, NULL);
        CHECK(plain && strlen(plain) > 100);
        CHECK_STREQ(with_server ? with_server : "", plain ? plain : "-");
        free(plain);
        free(with_server);
    }
    char *global[] = {cli, "--server", "http://127.0.0.1:1", "replay", SAMPLE, NULL};
    free(th_run_expect(global, 0, "ProfilerStep#3", NULL));
    /* forms that name local files: a profile written (--out), traces, a
     * local ledger, a calibrations folder */
    const char *profile = th_write_file("sample-profile.json", "", 0);
    char *calib[] = {cli, "calibrate", "traces", "--force", "--out", (char *)profile, SAMPLE, NULL};
    free(th_run_expect(calib, 0, "wrote", NULL));
    char *text = th_read_file(profile, NULL);
    CHECK(text && strstr(text, "\"flags\""));
    free(text);
    static const char spec[] = "{\"model\":{\"layers\":2,\"hidden\":1024,\"heads\":16,\"seq\":1024},"
                               "\"parallel\":{\"global_batch\":8},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    char spec_path[4096];
    snprintf(spec_path, sizeof spec_path, "%s", th_write_file("small-spec.json", spec, sizeof spec - 1));
    char *est[] = {cli, "estimate", "--calibrations", (char *)th_tmpdir(), "--spec", spec_path, NULL};
    free(th_run_expect(est, 0, "on 1 x h100-sxm", NULL));
    char ledger[4096];
    snprintf(ledger, sizeof ledger, "%s/ledger.json", th_tmpdir());
    char *add[] = {cli, "ledger", "add", "--ledger", ledger, "--spec", spec_path, "--measured-ms", "50", NULL};
    free(th_run_expect(add, 0, NULL, NULL));
    char *list[] = {cli, "ledger", "list", "--ledger", ledger, NULL};
    free(th_run_expect(list, 0, "over 1 entries (out-of-sample)", NULL));
    /* a what-if plan of traces: local, its description checked here */
    char *plan[] = {cli, "plan", "--from-traces", "--config", "data/sample-config.json", "--gpus", "4", SAMPLE, NULL};
    free(th_run_expect(plan, 2, NULL, "config.hidden: missing"));
    /* --model names the server's object: the server is asked, and is not there */
    char *remote[] = {cli, "replay", "--model", "m-x", NULL};
    free(th_run_expect(remote, 1, NULL, "127.0.0.1:1"));
    unsetenv("STEPCAST_SERVER");
}

/* what-if's table: the traced step against the what-if's, their difference
 * (not an error: the run changed). */
TEST(cli_whatif_speaks_of_the_difference_from_the_traced_run)
{
    char *cli = (char *)th_build_path("stepcast");
    char *argv[] = {cli, "whatif", "--config", "data/sample-config.json", "--set", "gpu=h100-sxm", SAMPLE, NULL};
    char *out = th_run_expect(argv, 0, "difference from the traced run: mean |diff|", NULL);
    REQUIRE(out != NULL);
    CHECK_CONTAINS(out, "traced ms");
    CHECK_CONTAINS(out, "what-if ms");
    CHECK_CONTAINS(out, "diff %");
    CHECK(strstr(out, "error") == NULL);
    free(out);
    /* replay keeps its words: there it is an error against the measured step */
    char *replay[] = {cli, "replay", SAMPLE, NULL};
    free(th_run_expect(replay, 0, "mean |error|", NULL));
}
