/* daemon/model_blob.h: a built model (built.h) as bytes, stored as a blob
 * (blobs.h) when it is built, so that every replica loads it from there on
 * first use and never reads its traces again to rebuild it.
 *
 * The format (version MODEL_BLOB_VERSION):
 *
 *     "SCMODEL\0"             magic, 8 bytes
 *     u32 version             MODEL_BLOB_VERSION
 *     u32 layout              the sizes of the records' fields below, hashed:
 *                             a blob written by a build whose records differ
 *                             (another version, another architecture) is
 *                             refused, never misread
 *     u64 payload bytes
 *     char[64] checksum       SHA-256 of the payload, hex
 *     payload                 the traces it was built from (api_trace), its
 *                             job (each rank's trace header: model_trace_shed
 *                             keeps no more), its graph (graph.h: names, then
 *                             each array, counted), its collectives' waits,
 *                             the notes of each graph rank's trace
 *                             (trace_notes.h: each array, then the rest)
 *
 * Each record is written field by field (model_blob.c lists the fields of
 * each struct), never its padding, and a text field's bytes after its NUL
 * are zeros: the same model is always the same bytes, and no byte of the
 * blob comes from memory the model never set. Version 1 wrote records as
 * raw memory, version 2 had no notes, version 3 no mark of the layers of
 * FSDP's units nor of the optimizer's step in them; such a blob is stale (refused, its
 * model built again from its traces). Numbers are the host's (the layout word includes the byte order).
 * Counts, array sizes, string ids and every index are checked when read
 * (notes: by event, below their trace's events, their tracks, layers and
 * hooks in range), and the graph passes model_graph_check(), so a truncated, corrupt or
 * other-version blob is a clear error and no crash. */
#ifndef DAEMON_MODEL_BLOB_H
#define DAEMON_MODEL_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "daemon/digest.h"

struct blob_store;
struct built_model;
struct model_load_opts;

#define MODEL_BLOB_VERSION 4
#define MODEL_BLOB_HEADER 88 /* magic, version, layout, payload bytes, checksum */

/* m as a blob's bytes: *out from malloc, *n long. */
int model_blob_write(const struct built_model *m, void **out, size_t *n, struct sc_error *err);

/* m's blob written into the blob store a chunk at a time, never whole in
 * memory: the same bytes as model_blob_write's; sha gets its name, *n its
 * size. */
int model_blob_put(const struct built_model *m, struct blob_store *bs, char sha[DIGEST_HEX_LEN + 1], size_t *n,
                   struct sc_error *err);

/* The model a blob holds, as model `id` with the load options opts (its
 * step marker: the model's). SC_EINVAL saying what is wrong with it. */
int model_blob_read(const void *p, size_t n, const char *id, const struct model_load_opts *opts,
                    struct built_model **out, struct sc_error *err);

/* 1 when p is a built model's blob of another format version (or written
 * by a build whose records differ): not corrupt, only stale; its model is
 * built again from its traces. 0 otherwise. */
int model_blob_stale(const void *p, size_t n);

/* A payload with its header in front (what model_blob_write does last):
 * *out from malloc, *n long. For the fuzz target, which feeds payloads. */
int model_blob_seal(const void *payload, size_t len, void **out, size_t *n, struct sc_error *err);

#endif
