/* profiler/store.c: the in-memory event store and its string table (store.h). */
#include "profiler/store.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

/* Grow *arr (of *cap elements of elem bytes) to hold need; 0 or -1. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem, size_t *bytes)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem)
            return -1;
        c *= 2;
    }
    void *p = realloc(*arr, c * elem);
    if (!p)
        return -1;
    if (bytes)
        *bytes += (c - *cap) * elem;
    *arr = p;
    *cap = c;
    return 0;
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int within_limit(const struct prof_store *s, size_t more)
{
    return !s->max_bytes || s->bytes + more <= s->max_bytes;
}

int prof_store_init(struct prof_store *s, size_t max_bytes)
{
    memset(s, 0, sizeof *s);
    s->max_bytes = max_bytes;
    s->strings.n_slots = 1024;
    s->strings.slots = calloc(s->strings.n_slots, sizeof *s->strings.slots);
    if (!s->strings.slots)
        return -1;
    s->bytes = s->strings.n_slots * sizeof *s->strings.slots;
    if (prof_store_intern(s, "", 0) != 0 || s->strings.n != 1) {
        prof_store_release(s);
        return -1;
    }
    return 0;
}

void prof_store_release(struct prof_store *s)
{
    for (size_t i = 0; i < s->n_chunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    free(s->strings.bytes);
    free(s->strings.ids);
    free(s->strings.slots);
    free(s->devices);
    free(s->contexts);
    memset(s, 0, sizeof *s);
}

struct prof_event *prof_store_add(struct prof_store *s)
{
    size_t chunk = s->n / PROF_CHUNK_EVENTS;
    if (chunk == s->n_chunks) {
        size_t size = PROF_CHUNK_EVENTS * sizeof(struct prof_event);
        struct prof_event *c;
        if (!within_limit(s, size) ||
            grow((void **)&s->chunks, &s->cap_chunks, chunk + 1, sizeof *s->chunks, &s->bytes) ||
            !(c = malloc(size))) {
            s->dropped++;
            return NULL;
        }
        s->chunks[s->n_chunks++] = c;
        s->bytes += size;
    }
    struct prof_event *e = prof_store_at(s, s->n++);
    memset(e, 0, sizeof *e);
    return e;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int prof_store_sort_by_corr(const struct prof_store *s, uint32_t *idx, size_t n)
{
    uint64_t *keys; /* correlation id, then index: one key, no sort context */
    if (n < 2)
        return 0;
    if (!(keys = malloc(n * sizeof *keys)))
        return -1;
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint64_t)prof_store_at(s, idx[i])->corr << 32 | idx[i];
    qsort(keys, n, sizeof *keys, cmp_u64);
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t)keys[i];
    free(keys);
    return 0;
}

void prof_store_filter(struct prof_store *s, int (*keep)(const struct prof_event *e, void *arg),
                       void *arg)
{
    size_t out = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct prof_event *e = prof_store_at(s, i);
        if (!keep(e, arg))
            continue;
        if (out != i)
            *prof_store_at(s, out) = *e;
        out++;
    }
    s->n = out;
    size_t used = (out + PROF_CHUNK_EVENTS - 1) / PROF_CHUNK_EVENTS;
    while (s->n_chunks > used) {
        free(s->chunks[--s->n_chunks]);
        s->bytes -= PROF_CHUNK_EVENTS * sizeof(struct prof_event);
    }
}

static int rehash(struct prof_store *s)
{
    struct prof_strings *t = &s->strings;
    size_t n = t->n_slots * 2;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < t->n; id++) {
        size_t i = hash_bytes(t->bytes + t->ids[id].off, t->ids[id].len) & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    s->bytes += (n - t->n_slots) * sizeof *slots;
    t->slots = slots;
    t->n_slots = n;
    return 0;
}

uint32_t prof_store_intern(struct prof_store *s, const char *str, size_t n)
{
    struct prof_strings *t = &s->strings;
    if (n >= UINT32_MAX / 2)
        return 0;
    size_t mask = t->n_slots - 1, i = hash_bytes(str, n) & mask;
    for (uint32_t v; (v = t->slots[i]) != 0; i = (i + 1) & mask)
        if (t->ids[v - 1].len == n && memcmp(t->bytes + t->ids[v - 1].off, str, n) == 0)
            return v - 1;
    if ((t->n && !within_limit(s, n + 1 + 8)) || t->len + n + 1 > UINT32_MAX ||
        t->n + 2 >= t->n_slots ||
        grow((void **)&t->bytes, &t->cap, t->len + n + 1, 1, &s->bytes) ||
        grow((void **)&t->ids, &t->cap_ids, t->n + 1, sizeof *t->ids, &s->bytes))
        return 0;
    uint32_t id = (uint32_t)t->n++;
    t->ids[id].off = (uint32_t)t->len;
    t->ids[id].len = (uint32_t)n;
    memcpy(t->bytes + t->len, str, n);
    t->bytes[t->len + n] = '\0';
    t->len += n + 1;
    t->slots[i] = id + 1;
    /* a failed rehash leaves the table correct, only fuller */
    if (t->n * 2 > t->n_slots)
        (void)rehash(s);
    return id;
}

uint32_t prof_store_intern_shared(struct prof_store *s, const char *str)
{
    struct prof_strings *t = &s->strings;
    if (!str)
        return 0;
    uintptr_t p = (uintptr_t)str;
    size_t slot = (size_t)((p >> 3) ^ (p >> 11)) % (sizeof t->cache / sizeof t->cache[0]);
    if (t->cache[slot].ptr == str && strcmp(prof_store_str(s, t->cache[slot].id), str) == 0)
        return t->cache[slot].id;
    uint32_t id = prof_store_intern(s, str, strlen(str));
    t->cache[slot].ptr = str;
    t->cache[slot].id = id;
    return id;
}

#define PUT(arr, n, cap, item, key)                                                    \
    do {                                                                               \
        for (size_t i_ = 0; i_ < s->n; i_++)                                           \
            if (s->arr[i_].key == (item)->key) {                                       \
                s->arr[i_] = *(item);                                                  \
                return 0;                                                              \
            }                                                                          \
        if (grow((void **)&s->arr, &s->cap, s->n + 1, sizeof *s->arr, &s->bytes))      \
            return -1;                                                                 \
        s->arr[s->n++] = *(item);                                                      \
        return 0;                                                                      \
    } while (0)

int prof_store_put_device(struct prof_store *s, const struct prof_device *d)
{
    PUT(devices, n_devices, cap_devices, d, id);
}

int prof_store_put_context(struct prof_store *s, const struct prof_context *c)
{
    PUT(contexts, n_contexts, cap_contexts, c, id);
}
