/* estimator/spec/spec.c: parsing, defaults, checks and writing of the spec.
 *
 * One table lists every key with its type, range, default sentinel and
 * place in struct est_spec; the parser, the writer and spec_keys() all
 * walk it, so they cannot disagree about which keys exist. The checks of
 * what can run follow Megatron-LM's own (heads and query groups divisible
 * by tp, the sequence split into 2 x cp chunks, MoE parallel folding, ...). */
#include "estimator/spec/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/doc/json_doc.h"
#include "estimator/spec/placement.h"
#include "common/banned.h"

/* The largest spec document taken. */
#define SPEC_MAX_BYTES (1 << 20)

const struct doc_name spec_mlp_names[] = {
    {"gelu", EST_MLP_GELU}, {"swiglu", EST_MLP_SWIGLU}, {NULL, 0}};
const struct doc_name spec_schedule_names[] = {
    {"1f1b", EST_SCHEDULE_1F1B}, {"interleaved", EST_SCHEDULE_INTERLEAVED}, {NULL, 0}};
const struct doc_name spec_recompute_names[] = {{"none", EST_RECOMPUTE_NONE},
                                                    {"selective", EST_RECOMPUTE_SELECTIVE},
                                                    {"full", EST_RECOMPUTE_FULL},
                                                    {"auto", EST_RECOMPUTE_AUTO},
                                                    {NULL, 0}};
const struct doc_name spec_master_weights_names[] = {
    {"fp32", EST_MASTER_FP32}, {"bf16", EST_MASTER_BF16}, {NULL, 0}};
const struct doc_name spec_framework_names[] = {
    {"megatron", EST_FRAMEWORK_MEGATRON}, {"pytorch", EST_FRAMEWORK_PYTORCH}, {NULL, 0}};
static const struct doc_name attention_names[] = {
    {"flash", EST_ATTENTION_FLASH}, {"unfused", EST_ATTENTION_UNFUSED}, {NULL, 0}};
static const struct doc_name moe_dispatcher_names[] = {{"alltoall", EST_MOE_DISPATCHER_ALLTOALL},
                                                         {"allgather", EST_MOE_DISPATCHER_ALLGATHER},
                                                         {"flex", EST_MOE_DISPATCHER_FLEX},
                                                         {NULL, 0}};
static const struct doc_name moe_routing_names[] = {
    {"balanced", EST_MOE_ROUTING_BALANCED}, {"natural", EST_MOE_ROUTING_NATURAL}, {NULL, 0}};
static const struct doc_name fp8_recipe_names[] = {{"tensorwise", EST_FP8_RECIPE_TENSORWISE},
                                                     {"blockwise", EST_FP8_RECIPE_BLOCKWISE},
                                                     {"mxfp8", EST_FP8_RECIPE_MXFP8},
                                                     {NULL, 0}};
static const struct doc_name dtype_names[] = {{"fp32", HW_FP32}, {"fp16", HW_FP16},
                                                {"bf16", HW_BF16}, {"fp8", HW_FP8},
                                                {"fp4", HW_FP4},   {NULL, 0}};

#define AT(member) offsetof(struct est_spec, member), sizeof(((struct est_spec *)0)->member)
#define REQ(r) ((r) ? DOC_REQUIRED : 0u)
#define NULLABLE(n) ((n) ? DOC_NULLABLE : 0u)
#define OBJ(path, req) {path, DOC_OBJECT, REQ(req), 0, 0, 0, 0, NULL, NULL, 0}
#define INT(path, req, null, member, lo, hi) {path, DOC_INT, REQ(req) | NULLABLE(null), AT(member), lo, hi, NULL, NULL, 0}
#define BOOL(path, member) {path, DOC_BOOL, 0, AT(member), 0, 1, NULL, NULL, 0}
#define NUM(path, member, lo, hi) {path, DOC_NUM, DOC_NULLABLE, AT(member), lo, hi, NULL, NULL, 0}
#define ENUM(path, member, names) {path, DOC_ENUM, 0, AT(member), 0, 0, names, NULL, 0}
#define ENUM_OR_NULL(path, member, names) {path, DOC_ENUM, DOC_NULLABLE, AT(member), 0, 0, names, NULL, 0}
#define STR(path, req, null, member) {path, DOC_STR, REQ(req) | NULLABLE(null), AT(member), 1, 0, NULL, NULL, 0}

/* Ranges keep every product the estimator forms far from overflow
 * (spec.h, EST_MAX_*). */
