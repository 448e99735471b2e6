/* api/whatif_json.h: what-if results and recovered job structure as JSON:
 * the documents of `stepcast whatif --json`, POST /v1/models/{id}/whatif
 * and the `structure` of `stepcast inspect --config`.
 *
 * whatif: the replay document of the transformed step (replay_json.h) and
 *   "base":{job description, "gpu":traced},"target":{...},"step_ms":..,
 *   "base_step_ms":..,"from_measured_ms":..,"from_models_ms":..,
 *   "models_used":[{"model":"kernel_model","tasks":N,"ms":..,"why":".."}],
 *   "breakdown_sources":{"compute_exposed":{"modelled_share":0..1,
 *   "source":"measured"|"modelled"|"measured and modelled"},...,
 *   "idle":{"modelled_share":null,"source":"no work"}} (whatif.h
 *   modelled_share_*),
 *   "collective_transfer_ms":..,"collective_wait_ms":..,
 *   "memory_gb_per_gpu":..|null,"fits":..|null,"structure":{...},
 *   "cost":{"base"|"target":{"gpus","gpu","per_step":{"gpu_hours",
 *   "energy_kwh","cost_usd"},"per_m_tokens":{...}|null},"energy":".."}:
 *   the traced step (base, measured) and the what-if's (target) priced
 *   by synth_cost_of: GPUs the config's, per million tokens at its
 *   global_batch x seq (null without them), kWh at board power (an upper
 *   bound), dollars at gpu_hour_usd (null when not given)
 * structure: {"layers_per_rank":N,"layers_from":"module annotations",
 *   "layer_tasks":N,"gpu":"a100-sxm4-40gb"|null,"device_name":"..",
 *   "world_size":N|null,"collectives":{"dp"|"tp"|"pp"|"cp"|"ep"|"edp"|
 *   "other":{"count":N,"ms":..}},
 *   "stack":{"kind":"eager"|"torch.compile","inductor_kernels":N,
 *   "compiled_regions":N},"passes":{"recorded":bool,"backward_tasks":N,
 *   "gradient_accumulation_tasks":N,"layers_forward":N,"layers_backward":N},
 *   "gradient_reduction":"none"|"ddp"|"zero"|"fsdp",
 *   "data_parallel":{"gradients"|"parameters"|"buffers"|"other":
 *   {"count":N,"per_step":..,"bytes_per_step":..,"ms":..}}} */
#ifndef API_WHATIF_JSON_H
#define API_WHATIF_JSON_H

#include <stddef.h>

#include <jansson.h>

struct job_structure;
struct job_config;
struct whatif_result;
struct synth_compare;

struct api_reply;
struct sc_error;

json_t *api_structure_json(const struct job_structure *s);
json_t *api_job_config_json(const struct job_config *c);
json_t *api_whatif_json(const struct whatif_result *r, double gpu_hour_usd);
/* [{"family":"gemm","traced_ms":..,"synth_ms":..,"traced_kernels":..,
 * "synth_kernels":..}, ...]: the families either side has, per rank and
 * step (`stepcast whatif --compare-synth --json` adds it as
 * "compare_synth"). */
json_t *api_synth_compare_json(const struct synth_compare *c);

/* The body of POST /v1/models/{id}/whatif, {"set":{...}}, into *set; on
 * failure a 400 in r naming the field and its status. */
int api_decode_whatif(const char *body, size_t len, struct job_config *set, struct api_reply *r);

/* The job description of a job's stored description text (PUT
 * /v1/jobs/{job}: its `config`): the keys a job description has (seq_len
 * read as seq), the others ignored. SC_EINVAL naming what is missing or
 * wrong. */
int api_job_config_from_job(const char *description, struct job_config *out, struct sc_error *err);
/* The keys of that config, each checked as a what-if's set checks it (its
 * range; no key required): SC_OK, or SC_EINVAL naming config.KEY. */
int api_job_config_check(const char *description, struct sc_error *err);

/* A what-if's document as a 200 reply, with the ledger's "band" for
 * what-ifs (ledger.h) when band is not NULL. */
struct ledger_band;
int api_reply_whatif(struct api_reply *r, const struct whatif_result *res, const struct ledger_band *band,
                     double gpu_hour_usd);

#endif
