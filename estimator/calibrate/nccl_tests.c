/* estimator/calibrate/nccl_tests.c: the nccl-tests output reader (nccl_tests.h).
 *
 * Line by line: a tag ("[1,0]<stdout>:") is cut off; `#` lines may name the
 * collective, a device (with its host) or the column layout; a result row
 * is "size count type [redop] [root] time algbw busbw wrong [time algbw
 * busbw wrong]", read from both ends because old alltoall outputs leave
 * the redop column blank. Anything else is a log line and skipped. */
#include "estimator/calibrate/nccl_tests.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/costs/coll_lines.h"
#include "common/banned.h"

#define MAX_TOKENS 24
#define MAX_HOSTS 4096

struct line {
    const char *tok[MAX_TOKENS];
    size_t len[MAX_TOKENS];
    int n;
};

static void tokenize(const char *s, const char *end, struct line *l)
{
    l->n = 0;
    while (s < end) {
        while (s < end && isspace((unsigned char)*s))
            s++;
        if (s >= end)
            break;
        const char *b = s;
        while (s < end && !isspace((unsigned char)*s))
            s++;
        if (l->n == MAX_TOKENS) {
            l->n++; /* too many: not a row */
            return;
        }
        l->tok[l->n] = b;
        l->len[l->n] = (size_t)(s - b);
        l->n++;
    }
}

static int tok_is(const struct line *l, int i, const char *word)
{
    return i < l->n && l->len[i] == strlen(word) && memcmp(l->tok[i], word, l->len[i]) == 0;
}

/* A finite number filling the whole token. */
static int tok_num(const struct line *l, int i, double *out)
{
    char buf[64];
    if (i >= l->n || l->len[i] == 0 || l->len[i] >= sizeof buf)
        return -1;
    memcpy(buf, l->tok[i], l->len[i]);
    buf[l->len[i]] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || errno || !isfinite(v) || end == buf || isalpha((unsigned char)buf[0]))
        return -1;
    *out = v;
    return 0;
}

static int tok_is_uint(const struct line *l, int i)
{
    if (i >= l->n)
        return 0;
    for (size_t k = 0; k < l->len[i]; k++)
        if (!isdigit((unsigned char)l->tok[i][k]))
            return 0;
    return l->len[i] > 0;
}

/* The collective a file name or a binary name denotes, at a word start. */
static enum model_coll_op kind_from_name(const char *name)
{
    if (!name)
        return MODEL_COLL_UNKNOWN;
    for (const char *p = name; *p; p++) {
        if (p != name && isalnum((unsigned char)p[-1]))
            continue;
        if (!isalpha((unsigned char)*p))
            continue;
        enum model_coll_op op = model_coll_op_parse(p);
        if (op != MODEL_COLL_UNKNOWN)
            return op;
    }
    return MODEL_COLL_UNKNOWN;
}

/* The largest rows, where the two-decimal rounding matters least. */
int calib_nct_ranks_from_ratio(const struct nct_run *r)
{
    size_t best = r->n_rows;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].algbw_gbps[0] > 0 && (best == r->n_rows || r->rows[i].bytes > r->rows[best].bytes))
            best = i;
    if (best == r->n_rows)
        return 0;
    double ratio = r->rows[best].busbw_gbps[0] / r->rows[best].algbw_gbps[0];
    double n;
    switch (r->kind) {
    case MODEL_COLL_ALLREDUCE: /* 2(n-1)/n */
        n = ratio < 1.999 ? 2 / (2 - ratio) : 0;
        break;
    case MODEL_COLL_ALLGATHER:
    case MODEL_COLL_REDUCESCATTER:
    case MODEL_COLL_ALLTOALL: /* (n-1)/n */
        n = ratio < 0.999 ? 1 / (1 - ratio) : 0;
        break;
    default:
        return 0; /* factor 1: the ratio says nothing */
    }
    /* two-decimal columns: accept only a clear integer */
    if (n < 1.5 || n > 1e6 || fabs(n - nearbyint(n)) > 0.05 * n)
        return 0;
    return (int)nearbyint(n);
}

