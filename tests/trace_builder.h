/* tests/trace_builder.h: small Kineto traces written from C, for tests of
 * the graph and the replay. Times are in microseconds, like the format.
 *
 *     struct tb tb;
 *     tb_init(&tb, 0);                          // rank 0
 *     tb_step(&tb, 1, 0, 1000);                 // ProfilerStep#1 at 0 for 1000 us
 *     tb_launch(&tb, 10, 5, 7, "k", 20, 100);   // call at 10 (5 us) -> kernel on stream 7
 *     const char *path = tb_write(&tb, "t.json");
 */
#ifndef TESTS_TRACE_BUILDER_H
#define TESTS_TRACE_BUILDER_H

#include <stddef.h>

struct model_job;

struct tb {
    char *buf;
    size_t len, cap;
    int rank, world;
    int corr;
    int events;
};

enum { TB_MAIN = 100, TB_SIDE = 101 }; /* thread ids */
enum { TB_PID = 10 };                   /* the process of the CPU events */

void tb_init(struct tb *tb, int rank, int world);
/* The same with distributedInfo.pg_config, a JSON array (NULL: none). */
void tb_init_pgs(struct tb *tb, int rank, int world, const char *pg_config);
void tb_free(struct tb *tb);
/* Any complete event. */
void tb_event(struct tb *tb, const char *cat, const char *name, int pid, int tid, double ts, double dur,
              const char *args);
/* ProfilerStep#n on the main thread. */
void tb_step(struct tb *tb, int n, double ts, double dur);
/* A runtime call on a thread; returns its correlation id. */
int tb_call(struct tb *tb, int tid, const char *name, double ts, double dur);
/* A cpu_op on a thread. */
void tb_op(struct tb *tb, int tid, const char *name, double ts, double dur);
/* cudaLaunchKernel on the main thread at call_ts, running `kernel` on
 * `stream` at k_ts for k_dur; returns the correlation id. */
int tb_launch(struct tb *tb, double call_ts, double call_dur, int stream, const char *kernel, double k_ts,
              double k_dur);
/* The same from thread tid. */
int tb_launch_on(struct tb *tb, int tid, double call_ts, double call_dur, int stream, const char *kernel,
                 double k_ts, double k_dur);
/* cudaMemcpyAsync launching a copy named `copy` (e.g. "Memcpy DtoH (Device -> Pageable)"). */
int tb_copy(struct tb *tb, double call_ts, double call_dur, int stream, const char *copy, double c_ts,
            double c_dur);
/* A kernel with explicit args (collectives). */
void tb_kernel_args(struct tb *tb, int corr, int stream, const char *kernel, double ts, double dur,
                    const char *extra_args);
/* One end of a flow arrow: phase 's' or 'f', category `cat` (ac2g, fwdbwd). */
void tb_flow(struct tb *tb, char phase, const char *cat, int id, int pid, int tid, double ts);
/* Write "<tmp>/<name>" and return its path (static buffer). */
const char *tb_write(struct tb *tb, const char *name);
/* Load traces written by tb_write as one job (fails the test on error). */
struct model_job *tb_job(const char *const *paths, size_t n);

#endif
