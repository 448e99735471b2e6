/* daemon/blobs.c: content-addressed, immutable files (blobs.h). */
#include "daemon/blobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/failpoint.h"
#include "common/banned.h"

struct blob_store {
    char blobs[PATH_MAX];
    char tmp[PATH_MAX];
    char reserve[PATH_MAX];
    char host[64]; /* this host's name, as temp files carry it */
    int shared;
};

struct blob_writer {
    struct blob_store *bs;
    int fd;
    uint64_t bytes;
    int committed;
    struct digest md;
    char sha[DIGEST_HEX_LEN + 1];
    char path[PATH_MAX];
};

/* A failed write's status: SC_ENOSPC when the disk (or a quota) is full. */
static enum sc_status io_status(void)
{
    return errno == ENOSPC || errno == EDQUOT ? SC_ENOSPC : SC_EIO;
}

int blob_mkdir_p(const char *path, struct sc_error *err)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST)
            return sc_error_set(err, io_status(), "cannot create '%s': %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return sc_error_set(err, io_status(), "cannot create '%s': %s", buf, strerror(errno));
    return SC_OK;
}

int blob_fsync_dir(const char *dir, struct sc_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sc_error_set(err, SC_EIO, "cannot open '%s': %s", dir, strerror(errno));
    int rc = fsync(fd);
    close(fd);
    if (rc)
        return sc_error_set(err, io_status(), "cannot fsync '%s': %s", dir, strerror(errno));
    return SC_OK;
}

/* The host name as temp files carry it: letters, digits, '-' and '.'. */
static void host_name(char *out, size_t n)
{
    if (gethostname(out, n - 1))
        snprintf(out, n, "localhost");
    out[n - 1] = '\0';
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.'))
            *p = '-';
}

int blob_store_open(const char *dir, const char *data_dir, int shared, struct blob_store **out,
                    struct sc_error *err)
{
    struct blob_store *bs = calloc(1, sizeof *bs);
    int rc;
    *out = NULL;
    if (!bs)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    snprintf(bs->blobs, sizeof bs->blobs, "%s", dir);
    snprintf(bs->tmp, sizeof bs->tmp, "%s/.tmp", dir);
    snprintf(bs->reserve, sizeof bs->reserve, "%s/reserve", data_dir);
    host_name(bs->host, sizeof bs->host);
    bs->shared = shared;
    if ((rc = blob_mkdir_p(bs->tmp, err)) || (rc = blob_fsync_dir(bs->blobs, err)) ||
        (rc = blob_mkdir_p(data_dir, err)) || (rc = blob_fsync_dir(data_dir, err))) {
        free(bs);
        return rc;
    }
    *out = bs;
    return SC_OK;
}

int blob_reserve_keep(struct blob_store *bs)
{
    struct stat st;
    int fd = open(bs->reserve, O_WRONLY | O_CREAT | O_CLOEXEC, 0600), rc = -1;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && st.st_blocks * 512 >= (off_t)BLOB_RESERVE_BYTES)
        rc = 0;
    /* as much of it as there is room for, down to 64 KiB */
    for (off_t n = BLOB_RESERVE_BYTES; rc && n >= (64 << 10); n /= 2)
        if (posix_fallocate(fd, 0, n) == 0)
            rc = n == (off_t)BLOB_RESERVE_BYTES ? 0 : -1, n = 0;
    close(fd);
    return rc;
}

int blob_reserve_release(struct blob_store *bs)
{
    struct stat st;
    if (stat(bs->reserve, &st) != 0 || st.st_blocks == 0)
        return 0;
    return unlink(bs->reserve) == 0;
}

int blob_store_disk_full(const struct blob_store *bs, uint64_t *free_bytes)
{
    struct statvfs v;
    *free_bytes = 0;
    if (statvfs(bs->tmp, &v) != 0)
        return -1;
    *free_bytes = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    return *free_bytes < BLOB_DISK_FULL_BELOW;
}

void blob_store_free(struct blob_store *bs)
{
    free(bs);
}

void blob_path(const struct blob_store *bs, const char *sha, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%.2s/%s", bs->blobs, sha, sha);
}

int blob_writer_new(struct blob_store *bs, struct blob_writer **out, struct sc_error *err)
{
    struct blob_writer *w = calloc(1, sizeof *w);
    int rc;
    *out = NULL;
    if (!w)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    w->bs = bs;
    snprintf(w->path, sizeof w->path, "%s/%ld.%s.XXXXXX", bs->tmp, (long)getpid(), bs->host);
    if ((w->fd = mkstemp(w->path)) < 0) {
        rc = sc_error_set(err, io_status(), "cannot create a temp file in '%s': %s", bs->tmp,
                          strerror(errno));
        free(w);
        return rc;
    }
    fcntl(w->fd, F_SETFD, FD_CLOEXEC);
    if ((rc = digest_init(&w->md, err))) {
        w->committed = 0;
        blob_writer_free(w);
        return rc;
    }
    *out = w;
    return SC_OK;
}

