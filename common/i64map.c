/* common/i64map.c: open-addressing int64 -> uint32 map (i64map.h). */
#include "common/i64map.h"

#include <assert.h>
#include <stdlib.h>

#include "common/banned.h"

#define EMPTY INT64_MIN

static size_t slot_of(int64_t key, size_t cap)
{
    assert(cap && (cap & (cap - 1)) == 0);
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

static int grow(struct sc_i64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    int64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        keys[i] = EMPTY;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == EMPTY)
            continue;
        size_t j = slot_of(m->keys[i], cap);
        while (keys[j] != EMPTY)
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    assert(m->n * 2 < cap);
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int sc_i64map_put(struct sc_i64map *m, int64_t key, uint32_t val)
{
    if (key == EMPTY)
        return -1;
    if ((m->n + 1) * 2 > m->cap && grow(m))
        return -1;
    assert((m->n + 1) * 2 <= m->cap); /* a free slot ends every probe */
    size_t j = slot_of(key, m->cap);
    while (m->keys[j] != EMPTY) {
        if (m->keys[j] == key) {
            m->vals[j] = val;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->n++;
    assert(m->n < m->cap);
    return 0;
}

int sc_i64map_get(const struct sc_i64map *m, int64_t key, uint32_t *val)
{
    if (!m->cap || key == EMPTY)
        return 0;
    size_t j = slot_of(key, m->cap);
    while (m->keys[j] != EMPTY) {
        if (m->keys[j] == key) {
            *val = m->vals[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void sc_i64map_release(struct sc_i64map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->n = m->cap = 0;
}
