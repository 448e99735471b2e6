/* profiler/json.c: the streaming JSON writer (json.h). */
#include "profiler/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "common/banned.h"

static void flush(struct prof_json *w)
{
    if (w->error || !w->len)
        return;
    if (w->sink) {
        if (w->gzip) {
            if (gzwrite((gzFile)w->sink, w->buf, (unsigned)w->len) != (int)w->len)
                w->error = 1;
        } else if (fwrite(w->buf, 1, w->len, (FILE *)w->sink) != w->len) {
            w->error = 1;
        }
    }
    w->written += w->len;
    w->len = 0;
}

static void put_slow(struct prof_json *w, const char *p, size_t n)
{
    while (n && !w->error) {
        if (w->len == sizeof w->buf)
            flush(w);
        size_t k = sizeof w->buf - w->len < n ? sizeof w->buf - w->len : n;
        memcpy(w->buf + w->len, p, k);
        w->len += k;
        p += k;
        n -= k;
    }
}

static inline void put(struct prof_json *w, const char *p, size_t n)
{
    if (w->len + n <= sizeof w->buf) { /* a failed writer's buffer is never flushed */
        memcpy(w->buf + w->len, p, n);
        w->len += n;
        return;
    }
    put_slow(w, p, n);
}

static void putc_(struct prof_json *w, char c)
{
    if (w->len == sizeof w->buf)
        flush(w);
    if (!w->error)
        w->buf[w->len++] = c;
}

int prof_json_open(struct prof_json *w, const char *path, int gzip)
{
    memset(w, 0, offsetof(struct prof_json, buf));
    w->gzip = gzip;
    if (gzip) {
        gzFile g = gzopen(path, "wb6");
        if (!g)
            return -1;
        gzbuffer(g, 1 << 17);
        w->sink = g;
    } else {
        FILE *f = fopen(path, "wb");
        if (!f)
            return -1;
        w->sink = f;
    }
    return 0;
}

void prof_json_open_stream(struct prof_json *w, FILE *f)
{
    memset(w, 0, offsetof(struct prof_json, buf));
    w->sink = f;
}

void prof_json_open_null(struct prof_json *w)
{
    memset(w, 0, offsetof(struct prof_json, buf));
}

int prof_json_close(struct prof_json *w)
{
    flush(w);
    if (w->sink) {
        if (w->gzip) {
            if (gzclose((gzFile)w->sink) != Z_OK)
                w->error = 1;
        } else if (fclose((FILE *)w->sink) != 0) {
            w->error = 1;
        }
        w->sink = NULL;
    }
    return w->error ? -1 : 0;
}

/* The separator before a value or key at the current level. Past
 * PROF_JSON_DEPTH (an error already) there are no flags to keep. */
static void item(struct prof_json *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0 && w->depth <= PROF_JSON_DEPTH) {
        if (w->has_items[w->depth - 1])
            putc_(w, ',');
        w->has_items[w->depth - 1] = 1;
    }
}

static void open_(struct prof_json *w, char c)
{
    item(w);
    putc_(w, c);
    if (w->depth < PROF_JSON_DEPTH)
        w->has_items[w->depth] = 0;
    else
        w->error = 1;
    w->depth++;
}

static void close_(struct prof_json *w, char c)
{
    if (w->depth > 0)
        w->depth--;
    putc_(w, c);
}

void prof_json_begin_object(struct prof_json *w)
{
    open_(w, '{');
}

void prof_json_end_object(struct prof_json *w)
{
    close_(w, '}');
}

void prof_json_begin_array(struct prof_json *w)
{
    open_(w, '[');
}

void prof_json_end_array(struct prof_json *w)
{
    close_(w, ']');
}

/* Length of the valid UTF-8 sequence at p[0..n), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Whether 8 bytes need no escaping: none is a control byte, non-ASCII, a
 * quote or a backslash (bit tricks testing all eight at once). */
static int plain8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t v, q, b;
    memcpy(&v, p, 8);
    q = v ^ (ones * '"');
    b = v ^ (ones * '\\');
    return !((v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs);
}

static void string(struct prof_json *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    putc_(w, '"');
    while (i < n) {
        if (i + 8 <= n && plain8(p + i)) {
            i += 8;
            run += 8;
            continue;
        }
        unsigned c = p[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            run++;
            continue;
        }
        put(w, (const char *)p + i - run, run);
        run = 0;
        if (c >= 0x80) {
            size_t len = utf8_len(p + i, n - i);
            if (len) {
                put(w, (const char *)p + i, len);
                i += len;
            } else {
                put(w, "\\ufffd", 6);
                i++;
            }
            continue;
        }
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t elen = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            elen = 6;
        }
        put(w, esc, elen);
        i++;
    }
    put(w, (const char *)p + i - run, run);
    putc_(w, '"');
}

void prof_json_key(struct prof_json *w, const char *key)
{
    /* keys are the program's own ASCII literals: nothing to escape */
    item(w);
    putc_(w, '"');
    put(w, key, strlen(key));
    put(w, "\":", 2);
    w->after_key = 1;
}

void prof_json_str(struct prof_json *w, const char *s)
{
    prof_json_strn(w, s ? s : "", s ? strlen(s) : 0);
}

void prof_json_strn(struct prof_json *w, const char *s, size_t n)
{
    item(w);
    string(w, s, n);
}

static void digits(struct prof_json *w, uint64_t v, int negative)
{
    char b[24];
    int i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (negative)
        b[--i] = '-';
    put(w, b + i, sizeof b - (size_t)i);
}

void prof_json_int(struct prof_json *w, int64_t v)
{
    item(w);
    digits(w, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void prof_json_uint(struct prof_json *w, uint64_t v)
{
    item(w);
    digits(w, v, 0);
}

void prof_json_us(struct prof_json *w, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char frac[4] = {'.', (char)('0' + a % 1000 / 100), (char)('0' + a % 100 / 10),
                    (char)('0' + a % 10)};
    item(w);
    digits(w, a / 1000, ns < 0);
    put(w, frac, 4);
}

void prof_json_double(struct prof_json *w, double v, int decimals)
{
    char b[64];
    if (!isfinite(v))
        v = 0;
    int n = snprintf(b, sizeof b, "%.*f", decimals, v);
    item(w);
    put(w, b, n > 0 && (size_t)n < sizeof b ? (size_t)n : 1);
}

void prof_json_bool(struct prof_json *w, int v)
{
    item(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void prof_json_null(struct prof_json *w)
{
    item(w);
    put(w, "null", 4);
}

void prof_json_kstr(struct prof_json *w, const char *key, const char *s)
{
    prof_json_key(w, key);
    prof_json_str(w, s);
}

void prof_json_kint(struct prof_json *w, const char *key, int64_t v)
{
    prof_json_key(w, key);
    prof_json_int(w, v);
}

void prof_json_kuint(struct prof_json *w, const char *key, uint64_t v)
{
    prof_json_key(w, key);
    prof_json_uint(w, v);
}

void prof_json_kus(struct prof_json *w, const char *key, int64_t ns)
{
    prof_json_key(w, key);
    prof_json_us(w, ns);
}
