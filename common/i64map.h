/* common/i64map.h: a hash map from int64 keys to uint32 values.
 *
 * Joins in a trace are by integer ids (correlation, External id, flow id);
 * this is the map they use. Open addressing, linear probing, doubling at half
 * load; the key INT64_MIN is reserved (it marks empty slots). */
#ifndef COMMON_I64MAP_H
#define COMMON_I64MAP_H

#include <stddef.h>
#include <stdint.h>

struct sc_i64map {
    int64_t *keys;
    uint32_t *vals;
    size_t n, cap; /* cap is 0 or a power of two */
};

#define SC_I64MAP_INIT { NULL, NULL, 0, 0 }

/* Set key -> val (replacing). 0, or -1 when out of memory. */
int sc_i64map_put(struct sc_i64map *m, int64_t key, uint32_t val);
/* 1 and *val if present, else 0. */
int sc_i64map_get(const struct sc_i64map *m, int64_t key, uint32_t *val);
void sc_i64map_release(struct sc_i64map *m);

#endif
