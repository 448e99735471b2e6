/* model/trace_reader.c: the streaming Kineto Chrome-trace JSON reader.
 *
 * Why not a DOM: real traces are hundreds of MB per rank, and a DOM costs
 * several times the file in memory. Why not a generic tokenizer: it would
 * tokenize everything and then still need a second pass to find the few
 * fields we use. This reader is a strict JSON parser specialised for the
 * trace shape: it walks the top-level object, and for each entry of
 * traceEvents decodes just the fields the model needs straight into the
 * event tables (trace.h), validating and skipping the rest.
 *
 * Streaming: input is read into one buffer with a NUL sentinel after the
 * data. The parser works on one "item" at a time (a top-level member, or one
 * entry of traceEvents). Reaching the sentinel at the end of the data means
 * "need more": the item's bytes move to the front of the buffer, more input is
 * read, and the item is parsed again from its start. Items are small next to
 * the buffer, so re-parsing is rare; nothing is committed to the tables
 * until an item is complete. The buffer only grows for an item larger than
 * itself, up to limits.max_item_bytes.
 *
 * Strictness: RFC 8259 JSON, UTF-8 validated, nesting bounded by
 * limits.max_depth, strings by limits.max_string. Every error names the byte
 * offset (of the decompressed JSON) and the traceEvents index. */
#include "model/trace.h"

#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/cancel.h"
#include "common/vec.h"
#include "model/steps.h"
#include "model/stream.h"
#include "common/banned.h"

enum { RD_OK = 0, RD_MORE = 1, RD_STOP = 2, RD_DONE = 3, RD_ERR = -1 };
enum { READ_CHUNK = 1 << 20, BUF_PAD = 64 };

struct slice {
    const char *p;
    size_t n;
};

/* A pid, tid or flow id: a number or a string. */
struct idval {
    int64_t num;
    struct slice str; /* .p NULL for numbers */
};

/* What one event's args hold that the tables keep. */
struct raw_coll {
    struct slice name, dtype, pg_name, pg_desc, pg_ranks, in_split, out_split;
    int64_t in_nelems, out_nelems, group_size, seq, nccl_seq, peer;
};

struct raw_sync {
    struct slice kind;
    int64_t wait_on_stream, wait_corr, event_id;
};

/* Collective and sync fields are rare: they are set up only when an event
 * has one (coll_of, sync_of), so most events initialise a small struct. */
struct raw_args {
    int64_t correlation, external_id, stream, device, bytes;
    int32_t grid[3], block[3];
    struct slice input_dims, input_types, concrete_inputs;
    struct slice meta_name; /* args.name of metadata ("M") events */
    int has_coll, has_sync;
    struct raw_coll c;
    struct raw_sync s;
};

static struct raw_coll *coll_of(struct raw_args *a)
{
    if (!a->has_coll) {
        struct raw_coll *c = &a->c;
        memset(c, 0, sizeof *c);
        c->in_nelems = c->out_nelems = c->group_size = c->seq = c->nccl_seq = c->peer = -1;
        a->has_coll = 1;
    }
    return &a->c;
}

static struct raw_sync *sync_of(struct raw_args *a)
{
    if (!a->has_sync) {
        memset(&a->s, 0, sizeof a->s);
        a->s.wait_on_stream = a->s.wait_corr = a->s.event_id = -1;
        a->has_sync = 1;
    }
    return &a->s;
}

struct raw_event {
    struct slice ph, cat, name;
    struct idval pid, tid, id;
    int64_t ts, dur;
    int has_ts, has_dur, has_pid, has_tid, has_id, has_args;
    size_t ts_off, dur_off; /* byte offsets, for messages */
    struct raw_args a;
};

struct reader {
    struct model_stream *in;
    const char *source;
    const struct model_limits *lim;
    const struct model_load_opts *opts;
    size_t n_markers; /* step markers kept (count_only) */
    struct model_trace *t;
    struct sc_error *err;
    int eof;

    char *buf; /* data in buf[0..len), NUL at buf[len], BUF_PAD zeros after */
    size_t len, cap;
    int64_t base_off; /* stream offset of buf[0] */
    const char *p, *end;

    char *scratch; /* decoded strings of the current item; never outgrows it */
    size_t scratch_len, scratch_cap;

    uint64_t event_index; /* traceEvents entries seen */
    int in_events;        /* inside traceEvents: errors name the event */
    unsigned depth;
    int saw_events;

    /* recent categories, to skip interning the same few strings */
    struct {
        char bytes[32];
        uint8_t n;
        uint16_t cat;
    } cat_cache[8];
    unsigned cat_cache_next;
    uint32_t last_track;
    int64_t last_pid, last_tid;
    int have_last_track;

    /* a part of a split parse (read_split): the guessed starts of later
     * parts; reaching one at an event boundary ends this part there */
    const int64_t *stops;
    size_t n_stops, stop_idx;
    int stop_hit; /* index into stops of the start reached, or -1 */

    /* the last error, unformatted, so a part can renumber its event */
    enum sc_status err_code;
    int64_t err_off;
    int err_in_events;
    char err_text[320];
};

/* ---- errors ---------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int fail_at(struct reader *r, const char *at, const char *fmt, ...)
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

#define FAIL(r, ...) fail_at((r), NULL, __VA_ARGS__)
#define OOM(r) (sc_error_set((r)->err, SC_ENOMEM, "'%s': out of memory", (r)->source), RD_ERR)

/* The parser met the sentinel at p: more input, or a NUL byte in the data. */
static int at_sentinel(struct reader *r, const char *p)
{
    if (p < r->end)
        return fail_at(r, p, "NUL byte in the input");
    if (!r->eof)
        return RD_MORE;
    if (r->in_events)
        return fail_at(r, p, "truncated JSON: the input ends inside this event");
    return fail_at(r, p, "truncated JSON: unexpected end of input");
}

/* ---- whitespace and punctuation ------------------------------------------ */

static const uint8_t is_ws[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};

static inline int skip_ws(struct reader *r)
{
    const char *p = r->p;
    /* usually none or one (", "): decide those without a loop */
    if (is_ws[(unsigned char)p[0]]) {
        p++;
        while (is_ws[(unsigned char)*p])
            p++;
    }
    r->p = p;
    if (*p == '\0')
        return at_sentinel(r, p);
    return RD_OK;
}

/* Skip whitespace, then require the byte c. */
static inline int expect(struct reader *r, char c, const char *what)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != c)
        return FAIL(r, "expected %s", what);
    r->p++;
    return RD_OK;
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
                return fail_at(r, body, "limit: string of %zu bytes is over the limit of %llu",
                               out->n, (unsigned long long)r->lim->max_string);
            return RD_OK;
        }
        if ((size_t)(p - body) > r->lim->max_string)
            return fail_at(r, body, "limit: string longer than the limit of %llu bytes",
                           (unsigned long long)r->lim->max_string);
        if (c == '\\') {
            if (p + 1 >= r->end)
                return at_sentinel(r, r->end);
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
                    return at_sentinel(r, r->end);
                if (hex4(p, &cp))
                    return fail_at(r, p - 2, "bad \\u escape in a string");
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
                return at_sentinel(r, p - 1);
            default:
                return fail_at(r, p - 2, "bad escape '\\%c' in a string", e);
            }
            continue;
        }
        if (c < 0x20) {
            if (c == 0)
                return at_sentinel(r, p);
            return fail_at(r, p, "control character 0x%02x in a string", c);
        }
        if (c >= 0x80) {
            int n = utf8_seq(r, (const unsigned char *)p);
            if (n < 0)
                return at_sentinel(r, r->end);
            if (n == 0)
                return fail_at(r, p, "invalid UTF-8 in a string");
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
__attribute__((noinline)) static int lex_string_long(struct reader *r, struct slice *out)
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
                return fail_at(r, body, "limit: string of %zu bytes is over the limit of %llu",
                               out->n, (unsigned long long)r->lim->max_string);
            return RD_OK;
        }
        if (c == '\\')
            return lex_string_slow(r, body, p, out);
        if (c >= 0x80) {
            int n = utf8_seq(r, (const unsigned char *)p);
            if (n < 0)
                return at_sentinel(r, r->end);
            if (n == 0)
                return fail_at(r, p, "invalid UTF-8 in a string");
            p += n;
            goto check_len;
        }
        if (c == 0)
            return at_sentinel(r, p);
        return fail_at(r, p, "control character 0x%02x in a string", c);
    check_len:
        if ((size_t)(p - body) > r->lim->max_string)
            return fail_at(r, body, "limit: string longer than the limit of %llu bytes",
                           (unsigned long long)r->lim->max_string);
    }
}

