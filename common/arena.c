/* common/arena.c: bump allocator over a list of malloc'd chunks (arena.h). */
#include "common/arena.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

struct sc_arena_chunk {
    struct sc_arena_chunk *next;
    size_t size;
    _Alignas(16) char data[];
};

enum { ARENA_MIN_CHUNK = 64 * 1024 };

void *sc_arena_alloc(struct sc_arena *a, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n)
        return NULL;
    if ((size_t)(a->end - a->cur) < need || !a->cur) {
        size_t size = ARENA_MIN_CHUNK;
        /* grow with the arena so a big trace needs few chunks */
        if (a->bytes / 4 > size)
            size = a->bytes / 4;
        if (size > 16u << 20)
            size = 16u << 20;
        if (need > size)
            size = need;
        assert(size >= need);
        struct sc_arena_chunk *c = malloc(sizeof *c + size);
        if (!c)
            return NULL;
        c->next = a->head;
        c->size = size;
        a->head = c;
        a->cur = c->data;
        a->end = c->data + size;
        a->bytes += size;
    }
    assert(a->cur && (size_t)(a->end - a->cur) >= need);
    void *p = a->cur;
    a->cur += need;
    assert(((uintptr_t)p & 15) == 0); /* every block 16-aligned */
    return p;
}

char *sc_arena_strndup(struct sc_arena *a, const char *s, size_t n)
{
    assert(s || n == 0);
    char *p = sc_arena_alloc(a, n + 1);
    if (p) {
        if (n)
            memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void sc_arena_release(struct sc_arena *a)
{
    struct sc_arena_chunk *c = a->head;
    while (c) {
        struct sc_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->cur = a->end = NULL;
    a->bytes = 0;
}
