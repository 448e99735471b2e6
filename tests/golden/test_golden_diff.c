/* tests/golden/test_golden_diff.c: two runs compared (model/diff.h): gentrace
 * runs that differ in one known way, a run against itself, and HTA's
 * control/test pair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/diff.h"
#include "estimator/model_open.h"
#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

static int64_t part(const struct model_diff *d, const char *category)
{
    for (size_t i = 0; i < d->n_parts; i++)
        if (strcmp(d->parts[i].category, category) == 0)
            return d->parts[i].ns;
    return INT64_MIN;
}

/* The parts sum to the difference, exactly. */
static void check_sum(const struct model_diff *d)
{
    int64_t sum = 0;
    for (size_t i = 0; i < d->n_parts; i++)
        sum += d->parts[i].ns;
    CHECK_EQ_INT(sum, d->b_ns - d->a_ns);
    CHECK(strcmp(d->parts[d->n_parts - 1].category, "unmatched") == 0);
}

/* As stepcast diff runs it: each side's kept collectives split. */
static int diff_jobs(const struct model_job *a, const struct model_job *b, struct model_diff *d)
{
    struct est_traced_model *ma = NULL, *mb = NULL;
    struct sc_error err = {0};
    int rc = -1;
    if (est_model_of_job(a, NULL, &ma, &err) || est_model_of_job(b, NULL, &mb, &err) ||
        est_model_diff(ma, mb, d, &err))
        sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    else
        rc = 0;
    est_model_close(ma);
    est_model_close(mb);
    return rc;
}

/* gentrace's 2-rank, 3-step job (A) against the same with `change`, its
 * further options (B). 0 when *d holds the diff. */
static const char *const gentrace_base[] = {"--steps", "3", NULL};

static int diff_gentrace(const char *const *change, struct model_diff *d)
{
    const char *changed[8] = {"--steps", "3"};
    for (size_t i = 0; change[i] && i + 3 < sizeof changed / sizeof changed[0]; i++)
        changed[2 + i] = change[i];
    struct model_job *a = th_gentrace_job(2, gentrace_base), *b = th_gentrace_job(2, changed);
    int rc = a && b ? diff_jobs(a, b, d) : -1;
    model_job_free(a);
    model_job_free(b);
    return rc;
}

/* Only the network changes (transfers x2): all of the difference is
 * communication, no kernel is added or removed, the NCCL kernels are
 * re-timed. A run against itself: nothing differs. */
TEST(diff_gentrace_comm_only_and_self)
{
    static const char *const slow[] = {"--comm-scale", "2", NULL};
    struct model_diff d;
    if (diff_gentrace(slow, &d) == 0) {
        check_sum(&d);
        CHECK(d.b_ns > d.a_ns);
        CHECK_EQ_INT(d.steps, 6);
        CHECK_EQ_INT(part(&d, "communication"), d.b_ns - d.a_ns);
        CHECK_EQ_INT(d.n_added, 0);
        CHECK_EQ_INT(d.n_removed, 0);
        CHECK(d.n_retimed >= 1 && strstr(d.retimed[0].name, "nccl") != NULL);
        CHECK(d.retimed[0].b_ns > d.retimed[0].a_ns);
        model_diff_release(&d);
    }
    struct model_job *a = th_gentrace_job(2, gentrace_base);
    if (a && diff_jobs(a, a, &d) == 0) {
        CHECK_EQ_INT(d.b_ns, d.a_ns);
        for (size_t i = 0; i < d.n_parts; i++)
            CHECK_EQ_INT(d.parts[i].ns, 0);
        CHECK_EQ_INT(d.n_added + d.n_removed + d.n_retimed, 0);
        model_diff_release(&d);
    }
    model_job_free(a);
}

/* GPU work x0.8: the step shrinks, mostly in compute and communication,
 * little is left unmatched. */
TEST(diff_gentrace_gpu_faster)
{
    static const char *const fast[] = {"--gpu-scale", "0.8", NULL};
    struct model_diff d;
    if (diff_gentrace(fast, &d) == 0) {
        check_sum(&d);
        int64_t total = d.b_ns - d.a_ns;
        CHECK(total < 0);
        CHECK(part(&d, "compute:gemm") < 0);
        CHECK(llabs(part(&d, "unmatched")) < llabs(total) / 5);
        model_diff_release(&d);
    }
}

/* Data loading 1.5 -> 3 ms a step, nothing else: the host gap before
 * each step's first op grows, and it is all idle, none of it host work,
 * compute or communication. */
TEST(diff_gentrace_slower_data_loading_is_idle)
{
    static const char *const slow[] = {"--load-ms", "3", NULL};
    struct model_diff d;
    if (diff_gentrace(slow, &d) == 0) {
        check_sum(&d);
        int64_t total = d.b_ns - d.a_ns;
        CHECK(total > 1000000); /* about 1.5 ms a step */
        CHECK_EQ_INT(part(&d, "idle"), total);
        CHECK(part(&d, "host") == INT64_MIN || part(&d, "host") == 0);
        CHECK_EQ_INT(d.n_added + d.n_removed, 0);
        model_diff_release(&d);
    }
}

/* HTA's control (A100) and test (V100) runs of one recommendation model:
 * the parts sum to the difference; the GPUs' different GEMM kernels show
 * as added and removed. */
TEST(diff_control_test)
{
    struct model_job *a = NULL, *b = NULL;
    struct model_diff d;
    if (th_load_trace(th_find_trace("control"), &a) || th_load_trace(th_find_trace("test"), &b))
        goto out;
    if (diff_jobs(a, b, &d) == 0) {
        check_sum(&d);
        CHECK(d.b_ns > d.a_ns);
        CHECK(d.n_added > 0 && d.n_removed > 0 && d.n_retimed > 0);
        CHECK(part(&d, "added") > 0 && part(&d, "removed") < 0); /* B's own kernels cost B time */
        CHECK(strstr(d.added[0].name, "volta") || strstr(d.added[0].name, "embedding"));
        /* one rank of each job: its collectives' waits for the untraced
         * peers are a part of their own, split off what the unsplit diff
         * calls communication; every other part is the same */
        struct model_graph *ga = NULL, *gb = NULL;
        struct model_diff whole;
        struct sc_error err;
        int found = 0;
        for (size_t i = 0; i < d.n_parts; i++)
            found |= strcmp(d.parts[i].category, "peer_waits") == 0;
        CHECK(found);
        if (model_graph_build(a, NULL, &ga, &err) == SC_OK && model_graph_build(b, NULL, &gb, &err) == SC_OK &&
            model_diff_run(ga, NULL, gb, NULL, &whole, &err) == SC_OK) {
            printf("     communication %.3f ms, peer waits %.3f ms; unsplit communication %.3f ms\n",
                   part(&d, "communication") / 1e6, part(&d, "peer_waits") / 1e6, part(&whole, "communication") / 1e6);
            CHECK_EQ_INT(part(&d, "communication") + part(&d, "peer_waits"), part(&whole, "communication"));
            CHECK(part(&d, "peer_waits") != 0);
            CHECK_EQ_INT(whole.n_parts + 1, d.n_parts);
            for (size_t i = 0; i < whole.n_parts; i++)
                if (strcmp(whole.parts[i].category, "communication"))
                    CHECK_EQ_INT(part(&d, whole.parts[i].category), whole.parts[i].ns);
            model_diff_release(&whole);
        } else {
            sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
        }
        model_graph_free(ga);
        model_graph_free(gb);
        model_diff_release(&d);
    }
out:
    model_job_free(a);
    model_job_free(b);
}
