/* profiler/tests/test_session.c: the whole session driven through a fake
 * CUPTI: claiming CUPTI and stepping aside, failures turning tracing off
 * with one message, recording, the step window, the trace at the end. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "model/trace.h"
#include "profiler/config.h"
#include "profiler/exports.h"
#include "profiler/log.h"
#include "profiler/nccl.h"
#include "profiler/session.h"
#include "profiler/tests/synth.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char *stderr_path;
static int saved_stderr = -1;

/* Send stderr to a file, to count the library's lines, until captured(). */
static void capture_stderr(void)
{
    stderr_path = th_write_file("stderr.txt", "", 0);
    int fd = open(stderr_path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    fflush(stderr);
    saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}

static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

/* What was written since capture_stderr(); stderr is the test's again, so
 * a failing CHECK after this is seen. */
static char *captured(void)
{
    fflush(stderr);
    if (saved_stderr >= 0) {
        dup2(saved_stderr, 2);
        close(saved_stderr);
        saved_stderr = -1;
    }
    return th_read_file(stderr_path, NULL);
}

static void config(struct prof_config *c)
{
    char why[128];
    CHECK_EQ_INT(prof_config_load(c, getenv, why, sizeof why), 0);
    snprintf(c->dir, sizeof c->dir, "%s/out", th_tmpdir());
    c->flush_ms = 60000; /* the test drains by hand */
    c->quiet = 1;
}

TEST(prof_session_steps_aside_when_cupti_is_taken)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001,
                                   .subscribe = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                                   .holder = "CUPTI for Kineto"};
    capture_stderr();
    config(&c);
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_OFF);
    CHECK_EQ_INT(prof_session_state(), PROF_OFF);
    CHECK(synth_cupti_log()->request == NULL); /* no buffers registered */
    CHECK_EQ_INT(synth_cupti_log()->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], 0);
    char *err = captured();
    CHECK_EQ_INT(count_lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "already in use by CUPTI for Kineto");
    CHECK_CONTAINS(err, "the job runs untraced");
    free(err);
}

TEST(prof_session_off_without_gpu_one_message)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001, .subscribe = CUPTI_ERROR_UNKNOWN};
    capture_stderr();
    config(&c);
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_OFF);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_OFF); /* and again: still one line */
    char *err = captured();
    CHECK_EQ_INT(count_lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "cuptiSubscribe failed: CUPTI_ERROR_UNKNOWN");
    free(err);
}

TEST(prof_session_required_kind_failure_undoes_everything)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001,
                                   .failing_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                   .enable_error = CUPTI_ERROR_UNKNOWN};
    capture_stderr();
    config(&c);
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_OFF);
    struct synth_cupti_log *l = synth_cupti_log();
    for (int k = 0; k < 64; k++)
        CHECK_EQ_INT(l->enabled[k], l->disabled[k]);
    CHECK(l->enabled[CUPTI_ACTIVITY_KIND_RUNTIME] == 1);
    CHECK_EQ_INT(l->subscribed, 1);
    CHECK_EQ_INT(l->unsubscribed, 1);
    char *err = captured();
    CHECK_EQ_INT(count_lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "cuptiActivityEnable(CONCURRENT_KERNEL) failed");
    free(err);
}

TEST(prof_session_refuses_old_cupti_and_bad_dirs)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 21};
    capture_stderr();
    config(&c);
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_OFF);
    CHECK_EQ_INT(synth_cupti_log()->subscribed, 0);
    prof_log_reset();
    s.version = 130001;
    synth_cupti_make(&fake, &s);
    snprintf(c.dir, sizeof c.dir, "/proc/no-such-dir/x");
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_OFF);
    char *err = captured();
    CHECK_CONTAINS(err, "CUPTI API version 21 is older");
    CHECK_CONTAINS(err, "cannot create or write the output directory");
    free(err);
}

static void records(struct synth_buf *b, uint32_t first_step, uint32_t n_steps)
{
    static char names[16][32];
    for (uint32_t s = first_step; s < first_step + n_steps; s++) {
        uint64_t t = 1700000000000000000ull + (uint64_t)s * 1000000;
        char *name = names[s % 16];
        snprintf(name, sizeof names[0], "ProfilerStep#%u", s);
        synth_marker(b, CUPTI_ACTIVITY_FLAG_MARKER_START, t, s + 1, 100, 100, name);
        synth_api(b, 1, 211, t + 1000, t + 2000, 100, 100, s * 10 + 1);
        synth_kernel(b, t + 3000, t + 9000, s * 10 + 1, 0, 1, 7, "step_kernel");
        synth_marker(b, CUPTI_ACTIVITY_FLAG_MARKER_END, t + 999000, s + 1, 100, 100, NULL);
    }
}

