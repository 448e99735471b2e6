/* tests/unit/test_structure.c: what launched a traced step's work
 * (estimator/whatif/structure.h), on steps written here with the names PyTorch
 * records: an FSDP2 step (per-unit gathers in FSDP::pre_forward and
 * FSDP::pre_backward, gradients reduce-scattered in
 * FSDP::post_backward_reduce), the same with FSDP1's names, and a
 * torch.compile'd DDP step (Inductor's kernels, compiled regions, the
 * gradients accumulated and buckets all-reduced from AccumulateGrad's
 * hook). The real traces are
 * checked in tests/golden/test_golden_structure.c. */
#include <stdio.h>
#include <string.h>

#include "estimator/spec/job_config.h"
#include "estimator/whatif/structure.h"
#include "model/graph.h"
#include "model/job.h"
#include "tests/check.h"
#include "tests/shared_traces.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

#define LAYERS 3
#define STEPS 2
#define UNIT_NELEMS 1048576 /* each unit's parameters */
#define COMPUTE 7
#define COMM 20

enum style { FSDP2, FSDP1, COMPILED_DDP };

struct gen {
    struct tb tb;
    double t;      /* the GPU's clock: each kernel after the last */
    enum style style;
};

/* A call on thread tid at time `at` launching `kernel` on `stream` after
 * the previous kernel; collective args when coll is not NULL. */
static void launch(struct gen *g, int tid, double at, int stream, const char *kernel, const char *coll, long nelems)
{
    char args[256];
    int corr = tb_call(&g->tb, tid, "cudaLaunchKernel", at, 2);
    if (g->t < at + 3)
        g->t = at + 3;
    if (coll)
        snprintf(args, sizeof args,
                 "\"Collective name\": \"%s\", \"In msg nelems\": %ld, \"Out msg nelems\": %ld, \"Group size\": 2, "
                 "\"dtype\": \"BFloat16\"",
                 coll, nelems, strcmp(coll, "_allgather_base") == 0 ? 2 * nelems : nelems / 2);
    tb_kernel_args(&g->tb, corr, stream, kernel, g->t, 40, coll ? args : NULL);
    g->t += 41;
}

/* A span named `name` on tid from at to at + dur. */
static void span(struct gen *g, const char *cat, const char *name, int tid, double at, double dur)
{
    tb_event(&g->tb, cat, name, TB_PID, tid, at, dur, NULL);
}

static const char *gather_span(enum style s, int backward)
{
    if (s == FSDP1)
        return backward ? "FullyShardedDataParallel._pre_backward_hook" : "FullyShardedDataParallel._pre_forward";
    return backward ? "FSDP::pre_backward" : "FSDP::pre_forward";
}

/* One layer's forward from the main thread at *at. */
static void forward_layer(struct gen *g, int l, double *at)
{
    char name[64];
    if (g->style != COMPILED_DDP) {
        span(g, "user_annotation", gather_span(g->style, 0), TB_MAIN, *at, 20);
        if (g->style == FSDP2)
            span(g, "user_annotation", "FSDP::all_gather", TB_MAIN, *at + 1, 10);
        launch(g, TB_MAIN, *at + 2, COMM, "ncclDevKernel_AllGather_RING_LL", "_allgather_base", UNIT_NELEMS);
        *at += 25;
        snprintf(name, sizeof name, "nn.Module: TransformerLayer_%d", l);
        span(g, "python_function", name, TB_MAIN, *at, 30);
        launch(g, TB_MAIN, *at + 1, COMPUTE, "sm90_xmma_gemm_bf16bf16_bf16f32", NULL, 0);
        launch(g, TB_MAIN, *at + 10, COMPUTE, "flash_fwd_kernel", NULL, 0);
        launch(g, TB_MAIN, *at + 20, COMPUTE, "sm90_xmma_gemm_bf16bf16_bf16f32", NULL, 0);
        *at += 35;
    } else {
        launch(g, TB_MAIN, *at + 1, COMPUTE, "triton_per_fused_native_layer_norm_0", NULL, 0);
        launch(g, TB_MAIN, *at + 10, COMPUTE, "sm90_xmma_gemm_bf16bf16_bf16f32", NULL, 0);
        launch(g, TB_MAIN, *at + 20, COMPUTE, "triton_poi_fused_gelu_1", NULL, 0);
        *at += 30;
    }
}

/* One layer's backward from the autograd thread at *at, its gradients
 * reduced after it. */
