/* model/graph_check.h: the structural invariants of a built graph
 * (graph.h), checked in one pass.
 *
 * A graph is read by the replay and every report without bounds checks:
 * its predecessor and successor lists (CSR: pred_at and succ_at rise from
 * 0 to n_edges), every task, resource, rank, group and name id in range,
 * every edge kind and type one the replay knows, each resource's tasks
 * linked by prev/next in the order of their numbers, each task on the
 * resource whose chain holds it, the successor lists the mirror of the
 * predecessor lists, durations and gaps not negative, a step's begin
 * marker before its end. model_graph_check() names the first invariant a
 * graph breaks ("graph check: CSR offsets: ..."), so a corrupt graph is a
 * clear error and not a crash far from its cause.
 *
 * Every graph model_gb_finish() builds is checked when checks are on: in
 * the test runner and with STEPCAST_CHECK_GRAPHS=1 in the environment;
 * `stepcastd --check` checks the graphs of the models it rebuilds. */
#ifndef MODEL_GRAPH_CHECK_H
#define MODEL_GRAPH_CHECK_H

#include "common/error.h"

struct model_graph;

/* SC_OK, or SC_EINVAL naming the invariant g breaks and where. */
int model_graph_check(const struct model_graph *g, struct sc_error *err);

/* Whether built graphs are checked (STEPCAST_CHECK_GRAPHS set and not "0"). */
int model_graph_checks_on(void);

#endif
