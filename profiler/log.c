/* profiler/log.c: one-line messages on stderr (log.h). */
#include "profiler/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "common/banned.h"

static atomic_int quiet;
static atomic_int failed;

void prof_log_set_quiet(int q)
{
    atomic_store(&quiet, q);
}

void prof_log_reset(void)
{
    atomic_store(&failed, 0);
}

__attribute__((format(printf, 1, 0))) static void emit(const char *fmt, va_list ap)
{
    char line[512];
    int n = snprintf(line, sizeof line, "stepcast-prof: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w; /* nowhere to report a failed report */
}

void prof_log_info(const char *fmt, ...)
{
    va_list ap;
    if (atomic_load(&quiet))
        return;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}

int prof_log_fail(const char *fmt, ...)
{
    va_list ap;
    if (atomic_exchange(&failed, 1))
        return 0;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
    return 1;
}
