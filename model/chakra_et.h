/* model/chakra_et.h: the file framing of MLCommons Chakra execution traces
 * (ET), which ASTRA-sim and other simulators read.
 *
 * An ET file is a sequence of protobuf messages (model/et_def.proto,
 * compiled by protoc-c), each preceded by its length as a base-128 varint:
 * one GlobalMetadata, then one Node per task (Chakra's protolib.py and
 * protoio.cc read it so). Writing appends framed messages to a growing
 * buffer; reading walks a buffer one framed message at a time, with the
 * bounds of untrusted input: a length past the end, over
 * MODEL_ET_MAX_MESSAGE, or a varint of more than 10 bytes is SC_EPARSE or
 * SC_ELIMIT naming the byte offset. */
#ifndef MODEL_CHAKRA_ET_H
#define MODEL_CHAKRA_ET_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The version of the Chakra schema model/et_def.proto holds, written into
 * GlobalMetadata.version. */
#define MODEL_ET_SCHEMA_VERSION "0.0.4"

/* Longest message the reader takes. */
#define MODEL_ET_MAX_MESSAGE (64u << 20)

/* A growing byte buffer (data from malloc). */
struct model_et_buf {
    unsigned char *data;
    size_t n, cap;
};

/* Append one message framed: its length, then its bytes. `msg` is a
 * ProtobufCMessage (protobuf-c). 0, or SC_ENOMEM. */
int model_et_append(struct model_et_buf *b, const void *msg, struct sc_error *err);

void model_et_buf_release(struct model_et_buf *b);

/* Reading: the buffer and where the next message starts. */
struct model_et_cursor {
    const unsigned char *data;
    size_t n, off;
};

/* The next framed message: *msg and *len (borrowed from the buffer).
 * Returns 1 when there was one, 0 at the end, or -1 with err set (a
 * truncated or oversized frame). */
int model_et_next(struct model_et_cursor *c, const unsigned char **msg, size_t *len, struct sc_error *err);

#endif
