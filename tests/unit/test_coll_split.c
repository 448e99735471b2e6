/* tests/unit/test_coll_split.c: a single traced rank's collectives split
 * into transfer and wait (estimator/whatif/coll_split.h) and replayed so
 * (model/replay.h waits), on fixture traces whose wait is known: the
 * collective lasts the model's transfer for its size plus a wait the
 * fixture chooses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/whatif/coll_split.h"
#include "estimator/costs/collective_model.h"
#include "estimator/costs/hardware.h"
#include "estimator/spec/job_config.h"
#include "estimator/whatif/whatif.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/trace_builder.h"
#include "common/banned.h"

#define RANK 3
#define WORLD 8
#define GEMM_US 5000.0 /* the GPU work before the collective: the step is GPU-bound */
#define WAIT_US 3000.0 /* the wait for the untraced peers the fixture puts in */
#define FLOATS (4 << 20)

/* The collective model's time for the fixture's all-reduce of FLOATS
 * floats among WORLD ranks on the fixture's GPU (one NVLink domain), us. */
static double model_transfer_us(void)
{
    const struct hw_profile *hw = cost_hw_profile_for_device("NVIDIA A100-SXM4-80GB");
    struct coll_params p;
    REQUIRE(hw != NULL);
    cost_coll_params_from_hw(hw, &p);
    return whatif_coll_split_us(&p, MODEL_COLL_ALLREDUCE, (struct coll_group){WORLD, WORLD}, 4.0 * FLOATS);
}

/* Rank RANK of WORLD: per step a GEMM, then an all-reduce on the same
 * stream lasting transfer + wait[s], both launched up front, then a sync.
 * sized: the trace gives the all-reduce's size. */
static const char *fixture(const char *name, int sized, const double *transfer, const double *wait, int steps)
{
    struct tb tb;
    char args[512];
    double t0 = 0;
    tb_init(&tb, RANK, WORLD);
    for (int s = 0; s < steps; s++) {
        double coll = transfer[s] + wait[s], end = t0 + 20 + GEMM_US + coll;
        tb_step(&tb, s + 1, t0, end + 10 + 5 - t0);
        tb_launch(&tb, t0 + 5, 4, 7, "ampere_sgemm_128x64_nn", t0 + 20, GEMM_US);
        int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", t0 + 11, 4);
        if (sized)
            snprintf(args, sizeof args,
                     "\"Collective name\": \"allreduce\", \"In msg nelems\": %d, \"Out msg nelems\": %d, "
                     "\"Group size\": %d, \"dtype\": \"Float\"",
                     FLOATS, FLOATS, WORLD);
        else
            snprintf(args, sizeof args, "\"Collective name\": \"allreduce\"");
        tb_kernel_args(&tb, corr, 7, "ncclKernel_AllReduce_RING_LL_Sum_float", t0 + 20 + GEMM_US, coll, args);
        tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", t0 + 16, end + 10 - (t0 + 16));
        t0 = end + 15;
    }
    const char *path = tb_write(&tb, name);
    tb_free(&tb);
    return path;
}

struct split_run {
    struct model_job *job;
    struct model_graph *g;
    struct model_coll_wait *waits;
    size_t n_waits;
};