static void backward_layer(struct gen *g, double *at)
{
    if (g->style != COMPILED_DDP) {
        span(g, "user_annotation", gather_span(g->style, 1), TB_SIDE, *at, 20);
        launch(g, TB_SIDE, *at + 2, COMM, "ncclDevKernel_AllGather_RING_LL", "_allgather_base", UNIT_NELEMS);
        *at += 25;
    }
    span(g, "cpu_op", "autograd::engine::evaluate_function: MmBackward0", TB_SIDE, *at, 30);
    if (g->style == COMPILED_DDP) {
        launch(g, TB_SIDE, *at + 1, COMPUTE, "triton_poi_fused_gelu_backward_2", NULL, 0);
        launch(g, TB_SIDE, *at + 10, COMPUTE, "sm90_xmma_gemm_bf16bf16_bf16f32", NULL, 0);
    } else {
        launch(g, TB_SIDE, *at + 1, COMPUTE, "sm90_xmma_gemm_bf16bf16_bf16f32", NULL, 0);
        launch(g, TB_SIDE, *at + 10, COMPUTE, "flash_bwd_kernel", NULL, 0);
    }
    launch(g, TB_SIDE, *at + 20, COMPUTE, "sm90_xmma_gemm_bf16bf16_bf16f32", NULL, 0);
    *at += 35;
    if (g->style == COMPILED_DDP) { /* .grad += the new gradient, then DDP's bucket */
        span(g, "cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", TB_SIDE, *at, 20);
        launch(g, TB_SIDE, *at + 1, COMPUTE, "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor>",
               NULL, 0);
        span(g, "cpu_op", "c10d::allreduce_", TB_SIDE, *at + 4, 10);
        launch(g, TB_SIDE, *at + 5, COMM, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "allreduce", UNIT_NELEMS);
    } else {
        span(g, "cpu_op", "autograd::engine::evaluate_function: RegisterPostBackwardFunctionBackward", TB_SIDE, *at,
             20);
        span(g, "user_annotation",
             g->style == FSDP2 ? "FSDP::post_backward_reduce" : "FullyShardedDataParallel._post_backward_hook",
             TB_SIDE, *at + 1, 15);
        launch(g, TB_SIDE, *at + 2, COMM, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "_reduce_scatter_base",
               2 * UNIT_NELEMS);
    }
    *at += 25;
}

static const char *write_step(enum style style, const char *file)
{
    struct gen g = {.style = style};
    double at = 0;
    tb_init(&g.tb, 0, 2);
    for (int s = 0; s < STEPS; s++) {
        double begin = at;
        if (style == COMPILED_DDP)
            span(&g, "cpu_op", "CompiledFunction", TB_MAIN, at, 5);
        for (int l = 0; l < LAYERS; l++)
            forward_layer(&g, l, &at);
        if (style == COMPILED_DDP)
            span(&g, "cpu_op", "autograd::engine::evaluate_function: CompiledFunctionBackward", TB_SIDE, at, 2);
        for (int l = 0; l < LAYERS; l++)
            backward_layer(&g, &at);
        launch(&g, TB_MAIN, at + 1, COMPUTE, "multi_tensor_apply_kernel", NULL, 0);
        int corr = tb_call(&g.tb, TB_MAIN, "cudaDeviceSynchronize", at + 5, g.t + 5 - (at + 5));
        (void)corr;
        at = g.t + 20;
        tb_step(&g.tb, s + 1, begin, at - 10 - begin);
    }
    const char *path = tb_write(&g.tb, file);
    tb_free(&g.tb);
    return path;
}

/* The structure of a step written by write_step, described as dp 2. */
static int recover(const char *path, struct th_structure *r)
{
    return th_structure_recover(tb_job(&path, 1), "{\"tp\":1,\"pp\":1,\"dp\":2}", r);
}

static void check_fsdp(enum style style, const char *file)
{
    struct th_structure r;
    if (recover(write_step(style, file), &r))
        return;
    CHECK_EQ_INT(r.st.grad_sync, STRUCT_SYNC_FSDP);
    CHECK_EQ_INT(r.st.steps, STEPS);
    /* a gather before each unit's forward and backward, one reduction after each backward */
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_PARAMS], 2 * LAYERS * STEPS);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_GRADS], LAYERS * STEPS);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_OTHER], 0);
    /* the gathered output is the unit's parameters, in bf16 */
    CHECK_NEAR(r.st.use_bytes[STRUCT_DP_PARAMS] / STEPS, 2 * LAYERS * 2.0 * 2 * UNIT_NELEMS, 1);
    CHECK_EQ_INT(r.st.layer_source, STRUCT_LAYERS_MODULES);
    CHECK_EQ_INT(r.st.layers_forward, LAYERS);
    CHECK_EQ_INT(r.st.layers_backward, LAYERS);
    CHECK_EQ_INT(r.st.inductor_kernels, 0);
    th_structure_release(&r);
}

TEST(structure_finds_fsdp2_gathers_and_reductions)
{
    check_fsdp(FSDP2, "fsdp2.json");
}

TEST(structure_finds_fsdp1_gathers_and_reductions)
{
    check_fsdp(FSDP1, "fsdp1.json");
}

TEST(structure_finds_a_compiled_step_its_layers_and_ddp_buckets)
{
    struct th_structure r;
    if (recover(write_step(COMPILED_DDP, "compiled.json"), &r))
        return;
    CHECK_EQ_INT(r.st.inductor_kernels, 3 * LAYERS * STEPS);
    CHECK_EQ_INT(r.st.compiled_regions, 2 * STEPS);
    CHECK_EQ_INT(r.st.grad_sync, STRUCT_SYNC_DDP);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_GRADS], LAYERS * STEPS);
    CHECK_EQ_INT(r.st.by_use[STRUCT_DP_PARAMS], 0);
    /* the gradient accumulated is work on the weights; the bucket's
     * all-reduce beside it is not */
    CHECK_EQ_INT(r.st.param_work_tasks, LAYERS * STEPS);
    /* no module annotations: the layers are the repeats, forward and backward */
    CHECK_EQ_INT(r.st.layer_source, STRUCT_LAYERS_REPEAT);
    CHECK_EQ_INT(r.st.layers_per_rank, LAYERS);
    CHECK_EQ_INT(r.st.layers_forward, LAYERS);
    CHECK_EQ_INT(r.st.layers_backward, LAYERS);
    th_structure_release(&r);
}