/* A string at r->p (which must be '"'). *out borrows the buffer or scratch
 * until the end of the current item. Keys and most values are short plain
 * ASCII: one 16-byte compare finds their closing quote inline. */
static inline int lex_string(struct reader *r, struct slice *out)
{
#if defined(__SSE2__)
    const char *body = r->p + 1;
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)body);
    unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    unsigned sp = (unsigned)_mm_movemask_epi8(
                      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')),
                                   _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v))) |
                  (unsigned)_mm_movemask_epi8(v);
    if (q && !(sp & ((q & (0u - q)) - 1))) {
        unsigned n = (unsigned)__builtin_ctz(q);
        out->p = body;
        out->n = n;
        r->p = body + n + 1;
        return RD_OK;
    }
#endif
    return lex_string_long(r, out);
}

/* ---- numbers --------------------------------------------------------------- */

/* Whether the 8 bytes at p are all ASCII digits, and their value. */
static inline int eight_digits(const char *p, uint64_t *value)
{
    uint64_t v;
    memcpy(&v, p, 8);
    if (((v & 0xF0F0F0F0F0F0F0F0ull) | (((v + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) !=
        0x3333333333333333ull)
        return 0;
    v -= 0x3030303030303030ull;
    v = (v * 10) + (v >> 8);
    v = (((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
    *value = v;
    return 1;
}

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
static int lex_number(struct reader *r, int scale, int64_t *out, int *is_int)
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
            return fail_at(r, start, "number with a leading zero");
    } else if (*p >= '1' && *p <= '9') {
        uint64_t eight;
        while (digits <= 11 && eight_digits(p, &eight)) { /* the buffer pad makes 8 readable */
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
            return at_sentinel(r, p);
        return fail_at(r, start, "invalid number");
    }
    if (*p == '.') {
        integral = 0;
        p++;
        if (!(*p >= '0' && *p <= '9')) {
            if (*p == '\0')
                return at_sentinel(r, p);
            return fail_at(r, start, "invalid number: no digit after '.'");
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
                return at_sentinel(r, p);
            return fail_at(r, start, "invalid number: no digit in the exponent");
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
        if (e > 19 || mant > UINT64_MAX / pow10_u64[e])
            return fail_at(r, start, "range: number %.*s is out of range", (int)(p - start), start);
        v = mant * pow10_u64[e];
    } else if (e < -19) {
        v = 0;
    } else {
        uint64_t d = pow10_u64[-e], q = mant / d, rem = mant % d;
        v = q + (rem >= d - rem);
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return fail_at(r, start, "range: number %.*s is out of range", (int)(p - start), start);
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return RD_OK;
}

/* ---- generic values ---------------------------------------------------------- */

static int skip_value(struct reader *r);

static int enter(struct reader *r)
{
    if (++r->depth > r->lim->max_depth)
        return FAIL(r, "limit: nesting deeper than the limit of %u", r->lim->max_depth);
    return RD_OK;
}

/* Step into the object or array at r->p; *more is 0 when it closes at once. */
static inline int open_container(struct reader *r, int *more)
{
    char close = *r->p == '{' ? '}' : ']';
    int rc = enter(r);
    if (rc)
        return rc;
    r->p++;
    if ((rc = skip_ws(r)))
        return rc;
    *more = *r->p != close;
    if (!*more) {
        r->p++;
        r->depth--;
    }
    return RD_OK;
}

/* The next member's "key": inside an object. */
static inline int member_key(struct reader *r, struct slice *key)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '"')
        return FAIL(r, "expected a string key");
    if ((rc = lex_string(r, key)))
        return rc;
    return expect(r, ':', "':'");
}

/* After a member or element: *more is 1 past a ',', 0 past the closing bracket. */
static inline int next_item(struct reader *r, char close, int *more)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p == ',') {
        r->p++;
        *more = 1;
        return RD_OK;
    }
    if (*r->p == close) {
        r->p++;
        r->depth--;
        *more = 0;
        return RD_OK;
    }
    return FAIL(r, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

static int skip_container(struct reader *r, char close)
{
    int more, rc = open_container(r, &more);
    while (!rc && more) {
        struct slice key;
        if (close == '}' && (rc = member_key(r, &key)))
            return rc;
        if ((rc = skip_value(r)) || (rc = next_item(r, close, &more)))
            return rc;
    }
    return rc;
}

static int lex_literal(struct reader *r, const char *lit, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        if (!r->eof && memcmp(r->p, lit, (size_t)(r->end - r->p)) == 0)
            return RD_MORE;
        if (r->eof && memcmp(r->p, lit, (size_t)(r->end - r->p)) == 0)
            return at_sentinel(r, r->end);
        return FAIL(r, "invalid literal");
    }
    if (memcmp(r->p, lit, n) != 0)
        return FAIL(r, "invalid literal");
    r->p += n;
    return RD_OK;
}

/* Validate and step over any value (after whitespace). */
static int skip_value(struct reader *r)
{
    struct slice s;
    int rc = skip_ws(r);
    if (rc)
        return rc;
    switch (*r->p) {
    case '{': return skip_container(r, '}');
    case '[': return skip_container(r, ']');
    case '"': return lex_string(r, &s);
    case 't': return lex_literal(r, "true", 4);
    case 'f': return lex_literal(r, "false", 5);
    case 'n': return lex_literal(r, "null", 4);
    default: return lex_number(r, 0, NULL, NULL);
    }
}

/* A value that must be a string. */
static int get_string(struct reader *r, struct slice *out, const char *what)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '"')
        return FAIL(r, "%s is not a string", what);
    return lex_string(r, out);
}

/* An integer-valued number (a fraction is rounded); null leaves *out as is. */
static int get_int(struct reader *r, int64_t *out, const char *what)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    char c = *r->p;
    if (c == 'n')
        return lex_literal(r, "null", 4);
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
    return lex_number(r, 0, out, NULL);
}

/* The raw JSON text of any value (for "Input Dims" and the like). */
static int get_raw(struct reader *r, struct slice *out)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    const char *start = r->p;
    if (*start == '"') { /* keep the decoded text of strings */
        return lex_string(r, out);
    }
    if ((rc = skip_value(r)))
        return rc;
    out->p = start;
    out->n = (size_t)(r->p - start);
    return RD_OK;
}

