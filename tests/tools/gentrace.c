/* tests/tools/gentrace.c: writes synthetic Kineto traces of a data-parallel
 * training job, one file per rank.
 *
 * It is a small simulator, not a template: each rank has a main thread, an
 * autograd thread and three CUDA streams (compute 7, NCCL 13, copy 22). A
 * step loads data (a host gap), copies the batch in, runs the forward layers,
 * the backward layers on the autograd thread with DDP all-reduces on the
 * NCCL stream (event record on the compute stream, wait on the NCCL stream),
 * waits for the last all-reduce, runs the optimizer and ends with .item()
 * (a device-to-host copy and a cudaStreamSynchronize). Kernels start when
 * their stream and their launch allow; a collective ends when its last rank
 * has arrived plus its transfer time; CPU calls that wait last as long as
 * what they wait for. So the traces are consistent the way real ones are,
 * and a replay of them can be checked against a run generated with other
 * durations (--gpu-scale: GPU work and transfers, --comm-scale: transfers
 * only, --slow-rank: one rank's kernels). --gpu-delay NS holds the first
 * forward kernel of every step NS after its stream and its launch allowed
 * it: a wait the trace holds but does not explain. --modules wraps each
 * forward layer in a python_function "nn.Module: Block_<l>" span, as
 * PyTorch's profiler does with with_modules (the backward has none, as
 * there). --load-ms MS is each step's data loading on the host (1.5 ms,
 * jittered), a host gap before the step's first op.
 *
 * Two ways a host waits on the GPU with no sync call: --dispatch ends each
 * forward layer with a MoE-style dispatch (a notify kernel on stream 30
 * writes how many tokens come; the host polls host memory for it, which
 * records nothing, and resumes 40 us before the kernel ends, then
 * allocates the receive buffer and launches the dispatch kernel);
 * --poll-loop has the main thread, after the loss, poll an event with
 * cudaEventQuery every 10 us until the forward's work is done (as
 * `while not event.query()` does).
 *
 *   gentrace [--ranks N] [--steps S] [--layers L] [--seed X] [--gzip]
 *            [--gpu-scale F] [--comm-scale F] [--slow-rank R --slow-factor F]
 *            [--gpu-delay NS] [--cuda-sync] [--modules] [--load-ms MS]
 *            [--dispatch] [--poll-loop] OUTDIR
 *
 * Writes OUTDIR/rank<r>.json (or, with --gzip, .json.gz at zlib level 1:
 * jobs of tens of GB are generated compressed, and fast). Up to 4,096
 * ranks. Deterministic for a seed. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "common/banned.h"

enum { STREAM_COMPUTE = 7, STREAM_NCCL = 13, STREAM_COPY = 22, STREAM_NOTIFY = 30, MAX_RANKS = 4096, MAX_BUCKETS = 64 };

struct opts {
    int ranks, steps, layers, gzip, cuda_sync, slow_rank, modules, dispatch, poll_loop;
    double gpu_scale, comm_scale, slow_factor, load_ms;
    int64_t gpu_delay;
    uint64_t seed;
};

struct rank {
    int r;
    FILE *f;    /* plain output */
    gzFile gz;  /* or gzip output */
    int first;  /* no event written yet */
    uint64_t rng;
    int64_t pid, main_tid, ag_tid;
    int64_t cpu_main, cpu_ag; /* ns */
    int64_t stream_end[4];
    int64_t corr, ext, ev_idx, event_id;
    double speed; /* this rank's kernel speed factor */
    int delay_next; /* hold the next kernel O.gpu_delay ns */
    /* per step: when each bucket's gradients are ready on the NCCL stream */
    int64_t bucket_ready[MAX_BUCKETS];
    int64_t bucket_launch[MAX_BUCKETS];
    int64_t bucket_corr[MAX_BUCKETS], bucket_ext[MAX_BUCKETS];
};

