/* estimator/traced.h: a traced job built into what its replays and
 * what-ifs read: the dependency graph, the split of its collectives kept
 * for untraced peers into transfer and wait (coll_split.h), and the notes
 * a what-if reads of its traces (trace_notes.h), found once when the model
 * is built. The command line's replay, critical-path, export, diff,
 * opportunities and what-if, and the daemon's built models, build through
 * here, then replay the graph with its waits as many times as they need. */
#ifndef ESTIMATOR_TRACED_H
#define ESTIMATOR_TRACED_H

#include <stddef.h>

#include "common/error.h"
#include "model/graph.h"
#include "model/replay.h"
#include "estimator/whatif/trace_notes.h"

struct model_job;

/* What a model keeps of its traces besides their graph. */
enum est_keep {
    EST_KEEP_HEADERS, /* each trace shed to its header once built: replays, diffs, exports of the graph */
    EST_KEEP_NOTES,   /* also the notes a what-if reads of each (est_model_notes), taken while it is
                         whole: what-ifs and plans, the daemon's built models */
    EST_KEEP_WHOLE,   /* every trace whole (a timeline writes their events again; a what-if takes
                         its notes from them when it runs) */
};

struct est_traced {
    struct model_graph *graph;     /* borrows its job */
    struct model_coll_waits waits; /* waits.v from malloc (NULL when none) */
    struct trace_notes_set notes;  /* by graph rank, taken while each trace was whole; none
                                      (rank NULL) unless asked for */
};

/* The model of paths[0..n): Chakra ET files imported
 * (estimator/interchange/chakra_import.h, with l->ranks and l->load's limits), or
 * Kineto traces built while they load (model_graph_build_paths: each
 * trace shed to its header once its part is found; with EST_KEEP_NOTES,
 * each kept rank's notes taken first, l's kept and dropped replaced) or,
 * with EST_KEEP_WHOLE, loaded whole first (for callers that read the
 * trace's events again: no notes, a what-if takes them from the traces).
 * A Chakra job's notes, asked for, are empty, one per rank. l NULL: as
 * model_graph_build_paths's. *job gets the job (free it after *out, also
 * on failure); on failure *out is empty. */
int est_traced_build(const char *const *paths, size_t n, const struct model_graph_load *l,
                     const struct model_graph_opts *go, enum est_keep keep, struct model_job **job,
                     struct est_traced *out, struct sc_error *err);

/* The model of a loaded job (borrowed; it outlives *out), its traces
 * whole (not shed): no notes, a what-if takes them from the traces. */
int est_traced_of_job(const struct model_job *job, const struct model_graph_opts *go, struct est_traced *out,
                      struct sc_error *err);

void est_traced_release(struct est_traced *t);

#endif