/* Up to three integers of an array like [8,1,1] (grid, block). */
static int get_dim3(struct reader *r, int32_t v[3])
{
    int more, rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '[')
        return skip_value(r);
    if ((rc = open_container(r, &more)))
        return rc;
    for (int i = 0; more; i++) {
        int64_t x = 0;
        if ((rc = get_int(r, &x, "a dimension")))
            return rc;
        if (i < 3)
            v[i] = x > INT32_MAX ? INT32_MAX : x < 0 ? 0 : (int32_t)x;
        if ((rc = next_item(r, ']', &more)))
            return rc;
    }
    return RD_OK;
}

/* A pid, tid or id: number or string. */
static int get_idval(struct reader *r, struct idval *v, const char *what)
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
    return get_int(r, &v->num, what);
}

/* Equality of n bytes, 8 at a time; n is a constant at every call, so this
 * unrolls into a few loads and compares (a libc memcmp call costs more than
 * the comparison on these short keys). */
static inline int bytes_eq(const char *a, const char *b, size_t n)
{
    uint64_t x, y;
    for (; n >= 8; n -= 8, a += 8, b += 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return 0;
    }
    for (; n; n--, a++, b++)
        if (*a != *b)
            return 0;
    return 1;
}

#define KEY_IS(k, lit) ((k).n == sizeof(lit) - 1 && bytes_eq((k).p, lit, sizeof(lit) - 1))

/* ---- one traceEvents entry ----------------------------------------------------- */

static int parse_args(struct reader *r, struct raw_args *a)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p == 'n')
        return lex_literal(r, "null", 4);
    if (*r->p != '{')
        return FAIL(r, "args is not an object");
    int more;
    if ((rc = open_container(r, &more)))
        return rc;
    while (more) {
        struct slice k;
        if ((rc = member_key(r, &k)))
            return rc;
        switch (k.n) {
        case 3:
            if (KEY_IS(k, "Seq")) {
                rc = get_int(r, &coll_of(a)->seq, "Seq");
                goto next;
            }
            break;
        case 4:
            if (KEY_IS(k, "grid")) {
                rc = get_dim3(r, a->grid);
                goto next;
            }
            if (KEY_IS(k, "name")) {
                rc = get_raw(r, &a->meta_name);
                goto next;
            }
            break;
        case 5:
            if (KEY_IS(k, "bytes")) {
                rc = get_int(r, &a->bytes, "bytes");
                goto next;
            }
            if (KEY_IS(k, "block")) {
                rc = get_dim3(r, a->block);
                goto next;
            }
            if (KEY_IS(k, "dtype")) {
                rc = get_raw(r, &coll_of(a)->dtype);
                goto next;
            }
            break;
        case 6:
            if (KEY_IS(k, "stream")) {
                rc = get_int(r, &a->stream, "stream");
                goto next;
            }
            if (KEY_IS(k, "device")) {
                rc = get_int(r, &a->device, "device");
                goto next;
            }
            break;
        case 8:
            if (KEY_IS(k, "NCCL seq")) {
                rc = get_int(r, &coll_of(a)->nccl_seq, "NCCL seq");
                goto next;
            }
            if (KEY_IS(k, "event_id")) {
                rc = get_int(r, &sync_of(a)->event_id, "event_id");
                goto next;
            }
            if (KEY_IS(k, "Dst Rank") || KEY_IS(k, "Src Rank")) {
                rc = get_int(r, &coll_of(a)->peer, "a peer rank");
                goto next;
            }
            break;
        case 10:
            if (KEY_IS(k, "Input Dims")) {
                rc = get_raw(r, &a->input_dims);
                goto next;
            }
            if (KEY_IS(k, "Input type")) {
                rc = get_raw(r, &a->input_types);
                goto next;
            }
            if (KEY_IS(k, "Group size")) {
                rc = get_int(r, &coll_of(a)->group_size, "Group size");
                goto next;
            }
            break;
        case 11:
            if (KEY_IS(k, "correlation")) {
                rc = get_int(r, &a->correlation, "correlation");
                goto next;
            }
            if (KEY_IS(k, "External id") || KEY_IS(k, "external id")) {
                rc = get_int(r, &a->external_id, "External id");
                goto next;
            }
            break;
        case 13:
            if (KEY_IS(k, "In msg nelems")) {
                rc = get_int(r, &coll_of(a)->in_nelems, "In msg nelems");
                goto next;
            }
            if (KEY_IS(k, "In split size")) {
                rc = get_raw(r, &coll_of(a)->in_split);
                goto next;
            }
            break;
        case 14:
            if (KEY_IS(k, "Out msg nelems")) {
                rc = get_int(r, &coll_of(a)->out_nelems, "Out msg nelems");
                goto next;
            }
            if (KEY_IS(k, "Out split size")) {
                rc = get_raw(r, &coll_of(a)->out_split);
                goto next;
            }
            if (KEY_IS(k, "cuda_sync_kind")) {
                rc = get_raw(r, &sync_of(a)->kind);
                goto next;
            }
            if (KEY_IS(k, "wait_on_stream")) {
                rc = get_int(r, &sync_of(a)->wait_on_stream, "wait_on_stream");
                goto next;
            }
            break;
        case 15:
            if (KEY_IS(k, "Concrete Inputs")) {
                rc = get_raw(r, &a->concrete_inputs);
                goto next;
            }
            if (KEY_IS(k, "Collective name")) {
                rc = get_raw(r, &coll_of(a)->name);
                goto next;
            }
            break;
        case 16:
            if (KEY_IS(k, "Process Group ID")) {
                if (!coll_of(a)->pg_name.p)
                    rc = get_raw(r, &coll_of(a)->pg_name);
                else
                    rc = skip_value(r);
                goto next;
            }
            break;
        case 18:
            if (KEY_IS(k, "Process Group Name")) {
                rc = get_raw(r, &coll_of(a)->pg_name);
                goto next;
            }
            break;
        case 19:
            if (KEY_IS(k, "Process Group Ranks")) {
                rc = get_raw(r, &coll_of(a)->pg_ranks);
                goto next;
            }
            break;
        case 21:
            if (KEY_IS(k, "wait_on_cuda_event_id")) {
                rc = get_int(r, &sync_of(a)->event_id, "wait_on_cuda_event_id");
                goto next;
            }
            break;
        case 25:
            if (KEY_IS(k, "Process Group Description")) {
                rc = get_raw(r, &coll_of(a)->pg_desc);
                goto next;
            }
            break;
        case 33:
            if (KEY_IS(k, "wait_on_cuda_event_record_corr_id")) {
                rc = get_int(r, &sync_of(a)->wait_corr, "wait_on_cuda_event_record_corr_id");
                goto next;
            }
            break;
        }
        rc = skip_value(r);
    next:
        if (rc || (rc = next_item(r, '}', &more)))
            return rc;
    }
    return RD_OK;
}

static void raw_event_init(struct raw_event *e)
{
    memset(e, 0, offsetof(struct raw_event, a) + offsetof(struct raw_args, c));
    struct raw_args *a = &e->a;
    a->correlation = a->external_id = a->stream = a->device = a->bytes = -1;
}

