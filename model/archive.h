/* model/archive.h: tar archives of traces, read member by member, and
 * small archives of files written in memory (model_archive_tar).
 *
 * Users send a job as a .tar.gz of its ranks' traces. The archive is read
 * by libarchive: ustar, pax (long names, large sizes) and GNU (long names)
 * headers, compressed with gzip, bzip2, xz, lzma, zstd, lz4 or compress (or
 * not), streamed: a member is a model_stream read straight out of the
 * archive, so memory stays bounded whatever the archive's size. Only tar
 * formats are read; anything else (a plain or gzip'd trace, a zip) is "not
 * a tar archive". Member names are for messages only: nothing is written
 * under them. */
#ifndef MODEL_ARCHIVE_H
#define MODEL_ARCHIVE_H

#include <stddef.h>

#include "common/error.h"

struct model_stream;
struct model_archive;

/* An archive in a file, or in buf[0..n) (borrowed: it must outlive the
 * archive). SC_EPARSE when it is not a tar archive (with or without a
 * compression), naming `label`. */
int model_archive_open_file(const char *path, struct model_archive **out, struct sc_error *err);
int model_archive_open_mem(const void *buf, size_t n, const char *label, struct model_archive **out,
                           struct sc_error *err);

/* The next regular file: *name (borrowed until the next call) and *member, a
 * stream of its bytes valid until the next call (do not close it). SC_OK
 * with *member NULL at the end of the archive; SC_EPARSE for a corrupt or
 * truncated archive. Directories, links and devices are skipped. */
int model_archive_next(struct model_archive *a, const char **name, struct model_stream **member,
                       struct sc_error *err);

void model_archive_free(struct model_archive *a); /* NULL-safe */

/* Whether a file is a tar archive (compressed or not): a first header reads.
 * Without libarchive, a file that looks like one (a tar header, or a name
 * ending .tar, .tgz, .tar.gz and the like) is the error that libarchive is
 * missing, and any other file is not one: plain traces need no libarchive. */
int model_archive_is_tar(const char *path, int *yes, struct sc_error *err);

/* A file to put in an archive. */
struct model_tar_file {
    const char *name; /* under 100 bytes, no "..": written as it is */
    const void *data;
    size_t n;
};

/* A ustar archive of files[0..n) in *out (from malloc; *len bytes): a
 * 512-byte header and the data padded to 512 bytes per file, mode 0644,
 * then the two zero blocks that end an archive. Needs no libarchive.
 * SC_EINVAL for a name that does not fit. */
int model_archive_tar(const struct model_tar_file *files, size_t n, unsigned char **out, size_t *len,
                      struct sc_error *err);

#endif
