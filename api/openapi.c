/* api/openapi.c: the OpenAPI 3 document (openapi.h). */
#include "api/openapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/reply.h"
#include "api/query.h"
#include "api/routes.h"
#include "common/banned.h"

#define ID_PATTERN "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

/* The end of every list's answer (api/page.h). */
#define PAGE_PROPS                                                                                            \
    ",\"next_cursor\":{\"type\":\"string\",\"nullable\":true,\"description\":\"the next page's cursor "     \
    "(?cursor=); null on the last page\"},\"skipped\":{\"type\":\"integer\",\"description\":\"stored rows of "  \
    "this page that cannot be rendered, left out (stepcastd --check names them)\"}"

/* Schemas of the resources, as encode.c writes them. */
static const char schemas[] =
    "{"
    "\"Error\":{\"type\":\"object\",\"required\":[\"error\"],\"properties\":{\"error\":{\"type\":\"object\","
    " \"required\":[\"code\",\"message\"],\"properties\":{\"code\":{\"type\":\"string\"},"
    " \"message\":{\"type\":\"string\"}}}}},"
    "\"JobDescription\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    " \"config\":{\"type\":\"object\",\"description\":\"the job description (README, whatif; tp, pp and dp"
    " required for a what-if or a plan): tp, pp, dp, ep, cp, etp, sp, gpus, gpus_per_node, micro_batch, global_batch,"
    " layers, hidden, heads, kv_heads, head_dim, ffn, seq_len, vocab, vpp (positive integers), zero_stage (0-3),"
    " schedule (1f1b or interleaved; default 1f1b, vpp 1), mlp (gelu or swiglu), recompute (none, selective or"
    " full), sequence_parallel, tied_embeddings and bias (booleans), framework (megatron or pytorch), master_weights (fp32 or bf16), moe (an"
    " object: experts, top_k, ffn, shared_experts, every, dense_layers), mla (an object: kv_lora_rank,"
    " q_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim) and any other"
    " scalar\",\"properties\":{\"moe\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}},"
    " \"mla\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}},"
    "\"additionalProperties\":{\"oneOf\":[{\"type\":\"number\"},"
    " {\"type\":\"string\"},{\"type\":\"boolean\"}]}},"
    " \"hardware\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$\"},"
    " \"description\":{\"type\":\"string\",\"maxLength\":1024},"
    " \"steps_per_day\":{\"type\":\"number\",\"minimum\":1e-3,\"maximum\":1e9},"
    " \"runtime_hours\":{\"type\":\"number\",\"minimum\":1e-3,\"maximum\":24,"
    "\"description\":\"the hours a day the job runs (its steps a day at the measured step)\"},"
    " \"gpu_hour_usd\":{\"type\":\"number\",\"minimum\":1e-4,\"maximum\":1e6},"
    " \"tags\":{\"type\":\"object\",\"maxProperties\":16,\"description\":\"team, cluster, ...\","
    "\"additionalProperties\":{\"type\":\"string\",\"maxLength\":128}}}},"
    "\"Job\":{\"allOf\":[{\"$ref\":\"#/components/schemas/JobDescription\"},{\"type\":\"object\",\"properties\":{"
    " \"id\":{\"type\":\"string\"},\"created\":{\"type\":\"string\",\"format\":\"date-time\"},"
    " \"updated\":{\"type\":\"string\",\"format\":\"date-time\"},\"n_ranks\":{\"type\":\"integer\"},"
    " \"trace_bytes\":{\"type\":\"integer\"},\"n_models\":{\"type\":\"integer\"},"
    " \"traces\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Trace\"}},"
    " \"models\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}}}]},"
    "\"JobList\":{\"type\":\"object\",\"properties\":{\"jobs\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Job\"}}" PAGE_PROPS "}},"
    "\"Trace\":{\"type\":\"object\",\"properties\":{\"job\":{\"type\":\"string\"},\"rank\":{\"type\":\"integer\"},"
    " \"sha256\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},\"events\":{\"type\":\"integer\"},"
    " \"steps\":{\"type\":\"integer\"},\"uploaded\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"BuildRequest\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    " \"step_marker\":{\"type\":\"string\",\"description\":\"prefix of the CPU-side event that starts a step"
    " (default: ProfilerStep#N)\"},\"steps\":{\"type\":\"string\",\"pattern\":\"^[0-9]+(-[0-9]+)?$\"},"
    " \"fold\":{\"type\":\"boolean\",\"nullable\":true,\"description\":\"fold alike ranks into representatives"
    " (true: whatever the job's size; false: never; absent: when the job has more than 64 ranks); the replay's"
    " folding object says how many ranks were folded into how many\"}}},"
    "\"Model\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"job\":{\"type\":\"string\"},"
    " \"status\":{\"type\":\"string\",\"enum\":[\"building\",\"ready\",\"failed\",\"interrupted\"],"
    " \"description\":\"interrupted: the daemon stopped during the build (its drain timed out); POST"
    " /v1/models/{id}/resume builds it again\"},"
    " \"progress\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"description\":\"the fraction"
    " built; of an interrupted model, the fraction it had reached\"},\"queued\":{\"type\":\"boolean\","
    " \"description\":\"building, not started yet: waits for a build worker, or for memory under the"
    " daemon's memory-budget (builds start in the order they were asked for)\"},\"error\":{\"type\":\"string\",\"nullable\":true},"
    " \"version\":{\"type\":\"string\"},\"n_ranks\":{\"type\":\"integer\"},"
    " \"options\":{\"$ref\":\"#/components/schemas/BuildRequest\"},"
    " \"created\":{\"type\":\"string\",\"format\":\"date-time\"},"
    " \"finished\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true},"
    " \"summary\":{\"type\":\"object\",\"nullable\":true}}},"
    "\"ModelList\":{\"type\":\"object\",\"properties\":{\"models\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Model\"}}" PAGE_PROPS "}},"
    "\"TokenRequest\":{\"type\":\"object\",\"required\":[\"scope\"],\"additionalProperties\":false,\"properties\":{"
    " \"scope\":{\"type\":\"string\",\"enum\":[\"read\",\"write\",\"admin\"]},\"name\":{\"type\":\"string\",\"maxLength\":127}}},"
    "\"Token\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"},"
    " \"scope\":{\"type\":\"string\",\"enum\":[\"read\",\"write\",\"admin\"]},"
    " \"token\":{\"type\":\"string\",\"description\":\"the secret; in the creation reply only\"},"
    " \"created\":{\"type\":\"string\",\"format\":\"date-time\"},"
    " \"revoked\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true}}},"
    "\"TokenList\":{\"type\":\"object\",\"properties\":{\"tokens\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Token\"}}" PAGE_PROPS "}},"
    "\"Deleted\":{\"type\":\"object\",\"properties\":{\"deleted\":{\"type\":\"string\"},\"id\":{\"type\":\"string\"},"
    " \"models\":{\"type\":\"integer\"},\"blobs_freed\":{\"type\":\"integer\"}}},"
    "\"Health\":{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"},"
    " \"uptime_s\":{\"type\":\"number\"},\"schema\":{\"type\":\"integer\"},\"builds\":{\"type\":\"object\"},"
    " \"disk_full\":{\"type\":\"boolean\"},\"disk_free_bytes\":{\"type\":\"integer\"},"
    " \"store\":{\"type\":\"object\",\"description\":\"engine (sqlite or postgresql) and whether it is reachable\"}}},"
    "\"Replay\":{\"type\":\"object\",\"description\":\"the document of `stepcast replay --json`\"},"
    "\"Opportunities\":{\"type\":\"object\",\"description\":\"the document of `stepcast opportunities --json`\"},"
    "\"Diff\":{\"type\":\"object\",\"description\":\"the document of `stepcast diff --json`\"},"
    "\"DiffRequest\":{\"type\":\"object\",\"required\":[\"other\"],\"properties\":{\"other\":{\"type\":\"string\","
    "\"description\":\"the model of run B\"}}},"
    "\"Ab\":{\"type\":\"object\",\"description\":\"the document of `stepcast ab --json`: verdict (faster, slower, "
    "no_change, inconclusive), difference_ms, difference_pct, ci95_ms, p_value, effect_size, min_effect_ms, center_ms, "
    "steps, samples_ms (the samples compared, per run), dropped_steps, refutations, survives\"},"
    "\"AbRequest\":{\"type\":\"object\",\"required\":[\"a\",\"b\"],\"additionalProperties\":false,"
    "\"properties\":{\"a\":{\"type\":\"string\",\"description\":\"the model of the baseline run\"},"
    "\"b\":{\"type\":\"string\",\"description\":\"the model of the variant run\"},"
    "\"min_effect_pct\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":100,\"default\":1,"
    "\"description\":\"the smallest effect that matters, % of a's center\"},"
    "\"refutations\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":5,\"default\":5},"
    "\"seed\":{\"type\":\"integer\",\"minimum\":0,\"default\":1}}},"
    "\"Experiment\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},"
    "\"baseline\":{\"type\":\"string\"},\"variant\":{\"type\":\"string\"},\"hypothesis\":{\"type\":\"string\"},"
    "\"external_id\":{\"type\":\"string\"},\"state\":{\"type\":\"string\",\"enum\":[\"pending\",\"decided\","
    "\"closed\"]},\"waiting_for\":{\"type\":\"string\"},\"error\":{\"type\":\"string\"},"
    "\"created_ns\":{\"type\":\"integer\"},\"verdict\":{\"$ref\":\"#/components/schemas/Ab\"},"
    "\"inputs\":{\"type\":\"string\",\"nullable\":true,\"description\":\"the SHA-256 of the verdict's inputs\"},"
    "\"bank\":{\"type\":\"object\",\"nullable\":true,\"description\":\"{saving_ms_per_step, gpu_hours_per_day,"
    " usd_per_day, month, cadence} of a closed winning experiment\"}}},"
    "\"ExperimentList\":{\"type\":\"object\",\"properties\":{\"experiments\":{\"type\":\"array\",\"items\":"
    "{\"$ref\":\"#/components/schemas/Experiment\"}}" PAGE_PROPS "}},"
    "\"ExperimentRequest\":{\"type\":\"object\",\"required\":[\"baseline\",\"variant\"],"
    "\"additionalProperties\":false,\"properties\":{\"baseline\":{\"type\":\"string\",\"description\":\"a job\"},"
    "\"variant\":{\"type\":\"string\",\"description\":\"a job\"},\"hypothesis\":{\"type\":\"string\","
    "\"maxLength\":1024},\"external_id\":{\"type\":\"string\",\"maxLength\":128}}},"
    "\"FleetWaste\":{\"type\":\"object\",\"description\":\"{jobs:[{rank,job,model,team,cluster,ranked_by,"
    "step_ms_per_rank,waste_ms_per_step_per_rank,world_size,world_size_from,steps_per_day,steps_per_day_from,"
    "wasted_gpu_ms_per_step_summed,wasted_gpu_hours_per_day_summed,wasted_usd_per_day,note,"
    "waste_by_kind:[{kind,alone_ms_per_step_per_rank,share}]}],"
    "needs_tracing_of_more_ranks:[{job,model,unexplained_ms_per_step_per_rank}],method}\"},"
    "\"Fleet\":{\"type\":\"object\",\"description\":\"{jobs:[{model,job,ranks,step_ms,gpu_idle_ms,"
    "gpu_ms_per_step,opportunity}]}\"},"
    "\"CriticalPath\":{\"type\":\"object\"},"
    "\"KinetoTrace\":{\"type\":\"object\",\"description\":\"Chrome-trace JSON with traceEvents\"},"
    "\"Spec\":{\"type\":\"object\",\"description\":\"the training-job spec (data/spec.schema.json; README"
    " 'Estimating a configuration'); cluster.profile names a calibration of GET /v1/calibrations\"},"
    "\"Estimate\":{\"type\":\"object\",\"description\":\"the document of `stepcast estimate --json`, with"
    " memory_usable_gb (the GPU's memory less the reserve), per_stage[].memory {weights_gb, gradients_gb,"
    " optimizer_gb, activations_gb} (what each pipeline rank's peak holds) and"
    " band: {kind, entries, coverage 0.8, ratio_lo, ratio_hi, lo_ms, hi_ms} (10th-90th percentile of measured /"
    " predicted over the ledger's out-of-sample estimate entries), or {kind, entries, needed} below 10 entries\"},"
    "\"Hardware\":{\"type\":\"object\",\"description\":\"a data/hardware profile with its sources (where"
    " each figure comes from, by figure)\"},"
    "\"HfConfig\":{\"type\":\"object\",\"description\":\"a Hugging Face config.json (README, spec from-hf:"
    " llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, gpt_oss, gpt2, gpt_neox, deepseek_v2, deepseek_v3)\"},"
    "\"SpecModel\":{\"type\":\"object\",\"required\":[\"model\"],\"properties\":{\"model\":{\"type\":\"object\","
    " \"description\":\"a spec's model with every field written out\"},\"seq_from\":{\"type\":\"string\","
    " \"nullable\":true,\"description\":\"the config field that gave seq; null when the request's seq did\"}}},"
    "\"HardwareList\":{\"type\":\"object\",\"properties\":{\"hardware\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Hardware\"}}}},"
    "\"Calibration\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    " \"gpu\":{\"type\":\"string\"},\"source\":{\"type\":\"string\",\"enum\":[\"nccl-tests\",\"gemm-bench\",\"traces\"]},"
    " \"model\":{\"type\":\"string\",\"nullable\":true},\"sha256\":{\"type\":\"string\"},"
    " \"created\":{\"type\":\"string\",\"format\":\"date-time\"},"
    " \"profile\":{\"type\":\"object\",\"description\":\"the cluster profile document\"},"
    " \"report\":{\"type\":\"string\",\"description\":\"what the fits said\"}}},"
    "\"CalibrationList\":{\"type\":\"object\",\"properties\":{\"calibrations\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Calibration\"}}" PAGE_PROPS "}},"
    "\"ValidationRequest\":{\"type\":\"object\",\"required\":[\"measured_step_ms\"],\"additionalProperties\":false,"
    " \"description\":\"model alone: replay (mean over ranks of the modelled steps); model and set: what-if (as POST"
    " /v1/models/{id}/whatif); spec: estimate\",\"properties\":{"
    " \"model\":{\"type\":\"string\",\"nullable\":true},\"spec\":{\"type\":\"object\",\"nullable\":true},"
    " \"set\":{\"type\":\"object\",\"nullable\":true},\"measured_step_ms\":{\"type\":\"number\",\"exclusiveMinimum\":0},"
    " \"source\":{\"type\":\"string\",\"maxLength\":255},\"run_at\":{\"type\":\"string\",\"maxLength\":39},"
    " \"in_sample\":{\"type\":\"boolean\",\"description\":\"a run the estimator was fitted on\"}}},"
    "\"Validation\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},"
    " \"model\":{\"type\":\"string\",\"nullable\":true},\"kind\":{\"type\":\"string\",\"enum\":[\"replay\",\"whatif\",\"estimate\"]},"
    " \"measured_step_ms\":{\"type\":\"number\"},\"predicted_step_ms\":{\"type\":\"number\",\"nullable\":true},"
    " \"error_pct\":{\"type\":\"number\",\"nullable\":true,\"description\":\"(predicted - measured) / measured x 100\"},"
    " \"version\":{\"type\":\"string\"},\"calibration\":{\"type\":\"string\",\"nullable\":true},"
    " \"in_sample\":{\"type\":\"boolean\"}}},"
    "\"PlanRequest\":{\"type\":\"object\",\"required\":[\"spec\",\"gpus\"],\"additionalProperties\":false,"
    "\"properties\":{\"spec\":{\"$ref\":\"#/components/schemas/Spec\"},\"gpus\":{\"type\":\"integer\",\"minimum\":1},"
    "\"up_to\":{\"type\":\"boolean\",\"default\":false},\"top\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,"
    "\"default\":10},\"objective\":{\"type\":\"string\",\"enum\":[\"time\",\"cost\"],\"default\":\"time\"},"
    "\"risk\":{\"type\":\"number\",\"minimum\":0.5,\"maximum\":1,\"default\":0.5,\"description\":\"rank by the step "
    "time at this quantile of the error band of each row's region: the estimate / (1 + the error quantile at "
    "1 - risk), the error being estimate / measured - 1\"}},"
    "\"description\":\"the spec's parallel and options give what is fixed; the rest is searched; "
    "parallel.global_batch is required\"},"
    "\"ModelPlanRequest\":{\"type\":\"object\",\"required\":[\"gpus\"],\"additionalProperties\":false,"
    "\"properties\":{\"gpus\":{\"type\":\"integer\",\"minimum\":1},"
    "\"up_to\":{\"type\":\"boolean\",\"default\":false},\"top\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,"
    "\"default\":10},\"objective\":{\"type\":\"string\",\"enum\":[\"time\",\"cost\"],\"default\":\"time\"}},"
    "\"description\":\"a plan from the model's job: its config gives the model and global batch\"},"
    "\"Plan\":{\"type\":\"object\",\"required\":[\"id\",\"state\"],\"properties\":{\"id\":{\"type\":\"string\"},"
    "\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"interrupted\",\"done\",\"failed\",\"cancelled\"]},"
    "\"progress\":{\"type\":\"object\",\"properties\":{\"done\":{\"type\":\"integer\"},\"total\":{\"type\":\"integer\"}}},"
    "\"error\":{\"type\":\"string\"},\"evaluated\":{\"type\":\"integer\"},\"pruned\":{\"type\":\"integer\"},"
    "\"infeasible\":{\"type\":\"object\",\"properties\":{\"memory\":{\"type\":\"integer\"},"
    "\"divisibility\":{\"type\":\"integer\"}}},\"risk\":{\"type\":\"number\"},"
    "\"top\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"parallel\":{\"type\":\"object\"},"
    "\"options\":{\"type\":\"object\"},\"estimate\":{\"$ref\":\"#/components/schemas/Estimate\"},"
    "\"at_risk\":{\"type\":\"object\",\"description\":\"a plan from a spec: the step time at the risk\","
    "\"properties\":{\"risk\":{\"type\":\"number\"},\"error\":{\"type\":\"number\"},\"step_ms\":{\"type\":\"number\"}}},"
    "\"band\":{\"type\":\"object\",\"nullable\":true,\"description\":\"the error band of the row's region (GPU, "
    "model dense or moe, sharding none, distributed_optimizer or fsdp), from the compiled-in bands or the ledger; "
    "null: none\",\"properties\":{\"gpu\":{\"type\":\"string\"},\"model\":{\"type\":\"string\"},"
    "\"sharding\":{\"type\":\"string\"},\"rows\":{\"type\":\"integer\"},\"source\":{\"type\":\"string\"},"
    "\"error\":{\"type\":\"object\",\"description\":\"quantiles p05 to p95 of estimate / measured - 1\"},"
    "\"best_mfu\":{\"type\":\"object\"},\"max_gpus\":{\"type\":\"integer\"}}},"
    "\"extrapolated\":{\"type\":\"boolean\"},\"extrapolated_because\":{\"type\":\"string\"},"
    "\"megatron_args\":{\"type\":\"string\",\"description\":\"the top row: the Megatron-LM arguments that "
    "run it (as `stepcast plan --megatron`)\"},"
    "\"kernel\":{\"$ref\":\"#/components/schemas/Estimate\",\"description\":\"the top row of a plan from a "
    "spec, estimated again at kernel detail\"}}}}}},"
    "\"Ledger\":{\"type\":\"object\",\"properties\":{\"entries\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Validation\"}},"
    " \"mape\":{\"type\":\"object\"},\"by_model\":{\"type\":\"object\"},\"by_kind\":{\"type\":\"object\"},"
    " \"by_month\":{\"type\":\"object\"},\"bands\":{\"type\":\"object\"}" PAGE_PROPS "}},"
    "\"WhatIfRequest\":{\"type\":\"object\",\"required\":[\"set\"],\"additionalProperties\":false,\"properties\":{"
    " \"set\":{\"type\":\"object\",\"additionalProperties\":false,\"description\":\"what to change: tp, pp,"
    " dp, micro_batch, global_batch, layers, hidden, heads, ffn, seq, vocab, vpp (positive integers), dtype,"
    " schedule (1f1b or interleaved, checked with vpp as a spec's parallel object is), gpu (a hardware profile"
    " id); an empty object is a no-op\"}}},"
    "\"WhatIf\":{\"type\":\"object\",\"description\":\"the replay document of the transformed step with base,"
    " target, step_ms, base_step_ms, profiler_ms (the host time per step taken off as the profiler's),"
    " profiled_step_ms (the step with it kept, as under the profiler; null without it), from_measured_ms,"
    " from_models_ms, models_used, collective_transfer_ms,"
    " collective_wait_ms, memory_gb_per_gpu, fits and structure (the document of `stepcast whatif --json`)\"}"
    "}";