/* Parse one traceEvents entry at r->p into *e. */
static int parse_event(struct reader *r, struct raw_event *e)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '{')
        return FAIL(r, "a traceEvents entry is not an object");
    raw_event_init(e);
    int more;
    if ((rc = open_container(r, &more)))
        return rc;
    while (more) {
        struct slice k;
        if ((rc = member_key(r, &k)))
            return rc;
        switch (k.n) {
        case 2:
            if (KEY_IS(k, "ph")) {
                rc = get_string(r, &e->ph, "ph");
                goto next;
            }
            if (KEY_IS(k, "ts")) {
                if ((rc = skip_ws(r)))
                    return rc;
                e->ts_off = (size_t)(r->p - r->buf);
                if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
                    return FAIL(r, "ts is not a number");
                rc = lex_number(r, 3, &e->ts, NULL);
                e->has_ts = 1;
                goto next;
            }
            if (KEY_IS(k, "id")) {
                rc = get_idval(r, &e->id, "id");
                e->has_id = 1;
                goto next;
            }
            break;
        case 3:
            if (KEY_IS(k, "cat")) {
                rc = get_string(r, &e->cat, "cat");
                goto next;
            }
            if (KEY_IS(k, "pid")) {
                rc = get_idval(r, &e->pid, "pid");
                e->has_pid = 1;
                goto next;
            }
            if (KEY_IS(k, "tid")) {
                rc = get_idval(r, &e->tid, "tid");
                e->has_tid = 1;
                goto next;
            }
            if (KEY_IS(k, "dur")) {
                if ((rc = skip_ws(r)))
                    return rc;
                e->dur_off = (size_t)(r->p - r->buf);
                if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
                    return FAIL(r, "dur is not a number");
                rc = lex_number(r, 3, &e->dur, NULL);
                e->has_dur = 1;
                goto next;
            }
            break;
        case 4:
            if (KEY_IS(k, "name")) {
                rc = get_string(r, &e->name, "name");
                goto next;
            }
            if (KEY_IS(k, "args")) {
                rc = parse_args(r, &e->a);
                e->has_args = 1;
                goto next;
            }
            break;
        }
        rc = skip_value(r);
    next:
        if (rc || (rc = next_item(r, '}', &more)))
            return rc;
    }
    return RD_OK;
}

/* ---- committing an event to the tables ------------------------------------------ */

static int intern(struct reader *r, struct slice s, uint32_t *id)
{
    if (!s.p) {
        *id = MODEL_NONE;
        return RD_OK;
    }
    if (sc_strtab_intern(&r->t->strings, s.p, s.n, id))
        return OOM(r);
    return RD_OK;
}

static int category(struct reader *r, struct slice cat, uint16_t *out)
{
    if (cat.n <= sizeof r->cat_cache[0].bytes) {
        for (unsigned i = 0; i < sizeof r->cat_cache / sizeof r->cat_cache[0]; i++)
            if (r->cat_cache[i].n == cat.n && cat.n && memcmp(r->cat_cache[i].bytes, cat.p, cat.n) == 0) {
                *out = r->cat_cache[i].cat;
                return RD_OK;
            }
    }
    if (model_trace_cat(r->t, cat.p ? cat.p : "", cat.n, out))
        return r->t->n_cats >= UINT16_MAX ? FAIL(r, "limit: more than 65535 categories") : OOM(r);
    if (cat.n && cat.n <= sizeof r->cat_cache[0].bytes) {
        unsigned i = r->cat_cache_next++ % (sizeof r->cat_cache / sizeof r->cat_cache[0]);
        memcpy(r->cat_cache[i].bytes, cat.p, cat.n);
        r->cat_cache[i].n = (uint8_t)cat.n;
        r->cat_cache[i].cat = *out;
    }
    return RD_OK;
}

static int track_of(struct reader *r, const struct raw_event *e, uint32_t *out)
{
    uint32_t ps = MODEL_NONE, ts = MODEL_NONE;
    int rc;
    if (!e->pid.str.p && !e->tid.str.p && r->have_last_track && e->pid.num == r->last_pid &&
        e->tid.num == r->last_tid) {
        *out = r->last_track;
        return RD_OK;
    }
    if ((rc = intern(r, e->pid.str, &ps)) || (rc = intern(r, e->tid.str, &ts)))
        return rc;
    if (model_trace_track(r->t, e->pid.num, ps, e->tid.num, ts, out))
        return OOM(r);
    if (ps == MODEL_NONE && ts == MODEL_NONE) {
        r->have_last_track = 1;
        r->last_pid = e->pid.num;
        r->last_tid = e->tid.num;
        r->last_track = *out;
    }
    return RD_OK;
}

static int commit_collective(struct reader *r, const struct raw_args *a, uint32_t *out)
{
    struct model_collective c;
    int rc;
    if ((rc = intern(r, a->c.name, &c.name)) || (rc = intern(r, a->c.dtype, &c.dtype)) ||
        (rc = intern(r, a->c.pg_name, &c.pg_name)) || (rc = intern(r, a->c.pg_desc, &c.pg_desc)) ||
        (rc = intern(r, a->c.pg_ranks, &c.pg_ranks)) || (rc = intern(r, a->c.in_split, &c.in_split)) ||
        (rc = intern(r, a->c.out_split, &c.out_split)))
        return rc;
    c.group_size = a->c.group_size > INT32_MAX ? INT32_MAX : (int32_t)a->c.group_size;
    c.peer = a->c.peer > INT32_MAX ? INT32_MAX : (int32_t)a->c.peer;
    c.in_nelems = a->c.in_nelems;
    c.out_nelems = a->c.out_nelems;
    c.seq = a->c.seq;
    c.nccl_seq = a->c.nccl_seq;
    if (model_trace_add_coll(r->t, &c, out))
        return OOM(r);
    return RD_OK;
}

static int commit_info(struct reader *r, const struct raw_event *e, uint8_t kind, uint32_t *out)
{
    const struct raw_args *a = &e->a;
    struct model_info info;
    int rc, gpu_side = model_kind_is_gpu(kind) || kind == MODEL_EV_CUDA_SYNC ||
                       kind == MODEL_EV_CUDA_EVENT || kind == MODEL_EV_GPU_ANNOTATION;

    *out = MODEL_NONE;
    if (!gpu_side && !a->input_dims.p && !a->has_coll)
        return RD_OK;
    info.bytes = a->bytes;
    info.stream = a->stream;
    info.device = a->device > INT32_MAX || a->device < INT32_MIN ? -1 : (int32_t)a->device;
    memcpy(info.grid, a->grid, sizeof info.grid);
    memcpy(info.block, a->block, sizeof info.block);
    info.coll = info.sync = MODEL_NONE;
    if ((rc = intern(r, a->input_dims, &info.input_dims)) ||
        (rc = intern(r, a->input_types, &info.input_types)) ||
        (rc = intern(r, a->concrete_inputs, &info.concrete_inputs)))
        return rc;
    if (a->has_coll && (rc = commit_collective(r, a, &info.coll)))
        return rc;
    if (a->has_sync) {
        struct model_sync s;
        if ((rc = intern(r, a->s.kind, &s.sync_kind)))
            return rc;
        s.wait_on_stream = a->s.wait_on_stream;
        s.wait_on_record_corr = a->s.wait_corr;
        s.event_id = a->s.event_id;
        if (model_trace_add_sync(r->t, &s, &info.sync))
            return OOM(r);
    }
    if (model_trace_add_info(r->t, &info, out))
        return OOM(r);
    return RD_OK;
}

static int commit_metadata(struct reader *r, const struct raw_event *e)
{
    uint32_t track, label;
    int rc;
    r->t->n_metadata++;
    if (!KEY_IS(e->name, "thread_name") || !e->a.meta_name.p)
        return RD_OK;
    if ((rc = track_of(r, e, &track)) || (rc = intern(r, e->a.meta_name, &label)))
        return rc;
    r->t->tracks[track].label = label;
    return RD_OK;
}

