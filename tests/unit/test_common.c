/* tests/unit/test_common.c: common/: errors, arenas, interning, growing
 * arrays (large ones appended by moving pages), the int64 map and time
 * spans, each against what its header promises. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/dynlib.h"
#include "common/error.h"
#include "common/i64map.h"
#include "common/pagevec.h"
#include "common/spans.h"
#include "common/strtab.h"
#include "common/vec.h"
#include "tests/check.h"
#include "common/banned.h"

TEST(common_error_set_prefix_and_names)
{
    struct sc_error e;
    e.offset = 7;
    e.event = 9;
    CHECK_EQ_INT(sc_error_set(&e, SC_EPARSE, "bad %s at %d", "token", 3), SC_EPARSE);
    CHECK_EQ_INT(e.code, SC_EPARSE);
    CHECK_STREQ(e.msg, "bad token at 3");
    CHECK_EQ_INT(e.offset, -1); /* reset */
    CHECK_EQ_INT(e.event, -1);
    CHECK_EQ_INT(sc_error_prefix(&e, "%s", "rank0.json"), SC_EPARSE);
    CHECK_STREQ(e.msg, "rank0.json: bad token at 3");
    CHECK_EQ_INT(sc_error_set(NULL, SC_EIO, "nobody reads this"), SC_EIO);
    /* a message longer than the record is cut, still terminated */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sc_error_set(&e, SC_ELIMIT, "%s", big);
    CHECK_EQ_INT(strlen(e.msg), sizeof e.msg - 1);
    CHECK_STREQ(sc_status_name(SC_EPARSE), "parse");
    CHECK_STREQ(sc_status_name(SC_ELIMIT), "limit");
    CHECK_EQ_INT(sc_status_exit_code(SC_EINVAL), 2);
    CHECK_EQ_INT(sc_status_exit_code(SC_EPARSE), 2);
    CHECK_EQ_INT(sc_status_exit_code(SC_ENOTFOUND), 2);
    CHECK_EQ_INT(sc_status_exit_code(SC_EIO), 1);
    CHECK_EQ_INT(sc_status_exit_code(SC_ENOMEM), 1);
}

TEST(common_arena_aligns_and_copies)
{
    struct sc_arena a = SC_ARENA_INIT;
    void *p = sc_arena_alloc(&a, 3), *q = sc_arena_alloc(&a, 1), *z = sc_arena_alloc(&a, 0);
    CHECK(p && q && z);
    CHECK_EQ_INT((uintptr_t)p % 16, 0);
    CHECK_EQ_INT((uintptr_t)q % 16, 0);
    CHECK(p != q);
    /* a block bigger than a chunk */
    char *big = sc_arena_alloc(&a, 1 << 20);
    REQUIRE(big != NULL);
    memset(big, 1, 1 << 20);
    char *s = sc_arena_strndup(&a, "hello world", 5);
    CHECK_STREQ(s, "hello");
    CHECK(a.bytes >= (1u << 20));
    sc_arena_release(&a);
    CHECK_EQ_INT(a.bytes, 0);
    /* reusable after release */
    CHECK(sc_arena_alloc(&a, 8) != NULL);
    sc_arena_release(&a);
}