TEST(prof_session_records_and_writes_the_trace)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001,
                                   .failing_kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT,
                                   .enable_error = CUPTI_ERROR_NOT_SUPPORTED};
    struct synth_buf b;
    struct prof_layout l;
    config(&c);
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
    struct synth_cupti_log *log = synth_cupti_log();
    CHECK_EQ_INT(log->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], 1);
    CHECK_EQ_INT(log->enabled[CUPTI_ACTIVITY_KIND_KERNEL], 0); /* never the serialising kind */
    CHECK_EQ_INT(log->enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION], 1);
    CHECK_EQ_INT(log->enabled[CUPTI_ACTIVITY_KIND_DRIVER], 1);
    CHECK(log->runtime_filtered > 0 && log->driver_filtered > 0);
    prof_layout_for_version(130001, &l);
    synth_init(&b, &l, 0);
    records(&b, 0, 3);
    synth_cupti_deliver(&b);
    synth_release(&b);
    synth_init(&b, &l, 0);
    for (uint32_t i = 0; i < 3; i++)
        synth_kernel(&b, 1700000000000000000ull + 500000 + i, 1700000000000000000ull + 600000 + i,
                     1, 0, 1, 8, "more");
    synth_cupti_deliver(&b);
    prof_session_drain();
    CHECK_EQ_INT(prof_session_finish(), 0);
    CHECK_EQ_INT(prof_session_state(), PROF_DONE);
    CHECK_EQ_INT(prof_session_finish(), -1); /* once */
    CHECK(log->forced_flushes >= 1);
    CHECK_EQ_INT(log->disabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], 1);
    CHECK_EQ_INT(log->unsubscribed, 1);
    const char *out = prof_session_output();
    CHECK_CONTAINS(out, "/out/stepcast_");
    CHECK_CONTAINS(out, ".pt.trace.json");
    struct model_trace *t = NULL;
    struct sc_error err;
    CHECK_EQ_INT(model_trace_load_file(out, NULL, &t, &err), SC_OK);
    if (t) {
        CHECK_EQ_INT(t->n_steps, 3);
        size_t kernels = 0;
        for (size_t i = 0; i < t->n_events; i++)
            kernels += t->events[i].kind == MODEL_EV_KERNEL;
        CHECK_EQ_INT(kernels, 6);
    }
    model_trace_free(t);
    char *text = th_read_file(out, NULL);
    CHECK_CONTAINS(text, "CUDA_EVENT: CUPTI_ERROR_SOMETHING");
    free(text);
    synth_release(&b);
    prof_session_reset();
}

TEST(prof_session_step_window)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001};
    struct synth_buf b;
    struct prof_layout l;
    config(&c);
    c.window_first = 4;
    c.window_last = 5;
    c.gzip = 1;
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
    prof_layout_for_version(130001, &l);
    for (uint32_t step = 0; step < 8; step++) {
        synth_init(&b, &l, 0);
        records(&b, step, 1);
        synth_cupti_deliver(&b);
        prof_session_drain();
        synth_release(&b);
    }
    CHECK_EQ_INT(prof_session_finish(), 0);
    struct model_trace *t = NULL;
    struct sc_error err;
    CHECK_CONTAINS(prof_session_output(), ".json.gz");
    CHECK_EQ_INT(model_trace_load_file(prof_session_output(), NULL, &t, &err), SC_OK);
    if (t) {
        CHECK_EQ_INT(t->n_steps, 2);
        if (t->n_steps == 2) {
            CHECK_STREQ(model_str(t, t->steps[0].name), "ProfilerStep#4");
            CHECK_STREQ(model_str(t, t->steps[1].name), "ProfilerStep#5");
        }
        size_t kernels = 0;
        for (size_t i = 0; i < t->n_events; i++)
            kernels += t->events[i].kind == MODEL_EV_KERNEL;
        CHECK_EQ_INT(kernels, 2);
    }
    model_trace_free(t);
    prof_session_reset();
}

/* A process that only set CUDA up (a torch.compile worker: runtime calls,
 * no kernel, copy or memset) writes no trace; one whose session has
 * something to say (an activity kind refused) still writes its trace,
 * with no GPU work in it. */
TEST(prof_session_writes_no_trace_without_gpu_work)
{
    for (int k = 0; k < 2; k++) {
        struct prof_config c;
        struct prof_cupti fake;
        struct synth_cupti_script s = {.version = 130001};
        struct synth_buf b;
        struct prof_layout l;
        if (k) {
            s.failing_kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
            s.enable_error = CUPTI_ERROR_NOT_SUPPORTED;
        }
        config(&c);
        synth_cupti_make(&fake, &s);
        CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
        prof_layout_for_version(130001, &l);
        synth_init(&b, &l, 0);
        for (uint32_t i = 0; i < 3; i++)
            synth_api(&b, 1, 1, 1700000000000000000ull + 1000 * i, 1700000000000000000ull + 1000 * i + 500, 100,
                      100, 10 + i);
        synth_cupti_deliver(&b);
        prof_session_drain();
        CHECK_EQ_INT(prof_session_finish(), 0);
        if (!k) {
            CHECK_STREQ(prof_session_output(), "");
        } else {
            char *text = th_read_file(prof_session_output(), NULL);
            CHECK(text != NULL);
            CHECK_CONTAINS(text ? text : "", "CUDA_EVENT: CUPTI_ERROR_SOMETHING");
            free(text);
        }
        synth_release(&b);
        prof_session_reset();
    }
}

