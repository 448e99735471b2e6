/* profiler/store.h: everything recorded in one process, in memory until
 * the trace is written.
 *
 * Events are appended by one thread only (the consumer that converts CUPTI
 * buffers), into fixed-size chunks, so an event's address never changes and
 * nothing is copied as the store grows. Strings are interned once and
 * referred to by id (0 is the empty string). Devices and contexts go to
 * small side tables. Memory is bounded: past `max_bytes` new events
 * are counted as dropped instead of stored. Not thread-safe. */
#ifndef PROFILER_STORE_H
#define PROFILER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/event.h"

#define PROF_CHUNK_EVENTS 16384

struct prof_device {
    uint32_t id;
    uint32_t name;                 /* string id */
    uint64_t global_mem;           /* bytes */
    uint32_t sms, warp_size, major, minor;
    uint32_t max_threads_block, max_warps_sm;
    uint32_t regs_block, regs_sm, smem_block, smem_sm;
};

struct prof_context {
    uint32_t id, device;
};

struct prof_strings {
    char *bytes;           /* NUL-terminated strings back to back */
    size_t len, cap;
    struct {
        uint32_t off, len;
    } *ids;                /* by id */
    size_t n, cap_ids;
    uint32_t *slots;       /* open addressing: id + 1, 0 = empty */
    size_t n_slots;        /* power of two */
    struct {
        const char *ptr;
        uint32_t id;
    } cache[256];          /* CUPTI's shared name pointers -> id */
};

struct prof_store {
    struct prof_event **chunks;
    size_t n_chunks, cap_chunks;
    size_t n;              /* events */
    struct prof_strings strings;
    struct prof_device *devices;
    size_t n_devices, cap_devices;
    struct prof_context *contexts;
    size_t n_contexts, cap_contexts;
    size_t bytes;          /* memory held */
    size_t max_bytes;      /* 0 = unbounded */
    uint64_t dropped;      /* events not stored: over max_bytes or out of memory */
};

/* 0, or -1 when out of memory. */
int prof_store_init(struct prof_store *s, size_t max_bytes);
void prof_store_release(struct prof_store *s);

/* A zeroed slot for one more event, or NULL (counted in s->dropped). */
struct prof_event *prof_store_add(struct prof_store *s);

static inline struct prof_event *prof_store_at(const struct prof_store *s, size_t i)
{
    return &s->chunks[i / PROF_CHUNK_EVENTS][i % PROF_CHUNK_EVENTS];
}

/* Sort the event indices idx[0..n) by correlation id (the order of the
 * calls that launched them), equal ids in index order. 0, or -1 out of
 * memory (idx unchanged). */
int prof_store_sort_by_corr(const struct prof_store *s, uint32_t *idx, size_t n);

/* Drop the events for which keep() is false, keeping order. */
void prof_store_filter(struct prof_store *s, int (*keep)(const struct prof_event *e, void *arg),
                       void *arg);

/* The id of s[0..n) (stored once), or 0 (the empty string) when out of memory
 * or over the limit. */
uint32_t prof_store_intern(struct prof_store *s, const char *str, size_t n);
/* The same for a NUL-terminated string owned by CUPTI and shared between
 * records (kernel names): repeated pointers are found without hashing. */
uint32_t prof_store_intern_shared(struct prof_store *s, const char *str);

static inline const char *prof_store_str(const struct prof_store *s, uint32_t id)
{
    return s->strings.bytes + s->strings.ids[id].off;
}
static inline size_t prof_store_strlen(const struct prof_store *s, uint32_t id)
{
    return s->strings.ids[id].len;
}

/* Side tables: replace the entry with the same id, or append. 0 / -1. */
int prof_store_put_device(struct prof_store *s, const struct prof_device *d);
int prof_store_put_context(struct prof_store *s, const struct prof_context *c);

#endif
