/* tests/integration/test_cli_errors.c: errors of the command line name
 * the file at fault and list what exists: the steps a trace has when a
 * range misses them, the annotations a step marker could be when none
 * marks a step. */
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
