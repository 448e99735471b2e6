/* profiler/map.h: a hash map from 64-bit keys to 64-bit values.
 *
 * The joins done when the trace is written (correlation id -> launch call,
 * context -> device, ...) are integer lookups; this is their table. Open
 * addressing with linear probing, doubling at half load. UINT64_MAX is
 * reserved as the empty key. */
#ifndef PROFILER_MAP_H
#define PROFILER_MAP_H

#include <stddef.h>
#include <stdint.h>

struct prof_map {
    uint64_t *keys, *vals;
    size_t n, cap;
};

/* Set key -> val, replacing. 0, or -1 out of memory. */
int prof_map_put(struct prof_map *m, uint64_t key, uint64_t val);
/* Set only if absent. 0, or -1 out of memory. */
int prof_map_put_new(struct prof_map *m, uint64_t key, uint64_t val);
/* 1 and *val when present, else 0. */
int prof_map_get(const struct prof_map *m, uint64_t key, uint64_t *val);
void prof_map_release(struct prof_map *m);

#endif