/* Whether an event of this name can mark a step (count_only keeps those). */
static int may_mark_step(const struct reader *r, struct slice name)
{
    const char *m = r->opts->step_marker ? r->opts->step_marker : MODEL_PROFILER_STEP;
    size_t n = strlen(m);
    return name.p && name.n >= n && memcmp(name.p, m, n) == 0;
}

static int commit_event(struct reader *r, const struct raw_event *e)
{
    struct model_trace *t = r->t;
    char ph = e->ph.n == 1 ? e->ph.p[0] : '\0';
    uint16_t cat = 0;
    int rc;

    if (e->cat.p) {
        if ((rc = category(r, e->cat, &cat)))
            return rc;
        t->cats[cat].count++;
    }
    switch (ph) {
    case 'X':
        break;
    case 'M':
        return r->opts->count_only ? RD_OK : commit_metadata(r, e);
    case 'C':
        t->n_counters++;
        return RD_OK;
    case 'i':
    case 'I':
        t->n_instants++;
        return RD_OK;
    case 's':
    case 't':
    case 'f': {
        struct model_flow f;
        if (!e->cat.p && (rc = category(r, e->cat, &cat)))
            return rc;
        if (r->opts->count_only)
            return RD_OK;
        if ((rc = track_of(r, e, &f.track)))
            return rc;
        f.id = e->id.str.p ? (int64_t)(sc_hash_bytes(e->id.str.p, e->id.str.n) >> 1) : e->id.num;
        f.ts = e->ts;
        f.cat = cat;
        f.phase = (uint8_t)ph;
        f.kind = t->cats[cat].flow ? (uint8_t)(t->cats[cat].flow - 1) : MODEL_FLOW_OTHER;
        if (model_trace_add_flow(t, &f))
            return OOM(r);
        return RD_OK;
    }
    default:
        t->n_other_phase++;
        return RD_OK;
    }

    /* a complete event */
    struct model_event ev;
    if (!e->has_ts)
        return FAIL(r, "a complete event (ph \"X\") has no ts");
    if (e->dur < 0)
        return fail_at(r, r->buf + e->dur_off, "negative dur");
    if (!e->cat.p && (rc = category(r, e->cat, &cat)))
        return rc;
    ev.ts = e->ts;
    ev.dur = e->has_dur ? e->dur : 0;
    if (ev.ts > INT64_MAX - ev.dur)
        return fail_at(r, r->buf + e->ts_off, "range: ts plus dur is out of range");
    if (r->opts->count_only) {
        if (ev.ts < t->first_ts)
            t->first_ts = ev.ts;
        if (ev.ts + ev.dur > t->last_end)
            t->last_end = ev.ts + ev.dur;
        if (!may_mark_step(r, e->name))
            return RD_OK;
        if (++r->n_markers > MODEL_COUNT_ONLY_MARKERS)
            return FAIL(r, "limit: more than %u step markers", MODEL_COUNT_ONLY_MARKERS);
    }
    ev.correlation = e->a.correlation;
    ev.external_id = e->a.external_id;
    ev.cat = cat;
    ev.kind = t->cats[cat].kind;
    ev.rt = 0;
    if ((rc = intern(r, e->name, &ev.name)) || (rc = track_of(r, e, &ev.track)) ||
        (rc = commit_info(r, e, ev.kind, &ev.info)))
        return rc;
    if (ev.name == MODEL_NONE)
        ev.name = 0;
    if (ev.kind == MODEL_EV_UNKNOWN)
        t->n_unknown++;
    if (ev.ts < t->first_ts)
        t->first_ts = ev.ts;
    if (ev.ts + ev.dur > t->last_end)
        t->last_end = ev.ts + ev.dur;
    if (model_trace_add_event(t, &ev))
        return OOM(r);
    return RD_OK;
}

/* ---- top-level members ------------------------------------------------------------ */

/* The object whose '{' is at r->p, each member's value read by
 * member(r, key, ctx). */
static int parse_object(struct reader *r, int (*member)(struct reader *, struct slice, void *),
                        void *ctx)
{
    int more, rc = open_container(r, &more);
    while (!rc && more) {
        struct slice k;
        if ((rc = member_key(r, &k)) || (rc = member(r, k, ctx)) ||
            (rc = next_item(r, '}', &more)))
            return rc;
    }
    return rc;
}

/* An array of objects: entry(r, commit) reads each object; other elements
 * are skipped, and so is a value that is not an array. */
static int parse_objects(struct reader *r, int (*entry)(struct reader *, int), int commit)
{
    int more, rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '[')
        return skip_value(r);
    if ((rc = open_container(r, &more)))
        return rc;
    while (more) {
        if ((rc = skip_ws(r)))
            return rc;
        rc = *r->p == '{' ? entry(r, commit) : skip_value(r);
        if (rc || (rc = next_item(r, ']', &more)))
            return rc;
    }
    return RD_OK;
}

/* deviceProperties: [{"id":0,"name":"...","totalGlobalMem":..,...}, ...] */
struct device_fields {
    struct model_device d;
    struct slice name;
    int64_t major, minor, sms;
};

static int device_member(struct reader *r, struct slice k, void *ctx)
{
    struct device_fields *f = ctx;
    if (KEY_IS(k, "id"))
        return get_int(r, &f->d.id, "id");
    if (KEY_IS(k, "name"))
        return get_raw(r, &f->name);
    if (KEY_IS(k, "totalGlobalMem"))
        return get_int(r, &f->d.total_mem, "totalGlobalMem");
    if (KEY_IS(k, "computeMajor"))
        return get_int(r, &f->major, "computeMajor");
    if (KEY_IS(k, "computeMinor"))
        return get_int(r, &f->minor, "computeMinor");
    if (KEY_IS(k, "numSms"))
        return get_int(r, &f->sms, "numSms");
    return skip_value(r);
}

static int32_t int32_or_none(int64_t v)
{
    return v > INT32_MAX ? -1 : (int32_t)v;
}

static int device_entry(struct reader *r, int commit)
{
    struct device_fields f = {.d = {.id = -1, .name = MODEL_NONE, .total_mem = -1},
                              .major = -1, .minor = -1, .sms = -1};
    int rc = parse_object(r, device_member, &f);
    if (rc || !commit)
        return rc;
    struct model_trace *t = r->t;
    if ((rc = intern(r, f.name, &f.d.name)))
        return rc;
    f.d.major = int32_or_none(f.major);
    f.d.minor = int32_or_none(f.minor);
    f.d.num_sms = int32_or_none(f.sms);
    if (sc_vec_reserve((void **)&t->devices, &t->cap_devices, t->n_devices + 1,
                       sizeof *t->devices))
        return OOM(r);
    t->devices[t->n_devices++] = f.d;
    return RD_OK;
}

/* distributedInfo: {"backend":..,"rank":..,"world_size":..,"nccl_version":..,
 * "pg_config":[{"pg_name":..,"pg_desc":..,"pg_size":..,"ranks":[..] or ".."}]} */
struct pg_fields {
    struct slice name, desc, ranks;
    int64_t size;
};

static int pg_member(struct reader *r, struct slice k, void *ctx)
{
    struct pg_fields *f = ctx;
    if (KEY_IS(k, "pg_name"))
        return get_raw(r, &f->name);
    if (KEY_IS(k, "pg_desc"))
        return get_raw(r, &f->desc);
    if (KEY_IS(k, "pg_size"))
        return get_int(r, &f->size, "pg_size");
    if (KEY_IS(k, "ranks"))
        return get_raw(r, &f->ranks);
    return skip_value(r);
}

