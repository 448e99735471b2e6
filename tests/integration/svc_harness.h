/* tests/integration/svc_harness.h: a real stepcastd for tests.
 *
 * svc_start() runs build/.../stepcastd on 127.0.0.1 port 0 with a data
 * directory under the test's temp dir and waits for its --port-file;
 * svc_call() makes an HTTP request with libcurl; svc_raw() writes raw bytes
 * on a socket (hostile inputs libcurl will not send). The daemon's log is
 * kept in <dir>/daemon.log and printed when a test fails; each of several
 * daemons at once (svc_start_many, svc_start_replica) has a log of its own. */
#ifndef TESTS_INTEGRATION_SVC_HARNESS_H
#define TESTS_INTEGRATION_SVC_HARNESS_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#define SVC_ADMIN "admin-secret-0123456789abcdef"
/* every daemon's --replica-name (STEPCAST_REPLICA_NAME; a test's env may
 * change it): the replica label of its /metrics */
#define SVC_REPLICA "r1"

struct svc_daemon {
    pid_t pid;
    int port;
    char data[PATH_MAX]; /* data directory */
    char log[PATH_MAX];
    char portfile[PATH_MAX];
    char url[64];        /* http://127.0.0.1:PORT */
};

/* Start with the admin token SVC_ADMIN, --request-timeout 5 and the extra
 * flags (NULL-terminated, may be NULL) and environment ("K=V", may be
 * NULL). data_dir NULL: "<tmp>/data". Fails the test when it cannot. */
void svc_start(struct svc_daemon *d, const char *data_dir, const char *const *args,
               const char *const *env);
/* Start n daemons at once (data_dirs[i] each, none NULL), their logs and
 * port files <tmp>/daemon-<i>.log and .port, then wait for them all. */
void svc_start_many(struct svc_daemon *d, size_t n, const char *const *data_dirs, const char *const *args,
                    const char *const *env);
/* n (at most 4) replicas on the catalog store (--store URL), each its own
 * data directory <tmp>/replica<i>, with the extra flags args and the
 * environment env (either may be NULL). */
void svc_start_replicas(struct svc_daemon *d, size_t n, const char *store, const char *const *args,
                        const char *const *env);
/* One replica started on its own: data directory <tmp>/<name>, log and
 * port file <tmp>/<name>.log and .port, so that each replica's log holds
 * its lines only (svc_log_lines of one replica); otherwise as svc_start.
 * Started again under the same name, it appends to the same log. */
void svc_start_replica(struct svc_daemon *d, const char *name, const char *const *args, const char *const *env);
/* SIGTERM and wait; returns the exit status (-signal when killed). */
int svc_stop(struct svc_daemon *d);
/* SIGKILL and wait. */
void svc_kill9(struct svc_daemon *d);
/* Wait for the daemon to exit by itself (a failpoint); the status as above,
 * or -1000 when it was still running after timeout_s. */
int svc_wait_exit(struct svc_daemon *d, double timeout_s);

struct svc_resp {
    long status; /* 0 when the connection failed */
    char *body;
    size_t len;
    char *headers; /* every header line */
};
void svc_resp_release(struct svc_resp *r);

struct svc_opts {
    const char *token;          /* NULL: no Authorization header */
    const void *body;           /* request body, or NULL */
    size_t len;
    const char *file;           /* or a file as the body */
    const char *const *headers; /* extra header lines, NULL-terminated */
};

long svc_call(const struct svc_daemon *d, const char *method, const char *path,
              const struct svc_opts *o, struct svc_resp *out);
/* The same with a token (NULL for none) and a body (NULL for none); the
 * response body is discarded when out is NULL. */
long svc_call_as(const struct svc_daemon *d, const char *token, const char *method, const char *path,
                 const char *body, struct svc_resp *out);
/* The same with the admin token. */
long svc_admin(const struct svc_daemon *d, const char *method, const char *path, const char *body,
               struct svc_resp *out);

/* A socket connected to the daemon, or -1. */
int svc_connect(const struct svc_daemon *d);

/* Connect, send n bytes, read until the server closes or wait_s passes.
 * Returns what was read (from malloc, NUL-terminated). */
char *svc_raw(const struct svc_daemon *d, const void *data, size_t n, double wait_s);

/* The "error.code" of a JSON error body, or "" (static buffer). */
const char *svc_error_code(const struct svc_resp *r);
/* A string or integer member of a JSON body ("" / -1 when absent); the
 * string is in a buffer of the calling thread, overwritten by its next call. */
