/* estimator/interchange/chakra_export.h: a replayed step as MLCommons Chakra execution
 * traces, the files ASTRA-sim and other simulators open: one
 * `<prefix>.<rank>.et` per rank and `comm_group.json`, {"<id>": [ranks]}.
 *
 * Each file holds a GlobalMetadata (version: MODEL_ET_SCHEMA_VERSION),
 * then one Node per task of its rank, numbered in an order that respects
 * every dependency, typed as Chakra's feeder (et_feeder_node.cpp) reads
 * them:
 *   - kernels, copies, sets, runtime calls, host tasks and step markers:
 *     COMP_NODE, with is_cpu_op (bool), num_ops (int64, the FLOPs of a
 *     GEMM as its shape gives them, or a synthesised task's) and
 *     tensor_size (uint64, a copy's or set's bytes) where known, and the
 *     launching op's Input Dims and Input type in inputs.shapes and
 *     inputs.types, as Chakra's converter writes them;
 *   - collectives: COMM_COLL_NODE with comm_type (int64, Chakra's
 *     CollectiveCommType), comm_size (int64 bytes, when known), pg_name
 *     (the group's id in comm_group.json) and pg_desc (the process group's
 *     name in the trace);
 *   - point-to-point transfers (a send and its receive held as one task,
 *     model_gb_pair, or a traced send or receive): COMM_SEND_NODE on the
 *     sending rank, COMM_RECV_NODE on the receiving one, with comm_src,
 *     comm_dst, comm_tag (int32) and comm_size.
 * The host work before a task on its thread (its measured gap) is a
 * COMP_NODE of its own, "host work", between the task and the one before
 * it. data_deps hold every dependency, the order of each stream and
 * thread (through those host-work nodes) and the graph's edges but its
 * unexplained waits (which a replay applies only when asked): Chakra's
 * feeder and ASTRA-sim walk data_deps. ctrl_deps hold a GPU task's
 * launching call, the parent Chakra's converter gives a GPU node.
 * duration_micros is the task's duration in the replay: its intrinsic
 * time (a blocking call's without its wait; a collective's transfer time,
 * which starts when the last rank arrives; with peers untraced, the
 * time from its rank's arrival to its end as replayed, which holds the
 * modelled wait for them), its end and start each rounded to the
 * microsecond on the replay's clock, so that rounding does not add up
 * along a thread. So a walk of a single rank's file in dependency order,
 * each node starting when its data_deps have ended and lasting its
 * duration, gives the replayed step; a job's files, their collectives
 * coupled again (as ASTRA-sim or stepcast's import do), give the job's.
 * A walk of one file of a job alone has its rank never wait for a
 * peer. Edge latencies become nodes of their own ("<kind> latency"),
 * finish-to-finish waits plain dependencies. ctrl_deps may name a later
 * node: a blocking copy's launching call returns after the copy. */
#ifndef ESTIMATOR_CHAKRA_EXPORT_H
#define ESTIMATOR_CHAKRA_EXPORT_H

#include <stddef.h>

#include "common/error.h"
#include "model/chakra_et.h"

struct model_graph;
struct model_replay;
struct model_replay_opts;

struct est_chakra_file {
    char name[96];            /* "<prefix>.<rank>.et", "comm_group.json" */
    struct model_et_buf body; /* its bytes */
};

struct est_chakra_out {
    struct est_chakra_file *files; /* the ranks' files in rank order, then comm_group.json */
    size_t n_files;
    size_t nodes, host_nodes, delay_nodes, data_deps, ctrl_deps; /* over all ranks */
};

/* Export replay r of graph g (run with options o, NULL for the defaults,
 * for the durations). Files are named with `prefix` (at most 64 bytes of
 * [A-Za-z0-9_.-]). *out is filled; release it with chakra_out_release
 * (also after a failure). */
int chakra_export(const struct model_graph *g, const struct model_replay *r, const struct model_replay_opts *o,
                      const char *prefix, struct est_chakra_out *out, struct sc_error *err);

void chakra_out_release(struct est_chakra_out *out);

#endif