static const int64_t BASE_NS = 1727740800000000000ll;
static struct opts O;

/* ---- output ---------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void out(struct rank *k, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof buf) {
        fprintf(stderr, "gentrace: event too long\n");
        exit(1);
    }
    if (k->gz ? gzwrite(k->gz, buf, (unsigned)n) != n : fwrite(buf, 1, (size_t)n, k->f) != (size_t)n) {
        fprintf(stderr, "gentrace: write failed\n");
        exit(1);
    }
}

/* "123.456" microseconds of a ns value relative to the base */
static const char *us(int64_t ns, char *buf)
{
    snprintf(buf, 32, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
    return buf;
}

static void event_sep(struct rank *k)
{
    out(k, k->first ? "\n  " : ",\n  ");
    k->first = 0;
}

static void emit_x(struct rank *k, const char *cat, const char *name, int64_t pid, int64_t tid,
                   int64_t ts, int64_t dur, const char *args)
{
    char a[32], b[32];
    event_sep(k);
    out(k, "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %" PRId64 ", \"tid\": %" PRId64
           ", \"ts\": %s, \"dur\": %s, \"args\": {%s}}",
        cat, name, pid, tid, us(ts, a), us(dur, b), args);
}

static void emit_flow(struct rank *k, char ph, int64_t id, int64_t pid, int64_t tid, int64_t ts)
{
    char a[32];
    event_sep(k);
    out(k, "{\"ph\": \"%c\", \"id\": %" PRId64 ", \"pid\": %" PRId64 ", \"tid\": %" PRId64
           ", \"ts\": %s, \"cat\": \"ac2g\", \"name\": \"ac2g\"%s}",
        ph, id, pid, tid, us(ts, a), ph == 'f' ? ", \"bp\": \"e\"" : "");
}

/* ---- randomness ---------------------------------------------------------------- */

static uint64_t next_u64(struct rank *k)
{
    k->rng ^= k->rng >> 12;
    k->rng ^= k->rng << 25;
    k->rng ^= k->rng >> 27;
    return k->rng * 0x2545F4914F6CDD1Dull;
}

/* base * (1 +- jitter) */
static int64_t jitter(struct rank *k, int64_t base, double frac)
{
    double u = (double)(next_u64(k) >> 11) / 9007199254740992.0;
    return (int64_t)((double)base * (1.0 + frac * (2 * u - 1)));
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int stream_slot(int stream)
{
    return stream == STREAM_COMPUTE ? 0 : stream == STREAM_NCCL ? 1 : stream == STREAM_COPY ? 2 : 3;
}

/* ---- CUDA calls ----------------------------------------------------------------- */

/* A runtime call on a thread; advances *cpu by its duration. */
static int64_t runtime_call(struct rank *k, int64_t tid, int64_t *cpu, const char *name, int cbid,
                            int64_t dur, int64_t ext)
{
    char args[160];
    int64_t corr = ++k->corr;
    snprintf(args, sizeof args, "\"External id\": %" PRId64 ", \"cbid\": %d, \"correlation\": %" PRId64,
             ext, cbid, corr);
    emit_x(k, "cuda_runtime", name, k->pid, tid, *cpu, dur, args);
    *cpu += dur;
    return corr;
}

/* cudaLaunchKernel of a kernel of gpu_ns on a stream; returns its end. */
static int64_t launch(struct rank *k, int64_t tid, int64_t *cpu, int stream, const char *kname,
                      int64_t gpu_ns, int64_t ext, int64_t *corr_out)
{
    int64_t call = *cpu, dur = jitter(k, 5000, 0.3);
    int64_t corr = runtime_call(k, tid, cpu, "cudaLaunchKernel", 211, dur, ext);
    int s = stream_slot(stream);
    int64_t start = max64(k->stream_end[s], call + 4000);
    if (k->delay_next) {
        start += O.gpu_delay;
        k->delay_next = 0;
    }
    char args[512];
    snprintf(args, sizeof args,
             "\"External id\": %" PRId64 ", \"queued\": 0, \"device\": 0, \"context\": 1, "
             "\"stream\": %d, \"correlation\": %" PRId64 ", \"registers per thread\": 128, "
             "\"shared memory\": 49152, \"blocks per SM\": 1.5, \"warps per SM\": 12, "
             "\"grid\": [216, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %%\": 38",
             ext, stream, corr);
    emit_x(k, "kernel", kname, 0, stream, start, gpu_ns, args);
    emit_flow(k, 's', corr, k->pid, tid, call);
    emit_flow(k, 'f', corr, 0, stream, start);
    k->stream_end[s] = start + gpu_ns;
    if (corr_out)
        *corr_out = corr;
    return start + gpu_ns;
}

static int64_t gpu_ns(struct rank *k, int64_t base)
{
    return (int64_t)((double)jitter(k, base, 0.05) * O.gpu_scale * k->speed);
}

/* an aten op on a thread launching one kernel */
static void aten_op(struct rank *k, int64_t tid, int64_t *cpu, const char *op, const char *dims,
                    const char *kname, int64_t kernel_base_ns)
{
    int64_t start = *cpu, ext = ++k->ext;
    char args[512];
    *cpu += jitter(k, 8000, 0.3);
    launch(k, tid, cpu, STREAM_COMPUTE, kname, gpu_ns(k, kernel_base_ns), ext, NULL);
    *cpu += jitter(k, 3000, 0.3);
    snprintf(args, sizeof args,
             "\"External id\": %" PRId64 ", \"Ev Idx\": %" PRId64 ", \"Input Dims\": %s, "
             "\"Input type\": [\"float\", \"float\", \"float\"], \"Sequence number\": %" PRId64
             ", \"Fwd thread id\": 0",
             ext, ++k->ev_idx, dims, ext);
    emit_x(k, "cpu_op", op, k->pid, tid, start, *cpu - start, args);
}

/* cudaMemcpyAsync of n bytes; with sync, cudaStreamSynchronize after it. */
static void copy(struct rank *k, int64_t *cpu, const char *kind, int stream, int64_t bytes,
                 double gbps, int sync)
{
    int64_t start = *cpu, ext = ++k->ext, call = *cpu + 2000;
    char args[320];
    *cpu = call;
    int64_t corr = runtime_call(k, k->main_tid, cpu, "cudaMemcpyAsync", 51, jitter(k, 6000, 0.2), ext);
    int s = stream_slot(stream);
    int64_t gs = max64(k->stream_end[s], call + 4000);
    int64_t dur = (int64_t)((double)bytes / gbps) + 2000;
    dur = (int64_t)((double)dur * O.gpu_scale);
    snprintf(args, sizeof args,
             "\"External id\": %" PRId64 ", \"device\": 0, \"context\": 1, \"stream\": %d, "
             "\"correlation\": %" PRId64 ", \"bytes\": %" PRId64 ", \"memory bandwidth (GB/s)\": %.3f",
             ext, stream, corr, bytes, gbps);
    emit_x(k, "gpu_memcpy", kind, 0, stream, gs, dur, args);
    emit_flow(k, 's', corr, k->pid, k->main_tid, call);
    emit_flow(k, 'f', corr, 0, stream, gs);
    k->stream_end[s] = gs + dur;
    if (sync) {
        int64_t sync_start = *cpu;
        int64_t end = max64(sync_start + 3000, k->stream_end[s] + 2000);
        int64_t sc = runtime_call(k, k->main_tid, cpu, "cudaStreamSynchronize", 131,
                                  end - sync_start, ext);
        if (O.cuda_sync) {
            snprintf(args, sizeof args,
                     "\"External id\": %" PRId64 ", \"cuda_sync_kind\": \"Stream Sync\", "
                     "\"stream\": %d, \"correlation\": %" PRId64 ", \"device\": 0, \"context\": 1",
                     ext, stream, sc);
            emit_x(k, "cuda_sync", "Stream Sync", 0, stream, k->stream_end[s], 1000, args);
        }
    }
    *cpu += 1500;
    snprintf(args, sizeof args, "\"External id\": %" PRId64 ", \"Ev Idx\": %" PRId64, ext, ++k->ev_idx);
    emit_x(k, "cpu_op", sync ? "aten::item" : "aten::to", k->pid, k->main_tid, start, *cpu - start, args);
}

/* cudaEventRecord on `from` then cudaStreamWaitEvent on `to` (with the
 * cuda_sync record when asked); the wait orders `to` after `from`'s work. */
static void event_wait(struct rank *k, int64_t tid, int64_t *cpu, int from, int to, int64_t ext)
{
    int64_t rec = runtime_call(k, tid, cpu, "cudaEventRecord", 135, jitter(k, 3000, 0.2), ext);
    int64_t ready = k->stream_end[stream_slot(from)];
    int64_t wait = runtime_call(k, tid, cpu, "cudaStreamWaitEvent", 147, jitter(k, 3000, 0.2), ext);
    int64_t id = ++k->event_id;
    if (O.cuda_sync) {
        char args[320];
        snprintf(args, sizeof args,
                 "\"External id\": %" PRId64 ", \"cuda_sync_kind\": \"Stream Wait Event\", "
                 "\"wait_on_stream\": %d, \"wait_on_cuda_event_record_corr_id\": %" PRId64
                 ", \"wait_on_cuda_event_id\": %" PRId64 ", \"stream\": %d, \"correlation\": %" PRId64
                 ", \"device\": 0, \"context\": 1",
                 ext, from, rec, id, to, wait);
        emit_x(k, "cuda_sync", "Stream Wait Event", 0, to, max64(ready, *cpu), 1000, args);
    }
    int s = stream_slot(to);
    k->stream_end[s] = max64(k->stream_end[s], ready);
}

/* A MoE-style dispatch: the notify kernel counts the tokens each rank will
 * receive and writes the count to host memory; the host polls that memory
 * (nothing is recorded) and sees the count 40 us before the kernel ends,
 * allocates the receive buffer (an op with no runtime call) and launches
 * the dispatch kernel, all inside a "moe::dispatch" annotation. */
static void moe_dispatch(struct rank *k)
{
    int64_t start = k->cpu_main, ext = ++k->ext;
    k->cpu_main += jitter(k, 4000, 0.3);
    int64_t notify_end = launch(k, k->main_tid, &k->cpu_main, STREAM_NOTIFY, "notify_dispatch",
                                gpu_ns(k, 1000000), ext, NULL);
    k->cpu_main = max64(k->cpu_main, notify_end - 40000);
    char args[160];
    int64_t alloc = k->cpu_main;
    k->cpu_main += jitter(k, 15000, 0.2);
    snprintf(args, sizeof args, "\"External id\": %" PRId64 ", \"Ev Idx\": %" PRId64, ++k->ext, ++k->ev_idx);
    emit_x(k, "cpu_op", "aten::empty", k->pid, k->main_tid, alloc, k->cpu_main - alloc, args);
    k->cpu_main += jitter(k, 3000, 0.3);
    launch(k, k->main_tid, &k->cpu_main, STREAM_COMPUTE, "dispatch", gpu_ns(k, 150000), ext, NULL);
    k->cpu_main += jitter(k, 3000, 0.3);
    snprintf(args, sizeof args, "\"External id\": %" PRId64, ext);
    emit_x(k, "user_annotation", "moe::dispatch", k->pid, k->main_tid, start, k->cpu_main - start, args);
}

/* The main thread records an event after the work queued on the compute
 * stream and polls it every 10 us until a query finds it done. */
static void poll_event(struct rank *k)
{
    int64_t ext = ++k->ext;
    runtime_call(k, k->main_tid, &k->cpu_main, "cudaEventRecord", 135, jitter(k, 3000, 0.2), ext);
    int64_t done = k->stream_end[stream_slot(STREAM_COMPUTE)];
    for (int64_t q = k->cpu_main;; q += 10000) {
        k->cpu_main = q;
        runtime_call(k, k->main_tid, &k->cpu_main, "cudaEventQuery", 18, 2000, ext);
        if (q >= done)
            break;
    }
}

/* ---- one step -------------------------------------------------------------------- */

static const char *LINEAR_DIMS = "[[32, 4096], [4096, 4096], [4096]]";

static void local_forward_backward(struct rank *k, int step, int buckets)
{
    (void)step;
    /* data loading: a host gap, then the batch to the device */
    k->cpu_main += jitter(k, (int64_t)(O.load_ms * 1e6), 0.1);
    copy(k, &k->cpu_main, "Memcpy HtoD (Pinned -> Device)", STREAM_COMPUTE, 32 << 20, 20.0, 0);
    /* forward */
    int64_t fwd_start = k->cpu_main;
    k->delay_next = O.gpu_delay > 0;
    for (int l = 0; l < O.layers; l++) {
        int64_t layer_start = k->cpu_main;
        aten_op(k, k->main_tid, &k->cpu_main, "aten::linear", LINEAR_DIMS,
                "ampere_sgemm_128x64_tn", 320000);
        aten_op(k, k->main_tid, &k->cpu_main, "aten::relu", "[[32, 4096]]",
                "void at::native::vectorized_elementwise_kernel<4, at::native::relu>", 40000);
        if (O.dispatch)
            moe_dispatch(k);
        if (O.modules) { /* as PyTorch's profiler names module calls (with_modules) */
            char name[64];
            snprintf(name, sizeof name, "nn.Module: Block_%d", l);
            emit_x(k, "python_function", name, k->pid, k->main_tid, layer_start, k->cpu_main - layer_start,
                   "\"Python id\": 1, \"Python thread\": 0");
        }
    }
    aten_op(k, k->main_tid, &k->cpu_main, "aten::nll_loss", "[[32, 1000], [32]]",
            "void at::native::nll_loss_forward_reduce_cuda_kernel_2d", 20000);
    if (O.poll_loop)
        poll_event(k);
    char args[512];
    snprintf(args, sizeof args, "\"External id\": %" PRId64, ++k->ext);
    emit_x(k, "user_annotation", "## forward ##", k->pid, k->main_tid, fwd_start,
           k->cpu_main - fwd_start, args);
    /* backward on the autograd thread, which starts once the loss is queued */
    k->cpu_ag = max64(k->cpu_ag, k->cpu_main + 20000);
    int per_bucket = (O.layers + buckets - 1) / buckets;
    for (int b = 0; b < buckets; b++) {
        for (int l = b * per_bucket; l < (b + 1) * per_bucket && l < O.layers; l++) {
            aten_op(k, k->ag_tid, &k->cpu_ag, "autograd::engine::evaluate_function: AddmmBackward0",
                    LINEAR_DIMS, "ampere_sgemm_128x128_nn", 330000);
            aten_op(k, k->ag_tid, &k->cpu_ag, "aten::mm", LINEAR_DIMS,
                    "ampere_sgemm_64x64_nt", 300000);
            aten_op(k, k->ag_tid, &k->cpu_ag, "autograd::engine::evaluate_function: ReluBackward0",
                    "[[32, 4096], [32, 4096]]",
                    "void at::native::vectorized_elementwise_kernel<4, at::native::threshold>",
                    45000);
        }
        /* the bucket's all-reduce: record_param_comms, event wait, NCCL launch */
        int64_t start = k->cpu_ag, ext = ++k->ext;
        k->cpu_ag += 6000;
        k->stream_end[1] = INT64_MIN;
        event_wait(k, k->ag_tid, &k->cpu_ag, STREAM_COMPUTE, STREAM_NCCL, ext);
        int64_t call = k->cpu_ag;
        k->bucket_corr[b] = runtime_call(k, k->ag_tid, &k->cpu_ag, "cudaLaunchKernel", 211,
                                         jitter(k, 6000, 0.2), ext);
        k->bucket_ready[b] = max64(k->stream_end[1], call + 4000);
        k->bucket_launch[b] = call;
        k->bucket_ext[b] = ext;
        k->cpu_ag += 4000;
        snprintf(args, sizeof args,
                 "\"External id\": %" PRId64 ", \"Collective name\": \"allreduce\", "
                 "\"In msg nelems\": %d, \"Out msg nelems\": %d, \"Group size\": %d, "
                 "\"dtype\": \"Float\", \"Process Group Name\": \"0\", "
                 "\"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[0, 1]\"",
                 ext, 4096 * 4096 * per_bucket, 4096 * 4096 * per_bucket, O.ranks);
        emit_x(k, "cpu_op", "record_param_comms", k->pid, k->ag_tid, start, k->cpu_ag - start, args);
        /* the NCCL stream's order is resolved across ranks (resolve_collectives) */
        k->stream_end[1] = INT64_MIN;
    }
}

/* All ranks' all-reduces: each ends when the last rank arrived plus the
 * transfer time, and the NCCL stream runs them in order. */
static void resolve_collectives(struct rank *ks, int buckets)
{
    int per_bucket = (O.layers + buckets - 1) / buckets;
    int64_t prev_end = INT64_MIN;
    for (int b = 0; b < buckets; b++) {
        int64_t last = INT64_MIN;
        for (int r = 0; r < O.ranks; r++)
            last = max64(last, max64(ks[r].bucket_ready[b], prev_end));
        double bytes = 4.0 * 4096 * 4096 * per_bucket;
        int64_t transfer = (int64_t)(2.0 * (O.ranks - 1) / O.ranks * bytes / 80.0) + 15000; /* 80 GB/s */
        int64_t end = last + (int64_t)((double)transfer * O.gpu_scale * O.comm_scale);
        for (int r = 0; r < O.ranks; r++) {
            struct rank *k = &ks[r];
            int64_t start = max64(k->bucket_ready[b], prev_end);
            char args[640];
            snprintf(args, sizeof args,
                     "\"External id\": %" PRId64 ", \"queued\": 0, \"device\": 0, \"context\": 1, "
                     "\"stream\": %d, \"correlation\": %" PRId64 ", \"registers per thread\": 96, "
                     "\"shared memory\": 87568, \"grid\": [8, 1, 1], \"block\": [544, 1, 1], "
                     "\"Collective name\": \"allreduce\", \"In msg nelems\": %d, "
                     "\"Out msg nelems\": %d, \"Group size\": %d, \"dtype\": \"Float\", "
                     "\"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\"",
                     k->bucket_ext[b], STREAM_NCCL, k->bucket_corr[b], 4096 * 4096 * per_bucket,
                     4096 * 4096 * per_bucket, O.ranks);
            emit_x(k, "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                   0, STREAM_NCCL, start, end - start, args);
            emit_flow(k, 's', k->bucket_corr[b], k->pid, k->ag_tid, k->bucket_launch[b]);
            emit_flow(k, 'f', k->bucket_corr[b], 0, STREAM_NCCL, start);
            k->stream_end[1] = end;
        }
        prev_end = end;
    }
}

static void local_optimizer(struct rank *k, int step, int64_t step_start)
{
    /* the main thread waited for backward; the optimizer waits for the
     * last all-reduce through an event on the compute stream */
    k->cpu_main = max64(k->cpu_main, k->cpu_ag + 10000);
    int64_t ext = ++k->ext;
    event_wait(k, k->main_tid, &k->cpu_main, STREAM_NCCL, STREAM_COMPUTE, ext);
    int64_t start = k->cpu_main;
    for (int g = 0; g < 4; g++)
        aten_op(k, k->main_tid, &k->cpu_main, "aten::_foreach_add_", "[[], []]",
                "void at::native::multi_tensor_apply_kernel<at::native::AddOp>", 60000);
    char args[160];
    snprintf(args, sizeof args, "\"External id\": %" PRId64, ++k->ext);
    emit_x(k, "user_annotation", "Optimizer.step#SGD.step", k->pid, k->main_tid, start,
           k->cpu_main - start, args);
    copy(k, &k->cpu_main, "Memcpy DtoH (Device -> Pageable)", STREAM_COMPUTE, 4, 1.0, 1);
    k->cpu_main += jitter(k, 20000, 0.2);
    char name[64];
    snprintf(name, sizeof name, "ProfilerStep#%d", step);
    snprintf(args, sizeof args, "\"External id\": %" PRId64, ++k->ext);
    emit_x(k, "user_annotation", name, k->pid, k->main_tid, step_start, k->cpu_main - step_start,
           args);
}

/* ---- files ----------------------------------------------------------------------------- */

static void open_rank(struct rank *k, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.json%s", dir, k->r, O.gzip ? ".gz" : "");
    if (O.gzip) {
        k->gz = gzopen(path, "wb1"); /* fast: jobs of many GB are written this way */
        if (!k->gz) {
            fprintf(stderr, "gentrace: cannot write %s\n", path);
            exit(1);
        }
    } else if (!(k->f = fopen(path, "wb"))) {
        fprintf(stderr, "gentrace: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    out(k, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", "
           "\"totalGlobalMem\": 85095874560, \"computeMajor\": 8, \"computeMinor\": 0, \"numSms\": 108}],\n"
           "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, "
           "\"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
           "\"backend_config\": \"cuda:nccl\", \"pg_size\": %d, \"ranks\": \"all\"}], \"nccl_version\": \"2.21.5\"},\n"
           "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRId64 ",\n  \"traceEvents\": [",
        k->r, O.ranks, O.ranks, BASE_NS);
    k->first = 1;
}

static void close_rank(struct rank *k)
{
    event_sep(k);
    out(k, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRId64 ", \"tid\": %" PRId64
           ", \"args\": {\"name\": \"thread %" PRId64 " (pt_main_thread)\"}}",
        k->pid, k->main_tid, k->main_tid);
    event_sep(k);
    out(k, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRId64 ", \"tid\": %" PRId64
           ", \"args\": {\"name\": \"thread %" PRId64 " (pt_autograd_0)\"}}",
        k->pid, k->ag_tid, k->ag_tid);
    out(k, "\n  ],\n  \"traceName\": \"rank%d.json\"\n}\n", k->r);
    if (k->gz ? gzclose(k->gz) != Z_OK : fclose(k->f) != 0) {
        fprintf(stderr, "gentrace: write failed\n");
        exit(1);
    }
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"ranks", required_argument, NULL, 'r'}, {"steps", required_argument, NULL, 's'},
        {"layers", required_argument, NULL, 'l'}, {"seed", required_argument, NULL, 'x'},
        {"gzip", no_argument, NULL, 'z'}, {"gpu-scale", required_argument, NULL, 'g'},
        {"slow-rank", required_argument, NULL, 'R'}, {"slow-factor", required_argument, NULL, 'F'},
        {"cuda-sync", no_argument, NULL, 'c'}, {"comm-scale", required_argument, NULL, 'C'},
        {"gpu-delay", required_argument, NULL, 'd'}, {"modules", no_argument, NULL, 'M'},
        {"load-ms", required_argument, NULL, 'L'}, {"dispatch", no_argument, NULL, 'D'},
        {"poll-loop", no_argument, NULL, 'P'}, {NULL, 0, NULL, 0},
    };
    int c;
    O = (struct opts){.ranks = 2, .steps = 3, .layers = 8, .seed = 1, .gpu_scale = 1.0,
                      .comm_scale = 1.0, .slow_rank = -1, .slow_factor = 1.0, .load_ms = 1.5};
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'r': O.ranks = (int)strtol(optarg, NULL, 10); break;
        case 's': O.steps = (int)strtol(optarg, NULL, 10); break;
        case 'l': O.layers = (int)strtol(optarg, NULL, 10); break;
        case 'x': O.seed = strtoull(optarg, NULL, 10); break;
        case 'z': O.gzip = 1; break;
        case 'g': O.gpu_scale = strtod(optarg, NULL); break;
        case 'R': O.slow_rank = (int)strtol(optarg, NULL, 10); break;
        case 'F': O.slow_factor = strtod(optarg, NULL); break;
        case 'c': O.cuda_sync = 1; break;
        case 'C': O.comm_scale = strtod(optarg, NULL); break;
        case 'd': O.gpu_delay = strtoll(optarg, NULL, 10); break;
        case 'M': O.modules = 1; break;
        case 'L': O.load_ms = strtod(optarg, NULL); break;
        case 'D': O.dispatch = 1; break;
        case 'P': O.poll_loop = 1; break;
        default:
            fprintf(stderr, "usage: gentrace [--ranks N] [--steps S] [--layers L] [--seed X] [--gzip]\n"
                            "                [--gpu-scale F] [--comm-scale F] [--slow-rank R --slow-factor F]\n"
                            "                [--gpu-delay NS] [--cuda-sync] [--modules] [--load-ms MS]\n"
                            "                [--dispatch] [--poll-loop] OUTDIR\n");
            return 2;
        }
    }
    if (optind + 1 != argc || O.ranks < 1 || O.ranks > MAX_RANKS || O.steps < 1 || O.layers < 1 ||
        O.gpu_scale <= 0 || !(O.comm_scale >= 0) || O.gpu_delay < 0 || !(O.load_ms >= 0 && O.load_ms <= 1e6)) {
        fprintf(stderr, "gentrace: bad arguments (ranks 1..%d, steps and layers >= 1, OUTDIR)\n", MAX_RANKS);
        return 2;
    }
    mkdir(argv[optind], 0755);
    int buckets = O.layers < 4 ? O.layers : 4;
    struct rank *ks = calloc((size_t)O.ranks, sizeof *ks);
    int64_t *starts = malloc((size_t)O.ranks * sizeof *starts);
    if (!ks || !starts)
        return 1;
    for (int r = 0; r < O.ranks; r++) {
        struct rank *k = &ks[r];
        k->r = r;
        k->rng = O.seed * 0x9E3779B97F4A7C15ull + (uint64_t)r * 7919 + 1;
        k->pid = 4000 + r;
        k->main_tid = k->pid;
        k->ag_tid = k->pid + 100;
        k->cpu_main = k->cpu_ag = jitter(k, 5000000, 0.2);
        k->speed = 1.0 + 0.03 * r / (O.ranks > 1 ? O.ranks - 1 : 1);
        if (r == O.slow_rank)
            k->speed *= O.slow_factor;
        open_rank(k, argv[optind]);
    }
    for (int s = 0; s < O.steps; s++) {
        for (int r = 0; r < O.ranks; r++) {
            starts[r] = ks[r].cpu_main;
            local_forward_backward(&ks[r], s + 1, buckets);
        }
        resolve_collectives(ks, buckets);
        for (int r = 0; r < O.ranks; r++)
            local_optimizer(&ks[r], s + 1, starts[r]);
    }
    for (int r = 0; r < O.ranks; r++)
        close_rank(&ks[r]);
    free(starts);
    free(ks);
    return 0;
}
