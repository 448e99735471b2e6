/* model/trace_lex.h: the JSON lexer of the trace reader (trace_reader.c),
 * and the reader state its parts share.
 *
 * The reader is split by concept: this lexer (strings, numbers, generic
 * values, errors with their byte offset; trace_lex.c), one traceEvents
 * entry parsed (trace_event.c) and committed to the event tables
 * (trace_commit.c), the top-level members other than traceEvents
 * (trace_meta.c), and the streaming driver (trace_reader.c). They share
 * one `struct reader`. The few lexing steps every value takes (whitespace,
 * short strings, brackets, key compares, members named by the layout of
 * the last entry of their kind) are inline here; the rest are tr_
 * functions of trace_lex.c.
 *
 * Every tr_ and inline function returns an RD_ code: RD_OK, RD_MORE (the
 * item ran into the end of the buffered data: refill and parse it again)
 * or RD_ERR (r->err is set). */
#ifndef MODEL_TRACE_LEX_H
#define MODEL_TRACE_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/error.h"
#include "model/trace.h"

/* A part of a split parse reached the start of a later part (RD_STOP): a
 * negative value, so that it cannot be read as an sc_status (all >= 0),
 * which reader_run returns beside it. */
enum { RD_OK = 0, RD_MORE = 1, RD_DONE = 3, RD_ERR = -1, RD_STOP = -2 };
enum { READ_CHUNK = 1 << 17, BUF_PAD = 64 };

struct slice {
    const char *p;
    size_t n;
};

/* A pid, tid or flow id: a number or a string. */
struct idval {
    int64_t num;
    struct slice str; /* .p NULL for numbers */
};

/* The bytes that led to one member's value in a recent entry: from where
 * the member began (after the object's '{' and the whitespace after it,
 * or right after the ',' before it) to its value: whitespace, a plain key
 * in quotes, the ':' and the whitespace after it. Entries of one kind lay
 * out their members alike, so the same bytes at the same place name the
 * same field, already checked, without lexing or matching the key again
 * (member_field). */
enum { MEMO_BYTES = 32, MEMO_MEMBERS = 24, MEMO_EVENT_SETS = 4, MEMO_ARGS_SETS = 16 };
struct member_memo {
    char bytes[MEMO_BYTES];
    uint8_t n; /* 0: none learnt */
    uint8_t field;
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

