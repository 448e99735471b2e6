/* tests/trace_builder.c: small Kineto traces written from C (trace_builder.h). */
#include "tests/trace_builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/job.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

enum { PID = TB_PID };

__attribute__((format(printf, 2, 3))) static void put(struct tb *tb, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(tb->buf + tb->len, tb->cap - tb->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < tb->cap - tb->len) {
            tb->len += (size_t)n;
            return;
        }
        tb->cap = tb->cap * 2 + (size_t)(n > 0 ? n : 0) + 1024;
        tb->buf = realloc(tb->buf, tb->cap);
        if (!tb->buf)
            abort();
    }
}

void tb_init(struct tb *tb, int rank, int world)
{
    tb_init_pgs(tb, rank, world, NULL);
}

void tb_init_pgs(struct tb *tb, int rank, int world, const char *pg_config)
{
    memset(tb, 0, sizeof *tb);
    tb->rank = rank;
    tb->world = world;
    tb->corr = 1000 * (rank + 1);
    tb->cap = 4096;
    tb->buf = malloc(tb->cap);
    put(tb, "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d%s%s},"
            " \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", \"numSms\": 108}],"
            " \"traceEvents\": [",
        rank, world, pg_config ? ", \"pg_config\": " : "", pg_config ? pg_config : "");
}

void tb_free(struct tb *tb)
{
    free(tb->buf);
    memset(tb, 0, sizeof *tb);
}

void tb_event(struct tb *tb, const char *cat, const char *name, int pid, int tid, double ts, double dur,
              const char *args)
{
    put(tb, "%s\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
            "\"dur\": %.3f, \"args\": {%s}}",
        tb->events++ ? "," : "", cat, name, pid, tid, 1000000.0 + ts, dur, args ? args : "");
}

void tb_step(struct tb *tb, int n, double ts, double dur)
{
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", n);
    tb_event(tb, "user_annotation", name, PID, TB_MAIN, ts, dur, NULL);
}

int tb_call(struct tb *tb, int tid, const char *name, double ts, double dur)
{
    char args[64];
    int corr = ++tb->corr;
    snprintf(args, sizeof args, "\"correlation\": %d", corr);
    tb_event(tb, "cuda_runtime", name, PID, tid, ts, dur, args);
    return corr;
}

void tb_op(struct tb *tb, int tid, const char *name, double ts, double dur)
{
    tb_event(tb, "cpu_op", name, PID, tid, ts, dur, NULL);
}

void tb_kernel_args(struct tb *tb, int corr, int stream, const char *kernel, double ts, double dur,
                    const char *extra_args)
{
    char args[1024];
    snprintf(args, sizeof args, "\"correlation\": %d, \"stream\": %d, \"device\": 0%s%s", corr, stream,
             extra_args ? ", " : "", extra_args ? extra_args : "");
    tb_event(tb, "kernel", kernel, 0, stream, ts, dur, args);
}

int tb_launch_on(struct tb *tb, int tid, double call_ts, double call_dur, int stream, const char *kernel,
                 double k_ts, double k_dur)
{
    int corr = tb_call(tb, tid, "cudaLaunchKernel", call_ts, call_dur);
    tb_kernel_args(tb, corr, stream, kernel, k_ts, k_dur, NULL);
    return corr;
}

int tb_launch(struct tb *tb, double call_ts, double call_dur, int stream, const char *kernel, double k_ts,
              double k_dur)
{
    return tb_launch_on(tb, TB_MAIN, call_ts, call_dur, stream, kernel, k_ts, k_dur);
}

int tb_copy(struct tb *tb, double call_ts, double call_dur, int stream, const char *copy, double c_ts,
            double c_dur)
{
    char args[128];
    int corr = tb_call(tb, TB_MAIN, "cudaMemcpyAsync", call_ts, call_dur);
    snprintf(args, sizeof args, "\"correlation\": %d, \"stream\": %d, \"device\": 0, \"bytes\": 4096", corr,
             stream);
    tb_event(tb, "gpu_memcpy", copy, 0, stream, c_ts, c_dur, args);
    return corr;
}

void tb_flow(struct tb *tb, char phase, const char *cat, int id, int pid, int tid, double ts)
{
    put(tb, "%s\n{\"ph\": \"%c\", \"id\": %d, \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"cat\": \"%s\", "
            "\"name\": \"%s\"%s}",
        tb->events++ ? "," : "", phase, id, pid, tid, 1000000.0 + ts, cat, cat, phase == 'f' ? ", \"bp\": \"e\"" : "");
}

const char *tb_write(struct tb *tb, const char *name)
{
    put(tb, "\n]}\n");
    const char *path = th_write_file(name, tb->buf, tb->len);
    tb->len -= 4; /* more events may follow for another write */
    return path;
}

struct model_job *tb_job(const char *const *paths, size_t n)
{
    struct model_job *job = NULL;
    struct sc_error err;
    if (model_job_load(paths, n, NULL, 1, &job, &err)) {
        sc_check_fail(__FILE__, __LINE__, "cannot load the fixture: %s", err.msg);
        return NULL;
    }
    return job;
}
