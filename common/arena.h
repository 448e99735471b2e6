/* common/arena.h: a bump allocator for objects that die together.
 *
 * A trace's strings and side records live in one arena, so freeing a trace is
 * one call. Allocations are 16-byte aligned and never freed one by one.
 * Use it as `struct sc_arena a = SC_ARENA_INIT;` and sc_arena_release(&a). */
#ifndef COMMON_ARENA_H
#define COMMON_ARENA_H

#include <stddef.h>

struct sc_arena_chunk;

struct sc_arena {
    struct sc_arena_chunk *head; /* newest chunk first */
    char *cur, *end;             /* free space in the head chunk */
    size_t bytes;                /* total bytes reserved from malloc */
};

#define SC_ARENA_INIT { NULL, NULL, NULL, 0 }

/* n bytes, 16-aligned, or NULL when out of memory. n may be 0. */
void *sc_arena_alloc(struct sc_arena *a, size_t n);
/* A NUL-terminated copy of s[0..n), or NULL when out of memory. */
char *sc_arena_strndup(struct sc_arena *a, const char *s, size_t n);
/* Free every chunk; the arena is empty and reusable afterwards. */
void sc_arena_release(struct sc_arena *a);

#endif
