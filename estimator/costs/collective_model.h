/* estimator/costs/collective_model.h: what a collective costs (DESIGN.md §5,
 * peers.md §3).
 *
 *     T = alpha(n) + S * factor / busbw
 *
 * S is the nccl-tests size (the whole buffer: for all-gather and
 * reduce-scatter sendcount x n x element size) and factor the nccl-tests
 * bus factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all
 * (n-1)/n; broadcast, reduce, send/recv 1), so busbw is what nccl-tests
 * reports. A group spans `ranks / ranks_per_domain` NVLink domains; across
 * them the collective is hierarchical (all-reduce: reduce-scatter in the
 * domain, all-reduce of the shard across domains, all-gather in the
 * domain), pipelined in chunks so that the slower tier bounds the transfer
 * (SimAI's bottleneck bandwidth) while the latencies of both tiers add.
 * alpha(n) = base + steps x hop latency of each tier, the steps being the
 * algorithm's: ring all-reduce 2(n-1), ring all-gather and reduce-scatter
 * n-1, all-to-all n-1, tree all-reduce 2 log2 n (the cheaper of ring and
 * tree is taken, as NCCL's tuner does), NVLink SHARP (NVLS) inside a domain
 * and SHARP across domains a constant 2 where the fabric has them. So an
 * estimate for thousands of ranks pays for every step of its algorithm.
 *
 * Parameters come from a hardware profile (link bandwidth x a documented
 * achievable fraction, NCCL's latency constants) or from a cluster profile
 * written by `stepcast calibrate` (estimator/calibrate/cluster_profile.h). Where
 * either holds measured lines of a kind (estimator/costs/coll_lines.h), a group
 * inside one domain is priced by them instead: one line per size range,
 * its latency over this group's steps. */
#ifndef ESTIMATOR_COLLECTIVE_MODEL_H
#define ESTIMATOR_COLLECTIVE_MODEL_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/coll_lines.h"
#include "model/collective.h"

struct hw_profile;


/* The nccl-tests bus factor: busbw = algbw x factor. */
double cost_coll_bus_factor(enum model_coll_op k, int ranks);

/* One tier of the fabric. */
struct coll_tier {
    double busbw_gbps; /* GB/s (1e9 B/s) a ring of this tier reaches, nccl-tests' busbw */
    double hop_us;     /* latency of one algorithm step over this tier */
};

/* Defaults (cost_coll_params_from_hw): busbw as a fraction of the link's
 * GB/s per tier, the NVLS gain, the base and per-step latencies, each
 * from a cited source (the COLL rows of cost_params.def). */

struct coll_params {
    double base_us;          /* fixed cost of one collective (launch, setup) */
    struct coll_tier intra;  /* inside an NVLink domain */
    struct coll_tier inter;  /* across domains (the network) */
    double nvls_gain;        /* busbw multiplier of NVLS all-reduce */
    int nvls;                /* the domain reduces in its switches */
    int sharp;               /* the network reduces in its switches */
    /* by kind, for groups inside one domain: a calibration's lines (its
     * steps scaled to the group's, as the hop latency is) */
    struct coll_lines lines[MODEL_COLL_OP_COUNT];
};

/* The defaults above on a GPU's profile: busbw = nvlink (network) GB/s per
 * direction x fraction; and the profile's measured lines, where it has
 * them (hw_profile.coll_lines). */
void cost_coll_params_from_hw(const struct hw_profile *hw, struct coll_params *p);

/* SC_EINVAL unless bandwidths are > 0 and latencies >= 0 (lines'
 * included: cost_coll_lines_valid). */
int cost_coll_params_valid(const struct coll_params *p, struct sc_error *err);


/* How a group is laid out: `ranks` members, `ranks_per_domain` of them in
 * each NVLink domain (1 .. ranks; ranks when the group is inside one). */
struct coll_group {
    int ranks;
    int ranks_per_domain;
};

enum coll_algo { COLL_ALGO_RING, COLL_ALGO_TREE, COLL_ALGO_NVLS, COLL_ALGO_DIRECT };
const char *cost_coll_algo_name(enum coll_algo a);

struct coll_estimate {
    double time_us;
    double alpha_us;    /* the latency part */
    double transfer_us; /* the bandwidth part */
    enum coll_algo algo;
};

/* The time of one collective of S bytes (nccl-tests convention); for
 * send/recv S is what one rank sends, and the group is the pair. A group
 * inside one domain, of a kind with lines, is priced by them (over the
 * group's steps and bytes); any other by the tiers.
 * SC_EINVAL for a kind the model does not time or a bad group. */
int cost_coll_estimate(const struct coll_params *p, enum model_coll_op kind, const struct coll_group *g,
                  double bytes, struct coll_estimate *out, struct sc_error *err);

/* ---- one size range of a measurement, as calibrate/coll_fit.h fits it ---- */

struct coll_fit {
    double size_lo, size_hi;   /* the rows' smallest and largest size */
    double alpha_us, busbw_gbps;
    double alpha_se_us, busbw_se_gbps; /* standard errors of the fit */
    int alpha_fitted;          /* 0: too few rows or a negative alpha; alpha 0 */
    size_t points;             /* samples (out-of-place and in-place times) */
    double rms_err_pct;        /* relative error of the fitted times */
    double max_err_pct;
};


/* ---- what a calibration measured ---- */

struct coll_measurement {
    enum model_coll_op kind;
    int ranks, nodes;
    int inter;        /* spans NVLink domains */
    char source[128]; /* the file */
    struct coll_fit fits[COLL_FIT_RANGES];
    size_t n_fits;
};

/* Set what measurements tell of *p (which holds the GPU's defaults): intra
 * busbw from the largest-size fit of a one-domain measurement (all-reduce
 * first) when it reaches 16 MiB, its hop latency from the fit of sizes
 * below 64 KiB (alpha less the base latency, spread over the algorithm's
 * steps); inter busbw and hop from a
 * multi-domain measurement by inverting the hierarchical model, where the
 * network bounds it; and each kind measured in one domain (its most ranks)
 * its lines, one per size range fitted. What nothing measured keeps its
 * default. One line per value set goes to `report` (if non-NULL), for the
 * user. */
void cost_coll_params_apply(struct coll_params *p, const struct coll_measurement *m, size_t n,
                       char *report, size_t report_len);

#endif