TEST(common_strtab_interns_once)
{
    struct sc_strtab t;
    uint32_t a, b, c, e;
    REQUIRE(sc_strtab_init(&t) == 0);
    CHECK_STREQ(sc_strtab_str(&t, 0), ""); /* 0 is the empty string */
    REQUIRE(sc_strtab_intern(&t, "gemm", 4, &a) == 0);
    REQUIRE(sc_strtab_intern(&t, "gemm_kernel", 4, &b) == 0); /* the first 4 bytes: "gemm" */
    REQUIRE(sc_strtab_intern(&t, "gemv", 4, &c) == 0);
    REQUIRE(sc_strtab_intern(&t, "", 0, &e) == 0);
    CHECK_EQ_INT(a, b);
    CHECK(a != c);
    CHECK_EQ_INT(e, 0);
    CHECK_STREQ(sc_strtab_str(&t, c), "gemv");
    CHECK_EQ_INT(sc_strtab_len(&t, a), 4);
    /* bytes with NULs inside are their own strings; many strings grow the table */
    uint32_t n1, n2;
    REQUIRE(sc_strtab_intern(&t, "a\0b", 3, &n1) == 0);
    REQUIRE(sc_strtab_intern(&t, "a\0c", 3, &n2) == 0);
    CHECK(n1 != n2);
    char name[32];
    uint32_t ids[5000];
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(name, sizeof name, "k%d", i);
        REQUIRE(sc_strtab_intern(&t, name, (size_t)len, &ids[i]) == 0);
    }
    for (int i = 0; i < 5000; i += 97) {
        uint32_t again;
        int len = snprintf(name, sizeof name, "k%d", i);
        REQUIRE(sc_strtab_intern(&t, name, (size_t)len, &again) == 0);
        CHECK_EQ_INT(again, ids[i]);
        CHECK_STREQ(sc_strtab_str(&t, ids[i]), name);
    }
    CHECK_EQ_INT(sc_hash_bytes("abc", 3), sc_hash_bytes("abc", 3));
    CHECK(sc_hash_bytes("abc", 3) != sc_hash_bytes("abd", 3));
    sc_strtab_release(&t);
}

/* sc_hash_bytes as defined: 8 bytes at a time, then the rest as a
 * little-endian number (the hash is kept in model blobs and pinned in the
 * ledger, so it must not change however it is computed). */
static uint64_t hash_as_defined(const unsigned char *b, size_t n)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * 0x9E3779B97F4A7C15ull), v;
    for (; n >= 8; b += 8, n -= 8) {
        v = 0;
        for (int k = 7; k >= 0; k--)
            v = v << 8 | b[k];
        h = (h ^ v) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    v = 0;
    for (size_t k = n; k > 0; k--)
        v = v << 8 | b[k - 1];
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h;
}

TEST(common_hash_of_every_length_and_alignment_as_defined)
{
    unsigned char buf[64];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    for (size_t at = 0; at < 8; at++)
        for (size_t n = 0; at + n <= 48; n++)
            CHECK(sc_hash_bytes(buf + at, n) == hash_as_defined(buf + at, n));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    CHECK(sc_hash_bytes("abc", 3) == UINT64_C(0xa48288f5a30223a4));
#endif
}

TEST(common_vec_grows_and_refuses_overflow)
{
    int *v = NULL;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        REQUIRE(sc_vec_reserve((void **)&v, &cap, (size_t)i + 1, sizeof *v) == 0);
        v[i] = i;
    }
    CHECK(cap >= 1000);
    CHECK_EQ_INT(v[999], 999);
    size_t before = cap;
    CHECK_EQ_INT(sc_vec_reserve((void **)&v, &cap, 10, sizeof *v), 0); /* no shrink */
    CHECK_EQ_INT(cap, before);
    /* a size that would overflow: refused, array untouched */
    int *keep = v;
    CHECK_EQ_INT(sc_vec_reserve((void **)&v, &cap, SIZE_MAX / 2, sizeof *v), -1);
    CHECK(v == keep);
    CHECK_EQ_INT(cap, before);
    free(v);
    sc_sort(NULL, 0, sizeof(int), NULL); /* an empty array may be NULL */
}

struct run_item {
    int64_t key;
    uint32_t seq; /* its place in the input: what stability keeps */
};

