/* tests/helpers.c: paths, temporary files and child processes for tests. */
#include "tests/helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/check.h"
#include "common/banned.h"

static char build_dir[PATH_MAX];

__attribute__((constructor)) static void find_build_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *env = getenv("STEPCAST_BUILD");
    if (env && *env) {
        snprintf(build_dir, sizeof build_dir, "%s", env);
        return;
    }
    if (n <= 0) {
        snprintf(build_dir, sizeof build_dir, "build");
        return;
    }
    exe[n] = '\0';
    /* <build>/tests/stepcast-tests -> <build> */
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
    }
    snprintf(build_dir, sizeof build_dir, "%s", exe);
}

const char *th_build_path(const char *name)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", build_dir, name);
    return p;
}

const char *th_shared_dir(const char *sub)
{
    static char p[PATH_MAX];
    struct stat st;
    const char *env = getenv("STEPCAST_SHARED");
    snprintf(p, sizeof p, "%s/%s", env && *env ? env : "../shared", sub);
    if (stat(p, &st) || !S_ISDIR(st.st_mode))
        SKIP("the shared folder %s is not here: put the shared folder beside the repository "
             "or set STEPCAST_SHARED", p);
    return p;
}

const char *th_shared_traces(void)
{
    return th_shared_dir("traces");
}

const char *th_shared_path(const char *rel)
{
    static char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", th_shared_traces(), rel);
    if (stat(p, &st))
        SKIP("shared trace %s is missing", p);
    return p;
}

const char *th_shared_calibration(const char *rel)
{
    static char p[PATH_MAX];
    struct stat st;
    const char *env = getenv("STEPCAST_SHARED");
    snprintf(p, sizeof p, "%s/calibration/%s", env && *env ? env : "../shared", rel);
    if (stat(p, &st))
        SKIP("the shared calibration file %s is not here: put the shared folder beside "
             "the repository or set STEPCAST_SHARED", p);
    return p;
}

static char tmp_root[PATH_MAX];

static void remove_tmp(void)
{
    char cmd[PATH_MAX + 16];
    if (!tmp_root[0] || getenv("SC_KEEP_TMP"))
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_root);
}

double th_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *th_tmpdir(void)
{
    if (!tmp_root[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp_root, sizeof tmp_root, "%s/stepcast-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmp_root)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_tmp);
    }
    return tmp_root;
}

const char *th_write_file(const char *name, const void *data, size_t n)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", th_tmpdir(), name);
    FILE *f = fopen(p, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
        perror(p);
        exit(1);
    }
    return p;
}

const char *th_write_gzip(const char *name, const void *data, size_t n)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", th_tmpdir(), name);
    gzFile g = gzopen(p, "wb");
    if (!g || (n && gzwrite(g, data, (unsigned)n) != (int)n) || gzclose(g) != Z_OK) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(1);
    }
    return p;
}

char *th_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = (len + 65536 + 1) * 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        size_t r = fread(buf + len, 1, 65536, f);
        len += r;
        if (r == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    if (n)
        *n = len;
    return buf;
}

/* Drain fd into a malloc'd string. */
static char *slurp_fd(int fd)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = (len + 4096 + 1) * 2;
            char *b = realloc(buf, cap);
            if (!b)
                break;
            buf = b;
        }
        ssize_t r = read(fd, buf + len, 4096);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

int th_run(char *const argv[], char **out, char **err)
{
    char opath[PATH_MAX], epath[PATH_MAX];
    snprintf(opath, sizeof opath, "%s/run-out-XXXXXX", th_tmpdir());
    snprintf(epath, sizeof epath, "%s/run-err-XXXXXX", th_tmpdir());
    int ofd = mkstemp(opath), efd = mkstemp(epath);
    if (ofd < 0 || efd < 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(ofd, 1);
        dup2(efd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    lseek(ofd, 0, SEEK_SET);
    lseek(efd, 0, SEEK_SET);
    if (out)
        *out = slurp_fd(ofd);
    if (err)
        *err = slurp_fd(efd);
    close(ofd);
    close(efd);
    unlink(opath);
    unlink(epath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *th_run_expect(char *const argv[], int status, const char *out_contains, const char *err_contains)
{
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(th_run(argv, &out, &err), status);
    if (out_contains)
        CHECK_CONTAINS(out, out_contains);
    if (err_contains)
        CHECK_CONTAINS(err, err_contains);
    free(err);
    return out;
}