static const struct doc_field fields[] = {
    OBJ("model", 1),
    INT("model.layers", 1, 0, model.layers, 1, EST_MAX_LAYERS),
    INT("model.hidden", 1, 0, model.hidden, 1, EST_MAX_HIDDEN),
    INT("model.heads", 1, 0, model.heads, 1, EST_MAX_HEADS),
    INT("model.kv_heads", 0, 0, model.kv_heads, 1, EST_MAX_HEADS),
    INT("model.head_dim", 0, 0, model.head_dim, 1, EST_MAX_HEADS),
    INT("model.ffn", 0, 0, model.ffn, 1, EST_MAX_FFN),
    ENUM("model.mlp", model.mlp, spec_mlp_names),
    INT("model.seq", 1, 0, model.seq, 1, EST_MAX_SEQ),
    INT("model.vocab", 0, 0, model.vocab, 1, EST_MAX_VOCAB),
    BOOL("model.tied_embeddings", model.tied_embeddings),
    INT("model.attention_window", 0, 1, model.attention_window, 1, EST_MAX_SEQ),
    INT("model.full_attention_every", 0, 0, model.full_attention_every, 0, EST_MAX_LAYERS),
    BOOL("model.dropout", model.dropout),
    BOOL("model.bias", model.bias),
    OBJ("model.moe", 0),
    INT("model.moe.experts", 0, 0, model.moe.experts, 0, EST_MAX_EXPERTS),
    INT("model.moe.top_k", 0, 0, model.moe.top_k, 0, EST_MAX_EXPERTS),
    INT("model.moe.ffn", 0, 1, model.moe.ffn, 1, EST_MAX_FFN),
    INT("model.moe.shared_experts", 0, 0, model.moe.shared_experts, 0, 1 << 10),
    INT("model.moe.every", 0, 0, model.moe.every, 1, EST_MAX_LAYERS),
    INT("model.moe.dense_layers", 0, 0, model.moe.dense_layers, 0, EST_MAX_LAYERS),
    OBJ("model.mla", 0),
    INT("model.mla.kv_lora_rank", 0, 0, model.mla.kv_lora_rank, 0, EST_MAX_FFN),
    INT("model.mla.q_lora_rank", 0, 0, model.mla.q_lora_rank, 0, EST_MAX_FFN),
    INT("model.mla.qk_head_dim", 0, 0, model.mla.qk_head_dim, 0, EST_MAX_HEADS),
    INT("model.mla.qk_pos_emb_head_dim", 0, 0, model.mla.qk_pos_emb_head_dim, 0, EST_MAX_HEADS),
    INT("model.mla.v_head_dim", 0, 0, model.mla.v_head_dim, 0, EST_MAX_HEADS),
    OBJ("parallel", 0),
    INT("parallel.tp", 0, 0, parallel.tp, 1, EST_MAX_DEGREE),
    INT("parallel.cp", 0, 0, parallel.cp, 1, EST_MAX_DEGREE),
    INT("parallel.pp", 0, 0, parallel.pp, 1, EST_MAX_DEGREE),
    INT("parallel.dp", 0, 0, parallel.dp, 1, EST_MAX_DEGREE),
    INT("parallel.ep", 0, 0, parallel.ep, 1, EST_MAX_DEGREE),
    INT("parallel.etp", 0, 1, parallel.etp, 1, EST_MAX_DEGREE),
    INT("parallel.micro_batch", 0, 0, parallel.micro_batch, 1, EST_MAX_MICRO_BATCH),
    INT("parallel.global_batch", 0, 0, parallel.global_batch, 1, EST_MAX_GLOBAL_BATCH),
    ENUM("parallel.schedule", parallel.schedule, spec_schedule_names),
    INT("parallel.vpp", 0, 0, parallel.vpp, 1, 1 << 10),
    INT("parallel.fsdp_shard", 0, 1, parallel.fsdp_shard, 1, EST_MAX_DEGREE),
    OBJ("cluster", 1),
    STR("cluster.gpu", 1, 0, cluster.gpu),
    INT("cluster.gpus_per_node", 0, 0, cluster.gpus_per_node, 1, 1 << 20),
    NUM("cluster.intra_node_gbps", cluster.intra_node_gbps, 1e-9, 1e6),
    NUM("cluster.inter_node_gbps", cluster.inter_node_gbps, 1e-9, 1e6),
    STR("cluster.profile", 0, 1, cluster.profile),
    NUM("cluster.gpu_hour_usd", cluster.gpu_hour_usd, 0, 1e6),
    OBJ("options", 0),
    ENUM("options.dtype", options.dtype, dtype_names),
    ENUM("options.recompute", options.recompute, spec_recompute_names),
    INT("options.recompute_layers", 0, 1, options.recompute_layers, 1, EST_MAX_LAYERS),
    ENUM("options.attention", options.attention, attention_names),
    INT("options.zero_stage", 0, 0, options.zero_stage, 0, 3),
    BOOL("options.sequence_parallel", options.sequence_parallel),
    BOOL("options.overlap_grad_reduce", options.overlap_grad_reduce),
    BOOL("options.overlap_param_gather", options.overlap_param_gather),
    BOOL("options.tp_comm_overlap", options.tp_comm_overlap),
    NUM("options.train_tokens", options.train_tokens, 1, 1e18),
    ENUM("options.moe_routing", options.moe_routing, moe_routing_names),
    ENUM("options.moe_dispatcher", options.moe_dispatcher, moe_dispatcher_names),
    NUM("options.moe_capacity_factor", options.moe_capacity_factor, 0.01, 64),
    ENUM_OR_NULL("options.fp8_recipe", options.fp8_recipe, fp8_recipe_names),
    ENUM("options.master_weights", options.master_weights, spec_master_weights_names),
    {"options.grad_reduce_in_fp32", DOC_BOOL, DOC_NULLABLE, AT(options.grad_reduce_in_fp32), 0, 1, NULL, NULL, 0},
    ENUM("options.framework", options.framework, spec_framework_names),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

_Static_assert(sizeof(enum est_mlp) == sizeof(int) && sizeof(enum est_schedule) == sizeof(int) &&
                   sizeof(enum est_recompute) == sizeof(int) &&
                   sizeof(enum est_attention) == sizeof(int) && sizeof(enum hw_dtype) == sizeof(int) &&
                   sizeof(enum est_moe_routing) == sizeof(int) && sizeof(enum est_master_weights) == sizeof(int) &&
                   sizeof(enum est_moe_dispatcher) == sizeof(int) &&
                   sizeof(enum est_framework) == sizeof(int),
               "enum fields are written as int");

const char *const *spec_keys(void)
{
    static const char *keys[NFIELDS + 1];
    for (size_t i = 0; i < NFIELDS; i++)
        keys[i] = fields[i].path;
    return keys;
}

void spec_model_init(struct est_model *m)
{
    memset(m, 0, sizeof *m);
    m->mlp = EST_MLP_GELU;
    m->vocab = 50257;
    m->moe.every = 1;
    m->dropout = 1;
    m->bias = 1;
}

/* Defaults that depend on nothing; 0 (or -1, "") marks "not given" where a
 * default depends on another field or the value is optional. */
static void set_defaults(struct est_spec *s)
{
    memset(s, 0, sizeof *s);
    spec_model_init(&s->model);
    s->parallel.tp = s->parallel.cp = s->parallel.pp = s->parallel.dp = 1;
    s->parallel.ep = s->parallel.vpp = s->parallel.micro_batch = 1;
    s->parallel.schedule = EST_SCHEDULE_1F1B;
    s->cluster.gpu_hour_usd = -1;
    s->options.dtype = HW_BF16;
    s->options.recompute = EST_RECOMPUTE_NONE;
    s->options.overlap_grad_reduce = 1;
    s->options.grad_reduce_in_fp32 = -1; /* by dtype (resolve_gpu_defaults) */
    s->options.overlap_param_gather = 1;
}

static const struct doc_table spec_doc = {fields, NFIELDS, "the spec", SC_EINVAL, SPEC_MAX_BYTES};

static size_t field_index(const char *path)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].path, path) == 0)
            return i;
    return NFIELDS;
}

