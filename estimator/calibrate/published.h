/* estimator/calibrate/published.h: published step times of training jobs, and the
 * spec each one ran as (DESIGN.md §5; `validate --published`).
 *
 * The input is the markdown table of
 * ../shared/validation/published/dgxc_benchmarking.md: NVIDIA's DGX Cloud
 * benchmarking recipes (NeMo / Megatron-Core, a few JAX rows) on H100 and
 * GB200, one row per measured step. Columns are found by their header
 * names (GPU, #GPUs, model, model dims, prec, seq, layers run, TP, PP, CP,
 * EP, VP, DP, MBS, GBS, software, step time (s), notes); others are not
 * read. What the file's header notes say, as read here:
 *
 *  - '-' is "not used": CP and EP 1, VP none; "NA ..." (VP "NA in config
 *    table") is not published: the VP another release printed for the
 *    same model and layout (rows repeated across releases are the same
 *    configuration measured again), else no virtual stages;
 *  - a whole number may be followed by a remark, "12 (PP=1)";
 *  - DP is a number, "FSDP=a x DP=b" (FSDP over a x b ranks) or "FSDP+DP
 *    (split unknown)" (FSDP, DP derived as GPUs / (TP x PP x CP)); a row
 *    with EP > 1 whose GPUs are not TP x PP x CP x DP takes DP = GPUs /
 *    (TP x PP x CP), as the header allows (Grok-1's config tables print
 *    DP 1 beside EP 8 on 512 GPUs, "DP as printed" as some of their notes
 *    say); any other row whose GPUs are not that product is malformed;
 *  - a step time printed with spaces inside ("8.7  5", the 405B 96-GPU
 *    row, as its note says) is read with them removed (8.75 s, which its
 *    tokens/s confirm);
 *  - "ETP=n" in the notes is the expert tensor parallelism (else TP);
 *  - "layers run" below the dims' L is NVIDIA's proxy: the spec runs that
 *    many layers.
 *
 * Rows the spec cannot express are parsed and kept with a reason in
 * `skip`: the families the file's README leaves out (Llama 4's
 * alternating MoE layers, Nemotron-H's Mamba layers), a GPU with no
 * profile here, dims that do not say the heads, and latent attention
 * ("MLA", DeepSeek-V3's) until calib_published_latent_widths gives its
 * widths, which the table does not print. */
#ifndef ESTIMATOR_PUBLISHED_H
#define ESTIMATOR_PUBLISHED_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/spec/spec.h"

enum est_pub_software { EST_PUB_NEMO, EST_PUB_MAXTEXT, EST_PUB_PAXML };

struct est_published {
    size_t line;          /* in the file, for messages */
    char gpu[16];         /* as printed: "H100", "GB200" */
    int64_t gpus;
    char model[48];       /* "llama3.1-405b" */
    char family[24];      /* the model up to its last '-': "llama3.1", "gpt3", "grok1" */
    struct est_model dims; /* layers = layers run, seq, and the dims column; moe when MoE */
    int64_t full_layers;  /* L of the dims column (> layers: a proxy) */
    enum hw_dtype dtype;  /* HW_BF16 or HW_FP8 */
    int64_t tp, pp, cp, ep, etp, vp, dp; /* etp 0: as tp; vp 0: no virtual stages */
    /* the VP cell said "NA in config table" and no other release printed
     * one for the same model and layout (vp 0 then) */
    int vp_unstated;
    /* parameters, gradients and optimizer state sharded (ZeRO-3) within
     * groups of this many data-parallel ranks ("FSDP=a x DP=b": a; the
     * split unknown: all of them); 0: not sharded so */
    int64_t fsdp;
    int64_t micro_batch, global_batch;
    enum est_pub_software software;
    double step_s;        /* measured */
    char skip[112];       /* why the spec cannot express the row; "" = it can */
    int latent;           /* the dims say MLA: dims.mla from the model's config.json */
};

/* Parse the file's text; *rows is malloc'd (free()). SC_EPARSE naming the
 * line (and column) for a table that is not one, a malformed cell, or a
 * row whose GPUs are not its parallelism's product; SC_ELIMIT past
 * 100,000 rows or 64 columns. */
int calib_published_parse(const char *text, size_t len, struct est_published **rows, size_t *n,
                        struct sc_error *err);

/* Whether row r is a latent-attention row that waits for its widths. */
int calib_published_latent_pending(const struct est_published *r);
/* The widths (dims.mla) of the waiting latent-attention rows of model
 * family `family`, from its Hugging Face config.json text (the table's
 * header says DeepSeek-V3's dims are the public config's:
 * ../shared/models/hf/deepseek-v3.json). config NULL (no such file), one
 * that does not parse or one of another model (hidden, heads, vocab):
 * the rows stay skipped, saying why. */
void calib_published_latent_widths(struct est_published *rows, size_t n, const char *family, const char *config,
                                   size_t len);

/* "NeMo", "MaxText", "PAXML". */
const char *calib_pub_software_name(enum est_pub_software s);

/* The spec of usable row r as the NeMo recipes ran it: cluster h100-sxm
 * (8 GPUs a node) or gb200 (72-GPU NVLink domain), its dtype, flash
 * attention, sequence parallelism and tensor-parallel communication
 * overlap when TP > 1, the interleaved schedule when VP is given,
 * Megatron's distributed optimizer (ZeRO-1; FSDP rows ZeRO-3, sharded
 * within their FSDP groups) with the gradient reduce and parameter gather
 * overlapped and reduced in bf16 (NeMo's performance scripts set
 * grad_reduce_in_fp32 false), the MoE experts, top-k, EP and ETP; and the least
 * recomputation (none, selective, full) with which the memory model says
 * it fits (these jobs ran: options.recompute auto, resolved in *out).
 * *fits is 0 when not even full recomputation fits (the spec has full
 * then). SC_EINVAL naming the row's line and the
 * field when spec_load refuses the configuration. */
int calib_published_spec(const struct est_published *r, struct est_spec *out, const struct hw_profile **hw,
                       int *fits, struct sc_error *err);

#endif
