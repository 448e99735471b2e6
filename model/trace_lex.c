/* model/trace_lex.c: the JSON lexer of the trace reader (trace_lex.h).
 *
 * Strict RFC 8259: strings UTF-8 validated with their escapes decoded,
 * numbers read exactly from their decimal digits, any value validated and
 * skipped, nesting and string lengths within the limits; every error names
 * its byte offset, and the traceEvents index inside traceEvents. */
#include "model/trace_lex.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

/* ---- errors ---------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
int tr_fail_at(struct reader *r, const char *at, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    int64_t off = r->base_off + (at ? at - r->buf : r->p - r->buf);

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    enum sc_status code = SC_EPARSE;
    if (strncmp(msg, "limit:", 6) == 0)
        code = SC_ELIMIT;
    else if (strncmp(msg, "range:", 6) == 0)
        code = SC_ENUMERIC;
    const char *text = code == SC_EPARSE ? msg : msg + 7;
    r->err_code = code;
    r->err_off = off;
    r->err_in_events = r->in_events;
    snprintf(r->err_text, sizeof r->err_text, "%s", text);
    if (r->in_events)
        sc_error_set(r->err, code, "'%s': byte %lld (traceEvents[%llu]): %s", r->source,
                     (long long)off, (unsigned long long)r->event_index, text);
    else
        sc_error_set(r->err, code, "'%s': byte %lld: %s", r->source, (long long)off, text);
    if (r->err) {
        r->err->offset = off;
        r->err->event = r->in_events ? (int64_t)r->event_index : -1;
    }
    return RD_ERR;
}

#define FAIL(r, ...) tr_fail_at((r), NULL, __VA_ARGS__)
#define OOM(r) (sc_error_set((r)->err, SC_ENOMEM, "'%s': out of memory", (r)->source), RD_ERR)

/* The parser met the sentinel at p: more input, or a NUL byte in the data. */
int tr_at_sentinel(struct reader *r, const char *p)
{
    if (p < r->end)
        return tr_fail_at(r, p, "NUL byte in the input");
    if (!r->eof)
        return RD_MORE;
    if (r->in_events)
        return tr_fail_at(r, p, "truncated JSON: the input ends inside this event");
    return tr_fail_at(r, p, "truncated JSON: unexpected end of input");
}

/* ---- strings --------------------------------------------------------------- */

/* Index of the first byte in p[0..16) that is '"', '\\', a control byte or
 * non-ASCII; 16 if none. p[0..16) must be readable (the buffer pad). */
static inline unsigned first_special16(const char *p)
{
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i q = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i b = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    __m128i c = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q, b), c)) |
                 (unsigned)_mm_movemask_epi8(v);
    return m ? (unsigned)__builtin_ctz(m) : 16;
#else
    for (unsigned i = 0; i < 16; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x80)
            return i;
    }
    return 16;
#endif
}

/* Length of a valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid,
 * -1 if it runs into the end of the data. */
static int utf8_seq(const struct reader *r, const unsigned char *p)
{
    unsigned char c = p[0];
    int n;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if (p + i >= (const unsigned char *)r->end)
            return -1;
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* Decode escapes of the string whose body starts at `body` (p is at the first
 * backslash) into scratch. On success *out points into scratch. */
static int lex_string_slow(struct reader *r, const char *body, const char *p, struct slice *out)
{
    char *o0 = r->scratch + r->scratch_len, *o = o0;
    memcpy(o, body, (size_t)(p - body));
    o += p - body;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            out->p = o0;
            out->n = (size_t)(o - o0);
            r->scratch_len += out->n;
            r->p = p + 1;
            if (out->n > r->lim->max_string)
                return tr_fail_at(r, body, "limit: string of %zu bytes is over the limit of %llu",
                                  out->n, (unsigned long long)r->lim->max_string);
            return RD_OK;
        }
        if ((size_t)(p - body) > r->lim->max_string)
            return tr_fail_at(r, body, "limit: string longer than the limit of %llu bytes",
                              (unsigned long long)r->lim->max_string);
        if (c == '\\') {
            if (p + 1 >= r->end)
                return tr_at_sentinel(r, r->end);
            char e = p[1];
            p += 2;
            switch (e) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '/': *o++ = '/'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                if (p + 4 > r->end)
                    return tr_at_sentinel(r, r->end);
                if (hex4(p, &cp))
                    return tr_fail_at(r, p - 2, "bad \\u escape in a string");
                p += 4;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (p + 6 > r->end && !r->eof)
                        return RD_MORE;
                    if (p + 6 <= r->end && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, &lo) == 0 &&
                        lo >= 0xdc00 && lo <= 0xdfff) {
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        p += 6;
                    } else {
                        cp = 0xfffd; /* a lone surrogate */
                    }
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    cp = 0xfffd;
                }
                o = put_utf8(o, cp);
                break;
            }
            case '\0':
                return tr_at_sentinel(r, p - 1);
            default:
                return tr_fail_at(r, p - 2, "bad escape '\\%c' in a string", e);
            }
            continue;
        }
        if (c < 0x20) {
            if (c == 0)
                return tr_at_sentinel(r, p);
            return tr_fail_at(r, p, "control character 0x%02x in a string", c);
        }
        if (c >= 0x80) {
            int n = utf8_seq(r, (const unsigned char *)p);
            if (n < 0)
                return tr_at_sentinel(r, r->end);
            if (n == 0)
                return tr_fail_at(r, p, "invalid UTF-8 in a string");
            memcpy(o, p, (size_t)n);
            o += n;
            p += n;
            continue;
        }
        *o++ = (char)c;
        p++;
    }
}