/* Another client finalized CUPTI under us (torch.profiler's teardown): the
 * periodic flush fails; tracing stops with one message, keeps what it had,
 * and leaves the activity kinds alone (they may be the other client's now). */
TEST(prof_session_steps_aside_when_taken_over)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001, .flush_error = CUPTI_ERROR_NOT_INITIALIZED};
    struct synth_buf b;
    struct prof_layout l;
    capture_stderr();
    config(&c);
    c.flush_ms = 10;
    synth_cupti_make(&fake, &s);
    prof_layout_for_version(130001, &l);
    synth_init(&b, &l, 0);
    records(&b, 0, 1);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
    synth_cupti_deliver(&b);
    for (int i = 0; i < 500 && prof_session_state() != PROF_DONE; i++)
        usleep(10000);
    CHECK_EQ_INT(prof_session_state(), PROF_DONE);
    CHECK_EQ_INT(synth_cupti_log()->disabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], 0);
    CHECK_EQ_INT(synth_cupti_log()->unsubscribed, 1);
    char *err = captured();
    CHECK_EQ_INT(count_lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "another CUPTI client took over CUPTI");
    free(err);
    struct model_trace *t = NULL;
    struct sc_error e;
    CHECK_EQ_INT(model_trace_load_file(prof_session_output(), NULL, &t, &e), SC_OK);
    CHECK(t && t->n_steps == 1);
    model_trace_free(t);
    synth_release(&b);
    prof_session_reset();
}

/* Before the job uses CUDA, flushes may fail: that is not a takeover. */
TEST(prof_session_flush_failures_before_records_are_not_a_takeover)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001, .flush_error = CUPTI_ERROR_NOT_INITIALIZED};
    capture_stderr();
    config(&c);
    c.flush_ms = 10;
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
    usleep(200000);
    CHECK(synth_cupti_log()->flushes >= 5);
    CHECK_EQ_INT(prof_session_state(), PROF_RUNNING);
    CHECK_EQ_INT(prof_session_finish(), 0);
    char *err = captured();
    CHECK_EQ_INT(count_lines(err, "stepcast-prof: "), 0);
    free(err);
    prof_session_reset();
}

/* A buffer lent to CUPTI that even the final forced flush does not return
 * went to another client's callbacks: said once, the trace still written. */
TEST(prof_session_notices_lost_buffers)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001};
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    capture_stderr();
    config(&c);
    synth_cupti_make(&fake, &s);
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
    synth_cupti_log()->request(&buf, &size, &max);
    CHECK(buf != NULL && size == c.buffer_kb * 1024 && max == 0);
    CHECK_EQ_INT(prof_session_finish(), 0);
    char *err = captured();
    CHECK_EQ_INT(count_lines(err, "stepcast-prof: "), 1);
    CHECK_CONTAINS(err, "took CUPTI's activity buffers");
    free(err);
    char *text = th_read_file(prof_session_output(), NULL);
    CHECK_CONTAINS(text, "1 activity buffers never came back");
    free(text);
    prof_session_reset();
}

/* A forked child (a DataLoader worker) must not touch CUPTI nor write a
 * trace; the parent's session goes on. */
TEST(prof_session_forked_child_stays_out)
{
    struct prof_config c;
    struct prof_cupti fake;
    struct synth_cupti_script s = {.version = 130001};
    config(&c);
    synth_cupti_make(&fake, &s);
    prof_nccl_mark_injected(prof_nccl()); /* as InitializeInjection does */
    CHECK_EQ_INT(prof_session_start(&c, &fake), PROF_RUNNING);
    int flushes = synth_cupti_log()->flushes;
    pid_t pid = fork();
    if (pid == 0) {
        void *ctx = NULL;
        int mask = -1;
        int ok = prof_session_state() == PROF_DONE && prof_session_finish() == -1 &&
                 ncclProfiler_v5.init(&ctx, 1, &mask, "x", 1, 2, 0, NULL) == 0 && mask == 0 &&
                 synth_cupti_log()->flushes == flushes;
        /* _exit: the test harness's own exit handler would remove the temporary
         * directory; the profiler's (prof_session_finish, checked above) is a no-op */
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_INT(prof_session_state(), PROF_RUNNING);
    struct synth_buf b; /* the parent's step, whose trace it writes */
    struct prof_layout l;
    prof_layout_for_version(130001, &l);
    synth_init(&b, &l, 0);
    records(&b, 0, 1);
    synth_cupti_deliver(&b);
    prof_session_drain();
    synth_release(&b);
    CHECK_EQ_INT(prof_session_finish(), 0);
    int files = 0;
    DIR *d = opendir(c.dir);
    for (struct dirent *e; d && (e = readdir(d));)
        files += strncmp(e->d_name, "stepcast_", 9) == 0;
    if (d)
        closedir(d);
    CHECK_EQ_INT(files, 1);
    prof_session_reset();
}
