/* tests/integration/test_cli_calibrate.c: `stepcast calibrate` refuses to
 * write a fit it flags. The sample job's all-reduces (data/sample) are
 * one size whose time the collective model describes no better after the
 * fit than with the defaults: the fit is flagged on a 'flag:' line, the
 * profile is not written and the error names the file and --force; with
 * --force it is written, its flags inside. (The fits past a physical bound
 * are tested on the shared nccl-tests outputs, tests/golden.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

TEST(cli_calibrate_writes_a_flagged_fit_only_with_force)
{
    char *cli = (char *)th_build_path("stepcast"), out[4096], refused[4200];
    snprintf(out, sizeof out, "%s/sample-profile.json", th_tmpdir());
    snprintf(refused, sizeof refused, "%s not written: the fit has 1 flag (above); --force writes it anyway", out);
    char *argv[] = {cli, "calibrate", "traces", "--out", out, "data/sample", NULL};
    char *so = th_run_expect(argv, 2, "flag: on traces (all_reduce, 4 ranks) the calibrated model is", refused);
    CHECK_CONTAINS(so, "no better than the defaults'");
    free(so);
    CHECK(access(out, F_OK) != 0);

    char *forced[] = {cli, "calibrate", "traces", "--force", "--out", out, "data/sample", NULL};
    free(th_run_expect(forced, 0, "flag: ", "with 1 flag, as --force asks"));
    char *text = th_read_file(out, NULL);
    json_t *doc = json_loads(text ? text : "", 0, NULL);
    json_t *flags = json_object_get(doc, "flags");
    CHECK_EQ_INT(json_array_size(flags), 1);
    CHECK(strstr(json_string_value(json_array_get(flags, 0)) ? json_string_value(json_array_get(flags, 0)) : "",
                 "no better than the defaults") != NULL);
    json_decref(doc);
    free(text);
}
