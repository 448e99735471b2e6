/* profiler/tests/bench.c: what the profiler costs, measured.
 *
 *   prof-bench [RECORDS]
 *
 * Builds RECORDS synthetic CUPTI records (default 2,000,000) in the CUDA 13
 * layout, in 4 MiB buffers as CUPTI fills them, with a realistic mix (every
 * kernel launch: a runtime call and a kernel; every 4th: a copy too; every
 * 16th: an event record and a stream wait; NCCL launches through the
 * driver), then times, best of 5:
 *
 *   memcpy       copying the same bytes (the floor for touching them);
 *   iterate      the real cuptiActivityGetNextRecord over them, no work;
 *   convert      iterate + convert into the event store (what the flush
 *                thread does for every buffer);
 *   write        the Kineto JSON of the converted events, to a sink that
 *                discards it (joins, sorting, formatting; no disk);
 *   pool         a buffer lent and returned (bufferRequested +
 *                bufferCompleted, what CUPTI's threads pay), 1 and 4 threads.
 *
 * Prints one line per figure with the ratio to memcpy where it applies. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "profiler/bufpool.h"
#include "profiler/convert.h"
#include "profiler/cupti_api.h"
#include "profiler/json.h"
#include "profiler/kineto.h"
#include "profiler/nccl.h"
#include "profiler/tests/synth.h"
#include "common/banned.h"

#define BUF_BYTES (4u << 20)
#define RUNS 5

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct capture {
    struct synth_buf *bufs;
    size_t n_bufs, records, bytes;
};

static const char *const kernels[] = {
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, F, A)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>(R)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
};

static void generate(struct capture *c, const struct prof_layout *l, size_t want)
{
    size_t cap = 16;
    uint32_t corr = 1;
    uint64_t t = 1735689600000000000ull;
    c->bufs = calloc(cap, sizeof *c->bufs);
    c->n_bufs = c->records = c->bytes = 0;
    while (c->records < want) {
        if (c->n_bufs == cap) {
            c->bufs = realloc(c->bufs, (cap *= 2) * sizeof *c->bufs);
        }
        struct synth_buf *b = &c->bufs[c->n_bufs++];
        synth_init(b, l, 1);
        while (b->len + 1024 < BUF_BYTES && c->records < want) {
            uint32_t k = corr % 64 == 0 ? 3 : corr % 3;
            synth_api(b, k != 3, k == 3 ? 652 : 211, t, t + 4000, 100, 101, corr);
            synth_kernel(b, t + 10000, t + 90000, corr, 0, 1, k == 3 ? 9 : 7, kernels[k]);
            c->records += 2;
            if (corr % 4 == 0) {
                synth_api(b, 1, 41, t + 5000, t + 6000, 100, 101, corr + 1000000000u);
                synth_memcpy(b, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, t + 9000, t + 9900, 0,
                             1, 11, corr + 1000000000u);
                c->records += 2;
            }
            if (corr % 16 == 0) {
                synth_cuda_event(b, corr + 2000000000u, 1, 11, 3, 0, t + 9950, corr);
                synth_sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, t + 6000,
                           t + 6100, corr + 2100000000u, 1, 7, 3, corr);
                c->records += 2;
            }
            corr++;
            t += 100000;
        }
        c->bytes += b->len;
    }
}

static double best_of(double (*f)(void *), void *arg)
{
    double best = 1e30;
    for (int i = 0; i < RUNS; i++) {
        double dt = f(arg);
        if (dt < best)
            best = dt;
    }
    return best;
}

static struct capture cap;
static const struct prof_cupti *cupti;
static const struct prof_layout *layout;
static uint8_t *scratch;
static struct prof_store store;
static struct prof_convert conv;

static double do_memcpy(void *arg)
{
    (void)arg;
    double t0 = now();
    for (size_t i = 0; i < cap.n_bufs; i++)
        memcpy(scratch, cap.bufs[i].p, cap.bufs[i].len);
    double dt = now() - t0;
    if (scratch[0] == 0xff) /* keep the copies */
        printf("%c", ' ');
    return dt;
}

static double do_iterate(void *arg)
{
    size_t n = 0;
    (void)arg;
    double t0 = now();
    for (size_t i = 0; i < cap.n_bufs; i++) {
        CUpti_Activity *rec = NULL;
        while (cupti->get_next_record(cap.bufs[i].p, cap.bufs[i].len, &rec) == CUPTI_SUCCESS)
            n++;
    }
    double dt = now() - t0;
    if (n != cap.records)
        fprintf(stderr, "iterate: %zu records, expected %zu\n", n, cap.records);
    return dt;
}

