/* clients/cli.h: what the stepcast subcommands share, all of it defined
 * in clients/cli.c. The subcommands themselves are in clients/commands.h.
 * Exit statuses: 0 success, 2 invalid input or usage, 1 anything else.
 * Errors go to stderr as "stepcast: <message>". */
#ifndef CLIENTS_CLI_H
#define CLIENTS_CLI_H

#include "common/error.h"
#include "estimator/model_open.h"
#include "estimator/synth/estimate.h"

struct model_job;
struct model_load_opts;
struct model_graph_opts;

/* Print "stepcast: <msg>" and return the exit status for err. */
int cli_fail(const struct sc_error *err);
/* Print "stepcast: <fmt...>" and a hint to --help; return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Load TRACE... with the given options; prints the error and returns the exit
 * status on failure, 0 on success. */
int cli_load_job(char **paths, int n, const struct model_load_opts *opts, struct model_job **out);

/* The options of commands that read traces: --json, --step-marker NAME,
 * --steps A-B, --no-fold and --fold (go->fold_over), --help (prints
 * usage). Sets optind past them. Returns 0 to
 * go on, -1 after --help, else the exit status of a usage error. */
int cli_trace_options(int argc, char **argv, const char *cmd, const char *usage, struct model_load_opts *lo,
                      struct model_graph_opts *go, int *json);

/* Open TRACE... (estimator/model_open.h) with the given options, keeping
 * what `keep` says of the traces (enum est_keep); prints the error and
 * returns the exit status on failure, 0 with *out (est_model_close) on
 * success. */
struct est_traced_model;
int cli_open_traces(const char *const *paths, size_t n, const struct model_load_opts *lo,
                    const struct model_graph_opts *go, enum est_keep keep, struct est_traced_model **out);

/* A job opened and replayed as `stepcast replay` does (the kept
 * collectives' waits applied by the façade). */
struct model_replay_opts;
struct cli_run {
    struct est_traced_model *model;
    struct model_replay *replay;
};
/* cli_open_traces, then the replay with ro. Returns the exit status, the
 * error printed; on failure *run is empty. */
int cli_run_traces(const char *const *paths, size_t n, const struct model_load_opts *lo,
                   const struct model_graph_opts *go, struct model_replay_opts *ro, enum est_keep keep,
                   struct cli_run *run);
void cli_run_release(struct cli_run *run);

/* Two runs, paths[0] (A) and paths[1] (B), each opened as one job into
 * m[0..2) (the caller closes them). Returns an exit status, the error
 * printed; on failure nothing is held. */
int cli_open_runs(char **paths, const struct model_load_opts *lo, const struct model_graph_opts *go,
                  struct est_traced_model *m[2]);

/* Each rank's replayed timeline (api/timeline_json.h) into
 * DIR/rank<R>.replay.json, DIR created if need be. Returns the exit status. */
struct model_replay;
int cli_write_timelines(const struct model_replay *r, const char *dir);

/* The whole file (malloc'd, NUL-terminated) in *out and its size in *n;
 * SC_ELIMIT past max bytes, SC_ENOTFOUND or SC_EIO naming the path. */
int cli_read_file(const char *path, size_t max, char **out, size_t *n, struct sc_error *err);

struct est_spec;
struct est_costs;
struct hw_profile;
/* The spec text[0..n), checked, its GPU's profile, and the costs of the
 * synthesised step: the GPU's defaults, or cluster.profile's (a file as
 * named, else NAME.json in `calibrations` when not NULL). Prints the error,
 * naming `source` (the spec's file), and returns the exit status on
 * failure, 0 on success. */
int cli_load_spec(const char *text, size_t n, const char *source, const char *calibrations, struct est_spec *spec,
                  const struct hw_profile **hw, struct est_costs *costs);
/* The same from the spec file at path (at most 1 MiB). */
int cli_load_spec_file(const char *path, const char *calibrations, struct est_spec *spec,
                       const struct hw_profile **hw, struct est_costs *costs);

/* The costs of spec's synthesised step on GPU hw: the defaults, or
 * cluster.profile's, found as cli_load_spec finds it. Prints the error and
 * returns the exit status on failure, 0 on success. */
int cli_spec_costs(const struct est_spec *spec, const struct hw_profile *hw, const char *calibrations,
                   struct est_costs *costs);
struct job_config;
/* Read and parse the job description (estimator/spec/job_config.h) at path;
 * prints the error and returns the exit status on failure, 0 on success. */
int cli_load_job_config(const char *path, struct job_config *cfg);

/* Whether path is an existing directory. */
int cli_is_dir(const char *path);
/* Whether argv[1..argc) holds the option `opt` ("--out" or "--out=..."),
 * before any "--". */
int cli_has_option(int argc, char **argv, const char *opt);

/* Print a JSON document (a json_t *) to stdout, indented. Returns 0 or 1. */
int cli_print_json(void *json);

/* Estimate a spec (text of n bytes, from file `source`) here: its
 * cluster.profile is a file, or NAME.json in `calibrations` (a directory,
 * may be NULL). Prints the error, naming source, and returns the exit
 * status on failure, 0 with *spec and *e (synth_estimate_release) on
 * success. */
int cli_estimate(const char *text, size_t n, const char *source, const char *calibrations, enum est_detail detail,
                 struct est_spec *spec, struct est_estimate *e);

/* Members of a JSON object (a json_t *) for display: a string, or `none`
 * when absent or not a string; a number, or 0. */
const char *cli_json_str(const void *obj, const char *key, const char *none);
long long cli_json_int(const void *obj, const char *key);
double cli_json_num(const void *obj, const char *key);

#endif