static int pg_entry(struct reader *r, int commit)
{
    struct pg_fields f = {.size = -1};
    int rc = parse_object(r, pg_member, &f);
    if (rc || !commit)
        return rc;
    struct model_trace *t = r->t;
    struct model_pg pg;
    if ((rc = intern(r, f.name, &pg.name)) || (rc = intern(r, f.desc, &pg.desc)) ||
        (rc = intern(r, f.ranks, &pg.ranks)))
        return rc;
    pg.size = int32_or_none(f.size);
    if (sc_vec_reserve((void **)&t->pgs, &t->cap_pgs, t->n_pgs + 1, sizeof *t->pgs))
        return OOM(r);
    t->pgs[t->n_pgs++] = pg;
    return RD_OK;
}

struct dist_fields {
    int64_t rank, world;
    struct slice backend, nccl;
    int commit;
};

static int dist_member(struct reader *r, struct slice k, void *ctx)
{
    struct dist_fields *f = ctx;
    if (KEY_IS(k, "rank"))
        return get_int(r, &f->rank, "distributedInfo.rank");
    if (KEY_IS(k, "world_size"))
        return get_int(r, &f->world, "distributedInfo.world_size");
    if (KEY_IS(k, "backend"))
        return get_raw(r, &f->backend);
    if (KEY_IS(k, "nccl_version"))
        return get_raw(r, &f->nccl);
    if (KEY_IS(k, "pg_config"))
        return parse_objects(r, pg_entry, f->commit);
    return skip_value(r);
}

static int parse_distributed_info(struct reader *r, int commit)
{
    struct dist_fields f = {.rank = -1, .world = -1, .commit = commit};
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '{')
        return skip_value(r);
    if ((rc = parse_object(r, dist_member, &f)) || !commit)
        return rc;
    struct model_trace *t = r->t;
    if (f.rank < -1 || f.world < -1 || f.rank > INT32_MAX || f.world > INT32_MAX)
        return FAIL(r, "distributedInfo has a negative or huge rank or world_size");
    t->has_distributed_info = 1;
    t->rank = f.rank;
    t->world_size = f.world;
    return (rc = intern(r, f.backend, &t->backend)) ? rc : intern(r, f.nccl, &t->nccl_version);
}

/* The value of a top-level member other than traceEvents. */
static int parse_member_value(struct reader *r, struct slice key, int commit)
{
    struct model_trace *t = r->t;
    int64_t v = -1;
    int rc;
    if (KEY_IS(key, "deviceProperties")) {
        if (commit)
            t->has_device_properties = 1;
        return parse_objects(r, device_entry, commit);
    }
    if (KEY_IS(key, "distributedInfo"))
        return parse_distributed_info(r, commit);
    if (KEY_IS(key, "baseTimeNanoseconds")) {
        if ((rc = get_int(r, &v, "baseTimeNanoseconds")))
            return rc;
        if (commit && v >= 0) {
            t->base_time_ns = v;
            t->has_base_time = 1;
        }
        return RD_OK;
    }
    if (KEY_IS(key, "stepcast_synthetic")) {
        if ((rc = skip_ws(r)))
            return rc;
        if (*r->p != 't')
            return skip_value(r);
        if ((rc = lex_literal(r, "true", 4)))
            return rc;
        if (commit)
            t->synthetic = 1;
        return RD_OK;
    }
    if (KEY_IS(key, "schemaVersion")) {
        if ((rc = skip_ws(r)))
            return rc;
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
            if ((rc = get_int(r, &v, "schemaVersion")))
                return rc;
            if (commit)
                t->schema_version = v;
            return RD_OK;
        }
        return skip_value(r);
    }
    return skip_value(r);
}

/* ---- the driver ------------------------------------------------------------------- */

enum top_state {
    TOP_BEGIN,        /* before the document */
    TOP_FIRST_MEMBER, /* after '{' */
    TOP_MEMBER,       /* after ',' */
    TOP_AFTER_MEMBER, /* after a member's value */
    EV_FIRST,         /* after "traceEvents": [ */
    EV_NEXT,          /* after an event */
    TOP_DONE          /* after the document */
};

/* Keep buf[mark..end), read more after it. */
static int refill(struct reader *r, const char *mark)
{
    size_t keep = (size_t)(r->end - mark);
    if (keep >= r->lim->max_item_bytes)
        return fail_at(r, mark, "limit: %s is larger than the limit of %llu bytes",
                       r->in_events ? "an event" : "a top-level member",
                       (unsigned long long)r->lim->max_item_bytes);
    memmove(r->buf, mark, keep);
    r->base_off += mark - r->buf;
    r->len = keep;
    if (r->cap - r->len < READ_CHUNK / 2) {
        size_t cap = r->cap * 2;
        while (cap - r->len < READ_CHUNK / 2)
            cap *= 2;
        char *b = realloc(r->buf, cap + BUF_PAD);
        if (!b)
            return OOM(r);
        r->buf = b;
        r->cap = cap;
    }
    if (r->scratch_cap < 2 * r->cap) {
        free(r->scratch);
        r->scratch_cap = 2 * r->cap;
        if (!(r->scratch = malloc(r->scratch_cap + BUF_PAD)))
            return OOM(r);
    }
    /* fill the buffer, so that where it ends depends on the data only, not
     * on how the stream (a gzip decoder) hands it over */
    while (r->len < r->cap) {
        ssize_t n = model_stream_read(r->in, r->buf + r->len, r->cap - r->len, r->err);
        if (n < 0) {
            if (r->err)
                sc_error_prefix(r->err, "'%s'", r->source);
            return RD_ERR;
        }
        if (n == 0) {
            r->eof = 1;
            break;
        }
        r->len += (size_t)n;
    }
    memset(r->buf + r->len, 0, BUF_PAD);
    r->p = r->buf;
    r->end = r->buf + r->len;
    return RD_OK;
}

/* How often a parse looks whether its work was called off (common/cancel.h):
 * a few milliseconds of parsing. */
#define CANCEL_EVERY_EVENTS 16384

static int step_events(struct reader *r, int *state, int top_array)
{
    struct raw_event e;
    int rc;
    if ((rc = skip_ws(r)))
        return rc;
    if (*state == EV_NEXT) {
        if (*r->p == ',') {
            r->p++;
            if (r->n_stops) {
                if ((rc = skip_ws(r)))
                    return rc;
                int64_t off = r->base_off + (r->p - r->buf);
                while (r->stop_idx < r->n_stops && r->stops[r->stop_idx] < off)
                    r->stop_idx++;
                if (r->stop_idx < r->n_stops && r->stops[r->stop_idx] == off) {
                    r->stop_hit = (int)r->stop_idx;
                    return RD_STOP;
                }
            }
        } else if (*r->p != ']') {
            return FAIL(r, "expected ',' or ']' after an event");
        }
    }
    if (*r->p == ']' && (*state == EV_FIRST || r->p[-1] != ',')) {
        r->p++;
        r->depth--;
        r->in_events = 0;
        *state = top_array ? TOP_DONE : TOP_AFTER_MEMBER;
        return RD_OK;
    }
    if (r->event_index >= r->lim->max_events)
        return FAIL(r, "limit: more than %llu events", (unsigned long long)r->lim->max_events);
    r->scratch_len = 0;
    const char *start = r->p;
    if ((rc = parse_event(r, &e)))
        return rc;
    if ((uint64_t)(r->p - start) > r->lim->max_item_bytes)
        return fail_at(r, start, "limit: an event of %zu bytes is larger than the limit of %llu bytes",
                       (size_t)(r->p - start), (unsigned long long)r->lim->max_item_bytes);
    if ((rc = commit_event(r, &e)))
        return rc;
    r->event_index++;
    r->t->n_entries++;
    *state = EV_NEXT;
    if (!(r->event_index % CANCEL_EVERY_EVENTS) && sc_cancelled()) /* the work was called off */
        return (sc_error_set(r->err, SC_ECANCELED, "'%s': called off at traceEvents[%llu]", r->source,
                             (unsigned long long)r->event_index), RD_ERR);
    return RD_OK;
}