const char *svc_json_str(const char *body, const char *key);
long long svc_json_int(const char *body, const char *key);

/* Everything the API and the blob folders show, to compare a store before
 * and after a request that must not change it (from malloc). */
char *svc_fingerprint(const struct svc_daemon *d);

/* stepcastd --check on a data directory: its exit status; *report (may be
 * NULL) gets the output. (Not named svc_check: daemon/service.h has one in
 * the library the tests link with.) */
int svc_run_check(const char *data_dir, char **report);

/* A small valid trace: one ProfilerStep, `ops` cpu ops each launching a
 * kernel (1 + 3 x ops events), a `seed` that makes its bytes unique; rank
 * -1 leaves distributedInfo out. */
char *svc_small_trace(int rank, int ops, long seed, size_t *n);

/* A generated run (build/gentrace --gzip with the flags args,
 * NULL-terminated, at most 16) in <tmp>/name, that folder into dir. Fails
 * the test when it cannot. */
void svc_gentrace(const char *name, const char *const *args, char dir[4096]);

/* Wait until GET /v1/models/{id} is no longer building; its status. */
const char *svc_wait_model(const struct svc_daemon *d, const char *id, double timeout_s);

/* The setup of the tests that use a model: PUT the trace file `file` as
 * rank `rank` of job (the test fails unless it is 201, new). */
void svc_put_trace_file(const struct svc_daemon *d, const char *job, int rank, const char *file);
/* POST /v1/jobs/{job}/models with body (NULL for none); the test fails
 * unless it is 202. The model's id (from malloc), built or not yet. */
char *svc_request_model(const struct svc_daemon *d, const char *job, const char *body);
/* The same, then wait (up to two minutes) until it is built: the test
 * fails unless it is ready. */
char *svc_build_model(const struct svc_daemon *d, const char *job, const char *body);
/* Upload files[0..n) as ranks first_rank, first_rank + 1, ... of job, then
 * svc_build_model with no body: the ready model's id (from malloc). */
char *svc_model_of_files(const struct svc_daemon *d, const char *job, int first_rank, const char *const *files,
                         int n);

/* Poll GET /v1/plans/{id} until the plan no longer runs; its last answer
 * (NULL when none came, or it still ran after a minute). Each answer that
 * it runs goes to running(doc, ctx) first, when running is not NULL. */
/* Fail the test (saying what) unless the documents the service and the
 * local command line gave are equal; releases both. */
void svc_check_same_json(json_t *http, json_t *cli, const char *what);

json_t *svc_poll_plan(const struct svc_daemon *d, const char *id, void (*running)(const json_t *, void *),
                      void *ctx);
json_t *svc_wait_plan(const struct svc_daemon *d, const char *id);
/* GET path as the admin: the answer's JSON when it is a 200, else NULL
 * (the status and body on stderr). */
json_t *svc_admin_json(const struct svc_daemon *d, const char *path);
/* `stepcast replay --json PATH` (a trace file or a folder of ranks): its
 * document, or NULL (the reason on stderr). */
json_t *svc_cli_replay(const char *path);
/* Lines of the logs of d[0..n) that hold both a and b. */
int svc_log_lines(const struct svc_daemon *d, size_t n, const char *a, const char *b);
/* Wait until d holds at failpoint `name` (its log's "hold=NAME" line,
 * STEPCAST_FAILPOINT=NAME): 1, or 0 after timeout_s. */
int svc_wait_hold(const struct svc_daemon *d, const char *name, double timeout_s);
/* Poll /healthz until its builds.running is `want`: the seconds it took,
 * or -1 after timeout_s. */
double svc_wait_builds_running(const struct svc_daemon *d, long want, double timeout_s);

/* A real small disk for this test process and the daemons it starts: a
 * tmpfs of `bytes` mounted on `dir` (created) in a mount namespace of the
 * test's own (as root, or in a user namespace where the kernel allows
 * them). SKIP()s the test with the reason when neither works. */
void svc_small_disk(const char *dir, size_t bytes);
/* Fill the file system holding dir: a file `name` in it grows until the
 * disk is full, then gives `leave` bytes back. Returns its size. */
size_t svc_fill_disk(const char *dir, const char *name, size_t leave);

/* Print the daemon's log (for a failing test). */
void svc_dump_log(const struct svc_daemon *d);

/* The peak resident memory of the daemon so far (VmHWM), bytes; -1024 when
 * it cannot be read. */
long long svc_peak_rss(const struct svc_daemon *d);

#endif
