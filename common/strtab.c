/* common/strtab.c: interning with open addressing over dense ids (strtab.h). */
#include "common/strtab.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "common/banned.h"

/* The last n (< 8) bytes b[0..n) as a little-endian number, as a memcpy
 * of them into a zeroed uint64_t gives on a little-endian machine, with
 * whole loads: reading the bytes one at a time and then the eight at once
 * stalls on the stores (`before` bytes precede b in the same string). */
static uint64_t tail_bytes(const unsigned char *b, size_t n, ptrdiff_t before)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t lo, hi;
    if (n == 0)
        return 0;
    if (before >= 8 - (ptrdiff_t)n) { /* the 8 bytes ending at b + n are the string's */
        memcpy(&v, b + n - 8, 8);
        return v >> (8 * (8 - n));
    }
    if (n >= 4) {
        memcpy(&lo, b, 4);
        memcpy(&hi, b + n - 4, 4);
        return lo | (uint64_t)hi << (8 * (n - 4));
    }
    return b[0] | (uint64_t)b[n / 2] << (8 * (n / 2)) | (uint64_t)b[n - 1] << (8 * (n - 1));
#else
    (void)before;
    memcpy(&v, b, n);
    return v;
#endif
}

uint64_t sc_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * 0x9E3779B97F4A7C15ull);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        h = (h ^ v) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    h = (h ^ tail_bytes(b, n, b - (const unsigned char *)p)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h;
}

static int grow_slots(struct sc_strtab *t)
{
    size_t nslots = t->nslots ? t->nslots * 2 : 1024;
    assert((nslots & (nslots - 1)) == 0 && nslots >= (t->n + 1) * 2);
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t id = 0; id < t->n; id++) {
        size_t i = t->strs[id].hash & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = (uint32_t)id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

int sc_strtab_init(struct sc_strtab *t)
{
    uint32_t id;
    memset(t, 0, sizeof *t);
    if (sc_strtab_intern(t, "", 0, &id)) {
        sc_strtab_release(t);
        return -1;
    }
    return 0;
}

void sc_strtab_release(struct sc_strtab *t)
{
    sc_arena_release(&t->arena);
    free(t->strs);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

int sc_strtab_intern(struct sc_strtab *t, const char *s, size_t n, uint32_t *id)
{
    if (n > UINT32_MAX || t->n >= UINT32_MAX - 1)
        return -1;
    if ((t->n + 1) * 2 > t->nslots && grow_slots(t))
        return -1;
    assert(t->nslots && (t->n + 1) * 2 <= t->nslots); /* a free slot ends every probe */
    uint32_t h = (uint32_t)sc_hash_bytes(s, n);
    size_t i = h & (t->nslots - 1);
    while (t->slots[i]) {
        assert(t->slots[i] <= t->n);
        const struct sc_strtab_entry *e = &t->strs[t->slots[i] - 1];
        if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0) {
            *id = t->slots[i] - 1;
            return 0;
        }
        i = (i + 1) & (t->nslots - 1);
    }
    if (sc_vec_reserve((void **)&t->strs, &t->cap, t->n + 1, sizeof *t->strs))
        return -1;
    char *copy = sc_arena_strndup(&t->arena, s, n);
    if (!copy)
        return -1;
    t->strs[t->n] = (struct sc_strtab_entry){copy, (uint32_t)n, h};
    t->slots[i] = (uint32_t)t->n + 1;
    *id = (uint32_t)t->n++;
    assert(t->n <= t->cap);
    return 0;
}
