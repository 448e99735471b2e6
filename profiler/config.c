/* profiler/config.c: reading the environment (config.h). */
#include "profiler/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/banned.h"

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"1", "on", "yes", "true"}, *const no[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

static int parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*v < '0' || *v > '9')
        return -1;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

/* "A-B", "A-" or "A" */
static int parse_window(const char *v, int64_t *first, int64_t *last)
{
    char a[32];
    const char *dash = strchr(v, '-');
    uint64_t x, y;
    size_t n = dash ? (size_t)(dash - v) : strlen(v);
    if (n == 0 || n >= sizeof a)
        return -1;
    memcpy(a, v, n);
    a[n] = '\0';
    if (parse_u64(a, 0, INT64_MAX, &x))
        return -1;
    *first = (int64_t)x;
    if (!dash) {
        *last = (int64_t)x;
        return 0;
    }
    if (!dash[1]) {
        *last = -1;
        return 0;
    }
    if (parse_u64(dash + 1, x, INT64_MAX, &y))
        return -1;
    *last = (int64_t)y;
    return 0;
}

static int copy(char *dst, size_t n, const char *v)
{
    if (strlen(v) >= n)
        return -1;
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

int prof_config_load(struct prof_config *c, char *(*get)(const char *name), char *why,
                     size_t why_n)
{
    const char *name = NULL, *v;
    uint64_t x;
    memset(c, 0, sizeof *c);
    c->enabled = 1;
    copy(c->dir, sizeof c->dir, ".");
    c->window_first = c->window_last = -1;
    copy(c->step_nvtx, sizeof c->step_nvtx, "ProfilerStep#");
    c->max_mb = 1024;
    c->buffer_kb = 4096;
    c->flush_ms = 500;
    c->driver = 1;
    c->nvtx = 1;

#define VAR(n) ((v = get(name = (n))) != NULL && *v)
    if (VAR("STEPCAST_PROF") && parse_bool(v, &c->enabled))
        goto bad;
    if (VAR("STEPCAST_PROF_DIR") && copy(c->dir, sizeof c->dir, v))
        goto bad;
    if (VAR("STEPCAST_PROF_GZIP") && parse_bool(v, &c->gzip))
        goto bad;
    if (VAR("STEPCAST_PROF_STEPS") && parse_window(v, &c->window_first, &c->window_last))
        goto bad;
    if ((v = get(name = "STEPCAST_PROF_STEP_NVTX")) != NULL && copy(c->step_nvtx, sizeof c->step_nvtx, v))
        goto bad;
    if (VAR("STEPCAST_PROF_STEP_KERNEL") && copy(c->step_kernel, sizeof c->step_kernel, v))
        goto bad;
    if (VAR("STEPCAST_PROF_MAX_MB")) {
        if (parse_u64(v, 16, 1u << 20, &x))
            goto bad;
        c->max_mb = (size_t)x;
    }
    if (VAR("STEPCAST_PROF_BUFFER_KB")) {
        /* CUPTI's buffers get a quarter of the memory, and at least two fit */
        if (parse_u64(v, 64, 256 * 1024, &x) || x * 8 > (uint64_t)c->max_mb * 1024)
            goto bad;
        c->buffer_kb = (size_t)x;
    }
    if (VAR("STEPCAST_PROF_FLUSH_MS")) {
        if (parse_u64(v, 10, 60000, &x))
            goto bad;
        c->flush_ms = (unsigned)x;
    }
    if (VAR("STEPCAST_PROF_DRIVER") && parse_bool(v, &c->driver))
        goto bad;
    if (VAR("STEPCAST_PROF_NVTX") && parse_bool(v, &c->nvtx))
        goto bad;
    if (VAR("STEPCAST_PROF_QUIET") && parse_bool(v, &c->quiet))
        goto bad;
    if (VAR("STEPCAST_PROF_CUPTI") && copy(c->cupti, sizeof c->cupti, v))
        goto bad;
#undef VAR
    return 0;
bad:
    snprintf(why, why_n, "%s='%.200s' is not a valid value", name, v);
    return -1;
}
