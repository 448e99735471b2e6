/* daemon/dir_lock.h: one daemon per data directory. Two daemons on one
 * directory would each sweep the other's temporary files and overwrite
 * the other's port file, so stepcastd holds an exclusive lock on
 * DATA/lock (flock(2), which `flock -n DATA/lock true` tests from a shell)
 * for as long as it runs, with its pid written in the file. */
#ifndef DAEMON_DIR_LOCK_H
#define DAEMON_DIR_LOCK_H

#include "common/error.h"

/* Take the lock of data directory dir (created if missing): *fd holds it
 * until closed or the process exits. SC_EEXIST naming the holder's pid
 * when another process holds it; SC_EIO when the file cannot be opened. */
int dir_lock_take(const char *dir, int *fd, struct sc_error *err);

#endif
