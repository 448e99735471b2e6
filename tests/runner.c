/* tests/runner.c: runs the registered tests (check.h), each in a child
 * process with a time limit, and ends with `N passed, N failed`.
 *
 *   stepcast-tests [--list] [-j N] [SUBSTRING...]
 *
 * With substrings, only tests whose names contain one of them run.
 * SC_TEST_TIMEOUT (seconds, default 300) bounds each test. -j N runs up to
 * N tests at once (most of them wait on daemons, PostgreSQL or the disk),
 * each one's output held back and printed with its `ok` line; the
 * TEST_ALONE tests, which time what they assert, run after the others,
 * one at a time with nothing beside them. Without -j, or -j 1, every test
 * runs in turn, its output as it comes. Exit status is 0 when nothing
 * failed and at least one test ran. */
#include "tests/check.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/banned.h"

enum { EXIT_SKIP = 77 };

static struct sc_test *head, *tail;
int sc_check_failures;

void sc_test_register(struct sc_test *t)
{
    t->next = NULL;
    if (tail)
        tail->next = t;
    else
        head = t;
    tail = t;
}

void sc_check_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    sc_check_failures++;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void sc_require_fail(const char *file, int line, const char *cond)
{
    sc_check_fail(file, line, "REQUIRE(%s): the test cannot go on", cond);
    fflush(stdout);
    exit(1);
}

void sc_test_skip(const char *fmt, ...)
{
    va_list ap;
    printf("     skip reason: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(sc_check_failures ? 1 : EXIT_SKIP);
}

static int selected(const struct sc_test *t, int argc, char **argv, int first)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++)
        if (strstr(t->name, argv[i]))
            return 1;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A test running: its child, when it started, and (with -j) the file its
 * output goes to. */
struct running {
    struct sc_test *t;
    pid_t pid;
    double t0;
    FILE *out;
};

struct totals {
    int passed, failed, skipped;
};

/* Start test t in a child; out (may be NULL: ours) gets its output. */
static int start(struct running *r, struct sc_test *t, FILE *out, unsigned timeout)
{
    r->t = t;
    r->out = out;
    r->t0 = now_s();
    fflush(stdout);
    fflush(stderr);
    r->pid = fork();
    if (r->pid < 0) {
        perror("fork");
        return -1;
    }
    if (r->pid == 0) {
        if (out && (dup2(fileno(out), STDOUT_FILENO) < 0 || dup2(fileno(out), STDERR_FILENO) < 0)) {
            perror("dup2");
            _exit(1);
        }
        alarm(timeout);
        t->fn();
        fflush(stdout);
        exit(sc_check_failures ? 1 : 0);
    }
    return 0;
}

/* Print what the finished test r left in its file, then its line. */
static void report(struct running *r, int status, struct totals *n)
{
    double dt = now_s() - r->t0;
    if (r->out) {
        char buf[8192];
        size_t k;
        fflush(stdout);
        rewind(r->out);
        while ((k = fread(buf, 1, sizeof buf, r->out)) > 0)
            fwrite(buf, 1, k, stdout);
        fclose(r->out);
        r->out = NULL;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        n->passed++;
        printf("ok   %-52s %7.2fs\n", r->t->name, dt);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP) {
        n->skipped++;
        printf("skip %s\n", r->t->name);
    } else {
        n->failed++;
        if (WIFSIGNALED(status))
            printf("FAIL %-52s (signal %d%s)\n", r->t->name, WTERMSIG(status),
                   WTERMSIG(status) == SIGALRM ? ": timed out" : "");
        else
            printf("FAIL %-52s (%s)\n", r->t->name, r->t->file);
    }
    fflush(stdout);
}

/* Wait for one of the n tests in run[] to end, report it and drop it
 * (the last takes its place). */
static int reap(struct running *run, size_t *n, struct totals *tot)
{
    int status = 0;
    pid_t pid;
    while ((pid = wait(&status)) < 0 && errno == EINTR)
        ;
    if (pid < 0) {
        perror("wait");
        return -1;
    }
    for (size_t i = 0; i < *n; i++)
        if (run[i].pid == pid) {
            report(&run[i], status, tot);
            run[i] = run[--*n];
            return 0;
        }
    return 0; /* a grandchild reparented to us (none are): not a test */
}

/* Run the selected tests of one kind (alone or not), up to `jobs` at a
 * time; with jobs > 1 each one's output goes to a file of its own. */
static int run_tests(int alone, size_t jobs, unsigned timeout, int argc, char **argv, struct totals *tot)
{
    struct running run[64];
    size_t n = 0;
    if (jobs > sizeof run / sizeof run[0])
        jobs = sizeof run / sizeof run[0];
    for (struct sc_test *t = head; t; t = t->next) {
        if (!selected(t, argc, argv, 1) || (jobs > 1 && t->alone != alone))
            continue;
        size_t width = t->alone ? 1 : jobs;
        while (n >= width)
            if (reap(run, &n, tot))
                return -1;
        FILE *out = NULL;
        if (jobs > 1 && !(out = tmpfile())) {
            perror("tmpfile");
            return -1;
        }
        if (start(&run[n], t, out, timeout)) {
            if (out)
                fclose(out);
            return -1;
        }
        n++;
    }
    while (n > 0)
        if (reap(run, &n, tot))
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct totals tot = {0, 0, 0};
    unsigned timeout = 300;
    size_t jobs = 1;
    const char *env = getenv("SC_TEST_TIMEOUT");

    if (env && *env)
        timeout = (unsigned)strtoul(env, NULL, 10);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (struct sc_test *t = head; t; t = t->next)
            printf("%s\n", t->name);
        return 0;
    }
    for (int i = 1; i < argc; i++) { /* -j N or -jN, anywhere: taken out of argv */
        if (strncmp(argv[i], "-j", 2) != 0)
            continue;
        int used = argv[i][2] ? 1 : 2;
        const char *v = argv[i][2] ? argv[i] + 2 : i + 1 < argc ? argv[i + 1] : "";
        char *end;
        long j = strtol(v, &end, 10);
        if (!*v || *end || j < 1 || j > 64) {
            fprintf(stderr, "stepcast-tests: -j takes a number of tests from 1 to 64, not '%s'\n", v);
            return 2;
        }
        jobs = (size_t)j;
        for (int k = i; k + used < argc; k++)
            argv[k] = argv[k + used];
        argc -= used;
        i--;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("STEPCAST_CHECK_GRAPHS", "1", 0); /* every graph built checked (model/graph_check.h) */
    if (run_tests(0, jobs, timeout, argc, argv, &tot) ||
        (jobs > 1 && run_tests(1, jobs, timeout, argc, argv, &tot)))
        return 1;
    if (tot.skipped)
        printf("%d skipped\n", tot.skipped);
    printf("%d passed, %d failed\n", tot.passed, tot.failed);
    return tot.failed != 0 || tot.passed + tot.skipped == 0;
}
