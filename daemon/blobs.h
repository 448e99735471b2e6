/* daemon/blobs.h: trace bytes on disk, content-addressed by SHA-256.
 *
 * Layout under the data directory:
 *
 *     blobs/ab/abcdef...   one file per distinct content, named by its hash
 *     tmp/upload-XXXXXX    uploads being received
 *
 * An upload streams into a temp file while it is hashed (blob_writer), is
 * fsync'd, then renamed to its name and the directory fsync'd; only then
 * does the caller commit a catalog row naming it. A crash at any point
 * leaves at worst a temp file or a blob no row names: blob_sweep() removes
 * both at startup. Names come from hashes only, never from request text. */
#ifndef DAEMON_BLOBS_H
#define DAEMON_BLOBS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "daemon/digest.h"

struct blob_store;
struct blob_writer;

/* Create (if needed) and open the blob folders under data_dir. */
int blob_store_open(const char *data_dir, struct blob_store **out, struct sc_error *err);
void blob_store_free(struct blob_store *bs); /* NULL-safe */

/* Below this much free space the disk counts as full (/healthz, start). */
#define BLOB_DISK_FULL_BELOW (1u << 20)
/* Free space for the data directory's files (for an unprivileged user);
 * 1 when that is below BLOB_DISK_FULL_BELOW, 0 when not, -1 when unknown. */
int blob_store_disk_full(const struct blob_store *bs, uint64_t *free_bytes);

/* The reserve: a file of BLOB_RESERVE_BYTES in the data directory, kept
 * while there is room, so that on a full disk a delete can release it and
 * still commit (the catalog needs room for its log) and so free space. */
#define BLOB_RESERVE_BYTES (2u << 20)
/* Create or grow the reserve as far as there is room; 0 when it is whole. */
int blob_reserve_keep(struct blob_store *bs);
/* Remove the reserve: 1 when that freed space, 0 when there was none. */
int blob_reserve_release(struct blob_store *bs);

/* Create directory path and its missing parents (mode 0755). */
int blob_mkdir_p(const char *path, struct sc_error *err);

/* fsync a folder, so that a file created or renamed in it is durable
 * (after the file's own fsync). */
int blob_fsync_dir(const char *dir, struct sc_error *err);

/* "<data>/blobs/ab/<sha>" into buf. */
void blob_path(const struct blob_store *bs, const char *sha, char *buf, size_t n);

/* A new temp file to stream an upload into. */
int blob_writer_new(struct blob_store *bs, struct blob_writer **out, struct sc_error *err);
int blob_writer_write(struct blob_writer *w, const void *p, size_t n, struct sc_error *err);
uint64_t blob_writer_bytes(const struct blob_writer *w);
const char *blob_writer_path(const struct blob_writer *w); /* the temp file */
/* Finish the hash and fsync the file; sha gets its name. */
int blob_writer_finish(struct blob_writer *w, char sha[DIGEST_HEX_LEN + 1], struct sc_error *err);
/* Rename into place (replacing an identical file), then fsync the folder. */
int blob_writer_commit(struct blob_writer *w, struct sc_error *err);
/* Close; removes the temp file unless it was committed. NULL-safe. */
void blob_writer_free(struct blob_writer *w);

/* Remove a blob (missing is fine). */
int blob_remove(struct blob_store *bs, const char *sha, struct sc_error *err);
/* Re-hash a blob: SC_ENOTFOUND when missing, SC_EINVAL when its content no
 * longer hashes to its name. *bytes gets its size. */
int blob_verify(struct blob_store *bs, const char *sha, uint64_t *bytes, struct sc_error *err);

struct blob_sweep_stats {
    uint64_t temp_files;     /* temp files found (removed unless dry run) */
    uint64_t orphans;        /* blobs no row names (removed unless dry run) */
    uint64_t kept, kept_bytes;
};

/* Walk the blob folders: every temp file and every blob for which
 * keep(ctx, sha) returns 0 is an orphan, removed unless dry_run, and its
 * path written to `list` (a line each) when that is not NULL. */
int blob_sweep(struct blob_store *bs, int (*keep)(void *ctx, const char *sha), void *ctx,
               int dry_run, FILE *list, struct blob_sweep_stats *st, struct sc_error *err);

#endif
