/* tests/golden/test_golden_structure.c: what launched the work of the
 * shared real traces (estimator/whatif/structure.h): DDP's gradient buckets and
 * buffer broadcasts, a partly torch.compile'd step, and the forward and
 * backward passes of the eager steps measured on H100
 * (data/calibration/torch-steps) and the operators the profiler recorded
 * in their host gaps. Expected figures come from the traces'
 * README (../shared/traces/README.md) and the models' tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

static int load_shared(const char *name, const char *cfg, struct th_structure *r)
{
    struct model_job *job;
    memset(r, 0, sizeof *r);
    if (th_load_trace(th_find_trace(name), &job))
        return -1;
    return th_structure_recover(job, cfg, r);
}

/* ResNet-50 under DDP on 2 A100s: per step five buckets all-reduced from
 * AccumulateGrad's hook (2,049,000 / 7,875,584 / 6,563,840 / 6,637,568 /
 * 2,431,040 floats) and two buffer broadcasts in DDP's forward. */
TEST(golden_structure_nccl_data_ddp_buckets)
{
    struct th_structure r;
    if (load_shared("nccl_data", "{\"tp\":1,\"pp\":1,\"dp\":2}", &r))
        return;
    CHECK_EQ_INT(r.st.grad_sync, STRUCT_SYNC_DDP);
    CHECK_EQ_INT(r.st.steps, 3);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_GRADS], 5 * 3);
    CHECK_NEAR(r.st.use_bytes[STRUCT_DP_GRADS] / 3, 4.0 * (2049000 + 7875584 + 6563840 + 6637568 + 2431040), 0.5);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_BUFFERS], 2 * 3);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_PARAMS], 0);
    CHECK_EQ_INT(r.st.inductor_kernels, 0);
    CHECK(r.st.backward_tasks > 0);
    CHECK(r.st.layers_forward > 0 && r.st.layers_forward == r.st.layers_backward);
    th_structure_release(&r);
}

/* A recommendation model, rank 0 of 16 over 5 steps: two DDP buckets a
 * step, the embeddings' all-to-alls and reduce-scatters (TorchRec) other
 * data-parallel traffic, and parts compiled by torch.compile. */
TEST(golden_structure_negative_queue_compiled_with_ddp)
{
    struct th_structure r;
    if (load_shared("negative_queue", "{\"tp\":1,\"pp\":1,\"dp\":16}", &r))
        return;
    CHECK_EQ_INT(r.st.grad_sync, STRUCT_SYNC_DDP);
    CHECK_EQ_INT(r.st.steps, 5);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_GRADS], 2 * 5);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_BUFFERS], 0);
    CHECK(r.st.by_use[STRUCT_DP_OTHER] > 0);
    CHECK(r.st.inductor_kernels > 0);
    CHECK(r.st.compiled_regions > 0);
    th_structure_release(&r);
}

/* DLRM on 8 V100s: per rank 3 DDP all-reduces and 5 all-to-alls (NCCL's
 * send/recv) a step. */
TEST(golden_structure_dlrm_eight_ranks)
{
    struct th_structure r;
    if (load_shared("dlrm", "{\"tp\":1,\"pp\":1,\"dp\":8}", &r))
        return;
    CHECK_EQ_INT(r.st.grad_sync, STRUCT_SYNC_DDP);
    CHECK_EQ_INT(r.st.steps, 8);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_GRADS], 3 * 8);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_OTHER], 5 * 8);
    th_structure_release(&r);
}

/* The eager steps measured on H100: every layer found with a forward and
 * a backward pass, no data parallelism. */