/* Latent attention's defaults (Megatron-Core's) and checks: every head
 * has its own key and value, and head_dim is the query/key head's. */
static int resolve_mla(struct est_model *m, struct sc_error *err)
{
    struct est_mla *a = &m->mla;
    if (!a->kv_lora_rank) {
        if (a->q_lora_rank || a->qk_head_dim || a->qk_pos_emb_head_dim || a->v_head_dim)
            return sc_error_set(err, SC_EINVAL, "model.mla: %s needs model.mla.kv_lora_rank",
                                a->q_lora_rank ? "q_lora_rank" : a->qk_head_dim ? "qk_head_dim"
                                : a->qk_pos_emb_head_dim ? "qk_pos_emb_head_dim" : "v_head_dim");
        return SC_OK;
    }
    if (!a->qk_head_dim)
        a->qk_head_dim = 128;
    if (!a->qk_pos_emb_head_dim)
        a->qk_pos_emb_head_dim = 64;
    if (!a->v_head_dim)
        a->v_head_dim = 128;
    if (m->kv_heads && m->kv_heads != m->heads)
        return sc_error_set(err, SC_EINVAL,
                            "model.kv_heads: %lld, but latent attention (model.mla) gives every one of the "
                            "%lld heads its key and value",
                            (long long)m->kv_heads, (long long)m->heads);
    int64_t qk = a->qk_head_dim + a->qk_pos_emb_head_dim;
    if (m->head_dim && m->head_dim != qk)
        return sc_error_set(err, SC_EINVAL,
                            "model.head_dim: %lld, but with model.mla it is qk_head_dim + qk_pos_emb_head_dim "
                            "= %lld",
                            (long long)m->head_dim, (long long)qk);
    if (qk > EST_MAX_HEADS)
        return sc_error_set(err, SC_EINVAL, "model.mla: qk_head_dim + qk_pos_emb_head_dim = %lld, over %d",
                            (long long)qk, EST_MAX_HEADS);
    m->kv_heads = m->heads;
    m->head_dim = qk;
    return SC_OK;
}

