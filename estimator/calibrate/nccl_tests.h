/* estimator/calibrate/nccl_tests.h: reading the output of NVIDIA's nccl-tests
 * (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
 * sendrecv_perf, broadcast_perf, reduce_perf).
 *
 * Cluster operators keep these outputs; they are the cheapest calibration
 * of a fabric there is. Three format generations are read: the old one
 * (`error` column, no `Group`/`root`), the current one (`Group`, `root`,
 * `#wrong`) and 2.18+ (`# nccl-tests version`, `# Collective test
 * starting: NAME`). Lines may carry an MPI output tag ("[1,0]<stdout>:");
 * interleaved log lines (NCCL INFO, warnings) are skipped. Each result row
 * gives the size in bytes (the nccl-tests convention: the whole buffer of
 * all-gather and reduce-scatter), and for the out-of-place and the in-place
 * run the time in microseconds and the algorithm and bus bandwidths.
 *
 * The group size comes from the `# Rank N ...` device lines; where a file
 * lacks them (a partial copy) it is derived from the ratio of busbw to algbw
 * of the largest rows, which nccl-tests sets to the kind's factor
 * (2(n-1)/n, (n-1)/n), else it must be given. The node count is the number
 * of distinct hosts in the device lines (0 when unknown). */
#ifndef ESTIMATOR_NCCL_TESTS_H
#define ESTIMATOR_NCCL_TESTS_H

#include <stddef.h>

#include "common/error.h"
#include "model/collective.h"

/* At most this many result rows per file (nccl-tests sweeps hold ~40). */
#define NCT_MAX_ROWS 100000

/* One result row; [0] out-of-place, [1] in-place. A run the file does not
 * have has time_us < 0. */
struct nct_row {
    double bytes;
    double count;
    double time_us[2];
    double algbw_gbps[2];
    double busbw_gbps[2];
};

struct nct_run {
    enum model_coll_op kind; /* MODEL_COLL_UNKNOWN when nothing said */
    char device[96];         /* the first device line's GPU name, or "" */
    int ranks;               /* group size, 0 when unknown */
    int ranks_derived;       /* ranks came from the busbw/algbw ratio */
    int nodes;               /* distinct hosts of the device lines, 0 unknown */
    struct nct_row *rows;    /* in file order; from malloc */
    size_t n_rows;
};

/* Parse one output. `name_hint` (the file name, may be NULL) names the
 * collective when the output does not (old formats do not): the first of
 * all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast or
 * reduce found in it at a word start. SC_EPARSE when no result row is found
 * or a row is malformed (err->offset: the byte where its line starts). */
int calib_nct_parse(const char *text, size_t len, const char *name_hint, struct nct_run *out,
              struct sc_error *err);

/* The group size from the busbw/algbw ratio of the largest rows, for the
 * run's kind (calib_nct_parse does this when the file names no devices; call it
 * again after naming the kind); 0 when the ratio does not tell. */
int calib_nct_ranks_from_ratio(const struct nct_run *r);

void calib_nct_run_release(struct nct_run *r); /* NULL-safe; leaves r empty */

#endif