TEST(golden_structure_eager_steps_forward_and_backward)
{
    static const struct {
        const char *name;
        int layers;
    } models[] = {{"gpt-h1024-s1024-b8", 8},
                  {"gpt-h2048-s2048-b4", 8},
                  {"gpt-h4096-s4096-b1", 4},
                  {"llama-h4096-gqa8-swiglu-s2048-b2", 4}};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        char path[256];
        struct model_job *job;
        struct model_load_opts lo;
        struct sc_error err;
        struct th_structure r;
        const char *paths[] = {path};
        snprintf(path, sizeof path, "data/calibration/torch-steps/h100-sxm/%s.pt.trace.json.gz", models[m].name);
        model_load_opts_default(&lo);
        if (model_job_load(paths, 1, &lo, 0, &job, &err)) {
            sc_check_fail(__FILE__, __LINE__, "%s: %s", path, err.msg);
            continue;
        }
        size_t ops = 0; /* the operators torch.profiler recorded */
        for (size_t e = 0; e < job->ranks[0]->n_events; e++)
            ops += job->ranks[0]->events[e].kind == MODEL_EV_CPU_OP;
        if (th_structure_recover(job, "{\"tp\":1,\"pp\":1,\"dp\":1}", &r)) {
            th_structure_release(&r);
            continue;
        }
        printf("     %s: %d layers, %d forward, %d backward, %zu of %zu operators in host gaps\n", models[m].name,
               r.st.layers_per_rank, r.st.layers_forward, r.st.layers_backward, r.st.host_ops_total, ops);
        /* nearly all begin before some runtime call of their thread (the
         * last ones of the step launch nothing) */
        CHECK(r.st.host_ops_total <= ops && r.st.host_ops_total >= ops * 9 / 10);
        CHECK_EQ_INT(r.st.layers_forward, models[m].layers);
        CHECK_EQ_INT(r.st.layers_backward, models[m].layers);
        CHECK_EQ_INT(r.st.grad_sync, STRUCT_SYNC_NONE);
        CHECK_EQ_INT(r.st.inductor_kernels, 0);
        th_structure_release(&r);
    }
}

/* The kernels of attention's forward and backward (cuDNN's "..._fprop_..."
 * and "..._bprop_..." on Hopper, FlashAttention's "flash_fwd" and
 * "flash_bwd"): 1 and 2, else 0. */
static int attention_pass(const char *name)
{
    if (strstr(name, "sdpa") || strstr(name, "flash"))
        return strstr(name, "fprop") || strstr(name, "flash_fwd") ? 1 : strstr(name, "bprop") || strstr(name, "flash_bwd") ? 2 : 0;
    return 0;
}

/* Every step of r: each of its `layers` layers holds one attention
 * forward kernel in the forward and one backward kernel in the backward,
 * and no attention kernel is outside a layer. */
static void check_attention_in_layers(const struct th_structure *r, int layers, const char *what)
{
    const struct model_graph *g = r->g;
    for (size_t s = 0; s < g->n_steps; s++) {
        const struct model_graph_step *st = &g->steps[s];
        int fwd[64] = {0}, bwd[64] = {0}, outside = 0, wrong_phase = 0;
        if (st->end == MODEL_NONE)
            continue;
        for (uint32_t i = st->begin + 1; i < st->end; i++) {
            int pass = g->tasks[i].cls == MODEL_TASK_KERNEL ? attention_pass(model_graph_str(g, g->src[i].name)) : 0;
            int32_t l = r->st.layer[i];
            if (!pass)
                continue;
            if (l < 0 || l >= 64 || l >= layers) {
                outside++;
                continue;
            }
            wrong_phase += r->st.phase[i] != (pass == 1 ? STRUCT_PHASE_FORWARD : STRUCT_PHASE_BACKWARD);
            (pass == 1 ? fwd : bwd)[l]++;
        }
        int once = 1;
        for (int l = 0; l < layers && l < 64; l++)
            once &= fwd[l] == 1 && bwd[l] == 1;
        if (!once || outside || wrong_phase)
            sc_check_fail(__FILE__, __LINE__, "%s, step %zu: attention kernels not once a layer and pass (%d outside a "
                          "layer, %d in the other pass)", what, s, outside, wrong_phase);
    }
}