int spec_model_resolve(struct est_model *m, struct sc_error *err)
{
    struct est_moe *e = &m->moe;
    int rc = resolve_mla(m, err);
    if (rc)
        return rc;
    if (!m->kv_heads)
        m->kv_heads = m->heads;
    if (!m->head_dim) {
        if (m->hidden % m->heads)
            return sc_error_set(err, SC_EINVAL,
                                "model.hidden: %lld is not divisible by model.heads %lld (give "
                                "model.head_dim)",
                                (long long)m->hidden, (long long)m->heads);
        m->head_dim = m->hidden / m->heads;
        /* the bound a given head_dim has (EST_MAX_HEADS), so that the
         * spec printed back parses as the one read */
        if (m->head_dim > EST_MAX_HEADS)
            return sc_error_set(err, SC_EINVAL, "model.head_dim: model.hidden / model.heads = %lld, over %d",
                                (long long)m->head_dim, EST_MAX_HEADS);
    }
    if (!m->ffn)
        m->ffn = 4 * m->hidden;
    if (m->full_attention_every && !m->attention_window)
        return sc_error_set(err, SC_EINVAL, "model.full_attention_every: needs model.attention_window");
    if (m->kv_heads > m->heads || m->heads % m->kv_heads)
        return sc_error_set(err, SC_EINVAL,
                            "model.kv_heads: %lld does not divide model.heads %lld",
                            (long long)m->kv_heads, (long long)m->heads);
    if (!e->experts) {
        if (e->top_k || e->shared_experts || e->ffn || e->dense_layers || e->every != 1)
            return sc_error_set(err, SC_EINVAL, "model.moe: %s needs model.moe.experts",
                                e->top_k ? "top_k" : e->shared_experts ? "shared_experts"
                                : e->ffn ? "ffn" : e->dense_layers ? "dense_layers" : "every");
        return SC_OK;
    }
    if (!e->ffn)
        e->ffn = m->ffn;
    if (e->top_k < 1 || e->top_k > e->experts)
        return sc_error_set(err, SC_EINVAL, "model.moe.top_k: %lld is not in 1 to %lld experts",
                            (long long)e->top_k, (long long)e->experts);
    if (e->dense_layers >= m->layers)
        return sc_error_set(err, SC_EINVAL,
                            "model.moe.dense_layers: %lld leaves no MoE layer of %lld",
                            (long long)e->dense_layers, (long long)m->layers);
    return SC_OK;
}

static int div_check(int64_t a, int64_t b, const char *field, const char *what,
                     struct sc_error *err)
{
    if (a % b == 0)
        return SC_OK;
    return sc_error_set(err, SC_EINVAL, "%s: %lld is not divisible by %s (%lld)", field,
                        (long long)a, what, (long long)b);
}

