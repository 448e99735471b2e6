/* tests/integration/svc_harness.c: starting stepcastd, HTTP calls, raw
 * sockets, store fingerprints (svc_harness.h). */
#define _GNU_SOURCE /* unshare() and its CLONE_ flags */
#include "tests/integration/svc_harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

long long svc_peak_rss(const struct svc_daemon *d)
{
    char path[64], *status;
    snprintf(path, sizeof path, "/proc/%d/status", (int)d->pid);
    status = th_read_file(path, NULL);
    const char *hwm = status ? strstr(status, "VmHWM:") : NULL;
    long long kb = hwm ? strtoll(hwm + 6, NULL, 10) : -1;
    free(status);
    return kb * 1024;
}

void svc_dump_log(const struct svc_daemon *d)
{
    char *log = th_read_file(d->log, NULL);
    if (log) {
        size_t n = strlen(log);
        fprintf(stderr, "---- daemon log (last 6000 bytes) ----\n%s\n----\n", n > 6000 ? log + n - 6000 : log);
    }
    free(log);
}

/* Fork and exec stepcastd, its log and port file named <tmp>/<name>.log
 * and <tmp>/<name>.port ("daemon": daemon.log and port, as ever). */
static void spawn(struct svc_daemon *d, const char *data_dir, const char *const *args, const char *const *env,
                  const char *name)
{
    const char *bin = th_build_path("stepcastd");
    char *argv[64], data[PATH_MAX];
    int n = 0;
    if (data_dir) /* may be d->data itself (a restart) */
        snprintf(data, sizeof data, "%s", data_dir);
    else
        snprintf(data, sizeof data, "%s/data", th_tmpdir());
    memset(d, 0, sizeof *d);
    memcpy(d->data, data, sizeof d->data);
    snprintf(d->log, sizeof d->log, "%s/%s.log", th_tmpdir(), name);
    if (!strcmp(name, "daemon"))
        snprintf(d->portfile, sizeof d->portfile, "%s/port", th_tmpdir());
    else
        snprintf(d->portfile, sizeof d->portfile, "%s/%s.port", th_tmpdir(), name);
    unlink(d->portfile);
    argv[n++] = (char *)bin;
    argv[n++] = "--data-dir";
    argv[n++] = d->data;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--port-file";
    argv[n++] = d->portfile;
    argv[n++] = "--request-timeout";
    argv[n++] = "5";
    argv[n++] = "--drain-timeout";
    argv[n++] = "20";
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        setenv("STEPCAST_ADMIN_TOKEN", SVC_ADMIN, 1);
        setenv("STEPCAST_REPLICA_NAME", SVC_REPLICA, 1);
        unsetenv("STEPCAST_FAILPOINT");
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    d->pid = pid;
}

/* Wait for a spawned daemon's port file. */
static void await_start(struct svc_daemon *d)
{
    pid_t pid = d->pid;
    for (double t0 = th_now_s(); th_now_s() - t0 < 30;) {
        char *p = th_read_file(d->portfile, NULL);
        if (p && *p) {
            d->port = (int)strtol(p, NULL, 10);
            free(p);
            snprintf(d->url, sizeof d->url, "http://127.0.0.1:%d", d->port);
            return;
        }
        free(p);
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            d->pid = 0;
            svc_dump_log(d);
            sc_check_fail(__FILE__, __LINE__, "stepcastd exited at startup (status %d)", st);
            exit(1);
        }
        sleep_ms(10);
    }
    svc_dump_log(d);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    d->pid = 0;
    sc_check_fail(__FILE__, __LINE__, "stepcastd did not start in 30 s");
    exit(1);
}

void svc_start(struct svc_daemon *d, const char *data_dir, const char *const *args,
               const char *const *env)
{
    spawn(d, data_dir, args, env, "daemon");
    await_start(d);
}

void svc_start_replica(struct svc_daemon *d, const char *name, const char *const *args, const char *const *env)
{
    char data[PATH_MAX];
    snprintf(data, sizeof data, "%s/%s", th_tmpdir(), name);
    spawn(d, data, args, env, name);
    await_start(d);
}

void svc_start_many(struct svc_daemon *d, size_t n, const char *const *data_dirs, const char *const *args,
                    const char *const *env)
{
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "daemon-%zu", i);
        spawn(&d[i], data_dirs[i], args, env, name);
    }
    for (size_t i = 0; i < n; i++)
        await_start(&d[i]);
}