    /* the members of recent entries by their place: an entry's own by
     * its ph (the first set until ph is read), its args' by its category */
    struct member_memo event_memo[MEMO_EVENT_SETS][MEMO_MEMBERS];
    struct member_memo args_memo[MEMO_ARGS_SETS][MEMO_MEMBERS];

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

__attribute__((format(printf, 3, 4)))
int tr_fail_at(struct reader *r, const char *at, const char *fmt, ...);
/* The parser met the sentinel at p: more input, or a NUL byte in the data. */
int tr_at_sentinel(struct reader *r, const char *p);

#define FAIL(r, ...) tr_fail_at((r), NULL, __VA_ARGS__)
#define OOM(r) (sc_error_set((r)->err, SC_ENOMEM, "'%s': out of memory", (r)->source), RD_ERR)

/* A string at r->p that is not short, plain ASCII (see lex_string). */
int tr_lex_string_long(struct reader *r, struct slice *out);
/* A JSON number at r->p, as round(value * 10^scale) in *out (ties away from
 * zero); see trace_lex.c. With out NULL the number is only validated. */
int tr_lex_number(struct reader *r, int scale, int64_t *out, int *is_int);
/* One level deeper, within limits.max_depth. */
int tr_enter(struct reader *r);
/* The literal lit (true, false, null) of n bytes at r->p. */
int tr_lex_literal(struct reader *r, const char *lit, size_t n);
/* Validate and step over any value (after whitespace). */
int tr_skip_value(struct reader *r);
/* A value that must be a string. */
int tr_get_string(struct reader *r, struct slice *out, const char *what);
/* An integer-valued number (a fraction is rounded); null leaves *out as is. */
int tr_get_int(struct reader *r, int64_t *out, const char *what);
/* The raw JSON text of any value (for "Input Dims" and the like). */
int tr_get_raw(struct reader *r, struct slice *out);
/* Up to three integers of an array like [8,1,1] (grid, block). */
int tr_get_dim3(struct reader *r, int32_t v[3]);
/* A pid, tid or id: number or string. */
int tr_get_idval(struct reader *r, struct idval *v, const char *what);

/* ---- numbers ---------------------------------------------------------------- */

/* The count (0 to 8) of ASCII digits that lead the 8 bytes at p (readable:
 * the buffer pad), and their value in *value. A byte is a digit when its
 * value xor '0' is below 10; the first byte that is not is the lowest one
 * flagged (a carry out of a byte only reaches the bytes after it). */
static inline unsigned lead_digits8(const char *p, uint64_t *value)
{
    uint64_t x;
    memcpy(&x, p, 8);
    x ^= 0x3030303030303030ull;
    uint64_t t = (x | (x + 0x0606060606060606ull)) & 0xF0F0F0F0F0F0F0F0ull;
    unsigned n = t ? (unsigned)__builtin_ctzll(t) >> 3 : 8;
    *value = 0;
    if (n == 0)
        return 0;
    x <<= 8 * (8 - n); /* the digits at the low end, as leading zeros */
    x = (x * 10) + (x >> 8);
    x = (((x & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((x >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
    *value = x;
    return n;
}

/* A JSON number at r->p, as round(value * 10^scale) in *out (out NULL:
 * validated only), as tr_lex_number reads it. Most numbers of a trace are
 * plain integers of at most 16 digits (ids, pids, microsecond times):
 * those are read here, without a loop per digit; the rest there. */
static inline int lex_number(struct reader *r, int scale, int64_t *out)
{
    static const uint64_t pow10[4] = {1, 10, 100, 1000};
    static const uint64_t max[4] = {INT64_MAX, INT64_MAX / 10, INT64_MAX / 100, INT64_MAX / 1000};
    static const uint64_t pow8[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    const char *p = r->p;
    uint64_t v, lo;
    unsigned n = lead_digits8(p, &v);
    if (n == 8) {
        unsigned m = lead_digits8(p + 8, &lo);
        v = v * pow8[m] + lo;
        n += m;
    }
    char c = p[n];
    if (n == 0 || (p[0] == '0' && n > 1) || (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' ||
        c == '\0' || scale < 0 || scale > 3 || v > max[scale])
        return tr_lex_number(r, scale, out, NULL);
    if (out)
        *out = (int64_t)(v * pow10[scale]);
    r->p = p + n;
    return RD_OK;
}

/* ---- whitespace and punctuation ------------------------------------------ */

static const uint8_t is_ws[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};

/* The first byte from p that is not whitespace. */
static inline const char *past_ws(const char *p)
{
    /* usually none or one (", "): decide those without a loop */
    if (is_ws[(unsigned char)p[0]]) {
        p++;
        while (is_ws[(unsigned char)*p])
            p++;
    }
    return p;
}

/* Step over whitespace. A NUL byte it stops at (the end of the buffered
 * data, or one in the data) is left for the caller, who expects some other
 * byte there and sends this case to tr_at_sentinel (not_expected). */
static inline void pass_ws(struct reader *r)
{
    r->p = past_ws(r->p);
}

static inline int skip_ws(struct reader *r)
{
    pass_ws(r);
    if (*r->p == '\0')
        return tr_at_sentinel(r, r->p);
    return RD_OK;
}

/* After pass_ws, the byte at r->p is not the one expected: the end of the
 * buffered data, a NUL byte, or the error `what`. */
#define NOT_EXPECTED(r, ...) (*(r)->p == '\0' ? tr_at_sentinel((r), (r)->p) : FAIL((r), __VA_ARGS__))

/* tr_get_int and tr_get_idval with a plain number read inline: most
 * values they read are one. */
static inline int get_int(struct reader *r, int64_t *out, const char *what)
{
    pass_ws(r);
    if (*r->p >= '0' && *r->p <= '9')
        return lex_number(r, 0, out);
    return tr_get_int(r, out, what);
}

static inline int get_idval(struct reader *r, struct idval *v, const char *what)
{
    pass_ws(r);
    if (*r->p >= '0' && *r->p <= '9') {
        v->str.p = NULL;
        v->num = 0;
        return lex_number(r, 0, &v->num);
    }
    return tr_get_idval(r, v, what);
}

/* Skip whitespace, then require the byte c. */
static inline int expect(struct reader *r, char c, const char *what)
{
    if (*r->p == c) { /* usually right there */
        r->p++;
        return RD_OK;
    }
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != c)
        return FAIL(r, "expected %s", what);
    r->p++;
    return RD_OK;
}

/* A string at r->p (which must be '"'). *out borrows the buffer or scratch
 * until the end of the current item. Keys and most values are short plain
 * ASCII: one or two 16-byte compares find their closing quote inline (a
 * string that short is never over limits.max_string, see trace.h). */
static inline int lex_string(struct reader *r, struct slice *out)
{
#if defined(__SSE2__)
    const char *body = r->p + 1;
    for (unsigned k = 0; k < 32; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(body + k));
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
        unsigned sp = (unsigned)_mm_movemask_epi8(
                          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')),
                                       _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v))) |
                      (unsigned)_mm_movemask_epi8(v);
        if (q && !(sp & ((q & (0u - q)) - 1))) {
            unsigned n = k + (unsigned)__builtin_ctz(q);
            out->p = body;
            out->n = n;
            r->p = body + n + 1;
            return RD_OK;
        }
        if (q || sp) /* an escape, a control byte or UTF-8 first */
            break;
    }
#endif
    return tr_lex_string_long(r, out);
}
/* Step into the object or array at r->p; *more is 0 when it closes at once. */
static inline int open_container(struct reader *r, int *more)
{
    char close = *r->p == '{' ? '}' : ']';
    int rc = tr_enter(r);
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
    int rc;
    pass_ws(r);
    if (*r->p != '"')
        return NOT_EXPECTED(r, "expected a string key");
    if ((rc = lex_string(r, key)))
        return rc;
    return expect(r, ':', "':'");
}

/* Whether the bytes at p begin with memo m's (p is readable 32 bytes on:
 * the buffer pad). */
static inline int memo_match(const char *p, const struct member_memo *m)
{
    if (!m->n)
        return 0;
#if defined(__SSE2__)
    __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)m->bytes);
    __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(m->bytes + 16));
    uint32_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a0, b0)) |
                  (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a1, b1)) << 16;
    uint32_t need = m->n >= 32 ? UINT32_MAX : (1u << m->n) - 1;
    return (eq & need) == need;
