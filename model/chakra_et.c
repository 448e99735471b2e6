/* model/chakra_et.c: Chakra ET framing, varint-length-prefixed protobuf
 * messages (chakra_et.h). */
#include "model/chakra_et.h"

#include <protobuf-c/protobuf-c.h>

#include "common/vec.h"
#include "common/banned.h"

int model_et_append(struct model_et_buf *b, const void *msg, struct sc_error *err)
{
    const ProtobufCMessage *m = msg;
    size_t len = protobuf_c_message_get_packed_size(m);
    if (sc_vec_reserve((void **)&b->data, &b->cap, b->n + len + 10, 1))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t v = len;; v >>= 7) {
        if (v < 0x80) {
            b->data[b->n++] = (unsigned char)v;
            break;
        }
        b->data[b->n++] = (unsigned char)(0x80 | (v & 0x7f));
    }
    b->n += protobuf_c_message_pack(m, b->data + b->n);
    return SC_OK;
}

void model_et_buf_release(struct model_et_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->n = b->cap = 0;
}

int model_et_next(struct model_et_cursor *c, const unsigned char **msg, size_t *len, struct sc_error *err)
{
    uint64_t v = 0;
    size_t at = c->off;
    if (at >= c->n)
        return 0;
    for (int shift = 0;; shift += 7) {
        if (shift > 63 || at >= c->n) {
            sc_error_set(err, SC_EPARSE, "truncated or overlong message length at byte %zu", c->off);
            err->offset = (int64_t)c->off;
            return -1;
        }
        unsigned char byte = c->data[at++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            break;
    }
    if (v > MODEL_ET_MAX_MESSAGE) {
        sc_error_set(err, SC_ELIMIT, "message of %llu bytes at byte %zu (at most %u)", (unsigned long long)v,
                     c->off, MODEL_ET_MAX_MESSAGE);
        err->offset = (int64_t)c->off;
        return -1;
    }
    if (v > c->n - at) {
        sc_error_set(err, SC_EPARSE, "message at byte %zu runs past the end (%llu bytes, %zu left)", c->off,
                     (unsigned long long)v, c->n - at);
        err->offset = (int64_t)c->off;
        return -1;
    }
    *msg = c->data + at;
    *len = (size_t)v;
    c->off = at + (size_t)v;
    return 1;
}