/* Defaults and checks across objects: what Megatron-LM would refuse. */
static int resolve_parallel(struct est_spec *s, struct sc_error *err)
{
    struct est_model *m = &s->model;
    struct est_parallel *p = &s->parallel;
    struct est_options *o = &s->options;
    int rc;

    if (!p->etp)
        p->etp = p->tp;
    if (!p->global_batch)
        p->global_batch = p->micro_batch * p->dp;
    if (p->global_batch > EST_MAX_GLOBAL_BATCH)
        return sc_error_set(err, SC_EINVAL,
                            "parallel.global_batch: micro_batch x dp = %lld sequences, over the limit of %d",
                            (long long)p->global_batch, EST_MAX_GLOBAL_BATCH);
    double gpus = (double)p->tp * (double)p->cp * (double)p->pp * (double)p->dp;
    if (gpus > EST_MAX_GPUS)
        return sc_error_set(err, SC_EINVAL,
                            "parallel: tp x cp x pp x dp = %.0f GPUs, over the limit of %d", gpus,
                            EST_MAX_GPUS);
    if ((rc = div_check(m->heads, p->tp, "model.heads", "parallel.tp", err)) ||
        (rc = div_check(m->kv_heads, p->tp, "model.kv_heads", "parallel.tp", err)) ||
        (rc = div_check(m->ffn, p->tp, "model.ffn", "parallel.tp", err)))
        return rc;

    /* the sequence: 2 x cp chunks for causal load balance, and split over tp
     * with sequence parallelism */
    int sp = o->sequence_parallel && p->tp > 1;
    int64_t seq_div = (p->cp > 1 ? 2 * p->cp : 1) * (sp ? p->tp : 1);
    if (m->seq % seq_div)
        return sc_error_set(err, SC_EINVAL, "model.seq: %lld is not divisible by %s = %lld",
                            (long long)m->seq,
                            p->cp > 1 && sp ? "2 x parallel.cp x parallel.tp (context and "
                                              "sequence parallelism)"
                            : p->cp > 1     ? "2 x parallel.cp (context parallelism)"
                                            : "parallel.tp (sequence parallelism)",
                            (long long)seq_div);

    if ((rc = spec_schedule_check(p->pp, p->vpp, p->schedule, m->layers, 0, "parallel.", "model.", err)) ||
        (rc = div_check(p->global_batch, p->micro_batch * p->dp, "parallel.global_batch",
                        "parallel.micro_batch x parallel.dp", err)) ||
        (rc = spec_schedule_check(p->pp, p->vpp, p->schedule, m->layers,
                                 p->global_batch / (p->micro_batch * p->dp), "parallel.", "model.", err)))
        return rc;

    if (p->fsdp_shard) {
        if (o->zero_stage < 3)
            return sc_error_set(err, SC_EINVAL, "parallel.fsdp_shard: hybrid sharding needs options.zero_stage 3");
        if ((p->dp * p->cp) % p->fsdp_shard)
            return sc_error_set(err, SC_EINVAL, "parallel.fsdp_shard: %lld does not divide dp x cp = %lld",
                                (long long)p->fsdp_shard, (long long)(p->dp * p->cp));
    }

    if (p->cp > 1 && m->attention_window && m->attention_window < m->seq)
        return sc_error_set(err, SC_EINVAL, "model.attention_window: sliding-window attention with parallel.cp > 1 "
                                            "is unsupported");

    /* MoE, laid out as Megatron-Core's parallel folding does */
    if (!m->moe.experts) {
        if (p->ep != 1)
            return sc_error_set(err, SC_EINVAL, "parallel.ep: expert parallelism needs "
                                                "model.moe.experts");
        if (p->etp != p->tp)
            return sc_error_set(err, SC_EINVAL, "parallel.etp: expert tensor parallelism needs "
                                                "model.moe.experts");
    } else {
        if ((rc = div_check(m->moe.experts, p->ep, "model.moe.experts", "parallel.ep", err)) ||
            (rc = div_check(m->moe.ffn, p->etp, "model.moe.ffn", "parallel.etp", err)))
            return rc;
        if ((p->tp * p->cp * p->dp) % (p->etp * p->ep))
            return sc_error_set(err, SC_EINVAL,
                                "parallel.ep: etp x ep = %lld does not divide tp x cp x dp = %lld",
                                (long long)(p->etp * p->ep), (long long)(p->tp * p->cp * p->dp));
        if (p->tp > 1 && !o->sequence_parallel)
            return sc_error_set(err, SC_EINVAL,
                                "options.sequence_parallel: MoE with parallel.tp > 1 needs "
                                "sequence parallelism");
    }
    if (o->tp_comm_overlap && p->tp > 1 && !o->sequence_parallel)
        return sc_error_set(err, SC_EINVAL,
                            "options.tp_comm_overlap: needs options.sequence_parallel");
    if (o->recompute_layers && o->recompute != EST_RECOMPUTE_FULL)
        return sc_error_set(err, SC_EINVAL,
                            "options.recompute_layers: only with options.recompute \"full\" (it is \"%s\")",
                            spec_recompute_name(o->recompute));
    if (o->recompute_layers && o->recompute_layers > spec_chunk_layers_most(s))
        return sc_error_set(err, SC_EINVAL,
                            "options.recompute_layers: %lld is more than the %lld transformer layers of the "
                            "largest model chunk (model.layers over parallel.pp x parallel.vpp)",
                            (long long)o->recompute_layers, (long long)spec_chunk_layers_most(s));
    if (o->master_weights == EST_MASTER_BF16 && (o->dtype == HW_FP32 || o->dtype == HW_FP16))
        return sc_error_set(err, SC_EINVAL,
                            "options.master_weights: \"bf16\" (pure bf16 training) needs options.dtype "
                            "bf16, fp8 or fp4, not %s",
                            cost_hw_dtype_name(o->dtype));
    return SC_OK;
}

