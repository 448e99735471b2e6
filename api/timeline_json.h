/* api/timeline_json.h: the replayed timeline of one rank as a Kineto trace,
 * for the tools people open traces with (Perfetto, HTA) and for stepcast
 * itself (`stepcast replay --timeline`, GET /v1/models/{id}/timeline).
 *
 * When the graph's traces still hold their events, the timeline is the
 * trace replayed: every CPU op, annotation, runtime call, kernel, copy,
 * set and cuda_sync event of the modelled steps keeps its name, category
 * and arguments (External id, correlation, Input Dims, collective sizes and
 * process groups, ...), with the replayed start and duration and the
 * measured duration as the extra argument "measured_dur" (us); flows
 * (ac2g, fwdbwd) are kept with their ends moved the same way. A task of
 * the graph takes its replayed times; any other event moves with its
 * track: measured times between two task boundaries map linearly between
 * their replayed times, so what nested stays nested. Without the events (a
 * synthesised or transformed graph, a trace shed after building) the
 * timeline is the graph's tasks, with the host work before each call as a
 * "host work" op.
 *
 * distributedInfo comes before any event, and the document is written with
 * the spacing the PyTorch profiler uses ("rank": 0): HTA finds a file's
 * rank with a pattern that expects it. */
#ifndef API_TIMELINE_JSON_H
#define API_TIMELINE_JSON_H

#include <jansson.h>

struct model_replay;

/* The replayed timeline of rank `rank` (as the traces number it); NULL when
 * the job has no such rank or out of memory. */
json_t *api_timeline_json(const struct model_replay *r, int rank);

/* How a timeline document is written: ": " and ", " separators, as the
 * PyTorch profiler writes them, and times to the nanosecond. */
#define API_TIMELINE_DUMP_FLAGS JSON_REAL_PRECISION(15)

#endif
