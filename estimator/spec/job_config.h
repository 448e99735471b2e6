/* estimator/spec/job_config.h: the configuration of a traced job, as its owner
 * describes it, and the changes a what-if asks for (estimator/whatif/whatif.h).
 *
 * A job description is one JSON object,
 *   {"tp":2,"pp":1,"dp":4,"micro_batch":2,"global_batch":64,"layers":24,
 *    "hidden":2048,"heads":16,"ffn":8192,"seq":2048,"vocab":50257,"dtype":"bf16",
 *    "schedule":"1f1b","vpp":1,"kv_heads":16,"head_dim":128,"mlp":"gelu","cp":1,"ep":1,
 *    "etp":2,"zero_stage":1,"sequence_parallel":true,"recompute":"none",
 *    "gpus_per_node":8,"tied_embeddings":false,"bias":true,
 *    "moe":{"experts":8,"top_k":2,"ffn":4096,"shared_experts":0,"every":1,
 *           "dense_layers":0},
 *    "mla":{"kv_lora_rank":512,"q_lora_rank":1536,"qk_head_dim":128,
 *           "qk_pos_emb_head_dim":64,"v_head_dim":128}}
 * with tp, pp and dp required and every other key optional (`stepcast
 * whatif --config FILE`, the `config` of PUT /v1/jobs/{job}, `stepcast job
 * config`). Each optional key means what the spec's key of that name means
 * (README, "Estimating a configuration") and defaults as it does; the
 * pipeline schedule is Megatron-LM's "1f1b" or "interleaved" over vpp
 * virtual stages per pipeline rank, checked as a spec's is
 * (spec_schedule_check, spec.h). A what-if's `set` takes the same keys, any
 * subset, and `gpu` (a hardware profile id), given as "k=v,k=v" on the
 * command line (moe's and mla's members dotted: "moe.experts=16"; booleans true or
 * false) or as a JSON object over HTTP. The traced GPU is never described:
 * it is read from the trace.
 *
 * Parsing is strict: an unknown key, a value of the wrong type or outside
 * its range is SC_EINVAL with a message that starts with the key (for a
 * set: "set.dp: ...", "set.moe.experts: ..."), so callers can name the
 * field. */
#ifndef ESTIMATOR_JOB_CONFIG_H
#define ESTIMATOR_JOB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/spec.h"

/* The largest job description or set document taken. */
#define JOB_CONFIG_MAX_BYTES (64 << 10)

struct job_config {
    /* parallelism and batch; 0 = not given */
    int64_t tp, pp, dp, micro_batch, global_batch;
    /* the model's dimensions; 0 = not given */
    int64_t layers, hidden, heads, ffn, seq, vocab;
    int64_t vpp; /* virtual stages per pipeline rank; 0 = not given (1) */
    int has_dtype, has_schedule;
    enum hw_dtype dtype;
    enum est_schedule schedule; /* when has_schedule; else 1f1b */
    char gpu[48]; /* a set's target GPU (profile id); "" = not given */
    /* the spec's keys of these names; 0 = not given (zero_stage: use
     * has_zero_stage) */
    int64_t kv_heads, head_dim, cp, ep, etp, zero_stage, gpus_per_node;
    int has_zero_stage;
    int has_mlp;
    enum est_mlp mlp;
    int sequence_parallel; /* -1 = not given, else 0 or 1 */
    int tied_embeddings;   /* the output layer reuses the embedding's weights; -1 = not given */
    int bias;              /* the linear layers have biases (the spec's model.bias); -1 = not given */
    int has_recompute;
    enum est_recompute recompute; /* none, selective or full */
    /* the traced step's stack: the spec's options.framework (megatron or
     * an eager pytorch step) and options.master_weights (fp32, or pure
     * bf16 training) */
    int has_framework, has_master_weights;
    enum est_framework framework;
    enum est_master_weights master_weights;
    struct est_moe moe; /* the spec's model.moe; 0 = not given (every: 1) */
    struct est_mla mla; /* latent attention, the spec's model.mla; 0 = not given */
};

