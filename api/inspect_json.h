/* api/inspect_json.h: the JSON document of `stepcast inspect --json`.
 *
 * One object for a whole job: {"stepcast_version":..,"ranks":[{...}, ...]}.
 * The shape is documented in README.md ("inspect --json") and kept stable;
 * the daemon serves the same object for a stored trace. */
#ifndef API_INSPECT_JSON_H
#define API_INSPECT_JSON_H

#include <jansson.h>

#include "common/error.h"

struct model_graph;
struct model_job;
struct model_trace;
struct model_inspect;

/* One rank's object. NULL when out of memory. */
json_t *api_inspect_rank_json(const struct model_trace *t, const struct model_inspect *in);

/* The whole document, with the collectives matched across ranks from g,
 * the job's graph (model_graph_build), or "collective_groups": null where
 * g is NULL (the job has no step to build one of); NULL and *err filled on
 * failure. */
json_t *api_inspect_job_json(const struct model_job *job, const struct model_graph *g, struct sc_error *err);

/* The collective groups of a graph (model/graph.h): [{"kind","bytes",
 * "dtype","process_group","seq","group_size","ranks":[...],"transfer_ms"},
 * ...] (unknown values null; bytes by the nccl-tests convention). NULL
 * when out of memory. Shown by inspect and by the replay's "graph".
 * Collectives kept for untraced peers (groups of their own kernel alone)
 * are left out: `collectives_kept` counts them. */
json_t *api_collectives_json(const struct model_graph *g);

/* ns -> ms, rounded to the nanosecond, as a JSON real. */
json_t *api_json_ms(int64_t ns);
/* The same value as a double: what a reader of the documents gets back. */
double api_ms(int64_t ns);

#endif
