/* profiler/tests/test_inject.c: the built library, loaded as the CUDA
 * driver and NCCL load it, on this machine: it must return cleanly, say
 * why it is off in exactly one line, and leave the process alone. */
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static int lines(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = text; p && *p;) {
        n += strncmp(p, prefix, strlen(prefix)) == 0;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    return n;
}

static int run_helper(const char *mode, char **out, char **err)
{
    char lib[4096], helper[4096];
    snprintf(lib, sizeof lib, "%s", th_build_path("libstepcast_prof.so"));
    snprintf(helper, sizeof helper, "%s", th_build_path("tests/prof-inject-real"));
    char *argv[] = {helper, lib, (char *)mode, NULL};
    setenv("STEPCAST_PROF_DIR", th_tmpdir(), 1);
    return th_run(argv, out, err);
}

/* Without a GPU (the development and CI machines): InitializeInjection for
 * real returns 1, tracing is off with one message, the process exits 0.
 * Where CUDA works, it traces instead: one line saying so, one saying where
 * the (empty) trace went. */
TEST(prof_inject_real_returns_cleanly)
{
    char *out = NULL, *err = NULL;
    unsetenv("STEPCAST_PROF");
    int rc = run_helper(NULL, &out, &err);
    CHECK_EQ_INT(rc, 0);
    CHECK_CONTAINS(out, "InitializeInjection=1 again=1");
    if (err && strstr(err, "stepcast-prof: tracing with ")) {
        printf("     (CUDA works here: the library traced)\n");
        CHECK_EQ_INT(lines(err, "stepcast-prof: "), 2);
        CHECK_CONTAINS(err, "stepcast-prof: wrote ");
    } else {
        CHECK_EQ_INT(lines(err, "stepcast-prof: "), 1);
        CHECK_CONTAINS(err, "stepcast-prof: tracing disabled: ");
        CHECK_CONTAINS(err, "the job runs untraced");
    }
    free(out);
    free(err);
}

TEST(prof_inject_real_switched_off)
{
    char *out = NULL, *err = NULL;
    setenv("STEPCAST_PROF", "0", 1);
    CHECK_EQ_INT(run_helper(NULL, &out, &err), 0);
    CHECK_CONTAINS(out, "InitializeInjection=1");
    CHECK_EQ_INT(lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "disabled by STEPCAST_PROF=0");
    free(out);
    free(err);
    setenv("STEPCAST_PROF_QUIET", "1", 1);
    CHECK_EQ_INT(run_helper(NULL, &out, &err), 0);
    CHECK_EQ_INT(lines(err, "stepcast-prof: "), 0);
    free(out);
    free(err);
    unsetenv("STEPCAST_PROF_QUIET");
    unsetenv("STEPCAST_PROF");
}

TEST(prof_inject_real_bad_setting_is_one_message)
{
    char *out = NULL, *err = NULL;
    setenv("STEPCAST_PROF_STEPS", "9-3", 1);
    CHECK_EQ_INT(run_helper(NULL, &out, &err), 0);
    CHECK_EQ_INT(lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "STEPCAST_PROF_STEPS='9-3' is not a valid value");
    free(out);
    free(err);
    unsetenv("STEPCAST_PROF_STEPS");
}

/* NCCL loading the plugin with no CUDA injection: the plugin asks for no
 * events and says once why. */
TEST(prof_inject_real_nccl_plugin_alone)
{
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(run_helper("nccl", &out, &err), 0);
    CHECK_CONTAINS(out, "plugin stepcast-prof init=0 mask=0");
    CHECK_EQ_INT(lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "set CUDA_INJECTION64_PATH to this library too");
    free(out);
    free(err);
}

/* Both variables set and tracing switched off (or failing): the one line
 * says why; the plugin asks for nothing and does not also report the
 * injection missing. */
TEST(prof_inject_real_nccl_plugin_with_injection_off)
{
    char *out = NULL, *err = NULL;
    setenv("STEPCAST_PROF", "0", 1);
    CHECK_EQ_INT(run_helper("both", &out, &err), 0);
    CHECK_CONTAINS(out, "InitializeInjection=1");
    CHECK_CONTAINS(out, "plugin stepcast-prof init=0 mask=0");
    CHECK_EQ_INT(lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "disabled by STEPCAST_PROF=0");
    free(out);
    free(err);
    unsetenv("STEPCAST_PROF");
}

/* NVTX's entry point declines (NVTX then does nothing) when NVTX recording
 * or the profiler is switched off. */
TEST(prof_inject_real_nvtx_switched_off)
{
    char *out = NULL, *err = NULL;
    setenv("STEPCAST_PROF_NVTX", "0", 1);
    CHECK_EQ_INT(run_helper("nvtx", &out, &err), 0);
    CHECK_CONTAINS(out, "InitializeInjectionNvtx2=0");
    free(out);
    free(err);
    unsetenv("STEPCAST_PROF_NVTX");
    setenv("STEPCAST_PROF", "off", 1);
    CHECK_EQ_INT(run_helper("nvtx", &out, &err), 0);
    CHECK_CONTAINS(out, "InitializeInjectionNvtx2=0");
    free(out);
    free(err);
    unsetenv("STEPCAST_PROF");
}
