/* tests/integration/test_cli_errors.c: errors of the command line name
 * the file at fault and list what exists: the steps a trace has when a
 * range misses them, the annotations a step marker could be when none
 * marks a step, the spec file whose field is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

#define SAMPLE "data/sample/rank0.json.gz"

TEST(cli_errors_list_the_steps_and_markers_there_are)
{
    char *cli = (char *)th_build_path("stepcast");
    /* the sample's three ProfilerStep#1-3 */
    char *range[] = {cli, "replay", "--steps", "50-60", SAMPLE, NULL};
    free(th_run_expect(range, 2, NULL, "'" SAMPLE "': no step numbered 50-60: its 3 steps are numbered 1 to 3"));
    /* a marker nothing starts with: the repeated annotations offered */
    char *marker[] = {cli, "replay", "--step-marker", "Nope", SAMPLE, NULL};
    free(th_run_expect(marker, 2, NULL, "no CPU annotation named 'Nope...'; repeated annotations: "));
    free(th_run_expect(marker, 2, NULL, "'ProfilerStep#' (3)"));
    /* a trace marked by its optimizer (param's linear model, 40 steps) */
    const char *linear = th_shared_path("param/et_replay/tests/inputs/linear_kineto.json.gz");
    char *plain[] = {cli, "critical-path", (char *)linear, NULL};
    free(th_run_expect(plain, 2, NULL, "no CPU annotation named ProfilerStep#N; repeated annotations: "));
    free(th_run_expect(plain, 2, NULL, "'Optimizer.step#' (40)"));
}

/* A spec whose field is wrong: estimate, plan and synth name the file. */
TEST(cli_errors_name_the_spec_file)
{
    static const char bad[] = "{\"model\":{\"layers\":-1,\"hidden\":1024,\"heads\":16,\"seq\":1024},"
                              "\"parallel\":{\"global_batch\":8},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    char *cli = (char *)th_build_path("stepcast"), path[4096], expect[4200], out[4200];
    snprintf(path, sizeof path, "%s", th_write_file("bad-layers.json", bad, sizeof bad - 1));
    snprintf(expect, sizeof expect, "%s: model.layers: -1 is out of range", path);
    snprintf(out, sizeof out, "%s/bad-synth", th_tmpdir());
    char *estimate[] = {cli, "estimate", "--spec", path, NULL};
    free(th_run_expect(estimate, 2, NULL, expect));
    char *plan[] = {cli, "plan", "--spec", path, "--gpus", "8", NULL};
    free(th_run_expect(plan, 2, NULL, expect));
    char *synth[] = {cli, "synth", "--spec", path, "--out", out, NULL};
    free(th_run_expect(synth, 2, NULL, expect));
}
