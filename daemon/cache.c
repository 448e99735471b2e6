/* daemon/cache.c: LRU by bytes with references and single-flight loads (cache.h).
 *
 * One mutex guards the map (chained, 1024 buckets), the LRU list of the
 * entries present and all counters. Loads run outside the mutex; waiters
 * for a load sleep on one condition variable. */
#include "daemon/cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strtab.h"
#include "common/banned.h"

#define N_BUCKETS 1024
#define KEY_MAX 80

enum state { LOADING, READY, FAILED };

struct cache_entry {
    char key[KEY_MAX];
    void *value;
    size_t bytes;
    unsigned refs;
    enum state state;
    int present;                      /* in the map and, once READY, the LRU list */
    struct sc_error err;              /* FAILED: why */
    struct cache_entry *hnext;        /* bucket chain */
    struct cache_entry *prev, *next;  /* LRU list, most recent first */
};

struct cache {
    pthread_mutex_t mu;
    pthread_cond_t loaded;
    cache_free_fn free_value;
    size_t capacity, bytes, entries;
    uint64_t hits, misses, loads, evictions;
    struct cache_entry *buckets[N_BUCKETS];
    struct cache_entry *head, *tail;
};

int cache_new(size_t capacity, cache_free_fn free_value, struct cache **out, struct sc_error *err)
{
    struct cache *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->loaded, NULL);
    c->capacity = capacity;
    c->free_value = free_value;
    *out = c;
    return SC_OK;
}

static size_t bucket(const char *key)
{
    return (size_t)sc_hash_bytes(key, strlen(key)) & (N_BUCKETS - 1);
}

