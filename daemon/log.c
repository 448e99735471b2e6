/* daemon/log.c: structured log lines (log.h). */
#include "daemon/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/banned.h"

enum log_level log_threshold = LOG_LVL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

int log_level_parse(const char *s)
{
    for (unsigned i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return (int)i;
    return -1;
}

void log_write(enum log_level level, const char *comp, const char *fmt, ...)
{
    char line[4096];
    struct timespec ts;
    struct tm tm;
    size_t n;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof line, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ level=%s comp=%s ",
                          ts.tv_nsec / 1000000, level_names[level], comp);
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += (size_t)m;
    if (n > sizeof line - 2)
        n = sizeof line - 2; /* truncated: keep the newline */
    line[n++] = '\n';
    for (size_t off = 0; off < n;) {
        ssize_t w = write(STDERR_FILENO, line + off, n - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}

char *log_quote(const char *s, char *out, unsigned n)
{
    unsigned o = 0;
    for (; s && *s && o + 5 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o += (unsigned)snprintf(out + o, n - o, "\\x%02x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
    return out;
}
