/* model/stream.c: file, memory and gzip streams (stream.h).
 *
 * gzip members are inflated by ISA-L's igzip where the build found it
 * (STEPCAST_HAVE_ISAL, from scripts/deps.sh: 2-3x zlib's speed on the shared
 * traces, BENCHMARKS.md "Ingest"), else by zlib; both check each member's
 * CRC and size, and the stream above them is the same. */
#include "model/stream.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef STEPCAST_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

#include "common/banned.h"

void model_stream_close(struct model_stream *s)
{
    if (s)
        s->close(s);
}

/* ---- file ---------------------------------------------------------------- */

struct file_stream {
    struct model_stream base;
    int fd;
};

static ssize_t file_read(struct model_stream *s, void *buf, size_t n, struct sc_error *err)
{
    struct file_stream *f = (struct file_stream *)s;
    for (;;) {
        ssize_t r = read(f->fd, buf, n);
        if (r >= 0)
            return r;
        if (errno != EINTR) {
            sc_error_set(err, SC_EIO, "read failed: %s", strerror(errno));
            return -1;
        }
    }
}

static void file_close(struct model_stream *s)
{
    struct file_stream *f = (struct file_stream *)s;
    close(f->fd);
    free(f);
}

int model_stream_open_file(const char *path, struct model_stream **out, struct sc_error *err)
{
    return model_stream_open_file_at(path, 0, out, err);
}

int model_stream_open_file_at(const char *path, int64_t offset, struct model_stream **out,
                              struct sc_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open '%s': %s",
                            path, strerror(errno));
    if (offset && lseek(fd, (off_t)offset, SEEK_SET) != (off_t)offset) {
        int e = errno;
        close(fd);
        return sc_error_set(err, SC_EIO, "cannot seek in '%s': %s", path, strerror(e));
    }
    struct file_stream *f = malloc(sizeof *f);
    if (!f) {
        close(fd);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    f->base.read = file_read;
    f->base.close = file_close;
    f->fd = fd;
    *out = &f->base;
    return SC_OK;
}

int model_file_is_gzip(const char *path, int *is_gzip, struct sc_error *err)
{
    unsigned char magic[2] = {0, 0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open '%s': %s",
                            path, strerror(errno));
    ssize_t r = read(fd, magic, 2);
    close(fd);
    *is_gzip = r == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    return SC_OK;
}

/* ---- memory -------------------------------------------------------------- */

struct mem_stream {
    struct model_stream base;
    const unsigned char *p;
    size_t left;
    struct model_stream *then; /* read once p is used up (borrowed), or NULL */
};

static ssize_t mem_read(struct model_stream *s, void *buf, size_t n, struct sc_error *err)
{
    struct mem_stream *m = (struct mem_stream *)s;
    if (!m->left && m->then)
        return model_stream_read(m->then, buf, n, err);
    if (n > m->left)
        n = m->left;
    if (n > (size_t)SSIZE_MAX)
        n = (size_t)SSIZE_MAX;
    memcpy(buf, m->p, n);
    m->p += n;
    m->left -= n;
    return (ssize_t)n;
}

static void mem_close(struct model_stream *s)
{
    free(s);
}

int model_stream_open_mem(const void *buf, size_t n, struct model_stream **out,
                          struct sc_error *err)
{
    return model_stream_open_mem_then(buf, n, NULL, out, err);
}

int model_stream_open_mem_then(const void *buf, size_t n, struct model_stream *then,
                               struct model_stream **out, struct sc_error *err)
{
    struct mem_stream *m = malloc(sizeof *m);
    *out = NULL;
    if (!m)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    m->base.read = mem_read;
    m->base.close = mem_close;
    m->p = buf;
    m->left = n;
    m->then = then;
    *out = &m->base;
    return SC_OK;
}

/* ---- one gzip member at a time ------------------------------------------- */

enum { INFLATE_OK, INFLATE_MEMBER_END, INFLATE_ERROR };

const char *model_stream_inflater(void)
{
#ifdef STEPCAST_HAVE_ISAL
    return "ISA-L igzip";
#else
    return "zlib";
#endif
}

#ifdef STEPCAST_HAVE_ISAL
/* The member's gzip header is read here, into a header that lasts across
 * calls, and only its deflate data and trailer by isal_inflate. Given the
 * whole member (ISAL_GZIP), igzip 2.30 takes the flags of a header cut
 * between two calls from uninitialised stack memory (valgrind), so a trace
 * gzipped with its file name and read a few bytes at a time inflated or
 * failed by what the stack held. */
struct inflater {
    struct inflate_state st;
    struct isal_gzip_header hdr; /* the header read so far (no name, comment or extra kept) */
    int in_data;                 /* the header is read: inflating the member's data */
};

static void inflater_member(struct inflater *z)
{
    isal_gzip_header_init(&z->hdr);
    z->in_data = 0;
}

static int inflater_init(struct inflater *z)
{
    isal_inflate_init(&z->st);
    inflater_member(z);
    return 0;
}

static void inflater_next_member(struct inflater *z)
{
    isal_inflate_reset(&z->st);
    inflater_member(z);
}

