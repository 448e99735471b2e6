/* daemon/h_jobs.h: what h_jobs.c (jobs and trace uploads) gives the other
 * handlers. */
#ifndef DAEMON_H_JOBS_H
#define DAEMON_H_JOBS_H

#include "daemon/service.h"
#include "daemon/store.h"

/* Remove blob files the catalog no longer names (after the commit that
 * freed them); failures are logged, the next start sweeps what is left. */
void h_remove_blobs(struct svc *s, const struct store_names *freed);

#endif
