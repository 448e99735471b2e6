/* tests/tools/validate.h: the parts of `make validate`'s tool (validate.c)
 * that its published mode (validate_published.c) shares. */
#ifndef TESTS_TOOLS_VALIDATE_H
#define TESTS_TOOLS_VALIDATE_H

#include <stddef.h>

#include "estimator/synth/synth.h"
#include "estimator/plan/validation.h"

/* The file's bytes, NUL-ended (malloc'd), *n their count; NULL when it
 * cannot be read. */
char *validate_slurp(const char *path, size_t *n);

/* Write the error bands of the runs' regions (estimator/plan/bands.h) under
 * their estimates pred (ms; <= 0: not estimated) into the bands file at
 * path: a region of the file that is there already is replaced when the
 * runs cover it, the others kept. `source` says what made them. */
int validate_write_bands(const char *path, const struct est_runs *r, const double *pred, const char *source,
                         struct sc_error *err);

/* Check every run's estimate (costs c, at detail; a configuration
 * measured again once) against the physical invariants
 * (estimator/synth/invariants.h): SC_EINTERNAL naming the line and the
 * invariant broken. */
int validate_invariants(const struct est_runs *r, const struct est_costs *c, enum est_detail detail,
                        struct sc_error *err);

/* `validate --published FILE`: every row of the published table estimated
 * with the estimator's defaults, scored by GPU, family, precision, MoE and
 * FSDP rows, then refitted per GPU and dtype under the
 * leave-one-family-out folds (fits of at most `iters` simplex
 * iterations); bands_out (or NULL) gets the bands of the rows' regions
 * under the defaults (validate_write_bands). Returns the exit status: 0, 1 when a row the spec can
 * express was refused or its estimate failed, 2 for an unreadable file. */
int validate_published(const char *path, enum est_detail detail, int iters, const char *bands_out);

#endif