static int load(struct split_run *s, const char *path)
{
    struct sc_error err;
    memset(s, 0, sizeof *s);
    if (!(s->job = tb_job(&path, 1)))
        return -1;
    if (model_graph_build(s->job, NULL, &s->g, &err) || whatif_coll_split_waits(s->g, &s->waits, &s->n_waits, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    return 0;
}

static void release(struct split_run *s)
{
    free(s->waits);
    model_graph_free(s->g);
    model_job_free(s->job);
}

/* The replay with the split and a scale (NULL: none). */
static struct model_replay *replay(const struct split_run *s, const char *scale)
{
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    model_replay_opts_default(&o);
    o.waits = (struct model_coll_waits){s->waits, s->n_waits};
    if ((scale && model_replay_parse_scale(scale, &o, &err)) || model_replay_run(s->g, &o, &r, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    CHECK_EQ_INT(r->forced, 0);
    return r;
}

static int near_us(double got_ns, double want_us, double tol_ns)
{
    if (fabs(got_ns - want_us * 1e3) <= tol_ns)
        return 1;
    printf("     %.3f us, expected %.3f us\n", got_ns / 1e3, want_us);
    return 0;
}

/* With its size in the trace: the wait is the traced time less the
 * model's transfer; comm=0 takes out the transfer alone; gpu=0.5 on every
 * rank halves the wait with the GEMM, on the traced rank alone it does
 * not (the untraced peers run as before). */
TEST(coll_split_sized_collective_wait_and_scales)
{
    const double T = model_transfer_us(), tr[1] = {T}, w[1] = {WAIT_US};
    struct split_run s;
    REQUIRE(T > 10 && T < WAIT_US);
    if (load(&s, fixture("split_sized.json", 1, tr, w, 1)))
        goto out;
    REQUIRE(s.n_waits == 1);
    CHECK_EQ_INT(s.waits[0].from, MODEL_WAIT_FROM_SIZE);
    struct model_replay *plain = replay(&s, NULL), *comm0 = replay(&s, "comm=0"), *gpu = replay(&s, "gpu=0.5"),
                        *gpu_r = replay(&s, "gpu@3=0.5"), *comm_half = replay(&s, "comm=0.5");
    REQUIRE(plain && comm0 && gpu && gpu_r && comm_half && plain->n_steps == 1);
    CHECK_EQ_INT(plain->split_from[MODEL_WAIT_FROM_SIZE], 1);
    const struct model_replay_step *p = &plain->steps[0];
    CHECK(near_us((double)p->collective_kept_ns, WAIT_US, 2));
    CHECK(fabs(p->error_pct) < 0.1); /* the plain replay still reproduces the step */
    /* comm=0: exactly the transfer out, the wait stays */
    CHECK(near_us((double)(p->replayed_ns - comm0->steps[0].replayed_ns), T, 2));
    CHECK(near_us((double)comm0->steps[0].collective_kept_ns, WAIT_US, 2));
    CHECK(near_us((double)(p->replayed_ns - comm_half->steps[0].replayed_ns), T / 2, 2));
    /* gpu=0.5 on every rank: the GEMM and the wait halve */
    CHECK(near_us((double)gpu->steps[0].collective_kept_ns, WAIT_US / 2, 2));
    CHECK(near_us((double)(p->replayed_ns - gpu->steps[0].replayed_ns), (GEMM_US + WAIT_US) / 2, 2));
    /* gpu=0.5 on the traced rank alone: its GEMM halves, the wait does not */
    CHECK(near_us((double)gpu_r->steps[0].collective_kept_ns, WAIT_US, 2));
    CHECK(near_us((double)(p->replayed_ns - gpu_r->steps[0].replayed_ns), GEMM_US / 2, 2));
    model_replay_free(plain);
    model_replay_free(comm0);
    model_replay_free(gpu);
    model_replay_free(gpu_r);
    model_replay_free(comm_half);

    /* the what-if splits it the same way (one implementation) */
    struct job_config cfg, set;
    struct whatif_result wr;
    struct sc_error err;
    const char *desc = "{\"tp\":1,\"pp\":1,\"dp\":8}";
    spec_job_config_init(&set);
    REQUIRE(spec_job_config_parse(desc, strlen(desc), &cfg, &err) == SC_OK);
    if (whatif_run(s.g, NULL, &cfg, &set, &wr, &err) == SC_OK) {
        CHECK(near_us(wr.collective_wait_ms * 1e6, WAIT_US, 2));
        CHECK(near_us(wr.collective_transfer_ms * 1e6, T, 2));
        whatif_release(&wr);
    } else {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    }
out:
    release(&s);
}

/* The size survives the build that sheds each trace (stepcast replay's). */
TEST(coll_split_sizes_kept_when_traces_are_shed)
{
    const double tr[1] = {model_transfer_us()}, w[1] = {WAIT_US};
    const char *path = fixture("split_shed.json", 1, tr, w, 1);
    struct model_job *job = NULL;
    struct model_graph *g = NULL;
    struct model_coll_wait *v = NULL;
    size_t n = 0;
    struct sc_error err;
    if (model_graph_build_paths(&path, 1, &(struct model_graph_load){0}, NULL, &job, &g, &err) ||
        whatif_coll_split_waits(g, &v, &n, &err)) {
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    } else {
        REQUIRE(n == 1);
        CHECK_EQ_INT(v[0].from, MODEL_WAIT_FROM_SIZE);
        CHECK(near_us((double)v[0].wait, WAIT_US, 2));
    }
    free(v);
    model_graph_free(g);
    model_job_free(job);
}

/* Without sizes: the least-waiting instance (step 1's, which waited for
 * nobody) is the transfer of both; step 2's wait is what it adds. */
TEST(coll_split_without_sizes_least_waiting_instance)
{
    const double tr[2] = {400, 400}, w[2] = {0, WAIT_US};
    struct split_run s;
    if (load(&s, fixture("split_unsized.json", 0, tr, w, 2)))
        goto out;
    REQUIRE(s.n_waits == 2);
    struct model_replay *plain = replay(&s, NULL), *comm0 = replay(&s, "comm=0");
    REQUIRE(plain && comm0 && plain->n_steps == 2);
    CHECK_EQ_INT(plain->split_from[MODEL_WAIT_FROM_LEAST], 2);
    CHECK(near_us((double)plain->steps[0].collective_kept_ns, 0, 2));
    CHECK(near_us((double)plain->steps[1].collective_kept_ns, WAIT_US, 2));
    for (size_t k = 0; k < 2; k++)
        CHECK(near_us((double)(plain->steps[k].replayed_ns - comm0->steps[k].replayed_ns), 400, 2));
    model_replay_free(plain);
    model_replay_free(comm0);
out:
    release(&s);
}

/* A wait that is not a kept collective's, or longer than it, is refused. */
TEST(coll_split_bad_waits_refused)
{
    const double tr[1] = {model_transfer_us()}, w[1] = {WAIT_US};
    struct split_run s;
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    if (load(&s, fixture("split_bad.json", 1, tr, w, 1)))
        goto out;
    REQUIRE(s.n_waits == 1);
    struct model_coll_wait bad = s.waits[0];
    bad.wait = s.g->tasks[bad.task].dur + 1;
    model_replay_opts_default(&o);
    o.waits = (struct model_coll_waits){&bad, 1};
    CHECK(model_replay_run(s.g, &o, &r, &err) == SC_EINVAL);
    bad = s.waits[0];
    bad.task = s.g->prev[bad.task] != MODEL_NONE ? s.g->prev[bad.task] : 0; /* the GEMM */
    CHECK(model_replay_run(s.g, &o, &r, &err) == SC_EINVAL);
    CHECK(strstr(err.msg, "kept") != NULL);
    CHECK(r == NULL);
out:
    release(&s);
}

/* A hostile trace's collective of INT64_MAX elements: its size is unknown
 * (-1), not an overflowed product, and the job splits and replays. */
TEST(coll_split_a_collective_of_int64_max_elements)
{
    struct tb tb;
    tb_init(&tb, RANK, WORLD);
    tb_step(&tb, 1, 0, 1000);
    int corr = tb_call(&tb, TB_MAIN, "cudaLaunchKernel", 10, 4);
    tb_kernel_args(&tb, corr, 7, "ncclKernel_AllReduce_RING_LL_Sum_float", 20, 500,
                   "\"Collective name\": \"allreduce\", \"In msg nelems\": 9223372036854775807, "
                   "\"Out msg nelems\": 9223372036854775807, \"Group size\": 8, \"dtype\": \"Float\"");
    tb_call(&tb, TB_MAIN, "cudaStreamSynchronize", 16, 990);
    const char *path = tb_write(&tb, "huge-collective.json");
    tb_free(&tb);
    struct split_run s;
    if (load(&s, path))
        return;
    const struct model_trace *t = s.job->ranks[0];
    REQUIRE(t->n_colls >= 1);
    CHECK_EQ_INT(model_coll_bytes(t, &t->colls[0], MODEL_COLL_ALLREDUCE), -1);
    struct model_replay *r = replay(&s, NULL);
    CHECK(r != NULL);
    model_replay_free(r);
    release(&s);
}