/* The defaults that follow the GPU's profile (an unknown GPU takes the
 * HGX board's 8 and the pre-Blackwell recipe; spec_check_gpu reports
 * it): the NVLink domain, and with fp8 the recipe Transformer Engine
 * takes by default there (MXFP8 on Blackwell, per-tensor scaling before). */
static int resolve_gpu_defaults(struct est_spec *s, struct sc_error *err)
{
    const struct hw_profile *hw = cost_hw_profile_find(s->cluster.gpu);
    struct est_options *o = &s->options;
    if (!s->cluster.gpus_per_node)
        s->cluster.gpus_per_node = hw ? hw->gpus_per_node : 8;
    if (o->dtype != HW_FP8 && o->fp8_recipe != EST_FP8_RECIPE_NONE)
        return sc_error_set(err, SC_EINVAL, "options.fp8_recipe: only with options.dtype \"fp8\" (it is \"%s\")",
                            cost_hw_dtype_name(o->dtype));
    if (o->grad_reduce_in_fp32 < 0) /* Megatron-LM's default for bf16 parameters */
        o->grad_reduce_in_fp32 = o->dtype == HW_BF16 || o->dtype == HW_FP8 || o->dtype == HW_FP4;
    if (o->dtype == HW_FP8 && o->fp8_recipe == EST_FP8_RECIPE_NONE)
        o->fp8_recipe = hw && hw->arch == HW_ARCH_BLACKWELL ? EST_FP8_RECIPE_MXFP8 : EST_FP8_RECIPE_TENSORWISE;
    return SC_OK;
}

/* Parse, fill the defaults, check what needs no parallel layout; given[i]
 * marks fields[i] present. */
static int parse_given(const char *text, size_t len, struct est_spec *out, unsigned char *given,
                       struct sc_error *err)
{
    int rc;
    set_defaults(out);
    if ((rc = doc_read(text, len, &spec_doc, NULL, out, given, err)) || (rc = spec_model_resolve(&out->model, err)))
        return rc;
    return resolve_gpu_defaults(out, err);
}

int spec_schedule_check(int64_t pp, int64_t vpp, enum est_schedule schedule, int64_t layers,
                       int64_t micro_batches, const char *par, const char *mod, struct sc_error *err)
{
    if (vpp > 1 && pp == 1)
        return sc_error_set(err, SC_EINVAL, "%svpp: %lld virtual stages need %spp > 1", par, (long long)vpp, par);
    if (vpp > 1 && schedule != EST_SCHEDULE_INTERLEAVED)
        return sc_error_set(err, SC_EINVAL, "%svpp: %lld virtual stages need %sschedule \"interleaved\"", par,
                            (long long)vpp, par);
    if (vpp == 1 && schedule == EST_SCHEDULE_INTERLEAVED)
        return sc_error_set(err, SC_EINVAL, "%sschedule: \"interleaved\" needs %svpp > 1", par, par);
    if (layers && pp * vpp > layers + 2)
        return sc_error_set(err, SC_EINVAL,
                            "%s%s: pp x vpp = %lld virtual pipeline stages are more than %slayers + 2 (%lld)", par,
                            vpp > 1 ? "vpp" : "pp", (long long)(pp * vpp), mod, (long long)(layers + 2));
    if (micro_batches && schedule == EST_SCHEDULE_INTERLEAVED && micro_batches % pp)
        return sc_error_set(err, SC_EINVAL,
                            "%sglobal_batch: the interleaved schedule needs the micro-batches per step (%lld) "
                            "divisible by %spp (%lld)",
                            par, (long long)micro_batches, par, (long long)pp);
    return SC_OK;
}