static int step_top(struct reader *r, int *state, int *top_array)
{
    struct slice key;
    int rc;
    switch (*state) {
    case TOP_BEGIN:
        if (r->eof && r->p == r->end) /* nothing but whitespace */
            return FAIL(r, "empty input: not a trace");
        if ((rc = skip_ws(r))) {
            if (rc == RD_ERR && r->eof && r->p == r->end)
                return FAIL(r, "empty input: not a trace");
            return rc;
        }
        if (r->base_off == 0 && r->p == r->buf && (unsigned char)r->p[0] == 0xef &&
            (unsigned char)r->p[1] == 0xbb && (unsigned char)r->p[2] == 0xbf)
            r->p += 3; /* a UTF-8 byte order mark */
        if ((rc = skip_ws(r)))
            return rc;
        if (*r->p == '[') { /* the JSON Array Format: a bare list of events */
            r->p++;
            r->depth = 1;
            r->in_events = 1;
            r->saw_events = 1;
            *top_array = 1;
            *state = EV_FIRST;
            return RD_OK;
        }
        if (*r->p != '{')
            return FAIL(r, "not a trace: expected a JSON object");
        r->p++;
        r->depth = 1;
        *state = TOP_FIRST_MEMBER;
        return RD_OK;
    case TOP_FIRST_MEMBER:
    case TOP_MEMBER:
        if ((rc = skip_ws(r)))
            return rc;
        if (*state == TOP_FIRST_MEMBER && *r->p == '}') {
            r->p++;
            r->depth = 0;
            *state = TOP_DONE;
            return RD_OK;
        }
        if (*r->p != '"')
            return FAIL(r, "expected a string key");
        r->scratch_len = 0;
        if ((rc = lex_string(r, &key)) || (rc = expect(r, ':', "':'")))
            return rc;
        if (KEY_IS(key, "traceEvents")) {
            if (r->saw_events)
                return FAIL(r, "a second traceEvents member");
            if ((rc = skip_ws(r)))
                return rc;
            if (*r->p != '[')
                return FAIL(r, "traceEvents is not an array");
            r->p++;
            r->depth = 2;
            r->in_events = 1;
            r->saw_events = 1;
            *state = EV_FIRST;
            return RD_OK;
        } else {
            /* validate the whole value first, so nothing is committed twice
             * if the input runs out inside it */
            const char *value = r->p;
            size_t scratch = r->scratch_len;
            if ((rc = parse_member_value(r, key, 0)))
                return rc;
            if ((uint64_t)(r->p - value) > r->lim->max_item_bytes)
                return fail_at(r, value, "limit: a top-level member of %zu bytes is larger than the limit of %llu bytes",
                               (size_t)(r->p - value), (unsigned long long)r->lim->max_item_bytes);
            r->p = value;
            r->scratch_len = scratch;
            r->depth = 1;
            if ((rc = parse_member_value(r, key, 1)))
                return rc;
            *state = TOP_AFTER_MEMBER;
            return RD_OK;
        }
    case TOP_AFTER_MEMBER:
        if ((rc = skip_ws(r)))
            return rc;
        if (*r->p == ',') {
            r->p++;
            *state = TOP_MEMBER;
            return RD_OK;
        }
        if (*r->p == '}') {
            r->p++;
            r->depth = 0;
            *state = TOP_DONE;
            return RD_OK;
        }
        return FAIL(r, "expected ',' or '}' at the top level");
    default:
        return FAIL(r, "internal: bad reader state");
    }
}

/* After the document: only whitespace may follow, to the end of the input
 * (RD_DONE), which is read to its end wherever the buffer ends: what comes
 * after, a gzip trailer's CRC and size included, is checked. */
static int step_done(struct reader *r)
{
    const char *p = r->p;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    r->p = p;
    if (*p == '\0' && p == r->end)
        return r->eof ? RD_DONE : RD_MORE;
    return FAIL(r, "trailing data after the JSON document");
}

/* Set up a reader on a (plain or gzip) stream. */
static int reader_open(struct reader *r, struct model_stream *in, const char *source,
                       const struct model_load_opts *opts, struct sc_error *err)
{
    memset(r, 0, sizeof *r);
    r->source = source ? source : "(trace)";
    r->lim = &opts->limits;
    r->opts = opts;
    r->err = err;
    r->stop_hit = -1;
    if (model_stream_open_decoded(in, 0, &r->in, err))
        return sc_error_prefix(err, "'%s'", r->source);
    r->cap = 2 * READ_CHUNK;
    r->buf = malloc(r->cap + BUF_PAD);
    r->scratch_cap = 2 * r->cap;
    r->scratch = malloc(r->scratch_cap + BUF_PAD);
    if (!r->buf || !r->scratch || model_trace_new(r->source, &r->t, err))
        return sc_error_set(err, SC_ENOMEM, "'%s': out of memory", r->source);
    memset(r->buf, 0, BUF_PAD);
    r->p = r->end = r->buf;
    return SC_OK;
}

static void reader_close(struct reader *r)
{
    model_trace_free(r->t);
    model_stream_close(r->in);
    free(r->buf);
    free(r->scratch);
}

/* Parse from the reader's state to the end of the document (SC_OK), to a
 * later part's start (RD_STOP), or to an error (its status). */
static int reader_run(struct reader *r, int state, int top_array)
{
    for (;;) {
        const char *mark = r->p;
        unsigned depth = r->depth; /* restored when the item is parsed again */
        int rc;
        if (state == TOP_DONE)
            rc = step_done(r);
        else if (state == EV_FIRST || state == EV_NEXT)
            rc = step_events(r, &state, top_array);
        else
            rc = step_top(r, &state, &top_array);
        if (rc == RD_DONE)
            break;
        if (rc == RD_STOP)
            return RD_STOP;
        if (rc == RD_MORE) {
            r->depth = depth;
            if (refill(r, mark) != RD_OK)
                return r->err ? r->err->code : SC_EPARSE;
            continue;
        }
        if (rc == RD_ERR)
            return r->err ? r->err->code : SC_EPARSE;
    }
    if (!r->saw_events)
        return sc_error_set(r->err, SC_EPARSE, "'%s': no traceEvents array: not a Kineto trace",
                            r->source);
    return SC_OK;
}

static int finish(struct model_trace *t, const struct model_load_opts *opts, const char *source,
                  struct sc_error *err)
{
    int rc = model_trace_finish(t, err);
    if (rc == SC_OK)
        rc = model_steps_find(t, opts ? opts->step_marker : NULL, err);
    if (rc)
        sc_error_prefix(err, "'%s'", source);
    return rc;
}

int model_trace_read(struct model_stream *in, const char *source,
                     const struct model_load_opts *opts, struct model_trace **out,
                     struct sc_error *err)
{
    struct model_load_opts dflt;
    struct reader r;
    int rc;

