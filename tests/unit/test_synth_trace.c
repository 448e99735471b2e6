/* tests/unit/test_synth_trace.c: the synthesised step written as Kineto
 * traces (estimator/synth/synth_trace.h) re-ingests through the ordinary reader
 * and replays to the estimate's step time, with its dependencies found from
 * the trace (cuda_sync records, collectives matched across the stages), and
 * carries module annotations a tool can find layers by. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/synth/estimate.h"
#include "estimator/synth/synth.h"
#include "estimator/synth/synth_trace.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

#define MAX_RANKS 8

/* Dense GPT under 1F1B, interleaved with recomputation and ZeRO, three
 * stages of TP with sequence parallelism (GQA, SwiGLU), context
 * parallelism in fp8 over two stages, MoE with expert parallelism. */
static const char *const specs[] = {
    "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024},\"parallel\":{\"pp\":2,\"dp\":2,"
    "\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}",
    "{\"model\":{\"layers\":8,\"hidden\":1536,\"heads\":12,\"seq\":2048},\"parallel\":{\"pp\":2,\"dp\":4,"
    "\"micro_batch\":2,\"global_batch\":32,\"schedule\":\"interleaved\",\"vpp\":2},"
    "\"cluster\":{\"gpu\":\"a100-sxm4-40gb\"},\"options\":{\"zero_stage\":1,\"recompute\":\"full\"}}",
    "{\"model\":{\"layers\":6,\"hidden\":3072,\"heads\":24,\"kv_heads\":8,\"ffn\":8192,\"mlp\":\"swiglu\","
    "\"seq\":2048,\"vocab\":32000},\"parallel\":{\"tp\":8,\"pp\":3,\"dp\":1,\"micro_batch\":1,"
    "\"global_batch\":6},\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true}}",
    "{\"model\":{\"layers\":2,\"hidden\":1024,\"heads\":8,\"kv_heads\":2,\"seq\":8192,\"mlp\":\"swiglu\"},"
    "\"parallel\":{\"tp\":2,\"cp\":2,\"pp\":2,\"dp\":1,\"micro_batch\":1,\"global_batch\":2},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true,\"dtype\":\"fp8\"}}",
    "{\"model\":{\"layers\":3,\"hidden\":1024,\"heads\":8,\"seq\":1024,\"mlp\":\"swiglu\","
    "\"moe\":{\"experts\":8,\"top_k\":2,\"ffn\":512,\"shared_experts\":1,\"dense_layers\":1}},"
    "\"parallel\":{\"tp\":2,\"dp\":4,\"ep\":4,\"pp\":1,\"micro_batch\":2,\"global_batch\":16},"
    "\"cluster\":{\"gpu\":\"h100-sxm\"},\"options\":{\"sequence_parallel\":true,\"recompute\":\"selective\","
    "\"zero_stage\":2}}",
    /* ZeRO-3: every layer's gathers and reduce-scatters in the traces */
    "{\"model\":{\"layers\":4,\"hidden\":1024,\"heads\":16,\"seq\":1024},\"parallel\":{\"pp\":2,\"dp\":4,"
    "\"micro_batch\":1,\"global_batch\":8},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"},\"options\":{\"zero_stage\":3}}",
};

/* Synthesise spec `json` at detail d, write its traces as <tmp>/<prefix>-rank<R>.json
 * (paths[] gets them), and return the estimate's step in ms (-1 on error). */
static double write_traces(const char *json, enum est_detail d, const char *prefix, char paths[][512],
                           size_t *n_paths)
{
    struct est_spec s;
    const struct hw_profile *hw;
    struct est_costs c;
    struct est_estimate e;
    struct model_graph *g = NULL;
    struct model_replay_opts o;
    struct sc_error err;
    size_t forced = 0;
    double ms = -1;
    *n_paths = 0;
    if (spec_load(json, strlen(json), &s, &hw, &err)) {
        fprintf(stderr, "spec: %s\n", err.msg);
        return -1;
    }
    calib_costs_default(hw, &s, &c);
    if (synth_estimate(&s, hw, &c, d, &e, &err) || synth_build(&s, hw, &c, d, &g, &err)) {
        fprintf(stderr, "synth: %s\n", err.msg);
        return -1;
    }
    ms = e.step_ms;
    synth_estimate_release(&e);
    int64_t *start = malloc(g->n_tasks * sizeof *start), *end = malloc(g->n_tasks * sizeof *end);
    model_replay_opts_default(&o);
    o.critical_path = 0;
    CHECK(start && end);
    CHECK_EQ_INT(model_replay_simulate(g, &o, start, end, &forced, &err), SC_OK);
    CHECK(g->n_ranks <= MAX_RANKS);
    for (uint16_t r = 0; r < g->n_ranks && r < MAX_RANKS; r++) {
        snprintf(paths[r], 512, "%s/%s-rank%lld.json", th_tmpdir(), prefix, (long long)synth_trace_rank(&s, g, r));
        FILE *f = fopen(paths[r], "w");
        CHECK(f != NULL);
        if (!f)
            break;
        CHECK_EQ_INT(synth_trace_write(&s, hw, d, g, start, end, r, f, &err), SC_OK);
        fclose(f);
        (*n_paths)++;
    }
    free(start);
    free(end);
    model_graph_free(g);
    return ms;
}

