/* clients/cmd_upload.c: `stepcast upload`: send traces to a job on the server.
 *
 *   stepcast upload --job J --rank R [--replace] FILE
 *   stepcast upload --job J [--replace] FILE|DIR|TARBALL...
 *
 * Without --rank, every trace given (files, the files of a directory in
 * name order, the members of a .tar(.gz) in name order) is read here first:
 * that checks it before it is sent and gives its rank, as `stepcast
 * inspect` would (distributedInfo.rank, else its position). Each trace is
 * then sent as it is on disk (gzip stays gzip), streamed. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "model/archive.h"
#include "model/chakra_read.h"
#include "model/job.h"
#include "model/stream.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

struct unit {
    char *path;  /* a file to send (a temp file for archive members) */
    char *label; /* what the user gave, for messages */
    long long rank;
    int temp;
};

struct units {
    struct unit *v;
    size_t n, cap;
    char tmpdir[PATH_MAX];
};

static int add_unit(struct units *u, const char *path, const char *label, int temp)
{
    if (sc_vec_reserve((void **)&u->v, &u->cap, u->n + 1, sizeof *u->v))
        return -1;
    struct unit *x = &u->v[u->n];
    x->path = strdup(path);
    x->label = strdup(label);
    x->rank = -1;
    x->temp = temp;
    if (!x->path || !x->label) {
        free(x->path);
        free(x->label);
        return -1;
    }
    u->n++;
    return 0;
}

static void units_release(struct units *u)
{
    for (size_t i = 0; i < u->n; i++) {
        if (u->v[i].temp)
            unlink(u->v[i].path);
        free(u->v[i].path);
        free(u->v[i].label);
    }
    free(u->v);
    if (u->tmpdir[0])
        rmdir(u->tmpdir);
}

static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const struct unit *)a)->label, ((const struct unit *)b)->label);
}

/* A directory's trace files, in name order (a folder of Chakra ET files:
 * its .et files, not its communicator table, which the server does not
 * take: it couples collectives by their communicators' names). */
