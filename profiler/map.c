/* profiler/map.c: the integer hash map (map.h). */
#include "profiler/map.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

#define EMPTY UINT64_MAX

static size_t slot(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int grow(struct prof_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys), *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    memset(keys, 0xff, cap * sizeof *keys);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == EMPTY)
            continue;
        size_t j = slot(m->keys[i], cap);
        while (keys[j] != EMPTY)
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

static int put(struct prof_map *m, uint64_t key, uint64_t val, int replace)
{
    if (key == EMPTY)
        return -1;
    if ((m->n + 1) * 2 > m->cap && grow(m))
        return -1;
    size_t i = slot(key, m->cap);
    while (m->keys[i] != EMPTY) {
        if (m->keys[i] == key) {
            if (replace)
                m->vals[i] = val;
            return 0;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

int prof_map_put(struct prof_map *m, uint64_t key, uint64_t val)
{
    return put(m, key, val, 1);
}

int prof_map_put_new(struct prof_map *m, uint64_t key, uint64_t val)
{
    return put(m, key, val, 0);
}

int prof_map_get(const struct prof_map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap || key == EMPTY)
        return 0;
    for (size_t i = slot(key, m->cap); m->keys[i] != EMPTY; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
    return 0;
}

void prof_map_release(struct prof_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
