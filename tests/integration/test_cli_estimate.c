/* tests/integration/test_cli_estimate.c: `stepcast estimate` on a
 * configuration that does not fit in its GPU's memory: the text says so
 * first, and --require-fit exits 3 (0 when it fits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

TEST(cli_estimate_says_first_that_it_does_not_fit)
{
    /* 80 layers of hidden 8192 on one H100: over a terabyte a GPU */
    static const char big[] = "{\"model\":{\"layers\":80,\"hidden\":8192,\"heads\":64,\"seq\":4096},\"parallel\":"
                              "{\"micro_batch\":1,\"global_batch\":1},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    static const char small[] = "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024},\"parallel\":"
                                "{\"micro_batch\":1,\"global_batch\":1},\"cluster\":{\"gpu\":\"h100-sxm\"}}";
    char *cli = (char *)th_build_path("stepcast");
    char b[4096], s[4096]; /* th_write_file's path is its own until the next call */
    snprintf(b, sizeof b, "%s", th_write_file("unfitting.json", big, sizeof big - 1));
    snprintf(s, sizeof s, "%s", th_write_file("fitting.json", small, sizeof small - 1));
    char *plain[] = {cli, "estimate", "--spec", b, NULL};
    char *out = th_run_expect(plain, 0, "DOES NOT FIT: pipeline rank 0 needs", NULL);
    CHECK(out && strncmp(out, "DOES NOT FIT", 12) == 0);
    free(out);
    char *required[] = {cli, "estimate", "--require-fit", "--spec", b, NULL};
    free(th_run_expect(required, 3, "DOES NOT FIT", NULL));
    char *fits[] = {cli, "estimate", "--require-fit", "--spec", s, NULL};
    out = th_run_expect(fits, 0, "step ", NULL);
    CHECK(out && !strstr(out, "DOES NOT FIT"));
    free(out);
}
