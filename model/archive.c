/* model/archive.c: tar archives through libarchive (archive.h), loaded
 * the first time an archive is opened (common/dynlib.h). */
#include "model/archive.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/dynlib.h"
#include "model/stream.h"
#include "common/banned.h"

enum { ARCHIVE_BLOCK = 64 * 1024 };

/* The libarchive functions used, by their own prototypes. */
static struct {
    __typeof__(archive_read_new) *read_new;
    __typeof__(archive_read_free) *read_free;
    __typeof__(archive_read_support_format_tar) *support_format_tar;
    __typeof__(archive_read_support_filter_gzip) *support_filter_gzip;
    __typeof__(archive_read_support_filter_bzip2) *support_filter_bzip2;
    __typeof__(archive_read_support_filter_xz) *support_filter_xz;
    __typeof__(archive_read_support_filter_lzma) *support_filter_lzma;
    __typeof__(archive_read_support_filter_zstd) *support_filter_zstd;
    __typeof__(archive_read_support_filter_lz4) *support_filter_lz4;
    __typeof__(archive_read_support_filter_compress) *support_filter_compress;
    __typeof__(archive_read_open_filename) *open_filename;
    __typeof__(archive_read_open_memory) *open_memory;
    __typeof__(archive_read_next_header) *next_header;
    __typeof__(archive_read_data) *read_data;
    __typeof__(archive_error_string) *error_string;
    __typeof__(archive_errno) *errno_of;
    __typeof__(archive_entry_filetype) *entry_filetype;
    __typeof__(archive_entry_pathname) *entry_pathname;
    __typeof__(archive_entry_pathname_utf8) *entry_pathname_utf8;
} la;

#define LA_FN(field, name) {name, &la.field, sizeof la.field}
static const struct sc_dynlib_fn la_fns[] = {
    LA_FN(read_new, "archive_read_new"),
    LA_FN(read_free, "archive_read_free"),
    LA_FN(support_format_tar, "archive_read_support_format_tar"),
    LA_FN(support_filter_gzip, "archive_read_support_filter_gzip"),
    LA_FN(support_filter_bzip2, "archive_read_support_filter_bzip2"),
    LA_FN(support_filter_xz, "archive_read_support_filter_xz"),
    LA_FN(support_filter_lzma, "archive_read_support_filter_lzma"),
    LA_FN(support_filter_zstd, "archive_read_support_filter_zstd"),
    LA_FN(support_filter_lz4, "archive_read_support_filter_lz4"),
    LA_FN(support_filter_compress, "archive_read_support_filter_compress"),
    LA_FN(open_filename, "archive_read_open_filename"),
    LA_FN(open_memory, "archive_read_open_memory"),
    LA_FN(next_header, "archive_read_next_header"),
    LA_FN(read_data, "archive_read_data"),
    LA_FN(error_string, "archive_error_string"),
    LA_FN(errno_of, "archive_errno"),
    LA_FN(entry_filetype, "archive_entry_filetype"),
    LA_FN(entry_pathname, "archive_entry_pathname"),
    LA_FN(entry_pathname_utf8, "archive_entry_pathname_utf8"),
};
static const char *const la_sonames[] = {"libarchive.so.13", NULL};
static struct sc_dynlib la_lib = SC_DYNLIB_INIT(la_sonames, la_fns);

struct member_stream {
    struct model_stream base;
    struct model_archive *archive;
};

struct model_archive {
    struct archive *a;
    struct member_stream member;
    char label[256]; /* the file or buffer, for messages */
};

static int archive_fail(struct model_archive *m, struct sc_error *err)
{
    const char *why = la.error_string(m->a);
    return sc_error_set(err, SC_EPARSE, "%s: %s", m->label, why ? why : "unreadable tar archive");
}

static ssize_t member_read(struct model_stream *s, void *buf, size_t n, struct sc_error *err)
{
    struct model_archive *m = ((struct member_stream *)s)->archive;
    la_ssize_t r = la.read_data(m->a, buf, n);
    if (r < 0) {
        archive_fail(m, err);
        return -1;
    }
    return (ssize_t)r;
}

