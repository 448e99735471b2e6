/* estimator/model_open.h: the façade every program opens a traced job
 * through, then asks its questions of: replay (and the critical paths a
 * replay finds), opportunities, diff, A/B and what-if.
 *
 * Opening builds the job's dependency graph and splits the waits of its
 * collectives kept for untraced peers (estimator/traced.h) once; every
 * question below replays with those waits applied, so no caller can forget
 * them or apply them twice. The command line opens trace files, the daemon
 * a model's blobs (paths with the ranks they were uploaded as) and keeps
 * the opened model in its cache (daemon/built.h). Not to be confused with
 * struct est_model, the model part of a spec (estimator/spec/spec.h). */
#ifndef ESTIMATOR_MODEL_OPEN_H
#define ESTIMATOR_MODEL_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/graph.h"
#include "model/job.h"
#include "estimator/traced.h" /* enum est_keep */

struct job_config;
struct model_ab;
struct model_ab_opts;
struct model_diff;
struct model_opportunities;
struct model_replay;
struct model_replay_opts;
struct whatif_result;
struct trace_notes_set;

struct est_traced_model;

/* What to open and how. */
struct est_model_options {
    struct model_load_opts load;   /* model_load_opts_default unless set */
    struct model_graph_opts graph; /* model_graph_opts_default unless set */
    const int64_t *ranks;          /* blobs: ranks[i] the rank of paths[i]; NULL: from the traces */
    enum est_keep keep;            /* EST_KEEP_HEADERS unless set */
};

/* The defaults: load and graph options at theirs, traces shed to their
 * headers. */
void est_model_options_default(struct est_model_options *o);

/* Called from the loading threads with the number of ranks built so far
 * (calls may come out of order). */
typedef void (*est_model_progress_fn)(void *ctx, size_t ranks_built);

/* Open the job that paths[0..n) hold: Kineto traces (files, folders,
 * archives; or blobs with o->ranks) or Chakra ET files. o NULL: the
 * defaults. On failure *out is NULL and err says why. */
int est_model_open(const char *const *paths, size_t n, const struct est_model_options *o,
                   est_model_progress_fn progress, void *progress_ctx, struct est_traced_model **out,
                   struct sc_error *err);
/* Open a job already loaded (borrowed: it outlives *out), its graph built
 * with go (NULL: the defaults). */
int est_model_of_job(const struct model_job *job, const struct model_graph_opts *go, struct est_traced_model **out,
                     struct sc_error *err);
/* Open a job whose graph and waits' split are already made (read back from
 * where a build stored them): job and t are taken over, also on failure. */
struct est_traced;
int est_model_adopt(struct model_job *job, struct est_traced *t, struct est_traced_model **out,
                    struct sc_error *err);
void est_model_close(struct est_traced_model *m); /* NULL-safe */

/* The graph and job of m (borrowed), for what renders or inspects them. */
const struct model_graph *est_model_graph(const struct est_traced_model *m);
const struct model_job *est_model_job(const struct est_traced_model *m);
/* The split waits of m's kept collectives (borrowed), for what stores them. */
struct model_coll_waits;
const struct model_coll_waits *est_model_waits(const struct est_traced_model *m);
/* Bytes m holds: its traces as kept, its graph, its waits' split and
 * its traces' notes. */
size_t est_model_bytes(const struct est_traced_model *m);

/* Replay m with ro, ro->waits set to m's split: the steps, their
 * breakdowns and, with ro->critical_path (the default), the critical paths
 * that `critical-path` prints. *out from model_replay_free. */
int est_model_replay(const struct est_traced_model *m, struct model_replay_opts *ro, struct model_replay **out,
                     struct sc_error *err);

/* What would shorten m's step, each saving measured by replays
 * (model/opportunity.h). Release with model_opportunities_release. */
int est_model_opportunities(const struct est_traced_model *m, struct model_opportunities *out,
                            struct sc_error *err);

/* Run a (before) against run b (after): the difference attributed by
 * replays (model/diff.h). Release with model_diff_release. */
int est_model_diff(const struct est_traced_model *a, const struct est_traced_model *b, struct model_diff *out,
                   struct sc_error *err);

/* The A/B of runs a and b (model/ab.h), its attribution from their diff.
 * Release with model_ab_release (also after a failure). */
int est_model_ab(const struct est_traced_model *a, const struct est_traced_model *b, const struct model_ab_opts *o,
                 struct model_ab *out, struct sc_error *err);

/* The what-if of m's job, described by cfg, changed as set says
 * (estimator/whatif/whatif.h), from m's graph and the notes taken of its
 * traces while they were whole (est_model_notes; m opened with
 * EST_KEEP_NOTES): no trace is read again. A model that keeps its traces
 * whole (EST_KEEP_WHOLE, est_model_of_job) takes them from its traces;
 * one that keeps their headers only is SC_EINVAL. Release with
 * whatif_release. */
int est_model_whatif(const struct est_traced_model *m, const struct job_config *cfg, const struct job_config *set,
                     struct whatif_result *out, struct sc_error *err);

/* The notes a what-if reads of m's traces, by graph rank
 * (estimator/whatif/trace_notes.h), or NULL when m was not opened with
 * EST_KEEP_NOTES. */
const struct trace_notes_set *est_model_notes(const struct est_traced_model *m);

#endif
