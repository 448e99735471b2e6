/* tests/helpers.h: what test cases share besides check.h.
 *
 * Paths: the build directory (where stepcast and stepcastd are) is the
 * parent of the test binary's directory; the shared real traces are
 * ../shared/traces from the repository root, or $STEPCAST_SHARED/traces.
 * Tests run from the repository root. */
#ifndef TESTS_HELPERS_H
#define TESTS_HELPERS_H

#include <stddef.h>

/* "<build>/<name>" in a static buffer; the build directory ("build",
 * "build/asan") is the one the test runner was built in. */
const char *th_build_path(const char *name);
/* ../shared/traces, or SKIP()s the test with a clear message when absent. */
const char *th_shared_traces(void);
/* "<shared traces>/<rel>" in a static buffer (the next call overwrites it),
 * skipping when absent. */
const char *th_shared_path(const char *rel);
/* "<shared>/calibration/<rel>" (static buffer), skipping when absent. */
const char *th_shared_calibration(const char *rel);

/* "<shared>/<sub>" (../shared or $STEPCAST_SHARED), e.g. "models/hf", or
 * SKIP()s the test with a clear message when that folder is absent. */
const char *th_shared_dir(const char *sub);

/* A fresh temporary directory (removed at exit of the test process). */
const char *th_tmpdir(void);
/* Monotonic seconds, to time what a test waits for. */
double th_now_s(void);
/* Write n bytes to "<tmpdir>/<name>"; returns the path (static buffer). */
const char *th_write_file(const char *name, const void *data, size_t n);
/* The whole file, NUL-terminated, from malloc; NULL on error. */
char *th_read_file(const char *path, size_t *n);
/* gzip data into "<tmpdir>/<name>"; returns the path. */
const char *th_write_gzip(const char *name, const void *data, size_t n);

/* Run argv (argv[0] a path), capture stdout and stderr (malloc'd, may be
 * NULL to discard); returns the exit status, or -1 if it did not exit. */
int th_run(char *const argv[], char **out, char **err);

/* th_run, CHECKing its exit status and that its stdout and stderr contain
 * the given texts (NULL: anything); returns its stdout (free it). */
char *th_run_expect(char *const argv[], int status, const char *out_contains, const char *err_contains);

#endif