struct hosts {
    char **v;
    size_t n;
};

static int host_add(struct hosts *h, const char *s, size_t len)
{
    for (size_t i = 0; i < h->n; i++)
        if (strlen(h->v[i]) == len && memcmp(h->v[i], s, len) == 0)
            return 0;
    if (h->n == MAX_HOSTS)
        return 0; /* counted as at least this many */
    if ((h->n & (h->n - 1)) == 0) {
        char **v = realloc(h->v, (h->n ? h->n * 2 : 8) * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
    }
    char *c = malloc(len + 1);
    if (!c)
        return -1;
    memcpy(c, s, len);
    c[len] = '\0';
    h->v[h->n++] = c;
    return 0;
}

static void hosts_free(struct hosts *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i]);
    free(h->v);
}

/* "#  Rank  0 Group  0 Pid  37755 on HOST device  0 [000f:01:00] NAME" */
static int device_line(const char *end, const struct line *l, struct nct_run *r,
                       struct hosts *h, int *n_ranks)
{
    int on = -1;
    for (int i = 2; i < l->n; i++)
        if (tok_is(l, i, "on")) {
            on = i;
            break;
        }
    if (on < 0 || on + 1 >= l->n)
        return 0;
    (*n_ranks)++;
    if (host_add(h, l->tok[on + 1], l->len[on + 1]))
        return -1;
    if (!r->device[0]) {
        const char *b = memchr(l->tok[on + 1], ']', (size_t)(end - l->tok[on + 1]));
        if (b) {
            b++;
            while (b < end && isspace((unsigned char)*b))
                b++;
            const char *e = end;
            while (e > b && isspace((unsigned char)e[-1]))
                e--;
            size_t n = (size_t)(e - b) < sizeof r->device - 1 ? (size_t)(e - b) : sizeof r->device - 1;
            memcpy(r->device, b, n);
            r->device[n] = '\0';
        }
    }
    return 0;
}

/* A result row, or 1 when the line is not one. */
static int result_row(const struct line *l, int groups, struct nct_row *row)
{
    if (l->n > MAX_TOKENS || l->n < 3 + 4 || !tok_is_uint(l, 0) || !tok_is_uint(l, 1) ||
        !isalpha((unsigned char)l->tok[2][0]))
        return 1;
    int tail = 4 * groups;
    if (l->n < 3 + tail)
        tail = 4; /* a row with only the out-of-place run */
    if (l->n - tail > 5)
        return 1; /* more than [redop] [root] between type and times */
    if (tok_num(l, 0, &row->bytes) || tok_num(l, 1, &row->count))
        return 1;
    for (int g = 0; g < 2; g++) {
        row->time_us[g] = -1;
        row->algbw_gbps[g] = row->busbw_gbps[g] = 0;
    }
    for (int g = 0; g < tail / 4; g++) {
        int at = l->n - tail + 4 * g;
        if (tok_num(l, at, &row->time_us[g]) || tok_num(l, at + 1, &row->algbw_gbps[g]) ||
            tok_num(l, at + 2, &row->busbw_gbps[g]))
            return -1;
        /* a physical range (coll_lines.h): 0 to 1,000 s, 0 to 1e5 GB/s */
        if (!(row->time_us[g] >= 0 && row->time_us[g] <= 1e3 * COLL_MAX_LATENCY_US) ||
            !(row->algbw_gbps[g] >= 0 && row->algbw_gbps[g] <= COLL_MAX_BUSBW_GBPS) ||
            !(row->busbw_gbps[g] >= 0 && row->busbw_gbps[g] <= COLL_MAX_BUSBW_GBPS))
            return -1;
    }
    return 0;
}

int calib_nct_parse(const char *text, size_t len, const char *name_hint, struct nct_run *out,
              struct sc_error *err)
{
    struct nct_run r = {.kind = MODEL_COLL_UNKNOWN};
    struct hosts hosts = {0};
    int n_ranks = 0, groups = 2, status = SC_OK;
    size_t cap = 0;
    const char *p = text, *stop = text + len;