/* A string at r->p that is not short, plain ASCII (see lex_string). */
__attribute__((noinline)) int tr_lex_string_long(struct reader *r, struct slice *out)
{
    const char *body = r->p + 1, *p = body;
    for (;;) {
        unsigned i = first_special16(p);
        p += i;
        if (i == 16)
            goto check_len;
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            out->p = body;
            out->n = (size_t)(p - body);
            r->p = p + 1;
            if (out->n > r->lim->max_string)
                return tr_fail_at(r, body, "limit: string of %zu bytes is over the limit of %llu",
                                  out->n, (unsigned long long)r->lim->max_string);
            return RD_OK;
        }
        if (c == '\\')
            return lex_string_slow(r, body, p, out);
        if (c >= 0x80) {
            int n = utf8_seq(r, (const unsigned char *)p);
            if (n < 0)
                return tr_at_sentinel(r, r->end);
            if (n == 0)
                return tr_fail_at(r, p, "invalid UTF-8 in a string");
            p += n;
            goto check_len;
        }
        if (c == 0)
            return tr_at_sentinel(r, p);
        return tr_fail_at(r, p, "control character 0x%02x in a string", c);
    check_len:
        if ((size_t)(p - body) > r->lim->max_string)
            return tr_fail_at(r, body, "limit: string longer than the limit of %llu bytes",
                              (unsigned long long)r->lim->max_string);
    }
}

/* ---- numbers --------------------------------------------------------------- */

static const uint64_t pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull};

/* A JSON number at r->p, as round(value * 10^scale) in *out (ties away from
 * zero), computed from the decimal digits, never through a double: absolute
 * epoch microseconds with three decimals need 19 digits. *is_int tells
 * whether the literal had no fraction or exponent. With out NULL the number
 * is only validated. */