static int by_key(const void *a, const void *b)
{
    const struct run_item *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_key_seq(const void *a, const void *b)
{
    const struct run_item *x = a, *y = b;
    int c = by_key(a, b);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* sc_sort_runs against qsort by (key, place): the order of a stable sort,
 * on input that is one run, a few long runs (equal keys across them),
 * reversed, and random. */
TEST(common_sort_runs_is_a_stable_sort)
{
    enum { N = 3000 };
    struct run_item *v = malloc(N * sizeof *v), *want = malloc(N * sizeof *want), *tmp = malloc(N * sizeof *tmp);
    REQUIRE(v && want && tmp);
    uint32_t seed = 12345;
    for (int shape = 0; shape < 4; shape++) {
        for (uint32_t i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            int64_t key = shape == 0   ? (int64_t)i
                          : shape == 1 ? (int64_t)(i % 700) / 3 /* runs of 700, keys repeat */
                          : shape == 2 ? (int64_t)(N - i)
                                       : (int64_t)(seed >> 16) % 97;
            v[i] = want[i] = (struct run_item){key, i};
        }
        qsort(want, N, sizeof *want, by_key_seq);
        sc_sort_runs(v, tmp, N, sizeof *v, by_key);
        size_t bad = 0;
        for (size_t i = 0; i < N; i++)
            bad += v[i].key != want[i].key || v[i].seq != want[i].seq;
        CHECK_EQ_INT(bad, 0);
    }
    sc_sort_runs(v, tmp, 1, sizeof *v, by_key); /* one element: nothing to do */
    sc_sort_runs(NULL, NULL, 0, sizeof *v, by_key);
    free(v);
    free(want);
    free(tmp);
}

static int by_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* sc_select_i64 and sc_select_double against a sort: every rank k of arrays of each length up
 * to 40 and of 1,001 elements, sorted, reversed, all equal, few distinct
 * values (runs of duplicates) and random, with negatives. */
TEST(common_select_is_the_sorted_kth)
{
    enum { N = 1001 };
    int64_t *v = malloc(N * sizeof *v), *sorted = malloc(N * sizeof *sorted);
    double *d = malloc(N * sizeof *d);
    REQUIRE(v && sorted && d);
    uint32_t seed = 777;
    size_t bad = 0, tried = 0;
    for (size_t n = 1; n <= N; n = n < 40 ? n + 1 : N) {
        for (int shape = 0; shape < 5; shape++) {
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                sorted[i] = shape == 0   ? (int64_t)i
                            : shape == 1 ? -(int64_t)i
                            : shape == 2 ? 42
                            : shape == 3 ? (int64_t)(seed >> 16) % 3 - 1
                                         : (int64_t)(seed >> 8) - (1 << 23);
            }
            qsort(sorted, n, sizeof *sorted, by_i64);
            for (size_t k = 0; k < n; k += n < 40 ? 1 : 37) {
                for (size_t i = 0; i < n; i++) { /* the same values, in a shuffled order */
                    v[i] = sorted[(i * 7919 + (size_t)shape) % n];
                    d[i] = (double)v[i] / 4;
                }
                bad += sc_select_i64(v, n, k) != sorted[k];
                bad += sc_select_double(d, n, k) != (double)sorted[k] / 4;
                tried++;
            }
        }
        if (n == N)
            break;
    }
    CHECK(tried > 4000);
    CHECK_EQ_INT(bad, 0);
    free(v);
    free(sorted);
    free(d);
}

TEST(common_i64map_put_get_replace)
{
    struct sc_i64map m = SC_I64MAP_INIT;
    uint32_t v = 0;
    CHECK_EQ_INT(sc_i64map_get(&m, 5, &v), 0); /* empty */
    for (int64_t k = -5000; k < 5000; k += 3)
        REQUIRE(sc_i64map_put(&m, k * 1000003, (uint32_t)(k + 5000)) == 0);
    for (int64_t k = -5000; k < 5000; k += 3) {
        CHECK_EQ_INT(sc_i64map_get(&m, k * 1000003, &v), 1);
        CHECK_EQ_INT(v, k + 5000);
    }
    CHECK_EQ_INT(sc_i64map_get(&m, 1, &v), 0);
    REQUIRE(sc_i64map_put(&m, INT64_MAX, 7) == 0);
    REQUIRE(sc_i64map_put(&m, INT64_MAX, 8) == 0); /* replaces */
    CHECK_EQ_INT(sc_i64map_get(&m, INT64_MAX, &v), 1);
    CHECK_EQ_INT(v, 8);
    CHECK_EQ_INT(m.n, 3334 + 1);
    sc_i64map_release(&m);
    CHECK_EQ_INT(sc_i64map_get(&m, INT64_MAX, &v), 0);
}

/* The union against the definition: an instant is covered when some span
 * covers it, on a grid small enough to walk. */
static int covered_by(const struct sc_span *v, size_t n, int64_t t)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].a <= t && t < v[i].b)
            return 1;
    return 0;
}