int blob_writer_write(struct blob_writer *w, const void *p, size_t n, struct sc_error *err)
{
    const char *c = p;
    int first = w->bytes == 0 && n > 0;
    int rc = digest_update(&w->md, p, n, err);
    if (rc)
        return rc;
    for (size_t off = 0; off < n;) {
        ssize_t k = write(w->fd, c + off, n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return sc_error_set(err, io_status(), "cannot write '%s': %s", w->path,
                                k < 0 ? strerror(errno) : "short write");
        off += (size_t)k;
    }
    w->bytes += n;
    if (first)
        fp_hit("upload.mid_body");
    return SC_OK;
}

uint64_t blob_writer_bytes(const struct blob_writer *w)
{
    return w->bytes;
}

const char *blob_writer_path(const struct blob_writer *w)
{
    return w->path;
}

int blob_writer_finish(struct blob_writer *w, char sha[DIGEST_HEX_LEN + 1], struct sc_error *err)
{
    int rc = digest_final(&w->md, w->sha, err);
    if (rc)
        return rc;
    if (fsync(w->fd))
        return sc_error_set(err, io_status(), "cannot fsync '%s': %s", w->path, strerror(errno));
    memcpy(sha, w->sha, sizeof w->sha);
    return SC_OK;
}

int blob_writer_commit(struct blob_writer *w, struct sc_error *err)
{
    char dir[PATH_MAX], dest[PATH_MAX];
    struct stat st;
    int rc, new_dir;
    snprintf(dir, sizeof dir, "%s/%.2s", w->bs->blobs, w->sha);
    blob_path(w->bs, w->sha, dest, sizeof dest);
    new_dir = stat(dir, &st) != 0;
    if (new_dir && mkdir(dir, 0755) && errno != EEXIST)
        return sc_error_set(err, io_status(), "cannot create '%s': %s", dir, strerror(errno));
    if (rename(w->path, dest))
        return sc_error_set(err, io_status(), "cannot rename '%s' to '%s': %s", w->path, dest,
                            strerror(errno));
    w->committed = 1;
    if ((rc = blob_fsync_dir(dir, err)) || (new_dir && (rc = blob_fsync_dir(w->bs->blobs, err))))
        return rc;
    return SC_OK;
}

void blob_writer_free(struct blob_writer *w)
{
    if (!w)
        return;
    digest_release(&w->md);
    if (w->fd >= 0)
        close(w->fd);
    if (!w->committed)
        unlink(w->path);
    free(w);
}

int blob_put(struct blob_store *bs, const void *p, size_t n, char sha[DIGEST_HEX_LEN + 1],
             struct sc_error *err)
{
    struct blob_writer *w;
    int rc = blob_writer_new(bs, &w, err);
    if (rc)
        return rc;
    if ((rc = blob_writer_write(w, p, n, err)) == SC_OK && (rc = blob_writer_finish(w, sha, err)) == SC_OK)
        rc = blob_writer_commit(w, err);
    blob_writer_free(w);
    return rc;
}

int blob_get(struct blob_store *bs, const char *sha, size_t max, void **out, size_t *n,
             struct sc_error *err)
{
    char path[PATH_MAX];
    struct stat st;
    size_t got = 0;
    char *buf;
    int fd;
    *out = NULL;
    *n = 0;
    blob_path(bs, sha, path, sizeof path);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open blob %s: %s", sha,
                            strerror(errno));
    if (fstat(fd, &st) || st.st_size < 0) {
        close(fd);
        return sc_error_set(err, SC_EIO, "cannot read blob %s: %s", sha, strerror(errno));
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return sc_error_set(err, SC_ELIMIT, "blob %s holds %lld bytes, more than %zu", sha,
                            (long long)st.st_size, max);
    }
    if (!(buf = malloc((size_t)st.st_size + 1))) {
        close(fd);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : 0;
            close(fd);
            free(buf);
            return sc_error_set(err, SC_EIO, "cannot read blob %s: %s", sha, e ? strerror(e) : "it shrank");
        }
        got += (size_t)k;
    }
    close(fd);
    *out = buf;
    *n = got;
    return SC_OK;
}

int blob_exists(struct blob_store *bs, const char *sha)
{
    char path[PATH_MAX];
    blob_path(bs, sha, path, sizeof path);
    return access(path, F_OK) == 0;
}

