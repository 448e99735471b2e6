/* common/strtab.h: string interning.
 *
 * A trace repeats a few thousand distinct names (kernels, operators, args)
 * across millions of events; each event stores a 32-bit id instead. Ids are
 * dense, 0 is always the empty string, and the bytes stay valid (and
 * NUL-terminated) until sc_strtab_release(). Not thread-safe. */
#ifndef COMMON_STRTAB_H
#define COMMON_STRTAB_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"

#define SC_STR_NONE UINT32_MAX

struct sc_strtab_entry {
    const char *s;
    uint32_t len;
    uint32_t hash;
};

struct sc_strtab {
    struct sc_arena arena;
    struct sc_strtab_entry *strs; /* by id */
    size_t n, cap;
    uint32_t *slots; /* open addressing: id + 1, 0 = empty */
    size_t nslots;   /* power of two */
};

/* 0, or -1 when out of memory. */
int sc_strtab_init(struct sc_strtab *t);
void sc_strtab_release(struct sc_strtab *t);

/* Store s[0..n) once; *id gets its id. 0, or -1 when out of memory. */
int sc_strtab_intern(struct sc_strtab *t, const char *s, size_t n, uint32_t *id);

static inline const char *sc_strtab_str(const struct sc_strtab *t, uint32_t id)
{
    assert(id < t->n);
    return t->strs[id].s;
}
static inline size_t sc_strtab_len(const struct sc_strtab *t, uint32_t id)
{
    assert(id < t->n);
    return t->strs[id].len;
}

/* The hash used by the table, for callers that key their own maps by name. */
uint64_t sc_hash_bytes(const void *p, size_t n);

#endif
