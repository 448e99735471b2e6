/* estimator/costs/coll_lines.h: measured NCCL curves by size range, and the
 * collective kinds by their nccl-tests names (DESIGN.md §5).
 *
 * NCCL picks its protocol (LL, LL128, Simple) by message size, each with
 * its own latency and bandwidth, so no one line T = alpha + S x factor /
 * busbw fits 8 B to 8 GiB. `stepcast calibrate nccl-tests` fits each size
 * range of a run on its own; a kind measured inside one NVLink domain keeps
 * a line per range, its alpha spread over the measured group's algorithm
 * steps so that another group size pays its own (estimator/
 * collective_model.h prices them). Cluster profiles (collective.lines) and
 * hardware profiles (collective_lines) hold them in the same JSON. */
#ifndef ESTIMATOR_COLL_LINES_H
#define ESTIMATOR_COLL_LINES_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/doc/json_doc.h"
#include "model/collective.h"

/* Whether the model times this kind: all-reduce, all-gather,
 * reduce-scatter, all-to-all, broadcast, reduce, send/recv. */
int cost_coll_kind_modelled(enum model_coll_op k);
/* nccl-tests kind names: "all_reduce", "all_gather", "reduce_scatter",
 * "alltoall", "broadcast", "reduce", "sendrecv" (and parsing them back:
 * MODEL_COLL_UNKNOWN for anything else). */
const char *cost_coll_kind_name(enum model_coll_op k);
enum model_coll_op cost_coll_kind_from_name(const char *s);

/* Size ranges fitted separately:
 * [1 B, 64 KiB), [64 KiB, 1 MiB), [1 MiB, 16 MiB), [16 MiB, inf). */
#define COLL_FIT_RANGES 4
extern const double coll_fit_range_lo[COLL_FIT_RANGES];

/* The physical range of a collective model's figures, checked wherever
 * they come in (a cluster profile, a calibration's fit, an nccl-tests
 * row), so that no stored calibration poisons the estimates that name it:
 * bandwidths 1e-6 to 1e5 GB/s (a line fitted on messages of a few bytes
 * stays well above the first, no link reaches the second; subnormals and
 * 0 are below it), latencies 0 to 1 s a step, the NVLS gain 0.1 to 16. */
#define COLL_MIN_BUSBW_GBPS 1e-6
#define COLL_MAX_BUSBW_GBPS 1e5
#define COLL_MAX_LATENCY_US 1e6
#define COLL_MIN_NVLS_GAIN 0.1
#define COLL_MAX_NVLS_GAIN 16.0

/* One size range of a measurement inside one NVLink domain. A message is
 * priced by the line of the range its size falls in (the first below the
 * first, the last above the last), between two ranges' sizes by the
 * straight way from the one's largest to the other's smallest, and never
 * less than a range below at that range's largest size: the time grows
 * with the size wherever two fits meet. */
struct coll_line {
    double from_bytes, to_bytes; /* the range's smallest and largest sizes measured */
    double hop_us;     /* (alpha - base) over the measured group's algorithm steps */
    double busbw_gbps; /* as measured, with the algorithm's gain (NVLS) in it */
};

struct coll_lines {
    int n; /* 0: the kind was not measured in a domain, the tier's figures price it */
    struct coll_line v[COLL_FIT_RANGES];
};

/* SC_EINVAL unless every kind's lines are of a modelled kind, at most
 * COLL_FIT_RANGES, busbw > 0, hop >= 0, sizes 0 <= from <= to, each line's
 * above the one before. */
int cost_coll_lines_valid(const struct coll_lines lines[MODEL_COLL_OP_COUNT], struct sc_error *err);
/* The same for one kind's lines. */
int cost_coll_kind_lines_valid(enum model_coll_op k, const struct coll_lines *lines, struct sc_error *err);

/* Lines as JSON text: {"all_reduce": [{"from_bytes", "to_bytes", "hop_us",
 * "busbw_gbps"}, ...], ...}, the member a hardware profile names
 * collective_lines and a cluster profile collective.lines.
 * cost_coll_lines_json gives the text (malloc'd, every number exact), NULL
 * when no kind has lines or out of memory. cost_coll_lines_parse reads
 * len bytes of text, an object, into lines[] (every kind's, replaced),
 * checked (cost_coll_lines_valid); SC_EPARSE after `where` and the member
 * otherwise, lines[] unchanged. */
/* The lines of every kind as a document's object ({"all_reduce": [{"from_bytes",
 * "to_bytes", "hop_us", "busbw_gbps"}, ...], ...}), read into and written from
 * struct coll_lines[MODEL_COLL_OP_COUNT]; profiles embed it. */
extern const struct doc_table cost_coll_lines_doc;

/* That object as text (NULL when no kind has lines, or out of memory). */
char *cost_coll_lines_json(const struct coll_lines lines[MODEL_COLL_OP_COUNT]);

#endif
