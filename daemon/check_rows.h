/* daemon/check_rows.h: stepcastd --check's pass over the catalog's rows
 * (check_rows.c), called by svc_check (service.h). */
#ifndef DAEMON_CHECK_ROWS_H
#define DAEMON_CHECK_ROWS_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

/* The rows of the catalog st that its lists cannot show (rendered by the
 * encoders their lists use): every job, model, token,
 * calibration, ledger entry and experiment rendered as its list renders
 * it, and each job's description checked as PUT /v1/jobs/{job} checks one
 * now; each that fails (stored before a check existed, or written by
 * hand) is named on a line of the report and added to *bad, then one
 * summary line. SC_OK, or the catalog's error. */
struct store;
int svc_check_rows(struct store *st, FILE *report, size_t *bad, struct sc_error *err);

#endif