static json_t *ref(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "#/components/schemas/%s", name);
    return json_pack("{s:s}", "$ref", p);
}

static json_t *content(const char *type, json_t *schema)
{
    return json_pack("{s:{s:o}}", type, "schema", schema);
}

/* A query parameter's default, as its type has it. */
static json_t *default_value(const struct api_query_param *q)
{
    switch (q->type) {
    case API_Q_INT:
        return json_integer(strtoll(q->def, NULL, 10));
    case API_Q_NUMBER:
        return json_real(strtod(q->def, NULL));
    case API_Q_BOOL:
        return json_boolean(strcmp(q->def, "true") == 0 || strcmp(q->def, "1") == 0);
    default:
        return json_string(q->def);
    }
}

static json_t *parameters(const struct api_op_info *op, enum api_op id)
{
    const struct api_query_param *q;
    json_t *a = json_array();
    if (strstr(op->path, "{job}"))
        json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:{s:s, s:s}}", "name", "job", "in", "path",
                                           "required", 1, "schema", "type", "string", "pattern", ID_PATTERN));
    if (strstr(op->path, "{rank}"))
        json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:{s:s, s:i}}", "name", "rank", "in", "path",
                                           "required", 1, "schema", "type", "integer", "minimum", 0));
    if (strstr(op->path, "{id}"))
        json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:{s:s, s:s}}", "name", "id", "in", "path",
                                           "required", 1, "schema", "type", "string", "pattern", ID_PATTERN));
    if (strstr(op->path, "{file}"))
        json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:{s:s}}", "name", "file", "in", "path",
                                           "required", 1, "schema", "type", "string"));
    for (size_t i = 0; (q = api_query_param(id, i)); i++) {
        json_t *schema = json_pack("{s:s}", "type", api_qtype_name(q->type));
        if (q->type == API_Q_INT) {
            json_object_set_new(schema, "minimum", json_integer((json_int_t)q->min));
            json_object_set_new(schema, "maximum", json_integer((json_int_t)q->max));
        } else if (q->type == API_Q_NUMBER) {
            json_object_set_new(schema, "minimum", json_real(q->min));
            json_object_set_new(schema, "maximum", json_real(q->max));
        }
        if (q->type == API_Q_ENUM) {
            json_t *values = json_array();
            for (const char *v = q->form; v;) {
                const char *c = strchr(v, ',');
                json_array_append_new(values, json_stringn(v, c ? (size_t)(c - v) : strlen(v)));
                v = c ? c + 1 : NULL;
            }
            json_object_set_new(schema, "enum", values);
        }
        if (q->type == API_Q_ID)
            json_object_set_new(schema, "pattern", json_string(ID_PATTERN));
        if (q->type == API_Q_STRING && q->form)
            json_object_set_new(schema, "pattern", json_string(q->form));
        if (q->def)
            json_object_set_new(schema, "default", default_value(q));
        json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", q->name, "in", "query", "required",
                                           (q->flags & API_QF_REQUIRED) != 0, "description", q->description,
                                           "schema", schema));
    }
    return a;
}