static struct cache_entry *find(struct cache *c, const char *key)
{
    for (struct cache_entry *e = c->buckets[bucket(key)]; e; e = e->hnext)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static void lru_unlink(struct cache *c, struct cache_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else if (c->head == e)
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else if (c->tail == e)
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_front(struct cache *c, struct cache_entry *e)
{
    lru_unlink(c, e);
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

static void destroy(struct cache *c, struct cache_entry *e)
{
    if (e->value)
        c->free_value(e->value);
    free(e);
}

/* Take e out of the map (and the LRU list); it lives on while referenced. */
static void detach(struct cache *c, struct cache_entry *e)
{
    struct cache_entry **pp = &c->buckets[bucket(e->key)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    assert(*pp || !e->present); /* an entry present is in its bucket */
    if (*pp)
        *pp = e->hnext;
    e->hnext = NULL;
    if (e->state == READY) {
        assert(c->bytes >= e->bytes && c->entries > 0);
        lru_unlink(c, e);
        c->bytes -= e->bytes;
        c->entries--;
    }
    e->present = 0;
}

/* Evict unreferenced entries from the cold end while over capacity; the
 * entries to free are chained on *dead, freed outside the mutex. */
static void evict(struct cache *c, struct cache_entry **dead)
{
    struct cache_entry *e = c->tail;
    while (c->bytes > c->capacity && e) {
        struct cache_entry *prev = e->prev;
        if (e->refs == 0) {
            assert(e->present && e->state == READY); /* the LRU list holds ready entries of the map */
            detach(c, e);
            c->evictions++;
            e->hnext = *dead;
            *dead = e;
        }
        e = prev;
    }
}

static void free_chain(struct cache *c, struct cache_entry *dead)
{
    while (dead) {
        struct cache_entry *next = dead->hnext;
        destroy(c, dead);
        dead = next;
    }
}

static void insert(struct cache *c, struct cache_entry *e)
{
    size_t b = bucket(e->key);
    assert(!e->present && !find(c, e->key)); /* one entry a key */
    e->hnext = c->buckets[b];
    c->buckets[b] = e;
    e->present = 1;
}

static void make_ready(struct cache *c, struct cache_entry *e, void *value, size_t bytes)
{
    assert(e->state == LOADING && e->present);
    e->value = value;
    e->bytes = bytes;
    e->state = READY;
    c->bytes += bytes;
    c->entries++;
    lru_front(c, e);
}

int cache_get(struct cache *c, const char *key, cache_load_fn load, void *ctx,
              struct cache_entry **out, int *hit, struct sc_error *err)
{
    struct cache_entry *e, *dead = NULL;
    void *value = NULL;
    size_t bytes = 0;
    int rc;

    *out = NULL;
    *hit = 0;
    if (strlen(key) >= KEY_MAX)
        return sc_error_set(err, SC_EINVAL, "cache key too long");
    pthread_mutex_lock(&c->mu);
    e = find(c, key);
    if (e && e->state == READY) {
        e->refs++;
        c->hits++;
        lru_front(c, e);
        pthread_mutex_unlock(&c->mu);
        *out = e;
        *hit = 1;
        return SC_OK;
    }
    if (!load) { /* a look only: never waits for a loader */
        pthread_mutex_unlock(&c->mu);
        return sc_error_set(err, SC_ENOTFOUND, "'%s' is not cached", key);
    }
    c->misses++;
    if (e) { /* LOADING: wait for the loader */
        e->refs++;
        while (e->state == LOADING)
            pthread_cond_wait(&c->loaded, &c->mu);
        if (e->state == READY) {
            pthread_mutex_unlock(&c->mu);
            *out = e;
            return SC_OK;
        }
        rc = e->err.code;
        if (err)
            *err = e->err;
        if (--e->refs == 0)
            dead = e;
        pthread_mutex_unlock(&c->mu);
        free_chain(c, dead);
        return rc;
    }
    if (!(e = calloc(1, sizeof *e))) {
        pthread_mutex_unlock(&c->mu);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    e->state = LOADING;
    e->refs = 1;
    insert(c, e);
    c->loads++;
    pthread_mutex_unlock(&c->mu);

    rc = load(ctx, key, &value, &bytes, &e->err);

    pthread_mutex_lock(&c->mu);
    if (rc == SC_OK) {
        if (e->present) {
            make_ready(c, e, value, bytes);
            evict(c, &dead);
        } else { /* removed while loading: a private entry, freed at its last release */
            e->value = value;
            e->bytes = bytes;
            e->state = READY;
        }
        *out = e;
    } else {
        e->state = FAILED;
        if (err)
            *err = e->err;
        if (e->present)
            detach(c, e);
        if (--e->refs == 0) {
            e->hnext = dead;
            dead = e;
        }
    }
    pthread_cond_broadcast(&c->loaded);
    pthread_mutex_unlock(&c->mu);
    free_chain(c, dead);
    return rc;
}

void *cache_value(const struct cache_entry *e)
{
    return e->value;
}

void cache_release(struct cache *c, struct cache_entry *e)
{
    struct cache_entry *dead = NULL;
    if (!e)
        return;
    pthread_mutex_lock(&c->mu);
    assert(e->refs > 0); /* released once per reference taken */
    if (--e->refs == 0) {
        if (!e->present)
            dead = e;
        else
            evict(c, &dead);
    }
    pthread_mutex_unlock(&c->mu);
    free_chain(c, dead);
}

int cache_put(struct cache *c, const char *key, void *value, size_t bytes, struct sc_error *err)
{
    struct cache_entry *e, *old, *dead = NULL;
    if (strlen(key) >= KEY_MAX || !(e = calloc(1, sizeof *e))) {
        c->free_value(value);
        return sc_error_set(err, SC_ENOMEM, "cannot cache '%s'", key);
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    pthread_mutex_lock(&c->mu);
    if ((old = find(c, key))) {
        if (old->state == LOADING) { /* a load is under way: it will fill the same model */
            pthread_mutex_unlock(&c->mu);
            c->free_value(value);
            free(e);
            return SC_OK;
        }
        detach(c, old);
        if (old->refs == 0)
            dead = old;
    }
    insert(c, e);
    make_ready(c, e, value, bytes);
    evict(c, &dead);
    pthread_mutex_unlock(&c->mu);
    free_chain(c, dead);
    return SC_OK;
}

void cache_charge(struct cache *c, struct cache_entry *e, size_t bytes)
{
    struct cache_entry *dead = NULL;
    pthread_mutex_lock(&c->mu);
    e->bytes += bytes;
    if (e->present && e->state == READY) {
        c->bytes += bytes;
        evict(c, &dead);
    }
    pthread_mutex_unlock(&c->mu);
    free_chain(c, dead);
}

void cache_remove(struct cache *c, const char *key)
{
    struct cache_entry *e, *dead = NULL;
    pthread_mutex_lock(&c->mu);
    if ((e = find(c, key))) {
        detach(c, e);
        if (e->refs == 0)
            dead = e;
    }
    pthread_mutex_unlock(&c->mu);
    free_chain(c, dead);
}

void cache_stats(struct cache *c, struct cache_stats *st)
{
    pthread_mutex_lock(&c->mu);
    st->entries = c->entries;
    st->bytes = c->bytes;
    st->capacity = c->capacity;
    st->hits = c->hits;
    st->misses = c->misses;
    st->loads = c->loads;
    st->evictions = c->evictions;
    pthread_mutex_unlock(&c->mu);
}

void cache_free(struct cache *c)
{
    if (!c)
        return;
    for (size_t b = 0; b < N_BUCKETS; b++) {
        struct cache_entry *e = c->buckets[b];
        while (e) {
            struct cache_entry *next = e->hnext;
            destroy(c, e);
            e = next;
        }
    }
    pthread_cond_destroy(&c->loaded);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