static void check_union(const struct sc_span *in, size_t n, const struct sc_span *u, size_t m)
{
    for (size_t i = 0; i < m; i++) {
        CHECK(u[i].a < u[i].b);
        if (i)
            CHECK(u[i - 1].b < u[i].a); /* disjoint, apart: touching spans merge */
    }
    for (int64_t t = -1; t < 130; t++)
        CHECK_EQ_INT(covered_by(u, m, t), covered_by(in, n, t));
}

static int by_start(const void *x, const void *y)
{
    const struct sc_span *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* Many short runs (the starts and ends of nested calls) take the radix
 * sort: the same union as sorting first, over a range of several digits
 * and of both signs. */
TEST(common_span_union_of_many_short_runs)
{
    enum { N = 6000 };
    struct sc_span *v = malloc(N * sizeof *v), *tmp = malloc(N * sizeof *tmp), *ref = malloc(N * sizeof *ref), *u;
    REQUIRE(v && tmp && ref);
    uint64_t x = 42;
    for (size_t i = 0; i < N; i += 3) { /* an outer call's start, a nested call, the outer end */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int64_t a = (int64_t)(x >> 22) - ((int64_t)1 << 41), len = (int64_t)(x % 5000);
        v[i] = (struct sc_span){a, a};
        v[i + 1] = (struct sc_span){a + len / 3, a + len / 2};
        v[i + 2] = (struct sc_span){a + len, a + len};
    }
    memcpy(ref, v, N * sizeof *v);
    qsort(ref, N, sizeof *ref, by_start);
    size_t m = 0;
    for (size_t i = 0; i < N; i++) {
        if (m && ref[i].a <= ref[m - 1].b) {
            if (ref[i].b > ref[m - 1].b)
                ref[m - 1].b = ref[i].b;
        } else {
            ref[m++] = ref[i];
        }
    }
    CHECK_EQ_INT(sc_span_union(v, tmp, N, &u), m);
    for (size_t i = 0; i < m; i++)
        CHECK(u[i].a == ref[i].a && u[i].b == ref[i].b);
    free(v);
    free(tmp);
    free(ref);
}

static int by_value(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* The instants spans start and end at, each once and in order, whether
 * the spans nest as a thread's calls do, overlap as they will, repeat or
 * share ends: as sorting every start and end and dropping repeats gives,
 * written over the spans; and the first after a time found among them. */
TEST(common_span_instants_nested_or_not)
{
    enum { N = 3000 };
    struct sc_span *v = malloc(N * sizeof *v), *out = malloc(N * sizeof *out), *tmp = malloc(N * sizeof *tmp);
    int64_t *ref = malloc(2 * N * sizeof *ref);
    REQUIRE(v && out && tmp && ref);
    for (int shape = 0; shape < 4; shape++) {
        uint64_t x = 7 + (uint64_t)shape;
        size_t n = 0;
        int64_t at = -1000;
        while (n + 3 <= N) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int64_t len = (int64_t)(x >> 40) % 50;
            if (shape == 0) { /* a call with two calls inside, the next after it */
                v[n++] = (struct sc_span){at, at + len + 10};
                v[n++] = (struct sc_span){at + 1, at + 3};
                v[n++] = (struct sc_span){at + 3, at + len + 10};
                at += len + 10 + (int64_t)(x >> 60);
            } else if (shape == 1) { /* overlapping, not nested: each ends after the next starts */
                v[n++] = (struct sc_span){at, at + 2 * len + 1};
                at += len;
            } else if (shape == 2) { /* any order, repeats, instants */
                int64_t a = (int64_t)(x >> 33) % 200 - 100;
                v[n++] = (struct sc_span){a, a + len % 3};
            } else { /* one call open over all the others */
                v[n] = n == 0 ? (struct sc_span){-5, 1000000} : (struct sc_span){at, at + len};
                n++;
                at += len / 2;
            }
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            ref[k++] = v[i].a;
            ref[k++] = v[i].b;
        }
        qsort(ref, k, sizeof *ref, by_value);
        size_t m = 0;
        for (size_t i = 0; i < k; i++)
            if (!m || ref[m - 1] != ref[i])
                ref[m++] = ref[i];
        memcpy(out, v, n * sizeof *v);
        CHECK_EQ_INT(sc_span_instants(out, tmp, n), m);
        const int64_t *inst = (const int64_t *)(const void *)out;
        for (size_t i = 0; i < m; i++)
            CHECK(inst[i] == ref[i]);
        for (size_t i = 0; i < m; i++) { /* just before, at and between instants */
            CHECK_EQ_INT(sc_first_after(inst, m, ref[i] - 1), i);
            CHECK_EQ_INT(sc_first_after(inst, m, ref[i]), i + 1);
        }
    }
    CHECK_EQ_INT(sc_span_instants(out, tmp, 0), 0);
    CHECK_EQ_INT(sc_first_after(NULL, 0, 5), 0);
    free(tmp);
    free(out);
    free(v);
    free(ref);
}

TEST(common_span_union_sorts_runs_and_merges_seek_finds)
{
    /* sorted runs, one as a stream's spans come; touching and equal starts */
    const struct sc_span runs[] = {{0, 5}, {5, 9}, {20, 30}, {40, 41},       /* run 1 */
                                   {3, 4}, {8, 12}, {20, 25}, {60, 70},      /* run 2 */
                                   {1, 2}, {50, 55}, {55, 56}, {100, 120}};  /* run 3 */
    struct sc_span v[12], tmp[12], *u;
    memcpy(v, runs, sizeof v);
    size_t m = sc_span_union(v, tmp, 12, &u);
    check_union(runs, 12, u, m);
    CHECK_EQ_INT(m, 6); /* [0,12) [20,30) [40,41) [50,56) [60,70) [100,120) */

    /* a pseudo-random order, through the growing array and its buffer trade */
    struct sc_spans s = {0}, t = {0};
    struct sc_span all[200];
    size_t n = 0;
    uint32_t x = 12345;
    for (int i = 0; i < 200; i++) {
        x = x * 1103515245u + 12345u;
        int64_t a = (int64_t)(x >> 8) % 120, len = (int64_t)(x >> 20) % 6;
        REQUIRE(sc_spans_add(&s, a, a + len) == 0);
        if (len > 0)
            all[n++] = (struct sc_span){a, a + len};
    }
    CHECK(s.n <= n); /* empty spans are left out, continuing ones merged */
    CHECK(s.n > 1);
    REQUIRE(sc_spans_union(&s, &t) == 0);
    check_union(all, n, s.v, s.n);
    REQUIRE(sc_spans_union(&s, &t) == 0); /* a union is its own union */
    check_union(all, n, s.v, s.n);
    free(s.v);
    free(t.v);

    /* a stream's tasks back to back are one span as they come; a span
     * that starts before the last one is kept apart for the sort */
    struct sc_spans q = {0};
    REQUIRE(sc_spans_add(&q, 0, 5) == 0 && sc_spans_add(&q, 5, 9) == 0 && sc_spans_add(&q, 7, 8) == 0);
    CHECK_EQ_INT(q.n, 1);
    CHECK_EQ_INT(q.v[0].b, 9);
    REQUIRE(sc_spans_add(&q, 10, 12) == 0 && sc_spans_add(&q, 1, 3) == 0);
    CHECK_EQ_INT(q.n, 3);
    free(q.v);

    /* already sorted: done in place, tmp untouched */
    memcpy(v, (struct sc_span[]){{0, 1}, {1, 2}, {4, 6}}, 3 * sizeof *v);
    CHECK_EQ_INT(sc_span_union(v, NULL, 3, &u), 2);
    CHECK(u == v);
    CHECK(v[0].a == 0 && v[0].b == 2 && v[1].a == 4 && v[1].b == 6);

    /* seek: the first span ending after t */
    CHECK_EQ_INT(sc_span_seek(v, 2, -5), 0);
    CHECK_EQ_INT(sc_span_seek(v, 2, 1), 0);
    CHECK_EQ_INT(sc_span_seek(v, 2, 2), 1); /* [0,2) ends at 2: not after */
    CHECK_EQ_INT(sc_span_seek(v, 2, 5), 1);
    CHECK_EQ_INT(sc_span_seek(v, 2, 6), 2);
    CHECK_EQ_INT(sc_span_seek(v, 0, 0), 0);
}

/* A library's functions on first use: found and callable, the same
 * answer every time; a missing library or function named in the error. */
TEST(common_dynlib_loads_once_and_names_what_is_missing)
{
    static struct {
        __typeof__(strlen) *length;
    } fn;
    static const struct sc_dynlib_fn fns[] = {{"strlen", &fn.length, sizeof fn.length}};
    static const char *const libc_names[] = {"libc-missing.so.0", "libc.so.6", NULL};
    static struct sc_dynlib libc_lib = SC_DYNLIB_INIT(libc_names, fns);
    struct sc_error err;
    CHECK_EQ_INT(sc_dynlib_load(&libc_lib, &err), SC_OK); /* the second name loads */
    REQUIRE(fn.length != NULL);
    CHECK_EQ_INT((int)fn.length("stepcast"), 8);
    CHECK_EQ_INT(sc_dynlib_load(&libc_lib, &err), SC_OK);

    static const char *const none[] = {"libstepcast-no-such.so.1", NULL};
    static struct sc_dynlib missing = SC_DYNLIB_INIT(none, fns);
    CHECK_EQ_INT(sc_dynlib_load(&missing, &err), SC_ENOTFOUND);
    CHECK_CONTAINS(err.msg, "libstepcast-no-such.so.1 is not installed");
    CHECK_EQ_INT(sc_dynlib_load(&missing, &err), SC_ENOTFOUND); /* said again */

    static void (*nothing)(void);
    static const struct sc_dynlib_fn absent[] = {{"stepcast_no_such_function", &nothing, sizeof nothing}};
    static const char *const libc_only[] = {"libc.so.6", NULL};
    static struct sc_dynlib lacking = SC_DYNLIB_INIT(libc_only, absent);
    CHECK_EQ_INT(sc_dynlib_load(&lacking, &err), SC_ENOTFOUND);
    CHECK_CONTAINS(err.msg, "libc.so.6 has no stepcast_no_such_function");
}

/* Element i of an array built by pagevec_fill: every byte a function of
 * the array's seed, i and the byte's place. */
static unsigned char pagevec_byte(unsigned seed, size_t i, size_t b)
{
    return (unsigned char)(seed * 131u + i * 7u + b * 13u + (i >> 8));
}

static void *pagevec_fill(size_t n, size_t elem, unsigned seed, size_t *cap)
{
    void *v = NULL;
    *cap = 0;
    if (sc_pagevec_reserve(&v, cap, 0, n ? n : 1, elem))
        return NULL;
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < elem; b++)
            ((unsigned char *)v)[i * elem + b] = pagevec_byte(seed, i, b);
    return v;
}

