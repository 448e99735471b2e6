/* api/megatron_args.c: a plan row as Megatron-LM arguments (megatron_args.h). */
#include "api/megatron_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static long long iget(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

char *api_megatron_args(const struct est_model *m, enum hw_dtype dtype, const json_t *p, const json_t *o)
{
    static const char *const dtype_args[HW_DTYPE_COUNT] = {
        [HW_FP16] = "--fp16", [HW_BF16] = "--bf16", [HW_FP8] = "--bf16 --fp8-format hybrid",
        [HW_FP4] = "--bf16 --fp4-format e2m1"};
    static const char *const sharding[] = {"", "", "optim_grads", "optim_grads_params"};
    long long pp = iget(p, "pp"), vpp = iget(p, "vpp"), zero = iget(o, "zero_stage");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fprintf(f, "--num-layers %lld --hidden-size %lld --num-attention-heads %lld --ffn-hidden-size %lld "
               "--seq-length %lld --max-position-embeddings %lld",
            (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->ffn, (long long)m->seq,
            (long long)m->seq);
    if (m->kv_heads != m->heads)
        fprintf(f, " --group-query-attention --num-query-groups %lld", (long long)m->kv_heads);
    if (m->mlp == EST_MLP_SWIGLU)
        fprintf(f, " --swiglu");
    if (m->mla.kv_lora_rank) {
        fprintf(f, " --multi-latent-attention --kv-lora-rank %lld", (long long)m->mla.kv_lora_rank);
        if (m->mla.q_lora_rank)
            fprintf(f, " --q-lora-rank %lld", (long long)m->mla.q_lora_rank);
        fprintf(f, " --qk-head-dim %lld --qk-pos-emb-head-dim %lld --v-head-dim %lld", (long long)m->mla.qk_head_dim,
                (long long)m->mla.qk_pos_emb_head_dim, (long long)m->mla.v_head_dim);
    }
    if (m->moe.experts) {
        fprintf(f, " --num-experts %lld --moe-router-topk %lld --moe-ffn-hidden-size %lld", (long long)m->moe.experts,
                (long long)m->moe.top_k, (long long)m->moe.ffn);
        if (m->moe.shared_experts)
            fprintf(f, " --moe-shared-expert-intermediate-size %lld",
                    (long long)(m->moe.shared_experts * m->moe.ffn));
        if (m->moe.dense_layers || m->moe.every > 1) { /* which layers are MoE, one flag a layer */
            fprintf(f, " --moe-layer-freq \"[");
            for (int64_t i = 0; i < m->layers; i++)
                fprintf(f, "%s%d", i ? "," : "", spec_model_layer_is_moe(m, i));
            fprintf(f, "]\"");
        }
        fprintf(f, " --expert-model-parallel-size %lld --expert-tensor-parallel-size %lld", iget(p, "ep"),
                iget(p, "etp"));
    }
    fprintf(f, " --tensor-model-parallel-size %lld --context-parallel-size %lld --pipeline-model-parallel-size %lld",
            iget(p, "tp"), iget(p, "cp"), pp);
    if (vpp > 1)
        fprintf(f, " --num-virtual-stages-per-pipeline-rank %lld", vpp);
    if (pp > 1 && vpp > 0 && m->layers % (pp * vpp) && (m->layers + 2) % (pp * vpp) == 0)
        fprintf(f, " --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split");
    fprintf(f, " --micro-batch-size %lld --global-batch-size %lld", iget(p, "micro_batch"), iget(p, "global_batch"));
    if (strcmp(sget(o, "recompute"), "full") == 0)
        fprintf(f, " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
    else if (strcmp(sget(o, "recompute"), "selective") == 0)
        fprintf(f, " --recompute-granularity selective");
    if (json_is_true(json_object_get(o, "sequence_parallel")))
        fprintf(f, " --sequence-parallel");
    if (zero == 1)
        fprintf(f, " --use-distributed-optimizer");
    else if (zero >= 2 && zero <= 3)
        fprintf(f, " --use-megatron-fsdp --data-parallel-sharding-strategy %s", sharding[zero]);
    if (json_is_true(json_object_get(o, "overlap_grad_reduce")))
        fprintf(f, " --overlap-grad-reduce");
    if (json_is_true(json_object_get(o, "overlap_param_gather")) && zero >= 1)
        fprintf(f, " --overlap-param-gather");
    if (json_is_true(json_object_get(o, "tp_comm_overlap")))
        fprintf(f, " --tp-comm-overlap");
    if ((unsigned)dtype < HW_DTYPE_COUNT && dtype_args[dtype])
        fprintf(f, " %s", dtype_args[dtype]);
    if (dtype == HW_FP8 && *sget(o, "fp8_recipe"))
        fprintf(f, " --fp8-recipe %s", sget(o, "fp8_recipe"));
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}