static json_t *responses(const struct api_op_info *op)
{
    json_t *r = json_object();
    char code[8], list[96];
    json_t *ok;
    if (op->reply)
        ok = content(op->reply_media, ref(op->reply));
    else if (!strcmp(op->reply_media, "application/json"))
        ok = content(op->reply_media, json_pack("{s:s}", "type", "object"));
    else if (!strncmp(op->reply_media, "text/", 5))
        ok = content(op->reply_media, json_pack("{s:s}", "type", "string"));
    else
        ok = content(op->reply_media, json_pack("{s:s, s:s}", "type", "string", "format", "binary"));
    snprintf(code, sizeof code, "%u", op->success);
    json_object_set_new(r, code, json_pack("{s:s, s:o}", "description", op->summary, "content", ok));
    if (op->also_200)
        json_object_set_new(r, "200", json_pack("{s:s, s:o}", "description", op->also_200, "content",
                                                content(op->reply_media, ref(op->reply))));
    /* the op's own, then what any request can get for its head */
    snprintf(list, sizeof list, "%s,400,414,431", op->errors);
    for (char *p = list; *p;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        json_object_set_new(r, p, json_pack("{s:s, s:o}", "description", "error (see the error codes)",
                                            "content", content("application/json", ref("Error"))));
        p = c ? c + 1 : p + strlen(p);
    }
    return r;
}

