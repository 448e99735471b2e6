/* model/stream.h: byte streams the trace reader pulls from.
 *
 * A trace arrives as a file, a gzip file, a member of a tar archive
 * (model/archive.h), or a buffer in memory (fuzzing, tests). Each is a
 * stream with one read call; streams stack (tar member -> gzip -> JSON) and
 * the outer one owns the inner one. Nothing here holds more than one fixed-size buffer,
 * so memory stays bounded whatever the input size. */
#ifndef MODEL_STREAM_H
#define MODEL_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

struct model_stream {
    /* Up to n bytes into buf: >0 bytes read, 0 at the end, -1 on error with
     * *err filled. */
    ssize_t (*read)(struct model_stream *s, void *buf, size_t n, struct sc_error *err);
    void (*close)(struct model_stream *s);
};

static inline ssize_t model_stream_read(struct model_stream *s, void *buf, size_t n,
                                        struct sc_error *err)
{
    return s->read(s, buf, n, err);
}

/* NULL-safe; closes inner streams too. */
void model_stream_close(struct model_stream *s);

/* A file opened for reading. SC_ENOTFOUND when it does not exist. */
int model_stream_open_file(const char *path, struct model_stream **out, struct sc_error *err);
/* The same, reading from byte `offset` on. */
int model_stream_open_file_at(const char *path, int64_t offset, struct model_stream **out,
                              struct sc_error *err);

/* The bytes buf[0..n), borrowed: buf must outlive the stream. */
int model_stream_open_mem(const void *buf, size_t n, struct model_stream **out,
                          struct sc_error *err);
/* The bytes buf[0..n), then what `then` holds (borrowed, not closed with
 * it): a stream read partly into memory, read on as one. */
int model_stream_open_mem_then(const void *buf, size_t n, struct model_stream *then,
                               struct model_stream **out, struct sc_error *err);

/* Whatever `inner` holds, decompressed when it starts with the gzip magic
 * (concatenated members are read in turn), passed through otherwise. With
 * take_inner, closing the result closes inner (also on failure here);
 * otherwise inner is borrowed. A gzip stream that ends early is an SC_EPARSE
 * error naming the compressed offset. */
int model_stream_open_decoded(struct model_stream *inner, int take_inner,
                              struct model_stream **out, struct sc_error *err);

/* What inflates gzip in this build: "ISA-L igzip" or "zlib". */
const char *model_stream_inflater(void);

/* Set *is_gzip to whether the first bytes of path are the gzip magic. */
int model_file_is_gzip(const char *path, int *is_gzip, struct sc_error *err);

#endif