static int wait_status(pid_t pid, double timeout_s, int *status)
{
    for (double t0 = th_now_s(); th_now_s() - t0 < timeout_s; sleep_ms(5)) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
    return -1;
}

static int decode(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -999;
}

int svc_stop(struct svc_daemon *d)
{
    int st = 0;
    if (!d->pid)
        return -1000;
    kill(d->pid, SIGTERM);
    if (wait_status(d->pid, 60, &st)) {
        svc_dump_log(d);
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &st, 0);
        d->pid = 0;
        return -1000;
    }
    d->pid = 0;
    if (decode(st) != 0) /* a daemon that did not stop cleanly shows why */
        svc_dump_log(d);
    return decode(st);
}

void svc_kill9(struct svc_daemon *d)
{
    if (!d->pid)
        return;
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
}

int svc_wait_exit(struct svc_daemon *d, double timeout_s)
{
    int st = 0;
    if (!d->pid)
        return -1000;
    if (wait_status(d->pid, timeout_s, &st))
        return -1000;
    d->pid = 0;
    return decode(st);
}

void svc_resp_release(struct svc_resp *r)
{
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof *r);
}

struct buf {
    char *p;
    size_t n, cap;
};

/* Append (libcurl's write callback too); capacity doubles. */
static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    struct buf *b = ctx;
    size_t k = size * n;
    if (b->n + k + 1 > b->cap) {
        size_t cap = (b->n + k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return 0;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, k);
    b->n += k;
    b->p[b->n] = '\0';
    return k;
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

long svc_call(const struct svc_daemon *d, const char *method, const char *path,
              const struct svc_opts *o, struct svc_resp *out)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    struct buf body = {0}, hdr = {0};
    struct curl_slist *h = NULL;
    char url[4096], auth[512];
    FILE *f = NULL;
    long status = 0;
    pthread_once(&once, curl_init_once);
    CURL *c = curl_easy_init();
    if (!c)
        return 0;
    snprintf(url, sizeof url, "%s%s", d->url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hdr);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    h = curl_slist_append(h, "Expect:");
    if (o && o->token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->token);
        h = curl_slist_append(h, auth);
    }
    for (size_t i = 0; o && o->headers && o->headers[i]; i++)
        h = curl_slist_append(h, o->headers[i]);
    if (o && o->file) {
        struct stat st;
        if (!(f = fopen(o->file, "rb")) || fstat(fileno(f), &st)) {
            sc_check_fail(__FILE__, __LINE__, "cannot open %s", o->file);
            goto out;
        }
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READDATA, f);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    } else if (o && o->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, o->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
out:
    if (f)
        fclose(f);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (out) {
        out->status = status;
        out->body = body.p ? body.p : calloc(1, 1);
        out->len = body.n;
        out->headers = hdr.p ? hdr.p : calloc(1, 1);
    } else {
        free(body.p);
        free(hdr.p);
    }
    return status;
}

long svc_call_as(const struct svc_daemon *d, const char *token, const char *method, const char *path,
                 const char *body, struct svc_resp *out)
{
    struct svc_opts o = {token, body, body ? strlen(body) : 0, NULL, NULL};
    return svc_call(d, method, path, &o, out);
}

long svc_admin(const struct svc_daemon *d, const char *method, const char *path, const char *body,
               struct svc_resp *out)
{
    return svc_call_as(d, SVC_ADMIN, method, path, body, out);
}

int svc_connect(const struct svc_daemon *d)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)d->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

char *svc_raw(const struct svc_daemon *d, const void *data, size_t n, double wait_s)
{
    struct buf got = {0};
    int fd = svc_connect(d);
    if (fd < 0)
        return calloc(1, 1);
    for (size_t off = 0; off < n;) {
        ssize_t k = send(fd, (const char *)data + off, n - off, MSG_NOSIGNAL);
        if (k <= 0)
            break; /* the server may close before reading it all */
        off += (size_t)k;
    }
    for (double t0 = th_now_s(); th_now_s() - t0 < wait_s;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        char b[65536];
        ssize_t k = recv(fd, b, sizeof b, 0);
        if (k <= 0)
            break;
        on_data(b, 1, (size_t)k, &got);
    }
    close(fd);
    return got.p ? got.p : calloc(1, 1);
}