static json_t *operation(enum api_op id)
{
    const struct api_op_info *op = api_op_info(id);
    json_t *o = json_pack("{s:s, s:s, s:o, s:o}", "operationId", op->id, "summary", op->summary,
                          "parameters", parameters(op, id), "responses", responses(op));
    if (!o)
        return NULL;
    if (op->scope != API_SCOPE_NONE) {
        json_object_set_new(o, "security", json_pack("[{s:[]}]", "bearer"));
        json_object_set_new(o, "x-scope", json_string(api_scope_name(op->scope)));
    }
    if (op->body == API_BODY_TRACE)
        json_object_set_new(o, "requestBody",
                            json_pack("{s:b, s:s, s:o}", "required", 1, "description", op->request, "content", content("application/octet-stream",
                                                         json_pack("{s:s, s:s}", "type", "string",
                                                                   "format", "binary"))));
    else if (op->body == API_BODY_TEXT)
        json_object_set_new(o, "requestBody",
                            json_pack("{s:b, s:s, s:o}", "required", 1, "description", op->request, "content",
                                      content("text/plain", json_pack("{s:s}", "type", "string"))));
    else if (op->body != API_BODY_NONE)
        json_object_set_new(o, "requestBody",
                            json_pack("{s:b, s:o}", "required", op->body == API_BODY_JSON, "content",
                                      content("application/json", ref(op->request))));
    return o;
}

