/* tests/golden/test_golden_scales.c: per-resource what-ifs (README,
 * "--scale"): gpu, comm, cpu and kernel:TEXT, on every rank or one, checked
 * against what tests/tools/gentrace knows (it writes the same job again
 * with other durations: a replay that scales the right work reproduces
 * that run's measured steps) and on the shared traces that are host-bound
 * (nccl_data) or GPU-bound (ns_resolution, resnet). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

/* The gentrace job these tests share: 4 ranks, 3 steps, 16 layers (enough
 * backward work that the main thread's hand-off to the autograd thread is
 * found), with further options. */
static struct model_job *job4(const char *opt, const char *val)
{
    const char *args[] = {"--steps", "3", "--layers", "16", "--seed", "3", opt, val, NULL};
    return th_gentrace_job(4, args);
}

/* job opened as stepcast replay opens it (kept collectives split). */
static struct est_traced_model *open_job(const struct model_job *job)
{
    struct est_traced_model *m = NULL;
    struct sc_error err;
    if (job && est_model_of_job(job, NULL, &m, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    return m;
}

static const struct model_graph *graph_of(const struct est_traced_model *m)
{
    return m ? est_model_graph(m) : NULL;
}

/* The replay of m with the scales (NULL-terminated). */
static struct model_replay *replay(const struct est_traced_model *m, const char *const *scales)
{
    struct model_replay_opts o;
    struct model_replay *r = NULL;
    struct sc_error err;
    model_replay_opts_default(&o);
    o.critical_path = 0;
    for (; scales && *scales; scales++)
        REQUIRE(model_replay_parse_scale(*scales, &o, &err) == SC_OK);
    if (est_model_replay(m, &o, &r, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    else
        CHECK_EQ_INT(r->forced, 0);
    return r;
}

/* Every step of replay r within tol (a fraction) of the measured step of
 * the same rank and step in the other run's graph o. */
static void check_reproduces(const char *what, const struct model_replay *r, const struct model_graph *o,
                             double tol)
{
    CHECK_EQ_INT(r->n_steps, o->n_steps);
    for (size_t i = 0; i < r->n_steps && i < o->n_steps; i++) {
        double got = (double)r->steps[i].replayed_ns, want = (double)o->steps[i].measured_ns;
        if (fabs(got - want) > tol * want)
            sc_check_fail(__FILE__, __LINE__, "%s: rank %u step %zu replays %.3f ms, the generator ran %.3f ms", what,
                          r->steps[i].rank, i, got / 1e6, want / 1e6);
    }
}

/* comm=0 on a job whose generator ran it again with instant transfers: each
 * step loses its exposed communication (measured with minus measured
 * without, as the generator ran it), to 0.1% of the step, and nothing
 * else. One rank's link alone at x0 changes nothing: a collective lasts
 * its slowest member's transfer. */
TEST(scale_comm_zero_removes_the_exposed_communication)
{
    struct model_job *a = job4("--comm-scale", "1"), *b = job4("--comm-scale", "0");
    struct est_traced_model *ma = open_job(a), *mb = open_job(b);
    const struct model_graph *ga = graph_of(ma), *gb = graph_of(mb);
    if (!ga || !gb)
        goto out;
    const char *comm0[] = {"comm=0", NULL}, *comm0_one[] = {"comm@2=0", NULL};
    struct model_replay *plain = replay(ma, NULL), *fast = replay(ma, comm0), *one = replay(ma, comm0_one);
    if (!plain || !fast || !one)
        goto free_replays;
    check_reproduces("comm=0", fast, gb, 0.001);
    double exposed_sum = 0;
    for (size_t i = 0; i < plain->n_steps && i < gb->n_steps; i++) {
        double exposed = (double)(ga->steps[i].measured_ns - gb->steps[i].measured_ns);
        double removed = (double)(plain->steps[i].replayed_ns - fast->steps[i].replayed_ns);
        CHECK_NEAR(removed / 1e6, exposed / 1e6, 0.001 * (double)ga->steps[i].measured_ns / 1e6);
        exposed_sum += exposed;
        CHECK_EQ_INT(one->steps[i].replayed_ns, plain->steps[i].replayed_ns);
    }
    printf("     exposed communication %.3f ms per step (generator); comm=0 removes it\n",
           exposed_sum / 1e6 / (double)plain->n_steps);
    CHECK(exposed_sum > 1e6 * (double)plain->n_steps); /* there is some to remove */
free_replays:
    model_replay_free(plain);
    model_replay_free(fast);
    model_replay_free(one);
out:
    est_model_close(ma);
    est_model_close(mb);
    model_job_free(a);
    model_job_free(b);
}

/* The generator's --gpu-scale 0.5 halves kernels, copies and transfers:
 * gpu=0.5 with comm=0.5 reproduces it; gpu=0.5 alone, leaving transfers
 * as they were, comes out longer. */
TEST(scale_gpu_and_comm_reproduce_a_faster_gpu)
{
    struct model_job *a = job4("--gpu-scale", "1"), *b = job4("--gpu-scale", "0.5");
    struct est_traced_model *ma = open_job(a), *mb = open_job(b);
    const struct model_graph *ga = graph_of(ma), *gb = graph_of(mb);
    if (!ga || !gb)
        goto out;
    const char *both[] = {"gpu=0.5", "comm=0.5", NULL}, *gpu_only[] = {"gpu=0.5", NULL};
    struct model_replay *r = replay(ma, both), *q = replay(ma, gpu_only);
    if (r && q) {
        check_reproduces("gpu=0.5 comm=0.5", r, gb, 0.005);
        for (size_t i = 0; i < q->n_steps; i++)
            CHECK(q->steps[i].replayed_ns > r->steps[i].replayed_ns + 1000000);
    }
    model_replay_free(r);
    model_replay_free(q);
out:
    est_model_close(ma);
    est_model_close(mb);
    model_job_free(a);
    model_job_free(b);
}

/* The generator's host waits with no sync call (--dispatch: each forward
 * layer's MoE dispatch, the host resuming 40 us before the notify kernel
 * ends; --poll-loop: a cudaEventQuery loop after the loss), each alone and
 * both: every one found (16 layers x 3 steps x 4 ranks gaps, 3 x 4
 * loops), the replay at x1 reproduces every step to 0.1%, and gpu=0.5
 * with comm=0.5 reproduces the generator's run at --gpu-scale 0.5 to
 * 0.5%: the waits follow the GPU rather than stay host time. */
TEST(scale_gpu_half_through_host_waits_with_no_sync_call)
{
    static const char *const forms[][3] = {{"--dispatch", NULL, NULL}, {"--poll-loop", NULL, NULL},
                                           {"--dispatch", "--poll-loop", NULL}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        const char *one[] = {"--steps", "3", "--layers", "16", "--seed", "3", forms[f][0], forms[f][1], NULL},
                   *half[] = {"--steps", "3", "--layers", "16", "--seed", "3", "--gpu-scale", "0.5",
                              forms[f][0], forms[f][1], NULL};
        struct model_job *a = th_gentrace_job(4, one), *b = th_gentrace_job(4, half);
        struct est_traced_model *ma = open_job(a), *mb = open_job(b);
        const struct model_graph *ga = graph_of(ma), *gb = graph_of(mb);
        const char *both[] = {"gpu=0.5", "comm=0.5", NULL};
        struct model_replay *plain = ga ? replay(ma, NULL) : NULL, *r = ga ? replay(ma, both) : NULL;
        if (plain && r && gb) {
            int dispatch = strcmp(forms[f][0], "--dispatch") == 0, loop = !dispatch || forms[f][1];
            CHECK_EQ_INT(ga->stats.host_waits_gap, dispatch ? 16 * 3 * 4 : 0);
            CHECK_EQ_INT(ga->stats.host_waits_loop, loop ? 3 * 4 : 0);
            check_reproduces("x1", plain, ga, 0.001);
            check_reproduces("gpu=0.5 comm=0.5", r, gb, 0.005);
        }
        model_replay_free(plain);
        model_replay_free(r);
        est_model_close(ma);
        est_model_close(mb);
        model_job_free(a);
        model_job_free(b);
    }
}

/* The generator's slow rank 0 (its kernels 2x longer, copies and transfers
 * not): kernel:TEXT@0=0.5 over the names of its kernels reproduces the run
 * without the slow rank, on every rank (the others waited for it). */
TEST(scale_one_ranks_kernels_by_name)
{
    const char *slow_args[] = {"--steps", "3", "--layers", "16", "--seed", "3", "--slow-rank", "0",
                               "--slow-factor", "2", NULL};
    struct model_job *a = th_gentrace_job(4, slow_args), *b = job4("--gpu-scale", "1");
    struct est_traced_model *ma = open_job(a), *mb = open_job(b);
    const struct model_graph *ga = graph_of(ma), *gb = graph_of(mb);
    if (!ga || !gb)
        goto out;
    const char *fix[] = {"kernel:sgemm@0=0.5", "kernel:at::native@0=0.5", NULL};
    struct model_replay *r = replay(ma, fix);
    if (r)
        check_reproduces("kernel:..@0=0.5", r, gb, 0.005);
    model_replay_free(r);
out:
    est_model_close(ma);
    est_model_close(mb);
    model_job_free(a);
    model_job_free(b);
}

/* kernel:TEXT scales the kernels whose name holds TEXT and nothing else:
 * every kernel lasts its scaled or its own duration; a communication
 * kernel's name scales communication. */
TEST(scale_kernel_text_hits_only_matching_kernels)
{
    struct model_job *a = job4("--gpu-scale", "1");
    struct est_traced_model *m = open_job(a);
    const struct model_graph *g = graph_of(m);
    if (!g)
        goto out;
    const char *sgemm[] = {"kernel:sgemm=0.5", NULL}, *allreduce[] = {"kernel:AllReduce=0", NULL},
               *comm0[] = {"comm=0", NULL}, *none[] = {"kernel:SGEMM=0.5", NULL};
    struct model_replay *r = replay(m, sgemm), *ar = replay(m, allreduce), *c0 = replay(m, comm0),
                        *plain = replay(m, NULL), *same = replay(m, none);
    if (!r || !ar || !c0 || !plain || !same)
        goto free_replays;
    size_t hit = 0, missed = 0;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        if (g->tasks[i].cls != MODEL_TASK_KERNEL)
            continue;
        int match = strstr(model_graph_str(g, g->src[i].name), "sgemm") != NULL;
        int64_t want = match ? llround((double)g->tasks[i].dur * 0.5) : g->tasks[i].dur;
        hit += match;
        missed += r->end[i] - r->start[i] != want;
    }
    CHECK(hit >= 3 * 16 * 4 * 3); /* 3 GEMMs per layer (forward, two backward) */
    CHECK_EQ_INT(missed, 0);
    for (size_t i = 0; i < r->n_steps; i++) {
        CHECK(r->steps[i].replayed_ns < plain->steps[i].replayed_ns);
        CHECK_EQ_INT(ar->steps[i].replayed_ns, c0->steps[i].replayed_ns);
        CHECK_EQ_INT(same->steps[i].replayed_ns, plain->steps[i].replayed_ns); /* case matters */
    }
free_replays:
    model_replay_free(r);
    model_replay_free(ar);
    model_replay_free(c0);
    model_replay_free(plain);
    model_replay_free(same);
out:
    est_model_close(m);
    model_job_free(a);
}

/* cpu=0.5 on a host-bound job (the generator's GPU work at 1%) brings each
 * step after the first near half, to at most 0.6x (in the first, ranks
 * wait at the first collective for a rank that started later: their
 * traced origins, which no factor moves); on the GPU-bound job each step
 * moves by less than 10%. */
TEST(scale_cpu_half_host_bound_and_gpu_bound_gentrace)
{
    struct model_job *host = job4("--gpu-scale", "0.01"), *gpu = job4("--gpu-scale", "1");
    struct est_traced_model *mh = open_job(host), *mg = open_job(gpu);
    const struct model_graph *gh = graph_of(mh), *gg = graph_of(mg);
    const char *half[] = {"cpu=0.5", NULL};
    if (!gh || !gg)
        goto out;
    struct model_replay *h0 = replay(mh, NULL), *h1 = replay(mh, half), *g0 = replay(mg, NULL),
                        *g1 = replay(mg, half);
    for (size_t i = 0; h0 && h1 && i < h0->n_steps; i++) {
        double ratio = (double)h1->steps[i].replayed_ns / (double)h0->steps[i].replayed_ns;
        CHECK(ratio <= (h0->steps[i].step == 0 ? 0.7 : 0.6));
        CHECK(ratio >= 0.45);
        if (i == 1)
            printf("     host-bound step: cpu=0.5 -> x%.3f\n", ratio);
    }
    for (size_t i = 0; g0 && g1 && i < g0->n_steps; i++) {
        double ratio = (double)g1->steps[i].replayed_ns / (double)g0->steps[i].replayed_ns;
        CHECK(ratio >= 0.9 && ratio <= 1.0);
        if (i == 0)
            printf("     GPU-bound step: cpu=0.5 -> x%.3f\n", ratio);
    }
    model_replay_free(h0);
    model_replay_free(h1);
    model_replay_free(g0);
    model_replay_free(g1);
out:
    est_model_close(mh);
    est_model_close(mg);
    model_job_free(host);
    model_job_free(gpu);
}

/* The sum of the non-partial replayed steps of a shared trace with the
 * scales, over the same without; -1 when skipped or failed. */
static double shared_ratio(const char *name, const char *const *scales, double *each_max)
{
    const struct shared_trace *st = th_find_trace(name);
    struct model_job *job = NULL;
    double ratio = -1;
    if (!st || th_load_trace(st, &job))
        return -1;
    struct est_traced_model *m = open_job(job);
    const struct model_graph *g = graph_of(m);
    struct model_replay *a = g ? replay(m, NULL) : NULL, *b = g ? replay(m, scales) : NULL;
    if (a && b) {
        double sa = 0, sb = 0;
        *each_max = 0;
        for (size_t i = 0; i < a->n_steps; i++) {
            if (a->steps[i].partial)
                continue;
            sa += (double)a->steps[i].replayed_ns;
            sb += (double)b->steps[i].replayed_ns;
            double r = (double)b->steps[i].replayed_ns / (double)a->steps[i].replayed_ns;
            if (r > *each_max)
                *each_max = r;
        }
        ratio = sa > 0 ? sb / sa : -1;
        printf("     %s: %s -> x%.3f of the replay (steps at most x%.3f)\n", name, scales[0], ratio, *each_max);
    }
    model_replay_free(a);
    model_replay_free(b);
    est_model_close(m);
    model_job_free(job);
    return ratio;
}

/* nccl_data is host-bound (its GPU at x2 grows it less than 1.3x): host
 * work at x0.5 brings every step to at most 0.6x, the GPU at x0.5 moves it
 * by under 5%. ns_resolution is GPU-bound: host work at x0.5 moves it by
 * under 5% in all (one step may give time to the next, whose GPU work
 * then queues earlier). */
TEST(scale_cpu_half_on_shared_traces)
{
    const char *cpu_half[] = {"cpu=0.5", NULL}, *gpu_half[] = {"gpu=0.5", NULL};
    double each = 0, r;
    if ((r = shared_ratio("nccl_data", cpu_half, &each)) >= 0)
        CHECK(each <= 0.6);
    if ((r = shared_ratio("nccl_data", gpu_half, &each)) >= 0)
        CHECK(r >= 0.95);
    if ((r = shared_ratio("ns_resolution", cpu_half, &each)) >= 0)
        CHECK(r >= 0.95 && r <= 1.0);
}