static int add_dir(struct units *u, const char *dir, struct sc_error *err)
{
    struct model_paths files = {0};
    int et = 0, rc = model_job_dir_files(dir, &files, err);
    if (rc == SC_OK)
        rc = model_et_is_et(dir, &et, err);
    for (size_t i = 0; i < files.n && rc == SC_OK; i++) {
        size_t n = strlen(files.v[i]);
        if ((!et || (n > 3 && !strcmp(files.v[i] + n - 3, ".et"))) && add_unit(u, files.v[i], files.v[i], 0))
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    model_paths_release(&files);
    return rc;
}

/* Copy a stream into a new file. */
static int copy_stream(struct model_stream *in, const char *dest, struct sc_error *err)
{
    FILE *f = fopen(dest, "wb");
    char buf[1 << 16];
    ssize_t k;
    if (!f)
        return sc_error_set(err, SC_EIO, "cannot create '%s'", dest);
    while ((k = model_stream_read(in, buf, sizeof buf, err)) > 0)
        if (fwrite(buf, 1, (size_t)k, f) != (size_t)k) {
            fclose(f);
            return sc_error_set(err, SC_EIO, "cannot write '%s'", dest);
        }
    if (fclose(f) || k < 0)
        return k < 0 ? (int)err->code : sc_error_set(err, SC_EIO, "cannot write '%s'", dest);
    return SC_OK;
}

/* An archive member into a temp file. */
static int copy_member(void *ctx, const char *name, const char *label, struct model_stream *in,
                       struct sc_error *err)
{
    struct units *u = ctx;
    char dest[PATH_MAX + 32];
    int rc;
    (void)name;
    if (!u->tmpdir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(u->tmpdir, sizeof u->tmpdir, "%s/stepcast-upload-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(u->tmpdir)) {
            u->tmpdir[0] = '\0';
            return sc_error_set(err, SC_EIO, "cannot create a temp directory");
        }
    }
    snprintf(dest, sizeof dest, "%s/m%06zu", u->tmpdir, u->n);
    if ((rc = copy_stream(in, dest, err)))
        return rc;
    if (add_unit(u, dest, label, 1)) {
        unlink(dest);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    return SC_OK;
}

/* A file: a trace, or an archive whose members become temp files, in name
 * order. */
static int add_file(struct units *u, const char *path, struct sc_error *err)
{
    size_t first = u->n;
    int tar, rc = model_archive_is_tar(path, &tar, err);
    if (rc)
        return rc;
    if (!tar)
        return add_unit(u, path, path, 0) ? sc_error_set(err, SC_ENOMEM, "out of memory") : SC_OK;
    if ((rc = model_job_each_member(path, copy_member, u, err)) == SC_OK)
        sc_sort(u->v + first, u->n - first, sizeof *u->v, cmp_label);
    return rc;
}

/* Read each trace: it must load, and it says its rank. */
static int find_ranks(struct units *u)
{
    struct model_load_opts lo;
    model_load_opts_default(&lo);
    for (size_t i = 0; i < u->n; i++) {
        struct model_trace *t;
        struct model_et_rank *et;
        struct sc_error err;
        int is_et = 0, rc = model_et_is_et(u->v[i].path, &is_et, &err);
        if (rc == SC_OK && is_et && (rc = model_et_read_file(u->v[i].path, &lo.limits, &et, &err)) == SC_OK) {
            /* Chakra ET: its name's rank, else its GlobalMetadata's */
            int named = model_et_name_rank(u->v[i].label);
            u->v[i].rank = named >= 0 ? named : et->rank >= 0 ? et->rank : (long long)i;
            model_et_rank_free(et);
        } else if (rc == SC_OK && !is_et && (rc = model_trace_load_file(u->v[i].path, &lo, &t, &err)) == SC_OK) {
            u->v[i].rank = t->rank >= 0 ? t->rank : (long long)i;
            model_trace_free(t);
        }
        if (rc) {
            fprintf(stderr, "stepcast: '%s': %s\n", u->v[i].label, err.msg);
            return sc_status_exit_code(err.code);
        }
        for (size_t j = 0; j < i; j++)
            if (u->v[j].rank == u->v[i].rank) {
                fprintf(stderr, "stepcast: '%s' and '%s' are both rank %lld\n", u->v[j].label,
                        u->v[i].label, u->v[i].rank);
                return 2;
            }
    }
    return 0;
}

static int send_one(struct remote *r, const char *job, const struct unit *x, int replace,
                    int *created)
{
    struct remote_resp resp;
    struct sc_error err;
    char path[512], esc[200];
    json_int_t events = 0, bytes = 0;
    const char *sha = "";
    remote_escape(job, esc, sizeof esc);
    snprintf(path, sizeof path, "/v1/jobs/%s/ranks/%lld/trace%s", esc, x->rank,
             replace ? "?replace=true" : "");
    if (remote_put_file(r, path, x->path, &resp, &err))
        return cli_fail(&err);
    if (resp.status != 200 && resp.status != 201) {
        fprintf(stderr, "stepcast: '%s' (rank %lld):\n", x->label, x->rank);
        int rc = remote_fail(&resp);
        remote_resp_release(&resp);
        return rc;
    }
    json_t *doc = json_loads(resp.body, 0, NULL);
    json_unpack(doc, "{s:s, s:I, s:I}", "sha256", &sha, "bytes", &bytes, "events", &events);
    printf("rank %-5lld %-9s %.16s  %lld bytes, %lld events  %s\n", x->rank,
           resp.status == 201 ? "created" : "identical", sha, (long long)bytes, (long long)events,
           x->label);
    *created += resp.status == 201;
    json_decref(doc);
    remote_resp_release(&resp);
    return 0;
}

int cmd_upload(int argc, char **argv)
{
    static const struct option opts[] = {
        {"job", required_argument, NULL, 'j'}, {"rank", required_argument, NULL, 'r'},
        {"replace", no_argument, NULL, 'R'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *job = NULL;
    long long rank = -1;
    int replace = 0, c, rc = 0, created = 0;
    struct units u = {0};
    struct remote r;
    struct sc_error err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "j:r:Rh", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'j': job = optarg; break;
        case 'r':
            rank = strtoll(optarg, &end, 10);
            if (*end || end == optarg || rank < 0)
                return cli_usage_error("upload", "--rank takes a rank number");
            break;
        case 'R': replace = 1; break;
        case 'h':
            printf("usage: stepcast upload --job J [--rank R] [--replace] FILE|DIR|TARBALL...\n");
            return 0;
        default: return cli_usage_error("upload", "bad option");
        }
    }
    if (!job)
        return cli_usage_error("upload", "--job is required");
    if (optind >= argc)
        return cli_usage_error("upload", "no trace given");
    if (rank >= 0 && argc - optind != 1)
        return cli_usage_error("upload", "--rank takes exactly one FILE");
    if (remote_open(&r, &err))
        return cli_fail(&err);
    if (rank >= 0) {
        rc = add_unit(&u, argv[optind], argv[optind], 0) ? 1 : 0;
        if (rc == 0)
            u.v[0].rank = rank;
    } else {
        for (int i = optind; i < argc && rc == 0; i++) {
            struct stat st;
            if (stat(argv[i], &st))
                rc = sc_error_set(&err, SC_ENOTFOUND, "cannot open '%s': no such file", argv[i]);
            else
                rc = S_ISDIR(st.st_mode) ? add_dir(&u, argv[i], &err) : add_file(&u, argv[i], &err);
            if (rc)
                rc = cli_fail(&err);
        }
        if (rc == 0)
            rc = find_ranks(&u);
    }
    for (size_t i = 0; i < u.n && rc == 0; i++)
        rc = send_one(&r, job, &u.v[i], replace, &created);
    if (rc == 0)
        fprintf(stderr, "uploaded %zu trace%s to job %s (%d new)\n", u.n, u.n == 1 ? "" : "s", job,
                created);
    units_release(&u);
    remote_close(&r);
    return rc;
}