int tr_lex_number(struct reader *r, int scale, int64_t *out, int *is_int)
{
    const char *p = r->p, *start = p;
    int neg = 0, digits = 0, integral = 1;
    uint64_t mant = 0;
    int64_t dexp = 0;

    if (*p == '-')
        neg = 1, p++;
    if (*p == '0') {
        p++;
        if (*p >= '0' && *p <= '9')
            return tr_fail_at(r, start, "number with a leading zero");
    } else if (*p >= '1' && *p <= '9') {
        uint64_t eight;
        while (digits <= 11 && lead_digits8(p, &eight) == 8) { /* the buffer pad makes 8 readable */
            mant = mant * 100000000ull + eight;
            digits += 8;
            p += 8;
        }
        for (; *p >= '0' && *p <= '9'; p++) {
            if (digits < 19)
                mant = mant * 10 + (uint64_t)(*p - '0'), digits++;
            else
                dexp++;
        }
    } else {
        if (*p == '\0')
            return tr_at_sentinel(r, p);
        return tr_fail_at(r, start, "invalid number");
    }
    if (*p == '.') {
        integral = 0;
        p++;
        if (!(*p >= '0' && *p <= '9')) {
            if (*p == '\0')
                return tr_at_sentinel(r, p);
            return tr_fail_at(r, start, "invalid number: no digit after '.'");
        }
        for (; *p >= '0' && *p <= '9'; p++) {
            if (digits < 19 && (mant || *p != '0' || digits)) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                if (mant)
                    digits++;
                dexp--;
            } else if (!mant) {
                dexp--; /* leading zeros of a fraction */
            }
        }
    }
    if (*p == 'e' || *p == 'E') {
        int eneg = 0;
        int64_t e = 0;
        integral = 0;
        p++;
        if (*p == '+' || *p == '-')
            eneg = *p == '-', p++;
        if (!(*p >= '0' && *p <= '9')) {
            if (*p == '\0')
                return tr_at_sentinel(r, p);
            return tr_fail_at(r, start, "invalid number: no digit in the exponent");
        }
        for (; *p >= '0' && *p <= '9'; p++)
            if (e < 100000)
                e = e * 10 + (*p - '0');
        dexp += eneg ? -e : e;
    }
    if (*p == '\0' && p >= r->end && !r->eof)
        return RD_MORE; /* the number may go on in the next chunk */
    r->p = p;
    if (is_int)
        *is_int = integral;
    if (!out)
        return RD_OK;

    int64_t e = dexp + scale;
    uint64_t v;
    if (mant == 0) {
        v = 0;
    } else if (e >= 0) {
        if (e > 19 || __builtin_mul_overflow(mant, pow10_u64[e], &v))
            return tr_fail_at(r, start, "range: number %.*s is out of range", (int)(p - start), start);
    } else if (e < -19) {
        v = 0;
    } else {
        uint64_t d = pow10_u64[-e], q = mant / d, rem = mant % d;
        v = q + (rem >= d - rem);
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return tr_fail_at(r, start, "range: number %.*s is out of range", (int)(p - start), start);
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return RD_OK;
}

/* ---- generic values ---------------------------------------------------------- */

int tr_enter(struct reader *r)
{
    if (++r->depth > r->lim->max_depth)
        return FAIL(r, "limit: nesting deeper than the limit of %u", r->lim->max_depth);
    return RD_OK;
}

/* Step over the number at p, checked as lex_number checks it: NULL when
 * it is not one. */
