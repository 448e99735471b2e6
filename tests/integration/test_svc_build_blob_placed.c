/* tests/integration/test_svc_build_blob_placed.c: a built model's blob
 * removed between its write and its row's commit, against the real
 * daemon.
 *
 * Another replica removes a blob's file once no row names it
 * (store_blob_remove). A build writes its built model's blob first and
 * commits the row naming it after, so a removal of the same digest in
 * between (another model's, with the same built bytes, deleted) would
 * leave the row naming a file that is gone. The build's commit therefore
 * takes the lock on the digest (store_digest_lock) and puts the file back
 * when it is missing. Here the build is held between the two
 * (STEPCAST_FAILPOINT=build.publishing) and the file removed meanwhile, as
 * such a removal would: the model is ready, comes back from its blob after
 * a restart, and `stepcastd --check` finds every blob. Before, the restart
 * built it again from its traces and --check failed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/integration/svc_harness.h"

/* Remove every blob of d's data directory but the one named keep: how
 * many were removed. */
static int remove_blobs_but(const struct svc_daemon *d, const char *keep)
{
    char dir[4200], path[4500];
    int removed = 0;
    for (int i = 0; i < 256; i++) {
        snprintf(dir, sizeof dir, "%s/blobs/%02x", d->data, i);
        DIR *dp = opendir(dir);
        for (struct dirent *e; dp && (e = readdir(dp));) {
            if (e->d_name[0] == '.' || strcmp(e->d_name, keep) == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            removed += unlink(path) == 0;
        }
        if (dp)
            closedir(dp);
    }
    return removed;
}

TEST(svc_build_blob_removed_before_its_commit_is_put_back)
{
    static const char *const held[] = {"STEPCAST_FAILPOINT=build.publishing", NULL};
    struct svc_daemon d;
    struct svc_resp r;
    char path[128];
    size_t n;
    svc_start(&d, NULL, NULL, held);
    char *t = svc_small_trace(0, 40, 7, &n);
    struct svc_opts o = {SVC_ADMIN, t, n, NULL, NULL};
    CHECK_EQ_INT(svc_call(&d, "PUT", "/v1/jobs/twin/ranks/0/trace", &o, &r), 201);
    char *trace = strdup(svc_json_str(r.body, "sha256"));
    svc_resp_release(&r);
    free(t);
    REQUIRE(trace && strlen(trace) == 64);
    char *id = svc_request_model(&d, "twin", NULL);
    double t0 = th_now_s();
    REQUIRE(svc_wait_hold(&d, "build.publishing", 60)); /* its blob written */
    CHECK_EQ_INT(remove_blobs_but(&d, trace), 1);                              /* the built model's */
    CHECK(th_now_s() - t0 < 2.0); /* removed while the build was held */
    CHECK_STREQ(svc_wait_model(&d, id, 60), "ready");
    CHECK_EQ_INT(svc_log_lines(&d, 1, "event=put_again", "blob="), 1);
    CHECK_EQ_INT(svc_stop(&d), 0);

    /* after a restart it comes back from its blob, not its traces */
    svc_start(&d, d.data, NULL, NULL);
    snprintf(path, sizeof path, "/v1/models/%s/replay", id);
    CHECK_EQ_INT(svc_admin(&d, "GET", path, NULL, NULL), 200);
    CHECK_EQ_INT(svc_stop(&d), 0);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=reloaded from=blob"), 1);
    CHECK_EQ_INT(svc_log_lines(&d, 1, id, "event=reloaded from=traces"), 0);
    CHECK_EQ_INT(svc_run_check(d.data, NULL), 0);
    free(trace);
    free(id);
}