static void member_close(struct model_stream *s)
{
    (void)s; /* owned by the archive */
}

/* A reader of tar formats and the compressions libarchive does itself (no
 * external programs). */
static int archive_start(const char *label, struct model_archive **out, struct sc_error *err)
{
    struct model_archive *m = NULL;
    int rc;
    *out = NULL;
    if ((rc = sc_dynlib_load(&la_lib, err)))
        return sc_error_prefix(err, "cannot read tar archives");
    m = calloc(1, sizeof *m);
    if (!m || !(m->a = la.read_new())) {
        free(m);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    snprintf(m->label, sizeof m->label, "%s", label);
    m->member.base.read = member_read;
    m->member.base.close = member_close;
    m->member.archive = m;
    la.support_format_tar(m->a); /* ustar, pax, GNU, v7 */
    la.support_filter_gzip(m->a);
    la.support_filter_bzip2(m->a);
    la.support_filter_xz(m->a);
    la.support_filter_lzma(m->a);
    la.support_filter_zstd(m->a);
    la.support_filter_lz4(m->a);
    la.support_filter_compress(m->a);
    *out = m;
    return SC_OK;
}

static int archive_opened(struct model_archive *m, int r, struct model_archive **out,
                          struct sc_error *err)
{
    if (r != ARCHIVE_OK) {
        int rc = la.errno_of(m->a) == ENOENT
                     ? sc_error_set(err, SC_ENOTFOUND, "cannot open '%s'", m->label)
                     : archive_fail(m, err);
        model_archive_free(m);
        return rc;
    }
    *out = m;
    return SC_OK;
}

int model_archive_open_file(const char *path, struct model_archive **out, struct sc_error *err)
{
    struct model_archive *m = NULL;
    int rc = archive_start(path, &m, err);
    if (rc)
        return rc;
    return archive_opened(m, la.open_filename(m->a, path, ARCHIVE_BLOCK), out, err);
}

int model_archive_open_mem(const void *buf, size_t n, const char *label, struct model_archive **out,
                           struct sc_error *err)
{
    struct model_archive *m = NULL;
    int rc = archive_start(label, &m, err);
    if (rc)
        return rc;
    /* libarchive takes a non-const pointer but only reads */
    return archive_opened(m, la.open_memory(m->a, (void *)(uintptr_t)buf, n), out, err);
}

int model_archive_next(struct model_archive *m, const char **name, struct model_stream **member,
                       struct sc_error *err)
{
    *name = NULL;
    *member = NULL;
    for (;;) {
        struct archive_entry *e;
        int r = la.next_header(m->a, &e);
        if (r == ARCHIVE_EOF)
            return SC_OK;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            return archive_fail(m, err);
        if (la.entry_filetype(e) != AE_IFREG)
            continue;
        const char *n = la.entry_pathname(e);
        if (!n)
            n = la.entry_pathname_utf8(e);
        *name = n ? n : "";
        *member = &m->member.base;
        return SC_OK;
    }
}

void model_archive_free(struct model_archive *m)
{
    if (!m)
        return;
    la.read_free(m->a);
    free(m);
}

/* A tar header's magic ("ustar" at offset 257), or a compressed file
 * named as a tar archive is. */
static int looks_like_tar(const char *path, const unsigned char *head, size_t n)
{
    static const char *const names[] = {".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst",
                                        ".tar.lzma"};
    if (n >= 262 && !memcmp(head + 257, "ustar", 5))
        return 1;
    size_t len = strlen(path);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t k = strlen(names[i]);
        if (len >= k && !strcmp(path + len - k, names[i]))
            return 1;
    }
    return 0;
}

/* Whether a 512-byte block is a tar header: its checksum field (octal, at
 * 148) is the sum of its bytes with that field as spaces. */