/* The value of `name` in names into *out (an enum's int); SC_EINVAL for
 * another name. */
static int name_find(const struct doc_name *names, const char *name, int *out)
{
    for (const struct doc_name *n = names; n->name; n++)
        if (strcmp(n->name, name) == 0) {
            *out = n->value;
            return SC_OK;
        }
    return SC_EINVAL;
}

/* The name of value v in names (the first name for an unknown value). */
static const char *name_of(const struct doc_name *names, int v)
{
    for (const struct doc_name *n = names; n->name; n++)
        if (n->value == v)
            return n->name;
    return names[0].name;
}

int spec_schedule_parse(const char *name, enum est_schedule *out)
{
    return name_find(spec_schedule_names, name, (int *)out);
}

int spec_mlp_parse(const char *name, enum est_mlp *out)
{
    return name_find(spec_mlp_names, name, (int *)out);
}

const char *spec_mlp_name(enum est_mlp m)
{
    return name_of(spec_mlp_names, (int)m);
}

int spec_framework_parse(const char *name, enum est_framework *out)
{
    return name_find(spec_framework_names, name, (int *)out);
}

const char *spec_framework_name(enum est_framework f)
{
    return name_of(spec_framework_names, (int)f);
}

int spec_master_weights_parse(const char *name, enum est_master_weights *out)
{
    return name_find(spec_master_weights_names, name, (int *)out);
}

const char *spec_master_weights_name(enum est_master_weights m)
{
    return name_of(spec_master_weights_names, (int)m);
}

int spec_recompute_parse(const char *name, enum est_recompute *out)
{
    return name_find(spec_recompute_names, name, (int *)out);
}

const char *spec_schedule_name(enum est_schedule s)
{
    return name_of(spec_schedule_names, (int)s);
}

const char *spec_recompute_name(enum est_recompute r)
{
    return name_of(spec_recompute_names, (int)r);
}

int spec_parse(const char *text, size_t len, struct est_spec *out, struct sc_error *err)
{
    unsigned char given[NFIELDS];
    int rc = parse_given(text, len, out, given, err);
    return rc ? rc : resolve_parallel(out, err);
}

int spec_parse_template(const char *text, size_t len, struct est_spec *out,
                            struct est_spec_given *given, struct sc_error *err)
{
    _Static_assert(NFIELDS <= EST_SPEC_MAX_KEYS, "est_spec_given holds every key");
    memset(given, 0, sizeof *given);
    int rc = parse_given(text, len, out, given->key, err);
    if (!rc && given->key[field_index("parallel.etp")] && !out->parallel.etp)
        given->key[field_index("parallel.etp")] = 0; /* null: the default */
    return rc;
}

int spec_given_has(const struct est_spec_given *given, const char *path)
{
    size_t i = field_index(path);
    return i < NFIELDS && given->key[i];
}

int spec_check(struct est_spec *s, struct sc_error *err)
{
    return resolve_parallel(s, err);
}

int spec_model_parse(const char *text, size_t len, struct est_model *out, struct sc_error *err)
{
    struct est_spec s;
    int rc;
    set_defaults(&s);
    if ((rc = doc_read(text, len, &spec_doc, "model", &s, NULL, err)) || (rc = spec_model_resolve(&s.model, err)))
        return rc;
    *out = s.model;
    return SC_OK;
}