/* sc_pagevec_append gives dst's elements then src's, whichever way it
 * takes them: pages moved (both large), a small dst put in front of a large
 * src, or a copy; for element sizes that do and do not divide a page, dst
 * ending anywhere in a page, src's mapping full (it must grow to shift) or
 * not, and the sizes of a real split parse's tables. */
TEST(common_pagevec_append_moves_or_copies_alike)
{
    static const size_t elems[] = {24, 40, 48, 64};
    static const size_t sizes[][2] = {{0, 5000},      {1, 70000},  {36891, 9087}, {1353, 32789}, {5000, 3},
                                      {100000, 100000}, {7, 7},    {6000, 8192},  {65536, 65536}, {42147, 0}};
    for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t elem = elems[e], nd = sizes[k][0], ns = sizes[k][1], dcap, scap;
            void *d = pagevec_fill(nd, elem, 1, &dcap), *s = pagevec_fill(ns, elem, 2, &scap);
            REQUIRE(d && s);
            if (ns == 8192 && sc_pagevec_reserve(&s, &scap, ns, scap + 1, elem) == 0)
                REQUIRE(scap >= ns); /* a mapping with room to spare */
            size_t dn = nd, sn = ns;
            REQUIRE(sc_pagevec_append(&d, &dcap, &dn, &s, &scap, &sn, elem) == 0);
            CHECK(s == NULL && scap == 0 && sn == 0 && dn == nd + ns);
            CHECK(dcap >= nd + ns);
            size_t bad = 0;
            for (size_t i = 0; i < nd + ns; i++)
                for (size_t b = 0; b < elem; b++)
                    bad += ((unsigned char *)d)[i * elem + b] !=
                           (i < nd ? pagevec_byte(1, i, b) : pagevec_byte(2, i - nd, b));
            if (bad)
                sc_check_fail(__FILE__, __LINE__, "elem %zu, %zu + %zu: %zu bytes differ", elem, nd, ns, bad);
            /* and grows on, its elements kept, pages moved in or not */
            REQUIRE(sc_pagevec_reserve(&d, &dcap, nd + ns, dcap + 1, elem) == 0);
            size_t last = nd + ns - 1;
            if (nd + ns)
                CHECK(((unsigned char *)d)[last * elem] ==
                      (ns ? pagevec_byte(2, ns - 1, 0) : pagevec_byte(1, nd - 1, 0)));
            sc_pagevec_free(d, dcap, elem);
        }
        /* three parts, as a split parse on more cores joins them */
        size_t ca, cb, cc, n[3] = {30000, 25000, 20000};
        void *a = pagevec_fill(n[0], elems[e], 1, &ca), *b = pagevec_fill(n[1], elems[e], 2, &cb),
             *c = pagevec_fill(n[2], elems[e], 3, &cc);
        REQUIRE(a && b && c);
        size_t na = n[0], nb = n[1], nc = n[2];
        REQUIRE(sc_pagevec_append(&a, &ca, &na, &b, &cb, &nb, elems[e]) == 0);
        REQUIRE(sc_pagevec_append(&a, &ca, &na, &c, &cc, &nc, elems[e]) == 0);
        CHECK_EQ_INT(na, n[0] + n[1] + n[2]);
        size_t bad = 0;
        for (size_t i = 0, part = 0, at = 0; i < n[0] + n[1] + n[2]; i++) {
            while (i - at >= n[part])
                at += n[part++];
            for (size_t k = 0; k < elems[e]; k++)
                bad += ((unsigned char *)a)[i * elems[e] + k] != pagevec_byte((unsigned)part + 1, i - at, k);
        }
        CHECK_EQ_INT(bad, 0);
        sc_pagevec_free(a, ca, elems[e]);
    }
    sc_pagevec_free(NULL, 0, 8);
}
