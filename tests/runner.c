/* tests/runner.c: runs the registered tests (check.h), each in a child
 * process with a time limit, and ends with `N passed, N failed`.
 *
 *   stepcast-tests [--list] [SUBSTRING...]
 *
 * With substrings, only tests whose names contain one of them run.
 * SC_TEST_TIMEOUT (seconds, default 300) bounds each test. Exit status is 0
 * when nothing failed and at least one test ran. */
#include "tests/check.h"

#include <errno.h>
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

int main(int argc, char **argv)
{
    int passed = 0, failed = 0, skipped = 0, first = 1;
    unsigned timeout = 300;
    const char *env = getenv("SC_TEST_TIMEOUT");

    if (env && *env)
        timeout = (unsigned)strtoul(env, NULL, 10);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (struct sc_test *t = head; t; t = t->next)
            printf("%s\n", t->name);
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("STEPCAST_CHECK_GRAPHS", "1", 0); /* every graph built checked (model/graph_check.h) */
    for (struct sc_test *t = head; t; t = t->next) {
        if (!selected(t, argc, argv, first))
            continue;
        double t0 = now_s();
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            alarm(timeout);
            t->fn();
            fflush(stdout);
            exit(sc_check_failures ? 1 : 0);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        double dt = now_s() - t0;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            passed++;
            printf("ok   %-52s %7.2fs\n", t->name, dt);
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP) {
            skipped++;
            printf("skip %s\n", t->name);
        } else {
            failed++;
            if (WIFSIGNALED(status))
                printf("FAIL %-52s (signal %d%s)\n", t->name, WTERMSIG(status),
                       WTERMSIG(status) == SIGALRM ? ": timed out" : "");
            else
                printf("FAIL %-52s (%s)\n", t->name, t->file);
        }
    }
    if (skipped)
        printf("%d skipped\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0 || passed + skipped == 0;
}