const char *svc_error_code(const struct svc_resp *r)
{
    static char code[64];
    json_t *doc = json_loads(r->body ? r->body : "", 0, NULL);
    const char *c = NULL;
    json_unpack(doc, "{s:{s:s}}", "error", "code", &c);
    snprintf(code, sizeof code, "%s", c ? c : "");
    json_decref(doc);
    return code;
}

const char *svc_json_str(const char *body, const char *key)
{
    static _Thread_local char v[256]; /* one per thread: concurrent clients call it */
    json_t *doc = json_loads(body ? body : "", 0, NULL);
    const char *s = json_string_value(json_object_get(doc, key));
    snprintf(v, sizeof v, "%s", s ? s : "");
    json_decref(doc);
    return v;
}

long long svc_json_int(const char *body, const char *key)
{
    json_t *doc = json_loads(body ? body : "", 0, NULL);
    json_t *v = json_object_get(doc, key);
    long long r = json_is_integer(v) ? (long long)json_integer_value(v) : -1;
    json_decref(doc);
    return r;
}

static void append(struct buf *b, const char *s)
{
    on_data((char *)s, 1, strlen(s), b);
}

static void list_dir(struct buf *b, const char *dir, int depth)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        char p[PATH_MAX], line[PATH_MAX + 64];
        struct stat st;
        if (names[i]->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, names[i]->d_name);
            if (stat(p, &st) == 0) {
                snprintf(line, sizeof line, "%s %lld\n", p, (long long)st.st_size);
                append(b, line);
                if (S_ISDIR(st.st_mode) && depth < 3)
                    list_dir(b, p, depth + 1);
            }
        }
        free(names[i]);
    }
    free(names);
}

char *svc_fingerprint(const struct svc_daemon *d)
{
    struct buf b = {0};
    struct svc_resp r;
    char p[PATH_MAX];
    svc_admin(d, "GET", "/v1/jobs", NULL, &r);
    append(&b, r.body);
    json_t *doc = json_loads(r.body, 0, NULL);
    size_t i;
    json_t *j;
    json_array_foreach (json_object_get(doc, "jobs"), i, j) {
        struct svc_resp jr;
        char path[256];
        snprintf(path, sizeof path, "/v1/jobs/%s", json_string_value(json_object_get(j, "id")));
        svc_admin(d, "GET", path, NULL, &jr);
        append(&b, jr.body);
        svc_resp_release(&jr);
    }
    json_decref(doc);
    svc_resp_release(&r);
    svc_admin(d, "GET", "/v1/models", NULL, &r);
    append(&b, r.body);
    svc_resp_release(&r);
    svc_admin(d, "GET", "/v1/tokens", NULL, &r);
    append(&b, r.body);
    svc_resp_release(&r);
    snprintf(p, sizeof p, "%s/blobs", d->data);
    list_dir(&b, p, 0);
    snprintf(p, sizeof p, "%s/blobs/.tmp", d->data);
    list_dir(&b, p, 0);
    return b.p;
}

int svc_run_check(const char *data_dir, char **report)
{
    char *argv[] = {(char *)th_build_path("stepcastd"), "--check", "--data-dir", (char *)data_dir, NULL};
    char *out = NULL, *err = NULL;
    int rc = th_run(argv, &out, &err);
    if (rc != 0)
        fprintf(stderr, "stepcastd --check: %s%s", out ? out : "", err ? err : "");
    if (report)
        *report = out;
    else
        free(out);
    free(err);
    return rc;
}

char *svc_small_trace(int rank, int ops, long seed, size_t *n)
{
    struct buf b = {0};
    char line[512];
    long t0 = 1000 + seed * 10000;
    if (rank >= 0)
        snprintf(line, sizeof line, "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":%d,\"world_size\":%d},"
                 "\"traceEvents\":[", rank, rank + 1);
    else
        snprintf(line, sizeof line, "{\"schemaVersion\":1,\"traceEvents\":[");
    append(&b, line);
    snprintf(line, sizeof line,
             "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,"
             "\"ts\":%ld,\"dur\":%d}", t0, 20 * ops + 100);
    append(&b, line);
    for (int i = 0; i < ops; i++) { /* an op, its kernel launch, the kernel */
        long ts = t0 + 10 + 20 * i;
        snprintf(line, sizeof line,
                 ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
                 "\"ts\":%ld,\"dur\":10}"
                 ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
                 "\"tid\":1,\"ts\":%ld,\"dur\":4,\"args\":{\"correlation\":%d}}"
                 ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,"
                 "\"ts\":%ld,\"dur\":6,\"args\":{\"correlation\":%d,\"stream\":7,\"device\":0}}",
                 ts, ts + 2, i + 1, ts + 8, i + 1);
        append(&b, line);
    }
    append(&b, "]}");
    *n = b.n;
    return b.p;
}

