/* tests/bench/bench_index.c: how fast a structural-index JSON parse
 * (simdjson's design) could read a trace at best, beside the trace reader.
 *
 *   bench-index TRACE.json
 *
 * A structural index is found in two stages: the first classifies every
 * byte 64 at a time with vector compares (quotes, backslashes, brackets,
 * colons, commas, whitespace), takes the bytes inside strings as a prefix
 * xor of the unescaped quotes (a carry-less multiply) and writes where
 * each token starts; the second walks those starts and decodes the
 * values. This program times the first stage (AVX2; without the UTF-8
 * validation a parser also needs) and a second stage that only visits
 * each token once, so their sum is a floor for any parse of that design,
 * and times the trace reader (model_trace_load_mem: one thread, the same
 * bytes already in memory, parse and event tables) beside them. Each is
 * the least of 7 runs. tests/bench/ingest.py runs it on the control
 * trace. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_INDEX 1
#endif

#include "model/trace.h"
#include "common/banned.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

#ifdef HAVE_INDEX
#define TARGET __attribute__((target("avx2,pclmul")))

TARGET static uint64_t eq64(__m256i a, __m256i b, char c)
{
    __m256i v = _mm256_set1_epi8(c);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, v)) |
           (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, v)) << 32;
}

/* The bytes escaped by a backslash, carrying an odd run of backslashes
 * across blocks in *carry (simdjson's find_escaped). */
static uint64_t escaped(uint64_t bs, uint64_t *carry)
{
    const uint64_t even = 0x5555555555555555ull;
    bs &= ~*carry;
    uint64_t follows = bs << 1 | *carry;
    uint64_t odd_starts = bs & ~even & ~follows;
    uint64_t seq_even;
    *carry = __builtin_add_overflow(odd_starts, bs, &seq_even);
    uint64_t invert = seq_even << 1;
    return (even ^ invert) & follows;
}

/* Stage 1 over buf[0..n) (n a multiple of 64): the token starts into idx;
 * returns their count. */
TARGET static size_t stage1(const uint8_t *buf, size_t n, uint32_t *idx)
{
    size_t k = 0;
    uint64_t in_prev = 0, esc_carry = 0, scalar_prev = 0;
    for (size_t i = 0; i < n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(buf + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(buf + i + 32));
        uint64_t bs = eq64(a, b, '\\');
        uint64_t q = eq64(a, b, '"') & ~escaped(bs, &esc_carry);
        uint64_t in = (uint64_t)_mm_cvtsi128_si64(
                          _mm_clmulepi64_si128(_mm_set_epi64x(0, (long long)q), _mm_set1_epi8((char)0xff), 0)) ^
                      in_prev;
        in_prev = (uint64_t)((int64_t)in >> 63);
        uint64_t op = eq64(a, b, '{') | eq64(a, b, '}') | eq64(a, b, '[') | eq64(a, b, ']') | eq64(a, b, ':') |
                      eq64(a, b, ',');
        uint64_t ws = eq64(a, b, ' ') | eq64(a, b, '\n') | eq64(a, b, '\r') | eq64(a, b, '\t');
        uint64_t scalar = ~(op | ws | q);
        uint64_t scalar_start = scalar & ~(scalar << 1 | scalar_prev);
        scalar_prev = scalar >> 63;
        uint64_t s = (op & ~in) | (q & ~in) | (scalar_start & ~in);
        while (s) {
            idx[k++] = (uint32_t)(i + (unsigned)__builtin_ctzll(s));
            s &= s - 1;
        }
    }
    return k;
}
#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench-index TRACE.json\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || st.st_size <= 0 || st.st_size > (off_t)UINT32_MAX) {
        fprintf(stderr, "bench-index: '%s': not a readable file under 4 GB\n", argv[1]);
        return 1;
    }
    size_t n = (size_t)st.st_size, whole = (n + 63) / 64 * 64;
    uint8_t *buf = calloc(whole + 64, 1);
    uint32_t *idx = malloc((whole / 2 + 1) * sizeof *idx);
    size_t got = 0;
    while (buf && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || !idx || got != n) {
        fprintf(stderr, "bench-index: '%s': read failed\n", argv[1]);
        return 1;
    }
    memset(buf + n, ' ', whole - n);

    double reader = 1e300;
    size_t events = 0;
    for (int run = 0; run < 7; run++) {
        struct model_load_opts lo;
        struct model_trace *t;
        struct sc_error err;
        model_load_opts_default(&lo);
        double t0 = now_ms();
        if (model_trace_load_mem(buf, n, argv[1], &lo, &t, &err)) {
            fprintf(stderr, "bench-index: %s\n", err.msg);
            return 1;
        }
        double t1 = now_ms();
        events = t->n_entries;
        model_trace_free(t);
        if (t1 - t0 < reader)
            reader = t1 - t0;
    }
    printf("  trace reader (model_trace_load_mem, one thread, from memory): %.1f ms, %.0f MB/s, %zu entries\n", reader,
           (double)n / reader / 1e3, events);
#ifdef HAVE_INDEX
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("pclmul")) {
        printf("  structural index: skipped (no AVX2 and PCLMUL here)\n");
        return 0;
    }
    double s1 = 1e300, s2 = 1e300;
    size_t tokens = 0;
    uint64_t sum = 0;
    for (int run = 0; run < 7; run++) {
        double t0 = now_ms();
        tokens = stage1(buf, whole, idx);
        double t1 = now_ms();
        for (size_t j = 0; j < tokens; j++) /* each token visited once */
            sum += buf[idx[j]] == '"' ? idx[j + 1 < tokens ? j + 1 : j] - idx[j] : 1;
        double t2 = now_ms();
        if (t1 - t0 < s1)
            s1 = t1 - t0;
        if (t2 - t1 < s2)
            s2 = t2 - t1;
    }
    printf("  structural index (AVX2, no UTF-8 validation): stage 1 %.1f ms (%.0f MB/s), %zu tokens (one per %.1f "
           "bytes, %.0f an entry); a visit of each %.1f ms; together %.1f ms, x%.2f of the reader's time "
           "(checksum %llu)\n",
           s1, (double)n / s1 / 1e3, tokens, (double)n / (double)tokens, (double)tokens / (double)(events ? events : 1),
           s2, s1 + s2, (s1 + s2) / reader, (unsigned long long)(sum & 0xff));
#else
    printf("  structural index: skipped (an x86-64 build only)\n");
#endif
    free(idx);
    free(buf);
    return 0;
}