int blob_remove(struct blob_store *bs, const char *sha, struct sc_error *err)
{
    char p[PATH_MAX];
    blob_path(bs, sha, p, sizeof p);
    if (unlink(p) && errno != ENOENT)
        return sc_error_set(err, SC_EIO, "cannot remove '%s': %s", p, strerror(errno));
    return SC_OK;
}

int blob_verify(struct blob_store *bs, const char *sha, uint64_t *bytes, struct sc_error *err)
{
    char p[PATH_MAX], got[DIGEST_HEX_LEN + 1], buf[1 << 16];
    struct digest md;
    int rc, fd;
    *bytes = 0;
    blob_path(bs, sha, p, sizeof p);
    if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open '%s': %s", p,
                            strerror(errno));
    if ((rc = digest_init(&md, err))) {
        close(fd);
        return rc;
    }
    for (;;) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = sc_error_set(err, SC_EIO, "cannot read '%s': %s", p, strerror(errno));
            break;
        }
        if (k == 0)
            break;
        *bytes += (uint64_t)k;
        if ((rc = digest_update(&md, buf, (size_t)k, err)))
            break;
    }
    close(fd);
    if (rc) {
        digest_release(&md);
        return rc;
    }
    if ((rc = digest_final(&md, got, err)))
        return rc;
    if (strcmp(got, sha) != 0)
        return sc_error_set(err, SC_EINVAL, "blob '%s' hashes to %s", p, got);
    return SC_OK;
}

/* Whether a file was last modified BLOB_STALE_S ago or more. */
static int stale(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && time(NULL) - st.st_mtime >= BLOB_STALE_S;
}

/* Whether a temp file's writer is gone (blobs.h): its name is
 * PID.HOST.XXXXXX. */
static int temp_left_over(const struct blob_store *bs, const char *name, const char *path)
{
    char *end;
    long pid = strtol(name, &end, 10);
    const char *last = strrchr(name, '.');
    if (pid > 0 && *end == '.' && last > end && (size_t)(last - end - 1) == strlen(bs->host) &&
        !strncmp(end + 1, bs->host, strlen(bs->host)))
        return pid != (long)getpid() && kill((pid_t)pid, 0) && errno == ESRCH;
    return stale(path);
}

static int remove_file(const char *path, int dry_run, FILE *list, struct sc_error *err)
{
    if (list)
        fprintf(list, "leftover (the next start removes it): %s\n", path);
    if (!dry_run && unlink(path) && errno != ENOENT)
        return sc_error_set(err, SC_EIO, "cannot remove '%s': %s", path, strerror(errno));
    return SC_OK;
}

int blob_sweep(struct blob_store *bs, int (*keep)(void *ctx, const char *sha), void *ctx,
               int dry_run, FILE *list, struct blob_sweep_stats *st, struct sc_error *err)
{
    char p[PATH_MAX];
    struct dirent *de;
    int rc = SC_OK;
    DIR *d;

    memset(st, 0, sizeof *st);
    if (!(d = opendir(bs->tmp)))
        return sc_error_set(err, SC_EIO, "cannot read '%s': %s", bs->tmp, strerror(errno));
    while (rc == SC_OK && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", bs->tmp, de->d_name);
        if (!temp_left_over(bs, de->d_name, p))
            continue;
        st->temp_files++;
        rc = remove_file(p, dry_run, list, err);
    }
    closedir(d);
    if (rc || !(d = opendir(bs->blobs)))
        return rc ? rc : sc_error_set(err, SC_EIO, "cannot read '%s': %s", bs->blobs, strerror(errno));
    while (rc == SC_OK && (de = readdir(d))) {
        char sub[PATH_MAX];
        struct dirent *fe;
        DIR *s;
        if (de->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s", bs->blobs, de->d_name);
        if (!(s = opendir(sub))) {
            if (bs->shared && !stale(sub))
                continue;
            st->orphans++; /* a stray file where a folder belongs */
            rc = remove_file(sub, dry_run, list, err);
            continue;
        }
        while (rc == SC_OK && (fe = readdir(s))) {
            struct stat fs;
            if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", sub, fe->d_name);
            if (digest_is_hex(fe->d_name) && !strncmp(fe->d_name, de->d_name, 2) &&
                strlen(de->d_name) == 2 && keep(ctx, fe->d_name)) {
                st->kept++;
                if (stat(p, &fs) == 0)
                    st->kept_bytes += (uint64_t)fs.st_size;
                continue;
            }
            if (bs->shared && !stale(p))
                continue; /* another replica may be about to commit its row */
            st->orphans++;
            rc = remove_file(p, dry_run, list, err);
        }
        closedir(s);
    }
    closedir(d);
    return rc;
}