static double do_convert(void *arg)
{
    (void)arg;
    prof_store_release(&store);
    prof_store_init(&store, 0);
    prof_convert_init(&conv, layout, &store, cupti->get_callback_name);
    double t0 = now();
    for (size_t i = 0; i < cap.n_bufs; i++)
        prof_convert_buffer(&conv, cupti->get_next_record, cap.bufs[i].p, cap.bufs[i].len);
    return now() - t0;
}

static struct prof_write_stats wstats;

static double do_write(void *arg)
{
    static struct prof_json w;
    struct prof_trace_info info;
    (void)arg;
    memset(&info, 0, sizeof info);
    info.rank = info.world_size = -1;
    info.window_first = info.window_last = -1;
    info.clock_start[0] = 1735689600000000000ull;
    prof_json_open_null(&w);
    double t0 = now();
    prof_kineto_emit(&w, &store, prof_nccl(), &info, &wstats);
    prof_json_close(&w);
    return now() - t0;
}

static struct prof_pool pool;
enum { POOL_OPS = 2000000 };

static void *pool_worker(void *arg)
{
    size_t n = (size_t)(uintptr_t)arg, size;
    for (size_t i = 0; i < n; i++) {
        uint8_t *b = prof_pool_get(&pool, &size);
        prof_pool_done(&pool, b, 64);
        uint8_t *got;
        size_t valid;
        int s = prof_pool_take(&pool, &got, &valid);
        if (s >= 0)
            prof_pool_give_back(&pool, s);
    }
    return NULL;
}

static double pool_run(int threads)
{
    pthread_t t[8];
    prof_pool_init(&pool, 4096, PROF_POOL_SLOTS, 1);
    double t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, pool_worker, (void *)(uintptr_t)(POOL_OPS / threads));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double dt = now() - t0;
    prof_pool_release(&pool);
    return dt;
}

int main(int argc, char **argv)
{
    size_t want = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 2000000;
    static struct prof_cupti c;
    static struct prof_layout l;
    char why[256];
    uint32_t version = 0;
    if (prof_cupti_load(&c, NULL, why, sizeof why) || c.get_version(&version) ||
        prof_layout_for_version(version, &l)) {
        printf("prof-bench: no usable libcupti (%s): nothing measured\n", why);
        return 0;
    }
    cupti = &c;
    layout = &l;
    generate(&cap, &l, want);
    scratch = malloc(BUF_BYTES);
    prof_store_init(&store, 0);

    double t_copy = best_of(do_memcpy, NULL);
    double t_iter = best_of(do_iterate, NULL);
    double t_conv = best_of(do_convert, NULL);
    double t_write = best_of(do_write, NULL);
    double mb = (double)cap.bytes / 1e6, rec = (double)cap.records;
    printf("prof-bench %zu: %zu CUPTI records (CUPTI API %u layout), %.1f MB in %zu buffers of 4 MiB;"
           " best of %d\n", want, cap.records, version, mb, cap.n_bufs, RUNS);
    printf("  %-10s %8.3f s  %7.1f M records/s  %8.1f MB/s\n", "memcpy", t_copy, rec / t_copy / 1e6,
           mb / t_copy);
    printf("  %-10s %8.3f s  %7.1f M records/s  %8.1f MB/s  (%.1fx memcpy's time)\n", "iterate",
           t_iter, rec / t_iter / 1e6, mb / t_iter, t_iter / t_copy);
    printf("  %-10s %8.3f s  %7.1f M records/s  %8.1f MB/s  (%.1fx memcpy's time, %.0f ns/record)\n",
           "convert", t_conv, rec / t_conv / 1e6, mb / t_conv, t_conv / t_copy, t_conv / rec * 1e9);
    printf("  %-10s %8.3f s  %7.1f M events/s   %8.1f MB/s of JSON (%zu events -> %llu trace "
           "entries with flows and metadata, %.1f MB; %.0f ns/event)\n", "write", t_write,
           (double)store.n / t_write / 1e6, (double)wstats.bytes / 1e6 / t_write, store.n,
           (unsigned long long)wstats.events, (double)wstats.bytes / 1e6,
           t_write / (double)store.n * 1e9);
    double p1 = pool_run(1), p4 = pool_run(4);
    printf("  %-10s %8.1f ns per lend+return (1 thread), %.1f ns (4 threads)\n", "pool",
           p1 / POOL_OPS * 1e9, p4 / POOL_OPS * 1e9);
    printf("  records converted per second: %.2f M (convert / memcpy time: %.1fx)\n",
           rec / t_conv / 1e6, t_conv / t_copy);
    prof_store_release(&store);
    for (size_t i = 0; i < cap.n_bufs; i++)
        synth_release(&cap.bufs[i]);
    free(cap.bufs);
    free(scratch);
    return 0;
}