static void inflater_end(struct inflater *z)
{
    (void)z;
}

/* INFLATE_ERROR, with *msg naming igzip's error r as zlib would. */
static int inflater_error(int r, const char **msg)
{
    switch (r) {
    case ISAL_INCORRECT_CHECKSUM:
        *msg = "incorrect data check";
        return INFLATE_ERROR;
    case ISAL_INVALID_WRAPPER:
    case ISAL_UNSUPPORTED_METHOD:
        *msg = "incorrect header";
        return INFLATE_ERROR;
    case ISAL_INVALID_LOOKBACK:
        *msg = "invalid distance too far back";
        return INFLATE_ERROR;
    default:
        *msg = "invalid deflate data";
        return INFLATE_ERROR;
    }
}

/* Inflate from *in (*n_in bytes) into *out (*n_out bytes), advancing both:
 * INFLATE_OK (progress or not: more input or room is needed),
 * INFLATE_MEMBER_END (its trailer checked), INFLATE_ERROR (*msg says why). */
static int inflater_run(struct inflater *z, const unsigned char **in, size_t *n_in,
                        unsigned char **out, size_t *n_out, const char **msg)
{
    uint32_t in_now = *n_in > UINT32_MAX ? UINT32_MAX : (uint32_t)*n_in;
    uint32_t out_now = *n_out > UINT32_MAX ? UINT32_MAX : (uint32_t)*n_out;
    z->st.next_in = (uint8_t *)*in;
    z->st.avail_in = in_now;
    z->st.next_out = *out;
    z->st.avail_out = out_now;
    int r = ISAL_DECOMP_OK;
    if (!z->in_data && (r = isal_read_gzip_header(&z->st, &z->hdr)) == ISAL_DECOMP_OK) {
        z->in_data = 1;
        z->st.crc_flag = ISAL_GZIP_NO_HDR_VER; /* the data, then its CRC and size checked */
    }
    if (z->in_data)
        r = isal_inflate(&z->st);
    /* On corrupt data igzip can leave its counts past the buffers (avail_in
     * wrapped below zero): then nothing moves, and it is an error. */
    if (z->st.avail_in > in_now || z->st.avail_out > out_now)
        return inflater_error(r < 0 ? r : ISAL_INVALID_BLOCK, msg);
    *in += in_now - z->st.avail_in;
    *n_in -= in_now - z->st.avail_in;
    *out += out_now - z->st.avail_out;
    *n_out -= out_now - z->st.avail_out;
    if (r != ISAL_DECOMP_OK && r != ISAL_END_INPUT && r != ISAL_OUT_OVERFLOW)
        return inflater_error(r, msg);
    return z->st.block_state == ISAL_BLOCK_FINISH ? INFLATE_MEMBER_END : INFLATE_OK;
}
#else
struct inflater {
    z_stream st;
};

static int inflater_init(struct inflater *z)
{
    return inflateInit2(&z->st, 15 + 16) == Z_OK ? 0 : -1;
}

static void inflater_next_member(struct inflater *z)
{
    inflateReset(&z->st);
}

static void inflater_end(struct inflater *z)
{
    inflateEnd(&z->st);
}

static int inflater_run(struct inflater *z, const unsigned char **in, size_t *n_in,
                        unsigned char **out, size_t *n_out, const char **msg)
{
    uInt in_now = *n_in > UINT32_MAX ? UINT32_MAX : (uInt)*n_in;
    uInt out_now = *n_out > UINT32_MAX ? UINT32_MAX : (uInt)*n_out;
    z->st.next_in = (unsigned char *)*in;
    z->st.avail_in = in_now;
    z->st.next_out = *out;
    z->st.avail_out = out_now;
    int r = inflate(&z->st, Z_NO_FLUSH);
    *in += in_now - z->st.avail_in;
    *n_in -= in_now - z->st.avail_in;
    *out += out_now - z->st.avail_out;
    *n_out -= out_now - z->st.avail_out;
    if (r == Z_STREAM_END)
        return INFLATE_MEMBER_END;
    if (r == Z_OK || r == Z_BUF_ERROR)
        return INFLATE_OK;
    *msg = z->st.msg ? z->st.msg : "inflate failed";
    return INFLATE_ERROR;
}
#endif

/* ---- gzip or plain --------------------------------------------------------- */

enum { DECODE_IN = 256 * 1024 };

struct decoded_stream {
    struct model_stream base;
    struct model_stream *inner;
    int own_inner;
    int gzip;            /* 1: inflate; 0: pass through */
    int between_members; /* a gzip member ended; another may follow */
    int inner_eof;
    struct inflater z;
    const unsigned char *next_in; /* gzip: in[..] not yet inflated */
    size_t avail_in;
    int64_t consumed; /* compressed bytes handed to inflate so far */
    size_t len, pos;  /* in[pos..len) not yet consumed (plain mode) */
    unsigned char in[DECODE_IN];
};