static int tar_checksum_ok(const unsigned char *h)
{
    unsigned long sum = 0, want = 0;
    size_t i = 148;
    for (size_t k = 0; k < 512; k++)
        sum += k >= 148 && k < 156 ? ' ' : h[k];
    while (i < 156 && h[i] == ' ')
        i++;
    if (i == 156 || h[i] < '0' || h[i] > '7')
        return 0;
    for (; i < 156 && h[i] >= '0' && h[i] <= '7'; i++)
        want = want * 8 + (unsigned long)(h[i] - '0');
    return sum == want;
}

/* Whether path holds, decompressed when gzip, a JSON text ('{' or '[' after
 * white space) that no tar header starts: a trace, which spares loading
 * libarchive (and reading through it) to ask whether it is an archive. */
static int json_not_tar(const char *path)
{
    unsigned char buf[512];
    struct model_stream *raw = NULL, *s = NULL;
    struct sc_error ignored;
    size_t n = 0, i = 0;
    if (model_stream_open_file(path, &raw, &ignored) || model_stream_open_decoded(raw, 1, &s, &ignored))
        return 0;
    for (ssize_t got = 1; n < sizeof buf && got > 0; n += got > 0 ? (size_t)got : 0)
        got = model_stream_read(s, buf + n, sizeof buf - n, &ignored);
    model_stream_close(s);
    while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
        i++;
    return i < n && (buf[i] == '{' || buf[i] == '[') && (n < sizeof buf || !tar_checksum_ok(buf));
}

int model_archive_is_tar(const char *path, int *yes, struct sc_error *err)
{
    struct model_archive *m = NULL;
    struct archive_entry *e;
    struct sc_error ignored;
    unsigned char head[512];
    *yes = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open '%s': %s",
                            path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (json_not_tar(path))
        return SC_OK;
    if (sc_dynlib_load(&la_lib, err)) {
        /* without libarchive, plain and gzipped traces still read: only what
         * looks like a tar archive is refused */
        if (looks_like_tar(path, head, got))
            return sc_error_prefix(err, "cannot read tar archives");
        return SC_OK;
    }
    if (model_archive_open_file(path, &m, &ignored))
        return SC_OK; /* unreadable as an archive: not one */
    int r = la.next_header(m->a, &e);
    *yes = r == ARCHIVE_OK || r == ARCHIVE_WARN;
    model_archive_free(m);
    return SC_OK;
}

/* ---- writing ------------------------------------------------------------------- */

/* An octal field of `width` bytes: digits then NUL. */
static void tar_octal(unsigned char *at, size_t width, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%0*llo", (int)width - 1, (unsigned long long)v);
    memcpy(at, buf, width - 1);
    at[width - 1] = '\0';
}

int model_archive_tar(const struct model_tar_file *files, size_t n, unsigned char **out, size_t *len,
                      struct sc_error *err)
{
    size_t total = 1024;
    *out = NULL;
    *len = 0;
    for (size_t k = 0; k < n; k++) {
        size_t nl = strlen(files[k].name);
        if (!nl || nl >= 100 || strstr(files[k].name, "..") || files[k].n > 077777777777ull)
            return sc_error_set(err, SC_EINVAL, "cannot archive '%s': a name of 1 to 99 bytes without '..' "
                                "and under 8 GiB", files[k].name);
        total += 512 + (files[k].n + 511) / 512 * 512;
    }
    unsigned char *buf = calloc(1, total);
    if (!buf)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned char *h = buf + at;
        unsigned sum = 0;
        memcpy(h, files[k].name, strlen(files[k].name));
        tar_octal(h + 100, 8, 0644);
        tar_octal(h + 108, 8, 0);
        tar_octal(h + 116, 8, 0);
        tar_octal(h + 124, 12, files[k].n);
        tar_octal(h + 136, 12, 0);
        memset(h + 148, ' ', 8); /* the checksum counts itself as spaces */
        h[156] = '0';
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
        for (size_t i = 0; i < 512; i++)
            sum += h[i];
        tar_octal(h + 148, 7, sum);
        at += 512;
        if (files[k].n)
            memcpy(buf + at, files[k].data, files[k].n);
        at += (files[k].n + 511) / 512 * 512;
    }
    *out = buf;
    *len = total;
    return SC_OK;
}