    memset(out, 0, sizeof *out);
    while (p < stop) {
        const char *eol = memchr(p, '\n', (size_t)(stop - p));
        const char *line_end = eol ? eol : stop, *s = p, *line_start = p;
        p = eol ? eol + 1 : stop;
        /* an MPI output tag: "[1,0]<stdout>:" */
        if (s < line_end && *s == '[') {
            const char *tag = NULL;
            for (const char *q = s; q + 1 < line_end && q - s < 64; q++)
                if (q[0] == '>' && q[1] == ':') {
                    tag = q + 2;
                    break;
                }
            if (tag)
                s = tag;
        }
        while (s < line_end && (*s == ' ' || *s == '\t'))
            s++;
        struct line l;
        if (s < line_end && *s == '#') {
            tokenize(s + 1, line_end, &l);
            if (l.n > MAX_TOKENS)
                continue;
            if (tok_is(&l, 0, "Collective") && tok_is(&l, 1, "test") && tok_is(&l, 2, "starting:") &&
                l.n >= 4) {
                char name[64];
                size_t n = l.len[3] < sizeof name - 1 ? l.len[3] : sizeof name - 1;
                memcpy(name, l.tok[3], n);
                name[n] = '\0';
                enum model_coll_op op = kind_from_name(name);
                if (op != MODEL_COLL_UNKNOWN)
                    r.kind = op;
            } else if (tok_is(&l, 0, "Rank") && tok_is_uint(&l, 1)) {
                if (device_line(line_end, &l, &r, &hosts, &n_ranks)) {
                    status = sc_error_set(err, SC_ENOMEM, "out of memory");
                    goto fail;
                }
            } else if (tok_is(&l, 0, "size") && tok_is(&l, 1, "count")) {
                int times = 0;
                for (int i = 2; i < l.n; i++)
                    times += tok_is(&l, i, "time");
                if (times == 1 || times == 2)
                    groups = times;
            }
            continue;
        }
        tokenize(s, line_end, &l);
        struct nct_row row;
        int rc = result_row(&l, groups, &row);
        if (rc > 0)
            continue; /* a log line */
        if (rc < 0) {
            status = sc_error_set(err, SC_EPARSE, "malformed result row (time or bandwidth not a number, or outside 0 to %g us and 0 to %g GB/s)",
                                  1e3 * COLL_MAX_LATENCY_US, COLL_MAX_BUSBW_GBPS);
            err->offset = (int64_t)(line_start - text);
            goto fail;
        }
        if (r.n_rows == NCT_MAX_ROWS) {
            status = sc_error_set(err, SC_ELIMIT, "more than %d result rows", NCT_MAX_ROWS);
            err->offset = (int64_t)(line_start - text);
            goto fail;
        }
        if (r.n_rows == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct nct_row *v = realloc(r.rows, ncap * sizeof *v);
            if (!v) {
                status = sc_error_set(err, SC_ENOMEM, "out of memory");
                goto fail;
            }
            r.rows = v;
            cap = ncap;
        }
        r.rows[r.n_rows++] = row;
    }
    if (r.n_rows == 0) {
        status = sc_error_set(err, SC_EPARSE, "no nccl-tests result rows (size count type ... time algbw busbw)");
        goto fail;
    }
    if (r.kind == MODEL_COLL_UNKNOWN)
        r.kind = kind_from_name(name_hint);
    r.nodes = (int)hosts.n;
    r.ranks = n_ranks;
    if (!r.ranks && r.kind != MODEL_COLL_UNKNOWN) {
        r.ranks = calib_nct_ranks_from_ratio(&r);
        r.ranks_derived = r.ranks > 0;
    }
    hosts_free(&hosts);
    *out = r;
    return SC_OK;
fail:
    hosts_free(&hosts);
    free(r.rows);
    return status;
}

void calib_nct_run_release(struct nct_run *r)
{
    if (!r)
        return;
    free(r->rows);
    memset(r, 0, sizeof *r);
}
