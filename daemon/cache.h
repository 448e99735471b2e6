/* daemon/cache.h: built models in memory, bounded by bytes, least recently
 * used evicted first, reference-counted while requests use them.
 *
 * A request takes a reference with cache_get() and gives it back with
 * cache_release(); an entry with references is never freed, only detached
 * (cache_remove, or eviction while over the limit), and the last release
 * frees it. When the key is absent, cache_get() runs the loader once:
 * concurrent gets of the same key wait for that load instead of starting
 * their own (a rebuild after a restart happens once). Values are opaque
 * here; the cache frees them with the function given at creation. */
#ifndef DAEMON_CACHE_H
#define DAEMON_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct cache;
struct cache_entry;

typedef void (*cache_free_fn)(void *value);
/* Make the value for key: *value and its *bytes, or a status with err. */
typedef int (*cache_load_fn)(void *ctx, const char *key, void **value, size_t *bytes,
                             struct sc_error *err);

int cache_new(size_t capacity, cache_free_fn free_value, struct cache **out, struct sc_error *err);
/* Frees every entry; no reference may be held any more. NULL-safe. */
void cache_free(struct cache *c);

/* A referenced entry for key: cached (*hit = 1), or loaded now with
 * load(ctx, ...), or by the get already loading it. With load NULL, only
 * an entry ready now: SC_ENOTFOUND at once otherwise (one being loaded
 * too), and no miss counted (an HTTP thread looks before it defers). */
int cache_get(struct cache *c, const char *key, cache_load_fn load, void *ctx,
              struct cache_entry **out, int *hit, struct sc_error *err);
void *cache_value(const struct cache_entry *e);
void cache_release(struct cache *c, struct cache_entry *e);

/* Insert a value made elsewhere (a finished build), taking it over; an
 * entry already there under key is detached. */
int cache_put(struct cache *c, const char *key, void *value, size_t bytes, struct sc_error *err);
/* Count `bytes` more for referenced entry e (its value grew: a built
 * model keeping its traces whole); colder unreferenced entries are
 * evicted to stay within capacity. */
void cache_charge(struct cache *c, struct cache_entry *e, size_t bytes);
/* Detach key (freed now, or at its last release). */
void cache_remove(struct cache *c, const char *key);

struct cache_stats {
    uint64_t entries, bytes, capacity;
    uint64_t hits, misses, loads, evictions;
};
void cache_stats(struct cache *c, struct cache_stats *st);

#endif
