/* daemon/failpoint.h: crash the daemon at a named point, for tests.
 *
 * STEPCAST_FAILPOINT=NAME makes the first fp_hit(NAME) kill the process
 * with SIGKILL (as `kill -9` would), so tests can check that what is on
 * disk after a crash at exactly that point is consistent. The points:
 *
 *   upload.mid_body      after the first chunk of an upload is on disk
 *   upload.after_fsync   the blob is written and fsync'd, not yet renamed
 *   upload.after_rename  the blob is in place, the catalog not committed
 *   upload.after_commit  committed, the client not yet answered
 *   delete.after_commit  rows deleted, unreferenced blobs not yet removed
 *   build.after_load     a model's traces are loaded, its status not saved
 *
 * Points that hold instead of crashing (fp_armed, fp_hold):
 *
 *   plan.progress        a background plan's thread waits at its first
 *                        progress report until a GET has read it (or the
 *                        plan is cancelled), so a test sees a running
 *                        plan's progress on any machine
 *   build.progress       a build's first progress report (a rank built)
 *                        waits until the build is cancelled (its model
 *                        deleted, or the daemon's drain timed out), so a
 *                        test sees a build running, with progress, on any
 *                        machine
 *   store.counted        a transaction that counts before it writes (the
 *                        last admin token, a token's room) waits 0.3 s
 *                        after its count, so that replicas race there
 *   store.placed         a trace's transaction waits 1 s once its blob is
 *                        in place (or found there) under the digest's
 *                        lock, before its rows, so that a delete through
 *                        another replica races there
 *   build.publishing     a build waits 2 s between writing its built
 *                        model's blob and committing its row, so that the
 *                        delete of a model with the same blob races there
 *   http.answered        a worker waits 1 s in a deferred request's
 *                        answer callback after handing its connection
 *                        back to libmicrohttpd (the answer goes out
 *                        meanwhile), so that a drain meets a worker still
 *                        in that callback
 *
 * Unset (the normal case), fp_hit and fp_armed are one comparison. */
#ifndef DAEMON_FAILPOINT_H
#define DAEMON_FAILPOINT_H

/* Read STEPCAST_FAILPOINT; call once at startup. */
void fp_init(void);
void fp_hit(const char *name);
/* Whether the point `name` is armed. */
int fp_armed(const char *name);
/* When `name` is armed: log "hold=NAME" (what a test waits for), sleep
 * ms milliseconds, then log "held=NAME". */
void fp_hold(const char *name, long ms);

#endif