const char *svc_wait_model(const struct svc_daemon *d, const char *id, double timeout_s)
{
    static char status[32];
    char path[256];
    snprintf(path, sizeof path, "/v1/models/%s", id);
    status[0] = '\0';
    for (double t0 = th_now_s(); th_now_s() - t0 < timeout_s; sleep_ms(20)) {
        struct svc_resp r;
        svc_admin(d, "GET", path, NULL, &r);
        snprintf(status, sizeof status, "%s", svc_json_str(r.body, "status"));
        svc_resp_release(&r);
        if (strcmp(status, "building") != 0)
            break;
    }
    return status;
}

void svc_put_trace_file(const struct svc_daemon *d, const char *job, int rank, const char *file)
{
    char path[256];
    struct svc_opts o = {SVC_ADMIN, NULL, 0, file, NULL};
    snprintf(path, sizeof path, "/v1/jobs/%s/ranks/%d/trace", job, rank);
    CHECK_EQ_INT(svc_call(d, "PUT", path, &o, NULL), 201);
}

char *svc_request_model(const struct svc_daemon *d, const char *job, const char *body)
{
    char path[256];
    struct svc_resp r;
    snprintf(path, sizeof path, "/v1/jobs/%s/models", job);
    CHECK_EQ_INT(svc_admin(d, "POST", path, body, &r), 202);
    char *id = strdup(svc_json_str(r.body, "model"));
    svc_resp_release(&r);
    REQUIRE(id);
    return id;
}

char *svc_build_model(const struct svc_daemon *d, const char *job, const char *body)
{
    char *id = svc_request_model(d, job, body);
    CHECK_STREQ(svc_wait_model(d, id, 120), "ready");
    return id;
}

char *svc_model_of_files(const struct svc_daemon *d, const char *job, int first_rank, const char *const *files,
                         int n)
{
    for (int i = 0; i < n; i++)
        svc_put_trace_file(d, job, first_rank + i, files[i]);
    return svc_build_model(d, job, NULL);
}

static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

void svc_small_disk(const char *dir, size_t bytes)
{
    char opts[64], map[64];
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWNS) != 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            SKIP("a small disk needs a mount namespace: not root, and no user namespaces (%s)",
                 strerror(errno));
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        write_text("/proc/self/setgroups", "deny");
        if (write_text("/proc/self/uid_map", map))
            SKIP("cannot map the user into a user namespace: %s", strerror(errno));
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        write_text("/proc/self/gid_map", map);
    }
    /* nothing mounted here may reach the machine's other mount namespaces */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        SKIP("cannot make the mounts private: %s", strerror(errno));
    mkdir(dir, 0755);
    snprintf(opts, sizeof opts, "size=%zu", bytes);
    if (mount("tmpfs", dir, "tmpfs", 0, opts) != 0)
        SKIP("cannot mount a tmpfs on %s: %s", dir, strerror(errno));
}

size_t svc_fill_disk(const char *dir, const char *name, size_t leave)
{
    char path[PATH_MAX], block[4096];
    size_t total = 0;
    ssize_t n;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    memset(block, 'f', sizeof block);
    while ((n = write(fd, block, sizeof block)) > 0)
        total += (size_t)n;
    while ((n = write(fd, block, 1)) > 0) /* the last partial block */
        total += (size_t)n;
    CHECK(errno == ENOSPC);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    total = (size_t)st.st_size - (leave < (size_t)st.st_size ? leave : (size_t)st.st_size);
    CHECK(ftruncate(fd, (off_t)total) == 0);
    close(fd);
    return total;
}

json_t *svc_poll_plan(const struct svc_daemon *d, const char *id, void (*running)(const json_t *, void *),
                      void *ctx)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/plans/%s", id);
    for (int i = 0; i < 1200; i++) {
        struct svc_resp r;
        CHECK_EQ_INT(svc_admin(d, "GET", path, NULL, &r), 200);
        json_t *doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
        svc_resp_release(&r);
        const char *state = json_string_value(json_object_get(doc, "state"));
        if (!state || strcmp(state, "running") != 0)
            return doc;
        if (running)
            running(doc, ctx);
        json_decref(doc);
        sleep_ms(50);
    }
    return NULL;
}