int spec_check_gpu(const struct est_spec *spec, const struct hw_profile **profile,
                       struct sc_error *err)
{
    const struct hw_profile *hw = cost_hw_profile_find(spec->cluster.gpu);
    if (!hw) {
        char known[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < cost_hw_profile_count() && used < sizeof known; i++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                     cost_hw_profile_at(i)->id);
        return sc_error_set(err, SC_EINVAL, "cluster.gpu: no hardware profile \"%.48s\" (known: %s)",
                            spec->cluster.gpu, known);
    }
    if (hw->peak_tflops[spec->options.dtype] <= 0)
        return sc_error_set(err, SC_EINVAL, "options.dtype: the %s has no %s compute", hw->id,
                            cost_hw_dtype_name(spec->options.dtype));
    /* the block-scaled formats need the tensor cores that take their scales */
    if (spec->options.dtype == HW_FP4 && hw->arch != HW_ARCH_BLACKWELL)
        return sc_error_set(err, SC_EINVAL, "options.dtype: fp4 (NVFP4) needs a Blackwell GPU; the %s is %s", hw->id, cost_hw_arch_name(hw->arch));
    if (spec->options.fp8_recipe == EST_FP8_RECIPE_MXFP8 && hw->arch != HW_ARCH_BLACKWELL)
        return sc_error_set(err, SC_EINVAL, "options.fp8_recipe: \"mxfp8\" needs a Blackwell GPU; the %s is %s "
                            "(\"tensorwise\" or \"blockwise\" run there)", hw->id, cost_hw_arch_name(hw->arch));
    if (spec->options.fp8_recipe == EST_FP8_RECIPE_BLOCKWISE && hw->arch != HW_ARCH_HOPPER &&
        hw->arch != HW_ARCH_BLACKWELL)
        return sc_error_set(err, SC_EINVAL, "options.fp8_recipe: \"blockwise\" needs a Hopper or Blackwell GPU; "
                            "the %s is %s", hw->id, cost_hw_arch_name(hw->arch));
    if (profile)
        *profile = hw;
    return SC_OK;
}

int spec_load(const char *text, size_t len, struct est_spec *out,
                  const struct hw_profile **profile, struct sc_error *err)
{
    int rc = spec_parse(text, len, out, err);
    return rc ? rc : spec_check_gpu(out, profile, err);
}

char *spec_json(const struct est_spec *spec)
{
    return doc_write(&spec_doc, NULL, spec, NULL, 2);
}

char *spec_model_json(const struct est_model *model)
{
    struct est_spec s;
    set_defaults(&s);
    s.model = *model;
    return doc_write(&spec_doc, "model", &s, NULL, 2);
}

int64_t spec_gpus(const struct est_spec *spec)
{
    const struct est_parallel *p = &spec->parallel;
    return p->tp * p->cp * p->pp * p->dp;
}

int64_t spec_micro_batches(const struct est_spec *spec)
{
    const struct est_parallel *p = &spec->parallel;
    return p->global_batch / (p->micro_batch * p->dp);
}

int spec_fused_softmax(const struct est_spec *spec)
{
    int64_t keys = spec->model.seq / spec->parallel.cp,
            batches = spec->parallel.micro_batch * (spec->model.heads / spec->parallel.tp);
    int64_t per_block = keys <= 128 ? 8 : 4;
    return keys > 16 && keys <= 4096 && keys % 4 == 0 && batches % per_block == 0;
}

double spec_attention_head_dim(const struct est_model *model)
{
    const struct est_mla *a = &model->mla;
    if (!a->kv_lora_rank)
        return (double)model->head_dim;
    return (double)(a->qk_head_dim + a->qk_pos_emb_head_dim + a->v_head_dim) / 2;
}

int spec_model_layer_is_windowed(const struct est_model *model, int64_t i)
{
    int64_t k = model->full_attention_every;
    return model->attention_window > 0 && model->attention_window < model->seq && !(k && (i + 1) % k == 0);
}

int spec_layer_recomputed(const struct est_spec *spec, int64_t in_chunk)
{
    const struct est_options *o = &spec->options;
    if (o->recompute == EST_RECOMPUTE_SELECTIVE)
        return 1;
    return o->recompute == EST_RECOMPUTE_FULL && (!o->recompute_layers || in_chunk < o->recompute_layers);
}

int64_t spec_chunk_layers_most(const struct est_spec *spec)
{
    const struct est_parallel *p = &spec->parallel;
    int64_t most = 0;
    for (int64_t v = 0; v < p->pp * p->vpp; v++) {
        struct est_stage_layers st;
        if (spec_place_stage((int)spec->model.layers, (int)p->pp, (int)p->vpp, (int)v, &st, NULL))
            return 0;
        if (st.layers > most)
            most = st.layers;
    }
    return most;
}

int spec_model_layer_is_moe(const struct est_model *model, int64_t i)
{
    const struct est_moe *e = &model->moe;
    return e->experts > 0 && i >= e->dense_layers && (i - e->dense_layers) % e->every == 0;
}
