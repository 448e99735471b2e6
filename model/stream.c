/* model/stream.c: file, memory and gzip streams (stream.h). */
#include "model/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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

/* ---- gzip or plain --------------------------------------------------------- */

enum { DECODE_IN = 256 * 1024 };

struct decoded_stream {
    struct model_stream base;
    struct model_stream *inner;
    int own_inner;
    int gzip;            /* 1: inflate; 0: pass through */
    int between_members; /* a gzip member ended; another may follow */
    int inner_eof;
    z_stream z;
    int64_t consumed; /* compressed bytes handed to inflate so far */
    size_t len, pos;  /* in[pos..len) not yet consumed (plain mode) */
    unsigned char in[DECODE_IN];
};

/* Refill d->in keeping unconsumed bytes; returns -1 on error. */
static int decoded_refill(struct decoded_stream *d, struct sc_error *err)
{
    size_t keep = d->z.avail_in;
    if (keep && d->z.next_in != d->in)
        memmove(d->in, d->z.next_in, keep);
    d->z.next_in = d->in;
    while (!d->inner_eof && keep < DECODE_IN) {
        ssize_t r = model_stream_read(d->inner, d->in + keep, DECODE_IN - keep, err);
        if (r < 0)
            return -1;
        if (r == 0)
            d->inner_eof = 1;
        keep += (size_t)r;
        if (r > 0)
            break;
    }
    d->z.avail_in = (uInt)keep;
    return 0;
}

/* After a member's end: skip zero padding, start the next member if one
 * follows. Returns 1 if another member started, 0 at the end, -1 on error. */
static int decoded_next_member(struct decoded_stream *d, struct sc_error *err)
{
    for (;;) {
        while (d->z.avail_in && d->z.next_in[0] == 0) {
            d->z.next_in++;
            d->z.avail_in--;
            d->consumed++;
        }
        if (d->z.avail_in < 2 && !d->inner_eof) {
            if (decoded_refill(d, err))
                return -1;
            continue;
        }
        if (d->z.avail_in == 0)
            return 0;
        if (d->z.avail_in >= 2 && d->z.next_in[0] == 0x1f && d->z.next_in[1] == 0x8b) {
            inflateReset(&d->z);
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
    d->z.next_out = buf;
    d->z.avail_out = (uInt)n;
    while (d->z.avail_out == n) {
        if (d->between_members) {
            int r = decoded_next_member(d, err);
            if (r < 0)
                return -1;
            if (r == 0)
                break;
        }
        if (d->z.avail_in == 0) {
            if (d->inner_eof) {
                sc_error_set(err, SC_EPARSE,
                             "truncated gzip stream: it ends at compressed byte %lld",
                             (long long)d->consumed);
                return -1;
            }
            if (decoded_refill(d, err))
                return -1;
            continue;
        }
        uInt before = d->z.avail_in;
        int zr = inflate(&d->z, Z_NO_FLUSH);
        d->consumed += before - d->z.avail_in;
        if (zr == Z_STREAM_END) {
            d->between_members = 1;
        } else if (zr == Z_BUF_ERROR) {
            if (d->inner_eof && d->z.avail_in == 0) {
                sc_error_set(err, SC_EPARSE,
                             "truncated gzip stream: it ends at compressed byte %lld",
                             (long long)d->consumed);
                return -1;
            }
            if (decoded_refill(d, err))
                return -1;
        } else if (zr != Z_OK) {
            sc_error_set(err, SC_EPARSE, "corrupt gzip data at compressed byte %lld: %s",
                         (long long)d->consumed, d->z.msg ? d->z.msg : "inflate failed");
            return -1;
        }
    }
    return (ssize_t)(n - d->z.avail_out);
}

static void decoded_close(struct model_stream *s)
{
    struct decoded_stream *d = (struct decoded_stream *)s;
    if (d->gzip)
        inflateEnd(&d->z);
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
    /* read until two bytes are known (or the stream ends) to see the magic */
    while (d->len < 2) {
        ssize_t r = model_stream_read(inner, d->in + d->len, DECODE_IN - d->len, err);
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
        if (inflateInit2(&d->z, 15 + 16) != Z_OK) {
            d->gzip = 0;
            decoded_close(&d->base);
            return sc_error_set(err, SC_ENOMEM, "cannot start the gzip decoder");
        }
        d->z.next_in = d->in;
        d->z.avail_in = (uInt)d->len;
    }
    *out = &d->base;
    return SC_OK;
}