json_t *svc_wait_plan(const struct svc_daemon *d, const char *id)
{
    return svc_poll_plan(d, id, NULL, NULL);
}

void svc_gentrace(const char *name, const char *const *args, char dir[4096])
{
    char bin[4096];
    char *argv[20] = {bin};
    size_t n = 1;
    snprintf(dir, 4096, "%s/%s", th_tmpdir(), name);
    snprintf(bin, sizeof bin, "%s", th_build_path("gentrace"));
    for (; args && args[n - 1] && n < 17; n++)
        argv[n] = (char *)args[n - 1];
    argv[n++] = "--gzip";
    argv[n++] = dir;
    argv[n] = NULL;
    CHECK_EQ_INT(th_run(argv, NULL, NULL), 0);
}

void svc_check_same_json(json_t *http, json_t *cli, const char *what)
{
    if (!http || !cli || !json_equal(http, cli)) {
        char *a = http ? json_dumps(http, JSON_COMPACT) : NULL, *b = cli ? json_dumps(cli, JSON_COMPACT) : NULL;
        sc_check_fail(__FILE__, __LINE__, "%s: HTTP and CLI differ:\nHTTP %.600s\nCLI  %.600s", what,
                      a ? a : "(none)", b ? b : "(none)");
        free(a);
        free(b);
    }
    json_decref(http);
    json_decref(cli);
}

json_t *svc_admin_json(const struct svc_daemon *d, const char *path)
{
    struct svc_resp r;
    long st = svc_admin(d, "GET", path, NULL, &r);
    json_t *doc = st == 200 ? json_loads(r.body, 0, NULL) : NULL;
    if (!doc)
        fprintf(stderr, "GET %s: %ld %.300s\n", path, st, r.body);
    svc_resp_release(&r);
    return doc;
}

void svc_start_replicas(struct svc_daemon *d, size_t n, const char *store, const char *const *args,
                        const char *const *env)
{
    static char dirs[4][4200];
    const char *data[4], *all[16] = {"--store", store};
    size_t k = 2;
    REQUIRE(n <= 4);
    for (size_t i = 0; args && args[i] && k < 15; i++)
        all[k++] = args[i];
    all[k] = NULL;
    for (size_t i = 0; i < n; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%s/replica%zu", th_tmpdir(), i);
        data[i] = dirs[i];
    }
    svc_start_many(d, n, data, all, env);
}

json_t *svc_cli_replay(const char *path)
{
    char *argv[] = {(char *)th_build_path("stepcast"), "replay", "--json", (char *)path, NULL};
    char *out = NULL, *err = NULL;
    int rc = th_run(argv, &out, &err);
    json_t *doc = rc == 0 ? json_loads(out, 0, NULL) : NULL;
    if (!doc)
        fprintf(stderr, "stepcast replay: exit %d: %s\n", rc, err ? err : "");
    free(out);
    free(err);
    return doc;
}

int svc_log_lines(const struct svc_daemon *d, size_t n, const char *a, const char *b)
{
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char *log = th_read_file(d[i].log, NULL), *save = NULL;
        for (char *line = log ? strtok_r(log, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save))
            count += strstr(line, a) && strstr(line, b);
        free(log);
    }
    return count;
}

int svc_wait_hold(const struct svc_daemon *d, const char *name, double timeout_s)
{
    char hold[128];
    snprintf(hold, sizeof hold, "hold=%s", name);
    for (double t0 = th_now_s(); svc_log_lines(d, 1, "failpoint", hold) < 1; usleep(5000))
        if (th_now_s() - t0 > timeout_s)
            return 0;
    return 1;
}

/* /healthz's builds.running; -1 when it does not answer 200. */
static long builds_running(const struct svc_daemon *d)
{
    struct svc_resp r;
    long v = -1;
    if (svc_call(d, "GET", "/healthz", &(struct svc_opts){0}, &r) == 200) {
        json_t *doc = json_loads(r.body, 0, NULL);
        json_t *x = json_object_get(json_object_get(doc, "builds"), "running");
        v = json_is_integer(x) ? (long)json_integer_value(x) : -1;
        json_decref(doc);
    }
    svc_resp_release(&r);
    return v;
}

double svc_wait_builds_running(const struct svc_daemon *d, long want, double timeout_s)
{
    double t0 = th_now_s();
    while (th_now_s() - t0 < timeout_s) {
        if (builds_running(d) == want)
            return th_now_s() - t0;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}