/* Refill d->in keeping unconsumed bytes; returns -1 on error. */
static int decoded_refill(struct decoded_stream *d, struct sc_error *err)
{
    size_t keep = d->avail_in;
    if (keep && d->next_in != d->in)
        memmove(d->in, d->next_in, keep);
    d->next_in = d->in;
    while (!d->inner_eof && keep < DECODE_IN) {
        ssize_t r = model_stream_read(d->inner, d->in + keep, DECODE_IN - keep, err);
        if (r < 0)
            return -1;
        assert((size_t)r <= DECODE_IN - keep); /* a read fills no more than it is given */
        if (r == 0)
            d->inner_eof = 1;
        keep += (size_t)r;
        if (r > 0)
            break;
    }
    d->avail_in = keep;
    return 0;
}

/* After a member's end: skip zero padding, start the next member if one
 * follows. Returns 1 if another member started, 0 at the end, -1 on error. */
static int decoded_next_member(struct decoded_stream *d, struct sc_error *err)
{
    for (;;) {
        while (d->avail_in && d->next_in[0] == 0) {
            d->next_in++;
            d->avail_in--;
            d->consumed++;
        }
        if (d->avail_in < 2 && !d->inner_eof) {
            if (decoded_refill(d, err))
                return -1;
            continue;
        }
        if (d->avail_in == 0)
            return 0;
        if (d->avail_in >= 2 && d->next_in[0] == 0x1f && d->next_in[1] == 0x8b) {
            inflater_next_member(&d->z);
            d->between_members = 0;
            return 1;
        }
        sc_error_set(err, SC_EPARSE, "trailing data after the gzip stream at compressed byte %lld",
                     (long long)d->consumed);
        return -1;
    }
}

static ssize_t decoded_read(struct model_stream *s, void *buf, size_t n, struct sc_error *err)
{
    struct decoded_stream *d = (struct decoded_stream *)s;
    if (!d->gzip) {
        assert(d->pos <= d->len && d->len <= DECODE_IN);
        if (d->pos < d->len) {
            size_t k = d->len - d->pos < n ? d->len - d->pos : n;
            memcpy(buf, d->in + d->pos, k);
            d->pos += k;
            return (ssize_t)k;
        }
        return model_stream_read(d->inner, buf, n, err);
    }
    if (n > (1u << 30))
        n = 1u << 30;
    unsigned char *out = buf;
    size_t room = n;
    while (room == n) {
        if (d->between_members) {
            int r = decoded_next_member(d, err);
            if (r < 0)
                return -1;
            if (r == 0)
                break;
        }
        if (d->avail_in == 0 && !d->inner_eof) {
            if (decoded_refill(d, err))
                return -1;
            continue;
        }
        size_t before = d->avail_in;
        const char *msg = NULL;
        int zr = inflater_run(&d->z, &d->next_in, &d->avail_in, &out, &room, &msg);
        assert(d->avail_in <= before && room <= n); /* inflate takes and gives within bounds */
        d->consumed += (int64_t)(before - d->avail_in);
        if (zr == INFLATE_MEMBER_END) {
            d->between_members = 1;
        } else if (zr == INFLATE_ERROR) {
            sc_error_set(err, SC_EPARSE, "corrupt gzip data at compressed byte %lld: %s",
                         (long long)d->consumed, msg);
            return -1;
        } else if (d->avail_in == before && room == n) { /* no progress */
            if (d->inner_eof) {
                sc_error_set(err, SC_EPARSE,
                             "truncated gzip stream: it ends at compressed byte %lld",
                             (long long)d->consumed);
                return -1;
            }
            if (decoded_refill(d, err))
                return -1;
        }
    }
    return (ssize_t)(n - room);
}

static void decoded_close(struct model_stream *s)
{
    struct decoded_stream *d = (struct decoded_stream *)s;
    if (d->gzip)
        inflater_end(&d->z);
    if (d->own_inner)
        model_stream_close(d->inner);
    free(d);
}

int model_stream_open_decoded(struct model_stream *inner, int take_inner,
                              struct model_stream **out, struct sc_error *err)
{
    struct decoded_stream *d = calloc(1, sizeof *d);
    *out = NULL;
    if (!d) {
        if (take_inner)
            model_stream_close(inner);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    d->base.read = decoded_read;
    d->base.close = decoded_close;
    d->inner = inner;
    d->own_inner = take_inner;
    /* read the two bytes of the magic (or to the stream's end), no more: a
     * plain stream's reader reads into its own buffer, and a buffer of
     * DECODE_IN filled here would be copied there once more */
    while (d->len < 2) {
        ssize_t r = model_stream_read(inner, d->in + d->len, 2 - d->len, err);
        if (r < 0) {
            decoded_close(&d->base);
            return err ? err->code : SC_EIO;
        }
        if (r == 0) {
            d->inner_eof = 1;
            break;
        }
        d->len += (size_t)r;
    }
    if (d->len >= 2 && d->in[0] == 0x1f && d->in[1] == 0x8b) {
        d->gzip = 1;
        if (inflater_init(&d->z)) {
            d->gzip = 0;
            decoded_close(&d->base);
            return sc_error_set(err, SC_ENOMEM, "cannot start the gzip decoder");
        }
        d->next_in = d->in;
        d->avail_in = d->len;
    }
    *out = &d->base;
    return SC_OK;
}
