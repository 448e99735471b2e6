/* profiler/tests/test_config.c: the environment variables (config.h). */
#include <string.h>

#include "profiler/config.h"
#include "tests/check.h"
#include "common/banned.h"

static const char *const *env;

static char *get(const char *name)
{
    for (size_t i = 0; env && env[i]; i += 2)
        if (strcmp(env[i], name) == 0)
            return (char *)env[i + 1];
    return NULL;
}

static int load(struct prof_config *c, const char *const *vars, char *why)
{
    env = vars;
    return prof_config_load(c, get, why, 256);
}

TEST(prof_config_defaults)
{
    struct prof_config c;
    char why[256];
    CHECK_EQ_INT(load(&c, NULL, why), 0);
    CHECK(c.enabled);
    CHECK_STREQ(c.dir, ".");
    CHECK(!c.gzip);
    CHECK_EQ_INT(c.window_first, -1);
    CHECK_EQ_INT(c.window_last, -1);
    CHECK_STREQ(c.step_nvtx, "ProfilerStep#");
    CHECK_STREQ(c.step_kernel, "");
    CHECK_EQ_INT(c.max_mb, 1024);
    CHECK_EQ_INT(c.buffer_kb, 4096);
    CHECK_EQ_INT(c.flush_ms, 500);
    CHECK(c.driver && c.nvtx && !c.quiet);
}

TEST(prof_config_values)
{
    struct prof_config c;
    char why[256];
    const char *const v1[] = {"STEPCAST_PROF", "off", "STEPCAST_PROF_DIR", "/tmp/traces",
                              "STEPCAST_PROF_GZIP", "1", "STEPCAST_PROF_STEPS", "10-14",
                              "STEPCAST_PROF_STEP_KERNEL", "adam", "STEPCAST_PROF_MAX_MB", "256",
                              "STEPCAST_PROF_FLUSH_MS", "100", "STEPCAST_PROF_NVTX", "no",
                              "STEPCAST_PROF_STEP_NVTX", "", NULL};
    CHECK_EQ_INT(load(&c, v1, why), 0);
    CHECK(!c.enabled);
    CHECK_STREQ(c.dir, "/tmp/traces");
    CHECK(c.gzip);
    CHECK_EQ_INT(c.window_first, 10);
    CHECK_EQ_INT(c.window_last, 14);
    CHECK_STREQ(c.step_kernel, "adam");
    CHECK_STREQ(c.step_nvtx, "");
    CHECK_EQ_INT(c.max_mb, 256);
    CHECK_EQ_INT(c.flush_ms, 100);
    CHECK(!c.nvtx);
    const char *const v2[] = {"STEPCAST_PROF_STEPS", "7-", NULL};
    CHECK_EQ_INT(load(&c, v2, why), 0);
    CHECK_EQ_INT(c.window_first, 7);
    CHECK_EQ_INT(c.window_last, -1);
    /* a buffer of an eighth of the memory is the largest */
    const char *const v4[] = {"STEPCAST_PROF_MAX_MB", "16", "STEPCAST_PROF_BUFFER_KB", "2048", NULL};
    CHECK_EQ_INT(load(&c, v4, why), 0);
    CHECK_EQ_INT(c.buffer_kb, 2048);
    const char *const v5[] = {"STEPCAST_PROF_MAX_MB", "16", "STEPCAST_PROF_BUFFER_KB", "2056", NULL};
    CHECK_EQ_INT(load(&c, v5, why), -1);
    CHECK_CONTAINS(why, "STEPCAST_PROF_BUFFER_KB='2056'");
    const char *const v3[] = {"STEPCAST_PROF_STEPS", "3", NULL};
    CHECK_EQ_INT(load(&c, v3, why), 0);
    CHECK_EQ_INT(c.window_first, 3);
    CHECK_EQ_INT(c.window_last, 3);
}

TEST(prof_config_rejects_bad_values)
{
    static const char *const bad[][2] = {
        {"STEPCAST_PROF", "maybe"},        {"STEPCAST_PROF_STEPS", "5-2"},
        {"STEPCAST_PROF_STEPS", "-3"},     {"STEPCAST_PROF_STEPS", "x"},
        {"STEPCAST_PROF_MAX_MB", "1"},     {"STEPCAST_PROF_MAX_MB", "12abc"},
        {"STEPCAST_PROF_FLUSH_MS", "0"},   {"STEPCAST_PROF_BUFFER_KB", "-4"},
        {"STEPCAST_PROF_GZIP", "2"},
        {"STEPCAST_PROF_BUFFER_KB", "262144"}, /* two would not fit in a quarter of 1024 MB */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct prof_config c;
        char why[256] = "";
        const char *const v[] = {bad[i][0], bad[i][1], NULL};
        CHECK_EQ_INT(load(&c, v, why), -1);
        CHECK_CONTAINS(why, bad[i][0]);
    }
}
