/* tests/bench/bench_inflate.c: gzip inflate speed, zlib against ISA-L.
 *
 *   bench-inflate FILE.gz...
 *
 * model/stream.c inflates with ISA-L's igzip where the build found it
 * (STEPCAST_HAVE_ISAL) and with zlib otherwise; this inflates each file
 * whole with both (CRC and size checked by each), best of 7 runs in CPU
 * time, so that `make bench` shows what the choice is worth. Without ISA-L
 * in the build it times zlib alone and says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#ifdef STEPCAST_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "common/banned.h"

enum { RUNS = 7 };

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Bytes out, or 0 on failure. */
static size_t with_zlib(const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return 0;
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int r = inflate(&z, Z_FINISH);
    size_t got = r == Z_STREAM_END ? z.total_out : 0;
    inflateEnd(&z);
    return got;
}

#ifdef STEPCAST_HAVE_ISAL
static size_t with_isal(const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
    struct inflate_state *s = malloc(sizeof *s);
    if (!s)
        return 0;
    isal_inflate_init(s);
    s->crc_flag = ISAL_GZIP;
    s->next_in = (unsigned char *)in;
    s->avail_in = (uint32_t)n;
    s->next_out = out;
    s->avail_out = (uint32_t)cap;
    int r = isal_inflate(s);
    size_t got = r == ISAL_DECOMP_OK && s->block_state == ISAL_BLOCK_FINISH ? s->total_out : 0;
    free(s);
    return got;
}
#endif

/* Best CPU seconds of RUNS inflations; *bytes gets the size out. */
static double best(size_t (*fn)(const unsigned char *, size_t, unsigned char *, size_t), const unsigned char *in,
                   size_t n, unsigned char *out, size_t cap, size_t *bytes)
{
    double b = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = cpu_now();
        *bytes = fn(in, n, out, cap);
        double t = cpu_now() - t0;
        if (t < b)
            b = t;
    }
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-inflate FILE.gz...\n");
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        unsigned char *in = NULL, *out = NULL;
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0)
            n = ftell(f);
        if (n <= 0 || n > (1L << 30) || fseek(f, 0, SEEK_SET) || !(in = malloc((size_t)n)) ||
            fread(in, 1, (size_t)n, f) != (size_t)n) {
            fprintf(stderr, "bench-inflate: cannot read '%s'\n", argv[i]);
            if (f)
                fclose(f);
            free(in);
            return 1;
        }
        fclose(f);
        /* the gzip trailer's size (mod 2^32) bounds the output */
        size_t cap = (size_t)in[n - 4] | (size_t)in[n - 3] << 8 | (size_t)in[n - 2] << 16 | (size_t)in[n - 1] << 24;
        if (!(out = malloc(cap + 1))) {
            free(in);
            return 1;
        }
        size_t bz, bi = 0;
        double tz = best(with_zlib, in, (size_t)n, out, cap + 1, &bz);
        printf("%s: %.1f MB out\n  zlib        %7.2f ms CPU  %6.0f MB/s\n", argv[i], (double)bz / 1e6, tz * 1e3,
               (double)bz / tz / 1e6);
#ifdef STEPCAST_HAVE_ISAL
        double ti = best(with_isal, in, (size_t)n, out, cap + 1, &bi);
        printf("  ISA-L igzip %7.2f ms CPU  %6.0f MB/s  x%.2f zlib's speed\n", ti * 1e3, (double)bi / ti / 1e6, tz / ti);
#else
        bi = bz;
        printf("  ISA-L igzip: not in this build (libisal-dev), traces are inflated by zlib\n");
#endif
        if (!bz || bi != bz) {
            fprintf(stderr, "bench-inflate: '%s' did not inflate alike\n", argv[i]);
            status = 1;
        }
        free(in);
        free(out);
    }
    return status;
}
