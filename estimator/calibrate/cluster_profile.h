/* estimator/calibrate/cluster_profile.h: the cluster profile document that `stepcast
 * calibrate` writes and a spec names with `cluster.profile` (README,
 * "calibrate").
 *
 *   {"format": "stepcast-cluster-profile", "version": 1,
 *    "gpu": "a100-sxm4-40gb", "device_name": "...", "source": "nccl-tests",
 *    "measurements": [...],      what was fitted, with each fit's quality
 *    "collective": {...},        struct coll_params
 *    "kernel": {..., "fit": {}}, struct kernel_params (calibrate traces)
 *    "flags": ["..."]}           what the fit got wrong (read by no one)
 *
 * Reading it sets only what it holds: the caller starts from the GPU's
 * defaults (cost_coll_params_from_hw, cost_kernel_params_default). */
#ifndef ESTIMATOR_CLUSTER_PROFILE_H
#define ESTIMATOR_CLUSTER_PROFILE_H

#include <stddef.h>

#include "common/error.h"
#include "estimator/costs/collective_model.h"
#include "estimator/calibrate/attn_samples.h"
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/calibrate/mem_samples.h"

#define CLUSTER_PROFILE_MAX_FLAGS 8

struct cluster_profile {
    char gpu[48];          /* hardware profile id; "" when the document names none */
    char device_name[96];  /* as the measurements named the GPU, or "" */
    char source[32];       /* "nccl-tests" or "traces" */
    struct coll_params coll;
    int has_kernel;        /* the document holds kernel parameters */
    struct kernel_params kernel;
    struct gemm_fit kernel_fit; /* how they were fitted (written only) */
    struct mem_fit mem_fit;     /* hbm_fraction's fit (written only) */
    struct attn_fit attn_fit;   /* the attention fit (written only) */
    /* what the fit got wrong, each a sentence (written only): a fitted
     * bandwidth above the link's, a calibrated model no better than the
     * defaults on its own measurements */
    char flags[CLUSTER_PROFILE_MAX_FLAGS][256];
    int n_flags;
};

/* The document as the file holds it (malloc'd text, indented, numbers at
 * 10 significant digits; NULL when out of memory). */
char *calib_cluster_profile_json(const struct cluster_profile *p, const struct coll_measurement *m, size_t n);

/* Read a document over *p: gpu, device_name and source, and every
 * parameter it holds. SC_EPARSE naming the member on a bad document;
 * *p is unchanged then. */
int calib_cluster_profile_parse(const char *json, size_t len, struct cluster_profile *p, struct sc_error *err);

#endif