/* The steps measured on H200 torch.compile'd (data/calibration/torch-steps/
 * stacks; Inductor fuses the first layer with the embedding and the last
 * with the final norm and the loss, and in mixed precision names its
 * layers' fused kernels differently from layer to layer), sharded with
 * FSDP2 over one rank (its hooks traced, no collective) and both: every
 * layer found forward and backward, from the repeating kernel sequence or
 * from FSDP's units, each layer's attention kernels in it once a pass,
 * the gradient reduction FSDP's where the units are; and one layer more
 * or fewer than the description refused, naming the field. */
TEST(golden_structure_compiled_and_fsdp_steps)
{
    static const struct {
        const char *dir;
        enum struct_layer_source source;
        int compiled, fsdp;
    } stacks[] = {{"h200-compile", STRUCT_LAYERS_REPEAT, 1, 0},
                  {"h200-compile-amp", STRUCT_LAYERS_REPEAT, 1, 0},
                  {"h200-fsdp", STRUCT_LAYERS_UNITS, 0, 1},
                  {"h200-compile-fsdp-amp", STRUCT_LAYERS_UNITS, 1, 1}};
    static const struct {
        const char *name;
        int layers;
        const char *dims;
    } models[] = {{"gpt-h1024-s1024-b8", 8, "\"hidden\":1024,\"heads\":16,\"seq\":1024"},
                  {"gpt-h2048-s2048-b4", 8, "\"hidden\":2048,\"heads\":16,\"seq\":2048"},
                  {"gpt-h4096-s4096-b1", 4, "\"hidden\":4096,\"heads\":32,\"seq\":4096"},
                  {"llama-h4096-gqa8-swiglu-s2048-b2", 4, "\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"seq\":2048"}};
    for (size_t k = 0; k < sizeof stacks / sizeof *stacks; k++)
        for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
            char path[256], cfg[256], what[320];
            struct model_load_opts lo;
            struct model_job *job;
            struct sc_error err;
            struct th_structure r;
            const char *paths[] = {path};
            snprintf(path, sizeof path, "data/calibration/torch-steps/stacks/%s/%s.pt.trace.json.gz", stacks[k].dir,
                     models[m].name);
            FILE *f = fopen(path, "rb");
            if (!f) /* the compiled FSDP step is of the first model only */
                continue;
            fclose(f);
            snprintf(what, sizeof what, "%s/%s", stacks[k].dir, models[m].name);
            model_load_opts_default(&lo);
            if (model_job_load(paths, 1, &lo, 0, &job, &err)) {
                sc_check_fail(__FILE__, __LINE__, "%s: %s", path, err.msg);
                continue;
            }
            snprintf(cfg, sizeof cfg, "{\"tp\":1,\"pp\":1,\"dp\":1,\"layers\":%d,%s}", models[m].layers,
                     models[m].dims);
            if (th_structure_recover(job, cfg, &r)) {
                th_structure_release(&r);
                continue;
            }
            printf("     %s: %d layers from %s, %d forward, %d backward, %zu Inductor kernels, gradient reduction "
                   "%s\n",
                   what, r.st.layers_per_rank, whatif_struct_layer_source_name(r.st.layer_source), r.st.layers_forward,
                   r.st.layers_backward, r.st.inductor_kernels, whatif_struct_grad_sync_name(r.st.grad_sync));
            CHECK_EQ_INT(r.st.layer_source, stacks[k].source);
            CHECK_EQ_INT(r.st.layers_per_rank, models[m].layers);
            CHECK_EQ_INT(r.st.layers_forward, models[m].layers);
            CHECK_EQ_INT(r.st.layers_backward, models[m].layers);
            CHECK_EQ_INT(r.st.inductor_kernels > 0, stacks[k].compiled);
            CHECK_EQ_INT(r.st.compiled_regions > 0, stacks[k].compiled);
            CHECK_EQ_INT(r.st.grad_sync, stacks[k].fsdp ? STRUCT_SYNC_FSDP : STRUCT_SYNC_NONE);
            CHECK_EQ_INT(r.st.world_size, stacks[k].fsdp ? 1 : -1);
            check_attention_in_layers(&r, models[m].layers, what);
            for (int d = -1; d <= 1; d += 2) { /* a wrong count is refused */
                struct job_config c = {0};
                struct job_structure st;
                snprintf(cfg, sizeof cfg, "{\"tp\":1,\"pp\":1,\"dp\":1,\"layers\":%d,%s}", models[m].layers + d,
                         models[m].dims);
                REQUIRE(spec_job_config_parse(cfg, strlen(cfg), &c, &err) == SC_OK);
                if (whatif_job_structure_recover(r.g, NULL, &c, &st, &err) == SC_OK) {
                    sc_check_fail(__FILE__, __LINE__, "%s: %d layers accepted", what, models[m].layers + d);
                    whatif_job_structure_release(&st);
                } else {
                    CHECK_CONTAINS(err.msg, "layers: ");
                }
            }
            th_structure_release(&r);
        }
}

