/* daemon/build_queue.h: the queue of model builds, kept in the catalog so
 * that any replica of the daemon on one store may take the next build.
 *
 * A model `building` is queued; a replica takes it (bq_claim) by writing a
 * lease on its row: its name and until when (now + BQ_LEASE_S). While it
 * builds, it renews the lease every BQ_RENEW_S, writing the build's
 * progress beside it, so any replica can report it. A replica that dies
 * stops renewing: once the lease has run out, another replica takes the
 * build and builds it again from the start. A build is finished
 * (bq_finish) only under the lease that took it, so a replica that lost
 * its lease (it stalled past BQ_LEASE_S, or the model was deleted: a
 * cancel, through any replica) publishes nothing; its builder looks at its
 * leases every BQ_POLL_S (bq_held) and stops a build whose lease is gone.
 * A shutdown that cancels a build marks it `interrupted` (bq_interrupt),
 * with its progress, until it is resumed (bq_resume). Two replicas never hold
 * one lease at once: on PostgreSQL the claim locks the row it takes and
 * skips those others are taking (SELECT ... FOR UPDATE SKIP LOCKED); on
 * SQLite its one writer serialises the claims.
 *
 * Leases compare the replicas' clocks (CLOCK_REALTIME): hosts sharing a
 * store keep their clocks in step (NTP), well within BQ_LEASE_S. */
#ifndef DAEMON_BUILD_QUEUE_H
#define DAEMON_BUILD_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "api/resources.h"
#include "common/error.h"
#include "daemon/digest.h"

struct store;

#define BQ_LEASE_S 15 /* a lease runs this long from its last renewal */
#define BQ_RENEW_S 5  /* a builder renews its leases this often */
#define BQ_POLL_S 1   /* an idle builder looks for builds this often */

/* Take the oldest model building with no live lease, leasing it to owner:
 * 1 with its id in id, 0 when there is none, -1 on the catalog's error
 * (in err). */
int bq_claim(struct store *s, const char *owner, char id[API_ID_MAX], struct sc_error *err);

/* Renew owner's lease of model id, writing progress (0..1): *kept 1, or 0
 * when the lease is no longer owner's (run out and taken, or the model
 * finished or deleted). */
int bq_renew(struct store *s, const char *id, const char *owner, double progress, int *kept,
             struct sc_error *err);

/* Whether owner still holds its lease of model id (the cancel check,
 * between renewals): *kept 0 once the model was deleted (a cancel through
 * any replica), or its lease taken. */
int bq_held(struct store *s, const char *id, const char *owner, int *kept, struct sc_error *err);

/* Give a lease back (a build not started when its builder stops): the
 * model waits for the next claim. */
int bq_release(struct store *s, const char *id, const char *owner, struct sc_error *err);
/* Give back every lease owner holds (at start: its previous run's). */
int bq_release_all(struct store *s, const char *owner, struct sc_error *err);

/* Finish owner's build of model id: status ready (with its summary and,
 * when built is not NULL, the blob of the built model, `bytes` long, whose
 * catalog row this adds) or failed (with error). *kept 0, and nothing
 * written, when the lease is no longer owner's. With built, place(pctx)
 * runs under the lock on its digest (store_digest_lock) before the row is
 * added: it puts the blob's file back should another replica have removed
 * it since it was written (an identical built model's, deleted). */
typedef int (*bq_place_fn)(void *ctx, struct sc_error *err);
int bq_finish(struct store *s, const char *id, const char *owner, enum api_model_status status,
              const char *error, const char *summary, const char *built, uint64_t bytes, bq_place_fn place,
              void *pctx, int *kept, struct sc_error *err);

/* Owner's build of model id, cancelled by a shutdown: status
 * `interrupted`, with its progress (0..1) and error saying how to resume
 * it. *kept 0, and nothing written, when the lease is no longer owner's. */
int bq_interrupt(struct store *s, const char *id, const char *owner, double progress, const char *error,
                 int *kept, struct sc_error *err);
/* An interrupted model back in the queue (POST /v1/models/{id}/resume):
 * 1, or 0 when it is not interrupted, -1 on the catalog's error. */
int bq_resume(struct store *s, const char *id, struct sc_error *err);
/* Undo bq_resume (the queue was full): model `was` (as it was read,
 * interrupted) interrupted again, with its progress and error, unless a
 * replica has taken it since. */
int bq_unresume(struct store *s, const struct api_model *was, struct sc_error *err);

/* A model's build as the catalog has it: 1 while building, with the
 * progress its builder last wrote and whether it waits for a replica to
 * take it (no live lease); 0 when it is not building; -1 on the catalog's
 * error. */
int bq_progress(struct store *s, const char *id, double *fraction, int *queued, struct sc_error *err);

/* Models building: *all of them, *waiting those with no live lease. */
int bq_counts(struct store *s, int64_t *all, int64_t *waiting, struct sc_error *err);

/* The blob of model id's built model: 1 with its hash in sha, 0 when it
 * has none (built before blobs of models, or not ready), -1 on the
 * catalog's error. */
int bq_built_blob(struct store *s, const char *id, char sha[DIGEST_HEX_LEN + 1], struct sc_error *err);

/* Every built model's blob (stepcastd --check): ids[i] built into shas[i],
 * from malloc. */
int bq_built_blobs(struct store *s, char (**ids)[API_ID_MAX], char (**shas)[DIGEST_HEX_LEN + 1],
                   size_t *n, struct sc_error *err);

/* This replica's name, the owner of its leases: kept in
 * <data_dir>/replica (made once, random), so a restart on the same data
 * directory (one daemon per data directory: dir_lock.h) takes back its
 * previous run's leases at once (bq_release_all). */
#define BQ_OWNER_MAX 96
int bq_replica_name(const char *data_dir, char out[BQ_OWNER_MAX], struct sc_error *err);

#endif
