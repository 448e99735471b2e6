/* tests/golden/test_golden_fold.c: the 8-rank DLRM job folded by force
 * (model/graph.h, MODEL_FOLD_OVER) replays as it does unfolded, within
 * 0.5%. Its ranks hold different embedding shards (their task sequences
 * differ), so none is alike another. */
#include <stdint.h>

#include "model/graph.h"
#include "model/job.h"
#include "model/replay.h"
#include "tests/check.h"
#include "tests/shared_traces.h"
#include "common/banned.h"

TEST(golden_fold_dlrm_replays_as_unfolded)
{
    struct model_job *job = NULL;
    struct model_graph *g[2] = {NULL, NULL};
    struct model_replay *r[2] = {NULL, NULL};
    struct model_graph_opts o;
    struct model_replay_opts ro;
    struct sc_error err;
    if (th_load_trace(th_find_trace("dlrm"), &job))
        return;
    model_replay_opts_default(&ro);
    for (int k = 0; k < 2; k++) {
        model_graph_opts_default(&o);
        o.fold_over = k ? 0 : SIZE_MAX;
        if (model_graph_build(job, &o, &g[k], &err) || model_replay_run(g[k], &ro, &r[k], &err))
            sc_check_fail(__FILE__, __LINE__, "%s", err.msg);
    }
    REQUIRE(r[0] && r[1]);
    CHECK_EQ_INT(g[1]->folding.ranks, 8);
    CHECK_EQ_INT(g[1]->n_ranks + g[1]->folding.n_folded, 8);
    th_check_folded_replay(r[0], r[1], 0.5);
    for (int k = 0; k < 2; k++) {
        model_replay_free(r[k]);
        model_graph_free(g[k]);
    }
    model_job_free(job);
}