/* Spans (track, start, end) by track, then start. */
static int cmp_span(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    for (int i = 0; i < 2; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* HTA's test trace (V100): 60 .item()s and .cpu()s a run copy to pageable
 * memory, each cudaMemcpyAsync waiting on the GPU for up to 52 ms inside
 * its operator. The host's time inside the operators (what the what-if's
 * profiler cost per operator divides) leaves those waits out: at most the
 * union of the operators' spans on each thread less them. */
TEST(golden_structure_host_ops_time_leaves_out_pageable_copy_waits)
{
    struct th_structure r;
    struct model_job *job;
    if (th_load_trace(th_find_trace("test"), &job))
        return;
    const struct model_trace *t = job->ranks[0];
    double waits = 0, spans = 0;
    for (size_t e = 0; e < t->n_events; e++) { /* copies to pageable memory: the calls that launched them */
        uint32_t l = t->link ? t->link[e] : MODEL_NONE;
        if ((t->events[e].kind == MODEL_EV_RUNTIME || t->events[e].kind == MODEL_EV_DRIVER) && l != MODEL_NONE &&
            t->events[l].kind == MODEL_EV_MEMCPY && strstr(model_str(t, t->events[l].name), "-> Pageable"))
            waits += (double)t->events[e].dur;
    }
    {
        /* the union of the operators' spans, per thread */
        size_t n = 0;
        for (size_t e = 0; e < t->n_events; e++)
            n += t->events[e].kind == MODEL_EV_CPU_OP;
        int64_t(*v)[3] = calloc(n ? n : 1, sizeof *v);
        REQUIRE(v != NULL);
        size_t k = 0;
        for (size_t e = 0; e < t->n_events; e++)
            if (t->events[e].kind == MODEL_EV_CPU_OP) {
                v[k][0] = t->events[e].track;
                v[k][1] = t->events[e].ts;
                v[k][2] = t->events[e].ts + t->events[e].dur;
                k++;
            }
        qsort(v, n, sizeof *v, cmp_span);
        for (size_t i = 0; i < n;) {
            int64_t s = v[i][1], e = v[i][2];
            size_t j = i + 1;
            for (; j < n && v[j][0] == v[i][0] && v[j][1] <= e; j++)
                e = v[j][2] > e ? v[j][2] : e;
            spans += (double)(e - s);
            i = j;
        }
        free(v);
    }
    if (th_structure_recover(job, "{\"tp\":1,\"pp\":1,\"dp\":2}", &r) == SC_OK) {
        printf("     test: %.1f ms inside operators, %.1f ms of it waiting on copies to pageable memory; %.1f ms "
               "counted for %zu operators\n",
               spans / 1e6, waits / 1e6, r.st.host_ops_ns / 1e6, r.st.host_ops_total);
        CHECK(waits > 0.3 * spans);
        CHECK(r.st.host_ops_ns > 0 && r.st.host_ops_ns <= spans - waits + 1e3);
    }
    th_structure_release(&r); /* and the job */
}
