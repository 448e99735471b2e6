/* daemon/blobs.h: immutable files, content-addressed by SHA-256: the
 * traces uploaded and the models built from them (model_blob.h).
 *
 * Layout under the blob directory (--blobs, default DATA-DIR/blobs):
 *
 *     ab/abcdef...                 one file per distinct content, named by its hash
 *     .tmp/PID.HOST.XXXXXX         files being written, named by their writer
 *
 * A blob is written to a temp file while it is hashed (blob_writer, or
 * blob_put for bytes in memory), is fsync'd, then renamed to its name and
 * the folder fsync'd; only then does the caller commit a catalog row naming
 * it. A crash at any point leaves at worst a temp file or a blob no row
 * names: blob_sweep() removes both at startup. Replicas on several hosts
 * may share one blob directory (a network filesystem): a blob never
 * changes once named, and the sweep leaves another replica's files alone
 * (BLOB_STALE_S). Names come from hashes only, never from request text.
 *
 * What callers need of a blob is put, get, exists and remove by digest
 * (and streaming a large one in or reading it as a file), so that an
 * object store could come behind this interface. */
#ifndef DAEMON_BLOBS_H
#define DAEMON_BLOBS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "daemon/digest.h"

struct blob_store;
struct blob_writer;

/* Create (if needed) and open the blob directory dir; its reserve
 * (below) goes in data_dir. shared: other replicas may write into dir (it
 * was named by --blobs), so a blob no row names is only an orphan once it
 * is older than BLOB_STALE_S (another replica may be about to commit the
 * row naming it). */
int blob_store_open(const char *dir, const char *data_dir, int shared, struct blob_store **out,
                    struct sc_error *err);
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

/* "<dir>/ab/<sha>" into buf: where a blob is read as a file. */
void blob_path(const struct blob_store *bs, const char *sha, char *buf, size_t n);

/* A new temp file to stream a blob into. */
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

/* Store n bytes as a blob (temp file, fsync, rename); sha gets its name.
 * Storing what is already there is fine (the content is the same). */
int blob_put(struct blob_store *bs, const void *p, size_t n, char sha[DIGEST_HEX_LEN + 1],
             struct sc_error *err);
/* Read a blob whole into *out (from malloc) and *n; SC_ENOTFOUND when it
 * is missing, SC_ELIMIT when it holds more than max bytes. The content is
 * not re-hashed: a reader of a format checks its own checksum. */
int blob_get(struct blob_store *bs, const char *sha, size_t max, void **out, size_t *n,
             struct sc_error *err);
/* 1 when the blob is there, 0 when not. */
int blob_exists(struct blob_store *bs, const char *sha);
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

/* A temp file is left over when its writer is gone: a process of this
 * host that no longer runs, or (another host's, whose processes cannot be
 * seen from here) a file unmodified for BLOB_STALE_S; a blob of a shared
 * directory that no row names is an orphan once unmodified that long.
 * Writers touch their files far more often (an upload's body keeps a
 * minimum rate, head-timeout). */
#define BLOB_STALE_S 600

/* Walk the blob folders: every temp file left over and every blob for
 * which keep(ctx, sha) returns 0 (as above when shared) is removed unless
 * dry_run, and its path written to `list` (a line each) when that is not
 * NULL. */
int blob_sweep(struct blob_store *bs, int (*keep)(void *ctx, const char *sha), void *ctx,
               int dry_run, FILE *list, struct blob_sweep_stats *st, struct sc_error *err);

#endif