/* The largest spec text spec_job_config_spec_text writes. */
#define JOB_CONFIG_SPEC_TEXT_MAX 2048

/* *c empty: nothing given (the booleans -1, every other field 0). A
 * description or set made by hand starts from it. */
void spec_job_config_init(struct job_config *c);

/* Parse a job description (text of len bytes). SC_EPARSE for bad JSON,
 * SC_EINVAL naming the key otherwise (tp, pp and dp are required). */
int spec_job_config_parse(const char *text, size_t len, struct job_config *out, struct sc_error *err);

/* Parse a what-if's set given as "k=v,k=v" (the command line) or as a JSON
 * object's text (HTTP) into *out (spec_job_config_init first: only what is
 * given is set). An unknown gpu is SC_EINVAL naming set.gpu. */
int spec_job_config_parse_set_list(const char *list, struct job_config *out, struct sc_error *err);
int spec_job_config_parse_set_json(const char *text, size_t len, struct job_config *out,
                              struct sc_error *err);

/* *out = base with every field `set` gives replaced. */
void spec_job_config_apply(const struct job_config *base, const struct job_config *set,
                      struct job_config *out);

/* The schedule and the virtual stages per pipeline rank of c, the
 * defaults (1f1b, 1) where it gives none. */
enum est_schedule spec_job_config_schedule(const struct job_config *c);
int64_t spec_job_config_vpp(const struct job_config *c);
/* Whether c runs sequence parallelism: as given, else the spec's default
 * (options.sequence_parallel false). */
int spec_job_config_sequence_parallel(const struct job_config *c);
/* The GPUs c describes: tp x cp x pp x dp (cp 1 when not given). */
int64_t spec_job_config_world_size(const struct job_config *c);
/* c's expert groups as a spec has them: ep (1 when not given), etp (tp
 * when not given) and the expert-data-parallel ranks that reduce an
 * expert's gradients, tp x cp x dp / (ep x etp) (0 when that does not
 * divide). */
void spec_job_config_expert_groups(const struct job_config *c, int64_t *ep, int64_t *etp, int64_t *edp);

/* c's schedule checked as a spec's is (spec_schedule_check), the fields
 * named after prefix ("" for a description, "set." for a what-if's
 * target). */
int spec_job_config_check_schedule(const struct job_config *c, const char *prefix, struct sc_error *err);

/* Micro-batches per step of each pipeline: global_batch / (micro_batch x
 * dp), or 0 when the description does not give both batches. */
int64_t spec_job_config_micro_batches(const struct job_config *c);

/* The description as a JSON object's text (malloc'd; NULL when out of
 * memory): every given key, nothing else. */
char *spec_job_config_json(const struct job_config *c);

/* The spec (estimator/spec/spec.h) of configuration c on GPU profile `gpu`:
 * every key c gives, the spec's defaults for the rest.
 * SC_EINVAL when c lacks layers, hidden, heads or seq, or the spec's own
 * checks fail (the field named). */
int spec_job_config_spec(const struct job_config *c, const char *gpu, struct est_spec *out, struct sc_error *err);
/* The text of that spec into text[0..size) (JOB_CONFIG_SPEC_TEXT_MAX
 * bytes hold any); with `open`, its parallel object leaves tp, pp, dp,
 * ep, the schedule, vpp and micro_batch open (micro_batch is 1 where c
 * gives none): the planner's template (whatif_plan.h). */
int spec_job_config_spec_text(const struct job_config *c, const char *gpu, int open, char *text, size_t size,
                         struct sc_error *err);

/* Whether key names one of a description's nested objects ("moe",
 * "mla"), whose members are whole numbers. */
int spec_job_config_is_object(const char *key);

/* Every key a set accepts ("tp", ..., "schedule", "vpp", "gpu", ...,
 * "moe.experts", ...: moe's members dotted), NULL-terminated. */
const char *const *spec_job_config_keys(void);

#endif