    *out = NULL;
    if (!opts) {
        model_load_opts_default(&dflt);
        opts = &dflt;
    }
    if ((rc = reader_open(&r, in, source, opts, err)) == SC_OK &&
        (rc = reader_run(&r, TOP_BEGIN, 0)) == SC_OK &&
        (rc = finish(r.t, opts, r.source, err)) == SC_OK) {
        *out = r.t;
        r.t = NULL;
    }
    reader_close(&r);
    return rc;
}

/* ---- split parse of a large plain file --------------------------------------
 *
 * The file is cut into parts at guessed event starts ('}' ',' '{' with any
 * whitespace between). Each part is parsed on its own thread: part 0 from
 * the top of the document, the others from their guessed start as events of
 * traceEvents. A part runs until it reaches, at a true event boundary, the
 * start of a later part; that proves the later part's start (it was parsed
 * from exactly where a serial parse would be) and hands over to it. A part
 * whose start was a bad guess is never handed to and its work is dropped, so
 * the result (events, errors and their event indexes) is the serial one. */

enum { SPLIT_MIN_PART = 8 << 20, SPLIT_MAX_PARTS = 8 };

struct part {
    const char *path;
    const struct model_load_opts *opts;
    int64_t start; /* 0: the document */
    atomic_int *cancel;   /* the caller's cancel flag (common/cancel.h) */
    const int64_t *stops; /* the starts of the parts after it */
    size_t n_stops;
    struct reader r;
    int rc;
    struct sc_error err;
};

static void *part_run(void *arg)
{
    struct part *p = arg;
    struct model_stream *in = NULL;
    sc_cancel_attach(p->cancel);
    p->rc = model_stream_open_file_at(p->path, p->start, &in, &p->err);
    if (p->rc == SC_OK)
        p->rc = reader_open(&p->r, in, p->path, p->opts, &p->err);
    if (p->rc == SC_OK) {
        p->r.stops = p->stops;
        p->r.n_stops = p->n_stops;
        if (p->start == 0) {
            p->rc = reader_run(&p->r, TOP_BEGIN, 0);
        } else {
            p->r.base_off = p->start;
            p->r.depth = 2;
            p->r.in_events = 1;
            p->r.saw_events = 1;
            p->rc = reader_run(&p->r, EV_FIRST, 0);
        }
    }
    model_stream_close(in);
    return NULL;
}

/* The first event start after offset `from`, or -1. */
static int64_t guess_event_start(int fd, int64_t from)
{
    char buf[1 << 16];
    ssize_t n = pread(fd, buf, sizeof buf, from);
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] != '}')
            continue;
        ssize_t j = i + 1;
        while (j < n && is_ws[(unsigned char)buf[j]])
            j++;
        if (j >= n || buf[j] != ',')
            continue;
        for (j++; j < n && is_ws[(unsigned char)buf[j]]; j++)
            ;
        if (j < n && buf[j] == '{')
            return from + j;
    }
    return -1;
}

/* The parts for a file, or 1 when it is not worth splitting. */
static size_t plan_parts(const char *path, int64_t size, int64_t *starts)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = (size_t)(size / SPLIT_MIN_PART), n = 1;
    if (cpus < 2 || k < 2)
        return 1;
    if (k > (size_t)cpus)
        k = (size_t)cpus;
    if (k > SPLIT_MAX_PARTS)
        k = SPLIT_MAX_PARTS;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    starts[0] = 0;
    for (size_t i = 1; i < k; i++) {
        int64_t s = guess_event_start(fd, size / (int64_t)k * (int64_t)i);
        if (s > starts[n - 1])
            starts[n++] = s;
    }
    close(fd);
    return n;
}

static int read_split(const char *path, const int64_t *starts, size_t n,
                      const struct model_load_opts *opts, struct model_trace **out,
                      struct sc_error *err)
{
    struct part parts[SPLIT_MAX_PARTS];
    pthread_t tids[SPLIT_MAX_PARTS];
    int started[SPLIT_MAX_PARTS] = {0};
    int rc = SC_OK;

    memset(parts, 0, sizeof parts);
    for (size_t i = 0; i < n; i++) {
        parts[i].path = path;
        parts[i].opts = opts;
        parts[i].start = starts[i];
        parts[i].cancel = sc_cancel_flag();
        parts[i].stops = starts + i + 1;
        parts[i].n_stops = n - i - 1;
    }
    for (size_t i = 1; i < n; i++)
        started[i] = pthread_create(&tids[i], NULL, part_run, &parts[i]) == 0;
    part_run(&parts[0]);
    for (size_t i = 1; i < n; i++)
        if (started[i])
            pthread_join(tids[i], NULL);
        else
            part_run(&parts[i]);

    /* follow the chain of proven hand-overs from part 0 */
    uint64_t base = 0;
    struct model_trace *t = NULL;
    for (size_t i = 0;;) {
        struct part *p = &parts[i];
        if (p->rc != SC_OK && p->rc != RD_STOP) {
            rc = p->rc;
            if (err) {
                *err = p->err;
                if (p->r.err_in_events && (int)p->r.err_code == p->rc)
                    sc_error_set(err, p->rc, "'%s': byte %lld (traceEvents[%llu]): %s", path,
                                 (long long)p->r.err_off,
                                 (unsigned long long)(base + p->r.event_index), p->r.err_text);
                err->offset = p->r.err_off;
                err->event = p->r.err_in_events ? (int64_t)(base + p->r.event_index) : -1;
            }
            break;
        }
        if (!t) {
            t = p->r.t;
            p->r.t = NULL;
        } else if (model_trace_append(t, p->r.t)) {
            rc = sc_error_set(err, SC_ENOMEM, "'%s': out of memory", path);
            break;
        }
        base += p->r.event_index;
        if (p->rc == SC_OK)
            break;
        i = i + 1 + (size_t)p->r.stop_hit;
    }
    if (rc == SC_OK && base > opts->limits.max_events)
        rc = sc_error_set(err, SC_ELIMIT, "'%s': more than %llu events", path,
                          (unsigned long long)opts->limits.max_events);
    if (rc == SC_OK && (rc = finish(t, opts, path, err)) == SC_OK) {
        *out = t;
        t = NULL;
    }
    model_trace_free(t);
    for (size_t i = 0; i < n; i++)
        reader_close(&parts[i].r);
    return rc;
}

int model_trace_load_file(const char *path, const struct model_load_opts *opts,
                          struct model_trace **out, struct sc_error *err)
{
    struct model_load_opts dflt;
    struct model_stream *in;
    struct stat st;
    int rc, gz = 1;

    *out = NULL;
    if (!opts) {
        model_load_opts_default(&dflt);
        opts = &dflt;
    }
    /* a large plain file is parsed in parts on several threads */
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 2 * SPLIT_MIN_PART &&
        model_file_is_gzip(path, &gz, NULL) == SC_OK && !gz) {
        int64_t starts[SPLIT_MAX_PARTS];
        size_t n = plan_parts(path, st.st_size, starts);
        if (n > 1)
            return read_split(path, starts, n, opts, out, err);
    }
    if ((rc = model_stream_open_file(path, &in, err)))
        return rc;
    rc = model_trace_read(in, path, opts, out, err);
    model_stream_close(in);
    return rc;
}

int model_trace_load_mem(const void *buf, size_t n, const char *source,
                         const struct model_load_opts *opts, struct model_trace **out,
                         struct sc_error *err)
{
    struct model_stream *in;
    int rc = model_stream_open_mem(buf, n, &in, err);
    *out = NULL;
    if (rc)
        return rc;
    rc = model_trace_read(in, source, opts, out, err);
    model_stream_close(in);
    return rc;
}
