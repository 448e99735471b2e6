/* tests/shared_traces.h: the shared real traces with steps that replay
 * tests run on (../shared/traces), and loading one as a job; synthetic jobs
 * written by tests/tools/gentrace. */
#ifndef TESTS_SHARED_TRACES_H
#define TESTS_SHARED_TRACES_H

#include <stddef.h>

struct model_job;
struct model_graph;
struct model_replay;

struct shared_trace {
    const char *name, *path, *marker; /* marker: the step marker, NULL for ProfilerStep#N */
};

extern const struct shared_trace th_traces[];
extern const size_t th_n_traces;

/* The trace named, or NULL. */
const struct shared_trace *th_find_trace(const char *name);

/* Load it as a one-trace job; SKIPs when the shared traces are absent,
 * fails the test and returns -1 when it does not load. */
int th_load_trace(const struct shared_trace *st, struct model_job **job);

/* Load the shared trace files rel[0..n) (paths under the shared traces,
 * n <= TH_MAX_FILES) as one job, steps by `marker` (NULL: ProfilerStep#N);
 * as th_load_trace otherwise. */
#define TH_MAX_FILES 8
int th_load_files(const char *const *rel, size_t n, const char *marker, struct model_job **job);

/* Load ranks keep[0..n) of a trace holding a whole job (an archive of
 * its ranks) as a job of those ranks alone, as though only they had been
 * traced; as th_load_trace otherwise. */
int th_load_ranks(const struct shared_trace *st, const int *keep, size_t n, struct model_job **job);

/* A job of `ranks` ranks written by gentrace into a fresh folder with the
 * further options `args` (NULL-terminated, may be NULL), loaded; NULL (the
 * test failed) when it cannot be written or loaded. */
struct model_job *th_gentrace_job(int ranks, const char *const *args);

/* The same written only: its folder (rank<r>.json files) into dir[size]
 * (the test fails when gentrace does). */
void th_gentrace_dir(int ranks, const char *const *args, char *dir, size_t size);
/* The same, its files' paths into paths[r] for rank r, and pv[r]
 * pointing there. */
#define TH_PATH_MAX 4200
void th_gentrace_paths(int ranks, const char *const *args, char (*paths)[TH_PATH_MAX], const char **pv);

/* Check that `folded`, a replay of a job's graph with its alike ranks
 * folded (model/graph.h, MODEL_FOLD_OVER), equals `whole`, a replay of
 * the same job unfolded, within tol_pct %: each rank's steps (a folded
 * rank's through its representative, model_replay_folded_ns), each step's
 * mean and longest over all the job's ranks, the mean |error| (points)
 * and how many steps are scored. */
void th_check_folded_replay(const struct model_replay *whole, const struct model_replay *folded, double tol_pct);

/* A job with its graph and the structure recovered against a description
 * (estimator/whatif/structure.h). */
#include "estimator/whatif/structure.h"
struct th_structure {
    struct model_job *job;
    struct model_graph *g;
    struct job_structure st;
};
/* Build job's graph (taking job; NULL fails) and recover its structure
 * against the description cfg (JSON text); fails the test and returns -1
 * when it cannot. Release with th_structure_release either way. */
int th_structure_recover(struct model_job *job, const char *cfg, struct th_structure *out);
void th_structure_release(struct th_structure *s);

#endif