TEST(synth_trace_replays_to_the_estimate_within_one_percent)
{
    static const enum est_detail details[] = {EST_DETAIL_KERNEL, EST_DETAIL_LAYER, EST_DETAIL_STAGE};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        for (size_t k = 0; k < 3; k++) {
            char paths[MAX_RANKS][512], prefix[32];
            const char *argv[MAX_RANKS];
            size_t n;
            snprintf(prefix, sizeof prefix, "synth%zu-%s", i, synth_detail_name(details[k]));
            double est_ms = write_traces(specs[i], details[k], prefix, paths, &n);
            CHECK(est_ms > 0);
            if (est_ms <= 0 || n == 0)
                continue;
            for (size_t r = 0; r < n; r++)
                argv[r] = paths[r];
            struct model_job *job = tb_job(argv, n);
            CHECK(job != NULL);
            if (!job)
                continue;
            struct model_graph *g = NULL;
            struct model_replay *rp = NULL;
            struct sc_error err;
            CHECK_EQ_INT(model_graph_build(job, NULL, &g, &err), SC_OK);
            CHECK_EQ_INT(model_replay_run(g, NULL, &rp, &err), SC_OK);
            if (rp) {
                int64_t slowest = 0;
                for (size_t q = 0; q < rp->n_steps; q++)
                    if (rp->steps[q].replayed_ns > slowest)
                        slowest = rp->steps[q].replayed_ns;
                double ms = (double)slowest / 1e6;
                if (!(ms > est_ms * 0.99 && ms < est_ms * 1.01))
                    fprintf(stderr, "spec %zu at %s detail: replayed %.4f ms, estimate %.4f ms\n", i,
                            synth_detail_name(details[k]), ms, est_ms);
                CHECK_NEAR(ms, est_ms, est_ms * 0.01);
                CHECK_EQ_INT(rp->forced, 0);
                CHECK_EQ_INT(rp->n_steps, n);
                /* every cross-stream wait came from a cuda_sync record */
                CHECK_EQ_INT(g->stats.inferred_event_syncs, 0);
                CHECK(g->stats.cuda_sync_event_syncs > 0);
                /* the pipeline transfers reconnect the stages */
                if (n > 1)
                    CHECK(g->stats.collectives_matched > 0);
            }
            model_replay_free(rp);
            model_graph_free(g);
            model_job_free(job);
        }
    }
}

TEST(synth_trace_annotates_modules_and_says_it_is_synthetic)
{
    char paths[MAX_RANKS][512];
    size_t n;
    /* pp 2, 4 layers, 4 micro-batches per step */
    CHECK(write_traces(specs[0], EST_DETAIL_KERNEL, "annotated", paths, &n) > 0);
    CHECK_EQ_INT(n, 2);
    if (n != 2)
        return;
    char *text = th_read_file(paths[1], NULL);
    CHECK(text != NULL);
    CHECK_CONTAINS(text, "\"stepcast_synthetic\": true");
    CHECK_CONTAINS(text, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 2, \"world_size\": 4}");
    CHECK_CONTAINS(text, "\"name\": \"NVIDIA A100-SXM4-80GB\"");
    free(text);

    const char *argv[1] = {paths[1]};
    struct model_job *job = tb_job(argv, 1);
    CHECK(job != NULL);
    if (!job)
        return;
    const struct model_trace *t = job->ranks[0];
    size_t layers[4] = {0}, models = 0, output = 0, other = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const char *name = model_str(t, e->name);
        int k;
        if (e->kind != MODEL_EV_PYTHON)
            continue;
        if (sscanf(name, "nn.Module: TransformerLayer_%d", &k) == 1 && k >= 0 && k < 4)
            layers[k]++;
        else if (strcmp(name, "nn.Module: GPTModel_0") == 0)
            models++;
        else if (strcmp(name, "nn.Module: ColumnParallelLinear_0") == 0)
            output++;
        else
            other++;
    }
    /* the second stage holds layers 2 and 3 (its TransformerLayer_0 and
     * _1) and the loss; each is entered once per pass: 4 forward, 4 backward */
    CHECK_EQ_INT(layers[0], 8);
    CHECK_EQ_INT(layers[1], 8);
    CHECK_EQ_INT(layers[2], 0);
    CHECK_EQ_INT(models, 8);
    CHECK_EQ_INT(output, 8);
    CHECK_EQ_INT(other, 0);
    CHECK_EQ_INT(t->n_steps, 1);
    model_job_free(job);
}