static json_t *error_codes(void)
{
    json_t *a = json_array();
    for (int c = API_E_NONE + 1; c < API_E_COUNT; c++) {
        const struct api_code_info *ci = api_code_info((enum api_code)c);
        json_array_append_new(a, json_pack("{s:s, s:i, s:s}", "code", ci->name, "status", (int)ci->http,
                                           "meaning", ci->meaning));
    }
    return a;
}

int api_openapi_text(char **out, struct sc_error *err)
{
    json_error_t je;
    json_t *paths = json_object();
    json_t *comp = json_loads(schemas, 0, &je);
    json_t *doc = NULL;
    *out = NULL;
    if (!comp) {
        json_decref(paths);
        return sc_error_set(err, SC_EINTERNAL, "openapi schemas: %s at %d", je.text, je.position);
    }
    for (int i = 0; paths && i < API_OP_COUNT; i++) {
        const struct api_op_info *op = api_op_info((enum api_op)i);
        char method[8];
        size_t k;
        for (k = 0; op->method[k] && k + 1 < sizeof method; k++)
            method[k] = (char)(op->method[k] | 0x20);
        method[k] = '\0';
        json_t *item = json_object_get(paths, op->path);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, op->path, item);
        }
        json_object_set_new(item, method, operation((enum api_op)i));
    }
    doc = json_pack("{s:s, s:{s:s, s:s, s:s, s:o}, s:o, s:{s:o, s:{s:{s:s, s:s}}}}", "openapi", "3.0.3",
                    "info", "title", "stepcast", "version", STEPCAST_VERSION, "description",
                    "Trace-driven performance model of distributed training steps. Errors are "
                    "{\"error\":{\"code\",\"message\"}} with the codes in x-error-codes.",
                    "x-error-codes", error_codes(), "paths", paths, "components", "schemas", comp,
                    "securitySchemes", "bearer", "type", "http", "scheme", "bearer");
    *out = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return *out ? SC_OK : sc_error_set(err, SC_ENOMEM, "out of memory");
}