static const char *past_number(const char *p)
{
    p += *p == '-';
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p += p[1] == '+' || p[1] == '-';
        if (!(*++p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

/* Step over the array at r->p when it holds nothing but numbers, strings
 * of printable ASCII without escapes and such arrays: what a trace's
 * shapes and types are ("Input Dims": [[4096, 1024], []]). One loop,
 * where skip_container calls a function a byte or two. 0 when it stepped
 * over the array; 1, r->p left as it was, when it met anything else, or
 * anything skip_container could refuse (a NUL, the nesting limit, a
 * string at the length limit): then skip_container reads it, with its
 * own errors. */
static int skip_plain_array(struct reader *r)
{
    const char *p = r->p;
    unsigned open = 0, room = r->lim->max_depth > r->depth ? r->lim->max_depth - r->depth : 0;
    for (;;) {
        /* p is at a value: the array's '[' at first */
        if (*p == '[') {
            if (++open > room)
                return 1;
            p = past_ws(p + 1);
            if (*p != ']')
                continue; /* to its first value */
        } else if (*p == '"') {
            const unsigned char *q = (const unsigned char *)p + 1;
            while (*q >= 0x20 && *q < 0x7f && *q != '"' && *q != '\\')
                q++;
            if (*q != '"' || (size_t)(q - (const unsigned char *)p - 1) >= r->lim->max_string)
                return 1;
            p = past_ws((const char *)q + 1);
        } else if ((p = past_number(p))) {
            p = past_ws(p);
        } else {
            return 1;
        }
        /* after a value, or at an empty array's ']' */
        while (*p == ']') {
            if (--open == 0) {
                r->p = p + 1;
                return 0;
            }
            p = past_ws(p + 1);
        }
        if (*p != ',')
            return 1;
        p = past_ws(p + 1);
    }
}

static int skip_container(struct reader *r, char close)
{
    int more, rc = open_container(r, &more);
    while (!rc && more) {
        struct slice key;
        if (close == '}' && (rc = member_key(r, &key)))
            return rc;
        if ((rc = tr_skip_value(r)) || (rc = next_item(r, close, &more)))
            return rc;
    }
    return rc;
}

int tr_lex_literal(struct reader *r, const char *lit, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        if (!r->eof && memcmp(r->p, lit, (size_t)(r->end - r->p)) == 0)
            return RD_MORE;
        if (r->eof && memcmp(r->p, lit, (size_t)(r->end - r->p)) == 0)
            return tr_at_sentinel(r, r->end);
        return FAIL(r, "invalid literal");
    }
    if (memcmp(r->p, lit, n) != 0)
        return FAIL(r, "invalid literal");
    r->p += n;
    return RD_OK;
}

/* Validate and step over any value (after whitespace). */
int tr_skip_value(struct reader *r)
{
    struct slice s;
    pass_ws(r); /* a NUL left goes to lex_number, which sends it to tr_at_sentinel */
    switch (*r->p) {
    case '{': return skip_container(r, '}');
    case '[': return skip_plain_array(r) == 0 ? RD_OK : skip_container(r, ']');
    case '"': return lex_string(r, &s);
    case 't': return tr_lex_literal(r, "true", 4);
    case 'f': return tr_lex_literal(r, "false", 5);
    case 'n': return tr_lex_literal(r, "null", 4);
    default: return lex_number(r, 0, NULL);
    }
}

/* A value that must be a string. */
int tr_get_string(struct reader *r, struct slice *out, const char *what)
{
    pass_ws(r);
    if (*r->p != '"')
        return NOT_EXPECTED(r, "%s is not a string", what);
    return lex_string(r, out);
}

/* An integer-valued number (a fraction is rounded); null leaves *out as is. */
int tr_get_int(struct reader *r, int64_t *out, const char *what)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    char c = *r->p;
    if (c == 'n')
        return tr_lex_literal(r, "null", 4);
    if (c == '"') { /* a number written as a string: keep it if it is one */
        struct slice s;
        if ((rc = lex_string(r, &s)))
            return rc;
        int64_t v = 0;
        size_t i = s.n && s.p[0] == '-';
        if (i == s.n)
            return RD_OK;
        for (; i < s.n && s.p[i] >= '0' && s.p[i] <= '9' && v < INT64_MAX / 10; i++)
            v = v * 10 + (s.p[i] - '0');
        if (i == s.n)
            *out = s.n && s.p[0] == '-' ? -v : v;
        return RD_OK;
    }
    if (c != '-' && (c < '0' || c > '9'))
        return FAIL(r, "%s is not a number", what);
    return lex_number(r, 0, out);
}

/* The raw JSON text of any value (for "Input Dims" and the like). */
int tr_get_raw(struct reader *r, struct slice *out)
{
    int rc;
    pass_ws(r); /* a NUL left goes to tr_skip_value */
    const char *start = r->p;
    if (*start == '"') { /* keep the decoded text of strings */
        return lex_string(r, out);
    }
    if ((rc = tr_skip_value(r)))
        return rc;
    out->p = start;
    out->n = (size_t)(r->p - start);
    return RD_OK;
}

/* Up to three integers of an array like [8,1,1] (grid, block). */
int tr_get_dim3(struct reader *r, int32_t v[3])
{
    int more, rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '[')
        return tr_skip_value(r);
    if ((rc = open_container(r, &more)))
        return rc;
    for (int i = 0; more; i++) {
        int64_t x = 0;
        if ((rc = tr_get_int(r, &x, "a dimension")))
            return rc;
        if (i < 3)
            v[i] = x > INT32_MAX ? INT32_MAX : x < 0 ? 0 : (int32_t)x;
        if ((rc = next_item(r, ']', &more)))
            return rc;
    }
    return RD_OK;
}

/* A pid, tid or id: number or string. */
int tr_get_idval(struct reader *r, struct idval *v, const char *what)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    v->str.p = NULL;
    v->num = 0;
    if (*r->p == '"') {
        if ((rc = lex_string(r, &v->str)))
            return rc;
        /* numeric value: the last run of digits ("stream 7" -> 7) */
        size_t e = v->str.n;
        while (e && (v->str.p[e - 1] < '0' || v->str.p[e - 1] > '9'))
            e--;
        size_t b = e;
        while (b && v->str.p[b - 1] >= '0' && v->str.p[b - 1] <= '9' && e - b < 18)
            b--;
        for (size_t i = b; i < e; i++)
            v->num = v->num * 10 + (v->str.p[i] - '0');
        return RD_OK;
    }
    return tr_get_int(r, &v->num, what);
}