#else
    return memcmp(p, m->bytes, m->n) == 0;
#endif
}

/* The next member of an object, from r->p (where the member begins) to
 * its value: *field is classify's name for its key, or memo m's when the
 * bytes there are the ones m learnt; else m learns them (m may be NULL).
 * The bytes m learns hold no NUL (the sentinel) and no escape, so the same
 * bytes again are the same valid key. */
static inline int member_field(struct reader *r, struct member_memo *m, int (*classify)(struct slice),
                               int *field)
{
    const char *start = r->p;
    if (m && memo_match(start, m)) {
        r->p = start + m->n;
        *field = m->field;
        return RD_OK;
    }
    struct slice k;
    int rc = member_key(r, &k);
    if (rc)
        return rc;
    pass_ws(r);
    *field = classify(k);
    size_t n = (size_t)(r->p - start);
    if (m && n <= MEMO_BYTES && *r->p != '\0' && !memchr(start, '\\', n)) {
        memset(m->bytes, 0, sizeof m->bytes);
        memcpy(m->bytes, start, n);
        m->n = (uint8_t)n;
        m->field = (uint8_t)*field;
    }
    return RD_OK;
}

/* After a member or element: *more is 1 past a ',', 0 past the closing bracket. */
static inline int next_item(struct reader *r, char close, int *more)
{
    if (*r->p == ',') { /* usually right there */
        r->p++;
        *more = 1;
        return RD_OK;
    }
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

/* Equality of n bytes, 8, 4, 2 and 1 at a time; n is a constant at every
 * call, so this unrolls into a few loads and compares (a libc memcmp call
 * costs more than the comparison on these short keys). */
static inline int bytes_eq(const char *a, const char *b, size_t n)
{
    uint64_t x, y;
    uint32_t x4, y4;
    uint16_t x2, y2;
    for (; n >= 8; n -= 8, a += 8, b += 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return 0;
    }
    if (n >= 4) {
        memcpy(&x4, a, 4);
        memcpy(&y4, b, 4);
        if (x4 != y4)
            return 0;
        a += 4, b += 4, n -= 4;
    }
    if (n >= 2) {
        memcpy(&x2, a, 2);
        memcpy(&y2, b, 2);
        if (x2 != y2)
            return 0;
        a += 2, b += 2, n -= 2;
    }
    return n == 0 || *a == *b;
}

#define KEY_IS(k, lit) ((k).n == sizeof(lit) - 1 && bytes_eq((k).p, lit, sizeof(lit) - 1))


#endif
