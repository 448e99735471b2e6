/* daemon/log.h: leveled, structured log lines for stepcastd.
 *
 * One line per call on stderr, written with a single write(2) so lines from
 * several threads never interleave:
 *
 *     ts=2026-05-01T12:00:00.123Z level=info comp=http req=42 method=GET ...
 *
 * The message itself is key=value pairs by convention (free text goes in
 * msg="..."). The level is checked before anything is formatted, so a
 * disabled log_debug() costs one comparison; still, nothing logs inside hot
 * loops: the HTTP layer logs one line per request, the rest per event. */
#ifndef DAEMON_LOG_H
#define DAEMON_LOG_H

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR, LOG_LVL_OFF };

extern enum log_level log_threshold; /* set once at startup, read-only after */

__attribute__((format(printf, 3, 4)))
void log_write(enum log_level level, const char *comp, const char *fmt, ...);

#define log_at(level, comp, ...)                                                   \
    do {                                                                           \
        if ((level) >= log_threshold)                                              \
            log_write((level), (comp), __VA_ARGS__);                               \
    } while (0)
#define log_debug(comp, ...) log_at(LOG_LVL_DEBUG, comp, __VA_ARGS__)
#define log_info(comp, ...) log_at(LOG_LVL_INFO, comp, __VA_ARGS__)
#define log_warn(comp, ...) log_at(LOG_LVL_WARN, comp, __VA_ARGS__)
#define log_error(comp, ...) log_at(LOG_LVL_ERROR, comp, __VA_ARGS__)

/* "debug", "info", "warn", "error", "off" -> level; -1 when unknown. */
int log_level_parse(const char *s);

/* Copy s into out (size n) with quotes, backslashes and control bytes
 * escaped, for msg="..." values built from untrusted text. Returns out. */
char *log_quote(const char *s, char *out, unsigned n);

#endif
