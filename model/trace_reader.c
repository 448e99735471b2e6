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
 * offset (of the decompressed JSON) and the traceEvents index.
 *
 * The reader's parts: the JSON lexer (trace_lex.c), one traceEvents entry
 * parsed (trace_event.c) and committed to the tables (trace_commit.c), the
 * other top-level members (trace_meta.c); this file drives them over the
 * stream, and splits a large plain file into parts read on threads. */
#include "model/trace.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cancel.h"
#include "model/steps.h"
#include "model/stream.h"
#include "model/trace_commit.h"
#include "model/trace_event.h"
#include "model/trace_lex.h"
#include "model/trace_meta.h"
#include "common/banned.h"

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
        return tr_fail_at(r, mark, "limit: %s is larger than the limit of %llu bytes",
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
    if ((rc = tr_parse_event(r, &e)))
        return rc;
    if ((uint64_t)(r->p - start) > r->lim->max_item_bytes)
        return tr_fail_at(r, start, "limit: an event of %zu bytes is larger than the limit of %llu bytes",
                          (size_t)(r->p - start), (unsigned long long)r->lim->max_item_bytes);
    if ((rc = tr_commit_event(r, &e)))
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
            if ((rc = tr_parse_member_value(r, key, 0)))
                return rc;
            if ((uint64_t)(r->p - value) > r->lim->max_item_bytes)
                return tr_fail_at(r, value, "limit: a top-level member of %zu bytes is larger than the limit of %llu bytes",
                                  (size_t)(r->p - value), (unsigned long long)r->lim->max_item_bytes);
            r->p = value;
            r->scratch_len = scratch;
            r->depth = 1;
            if ((rc = tr_parse_member_value(r, key, 1)))
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
