/* daemon/dir_lock.c: the data directory's lock file (dir_lock.h). */
#include "daemon/dir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "daemon/blobs.h"
#include "common/banned.h"

int dir_lock_take(const char *dir, int *fd, struct sc_error *err)
{
    char path[PATH_MAX], text[32];
    *fd = -1;
    if (blob_mkdir_p(dir, err))
        return err->code;
    snprintf(path, sizeof path, "%s/lock", dir);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0)
        return sc_error_set(err, SC_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB)) {
        int busy = errno == EWOULDBLOCK;
        ssize_t n = busy ? pread(f, text, sizeof text - 1, 0) : -1;
        long pid = 0;
        if (n > 0) {
            text[n] = '\0';
            pid = strtol(text, NULL, 10);
        }
        close(f);
        if (!busy)
            return sc_error_set(err, SC_EIO, "cannot lock '%s': %s", path, strerror(errno));
        return sc_error_set(err, SC_EEXIST,
                            "the data directory '%s' is in use by another stepcastd (pid %ld): one daemon per data "
                            "directory",
                            dir, pid);
    }
    int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(f, 0) || pwrite(f, text, (size_t)len, 0) != len) {
        int e = errno;
        close(f);
        return sc_error_set(err, SC_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    *fd = f;
    return SC_OK;
}
